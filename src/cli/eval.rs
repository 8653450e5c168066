//! `skillmem eval recall FILE`: recall quality on a labelled set.
//!
//! Ranks every query of the set four ways, printing MRR@10 and recall@5 overall and per query
//! style:
//!
//! - **cascade**: what a host is shown, by the host's own path: a child `skillmem serve` in a
//!   temporary data directory and workspace (each skill a folder with memory on and default
//!   settings), every note written with `skillmem/note` (so the merge rule, the conflicting
//!   pairs and the write path apply as they do for an agent), the set's ages and hits then set
//!   in the store between two runs of the server, and every query read with `skillmem/recall`:
//!   the notes of the block a load would append, in block order (pinned first, the newer note
//!   of a conflicting pair before the older), within the default budget;
//! - **bm25 rung**: the notes the bm25 rung alone matches, in its order ([`Engine::rank_in`]
//!   without the vector rung, in process over a store written the same way);
//! - **plain bm25**: a baseline outside skillmem's code, a plain FTS5 table of the notes
//!   (`intent`, `delta`, the store's `porter unicode61` tokenizer) queried with the intent's
//!   words OR-ed as written, in `bm25()` order, matches only;
//! - **pure cosine** (with an embedder): the skill's notes by the cosine between the intent's
//!   vector and the vector of the note's text as written (intent and lesson, code and all),
//!   nothing else: what recall must never fall below.
//!
//! A note the host path answered `duplicate` stands for every label it merged. With an
//! embedder it also prints the cascade's paired difference from pure cosine: the mean of the
//! per-query differences in reciprocal rank, its standard error, and how many queries each
//! wins, so that a change is judged against the set's noise. Given several sets, it prints
//! each, then a line per set and their mean (judge a change on sets it was not tuned on, not
//! on one). `--embedding static:TABLE` names no setting a host has: the cascade is then ranked
//! in process ([`Engine::rank_in`]), and the report says so.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{out, Global};
use serde_json::{json, Value};
use skillmem::config::Config;
use skillmem::db;
use skillmem::embed::Embedder;
use skillmem::engine::{Engine, SkillContext};
use skillmem::memory::{Kind, NewNote};

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

#[derive(Default, Clone)]
struct Score {
    /// Each query's reciprocal rank within the first 10 (0 when missed), in order.
    rr: Vec<f64>,
    recall5: f64,
}

/// Means of a [`Score`].
struct Mean {
    queries: usize,
    mrr10: f64,
    recall5: f64,
}

impl Score {
    fn add(&mut self, ranked: &[String], relevant: &[String]) {
        let pos = ranked.iter().take(10).position(|id| relevant.contains(id));
        self.rr.push(pos.map_or(0.0, |p| 1.0 / (p + 1) as f64));
        let found = ranked.iter().take(5).filter(|id| relevant.contains(id)).count();
        self.recall5 += found as f64 / relevant.len().max(1) as f64;
    }

    fn mean(&self) -> Mean {
        let n = self.rr.len().max(1) as f64;
        Mean { queries: self.rr.len(), mrr10: self.rr.iter().sum::<f64>() / n, recall5: self.recall5 / n }
    }
}

/// The paired difference of two rankings of the same queries (`a − b`, by reciprocal rank).
#[derive(Debug, PartialEq, serde::Serialize)]
struct Paired {
    /// Mean difference in MRR@10.
    diff: f64,
    /// Standard error of that mean (sample standard deviation / √n; 0 under two queries).
    se: f64,
    /// Queries `a` ranks better, and worse.
    better: usize,
    worse: usize,
}

