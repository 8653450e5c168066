//! Doors for agent hosts that cannot keep a sidecar running: Claude Code's short-lived hook
//! processes ([`claude_code`]) and the MCP server for the note and session-skills tools ([`mcp`]).
//!
//! Both work directly on the data directory through [`crate::engine::Engine`], the same room
//! the sidecar and the CLI use (SQLite in WAL mode lets them share it). Neither knows the
//! sidecar's JSON-RPC; each owns its own stdout per its host's protocol.

pub mod agent_transcripts;
pub mod agents;
pub mod claude_code;
pub mod mcp;
pub mod setup;
pub mod store;

use std::io::Write;
use std::path::Path;

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

/// Largest log file kept before it is started afresh.
const LOG_LIMIT: u64 = 1 << 20;

/// Appends one line to `<data_dir>/logs/<name>.log`, never failing: a log that cannot be
/// written goes to stderr instead. The file is started afresh when it passes 1 MiB.
pub fn log_line(data_dir: &Path, name: &str, line: &str) {
    let dir = data_dir.join("logs");
    let path = dir.join(format!("{name}.log"));
    let stamp = crate::db::now_ms();
    let written = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        let fresh = std::fs::metadata(&path).map(|m| m.len() > LOG_LIMIT).unwrap_or(false);
        let mut f = std::fs::OpenOptions::new().create(true).append(!fresh).write(true).truncate(fresh).open(&path)?;
        writeln!(f, "{stamp} {line}")
    })();
    if let Err(e) = written {
        eprintln!("skillmem: {line} (and the log {} cannot be written: {e})", path.display());
    }
}

#[cfg(test)]
mod tests {
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
            assert_eq!(super::note_saved(out), want, "{out}");
        }
    }
}
