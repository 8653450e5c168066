//! `skillmem eval recall FILE`: recall quality on a labelled set.
//!
//! Writes every note of the set through an [`Engine`] over a temporary store (then sets its
//! age and hits), each skill taken as a skill without a SKILL.md (memory on, default
//! settings), and ranks every query three ways, printing MRR@10 and recall@5 overall and per
//! query style:
//!
//! - **cascade**: what a skill load ranks ([`Engine::rank_in`]: the catalog's candidates,
//!   the engine's vector index, vector + bm25 rungs, then every other note by recency ×
//!   hits), with the embedder of `--embedding` (`off`: no vector rung);
//! - **bm25 rung**: the notes the bm25 rung alone matches, in its order (the same path
//!   without the vector rung);
//! - **plain bm25**: a baseline outside skillmem's code, a plain FTS5 table of the notes
//!   (`intent`, `delta`, the store's `porter unicode61` tokenizer) queried with the intent's
//!   words OR-ed as written, in `bm25()` order, matches only (issue 9's baseline);
//! - **pure cosine** (with an embedder): the skill's notes by the cosine between the intent's
//!   vector and the vector of the note's text as written (intent and lesson, code and all),
//!   nothing else (issue 10's baseline: what recall must never fall below).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{out, Global};
use skillmem::config::Config;
use skillmem::db;
use skillmem::embed::Embedder;
use skillmem::engine::{Engine, SkillContext};
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
        "off" => anyhow::bail!("--embedding off has no embedder"),
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

/// The plain-bm25 baseline's table, beside the store's own (see the module docs).
const PLAIN_SETUP: &str =
    "CREATE VIRTUAL TABLE plain_fts USING fts5 (skill UNINDEXED, intent, delta, tokenize = 'porter unicode61')";

