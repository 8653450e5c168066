//! `skillmem sync [--json]` (one sync with the team server, and what moved), `skillmem sync
//! status`, and `skillmem bench team` (push and pull of N notes through a scratch server).

use std::time::Instant;

use anyhow::{bail, Result};
use clap::Subcommand;
use serde_json::json;

use super::{emit, engine, out, Global};
use skillmem::engine::{SyncReport, TeamStatus};

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
    t
}

/// `skillmem bench team`: machine A writes `n` notes and pushes them, machine B pulls them
/// (and embeds them), through a scratch PostgreSQL server started for the run.
pub fn bench(g: &Global, n: usize) -> Result<()> {
    use skillmem::team::scratch::{ScratchServer, ADMIN};
    let pg = ScratchServer::start()?;
    pg.admin_sql("postgres", "CREATE DATABASE bench")?;
    let root = tempfile::tempdir()?;
    let ws = root.path().join("ws");
    let skill = ws.join(".claude/skills/bench-skill");
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: bench-skill\ndescription: bench\nskill-memory:\n  enabled: true\n---\nBody\n",
    )?;
    std::fs::write(
        ws.join("skillmem.toml"),
        format!(
            "[team]\nurl = \"{}\"\nteam = \"bench\"\npassword_env = \"SKILLMEM_BENCH_PW\"\n",
            pg.url(ADMIN, "bench")
        ),
    )?;
    std::env::set_var("SKILLMEM_BENCH_PW", skillmem::team::scratch::ADMIN_PASSWORD);
    let machine = |name: &str| -> Result<skillmem::engine::Engine> {
        let mut g2 = g.clone();
        g2.data_dir = Some(root.path().join(name));
        g2.workspace = Some(ws.clone());
        engine(&g2)
    };
    let a = machine("a")?;
    let b = machine("b")?;
    a.team_sync()?;
    b.team_sync()?;
    let t0 = Instant::now();
    for i in 0..n {
        a.write_note(skillmem::memory::NewNote {
            skill: "bench-skill".into(),
            kind: skillmem::memory::Kind::Gotcha,
            intent: format!("task {i}"),
            delta: lesson(i),
            tags: vec![],
            scope: skillmem::memory::Scope::Global,
            source: skillmem::memory::Source::Agent,
            session_id: None,
            skill_hash: None,
            origin: Default::default(),
            pending: false,
        })?;
    }
    let write = t0.elapsed();
    let t1 = Instant::now();
    let pushed = a.team_sync()?;
    let push = t1.elapsed();
    let t2 = Instant::now();
    let pulled = b.team_sync()?;
    let pull = t2.elapsed();
    // A write that the embedder finds identical to an earlier one (the same words in another
    // order) is a duplicate: it moves as a hit, not as a note.
    let notes = a.stats(None, Some(0))?.notes as usize;
    if pushed.pushed != n || pulled.inserted != notes {
        bail!(
            "expected {n} changes and {notes} notes to move, pushed {} and inserted {}",
            pushed.pushed,
            pulled.inserted
        );
    }
    let model = b.embedder().map(|e| e.model_id().to_string()).unwrap_or_else(|| "none".into());
    let result = json!({
        "writes": n,
        "notes": notes,
        "writeSeconds": write.as_secs_f64(),
        "pushSeconds": push.as_secs_f64(),
        "pullSeconds": pull.as_secs_f64(),
        "pullEmbedder": model,
    });
    emit(g, &result, |_| {
        format!(
            "{n} writes ({notes} notes): written locally in {:.2} s; pushed in {:.2} s ({:.0} changes/s); pulled and embedded ({model}) in {:.2} s ({:.0} notes/s)",
            write.as_secs_f64(),
            push.as_secs_f64(),
            n as f64 / push.as_secs_f64(),
            pull.as_secs_f64(),
            notes as f64 / pull.as_secs_f64()
        )
    })?;
    let _ = out;
    Ok(())
}

/// The `i`-th of many different lessons (words drawn by `i`, so no two are near duplicates).
fn lesson(i: usize) -> String {
    const WORDS: &[&str] = &[
        "cache",
        "deploy",
        "staging",
        "rebase",
        "token",
        "schema",
        "index",
        "worker",
        "queue",
        "retry",
        "timeout",
        "branch",
        "release",
        "docker",
        "proxy",
        "certificate",
        "migration",
        "replica",
        "bucket",
        "lambda",
        "cron",
        "webhook",
        "socket",
        "thread",
        "lock",
        "pool",
        "shard",
        "vacuum",
        "rollback",
        "feature",
        "flag",
        "quota",
    ];
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    let mut words = vec![];
    for _ in 0..8 {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        words.push(WORDS[(x % WORDS.len() as u64) as usize]);
    }
    format!("lesson {i}: {} before {}", words[..4].join(" "), words[4..].join(" "))
}
