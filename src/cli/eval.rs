//! `skillmem eval recall FILE`: recall quality on a labelled set.
//!
//! Loads every note of the set into a temporary store (with its age and hits), then ranks
//! every query twice: with the full cascade (vector + bm25 fused, blended with recency and
//! hits) and with the bm25 rung alone. Prints MRR@10 and recall@5 overall and per query style.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{out, Global};
use skillmem::config::Config;
use skillmem::db;
use skillmem::embed::Embedder;
use skillmem::engine::embed_text;
use skillmem::index::{ExactIndex, VectorIndex};
use skillmem::memory::frontmatter::Ranking;
use skillmem::memory::recall::{self, Query, Rungs};
use skillmem::memory::store::{self, Embedded};
use skillmem::memory::{Kind, NewNote, Scope, Source};

#[derive(Deserialize)]
struct Set {
    skills: Vec<SetSkill>,
    queries: Vec<SetQuery>,
}

#[derive(Deserialize)]
struct SetSkill {
    name: String,
    notes: Vec<SetNote>,
}

#[derive(Deserialize)]
struct SetNote {
    id: String,
    kind: String,
    #[serde(default)]
    intent: String,
    delta: String,
    #[serde(default)]
    age_days: i64,
    #[serde(default)]
    hits: i64,
}

#[derive(Deserialize)]
struct SetQuery {
    skill: String,
    intent: String,
    relevant: Vec<String>,
    #[serde(default)]
    style: Option<String>,
}

#[derive(Default, Clone, serde::Serialize)]
struct Score {
    queries: usize,
    mrr10: f64,
    recall5: f64,
}

impl Score {
    fn add(&mut self, ranked: &[String], relevant: &[String]) {
        self.queries += 1;
        if let Some(pos) = ranked.iter().take(10).position(|id| relevant.contains(id)) {
            self.mrr10 += 1.0 / (pos + 1) as f64;
        }
        let found = ranked.iter().take(5).filter(|id| relevant.contains(id)).count();
        self.recall5 += found as f64 / relevant.len().max(1) as f64;
    }

    fn mean(&self) -> Score {
        let n = self.queries.max(1) as f64;
        Score { queries: self.queries, mrr10: self.mrr10 / n, recall5: self.recall5 / n }
    }
}

/// The embedder of `--embedding`: `static` (default), `hash`, `model:PATH` (a local model folder, with
/// the `local-model` feature) or `http:URL#MODEL` (an OpenAI-compatible endpoint).
pub fn embedder_of(spec: Option<&str>) -> Result<Arc<dyn Embedder>> {
    use skillmem::config::EmbeddingConfig as C;
    let cfg = match spec.unwrap_or("static") {
        "static" => C::Static,
        s if s.starts_with("static:") => {
            return Ok(Arc::new(skillmem::embed::static_table::StaticEmbedder::from_file(Path::new(&s[7..]))?))
        }
        "hash" => C::Hash,
        s if s.starts_with("model:") => {
            let path = std::path::PathBuf::from(&s["model:".len()..]);
            anyhow::ensure!(skillmem::embed::fetch::is_model_folder(&path), "--embedding {s}: not a model folder");
            C::Model { path }
        }
        s if s.starts_with("http:") || s.starts_with("https:") => {
            let (url, model) = s.split_once('#').context("--embedding http: give URL#MODEL")?;
            C::Http { url: url.into(), model: model.into(), api_key_env: None, dim: None }
        }
        s => anyhow::bail!("--embedding {s:?}: use static, static:TABLE, hash, model:PATH or http:URL#MODEL"),
    };
    skillmem::embed::from_config(&cfg)?.context("the embedder is not available (see the log)")
}

pub fn run(g: &Global, file: &Path, embedding: Option<&str>) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let set: Set = serde_json::from_str(&text).with_context(|| format!("{} is not a recall set", file.display()))?;
    let tmp = tempfile::tempdir()?;
    let mut conn = db::open(tmp.path())?;
    let embedder = embedder_of(embedding)?;
    let index = ExactIndex::new(embedder.model_id());
    let project = "eval";
    let now = db::now_ms();
    let mut ids: HashMap<i64, String> = HashMap::new();
    let dedup = Config::default().memory.dedup_threshold;
    for skill in &set.skills {
        for n in &skill.notes {
            let kind = Kind::parse(&n.kind).with_context(|| format!("note {}: unknown kind {}", n.id, n.kind))?;
            let v = embedder.embed_one(&embed_text(embedder.as_ref(), &n.intent, &n.delta))?;
            let new = NewNote {
                skill: skill.name.clone(),
                kind,
                intent: n.intent.clone(),
                delta: n.delta.clone(),
                tags: vec![],
                scope: Scope::Project,
                source: Source::Agent,
                session_id: None,
                skill_hash: None,
            };
            let (id, _) = store::write(
                &mut conn,
                project,
                &new,
                Some(Embedded { vector: &v, model: embedder.model_id() }),
                1.01,
                Some(&index as &dyn VectorIndex),
            )?;
            conn.execute(
                "UPDATE notes SET hits = ?2, created_at = ?3 WHERE id = ?1",
                rusqlite::params![id, n.hits, now - n.age_days * 86_400_000],
            )?;
            ids.insert(id, n.id.clone());
        }
    }
    let _ = dedup;
    let mut full: BTreeMap<String, Score> = BTreeMap::new();
    let mut bm25: BTreeMap<String, Score> = BTreeMap::new();
    for q in &set.queries {
        let query =
            Query { skill: &q.skill, project, intent: Some(&q.intent), ranking: Ranking::default(), now_ms: now };
        let rank = |use_vectors: bool| -> Result<Vec<String>> {
            let rungs = Rungs { embedder: Some(embedder.as_ref()), index: Some(&index), use_vectors, use_fts: true };
            let out = recall::rank(&conn, &query, &rungs)?;
            Ok(out.notes.iter().filter_map(|r| ids.get(&r.note.id).cloned()).collect())
        };
        let style = q.style.clone().unwrap_or_else(|| "all".into());
        for key in ["overall".to_string(), style] {
            full.entry(key.clone()).or_default().add(&rank(true)?, &q.relevant);
            bm25.entry(key).or_default().add(&rank(false)?, &q.relevant);
        }
    }
    if g.json {
        let rows: BTreeMap<&String, (Score, Score)> =
            full.iter().map(|(k, v)| (k, (v.mean(), bm25[k].mean()))).collect();
        out(&serde_json::to_string_pretty(&serde_json::json!({
            "embedding": embedder.model_id(),
            "styles": rows.iter().map(|(k, (f, b))| serde_json::json!({ "style": k, "queries": f.queries, "cascade": { "mrr10": f.mrr10, "recall5": f.recall5 }, "bm25": { "mrr10": b.mrr10, "recall5": b.recall5 } })).collect::<Vec<_>>(),
        }))?);
        return Ok(());
    }
    out(&format!(
        "recall eval: {} ({} notes, {} queries), embedding {}",
        file.display(),
        ids.len(),
        set.queries.len(),
        embedder.model_id()
    ));
    out(&format!(
        "{:<12} {:>7} | {:>9} {:>9} | {:>9} {:>9}",
        "style", "queries", "MRR@10", "recall@5", "bm25 MRR", "bm25 r@5"
    ));
    for (k, f) in &full {
        let (f, b) = (f.mean(), bm25[k].mean());
        out(&format!(
            "{:<12} {:>7} | {:>9.3} {:>9.3} | {:>9.3} {:>9.3}",
            k, f.queries, f.mrr10, f.recall5, b.mrr10, b.recall5
        ));
    }
    Ok(())
}