fn paired(a: &[f64], b: &[f64]) -> Paired {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len() as f64;
    let diff = if d.is_empty() { 0.0 } else { d.iter().sum::<f64>() / n };
    let se = if d.len() < 2 { 0.0 } else { (d.iter().map(|x| (x - diff).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt() };
    let better = d.iter().filter(|x| **x > 1e-12).count();
    let worse = d.iter().filter(|x| **x < -1e-12).count();
    Paired { diff, se, better, worse }
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
    skillmem::engine::embedder::from_config(&cfg)?.context("the embedder is not available (see the log)")
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

/// One set's rankings, by query style (and `overall`).
struct Report {
    file: String,
    /// Ranked by the host's path: with how many writes answered `duplicate` (`None`: in
    /// process, for an embedder no host setting names).
    host_path: Option<usize>,
    notes: usize,
    queries: usize,
    full: BTreeMap<String, Score>,
    bm25: BTreeMap<String, Score>,
    plain: BTreeMap<String, Score>,
    /// Empty without an embedder.
    cosine: BTreeMap<String, Score>,
}

impl Report {
    /// The cascade against pure cosine over all queries; `None` without an embedder.
    fn vs_cosine(&self) -> Option<Paired> {
        Some(paired(&self.full.get("overall")?.rr, &self.cosine.get("overall")?.rr))
    }
}

/// Reads a recall set, refusing labels that point nowhere (they would count as misses).
fn read_set(file: &Path) -> Result<Set> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let set: Set = serde_json::from_str(&text).with_context(|| format!("{} is not a recall set", file.display()))?;
    let mut skill_of: HashMap<&str, &str> = HashMap::new();
    for skill in &set.skills {
        for n in &skill.notes {
            if skill_of.insert(&n.id, &skill.name).is_some() {
                anyhow::bail!("{}: note id {:?} is used twice; give each note its own id", file.display(), n.id);
            }
        }
    }
    for (i, q) in set.queries.iter().enumerate() {
        if !set.skills.iter().any(|s| s.name == q.skill) {
            anyhow::bail!(
                "{}: query {} ({:?}) names skill {:?}, which the set has no notes for",
                file.display(),
                i + 1,
                q.intent,
                q.skill
            );
        }
        if q.relevant.is_empty() {
            anyhow::bail!(
                "{}: query {} ({:?}) has no relevant notes; list at least one id",
                file.display(),
                i + 1,
                q.intent
            );
        }
        for id in &q.relevant {
            match skill_of.get(id.as_str()) {
                None => anyhow::bail!("{}: query {} ({:?}) lists relevant note {id:?}, which no skill of the set has", file.display(), i + 1, q.intent),
                Some(s) if *s != q.skill => anyhow::bail!(
                    "{}: query {} ({:?}) is for skill {:?} but lists note {id:?} of skill {s:?}; recall only ranks the query's skill",
                    file.display(),
                    i + 1,
                    q.intent,
                    q.skill
                ),
                _ => {}
            }
        }
    }
    Ok(set)
}

pub fn run(g: &Global, files: &[std::path::PathBuf], embedding: Option<&str>) -> Result<()> {
    // Every set is checked before anything is embedded.
    let sets: Vec<Set> = files.iter().map(|f| read_set(f)).collect::<Result<_>>()?;
    let embedder = match embedding {
        Some("off") => None,
        spec => Some(embedder_of(spec)?),
    };
    let model = embedder.as_ref().map(|e| e.model_id().to_string()).unwrap_or_else(|| "off".into());
    let mut reports = vec![];
    for (file, set) in files.iter().zip(&sets) {
        reports.push(evaluate(file, set, embedder.as_ref(), embedding)?);
    }
    if g.json {
        let mut sets: Vec<serde_json::Value> = reports.iter().map(|r| report_json(r, &model)).collect();
        if sets.len() == 1 {
            out(&serde_json::to_string_pretty(&sets.remove(0))?);
        } else {
            let mean = |f: &dyn Fn(&Report) -> Option<f64>| -> Option<f64> {
                let v: Option<Vec<f64>> = reports.iter().map(f).collect();
                v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
            };
            let cascade = mean(&|r| r.full.get("overall").map(|s| s.mean().mrr10));
            let cosine = mean(&|r| r.cosine.get("overall").map(|s| s.mean().mrr10));
            out(&serde_json::to_string_pretty(&serde_json::json!({
                "embedding": model,
                "sets": sets,
                "mean": { "mrr10": cascade, "pureCosineMrr10": cosine },
            }))?);
        }
        return Ok(());
    }
    for r in &reports {
        print_report(r, &model);
    }
    if reports.len() > 1 {
        out("");
        out(&format!(
            "{:<40} {:>7} | {:>9} {:>9} | {}",
            "set", "queries", "MRR@10", "cos MRR", "cascade − cos (± s.e.)"
        ));
        let (mut sum, mut sum_cos) = (0.0, 0.0);
        for r in &reports {
            let m = r.full["overall"].mean();
            let c = r.cosine.get("overall").map(|c| c.mean().mrr10);
            sum += m.mrr10;
            sum_cos += c.unwrap_or(0.0);
            let vs = r.vs_cosine().map(|p| format!("{:+.3} ± {:.3}", p.diff, p.se)).unwrap_or_else(|| "-".into());
            let c = c.map(|c| format!("{c:>9.3}")).unwrap_or_else(|| format!("{:>9}", "-"));
            out(&format!("{:<40} {:>7} | {:>9.3} {} | {}", r.file, m.queries, m.mrr10, c, vs));
        }
        let n = reports.len() as f64;
        let c = if embedder.is_some() { format!("{:>9.3}", sum_cos / n) } else { format!("{:>9}", "-") };
        out(&format!("{:<40} {:>7} | {:>9.3} {} |", format!("mean of {} sets", reports.len()), "", sum / n, c));
    }
    Ok(())
}

fn report_json(r: &Report, model: &str) -> serde_json::Value {
    let styles: Vec<serde_json::Value> = r
        .full
        .iter()
        .map(|(k, f)| {
            let (f, b, p) = (f.mean(), r.bm25[k].mean(), r.plain[k].mean());
            let c = r.cosine.get(k).map(|c| {
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
    serde_json::json!({
        "file": r.file,
        "embedding": model,
        "hostPath": r.host_path.is_some(),
        "duplicates": r.host_path,
        "styles": styles,
        "vsPureCosine": r.vs_cosine(),
    })
}

fn print_report(r: &Report, model: &str) {
    out(&format!("recall eval: {} ({} notes, {} queries), embedding {}", r.file, r.notes, r.queries, model));
    match r.host_path {
        Some(d) => out(&format!(
            "cascade by the host's path (skillmem/note, then skillmem/recall on a child skillmem serve); {d} writes answered duplicate"
        )),
        None => out("cascade ranked in process (the embedder is a table file, which no host setting names)"),
    }
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
    for (k, f) in &r.full {
        let (f, b, p) = (f.mean(), r.bm25[k].mean(), r.plain[k].mean());
        let c = r
            .cosine
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
    if let Some(p) = r.vs_cosine() {
        out(&format!(
            "cascade − pure cosine: {:+.3} MRR@10 ± {:.3} (standard error of the paired difference); {} queries ranked better, {} worse",
            p.diff, p.se, p.better, p.worse
        ));
    }
}

/// The `embedding` setting a host would give for `--embedding`; `None` for a table file, which
/// no host setting names.
fn embedding_setting(spec: Option<&str>) -> Result<Option<Value>> {
    Ok(Some(match spec.unwrap_or("static") {
        "static" => json!({ "provider": "static" }),
        "hash" => json!({ "provider": "hash" }),
        "off" => json!({ "provider": "off" }),
        s if s.starts_with("static:") => return Ok(None),
        s if s.starts_with("model:") => json!({ "provider": "model", "path": &s["model:".len()..] }),
        s if s.starts_with("http:") || s.starts_with("https:") => {
            let (url, model) = s.split_once('#').context("--embedding http: give URL#MODEL")?;
            json!({ "provider": "http", "url": url, "model": model })
        }
        s => anyhow::bail!("--embedding {s:?}: use static, static:TABLE, hash, model:PATH or http:URL#MODEL"),
    }))
}

/// A child `skillmem serve` over `data`, in `ws`, initialized with `embedding`, and with the
/// cap on unverified notes lifted (`memory.unverifiedShare` 1): a labelled set's notes stand
/// for lessons that earned their place, and what is measured is their ranking. With the
/// default cap every note of a fresh store is unverified and a block holds a quarter of them
/// (docs/benchmarks.md gives that figure too).
pub(super) fn host(tmp: &Path, ws: &Path, embedding: &Value) -> Result<skillmem::client::Client> {
    host_with(tmp, ws, json!({ "embedding": embedding, "memory": { "unverifiedShare": 1.0 } }))
}

/// A child `skillmem serve` over `tmp/data` (home `tmp/home`), in `ws`, initialized with
/// `options` (the host's `initializationOptions`).
pub(super) fn host_with(tmp: &Path, ws: &Path, options: Value) -> Result<skillmem::client::Client> {
    let exe = std::env::current_exe().context("cannot find the skillmem binary to serve the host path")?;
    let (home, data) = (tmp.join("home"), tmp.join("data"));
    let envs = [
        ("HOME", home.to_str().context("temporary folder is not UTF-8")?),
        ("SKILLMEM_HOME", data.to_str().context("temporary folder is not UTF-8")?),
        ("SKILLMEM_LOG", "warn"),
    ];
    let mut c = skillmem::client::Client::spawn(&exe, &envs, true).context("cannot start skillmem serve")?;
    let r = c.initialize(ws, options)?;
    anyhow::ensure!(r.get("result").is_some(), "skillmem serve refused to start: {r}");
    Ok(c)
}

/// The result of a request to the child server, or its error.
pub(super) fn answer(c: &mut skillmem::client::Client, method: &str, params: Value) -> Result<Value> {
    let r = c.request(method, params)?;
    match r.get("result") {
        Some(v) => Ok(v.clone()),
        None => anyhow::bail!("{method} failed: {}", r.get("error").unwrap_or(&r)),
    }
}

/// The cascade by the host's path (see the module docs): for each query, the labels of the
/// notes `skillmem/recall` returns, in block order, and how many writes were answered
/// `duplicate`.
fn host_rankings(
    set: &Set,
    embedding: &Value,
    embedder: Option<&Arc<dyn Embedder>>,
) -> Result<(Vec<Vec<String>>, usize)> {
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    for skill in &set.skills {
        let dir = ws.join(".claude/skills").join(&skill.name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {0}\ndescription: {0}\nskill-memory:\n  enabled: true\n---\n# {0}\n", skill.name),
        )?;
    }
    std::fs::create_dir_all(tmp.path().join("home"))?;
    let mut labels: HashMap<i64, Vec<String>> = HashMap::new();
    let mut facts: HashMap<i64, (i64, i64)> = HashMap::new();
    let mut duplicates = 0;
    let now = db::now_ms();
    let mut c = host(tmp.path(), &ws, embedding)?;
    for skill in &set.skills {
        for n in &skill.notes {
            let r = answer(
                &mut c,
                "skillmem/note",
                json!({ "skill": skill.name, "kind": n.kind, "intent": n.intent, "delta": n.delta }),
            )
            .with_context(|| format!("writing note {}", n.id))?;
            let id = r["id"].as_i64().context("skillmem/note answered no id")?;
            duplicates += usize::from(r["status"] == "duplicate");
            labels.entry(id).or_default().push(n.id.clone());
            let f = facts.entry(id).or_insert((n.hits, now - n.age_days * 86_400_000));
            f.0 = f.0.max(n.hits);
        }
    }
    c.shutdown()?;
    // The set's ages and hits, which no protocol method sets, written while no server runs.
    {
        let config = Config { data_dir: tmp.path().join("data"), ..Config::default() };
        let engine = Engine::with_embedder(db::open(&config.data_dir)?, config, None, embedder.cloned())?;
        for (id, (hits, created)) in &facts {
            engine.set_note_facts(*id, *hits, *created, false)?;
        }
    }
    let mut c = host(tmp.path(), &ws, embedding)?;
    let mut rankings = vec![];
    for q in &set.queries {
        let r = answer(&mut c, "skillmem/recall", json!({ "skill": q.skill, "intent": q.intent }))?;
        let ranked: Vec<String> = r["notes"]
            .as_array()
            .map(|a| a.iter().filter_map(|n| n["id"].as_i64()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|id| {
                let ls = labels.get(&id)?;
                Some(ls.iter().find(|l| q.relevant.contains(l)).unwrap_or(&ls[0]).clone())
            })
            .collect();
        rankings.push(ranked);
    }
    c.shutdown()?;
    Ok((rankings, duplicates))
}

/// Ranks every query of `set` four ways (see the module docs).
fn evaluate(file: &Path, set: &Set, embedder: Option<&Arc<dyn Embedder>>, embedding: Option<&str>) -> Result<Report> {
    let host_path = match embedding_setting(embedding)? {
        Some(setting) => Some(host_rankings(set, &setting, embedder)?),
        None => None,
    };
    let tmp = tempfile::tempdir()?;
    let embedder = embedder.cloned();
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
    // A note stands for every label written as it (a restatement is merged at any threshold).
    let mut ids: HashMap<i64, Vec<String>> = HashMap::new();
    let mut notes = 0usize;
    let mut plain_labels: HashMap<i64, String> = HashMap::new();
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
            let kind: Kind = n.kind.parse().with_context(|| format!("note {}", n.id))?;
            let new = NewNote { kind, ..NewNote::gotcha(&skill.name, &n.intent, &n.delta) };
            let id = engine.write_note_in(&ctx(&skill.name), new, None)?.id;
            engine.set_note_facts(id, n.hits, now - n.age_days * 86_400_000, false)?;
            ids.entry(id).or_default().push(n.id.clone());
            notes += 1;
            // The baseline keeps every note of the set as its own row.
            plain_db.execute(
                "INSERT INTO plain_fts (rowid, skill, intent, delta) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![notes, skill.name, n.intent, n.delta],
            )?;
            plain_labels.insert(notes as i64, n.id.clone());
        }
    }
    let mut full: BTreeMap<String, Score> = BTreeMap::new();
    let mut bm25: BTreeMap<String, Score> = BTreeMap::new();
    let mut plain: BTreeMap<String, Score> = BTreeMap::new();
    let mut cosine: BTreeMap<String, Score> = BTreeMap::new();
    let label = |ranked: &[i64], relevant: &[String]| -> Vec<String> {
        ranked
            .iter()
            .filter_map(|id| {
                let ls = ids.get(id)?;
                Some(ls.iter().find(|l| relevant.contains(l)).unwrap_or(&ls[0]).clone())
            })
            .collect()
    };
    for (i, q) in set.queries.iter().enumerate() {
        let rank = |use_vectors: bool, matched_only: bool| -> Result<Vec<String>> {
            let out = engine.rank_in(&ctx(&q.skill), Some(&q.intent), use_vectors && embedder.is_some())?;
            let kept: Vec<i64> = out.notes.iter().filter(|r| r.matched || !matched_only).map(|r| r.note.id).collect();
            Ok(label(&kept, &q.relevant))
        };
        let style = q.style.clone().unwrap_or_else(|| "all".into());
        for key in ["overall".to_string(), style] {
            let cascade = match &host_path {
                Some((rankings, _)) => rankings[i].clone(),
                None => rank(true, false)?,
            };
            full.entry(key.clone()).or_default().add(&cascade, &q.relevant);
            bm25.entry(key.clone()).or_default().add(&rank(false, true)?, &q.relevant);
            plain.entry(key.clone()).or_default().add(
                &plain_bm25(&plain_db, &q.skill, &q.intent)?
                    .iter()
                    .filter_map(|r| plain_labels.get(r).cloned())
                    .collect::<Vec<_>>(),
                &q.relevant,
            );
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
    Ok(Report {
        file: file.display().to_string(),
        host_path: host_path.map(|(_, duplicates)| duplicates),
        notes,
        queries: set.queries.len(),
        full,
        bm25,
        plain,
        cosine,
    })
}

// ---- skillmem eval historian ---------------------------------------------------------------

/// The verdict on one labelled line.
struct Judged {
    line: String,
    category: String,
    want: bool,
    /// `None` when promoted, else the rule and the reason.
    refused: Option<(String, String)>,
    /// Whether the line's chunk has text, so that grounding applied.
    grounded: bool,
}

/// Every line of the labelled historian set `file` (`bench/historian/`) judged by the filter,
/// with the built-in static table's cosine for restatements in other words.
fn judge_set(file: &Path) -> Result<Vec<Judged>> {
    use skillmem::historian::{filter, labelled::LabelledSet, observations};
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let set = LabelledSet::parse(&file.display().to_string(), &text, &|p| std::fs::read_to_string(dir.join(p)))
        .map_err(anyhow::Error::msg)?;
    let table = skillmem::embed::static_table::StaticEmbedder::builtin()?;
    let cosine = filter::cosine_by(table);
    let sim = filter::Similarity(&cosine);
    let mut out = vec![];
    for l in &set.lines {
        let refused = match observations::parse_line(&l.line) {
            Err(e) => Some(("format".to_string(), e)),
            Ok(o) => filter::check(&o.skill, &o.lesson, &set.context(&o.skill, &l.chunk, Some(sim)))
                .err()
                .map(|r| (r.category().to_string(), r.reason(&o.skill))),
        };
        out.push(Judged {
            line: l.line.clone(),
            category: l.category.clone(),
            want: l.want,
            refused,
            grounded: set.has_text(&l.chunk),
        });
    }
    Ok(out)
}

/// `skillmem eval historian FILE...`: precision and recall of promotion on labelled sets, a
/// confusion table by category, and every wrong verdict.
pub fn historian(g: &Global, files: &[std::path::PathBuf]) -> Result<()> {
    let mut reports = vec![];
    for f in files {
        let judged = judge_set(f)?;
        let promoted = judged.iter().filter(|j| j.refused.is_none()).count();
        let lessons = judged.iter().filter(|j| j.want).count();
        let right = judged.iter().filter(|j| j.want && j.refused.is_none()).count();
        let precision = if promoted == 0 { 1.0 } else { right as f64 / promoted as f64 };
        let recall = if lessons == 0 { 1.0 } else { right as f64 / lessons as f64 };
        // category → (n, promoted, refusals by rule)
        let mut table: BTreeMap<String, (usize, usize, BTreeMap<String, usize>)> = BTreeMap::new();
        for j in &judged {
            let e = table.entry(j.category.clone()).or_default();
            e.0 += 1;
            match &j.refused {
                None => e.1 += 1,
                Some((rule, _)) => *e.2.entry(rule.clone()).or_default() += 1,
            }
        }
        let wrong: Vec<&Judged> = judged.iter().filter(|j| j.want != j.refused.is_none()).collect();
        // Grounding's share: the same lines judged as if no chunk's text were known.
        let with_text = judged.iter().filter(|j| j.grounded).count();
        let by_grounding: Vec<&Judged> =
            judged.iter().filter(|j| j.refused.as_ref().is_some_and(|r| r.0 == "ungrounded")).collect();
        let promoted_without = promoted + by_grounding.len();
        let right_without = right + by_grounding.iter().filter(|j| j.want).count();
        let precision_without =
            if promoted_without == 0 { 1.0 } else { right_without as f64 / promoted_without as f64 };
        let recall_without = if lessons == 0 { 1.0 } else { right_without as f64 / lessons as f64 };
        if g.json {
            reports.push(serde_json::json!({
                "file": f.display().to_string(),
                "observations": judged.len(),
                "lessons": lessons,
                "promoted": promoted,
                "precision": precision,
                "recall": recall,
                "grounding": {
                    "observationsWithChunkText": with_text,
                    "skipped": judged.len() - with_text,
                    "refused": by_grounding.len(),
                    "refusedLessons": by_grounding.iter().filter(|j| j.want).count(),
                    "withoutGrounding": { "precision": precision_without, "recall": recall_without },
                },
                "byCategory": table.iter().map(|(c, (n, p, by))| serde_json::json!({
                    "category": c, "n": n, "promoted": p, "refusedBy": by,
                })).collect::<Vec<_>>(),
                "wrong": wrong.iter().map(|j| serde_json::json!({
                    "line": j.line, "category": j.category, "label": if j.want { "promote" } else { "reject" },
                    "reason": j.refused.as_ref().map(|r| r.1.clone()),
                })).collect::<Vec<_>>(),
            }));
            continue;
        }
        out(&format!(
            "{}: {} observations ({} lessons, {} junk)",
            f.display(),
            judged.len(),
            lessons,
            judged.len() - lessons
        ));
        out(&format!(
            "  promotion: precision {precision:.3} ({right} of {promoted} promoted are lessons), recall {recall:.3} ({right} of {lessons} lessons promoted)"
        ));
        if with_text > 0 {
            out(&format!(
                "  grounding: {} of {} observations had their chunk's text; it refused {} line(s) the other rules let through ({} of them lessons); without it precision {precision_without:.3}, recall {recall_without:.3}",
                with_text,
                judged.len(),
                by_grounding.len(),
                by_grounding.iter().filter(|j| j.want).count()
            ));
        }
        out(&format!("  {:<16} {:>4} {:>9} {:>8}  refused by", "category", "n", "promoted", "refused"));
        for (c, (n, p, by)) in &table {
            let by: Vec<String> = by.iter().map(|(r, k)| format!("{r} {k}")).collect();
            out(&format!("  {:<16} {:>4} {:>9} {:>8}  {}", c, n, p, n - p, by.join(", ")));
        }
        for j in &wrong {
            match &j.refused {
                None => out(&format!("  promoted, labelled reject ({}): {}", j.category, j.line)),
                Some((_, why)) => {
                    out(&format!("  refused, labelled promote ({}): {}\n      {why}", j.category, j.line))
                }
            }
        }
    }
    if g.json {
        out(&serde_json::to_string_pretty(&reports)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_differences_table() {
        type Case = (Vec<f64>, Vec<f64>, f64, f64, usize, usize);
        // (a, b, diff, se, better, worse)
        let cases: Vec<Case> = vec![
            (vec![], vec![], 0.0, 0.0, 0, 0),
            (vec![1.0], vec![0.5], 0.5, 0.0, 1, 0),
            (vec![1.0, 1.0], vec![1.0, 1.0], 0.0, 0.0, 0, 0),
            // Differences 0.5 and −0.5: mean 0, sample sd √0.5, se √0.5 / √2 = 0.5.
            (vec![1.0, 0.5], vec![0.5, 1.0], 0.0, 0.5, 1, 1),
            // Differences 1, 0, 0, 0: mean 0.25, sample sd 0.5, se 0.25.
            (vec![1.0, 0.2, 0.0, 1.0], vec![0.0, 0.2, 0.0, 1.0], 0.25, 0.25, 1, 0),
        ];
        for (a, b, diff, se, better, worse) in cases {
            let p = paired(&a, &b);
            assert!((p.diff - diff).abs() < 1e-12 && (p.se - se).abs() < 1e-12, "{a:?} {b:?}: {p:?}");
            assert_eq!((p.better, p.worse), (better, worse), "{a:?} {b:?}");
        }
    }
}
