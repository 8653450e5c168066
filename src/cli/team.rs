//! `skillmem sync [--json]` (one sync with the team server, and what moved) and `skillmem sync
//! status`.

use anyhow::Result;
use clap::Subcommand;

use super::{emit, engine, Global};
use skillmem::engine::{SupportedLesson, SyncReport, TeamStatus, TeamSupport};

#[derive(Debug, Subcommand)]
pub enum SyncCommand {
    /// What the last syncs did, what waits, what is held back, and the server's head.
    Status {
        /// Do not ask the server (local state only).
        #[arg(long)]
        offline: bool,
    },
}

/// `skillmem sync` and `skillmem sync status`.
pub fn run(g: &Global, what: Option<SyncCommand>) -> Result<()> {
    let e = engine(g)?;
    match what {
        None => {
            let r = e.team_sync()?;
            emit(g, &r, human_report)?;
        }
        Some(SyncCommand::Status { offline }) => {
            let s = e.team_status(!offline)?;
            emit(g, &s, human_status)?;
        }
    }
    Ok(())
}

fn human_report(r: &SyncReport) -> String {
    let mut t = format!(
        "team {}: pushed {} changes, pulled {} rows ({} new notes, {} updated, {} retired, {} restored, {} purged), cursor {}",
        r.team, r.pushed, r.pulled, r.inserted, r.updated, r.retired, r.restored, r.removed, r.cursor
    );
    if r.released > 0 {
        t.push_str(&format!(
            "\n{} held mined lesson(s) released into recall: the team's sessions brought their support to memory.minedSupport",
            r.released
        ));
    }
    for h in &r.held {
        t.push_str(&format!("\nnote {} ({}) not pushed: {}", h.id, h.skill, h.reason));
    }
    t
}

fn ago(ms: Option<i64>) -> String {
    match ms {
        Some(ms) => format!("{} s ago", (skillmem::db::now_ms() - ms).max(0) / 1000),
        None => "never".into(),
    }
}

fn human_status(s: &TeamStatus) -> String {
    if !s.configured {
        return "no team configured (add a [team] section to skillmem.toml; README, \"Team memory\")".into();
    }
    let mut t = format!(
        "team {} at {} (share {})\nmachine {}\ncursor {}, {} local changes waiting\nlast push {}, last pull {}",
        s.team.as_deref().unwrap_or(""),
        s.url.as_deref().unwrap_or(""),
        s.share.as_deref().unwrap_or(""),
        s.machine.as_deref().unwrap_or("(not synced yet)"),
        s.cursor,
        s.pending,
        ago(s.last_push_at),
        ago(s.last_pull_at),
    );
    if let Some(e) = &s.last_error {
        t.push_str(&format!("\nlast error ({}): {e}", ago(s.last_error_at)));
    }
    match (&s.server_head, &s.server_error) {
        (Some(h), _) => t.push_str(&format!("\nserver head {h} ({} behind)", (h - s.cursor).max(0))),
        (_, Some(e)) => t.push_str(&format!("\nserver: {e}")),
        _ => {}
    }
    for h in &s.held {
        t.push_str(&format!("\nheld: note {} ({}): {}", h.id, h.skill, h.reason));
    }
    t.push_str(&human_support(&s.support));
    t
}

/// The team's support of this machine's mined lessons: how many held ones it backs, and
/// which it released.
fn human_support(s: &TeamSupport) -> String {
    let lesson = |l: &SupportedLesson| {
        let accepted = if l.accepted_on_team { ", accepted on another machine" } else { "" };
        format!(
            "note {} ({}): {} session(s) here + {} on the team's other machines = {} of {}{accepted}",
            l.id, l.skill, l.here, l.team, l.support, s.needed
        )
    };
    let mut t = format!(
        "\nmined lessons with the team's support: {} held (memory.minedSupport {}), {} released by it",
        s.held.len(),
        s.needed,
        s.released.len()
    );
    for l in &s.held {
        t.push_str(&format!("\n  held: {}", lesson(l)));
    }
    for l in &s.released {
        t.push_str(&format!("\n  released by the team: {}", lesson(l)));
    }
    t
}
