//! `skillmem chunk`, `skillmem observe` and `skillmem distill`: the historian and maintenance
//! methods as commands, calling the same engine methods as the server.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use skillmem::engine::Distilled;
use skillmem::engine::Engine;
use skillmem::historian::transcript::{self, Format};

use super::{emit, Global};

fn read_input(file: &Path) -> Result<String> {
    if file == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read stdin")?;
        return Ok(s);
    }
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The records or messages of a transcript file: a `.jsonl` file one a line; otherwise a JSON
/// array, an OpenCode export (`{ messages: [...] }`) or one object, else JSONL.
pub fn messages_of(file: &Path, content: &str) -> Vec<Value> {
    if file.extension().is_some_and(|e| e == "jsonl") {
        return transcript::records_from_jsonl(content);
    }
    match serde_json::from_str::<Value>(content) {
        Ok(Value::Array(a)) => a,
        Ok(Value::Object(o)) => match o.get("messages") {
            Some(Value::Array(a)) => a.clone(),
            _ => vec![Value::Object(o)],
        },
        _ => transcript::records_from_jsonl(content),
    }
}

pub fn chunk(g: &Global, engine: &Engine, format: &str, file: &Path) -> Result<()> {
    let parsed = Format::parse(format).with_context(|| {
        format!("--format {format:?} is not a transcript format; use claude-code, opencode or text")
    })?;
    let content = read_input(file)?;
    let r = if parsed == Format::Text {
        engine.transcript_chunk(parsed, &[], Some(&content))?
    } else {
        engine.transcript_chunk(parsed, &messages_of(file, &content), None)?
    };
    if !g.json {
        for s in &r.skipped {
            eprintln!("skillmem: skipped: {s}");
        }
    }
    emit(g, &r, |r| {
        let mut t = r.rendered.trim_end().to_string();
        t.push_str(&format!(
            "\n--- skills used: {}",
            if r.skills.is_empty() { "none".to_string() } else { r.skills.join(", ") }
        ));
        if r.instructions.is_empty() {
            t.push_str("\n--- no instructions (no skill with memory enabled was used)");
        } else {
            t.push_str("\n--- instructions for the historian\n");
            t.push_str(r.instructions.trim_end());
        }
        t
    })
}

pub fn observe(
    g: &Global,
    engine: &Engine,
    file: &Path,
    session: Option<String>,
    origin: skillmem::memory::Origin,
) -> Result<()> {
    let output = read_input(file)?;
    let r = engine.historian_result_from(&output, session, origin)?;
    emit(g, &r, |r| {
        let mut t = format!("promoted {}", r.promoted.len());
        for p in &r.promoted {
            let status = serde_json::to_value(p.status).ok();
            t.push_str(&format!(
                "\n  note {} {} ({} {}, {}): {}",
                p.id,
                status.as_ref().and_then(Value::as_str).unwrap_or(""),
                p.skill,
                p.kind,
                p.scope.as_str(),
                p.delta
            ));
        }
        t.push_str(&format!("\nrejected {}", r.rejected.len()));
        for x in &r.rejected {
            t.push_str(&format!("\n  {}\n    {}", x.line, x.reason));
        }
        t
    })
}

pub fn distill(g: &Global, engine: &Engine, batch_size: Option<usize>) -> Result<()> {
    let quiet = g.json;
    let r = engine.distill(batch_size, &mut |p| {
        if !quiet && p.percent.is_some_and(|pct| pct > 0) {
            eprintln!("skillmem: re-embedded {}", p.message);
        }
    })?;
    emit(g, &r, human_distill)
}

fn counts(m: &std::collections::BTreeMap<String, i64>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

fn human_distill(r: &Distilled) -> String {
    let c = &r.report;
    let mut t = format!("re-embedded {} notes\n", r.reembedded);
    for d in &r.retired_unused {
        t.push_str(&format!(
            "retired note {} ({}): {} (skillmem restore {} brings it back)\n",
            d.id, d.skill, d.reason, d.id
        ));
    }
    t.push_str(&format!("project {}: {} notes visible\n", c.project_id, c.notes));
    t.push_str(&format!("  by skill   {}\n", counts(&c.by_skill)));
    t.push_str(&format!("  by scope   {}\n", counts(&c.by_scope)));
    t.push_str(&format!("  by source  {}\n", counts(&c.by_source)));
    t.push_str(&format!("  by kind    {}\n", counts(&c.by_kind)));
    t.push_str(&format!(
        "  {} pinned, {} never recalled, {} written for an older skill version\n",
        c.pinned, c.never_recalled, c.older_version
    ));
    t.push_str(&format!(
        "embedding {} (dim {}), {} notes without a current vector\n",
        c.embedding_model.as_deref().unwrap_or("off"),
        c.embedding_dim.map(|d| d.to_string()).unwrap_or_else(|| "-".into()),
        c.stale_vectors
    ));
    if c.duplicates.is_empty() {
        t.push_str(&format!("no suspected duplicates (similarity ≥ {})", c.duplicate_threshold));
    } else {
        t.push_str(&format!(
            "{} suspected duplicate pairs (similarity ≥ {}):",
            c.duplicates.len(),
            c.duplicate_threshold
        ));
        for d in &c.duplicates {
            t.push_str(&format!("\n  {}: notes {} and {} ({:.3})", d.skill, d.a, d.b, d.similarity));
        }
    }
    if !c.conflicts.is_empty() {
        t.push_str(&format!(
            "\n{} conflicting pairs left unresolved (the newer leads; replace or retire the older if it no longer holds):",
            c.conflicts.len()
        ));
        for p in &c.conflicts {
            t.push_str(&format!(
                "\n  {}: note {} is newer than note {} (skillmem versions {}, skillmem forget {})",
                p.skill, p.newer, p.older, p.older, p.older
            ));
        }
    }
    if !c.secrets.is_empty() {
        t.push_str(&format!("\n{} note(s) hold a secret (skillmem doctor --fix redacts them):", c.secrets.len()));
        for s in &c.secrets {
            t.push_str(&format!("\n  {}: note {} ({})", s.skill, s.id, s.what.join(", ")));
        }
    }
    for w in &c.warnings {
        t.push_str(&format!("\nwarning: {w}"));
    }
    t
}
