//! Doors for agent hosts that cannot keep a sidecar running: the short-lived hook processes of
//! Claude Code, Gemini CLI, Codex and Copilot CLI ([`hooks`]: one runtime, one file per host
//! dialect), the MCP server for the note and session-skills tools ([`mcp`]), and the setup that
//! wires each host ([`setup`]).
//!
//! The hooks and MCP work directly on the data directory through [`crate::engine::Engine`], the same room
//! the sidecar and the CLI use (SQLite in WAL mode lets them share it). Neither knows the
//! sidecar's JSON-RPC; each owns its own stdout per its host's protocol.

pub mod hooks;
pub mod mcp;
pub mod setup;

use std::io::Write;
use std::path::Path;

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
