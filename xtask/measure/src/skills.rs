//! `cargo xtask bench skills`: installing and seeding a generated bundle (a local git
//! repository), timed step by step.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::{out, Global};
use skillmem::config::Config;
use skillmem::engine::Engine;

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let st = std::process::Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run git (needed by the benchmark to build a repository)")?;
    anyhow::ensure!(st.success(), "git {args:?} failed");
    Ok(())
}

fn bundle(dir: &Path, count: usize) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    git(dir, &["init", "-q"])?;
    for i in 0..count {
        let s = dir.join(format!("skills/skill-{i:02}"));
        std::fs::create_dir_all(s.join("scripts"))?;
        std::fs::write(
            s.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:02}\ndescription: Benchmark skill number {i}.\n---\n# skill {i}\n\n{}\n",
                "Step. ".repeat(200)
            ),
        )?;
        std::fs::write(s.join("reference.md"), "reference text\n".repeat(400))?;
        std::fs::write(s.join("scripts/run.sh"), "#!/bin/sh\necho run\n")?;
    }
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "bundle"])?;
    Ok(())
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(v[0]))
}

/// Runs `cargo xtask bench skills`.
pub fn run(g: &Global, count: usize, runs: usize) -> Result<()> {
    let runs = runs.max(1);
    let tmp = tempfile::tempdir()?;
    let repo = tmp.path().join("bundle");
    bundle(&repo, count)?;
    let url = format!("file://{}", repo.display());
    let names: Vec<String> = (0..count).map(|i| format!("skill-{i:02}")).collect();
    let mut rows: Vec<(&str, Vec<Duration>)> = vec![
        ("install (cold data dir)", vec![]),
        ("reinstall (same commit)", vec![]),
        ("seed (fresh plain folder)", vec![]),
        ("reseed (replace all copies)", vec![]),
        ("seed (fresh git checkout)", vec![]),
        ("seed --dry-run", vec![]),
    ];
    for run in 0..runs {
        let data = tmp.path().join(format!("data-{run}"));
        let opts = json!({ "dataDir": data.display().to_string(), "embedding": { "provider": "off" } });
        let resolved = Config::resolve(Some(tmp.path()), Some(&opts))?;
        let e = Engine::open(resolved.config, Some(tmp.path().to_path_buf()))?;
        let t = Instant::now();
        let r = e.skills_install(&url, None, &Default::default(), false, &[], &|_| {})?;
        rows[0].1.push(t.elapsed());
        anyhow::ensure!(r.skills.len() == count, "installed {} skills, expected {count}", r.skills.len());
        let t = Instant::now();
        e.skills_install(&url, None, &Default::default(), false, &[], &|_| {})?;
        rows[1].1.push(t.elapsed());
        let plain = tmp.path().join(format!("plain-{run}"));
        std::fs::create_dir_all(&plain)?;
        let p = |cwd: &Path, dry_run| (cwd.to_path_buf(), dry_run);
        let t = Instant::now();
        {
            let (cwd, dry) = p(&plain, false);
            e.skills_seed(&cwd, &names, None, dry)
        }?;
        rows[2].1.push(t.elapsed());
        let t = Instant::now();
        {
            let (cwd, dry) = p(&plain, false);
            e.skills_seed(&cwd, &names, None, dry)
        }?;
        rows[3].1.push(t.elapsed());
        let checkout = tmp.path().join(format!("checkout-{run}"));
        std::fs::create_dir_all(&checkout)?;
        git(&checkout, &["init", "-q"])?;
        std::fs::write(checkout.join("README.md"), "x")?;
        git(&checkout, &["add", "-A"])?;
        git(&checkout, &["commit", "-q", "-m", "init"])?;
        let t = Instant::now();
        {
            let (cwd, dry) = p(&checkout, false);
            e.skills_seed(&cwd, &names, None, dry)
        }?;
        rows[4].1.push(t.elapsed());
        let t = Instant::now();
        {
            let (cwd, dry) = p(&checkout, true);
            e.skills_seed(&cwd, &names, None, dry)
        }?;
        rows[5].1.push(t.elapsed());
    }
    let figures: Vec<_> = rows
        .into_iter()
        .map(|(what, v)| {
            let (median, min) = stats(v);
            json!({ "step": what, "medianMs": (median * 10.0).round() / 10.0, "minMs": (min * 10.0).round() / 10.0 })
        })
        .collect();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let result = json!({ "skills": count, "filesPerSkill": 3, "runs": runs, "cores": cores, "figures": figures });
    if g.json {
        out(&serde_json::to_string_pretty(&result)?);
    } else {
        out(&format!("{count}-skill bundle (3 files each), file:// URL, {runs} runs, {cores} cores"));
        for f in &figures {
            out(&format!(
                "  {:<30} median {:>8.1} ms   min {:>8.1} ms",
                f["step"].as_str().unwrap_or(""),
                f["medianMs"],
                f["minMs"]
            ));
        }
    }
    Ok(())
}