/// The plain-bm25 baseline: the skill's notes matching any word of `intent`, best first.
fn plain_bm25(conn: &rusqlite::Connection, skill: &str, intent: &str) -> Result<Vec<i64>> {
    let words = skillmem::text::words(intent);
    if words.is_empty() {
        return Ok(vec![]);
    }
    let q = words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR ");
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM plain_fts WHERE plain_fts MATCH ?1 AND skill = ?2 ORDER BY bm25(plain_fts), rowid LIMIT 10",
    )?;
    let rows = stmt.query_map(rusqlite::params![q, skill], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn run(g: &Global, file: &Path, embedding: Option<&str>) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let set: Set = serde_json::from_str(&text).with_context(|| format!("{} is not a recall set", file.display()))?;
    let tmp = tempfile::tempdir()?;
    let embedder = match embedding {
        Some("off") => None,
        spec => Some(embedder_of(spec)?),
    };
    let model = embedder.as_ref().map(|e| e.model_id().to_string()).unwrap_or_else(|| "off".into());
    // The engine a skill load goes through, over a temporary store: the same writes, catalog,
    // index and ranking. Near duplicates are kept (every note of the set is its own).
    let mut config =
        Config { data_dir: tmp.path().to_path_buf(), project_id: Some("eval".into()), ..Config::default() };
    config.memory.dedup_threshold = 1.01;
    let engine = Engine::with_embedder(db::open(tmp.path())?, config, None, embedder.clone())?;
    // Each skill as a skill without a SKILL.md of its own: memory on, default settings (never
    // the settings of a same-named skill installed on this machine).
    let ctx = |skill: &str| SkillContext {
        name: skill.to_string(),
        dir: None,
        enabled: true,
        settings: Default::default(),
        version: None,
        problem: None,
    };
    // The plain-bm25 baseline lives outside the store.
    let plain_db = rusqlite::Connection::open_in_memory()?;
    plain_db.execute(PLAIN_SETUP, [])?;
    let now = db::now_ms();
    let mut ids: HashMap<i64, String> = HashMap::new();
    // The pure-cosine baseline's note vectors, by skill: (label, vector).
    let mut plain_vectors: HashMap<String, Vec<(String, Vec<f32>)>> = HashMap::new();
    for skill in &set.skills {
        if let Some(e) = &embedder {
            let texts: Vec<String> =
                skill.notes.iter().map(|n| skillmem::embed::note_text(&n.intent, &n.delta)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = e.embed(&refs)?;
            let labelled = skill.notes.iter().map(|n| n.id.clone()).zip(vectors).collect();
            plain_vectors.insert(skill.name.clone(), labelled);
        }
        for n in &skill.notes {
            let kind = Kind::parse(&n.kind).with_context(|| format!("note {}: unknown kind {}", n.id, n.kind))?;
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
            let id = engine.write_note_in(&ctx(&skill.name), new)?.id;
            engine.set_note_facts(id, n.hits, now - n.age_days * 86_400_000, false)?;
            plain_db.execute(
                "INSERT INTO plain_fts (rowid, skill, intent, delta) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![id, skill.name, n.intent, n.delta],
            )?;
            ids.insert(id, n.id.clone());
        }
    }
    let mut full: BTreeMap<String, Score> = BTreeMap::new();
    let mut bm25: BTreeMap<String, Score> = BTreeMap::new();
    let mut plain: BTreeMap<String, Score> = BTreeMap::new();
    let mut cosine: BTreeMap<String, Score> = BTreeMap::new();
    let label = |ranked: &[i64]| -> Vec<String> { ranked.iter().filter_map(|id| ids.get(id).cloned()).collect() };
    for q in &set.queries {
        let rank = |use_vectors: bool, matched_only: bool| -> Result<Vec<String>> {
            let out = engine.rank_in(&ctx(&q.skill), Some(&q.intent), use_vectors && embedder.is_some())?;
            let kept: Vec<i64> = out.notes.iter().filter(|r| r.matched || !matched_only).map(|r| r.note.id).collect();
            Ok(label(&kept))
        };
        let style = q.style.clone().unwrap_or_else(|| "all".into());
        for key in ["overall".to_string(), style] {
            full.entry(key.clone()).or_default().add(&rank(true, false)?, &q.relevant);
            bm25.entry(key.clone()).or_default().add(&rank(false, true)?, &q.relevant);
            plain
                .entry(key.clone())
                .or_default()
                .add(&label(&plain_bm25(&plain_db, &q.skill, &q.intent)?), &q.relevant);
            if let (Some(e), Some(notes)) = (&embedder, plain_vectors.get(&q.skill)) {
                let qv = e.embed_one(&q.intent)?;
                let mut by: Vec<(f32, &String)> =
                    notes.iter().map(|(id, v)| (skillmem::embed::dot(&qv, v), id)).collect();
                by.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
                let ranked: Vec<String> = by.into_iter().map(|(_, id)| id.clone()).collect();
                cosine.entry(key).or_default().add(&ranked, &q.relevant);
            }
        }
    }
    if g.json {
        let styles: Vec<serde_json::Value> = full
            .iter()
            .map(|(k, f)| {
                let (f, b, p) = (f.mean(), bm25[k].mean(), plain[k].mean());
                let c = cosine.get(k).map(|c| {
                    let c = c.mean();
                    serde_json::json!({ "mrr10": c.mrr10, "recall5": c.recall5 })
                });
                serde_json::json!({
                    "style": k,
                    "queries": f.queries,
                    "cascade": { "mrr10": f.mrr10, "recall5": f.recall5 },
                    "bm25": { "mrr10": b.mrr10, "recall5": b.recall5 },
                    "plainBm25": { "mrr10": p.mrr10, "recall5": p.recall5 },
                    "pureCosine": c,
                })
            })
            .collect();
        out(&serde_json::to_string_pretty(&serde_json::json!({ "embedding": model, "styles": styles }))?);
        return Ok(());
    }
    out(&format!(
        "recall eval: {} ({} notes, {} queries), embedding {}",
        file.display(),
        ids.len(),
        set.queries.len(),
        model
    ));
    out(&format!(
        "{:<12} {:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9}",
        "style",
        "queries",
        "MRR@10",
        "recall@5",
        "bm25 MRR",
        "bm25 r@5",
        "plain MRR",
        "plain r@5",
        "cos MRR",
        "cos r@5"
    ));
    for (k, f) in &full {
        let (f, b, p) = (f.mean(), bm25[k].mean(), plain[k].mean());
        let c = cosine
            .get(k)
            .map(|c| {
                let c = c.mean();
                format!("{:>9.3} {:>9.3}", c.mrr10, c.recall5)
            })
            .unwrap_or_else(|| format!("{:>9} {:>9}", "-", "-"));
        out(&format!(
            "{:<12} {:>7} | {:>9.3} {:>9.3} | {:>9.3} {:>9.3} | {:>9.3} {:>9.3} | {}",
            k, f.queries, f.mrr10, f.recall5, b.mrr10, b.recall5, p.mrr10, p.recall5, c
        ));
    }
    out("(MRR@10 / recall@5: cascade = what recall returns; bm25 = the bm25 rung's matches alone; plain = a plain FTS5 bm25 baseline; cos = pure cosine of the note's text)");
    Ok(())
}
