//! `skillmem hook claude-code`: one Claude Code hook event in (JSON on stdin), the hook's
//! JSON answer out, working directly on the data directory.
//!
//! - `PostToolUse` of the `Skill` tool and `UserPromptExpansion` of a slash command give the
//!   skill's `<skill-memory>` block as `hookSpecificOutput.additionalContext` (it lands at the
//!   tail of the conversation, so the cached prefix is untouched).
//! - `Stop` and `SessionEnd` read the session's transcript from the offset reached last time
//!   (kept in the store, table `host_sessions`) and record which skills were used
//!   (`skill_uses`), so that the transcript is the safety net when a `Skill` hook did not fire.
//! - `PreCompact` prints the historian's instructions for the skills used since the last
//!   compaction (read from the transcript): Claude Code appends a PreCompact hook's stdout to
//!   its compaction prompt, for `/compact` and for automatic compaction alike.
//! - `PostCompact` hands the compaction summary to the historian, which promotes the
//!   observations of its `<skill_observations>` block through the promotion filter.
//!
//! Must never block or mislead the agent: every failure prints nothing, exits 0, and leaves
//! its reason in `<data dir>/logs/claude-code-hook.log`. Hook JSON of other versions (fields
//! missing or added) is read field by field, never as a strict struct.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::store;
use super::{
    cost_line, data_dir_for, expand_home, mine_calls, open_or_log, read_from, report_calls, run, str_field, tokens_of,
    workspace_of, Answer, HookOptions, READ_LIMIT,
};
use crate::db;
use crate::engine::{Engine, SkillLoad};
use crate::error::Error;
use crate::memory::provenance::{self, is_skill_tool, skill_name_of};

/// The log file (under `<data dir>/logs/`) of the hook.
pub const LOG_NAME: &str = "claude-code-hook";

/// How the guidance line names the note tool in Claude Code: the full name Claude Code gives
/// the MCP door's `skill_note` when skillmem is installed as a plugin (`editors/claude-code`,
/// server `skillmem` of plugin `skillmem`). The settings snippet, whose MCP server is called
/// `skillmem`, passes `--note-tool mcp__skillmem__skill_note`.
pub const NOTE_TOOL: &str = "mcp__plugin_skillmem_skillmem__skill_note";

/// The host name stored with session offsets and skill uses.
pub const HOST: &str = "claude-code";

/// Answers one Claude Code hook event. Never panics into the caller and never fails: problems
/// become log lines and an empty answer.
pub fn answer(stdin: &str, opts: &HookOptions) -> Answer {
    let opts = HookOptions {
        note_tool: opts.note_tool.clone().or_else(|| Some(NOTE_TOOL.to_string())),
        host: opts.host.clone().or_else(|| Some(HOST.to_string())),
        ..opts.clone()
    };
    run("Claude Code", stdin, &opts, handle)
}

fn handle(event: &Value, opts: &HookOptions, log: &mut Vec<String>) -> (Option<String>, Option<PathBuf>) {
    let ws = workspace_of(event, opts, Some("CLAUDE_PROJECT_DIR"));
    let data_dir = data_dir_for(&ws, opts);
    let Some(name) = str_field(event, "hook_event_name").map(str::to_string) else {
        log.push("the hook event has no hook_event_name; is this a Claude Code hook?".into());
        return (None, data_dir);
    };
    let out = match name.as_str() {
        "PostToolUse" => post_tool_use(event, &ws, opts, log),
        "UserPromptExpansion" => prompt_expansion(event, &ws, opts, log),
        "Stop" | "SessionEnd" | "SubagentStop" => {
            transcript(event, &ws, opts, log);
            None
        }
        "PostCompact" => {
            compacted(event, &ws, opts, log);
            None
        }
        // Plain text: Claude Code appends a PreCompact hook's stdout to the compaction prompt.
        "PreCompact" => return (precompact(event, &ws, opts, log), data_dir),
        _ => None,
    };
    let stdout = out.map(|block| {
        json!({ "hookSpecificOutput": { "hookEventName": name, "additionalContext": block } }).to_string()
    });
    (stdout, data_dir)
}

