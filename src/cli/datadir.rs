//! The commands that read or change notes already there refuse a data directory that holds no
//! store, and say where they looked and what to do: an empty store made on the spot would
//! answer "no notes" for a mistyped `--data-dir` or a `SKILLMEM_HOME` the host does not share.

use anyhow::{bail, Context, Result};
use serde_json::Value;

use skillmem::config::{default_data_dir, Config};
use skillmem::db::DB_FILE;

use super::{Command, Global};

/// Whether `command` only reads or changes notes already stored.
pub fn needs_store(command: &Command) -> bool {
    matches!(
        command,
        Command::Recall { .. }
            | Command::Pin { .. }
            | Command::Forget { .. }
            | Command::Restore { .. }
            | Command::Purge { .. }
            | Command::Versions { .. }
            | Command::Edit { .. }
            | Command::Stats { .. }
            | Command::Notes(_)
            | Command::Review { .. }
            | Command::Export { .. }
    )
}

/// An error that says what to do when the data directory `g` names holds no store.
pub fn require_store(g: &Global) -> Result<()> {
    let workspace = match &g.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let mut opts = serde_json::Map::new();
    if let Some(d) = &g.data_dir {
        opts.insert("dataDir".into(), Value::String(d.display().to_string()));
    }
    let dir = Config::resolve(Some(&workspace), Some(&Value::Object(opts)))?.config.data_dir;
    if dir.join(DB_FILE).is_file() {
        return Ok(());
    }
    let from = if g.data_dir.is_some() {
        "--data-dir"
    } else if dir != default_data_dir() {
        "data_dir in skillmem.toml"
    } else if std::env::var_os("SKILLMEM_HOME").is_some_and(|h| !h.is_empty()) {
        "$SKILLMEM_HOME"
    } else {
        "the default; $SKILLMEM_HOME or --data-dir change it"
    };
    bail!(
        "no skill memory in {} yet (no {DB_FILE} there; that folder comes from {from}).\n\
         If your agents' notes are elsewhere, pass --data-dir DIR or set SKILLMEM_HOME to that folder.\n\
         To start here: wire a host with `skillmem setup <host>`, or write a first note with \
         `skillmem note SKILL --kind gotcha --delta TEXT`.",
        dir.display()
    )
}
