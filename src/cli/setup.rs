//! `skillmem setup <host>`: wires skillmem into a host's configuration (hosts::setup), prints
//! the changes (`--dry-run`: only prints them) and what to do next.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::json;

use skillmem::hosts::setup::{self, Host, Where};

use super::{out, Global};

/// `skillmem setup` options.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The host to wire.
    pub host: HostArg,
    /// Wire one project (its own configuration files) instead of the user's, where the host has project configuration.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print the changes without writing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove what setup added (and nothing else).
    #[arg(long)]
    pub undo: bool,
    /// A skillmem checkout whose editors/ folder holds the OpenCode plugin and the Pi extension (default: found above the binary).
    #[arg(long, value_name = "DIR")]
    pub checkout: Option<PathBuf>,
    /// The skillmem binary the host runs (default: this one).
    #[arg(long, value_name = "FILE")]
    pub bin: Option<PathBuf>,
}

/// The hosts setup knows.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum HostArg {
    /// Claude Code: hooks in ~/.claude/settings.json, the MCP server in ~/.claude.json.
    ClaudeCode,
    /// OpenCode: the plugin in ~/.config/opencode/opencode.json.
    Opencode,
    /// Pi: the extension in ~/.pi/agent/settings.json.
    Pi,
    /// Gemini CLI: hooks and the MCP server in ~/.gemini/settings.json, a tool policy.
    GeminiCli,
    /// Codex CLI: hooks in $CODEX_HOME/hooks.json, their trust and the MCP server in config.toml.
    Codex,
    /// GitHub Copilot CLI: ~/.copilot/hooks/skillmem.json and ~/.copilot/mcp-config.json.
    Copilot,
}

impl From<HostArg> for Host {
    fn from(h: HostArg) -> Host {
        match h {
            HostArg::ClaudeCode => Host::ClaudeCode,
            HostArg::Opencode => Host::Opencode,
            HostArg::Pi => Host::Pi,
            HostArg::GeminiCli => Host::GeminiCli,
            HostArg::Codex => Host::Codex,
            HostArg::Copilot => Host::Copilot,
        }
    }
}

/// The `Where` of this process: its own binary, `$HOME`, the checkout above the binary.
pub fn here(project: Option<PathBuf>, bin: Option<PathBuf>, checkout: Option<PathBuf>) -> Result<Where> {
    let exe = match bin {
        Some(b) => std::fs::canonicalize(&b).with_context(|| format!("--bin {}: no such file", b.display()))?,
        None => std::env::current_exe().context("cannot tell where this skillmem binary is")?,
    };
    let project = match project {
        Some(p) => Some(
            std::fs::canonicalize(&p)
                .ok()
                .filter(|p| p.is_dir())
                .with_context(|| format!("--project {}: not a folder", p.display()))?,
        ),
        None => None,
    };
    let checkout = match checkout {
        Some(c) => {
            Some(std::fs::canonicalize(&c).with_context(|| format!("--checkout {}: no such folder", c.display()))?)
        }
        None => None,
    };
    Ok(Where::from_env(project, exe, checkout)?)
}

pub fn run(g: &Global, a: SetupArgs) -> Result<()> {
    if a.undo && a.bin.is_some() {
        bail!("--undo removes skillmem's entries whatever binary they name: drop --bin");
    }
    let host: Host = a.host.into();
    let mut w = here(a.project, a.bin, a.checkout)?;
    if let Some(d) = &g.data_dir {
        std::fs::create_dir_all(d).with_context(|| format!("--data-dir {}: cannot create it", d.display()))?;
        w.data_dir = Some(std::fs::canonicalize(d)?);
    }
    let plan = setup::plan(host, &w, a.undo)?;
    let changes = setup::changes(&plan, a.undo)?;
    if !a.dry_run {
        setup::write(&changes)?;
    }
    let action = |c: &setup::Change| match (&c.before, &c.after) {
        (None, _) => "created",
        (_, None) => "removed",
        _ => "changed",
    };
    if g.json {
        let files: Vec<_> = changes
            .iter()
            .map(|c| {
                json!({
                    "path": c.path,
                    "action": action(c),
                    "backup": c.before.as_ref().map(|_| setup::backup_path(&c.path)),
                    "diff": if a.dry_run { Some(setup::diff(c)) } else { None },
                })
            })
            .collect();
        out(&serde_json::to_string_pretty(&json!({
            "host": host.id(),
            "dryRun": a.dry_run,
            "undo": a.undo,
            "changes": files,
            "next": plan.next,
        }))?);
        return Ok(());
    }
    let mut t = vec![];
    if changes.is_empty() {
        t.push(if a.undo {
            format!("{}: nothing of skillmem's to remove.", host.label())
        } else {
            format!("{}: already wired, nothing to change.", host.label())
        });
    }
    for c in &changes {
        if a.dry_run {
            t.push(setup::diff(c));
        } else {
            let kept = match &c.before {
                Some(_) => format!(" (the old one kept as {})", setup::backup_path(&c.path).display()),
                None => String::new(),
            };
            t.push(format!("{} {}{kept}", action(c), c.path.display()));
        }
    }
    if a.dry_run && !changes.is_empty() {
        t.push("(dry run: nothing was written)".into());
    }
    if !plan.next.is_empty() {
        t.push(String::new());
        t.push("Next:".into());
        t.extend(plan.next.iter().map(|l| format!("  - {l}")));
    }
    out(&t.join("\n"));
    Ok(())
}
