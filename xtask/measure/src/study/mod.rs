//! `cargo xtask study …`: dataset studies, which write what a model would be trained on and
//! print no verdict of their own.
//!
//! - `historian-features --out OUT FILES…`: for each parsed line of labelled historian sets
//!   (`bench/historian/`), the rules' verdict (`pass` or the refusing rule's category), the
//!   label and category, [`features::features`] by name, and the lesson's vector by the
//!   built-in static table (what the filter's cosines are taken with): the input of
//!   `bench/historian/judge.py`, the learned judge that was tried and not landed
//!   (docs/historian.md).

mod features;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::{json, Value};

use crate::{emit, Global};
use skillmem::embed::Embedder;
use skillmem::historian::{filter, labelled::LabelledSet, observations};

/// `cargo xtask study historian-features`: one JSON record a parsed line of `files`, to `out`.
pub fn historian_features(g: &Global, files: &[PathBuf], out: &Path) -> Result<()> {
    let table = skillmem::embed::static_table::StaticEmbedder::builtin()?;
    let cosine = filter::cosine_by(table.clone());
    let sim = filter::Similarity(&cosine);
    let mut dump = String::new();
    let mut records = 0;
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let dir = f.parent().unwrap_or(Path::new("."));
        let set = LabelledSet::parse(&f.display().to_string(), &text, &|p| std::fs::read_to_string(dir.join(p)))
            .map_err(anyhow::Error::msg)?;
        let name = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for l in &set.lines {
            let Ok(o) = observations::parse_line(&l.line) else { continue };
            let ctx = set.context(&o.skill, &l.chunk, Some(sim));
            let refused = filter::check(&o.skill, &o.lesson, &ctx).err();
            let rule = refused.as_ref().map_or("pass", |r| r.category());
            let named: serde_json::Map<String, Value> = features::NAMES
                .iter()
                .zip(features::features(&o.skill, &o.lesson, &ctx))
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            let mut r = json!({
                "skill": o.skill,
                "kind": o.kind.as_str(),
                "lesson": o.lesson,
                "rule": rule,
                "features": named,
                "embedding": table.embed_one(&o.lesson)?,
            });
            r["set"] = name.clone().into();
            r["label"] = (if l.want { "promote" } else { "reject" }).into();
            r["category"] = l.category.clone().into();
            dump.push_str(&r.to_string());
            dump.push('\n');
            records += 1;
        }
    }
    std::fs::write(out, dump).with_context(|| format!("writing {}", out.display()))?;
    let report = json!({ "records": records, "sets": files.len(), "out": out.display().to_string() });
    emit(g, &report, |_| {
        format!("{records} lines of {} sets, their features written to {}", files.len(), out.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One record a parsed line: the rules' verdict, the features, the vector.
    #[test]
    fn the_features_of_the_development_set() {
        let dev = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/historian/dev.jsonl");
        let tmp = tempfile::tempdir().unwrap();
        let dump = tmp.path().join("features.jsonl");
        historian_features(&Global { json: true }, &[dev], &dump).unwrap();
        let text = std::fs::read_to_string(&dump).unwrap();
        let recs: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(recs.len() >= 150, "{}", recs.len());
        for k in ["set", "skill", "kind", "lesson", "label", "category", "rule", "features", "embedding"] {
            assert!(recs[0].get(k).is_some(), "{k} missing from {}", recs[0]);
        }
        assert_eq!(recs[0]["set"], "dev");
        assert_eq!(recs[0]["embedding"].as_array().unwrap().len(), 256);
        assert_eq!(recs[0]["features"].as_object().unwrap().len(), features::NAMES.len());
        assert!(recs.iter().any(|r| r["rule"] == "pass") && recs.iter().any(|r| r["rule"] == "narration"));
    }
}
