//! `skillmem hook gemini-cli | codex | copilot`: the skill-load hook of three more hosts, one
//! process per event like [`super::claude_code`], on the same data directory.
//!
//! - Gemini CLI: `AfterTool` of `activate_skill` (`tool_input.name`) → `hookSpecificOutput.
//!   additionalContext`. Gemini escapes `<` and `>` of hook context, so the block is rendered
//!   without angle brackets there ([`plain_block`]).
//! - Codex: `PostToolUse` of `Bash` whose command reads a `*/SKILL.md` (Codex has no skill
//!   tool; the model reads the file) → `hookSpecificOutput.additionalContext`.
//! - Copilot CLI: `postToolUse` of `skill` (`toolArgs.skill`, `toolArgs` a JSON text or an
//!   object) → top-level `additionalContext`.
//!
//! The intent is the text the agent wrote last before the call, read from the tail of the
//! session's transcript (named by the event, or Copilot's events file of the session); without
//! it, notes rank by recency and hits.
//! A skill named without a folder is found by name in the host's skill folders (project up to
//! the repository root, then the user's). Each load is recorded as a skill use of the session;
//! at the session's end (Gemini `SessionEnd`, Copilot `sessionEnd`) or each turn's (Codex
//! `Stop`) the transcript's loads that the session has no use of yet are recorded too, and its
//! failed calls and their fixes are mined for lessons, as Claude Code's `SessionEnd` does.
//!
//! Codex also: `PostCompact` promotes the `<skill_observations>` of the compaction's summary
//! (asked for by the `compact_prompt` setup writes) through the historian's filter, and
//! `SessionStart` with `source: "compact"` gives back the blocks the compaction dropped.
//!
//! Must never block or mislead the agent: every failure prints nothing, exits 0 and leaves one
//! line in `<data dir>/logs/<host>-hook.log`.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::agent_transcripts::{self as transcripts, Kind};
use super::claude_code::{data_dir_for, expand_home, open_or_log, read_from, str_field, Answer, HookOptions};
use super::store;
use crate::config::default_data_dir;
use crate::db;
use crate::engine::SkillLoad;
use crate::error::Error;

/// One host this door serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// The host name stored with skill uses (`skillmem stats`).
    pub host: &'static str,
    /// The log file under `<data dir>/logs/`.
    pub log: &'static str,
    /// How the host names the MCP server's `skill_note` (server `skillmem`).
    pub note_tool: &'static str,
    dialect: Dialect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Gemini,
    Codex,
    Copilot,
}

pub const GEMINI: Agent = Agent {
    host: "gemini-cli",
    log: "gemini-cli-hook",
    note_tool: "mcp_skillmem_skill_note",
    dialect: Dialect::Gemini,
};
pub const CODEX: Agent =
    Agent { host: "codex", log: "codex-hook", note_tool: "mcp__skillmem__skill_note", dialect: Dialect::Codex };
pub const COPILOT: Agent =
    Agent { host: "copilot", log: "copilot-hook", note_tool: "skillmem-skill_note", dialect: Dialect::Copilot };

/// How much of a transcript's end is read for the intent.
const TAIL: u64 = 256 << 10;
/// The longest intent kept.
const INTENT_CHARS: usize = 500;

/// Answers one hook event of `agent`. Never panics into the caller and never fails.
pub fn answer(agent: Agent, stdin: &str, opts: &HookOptions) -> Answer {
    let mut a = Answer { data_dir: opts.data_dir.clone().unwrap_or_else(default_data_dir), ..Default::default() };
    let opts = HookOptions {
        note_tool: opts.note_tool.clone().or_else(|| Some(agent.note_tool.to_string())),
        host: Some(agent.host.to_string()),
        ..opts.clone()
    };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut log = vec![];
        let (stdout, data_dir) = handle(agent, stdin, &opts, &mut log);
        (stdout, data_dir, log)
    }));
    match run {
        Ok((stdout, data_dir, log)) => {
            a.stdout = stdout;
            a.log = log;
            if let Some(d) = data_dir {
                a.data_dir = d;
            }
        }
        Err(_) => a.log.push("internal error (a bug in skillmem): the hook panicked; nothing was answered".into()),
    }
    a
}

/// A skill load as one host's event describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub skill: String,
    pub dir: Option<PathBuf>,
}

