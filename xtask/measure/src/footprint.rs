//! `cargo xtask bench footprint`: where a store's resident memory goes (issue 49). The parts
//! a sidecar holds are loaded one after the other in this process, through the same library
//! the server runs, and the resident size (`VmRSS`) is read after each, twice: as it is, and
//! after `malloc_trim` hands the allocator's free pages back (the difference is allocator
//! slack); the peak (`VmHWM`) is reset before each step (`/proc/self/clear_refs`), so each
//! step's transient peak is its own. A program that prints figures (never assertions).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::common::Rng;
use crate::{out, Global};
use skillmem::engine::SkillLoad;

/// Options of `bench footprint`.
pub struct FootprintOpts {
    /// The data directory of a filled store (`bench recall --keep DIR` leaves
    /// `DIR/<notes>-<skills>/data`).
    pub data: PathBuf,
    /// Its workspace (`DIR/<notes>-<skills>/ws`).
    pub workspace: PathBuf,
    /// Recalls with an intent after every skill was loaded once.
    pub rounds: usize,
    /// Then recalls of the first skill alone (a protocol fill's largest).
    pub largest_rounds: usize,
}

#[derive(Serialize)]
struct Step {
    part: String,
    /// What this step added to the resident size, after the allocator's slack was returned.
    added_mb: f64,
    /// The resident size after the step, as it was and after `malloc_trim`.
    rss_mb: f64,
    rss_trimmed_mb: f64,
    /// The step's own peak resident size.
    peak_mb: f64,
    ms: f64,
}

fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resets the peak resident size (Linux: "5" to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `cargo xtask bench footprint`.
pub fn footprint(g: &Global, o: FootprintOpts) -> Result<()> {
    // The server's own setting for a load's figures: the index ready before the first recall.
    std::env::set_var("SKILLMEM_INDEX_BLOCKING", "1");
    let skills_dir = o.workspace.join(".claude/skills");
    let mut skills: Vec<String> = std::fs::read_dir(&skills_dir)
        .with_context(|| format!("cannot list {}", skills_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .collect();
    skills.sort();
    let mut steps: Vec<Step> = vec![];
    trim();
    let mut last = crate::common::rss_mb(None).0;
    steps.push(Step {
        part: "the process (this program, no store)".into(),
        added_mb: last,
        rss_mb: last,
        rss_trimmed_mb: last,
        peak_mb: crate::common::rss_mb(None).1,
        ms: 0.0,
    });
    reset_peak();
    let mut step = |part: &str, t: Instant, steps: &mut Vec<Step>| {
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let rss = crate::common::rss_mb(None).0;
        let peak = crate::common::rss_mb(None).1;
        trim();
        let trimmed = crate::common::rss_mb(None).0;
        steps.push(Step {
            part: part.into(),
            added_mb: trimmed - last,
            rss_mb: rss,
            rss_trimmed_mb: trimmed,
            peak_mb: peak,
            ms,
        });
        last = trimmed;
        reset_peak();
    };
    let t = Instant::now();
    skillmem::embed::static_table::StaticEmbedder::builtin()?;
    step("the static embedder's table", t, &mut steps);
    let t = Instant::now();
    let engine = crate::engine(&o.data, &o.workspace)?;
    step("the SQLite connection and the vector index (loaded, ready)", t, &mut steps);
    let t = Instant::now();
    let mut blocks = 0;
    for s in &skills {
        let dir = skills_dir.join(s);
        blocks += engine
            .skill_loaded(SkillLoad {
                skill: s.clone(),
                dir: Some(dir),
                intent: None,
                session: None,
                position: None,
                call_id: None,
            })?
            .append
            .is_some() as usize;
    }
    step(
        &format!(
            "the {} skills loaded once without an intent, {blocks} blocks (catalog, candidate lists, recency heads)",
            skills.len()
        ),
        t,
        &mut steps,
    );
    let t = Instant::now();
    let built = engine.build_lexicons(true)?;
    step(&format!("{built} bm25 indexes (skills up to 5,000 notes) and token matching's pieces"), t, &mut steps);
    let t = Instant::now();
    let mut r = Rng::new(5);
    let mut modes = std::collections::BTreeMap::new();
    let words = ["deploy", "build", "cache", "parse", "retry", "token", "image", "query", "schema", "config"];
    for i in 0..o.rounds {
        let s = &skills[r.below(skills.len())];
        let intent = format!("{} {} {}", words[r.below(10)], words[r.below(10)], words[r.below(10)]);
        let got = engine.skill_loaded(SkillLoad {
            skill: s.clone(),
            dir: Some(skills_dir.join(s)),
            intent: Some(intent),
            session: Some("footprint".into()),
            position: None,
            call_id: Some(format!("c{i}")),
        })?;
        *modes.entry(format!("{:?}", got.mode)).or_insert(0) += 1;
    }
    step(
        &format!("{} loads with an intent, modes {modes:?} (the rungs, the page cache, packs)", o.rounds),
        t,
        &mut steps,
    );
    if o.largest_rounds > 0 {
        let t = Instant::now();
        // A protocol fill puts 90% of the notes in its first skill.
        let largest = skills[0].clone();
        for i in 0..o.largest_rounds {
            let intent = format!("{} {} {}", words[r.below(10)], words[r.below(10)], r.below(100_000));
            engine.skill_loaded(SkillLoad {
                skill: largest.clone(),
                dir: Some(skills_dir.join(&largest)),
                intent: Some(intent),
                session: Some("footprint".into()),
                position: None,
                call_id: Some(format!("l{i}")),
            })?;
        }
        step(&format!("{} loads of the first skill ({largest}) alone", o.largest_rounds), t, &mut steps);
    }
    if g.json {
        out(&serde_json::to_string_pretty(&steps)?);
        return Ok(());
    }
    out("| part | added (MB) | RSS after (MB) | after malloc_trim | the step's peak | ms |");
    out("|---|---:|---:|---:|---:|---:|");
    for s in &steps {
        out(&format!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} |",
            s.part, s.added_mb, s.rss_mb, s.rss_trimmed_mb, s.peak_mb, s.ms
        ));
    }
    drop(engine);
    Ok(())
}
