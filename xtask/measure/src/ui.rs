//! `cargo xtask bench ui`: the dashboard's skill page of N notes (50 a page) fetched over
//! loopback.

use std::io::{Read, Write};

use anyhow::Result;

use crate::{emit, engine, Global};
use skillmem::memory::{Kind, Scope, Source};

/// `cargo xtask bench ui`: a skill with `notes` notes in a fresh data directory, its dashboard
/// page (50 notes a page) fetched `rounds` times per view over loopback; prints the times.
pub fn run(g: &Global, notes: usize, rounds: usize) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    // Every note gets a vector of the default embedder, as in real use (rows carry their
    // vector); duplicate detection only folds identical vectors, so every synthetic note is kept.
    std::fs::write(tmp.path().join("skillmem.toml"), "[memory]\ndedup_threshold = 0.99999\n")?;
    let engine = engine(&tmp.path().join("data"), tmp.path())?;
    let words = [
        "jq", "filter", "null", "array", "raw", "output", "slurp", "stream", "keys", "select", "map", "reduce", "path",
        "string", "number", "csv", "tsv", "object", "merge", "sort", "group", "unique", "limit", "env",
    ];
    let mut exported = vec![];
    let t0 = std::time::Instant::now();
    for i in 0..notes {
        let pick = |k: usize| words[(i * 7 + k * 13 + i / 24) % words.len()];
        let n = skillmem::engine::ExportedNote {
            id: None,
            skill: "bench".into(),
            scope: Scope::Project,
            project_id: engine.project_id().to_string(),
            origin_project: engine.project_id().to_string(),
            source: Source::Agent,
            kind: Kind::ALL[i % 4],
            intent: format!("{} the {}", pick(1), pick(2)),
            delta: format!("lesson {i}: use {} with {} before {} ({})", pick(3), pick(4), pick(5), pick(6)),
            tags: vec![],
            hits: (i % 5) as i64,
            recalls: (i % 3) as i64,
            pinned: i % 997 == 0,
            skill_hash: None,
            created_at: 1_700_000_000_000 + i as i64 * 60_000,
            updated_at: 1_700_000_000_000 + i as i64 * 60_000,
            content_hash: None,
            embedder: None,
            retired_at: None,
            superseded_by: None,
            reason: None,
            session_id: None,
            origin: Default::default(),
            origin_source: None,
            pending: false,
            evidence: Default::default(),
            backing: None,
            mined_sessions: vec![],
        };
        exported.push(n);
    }
    let imported = engine.import_notes(exported)?;
    let fill = t0.elapsed();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let bound = rt.block_on(skillmem::ui::bind(std::sync::Arc::new(engine), 0))?;
    let (port, token) = (bound.port(), bound.token().to_string());
    rt.spawn(async move { bound.serve().await });
    let get = |path: &str| -> Result<(u128, usize)> {
        let t = std::time::Instant::now();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: skillmem_ui={token}\r\nConnection: close\r\n\r\n"
        )?;
        let mut body = vec![];
        s.read_to_end(&mut body)?;
        let text = String::from_utf8_lossy(&body);
        anyhow::ensure!(text.starts_with("HTTP/1.1 200"), "{path}: {}", text.lines().next().unwrap_or(""));
        Ok((t.elapsed().as_micros(), body.len()))
    };
    let views = [
        ("first page", "/skill/bench".to_string()),
        ("page 100", "/skill/bench?page=100".to_string()),
        ("by hits, page 50", "/skill/bench?sort=hits&page=50".to_string()),
        ("search \"raw csv\"", "/skill/bench?q=raw+csv".to_string()),
        ("overview", "/".to_string()),
    ];
    let mut report = vec![];
    for (label, path) in &views {
        get(path)?;
        let mut times = vec![];
        let mut size = 0;
        for _ in 0..rounds.max(1) {
            let (us, n) = get(path)?;
            times.push(us);
            size = n;
        }
        times.sort_unstable();
        let ms = |us: u128| us as f64 / 1000.0;
        report.push(serde_json::json!({
            "view": label, "path": path, "bytes": size,
            "medianMs": ms(times[times.len() / 2]), "p95Ms": ms(times[(times.len() * 95 / 100).min(times.len() - 1)]),
            "maxMs": ms(times[times.len() - 1]),
        }));
    }
    let v = serde_json::json!({ "notes": imported.inserted, "fillSeconds": fill.as_secs_f64(), "rounds": rounds, "views": report });
    emit(g, &v, |v| {
        let mut t = format!(
            "skill page of {} notes (50 a page), {} rounds each, loopback; filled in {:.1} s\n",
            v["notes"],
            v["rounds"],
            v["fillSeconds"].as_f64().unwrap_or(0.0)
        );
        for r in v["views"].as_array().into_iter().flatten() {
            t.push_str(&format!(
                "  {:<20} median {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms  ({} bytes)\n",
                r["view"].as_str().unwrap_or(""),
                r["medianMs"].as_f64().unwrap_or(0.0),
                r["p95Ms"].as_f64().unwrap_or(0.0),
                r["maxMs"].as_f64().unwrap_or(0.0),
                r["bytes"]
            ));
        }
        t.trim_end().to_string()
    })?;
    drop(rt);
    Ok(())
}
