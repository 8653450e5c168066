//! The hook runtime: what every hook door shares. A host that cannot keep a sidecar running
//! runs `skillmem hook <host>` once per event (JSON on stdin, the host's JSON answer on stdout),
//! working directly on the data directory. One file per host dialect says what that host's
//! events and transcripts look like: [`claude_code`], [`gemini`], [`codex`], [`copilot`]; the
//! three hosts whose hooks see a skill load and a session's end share one flow, [`agents`], and
//! their transcripts' readers, [`transcripts`]. No dialect imports another's internals: what
//! they share is here.
//!
//! Here: the options and the answer of a hook process, [`run`] (an event in, never a panic or a
//! failure out: problems become log lines), the workspace and the data directory an event
//! works in, opening the engine, reading a transcript from an offset, and reporting a
//! transcript's calls as the session's activity.

pub mod agents;
pub mod claude_code;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod store;
pub mod transcripts;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{default_data_dir, Config};
use crate::engine::Engine;
use crate::error::Error;

/// Largest slice of a transcript read in one hook run; the rest waits for the next run.
const READ_LIMIT: u64 = 32 << 20;

/// How much of a transcript's end is read for the intent.
pub const TAIL: u64 = 256 << 10;

/// The longest intent kept.
pub const INTENT_CHARS: usize = 500;

/// Where the hook works.
#[derive(Debug, Clone, Default)]
pub struct HookOptions {
    /// `--data-dir`; else `$SKILLMEM_HOME`, the workspace's skillmem.toml, the default.
    pub data_dir: Option<PathBuf>,
    /// `--workspace`; else `$CLAUDE_PROJECT_DIR`, the event's `cwd`, the current folder.
    pub workspace: Option<PathBuf>,
    /// `--note-tool`: the note tool's name in this host (each dialect gives its default);
    /// `memory.noteTool` in the configuration still wins.
    pub note_tool: Option<String>,
    /// The host notes are recorded as written from (each dialect gives its own); `host` in the
    /// configuration still wins.
    pub host: Option<String>,
}

/// What the hook process does: print `stdout` (if any) and append `log` to the log file.
#[derive(Debug, Default)]
pub struct Answer {
    pub stdout: Option<String>,
    pub log: Vec<String>,
    /// The data directory the log belongs in.
    pub data_dir: PathBuf,
}

impl Answer {
    /// The same answer with one more log line.
    pub fn with_log(mut self, line: String) -> Self {
        self.log.push(line);
        self
    }
}

/// Answers one hook event: the event on stdin read as a JSON object and handed to `handle`
/// with the options, which returns the stdout and the data directory. Never panics into the
/// caller and never fails: an empty stdin, a text that is not a JSON object and a panic become
/// log lines and an empty answer.
pub fn run(
    host: &str,
    stdin: &str,
    opts: &HookOptions,
    handle: impl FnOnce(&Value, &HookOptions, &mut Vec<String>) -> (Option<String>, Option<PathBuf>),
) -> Answer {
    let mut a = Answer { data_dir: opts.data_dir.clone().unwrap_or_else(default_data_dir), ..Default::default() };
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut log = vec![];
        let (stdout, data_dir) = match event_of(host, stdin, &mut log) {
            Some(event) => handle(&event, opts, &mut log),
            None => (None, None),
        };
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

/// The hook event on stdin, a JSON object, or why there is none.
fn event_of(host: &str, stdin: &str, log: &mut Vec<String>) -> Option<Value> {
    let text = stdin.trim();
    if text.is_empty() {
        log.push(format!("empty stdin: {host} sent no hook event; nothing to answer"));
        return None;
    }
    match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) => Some(v),
        Ok(_) => {
            log.push("the hook event on stdin is not a JSON object; nothing to answer".into());
            None
        }
        Err(e) => {
            log.push(format!("the hook event on stdin is not valid JSON ({e}); nothing to answer"));
            None
        }
    }
}

pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The project root the event works in: `--workspace`; else the host's project variable
/// (`project_var`, e.g. `$CLAUDE_PROJECT_DIR`: the event's `cwd` may be a subfolder, where the
/// skill folders would not be found); else the event's `cwd`; else the current folder.
pub fn workspace_of(event: &Value, opts: &HookOptions, project_var: Option<&str>) -> PathBuf {
    opts.workspace
        .clone()
        .or_else(|| project_var.and_then(std::env::var_os).map(PathBuf::from).filter(|p| p.is_dir()))
        .or_else(|| str_field(event, "cwd").map(PathBuf::from).filter(|p| p.is_dir()))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The session an event belongs to (`session_id`, or Copilot CLI's `sessionId`).
pub fn session_of(event: &Value) -> Option<String> {
    str_field(event, "session_id").or_else(|| str_field(event, "sessionId")).map(str::to_string)
}

/// A skill load as one host's event describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub skill: String,
    pub dir: Option<PathBuf>,
}

/// A skill name an event may carry: a folder's name, nothing that walks out of a folder.
pub fn name_ok(s: &str) -> bool {
    !s.is_empty() && !s.contains(['/', '\\']) && s != "." && s != ".."
}

/// [`open`], with a failure logged (the hook never fails the agent).
pub fn open_or_log(ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Option<Engine> {
    match open(ws, opts, log) {
        Ok(e) => Some(e),
        Err(e) => {
            log.push(format!("cannot open the store: {e}"));
            None
        }
    }
}

fn open(ws: &Path, opts: &HookOptions, log: &mut Vec<String>) -> Result<Engine, Error> {
    let t = std::time::Instant::now();
    let o = opts.data_dir.as_ref().map(|d| json!({ "dataDir": d.display().to_string() }));
    let mut resolved = Config::resolve(Some(ws), o.as_ref())?;
    tracing::debug!("hook: configuration read in {:?}", t.elapsed());
    log.extend(resolved.warnings.into_iter().map(|w| format!("warning: {w}")));
    // The agent notes through the MCP server's tool, by its full name in the host.
    if let Some(tool) = &opts.note_tool {
        resolved.config.default_note_tool(tool);
    }
    if let Some(host) = &opts.host {
        resolved.config.default_host(host);
    }
    Engine::open(resolved.config, Some(ws.to_path_buf()))
}

/// The data directory the configuration points at (for the log), without opening anything.
pub fn data_dir_for(ws: &Path, opts: &HookOptions) -> Option<PathBuf> {
    if let Some(d) = &opts.data_dir {
        return Some(d.clone());
    }
    Config::resolve(Some(ws), None).ok().map(|r| r.config.data_dir)
}

pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(p),
    }
}

/// The last `bytes` of `path` as text (a line cut at the start is the caller's to skip), or
/// `None` when it cannot be read: where the intent of a load is looked for.
pub fn read_tail(path: &Path, bytes: u64) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(bytes))).ok()?;
    let mut buf = vec![];
    f.read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Mines a session's calls read from `host`'s transcript at `path` for error → fix lessons
/// (`historian::mine`), each written one logged.
pub fn mine_calls(
    engine: &Engine,
    host: &str,
    session: &str,
    path: &Path,
    calls: &[crate::historian::mine::Call],
    log: &mut Vec<String>,
) -> crate::Result<()> {
    let origin = crate::memory::Origin {
        host: Some(host.to_string()),
        transcript: Some(path.display().to_string()),
        transcript_at: None,
    };
    let r = engine.mine_calls(calls, Some(session), origin)?;
    for w in &r.written {
        log.push(format!("session {session}: mined a fix lesson of {} ({:?}): {}", w.skill, w.status, w.delta));
    }
    Ok(())
}

/// The complete lines of `path` from `offset`, and the offset after the last one. A line
/// still being written (no newline yet) is left for the next run; a file shorter than the
/// offset (rewritten) is read from the start.
pub fn read_from(path: &Path, offset: u64) -> std::io::Result<(Vec<String>, u64)> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = if len < offset { 0 } else { offset };
    f.seek(SeekFrom::Start(start))?;
    let mut buf = vec![];
    f.take(READ_LIMIT).read_to_end(&mut buf)?;
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        // One line longer than the whole read limit can never complete here: step over it.
        let skip = if buf.len() as u64 == READ_LIMIT { buf.len() as u64 } else { 0 };
        return Ok((vec![], start + skip));
    };
    let lines = String::from_utf8_lossy(&buf[..end]).lines().map(str::to_string).collect();
    Ok((lines, start + end as u64 + 1))
}

/// The log of what the historian costs (`<data dir>/logs/historian.log`): kept apart from the
/// hook's log, which holds only what a person must act on.
pub const COST_LOG: &str = "historian";

pub fn cost_line(engine: &Engine, line: String) {
    super::log_line(&engine.config().data_dir, COST_LOG, &line);
}

