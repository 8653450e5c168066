//! `skillmem hook gemini-cli | codex | copilot`: the one flow of the three hosts whose hooks see
//! a skill load and a session's (or turn's) end, one process per event like
//! [`super::claude_code`], on the same data directory. What each host's events look like is its
//! dialect's file ([`super::gemini`], [`super::codex`], [`super::copilot`]); what is read of
//! their transcripts, [`super::transcripts`].
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

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::store;
use super::transcripts::{self as transcripts, agent_text, Kind};
use super::{
    codex, copilot, data_dir_for, expand_home, gemini, mine_calls, open_or_log, read_from, read_tail, report_calls,
    run, session_of, str_field, workspace_of, Answer, HookOptions, Loaded, INTENT_CHARS, TAIL,
};
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

/// Answers one hook event of `agent`. Never panics into the caller and never fails.
pub fn answer(agent: Agent, stdin: &str, opts: &HookOptions) -> Answer {
    let opts = HookOptions {
        note_tool: opts.note_tool.clone().or_else(|| Some(agent.note_tool.to_string())),
        host: Some(agent.host.to_string()),
        ..opts.clone()
    };
    run(agent.host, stdin, &opts, |event, opts, log| handle(agent, event, opts, log))
}

fn handle(agent: Agent, event: &Value, opts: &HookOptions, log: &mut Vec<String>) -> (Option<String>, Option<PathBuf>) {
    let project_var = if agent.dialect == Dialect::Gemini { Some("GEMINI_PROJECT_DIR") } else { None };
    let ws = workspace_of(event, opts, project_var);
    let data_dir = data_dir_for(&ws, opts);
    let name = str_field(event, "hook_event_name").unwrap_or_default();
    match (agent.dialect, name) {
        // The session's end (Gemini: complete transcript, awaited in headless mode; Copilot:
        // `sessionEnd`, which names no event and no transcript, only the session), and every
        // turn's end for Codex (`Stop`; its `SessionEnd` is clamped to 3 s): the skill uses of
        // the transcript.
        (Dialect::Gemini, "SessionEnd") | (Dialect::Codex, "Stop" | "SessionEnd") => {
            session_end(agent, event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Copilot, _) if event.get("toolName").is_none() && event.get("reason").is_some() => {
            session_end(agent, event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Codex, "PostCompact") => {
            codex::compacted(event, &ws, opts, log);
            return (None, data_dir);
        }
        (Dialect::Codex, "SessionStart") => return (codex::after_compaction(event, &ws, opts, log), data_dir),
        _ => {}
    }
    let mention = match agent.dialect {
        Dialect::Codex => codex::mention(event, &ws, dirs::home_dir().as_deref()),
        _ => None,
    };
    let prompted = mention.is_some();
    let (loaded, intent) = match mention {
        Some((loaded, said)) => (loaded, said),
        None => {
            let Some(loaded) = skill_load(agent, event, &ws) else { return (None, data_dir) };
            let intent = match (agent.dialect, transcript_of(agent, event)) {
                (Dialect::Copilot, Some(p)) => copilot::intent(&p, &loaded.skill),
                (_, Some(p)) => intent_from(&p),
                (_, None) => None,
            };
            (loaded, intent)
        }
    };
    let Some(engine) = open_or_log(&ws, opts, log) else { return (None, data_dir) };
    // Before the block is built: a lesson of an earlier session that could not be mined at its
    // end is in it.
    catch_up(agent, &engine, session_of(event).as_deref().unwrap_or_default(), log);
    let block = match engine.skill_loaded(SkillLoad {
        skill: loaded.skill.clone(),
        dir: loaded.dir.clone(),
        intent,
        session: session_of(event),
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
    if let Some(session) = session_of(event) {
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
            json!({ "hookSpecificOutput": { "hookEventName": "AfterTool", "additionalContext": gemini::plain_block(&b) } })
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
                report_calls(&engine, &session, &records, &calls, log);
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
    mine_calls(engine, agent.host, session, path, &calls, log)
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
    match agent.dialect {
        Dialect::Gemini => gemini::skill_load(event),
        Dialect::Codex => codex::skill_load(event, ws),
        Dialect::Copilot => copilot::skill_load(event),
    }
}

/// The last thing the agent said in a transcript (its text before the tool call), as the
/// intent of the load.
fn intent_from(path: &Path) -> Option<String> {
    let text = read_tail(path, TAIL)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
            copilot::said(&dir.join("events-at-hook.jsonl"), "jq"),
            Some(Some("I will load the jq skill to print raw strings for a shell loop.".to_string()))
        );
        assert_eq!(copilot::said(&dir.join("events-at-hook.jsonl"), "pdf"), None);
        // What the file held when the hook ran: not the call yet (hence the wait).
        assert_eq!(copilot::said(&dir.join("events-when-the-hook-ran.jsonl"), "jq"), None);
        // A session id that is no plain name names no file.
        assert_eq!(transcript_of(COPILOT, &json!({"sessionId": "../../etc"})), None);
    }
}
