//! `skillmem eval merge FILE...`: the merge rule on labelled pairs of notes.
//!
//! Each line of a file is a JSON object `{"a": OLD, "b": NEW, "label": "same"|"update"|
//! "distinct"}`: `same` pairs must be merged (a restatement), `update` pairs must be kept and
//! recorded as a conflicting pair (a new version), `distinct` pairs must be kept. Both notes
//! are embedded as a write embeds them (`embed_notes`), and [`sameness::relate`] judges them
//! with the configured thresholds. Prints the merge's precision (of the pairs merged, how many
//! say the same thing: what must stay 1.0, since a wrong merge loses a lesson) and recall (of
//! the restatements, how many are merged), the same for conflicting pairs, and the confusion
//! table.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{out, Global};
use skillmem::config::Config;
use skillmem::embed::{dot, embed_notes};
use skillmem::memory::sameness::{self, Relation, Thresholds};

#[derive(Deserialize)]
struct Pair {
    a: String,
    b: String,
    label: String,
    #[serde(default)]
    why: String,
}

const LABELS: [Relation; 3] = [Relation::Same, Relation::Update, Relation::Distinct];

fn label_of(s: &str) -> Option<Relation> {
    LABELS.into_iter().find(|r| r.as_str() == s)
}

/// Reads a pairs file: one JSON object a line (blank lines and `//` lines skipped).
fn read_pairs(file: &Path) -> Result<Vec<(Pair, Relation)>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut pairs = vec![];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let p: Pair = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a pair {{\"a\", \"b\", \"label\"}}", file.display(), n + 1))?;
        let label = label_of(&p.label).with_context(|| {
            format!("{}:{}: label {:?}: use same, update or distinct", file.display(), n + 1, p.label)
        })?;
        pairs.push((p, label));
    }
    anyhow::ensure!(!pairs.is_empty(), "{}: no pairs", file.display());
    Ok(pairs)
}

pub fn run(g: &Global, files: &[PathBuf], embedding: Option<&str>, verbose: bool) -> Result<()> {
    let embedder = super::eval::embedder_of(embedding)?;
    let config = Config::default();
    let t = Thresholds { merge: config.memory.dedup_threshold, subject: config.memory.conflict_threshold };
    let mut reports = vec![];
    for file in files {
        let pairs = read_pairs(file)?;
        let texts: Vec<(&str, &str)> =
            pairs.iter().flat_map(|(p, _)| [("", p.a.as_str()), ("", p.b.as_str())]).collect();
        let vectors = embed_notes(embedder.as_ref(), &texts)?;
        // confusion[label][predicted]
        let mut confusion = [[0usize; 3]; 3];
        let mut wrong = vec![];
        for (i, (p, label)) in pairs.iter().enumerate() {
            let cos = dot(&vectors[2 * i], &vectors[2 * i + 1]);
            let got = sameness::relate(&p.a, &p.b, cos, t);
            let li = LABELS.iter().position(|r| r == label).unwrap_or(2);
            let gi = LABELS.iter().position(|r| *r == got).unwrap_or(2);
            confusion[li][gi] += 1;
            if got != *label {
                wrong.push(serde_json::json!({
                    "a": p.a, "b": p.b, "label": label.as_str(), "got": got.as_str(), "cosine": cos, "why": p.why
                }));
            }
        }
        let pr = |k: usize| {
            let predicted: usize = (0..3).map(|l| confusion[l][k]).sum();
            let labelled: usize = confusion[k].iter().sum();
            let hit = confusion[k][k];
            (ratio(hit, predicted), ratio(hit, labelled))
        };
        let (mp, mr) = pr(0);
        let (up, ur) = pr(1);
        reports.push(serde_json::json!({
            "file": file.display().to_string(),
            "pairs": pairs.len(),
            "embedding": embedder.model_id(),
            "thresholds": { "merge": t.merge, "subject": t.subject },
            "merge": { "precision": mp, "recall": mr },
            "conflict": { "precision": up, "recall": ur },
            "confusion": LABELS.iter().enumerate().map(|(l, r)| {
                serde_json::json!({ "label": r.as_str(), "same": confusion[l][0], "update": confusion[l][1], "distinct": confusion[l][2] })
            }).collect::<Vec<_>>(),
            "wrong": wrong,
        }));
    }
    if g.json {
        out(&serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        out(&format!(
            "merge eval: {} ({} pairs), embedding {}, merge at {:.2}, same subject at {:.2}",
            r["file"].as_str().unwrap_or(""),
            r["pairs"],
            r["embedding"].as_str().unwrap_or(""),
            t.merge,
            t.subject
        ));
        out(&format!(
            "  merged:      precision {:.3}  recall {:.3}",
            r["merge"]["precision"].as_f64().unwrap_or(0.0),
            r["merge"]["recall"].as_f64().unwrap_or(0.0)
        ));
        out(&format!(
            "  conflicting: precision {:.3}  recall {:.3}",
            r["conflict"]["precision"].as_f64().unwrap_or(0.0),
            r["conflict"]["recall"].as_f64().unwrap_or(0.0)
        ));
        out("  labelled \\ judged   same  update  distinct");
        for row in r["confusion"].as_array().into_iter().flatten() {
            out(&format!(
                "  {:<18} {:>5} {:>7} {:>9}",
                row["label"].as_str().unwrap_or(""),
                row["same"],
                row["update"],
                row["distinct"]
            ));
        }
        if verbose {
            for w in r["wrong"].as_array().into_iter().flatten() {
                out(&format!(
                    "  - {} judged {} at {:.3}: {:?} / {:?}",
                    w["label"].as_str().unwrap_or(""),
                    w["got"].as_str().unwrap_or(""),
                    w["cosine"].as_f64().unwrap_or(0.0),
                    w["a"].as_str().unwrap_or(""),
                    w["b"].as_str().unwrap_or("")
                ));
            }
        }
    }
    Ok(())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}