/// One skill load as the hook saw it.
struct Load {
    args: Value,
    output: String,
    intent: Option<String>,
    /// A name that is no skill (a custom slash command) is not a failure.
    quiet_not_found: bool,
}

/// The skill load's block, or `None` (logged when it is a failure).
fn load(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>, l: Load) -> Option<String> {
    let Some(skill) = skill_name_of(&l.args) else {
        log.push(format!(
            "{}: the event does not name the skill",
            str_field(event, "hook_event_name").unwrap_or("hook")
        ));
        return None;
    };
    let engine = open_or_log(ws, opts, log)?;
    let dir = provenance::dir_from_output(&l.output);
    let session = str_field(event, "session_id").map(str::to_string);
    let call_id = str_field(event, "tool_use_id").map(str::to_string);
    match engine.skill_loaded(SkillLoad { skill, dir, intent: l.intent, session, position: None, call_id }) {
        Ok(r) => {
            for w in engine.take_warnings() {
                log.push(format!("warning: {w}"));
            }
            r.append.map(|a| a.trim_start().to_string()).filter(|a| !a.is_empty())
        }
        Err(Error::NotFound(_)) if l.quiet_not_found => None,
        Err(e) => {
            log.push(format!("{}: {e}", str_field(event, "hook_event_name").unwrap_or("hook")));
            None
        }
    }
}