fn handle(agent: Agent, stdin: &str, opts: &HookOptions, log: &mut Vec<String>) -> (Option<String>, Option<PathBuf>) {
    let text = stdin.trim();
    if text.is_empty() {
        log.push(format!("empty stdin: {} sent no hook event; nothing to answer", agent.host));
        return (None, None);
    }
    let event: Value = match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            log.push("the hook event on stdin is not a JSON object; nothing to answer".into());
            return (None, None);
        }
        Err(e) => {
            log.push(format!("the hook event on stdin is not valid JSON ({e}); nothing to answer"));
            return (None, None);
        }
    };
    let ws = workspace_of(agent, &event, opts);
    let data_dir = data_dir_for(&ws, opts);
    let name = str_field(&event, "hook_event_name").unwrap_or_default();
    match (agent.dialect, name) {
        // The session's end (Gemini: complete transcript, awaited in headless mode; Copilot:
        // `sessionEnd`, which names no event and no transcript, only the session), and every
        // turn's end for Codex (`Stop`; its `SessionEnd` is clamped to 3 s): the skill uses of
        // the transcript.
        (Dialect::Gemini, "SessionEnd") | (Dialect::Codex, "Stop" | "SessionEnd") => {
            session_end(agent, &event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Copilot, _) if event.get("toolName").is_none() && event.get("reason").is_some() => {
            session_end(agent, &event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Codex, "PostCompact") => {
            codex_compacted(&event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Codex, "SessionStart") => return (codex_after_compaction(&event, &ws, opts, log), data_dir),
        _ => {}
    }
    let mention = match agent.dialect {
        Dialect::Codex => codex_mention(&event, &ws, dirs::home_dir().as_deref()),
        _ => None,
    };
    let prompted = mention.is_some();
    let (loaded, intent) = match mention {
        Some((loaded, said)) => (loaded, said),
        None => {
            let Some(loaded) = skill_load(agent, &event, &ws) else { return (None, data_dir) };
            let intent = match (agent.dialect, transcript_of(agent, &event)) {
                (Dialect::Copilot, Some(p)) => copilot_intent(&p, &loaded.skill),
                (_, Some(p)) => intent_from(&p),
                (_, None) => None,
            };
            (loaded, intent)
        }
    };
    let Some(engine) = open_or_log(&ws, opts, log) else { return (None, data_dir) };
    // Before the block is built: a lesson of an earlier session that could not be mined at its
    // end is in it.
    catch_up(agent, &engine, session_of(&event).as_deref().unwrap_or_default(), log);
    let block = match engine.skill_loaded(SkillLoad {
        skill: loaded.skill.clone(),
        dir: loaded.dir.clone(),
        intent,
        session: session_of(&event),
        ..Default::default()
    }) {
        Ok(r) => {
            for w in engine.take_warnings() {
                log.push(format!("warning: {w}"));
            }
            r.append.map(|a| a.trim_start().to_string()).filter(|a| !a.is_empty())
        }
        Err(Error::NotFound(_)) if loaded.dir.is_none() => {
            log.push(format!("skill {} not found in the skill folders of {} or the user", loaded.skill, ws.display()));
            None
        }
        Err(e) => {
            log.push(format!("skill {}: {e}", loaded.skill));
            None
        }
    };
    if let Some(session) = session_of(&event) {
        let used = db::open(&engine.config().data_dir).and_then(|mut c| {
            store::record_use(
                &mut c,
                agent.host,
                &session,
                engine.project_id(),
                std::slice::from_ref(&loaded.skill),
                db::now_ms(),
            )
        });
        if let Err(e) = used {
            log.push(format!("session {session}: the skill use was not recorded: {e}"));
        }
    }
    let out = block.map(|b| match agent.dialect {
        Dialect::Gemini => {
            json!({ "hookSpecificOutput": { "hookEventName": "AfterTool", "additionalContext": plain_block(&b) } })
        }
        Dialect::Codex => {
            let event = if prompted { "UserPromptSubmit" } else { "PostToolUse" };
            json!({ "hookSpecificOutput": { "hookEventName": event, "additionalContext": b } })
        }
        Dialect::Copilot => json!({ "additionalContext": b }),
    });
    (out.map(|v| v.to_string()), data_dir)
}

fn kind(agent: Agent) -> Kind {
    match agent.dialect {
        Dialect::Gemini => Kind::Gemini,
        Dialect::Codex => Kind::Codex,
        Dialect::Copilot => Kind::Copilot,
    }
}

/// Reads the session's transcript past the offset reached last time and records the skills it
/// shows used that the session has no use of yet (a load the skill-load hook missed: it
/// failed, timed out, or the skill was read some other way).
fn session_end(agent: Agent, event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) {
    let Some(session) = session_of(event) else {
        log.push("session end: the event names no session; transcript not read".into());
        return;
    };
    let Some(path) = transcript_of(agent, event) else {
        log.push(format!("session {session}: no transcript named; skill uses not read"));
        return;
    };
    let Some(engine) = open_or_log(ws, opts, log) else { return };
    catch_up(agent, &engine, &session, log);
    if let Err(e) = read_uses(agent, &engine, &session, &path) {
        log.push(format!("session {session}: transcript {}: {e}", path.display()));
    }
    // The failed calls of the whole transcript and their fixes become lessons (each pair once
    // a session, however many turns end).
    if let Err(e) = mine_transcript(agent, &engine, &session, &path, log) {
        log.push(format!("session {session}: mining {}: {e}", path.display()));
    }
    // A session's end (not Codex's turn end): the notes its loads showed are judged by the
    // calls it reported.
    if str_field(event, "hook_event_name") != Some("Stop") {
        // The whole transcript's calls are the session's activity.
        match read_from(&path, 0) {
            Ok((lines, _)) => {
                let records: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
                let calls = transcripts::calls(kind(agent), &records);
                super::report_calls(&engine, &session, &records, &calls, log);
            }
            Err(e) => log.push(format!("session {session}: transcript {}: {e}", path.display())),
        }
        if let Err(e) = engine.end_session(&session) {
            log.push(format!("session {session}: its notes' use was not counted: {e}"));
        }
    }
}

fn read_uses(agent: Agent, engine: &crate::engine::Engine, session: &str, path: &Path) -> crate::Result<()> {
    let mut conn = db::open(&engine.config().data_dir)?;
    let path_str = path.display().to_string();
    let offset = match store::offset(&conn, agent.host, session)? {
        Some((p, o)) if p == path_str => o.max(0) as u64,
        _ => 0,
    };
    let (lines, next) = read_from(path, offset)?;
    let records: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let skills: Vec<String> = transcripts::uses(kind(agent), &records).into_iter().map(|u| u.skill).collect();
    let read = store::Read {
        host: agent.host,
        session,
        project: engine.project_id(),
        transcript: &path_str,
        offset: next as i64,
        skills: &skills,
        at: db::now_ms(),
    };
    store::record_unseen_read(&mut conn, &read)?;
    Ok(())
}

/// How far back, and how many, earlier sessions [`catch_up`] looks at.
const CATCH_UP_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
const CATCH_UP_SESSIONS: usize = 8;

/// Copilot CLI writes a session's events file behind the session: at `sessionEnd` it may hold
/// only the session's start (`recorded-1.0.102/events-fix.jsonl` is the same session's file
/// once Copilot had exited), so the calls to mine and the skill loads to record arrive after
/// the hook has run. Every later Copilot hook in the project reads on in the files of the
/// project's recent sessions that grew past where their end read them: the skill uses there
/// are recorded and the whole transcript is mined again (a pair judged once in a session is
/// not judged twice).
fn catch_up(agent: Agent, engine: &crate::engine::Engine, current: &str, log: &mut Vec<String>) {
    if agent.dialect != Dialect::Copilot {
        return;
    }
    let since = db::now_ms() - CATCH_UP_WINDOW_MS;
    let sessions = db::open(&engine.config().data_dir)
        .and_then(|c| store::read_sessions(&c, agent.host, engine.project_id(), current, since, CATCH_UP_SESSIONS));
    let sessions = match sessions {
        Ok(s) => s,
        Err(e) => {
            log.push(format!("earlier sessions not read on: {e}"));
            return;
        }
    };
    for (session, transcript, offset) in sessions {
        let path = PathBuf::from(&transcript);
        let grew = std::fs::metadata(&path).is_ok_and(|m| m.len() > offset.max(0) as u64);
        if !grew {
            continue;
        }
        if let Err(e) = read_uses(agent, engine, &session, &path) {
            log.push(format!("session {session}: transcript {transcript}: {e}"));
        }
        if let Err(e) = mine_transcript(agent, engine, &session, &path, log) {
            log.push(format!("session {session}: mining {transcript}: {e}"));
        }
    }
}

/// Mines the whole transcript of a session for error → fix lessons (`historian::mine`), as
/// the Claude Code hook does at `SessionEnd`.
fn mine_transcript(
    agent: Agent,
    engine: &crate::engine::Engine,
    session: &str,
    path: &Path,
    log: &mut Vec<String>,
) -> crate::Result<()> {
    let (lines, _) = read_from(path, 0)?;
    let records: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let calls = transcripts::calls(kind(agent), &records);
    if !calls.iter().any(|c| c.failed) {
        return Ok(());
    }
    let origin = crate::memory::Origin {
        host: Some(agent.host.to_string()),
        transcript: Some(path.display().to_string()),
        transcript_at: None,
    };
    let r = engine.mine_calls(&calls, Some(session), origin)?;
    for w in &r.written {
        log.push(format!("session {session}: mined a fix lesson of {} ({:?}): {}", w.skill, w.status, w.delta));
    }
    Ok(())
}

/// The most of a transcript's end read for a compaction.
const COMPACTION_TAIL: u64 = 32 << 20;

/// The records of the event's transcript (its last [`COMPACTION_TAIL`] bytes, whole lines).
fn tail_records(event: &Value) -> Option<Vec<Value>> {
    let path = expand_home(str_field(event, "transcript_path")?);
    let len = std::fs::metadata(&path).ok()?.len();
    let from = len.saturating_sub(COMPACTION_TAIL);
    let (lines, _) = read_from(&path, from).ok()?;
    let skip = usize::from(from > 0);
    Some(lines.iter().skip(skip).filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Codex's `PostCompact`: the rollout holds the compaction's summary by then (a `compacted`
/// record). When it carries a `<skill_observations>` block (the compact prompt `skillmem setup
/// codex` writes asks for one), the observations are promoted through the historian's filter,
/// as `skillmem/historianResult` does; the skills the compacted part read are the session's.
fn codex_compacted(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) {
    let Some(records) = tail_records(event) else {
        log.push("PostCompact: no readable transcript_path; nothing promoted".into());
        return;
    };
    let Some((at, summary)) = transcripts::last_compaction(&records) else {
        log.push("PostCompact: the rollout holds no compaction summary; nothing promoted".into());
        return;
    };
    if !summary.contains("<skill_observations") {
        return;
    }
    let Some(engine) = open_or_log(ws, opts, log) else { return };
    let session = session_of(event);
    let used: Vec<String> = transcripts::uses(Kind::Codex, transcripts::compacted_part(&records, at))
        .into_iter()
        .map(|u| u.skill)
        .collect();
    if let (Some(s), false) = (&session, used.is_empty()) {
        // The rollout's compacted part is not rendered as a chunk: its lessons are not grounded.
        engine.chunk_rendered(s, &used, "");
    }
    match engine.historian_result(&summary, session) {
        Ok(r) => {
            crate::hosts::log_line(
                &engine.config().data_dir,
                super::claude_code::COST_LOG,
                &format!("codex PostCompact: {} promoted, {} rejected", r.promoted.len(), r.rejected.len()),
            );
            for x in &r.rejected {
                log.push(format!("PostCompact: observation rejected ({}): {}", x.reason, x.line));
            }
        }
        Err(e) => log.push(format!("PostCompact: {e}")),
    }
}

/// How many skills' blocks a compaction gives back at most (the last loaded).
const REINSTATED: usize = 3;

/// Codex's `SessionStart` after a compaction (`source: "compact"`): the developer messages
/// that carried the blocks are gone with the compacted history, so the blocks of the skills
/// the session read before it come back as the hook's context (no intent: recency × hits).
fn codex_after_compaction(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<String> {
    if str_field(event, "source") != Some("compact") {
        return None;
    }
    let records = tail_records(event)?;
    let used = transcripts::uses(Kind::Codex, &records);
    if used.is_empty() {
        return None;
    }
    let cwd = str_field(event, "cwd").map(PathBuf::from).unwrap_or_else(|| ws.to_path_buf());
    let engine = open_or_log(ws, opts, log)?;
    let mut blocks = vec![];
    for u in &used[used.len().saturating_sub(REINSTATED)..] {
        let dir = u.dir.as_ref().map(|d| if d.is_relative() { cwd.join(d) } else { d.clone() });
        match engine.skill_loaded(SkillLoad {
            skill: u.skill.clone(),
            dir,
            intent: None,
            session: session_of(event),
            ..Default::default()
        }) {
            Ok(r) => blocks.extend(r.append.map(|a| a.trim().to_string()).filter(|a| !a.is_empty())),
            Err(e) => log.push(format!("SessionStart (compact): skill {}: {e}", u.skill)),
        }
    }
    if blocks.is_empty() {
        return None;
    }
    let out =
        json!({ "hookSpecificOutput": { "hookEventName": "SessionStart", "additionalContext": blocks.join("\n\n") } });
    Some(out.to_string())
}

fn workspace_of(agent: Agent, event: &Value, opts: &HookOptions) -> PathBuf {
    let var = match agent.dialect {
        Dialect::Gemini => Some("GEMINI_PROJECT_DIR"),
        _ => None,
    };
    opts.workspace
        .clone()
        .or_else(|| var.and_then(std::env::var_os).map(PathBuf::from).filter(|p| p.is_dir()))
        .or_else(|| str_field(event, "cwd").map(PathBuf::from).filter(|p| p.is_dir()))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn session_of(event: &Value) -> Option<String> {
    str_field(event, "session_id").or_else(|| str_field(event, "sessionId")).map(str::to_string)
}

/// The session's transcript: the event's `transcript_path` (Gemini, Codex) or, for Copilot CLI,
/// whose `postToolUse` names none, `~/.copilot/session-state/<sessionId>/events.jsonl` (its
/// `assistant.message` with the call is written before the tool runs).
fn transcript_of(agent: Agent, event: &Value) -> Option<PathBuf> {
    if let Some(p) = str_field(event, "transcript_path").or_else(|| str_field(event, "transcriptPath")) {
        return Some(expand_home(p));
    }
    if agent.dialect != Dialect::Copilot {
        return None;
    }
    let id = session_of(event)?;
    let plain = id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return None;
    }
    Some(dirs::home_dir()?.join(".copilot/session-state").join(id).join("events.jsonl"))
}

/// The skill an event loads, or `None` when it is no skill load of this host.
pub fn skill_load(agent: Agent, event: &Value, ws: &Path) -> Option<Loaded> {
    let name_ok = |s: &str| !s.is_empty() && !s.contains(['/', '\\']) && s != "." && s != "..";
    match agent.dialect {
        Dialect::Gemini => {
            if str_field(event, "hook_event_name")? != "AfterTool" || str_field(event, "tool_name")? != "activate_skill"
            {
                return None;
            }
            let skill = str_field(event.get("tool_input")?, "name")?;
            name_ok(skill).then(|| Loaded { skill: skill.to_string(), dir: None })
        }
        Dialect::Codex => {
            if str_field(event, "hook_event_name")? != "PostToolUse" {
                return None;
            }
            let input = event.get("tool_input")?;
            let command = match input.get("command")? {
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => return None,
            };
            let file = skill_file_in(&command)?;
            let cwd = str_field(input, "workdir").or_else(|| str_field(event, "cwd")).map(PathBuf::from);
            let path = match (Path::new(&file).is_absolute(), cwd) {
                (true, _) => PathBuf::from(&file),
                (false, Some(c)) => c.join(&file),
                (false, None) => ws.join(&file),
            };
            let dir = path.parent()?.to_path_buf();
            let skill = dir.file_name()?.to_str()?.to_string();
            name_ok(&skill).then_some(Loaded { skill, dir: Some(dir) })
        }
        Dialect::Copilot => {
            let tool = str_field(event, "toolName").or_else(|| str_field(event, "tool_name"))?;
            if !tool.eq_ignore_ascii_case("skill") {
                return None;
            }
            let args = event.get("toolArgs").or_else(|| event.get("tool_input"))?;
            let args = match args {
                Value::String(s) => serde_json::from_str(s).ok()?,
                v => v.clone(),
            };
            let skill = str_field(&args, "skill").or_else(|| str_field(&args, "name"))?;
            let skill = skill.rsplit(':').next().unwrap_or(skill).trim();
            name_ok(skill).then(|| Loaded { skill: skill.to_string(), dir: None })
        }
    }
}

/// Codex's `UserPromptSubmit` whose prompt mentions a skill as `$name` (Codex then gives the
/// model the skill itself, with no read a `PostToolUse` could see): the first mentioned name
/// that is a skill in the workspace's or the user's skill folders, and the prompt without the
/// mention as the intent.
pub fn codex_mention(event: &Value, ws: &Path, home: Option<&Path>) -> Option<(Loaded, Option<String>)> {
    if str_field(event, "hook_event_name")? != "UserPromptSubmit" {
        return None;
    }
    let prompt = str_field(event, "prompt")?;
    let cwd = str_field(event, "cwd").map(PathBuf::from).filter(|p| p.is_dir()).unwrap_or_else(|| ws.to_path_buf());
    let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('$') else { continue };
        let name = name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        if name.is_empty() {
            continue;
        }
        let dir = crate::memory::provenance::find_by_name(name, Some(&cwd), home).or_else(|| {
            codex_home.as_ref().map(|h| h.join("skills").join(name)).filter(|d| d.join("SKILL.md").is_file())
        });
        if let Some(dir) = dir {
            let rest: Vec<&str> = prompt.split_whitespace().filter(|w| *w != word).collect();
            let said: String = rest.join(" ").chars().take(INTENT_CHARS).collect();
            return Some((Loaded { skill: name.to_string(), dir: Some(dir) }, (!said.is_empty()).then_some(said)));
        }
    }
    None
}

/// The `…/SKILL.md` a shell command reads (`cat`, `sed -n 1,200p`, `head`, …): the last word
/// naming a file called `SKILL.md`, quotes taken off.
pub fn skill_file_in(command: &str) -> Option<String> {
    let mut words = vec![];
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() || ";|&<>()".contains(c) => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words.into_iter().rev().find(|w| w == "SKILL.md" || w.ends_with("/SKILL.md"))
}

/// How long the Copilot hook waits for the session's events to show the call.
const COPILOT_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// What the agent said with its `skill` call of `skill`, from Copilot's events file. Copilot
/// 1.0.102 writes that file asynchronously: when `postToolUse` runs, the call's
/// `assistant.message` is often not in it yet (recorded: the file ended at
/// `assistant.turn_start`). So the file is read again until the message is there, for at most
/// [`COPILOT_WAIT`]; the last `assistant.message` whose tool requests load this skill gives the
/// intent (when a session loads one skill twice and the second call is not written yet, the
/// first call's words are taken).
fn copilot_intent(path: &Path, skill: &str) -> Option<String> {
    let deadline = std::time::Instant::now() + COPILOT_WAIT;
    loop {
        if let Some(said) = copilot_said(path, skill) {
            return said;
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The last `assistant.message` of Copilot's events that requests `skill {skill}`, if there
/// is one, and its text, if it has any.
pub fn copilot_said(path: &Path, skill: &str) -> Option<Option<String>> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut buf = vec![];
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let loads = |r: &Value| {
        r.pointer("/data/toolRequests").and_then(Value::as_array).is_some_and(|reqs| {
            reqs.iter().any(|q| {
                q.get("name").and_then(Value::as_str) == Some("skill")
                    && q.pointer("/arguments/skill").and_then(Value::as_str).map(|s| s.rsplit(':').next().unwrap_or(s))
                        == Some(skill)
            })
        })
    };
    let r = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r.get("type").and_then(Value::as_str) == Some("assistant.message") && loads(r))?;
    // A call with no words is still the call: no intent, and no more waiting for one.
    Some(
        agent_text(&r)
            .map(|said| said.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(INTENT_CHARS).collect()),
    )
}

/// The last thing the agent said in a transcript (its text before the tool call), as the
/// intent of the load.
fn intent_from(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut buf = vec![];
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let records: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let whole: Option<Value> = if records.is_empty() { serde_json::from_str(&text).ok() } else { None };
    let said = match whole {
        // A whole-file JSON transcript (`{"messages": [...]}`).
        Some(v) => v.get("messages").and_then(Value::as_array).and_then(|m| m.iter().rev().find_map(agent_text)),
        None => records.iter().rev().find_map(agent_text),
    }?;
    let said: String = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = said.chars().take(INTENT_CHARS).collect();
    (!cut.is_empty()).then_some(cut)
}

/// The agent's text of one transcript record, in the shapes these hosts write: Codex's rollout
/// (`response_item` of an assistant `message`), Copilot's events (`assistant.message`), and
/// Gemini's records (`type: "gemini"` with `content`, or a `model` turn's text `parts`).
pub fn agent_text(r: &Value) -> Option<String> {
    let text_of = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                let t: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
                (!t.is_empty()).then(|| t.join(" "))
            }
            _ => None,
        }
    };
    let typ = r.get("type").and_then(Value::as_str).unwrap_or_default();
    let found = if typ == "response_item" {
        let p = r.get("payload")?;
        (p.get("type")?.as_str()? == "message" && p.get("role")?.as_str()? == "assistant")
            .then(|| p.get("content").and_then(text_of))
            .flatten()
    } else if typ == "assistant.message" {
        r.get("data").and_then(|d| d.get("content")).and_then(text_of)
    } else if typ == "gemini" {
        r.get("content").and_then(text_of)
    } else if r.get("role").and_then(Value::as_str).is_some_and(|x| x == "model" || x == "assistant") {
        r.get("parts").or_else(|| r.get("content")).and_then(text_of)
    } else {
        None
    };
    found.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The block as Gemini CLI's model reads it: Gemini escapes `<` and `>` of hook context
/// (`&lt;note ...&gt;`), which buries the lessons in entities. The same notes, the same order,
/// as plain lines: a header, one line a note (`#id kind, intent: …`) with its lesson below,
/// then the guidance line (its `<`/`>` as `‹`/`›`). XML entities of the block are decoded; a
/// lesson's own text (code, often) is kept as it is.
pub fn plain_block(block: &str) -> String {
    let mut out = vec![];
    for line in block.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("<skill-memory") {
            let a = attrs(rest.trim_end_matches('>'));
            let get = |k: &str| a.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
            let n = get("count");
            let notes = if n == "1" { "note" } else { "notes" };
            out.push(format!("skill-memory for {} ({n} {notes}, ranked by {}):", get("skill"), get("mode")));
        } else if t == "</skill-memory>" || t == "</note>" {
        } else if let Some(rest) = t.strip_prefix("<note") {
            let a = attrs(rest.trim_end_matches('>'));
            let mut bits = vec![];
            let mut head = String::from("-");
            for (k, v) in &a {
                match k.as_str() {
                    "id" => head = format!("- note #{v}"),
                    "pinned" if v == "true" => bits.push("pinned".to_string()),
                    "pinned" => {}
                    "kind" => bits.insert(0, v.clone()),
                    "intent" if v.is_empty() => {}
                    k => bits.push(format!("{k}: {v}")),
                }
            }
            out.push(format!("{head} ({})", bits.join(", ")));
        } else if let Some(rest) = t.strip_prefix("<delta>") {
            out.push(format!("  {}", unescape(rest.trim_end_matches("</delta>"))));
        } else if !t.is_empty() {
            // The guidance line: its placeholders (`replaces=<its id>`) would reach the model
            // as `&lt;its id&gt;`; angle quotes read the same and pass untouched.
            out.push(unescape(t).replace('<', "‹").replace('>', "›"));
        }
    }
    out.join("\n")
}

fn attrs(s: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut rest = s.trim();
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim().to_string();
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.push((name, unescape(&after[..end])));
        rest = after[end + 1..].trim_start();
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_files_in_shell_commands() {
        // (command, the SKILL.md it reads)
        let cases: &[(&str, Option<&str>)] = &[
            ("cat .agents/skills/jq/SKILL.md", Some(".agents/skills/jq/SKILL.md")),
            (
                "sed -n '1,200p' '/home/u/.codex/skills/my skill/SKILL.md'",
                Some("/home/u/.codex/skills/my skill/SKILL.md"),
            ),
            ("bash -lc \"cat ~/x/SKILL.md | head\"", None),
            ("cd skills/jq && cat SKILL.md", Some("SKILL.md")),
            ("cat README.md", None),
            ("cat SKILL.md.bak", None),
            ("", None),
        ];
        for (cmd, want) in cases {
            assert_eq!(skill_file_in(cmd).as_deref(), *want, "{cmd}");
        }
    }

    #[test]
    fn skill_loads_per_host() {
        let ws = Path::new("/ws");
        // (host, event, skill, dir)
        type Want<'a> = Option<(&'a str, Option<&'a str>)>;
        let cases: Vec<(Agent, Value, Want)> = vec![
            (
                GEMINI,
                json!({"hook_event_name":"AfterTool","tool_name":"activate_skill","tool_input":{"name":"jq"}}),
                Some(("jq", None)),
            ),
            (GEMINI, json!({"hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{"name":"jq"}}), None),
            (
                GEMINI,
                json!({"hook_event_name":"BeforeTool","tool_name":"activate_skill","tool_input":{"name":"jq"}}),
                None,
            ),
            (
                GEMINI,
                json!({"hook_event_name":"AfterTool","tool_name":"activate_skill","tool_input":{"name":"../x"}}),
                None,
            ),
            (GEMINI, json!({"hook_event_name":"AfterTool","tool_name":"activate_skill"}), None),
            (
                CODEX,
                json!({"hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/p","tool_input":{"command":"cat .agents/skills/jq/SKILL.md"}}),
                Some(("jq", Some("/p/.agents/skills/jq"))),
            ),
            (
                CODEX,
                json!({"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":["bash","-lc","cat /h/.codex/skills/pdf/SKILL.md"]}}),
                Some(("pdf", Some("/h/.codex/skills/pdf"))),
            ),
            (CODEX, json!({"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}), None),
            (CODEX, json!({"hook_event_name":"Stop"}), None),
            (COPILOT, json!({"toolName":"skill","toolArgs":"{\"skill\":\"jq\"}"}), Some(("jq", None))),
            (COPILOT, json!({"toolName":"skill","toolArgs":{"skill":"plugin:jq"}}), Some(("jq", None))),
            (COPILOT, json!({"toolName":"bash","toolArgs":{"skill":"jq"}}), None),
            (COPILOT, json!({"toolName":"skill","toolArgs":"not json"}), None),
        ];
        for (agent, event, want) in cases {
            let got = skill_load(agent, &event, ws);
            let want = want.map(|(s, d)| Loaded { skill: s.into(), dir: d.map(PathBuf::from) });
            assert_eq!(got, want, "{} {event}", agent.host);
        }
    }

    #[test]
    fn agent_text_of_transcript_records() {
        // (record, what the agent said)
        let cases: Vec<(Value, Option<&str>)> = vec![
            (
                json!({"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading the jq skill to print raw strings."}]}}),
                Some("Reading the jq skill to print raw strings."),
            ),
            (
                json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}),
                None,
            ),
            (
                json!({"type":"assistant.message","data":{"content":"Loading jq for raw output."}}),
                Some("Loading jq for raw output."),
            ),
            (json!({"type":"gemini","content":"I will use jq."}), Some("I will use jq.")),
            (json!({"role":"model","parts":[{"text":"Using jq"},{"functionCall":{}}]}), Some("Using jq")),
            (json!({"type":"user","content":"x"}), None),
            (json!({"type":"gemini","content":"  "}), None),
        ];
        for (r, want) in cases {
            assert_eq!(agent_text(&r).as_deref(), want, "{r}");
        }
    }

    #[test]
    fn gemini_reads_the_block_without_angle_brackets() {
        let block = "<skill-memory skill=\"jq\" mode=\"vector\" count=\"1\" pinned=\"0\">\n<note id=\"7\" kind=\"gotcha\" intent=\"raw &amp; quiet\" hits=\"2\" pinned=\"false\">\n<delta>use -r &lt;not&gt; quotes</delta>\n</note>\n</skill-memory>\nIf you hit a gotcha, call mcp_skillmem_skill_note (replaces=<its id>).";
        let got = plain_block(block);
        assert_eq!(
            got,
            "skill-memory for jq (1 note, ranked by vector):\n- note #7 (gotcha, intent: raw & quiet, hits: 2)\n  use -r <not> quotes\nIf you hit a gotcha, call mcp_skillmem_skill_note (replaces=‹its id›)."
        );
        assert!(!got.contains("&lt;") && !got.contains("&amp;"));
    }

    #[test]
    fn recorded_gemini_0_61_hook_input_and_transcript() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gemini-cli/recorded-0.61.0");
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("after-tool-activate-skill.json")).unwrap())
                .unwrap();
        assert_eq!(skill_load(GEMINI, &event, Path::new("/ws")), Some(Loaded { skill: "jq".into(), dir: None }));
        assert!(transcript_of(GEMINI, &event).is_some());
        // The transcript as it stood when the hook ran (its timestamp): up to the tool's response.
        let whole = std::fs::read_to_string(dir.join("session.jsonl")).unwrap();
        let then: String =
            whole.lines().take_while(|l| !l.contains("functionResponse")).map(|l| format!("{l}\n")).collect();
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("t.jsonl"), then).unwrap();
        assert_eq!(
            intent_from(&tmp.path().join("t.jsonl")).as_deref(),
            Some("I will load jq to print raw strings for a shell loop.")
        );
    }

    #[test]
    fn recorded_codex_0_171_hook_input_and_rollout() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex/recorded-0.171.0");
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("post-tool-use-bash.json")).unwrap()).unwrap();
        let cwd = event["cwd"].as_str().unwrap();
        let want = Loaded { skill: "jq".into(), dir: Some(Path::new(cwd).join(".agents/skills/jq")) };
        assert_eq!(skill_load(CODEX, &event, Path::new("/ws")), Some(want));
        assert_eq!(
            intent_from(&dir.join("rollout-at-hook.jsonl")).as_deref(),
            Some("I will read the jq skill to print raw strings for a shell loop.")
        );
    }

    #[test]
    fn recorded_copilot_1_0_102_hook_input_and_events() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/copilot/recorded-1.0.102");
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("post-tool-use-skill.json")).unwrap()).unwrap();
        assert_eq!(skill_load(COPILOT, &event, Path::new("/ws")), Some(Loaded { skill: "jq".into(), dir: None }));
        let t = transcript_of(COPILOT, &event).unwrap();
        assert!(t.ends_with(format!(".copilot/session-state/{}/events.jsonl", event["sessionId"].as_str().unwrap())));
        assert_eq!(
            copilot_said(&dir.join("events-at-hook.jsonl"), "jq"),
            Some(Some("I will load the jq skill to print raw strings for a shell loop.".to_string()))
        );
        assert_eq!(copilot_said(&dir.join("events-at-hook.jsonl"), "pdf"), None);
        // What the file held when the hook ran: not the call yet (hence the wait).
        assert_eq!(copilot_said(&dir.join("events-when-the-hook-ran.jsonl"), "jq"), None);
        // A session id that is no plain name names no file.
        assert_eq!(transcript_of(COPILOT, &json!({"sessionId": "../../etc"})), None);
    }

    #[test]
    fn codex_prompts_that_mention_a_skill() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        std::fs::create_dir_all(ws.join(".agents/skills/jq")).unwrap();
        std::fs::write(ws.join(".agents/skills/jq/SKILL.md"), "---\nname: jq\n---\n").unwrap();
        let cwd = ws.display().to_string();
        // (prompt, the skill and intent it yields)
        type Want<'a> = Option<(&'a str, Option<&'a str>)>;
        let cases: &[(&str, Want)] = &[
            ("$jq print the names raw", Some(("jq", Some("print the names raw")))),
            ("use $jq, then stop", Some(("jq", Some("use then stop")))),
            ("$jq", Some(("jq", None))),
            ("echo $HOME and $pdf", None),
            ("no mention here", None),
        ];
        for (prompt, want) in cases {
            let e = json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": cwd});
            let got = codex_mention(&e, ws, None).map(|(l, said)| (l.skill, said));
            let want = want.map(|(s, i)| (s.to_string(), i.map(str::to_string)));
            assert_eq!(got, want, "{prompt}");
        }
        assert_eq!(codex_mention(&json!({"hook_event_name": "PostToolUse", "prompt": "$jq"}), ws, None), None);
    }
}
