//! `cargo xtask bench team`: machine A writes N notes and pushes them, machine B pulls them,
//! through a scratch PostgreSQL server started for the run.

use std::time::Instant;

use anyhow::{bail, Result};
use serde_json::json;

use crate::{emit, engine, Global};

/// `cargo xtask bench team`: machine A writes `n` notes and pushes them, machine B pulls them
/// (and embeds them), through a scratch PostgreSQL server started for the run.
pub fn run(g: &Global, n: usize) -> Result<()> {
    use skillmem_test_support::{ScratchServer, ADMIN};
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
    std::env::set_var("SKILLMEM_BENCH_PW", skillmem_test_support::ADMIN_PASSWORD);
    let machine = |name: &str| engine(&root.path().join(name), &ws);
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