fn post_tool_use(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<String> {
    let tool = str_field(event, "tool_name")?;
    if !is_skill_tool(tool) {
        return None;
    }
    let input = event.get("tool_input").cloned().unwrap_or(Value::Null);
    // The skill's name is `skill` in the documented input; older builds used `skill_name`
    // or `command`, and a few `name`.
    let skill =
        ["skill", "name", "skill_name", "command"].iter().find_map(|k| str_field(&input, k)).map(str::to_string);
    let Some(skill) = skill.filter(|s| skill_name_of(&json!({ "skill": s })).is_some()) else {
        log.push("PostToolUse of Skill without tool_input.skill; cannot tell which skill was loaded".into());
        return None;
    };
    let intent = str_field(&input, "intent").or_else(|| str_field(&input, "args")).map(str::to_string);
    let output = match event.get("tool_response") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    load(event, ws, opts, log, Load { args: json!({ "skill": skill }), output, intent, quiet_not_found: false })
}

fn prompt_expansion(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<String> {
    // MCP prompts are not skills; a missing expansion_type (older builds) is taken as a slash command.
    if str_field(event, "expansion_type").is_some_and(|t| t != "slash_command" && t != "command") {
        return None;
    }
    let command = str_field(event, "command_name").map(str::to_string).or_else(|| {
        str_field(event, "prompt")
            .and_then(|p| p.strip_prefix('/'))
            .and_then(|p| p.split_whitespace().next())
            .map(str::to_string)
    })?;
    let intent = str_field(event, "command_args").map(str::to_string);
    // A custom command that is not a skill is not a failure: quiet.
    load(
        event,
        ws,
        opts,
        log,
        Load { args: json!({ "skill": command }), output: String::new(), intent, quiet_not_found: true },
    )
}

/// Stop / SessionEnd: reads the transcript past the stored offset and records skill uses.
fn transcript(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) {
    let Some(session) = str_field(event, "session_id") else {
        log.push(format!("{}: no session_id; transcript not read", str_field(event, "hook_event_name").unwrap_or("")));
        return;
    };
    let Some(path) = str_field(event, "transcript_path").map(expand_home) else {
        log.push(format!("session {session}: no transcript_path; transcript not read"));
        return;
    };
    let Some(engine) = open_or_log(ws, opts, log) else { return };
    if let Err(e) = read_transcript(&engine, session, &path, log) {
        log.push(format!("session {session}: transcript {}: {e}", path.display()));
    }
    // At the session's end, the whole transcript's failed calls and their fixes become
    // lessons (once: a turn's Stop would mine the same pairs again).
    if str_field(event, "hook_event_name") == Some("SessionEnd") {
        if let Err(e) = session_calls(&engine, session, &path, log) {
            log.push(format!("session {session}: mining {}: {e}", path.display()));
        }
        // The session is over: the notes its loads showed are judged by the calls it reported.
        if let Err(e) = engine.end_session(session) {
            log.push(format!("session {session}: its notes' use was not counted: {e}"));
        }
    }
}

/// The whole transcript's calls at a session's end: reported as the session's activity (the
/// calls the notes its loads showed are judged by), and mined for error → fix lessons
/// (`historian::mine`).
fn session_calls(engine: &Engine, session: &str, path: &Path, log: &mut Vec<String>) -> crate::Result<()> {
    let (lines, _) = read_from(path, 0)?;
    let records: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let calls = crate::historian::tool_calls::claude_code(&records);
    report_calls(engine, session, &records, &calls, log);
    mine_calls(engine, HOST, session, path, &calls, log)
}

/// PostCompact: the summary Claude Code wrote goes to the historian. It holds a
/// `<skill_observations>` block only when the compaction was asked for one (`/compact` with the
/// instructions of `skillmem chunk`, or compact instructions in CLAUDE.md); otherwise nothing is
/// promoted, which is not a failure.
fn compacted(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) {
    let Some(summary) = str_field(event, "compact_summary") else { return };
    if !summary.contains("<skill_observations") {
        return;
    }
    let Some(engine) = open_or_log(ws, opts, log) else { return };
    let session = str_field(event, "session_id").map(str::to_string);
    // Provenance: the transcript, and the compacted part's first and last records.
    let mut origin = crate::memory::Origin {
        host: None,
        transcript: str_field(event, "transcript_path").map(|p| expand_home(p).display().to_string()),
        transcript_at: None,
    };
    // The skills the compacted part used, so that the filter refuses lessons about others.
    if let Some(records) = transcript_records(event) {
        let part = compacted_part(&records);
        origin.transcript_at = crate::engine::chunk_span(crate::historian::transcript::Format::ClaudeCode, part, None);
        let used = compacted_skills(&records);
        if let (Some(s), false) = (&session, used.is_empty()) {
            // The compacted part as the historian's chunk would render it: what the summary's
            // lessons are grounded in.
            let text =
                crate::historian::transcript::render_full(crate::historian::transcript::Format::ClaudeCode, part, None)
                    .0
                    .rendered;
            engine.chunk_rendered(s, &used, &text);
        }
    }
    match engine.historian_result_from(summary, session, origin) {
        Ok(r) => {
            let lines = crate::historian::observations::first_block(summary).map(|b| b.trim()).unwrap_or("");
            cost_line(&engine, format!(
                "PostCompact: historian block of {} characters (~{} output tokens of the summary): {} promoted, {} rejected",
                lines.chars().count(),
                tokens_of(lines),
                r.promoted.len(),
                r.rejected.len()
            ));
            for x in &r.rejected {
                log.push(format!("PostCompact: observation rejected ({}): {}", x.reason, x.line));
            }
        }
        Err(e) => log.push(format!("PostCompact: {e}")),
    }
}

/// The session's transcript records, the last [`READ_LIMIT`] bytes of it at most (whole
/// lines). `None` when the event names no transcript or it cannot be read.
fn transcript_records(event: &Value) -> Option<Vec<Value>> {
    let path = str_field(event, "transcript_path").map(expand_home)?;
    let len = std::fs::metadata(&path).ok()?.len();
    let from = len.saturating_sub(READ_LIMIT);
    let (lines, _) = read_from(&path, from).ok()?;
    // Started mid-line: the first line is a tail.
    let skip = usize::from(from > 0);
    Some(lines.iter().skip(skip).filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect())
}

fn is_boundary(r: &Value) -> bool {
    r.get("type").and_then(Value::as_str) == Some("system")
        && r.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}

/// The records since the last compaction (after the last `compact_boundary` record).
fn since_last_compaction(records: &[Value]) -> &[Value] {
    match records.iter().rposition(is_boundary) {
        Some(i) => &records[i + 1..],
        None => records,
    }
}

/// The skills used in the part a compaction just summarised: the records after the last
/// boundary, or, when Claude Code has already written the new boundary and its summary (no
/// conversation after it yet), the records between the two last boundaries.
fn compacted_skills(records: &[Value]) -> Vec<String> {
    crate::historian::transcript::render(
        crate::historian::transcript::Format::ClaudeCode,
        compacted_part(records),
        None,
    )
    .skills
}

/// The records of the part a compaction just summarised (see [`compacted_skills`]).
fn compacted_part(records: &[Value]) -> &[Value] {
    let mut part = since_last_compaction(records);
    let talk = |r: &Value| {
        matches!(r.get("type").and_then(Value::as_str), Some("user" | "assistant"))
            && r.get("isCompactSummary").and_then(Value::as_bool) != Some(true)
    };
    if !part.iter().any(talk) {
        if let Some(last) = records.iter().rposition(is_boundary) {
            part = since_last_compaction(&records[..last]);
        }
    }
    part
}

/// PreCompact: the historian's instructions for the skills with memory used since the last
/// compaction, printed for Claude Code to append to its compaction prompt (manual and
/// automatic). Nothing when no such skill was used: the compaction is left alone.
fn precompact(event: &Value, ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<String> {
    let Some(records) = transcript_records(event) else {
        log.push("PreCompact: no readable transcript_path; no historian instructions added".into());
        return None;
    };
    let part = since_last_compaction(&records);
    let engine = open_or_log(ws, opts, log)?;
    let r = match engine.transcript_chunk(crate::historian::Format::ClaudeCode, part, None) {
        Ok(r) => r,
        Err(e) => {
            log.push(format!("PreCompact: {e}"));
            return None;
        }
    };
    if r.instructions.is_empty() {
        return None;
    }
    let trigger = str_field(event, "trigger").unwrap_or("compaction");
    cost_line(&engine, format!(
        "PreCompact ({trigger}): historian instructions for {} added to the compaction prompt: {} characters (~{} input tokens)",
        r.skills.join(", "),
        r.instructions.chars().count(),
        tokens_of(&r.instructions)
    ));
    Some(r.instructions)
}

fn read_transcript(engine: &Engine, session: &str, path: &Path, log: &mut Vec<String>) -> crate::Result<()> {
    // The hook's own tables, through their own connection: the engine's is its own.
    let mut conn = db::open(&engine.config().data_dir)?;
    let stored = store::offset(&conn, HOST, session)?;
    let path_str = path.display().to_string();
    let offset = match &stored {
        Some((p, o)) if *p == path_str => (*o).max(0) as u64,
        _ => 0,
    };
    let (lines, next) = read_from(path, offset)?;
    let mut records = vec![];
    let mut bad = 0usize;
    for l in lines.iter().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(l) {
            Ok(v) => records.push(v),
            Err(_) => bad += 1,
        }
    }
    if bad > 0 {
        log.push(format!("session {session}: {bad} transcript line(s) are not JSON and were skipped"));
    }
    let skills = skills_used(&records, log);
    let read = store::Read {
        host: HOST,
        session,
        project: engine.project_id(),
        transcript: &path_str,
        offset: next as i64,
        skills: &skills,
        at: db::now_ms(),
    };
    store::record_read(&mut conn, &read)?;
    Ok(())
}

/// The skills used in a slice of Claude Code transcript records, in order of first use, by
/// the historian's renderer (the one parser of Claude Code transcripts).
///
/// Only what may have cost a skill use is logged: the log is where a person looks for what
/// to act on, and records of types this version does not know (Claude Code adds bookkeeping
/// types often) are not that.
fn skills_used(records: &[Value], log: &mut Vec<String>) -> Vec<String> {
    let r = crate::historian::transcript::render(crate::historian::transcript::Format::ClaudeCode, records, None);
    if !r.missed.is_empty() {
        log.push(format!("transcript: skill uses may be missing: {}", r.missed.join("; ")));
    }
    r.skills
}