/// Roughly how many tokens a text costs a model (four characters a token, rounded up).
pub fn tokens_of(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Reports the calls read from a host's transcript as the session's activity
/// ([`crate::engine::Engine::transcript_calls`]), each at the time of its transcript record
/// (`timestamp`, RFC 3339); a record without one is left out, and the log says how many.
pub fn report_calls(
    engine: &crate::engine::Engine,
    session: &str,
    records: &[serde_json::Value],
    calls: &[crate::historian::mine::Call],
    log: &mut Vec<String>,
) {
    let timed: Vec<(Option<i64>, crate::historian::mine::Call)> = calls
        .iter()
        .map(|c| {
            let at = match c.position {
                crate::historian::mine::Position::RecordIndex(i) => records.get(i).and_then(record_time),
                crate::historian::mine::Position::CallId(_) => None,
            };
            (at, c.clone())
        })
        .collect();
    let untimed =
        timed.iter().filter(|(at, c)| at.is_none() && !crate::memory::provenance::is_skill_tool(&c.tool)).count();
    let n = engine.transcript_calls(session, &timed);
    // Notes the agent wrote in this session through the MCP door are this session's.
    let written: Vec<i64> = calls
        .iter()
        .filter(|c| c.tool.ends_with("skill_note") && !c.failed)
        .filter_map(|c| note_saved(&c.output))
        .collect();
    if let Err(e) = engine.claim_notes(session, &written) {
        log.push(format!("session {session}: the notes it wrote were not given to it: {e}"));
    }
    if untimed > 0 {
        log.push(format!(
            "session {session}: {untimed} of {} calls have no time in the transcript; not judged",
            n + untimed
        ));
    }
}

/// The note id of a note tool's answer ("Saved as note 12." or "Saved as note 12, in the place
/// of note 3."), if it saved one.
/// Claude Code gives the model (and its transcript) the structured result instead:
/// `{"id":12,"status":"inserted"}`, JSON-escaped or not.
fn note_saved(output: &str) -> Option<i64> {
    let digits = |rest: &str| rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok();
    if let Some(at) = output.find("Saved as note ") {
        return digits(&output[at + "Saved as note ".len()..]);
    }
    let written = ["inserted", "replaced"]
        .iter()
        .any(|s| output.contains(&format!("\"status\":\"{s}")) || output.contains(&format!("\\\"status\\\":\\\"{s}")));
    if !written {
        return None;
    }
    let at = output.find("\"id\":").map(|i| i + 5).or_else(|| output.find("\\\"id\\\":").map(|i| i + 7))?;
    digits(output[at..].trim_start())
}

/// A transcript record's time: its `timestamp` (Claude Code, Codex, Copilot CLI, Gemini CLI's
/// messages), as ms since the epoch.
fn record_time(r: &serde_json::Value) -> Option<i64> {
    r.get("timestamp").and_then(serde_json::Value::as_str).and_then(crate::db::ms_of_rfc3339)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn read_from_takes_complete_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        // (file content, offset) → (lines, next offset)
        let cases: &[(&str, u64, &[&str], u64)] = &[
            ("", 0, &[], 0),
            ("a\nb\n", 0, &["a", "b"], 4),
            ("a\nb\n", 2, &["b"], 4),
            ("a\nb\nhalf", 0, &["a", "b"], 4),
            ("a\nb\nhalf", 4, &[], 4),
            ("a\n", 10, &["a"], 2), // shorter than the offset: rewritten, read from the start
        ];
        for (text, offset, want, next) in cases {
            std::fs::write(&p, text).unwrap();
            let (lines, n) = read_from(&p, *offset).unwrap();
            assert_eq!(
                (lines.iter().map(String::as_str).collect::<Vec<_>>().as_slice(), n),
                (*want, *next),
                "{text:?} @ {offset}"
            );
        }
        assert!(read_from(&dir.path().join("missing"), 0).is_err());
    }

    #[test]
    fn note_saved_table() {
        for (out, want) in [
            ("Saved as note 12.", Some(12)),
            ("Saved as note 7, in the place of note 3.", Some(7)),
            ("{\"content\":[{\"type\":\"text\",\"text\":\"Saved as note 41.\"}]}", Some(41)),
            ("Already known (note 12); its weight went up.", None),
            ("{\"id\":5,\"status\":\"inserted\"}", Some(5)),
            (
                "[{\"type\":\"text\",\"text\":\"{\\\"id\\\":6,\\\"status\\\":\\\"replaced\\\",\\\"replaced\\\":2}\"}]",
                Some(6),
            ),
            ("{\"id\":5,\"status\":\"duplicate\"}", None),
            ("Saved as note x.", None),
            ("", None),
        ] {
            assert_eq!(note_saved(out), want, "{out}");
        }
    }
}
