//! `cargo xtask bench recall`: `skillmem serve` as a host sees it: notes are loaded into a
//! data dir, the server (the release binary beside this one) is spawned, and `toolAfter`
//! round trips, spawn-to-first-recall, write throughput through the protocol and the
//! server's RSS are measured. A program that prints figures (never assertions).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::common::{ms, pct, process_cpu_s, rss_mb, Rng};
use crate::{out, FillMode, Global};
use skillmem::embed::{hash::HashEmbedder, Embedder};
use skillmem::memory::store::{self, Embedded, Imported};
use skillmem::memory::{Kind, NewNote, Scope, Source};

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "di", "fu", "go", "he", "ji", "ku", "la", "mo", "nu",
    "pe", "ri", "so", "tu", "ve", "wa", "xi", "yo", "zu", "bra", "cle", "dri", "fro", "gla", "plu", "str", "tha",
];

/// A vocabulary of pseudo-words and a Zipf-like sampler over it.
struct Words {
    words: Vec<String>,
}

impl Words {
    fn new(n: usize) -> Words {
        let mut r = Rng::new(99);
        let mut seen = std::collections::HashSet::new();
        let mut words = vec![];
        while words.len() < n {
            let k = 2 + r.below(3);
            let w: String = (0..k).map(|_| SYLLABLES[r.below(SYLLABLES.len())]).collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        Words { words }
    }
    fn pick(&self, r: &mut Rng) -> &str {
        // Zipf-like: the square of a uniform favours low ranks.
        let u = r.unit();
        &self.words[((u * u) * self.words.len() as f32) as usize % self.words.len()]
    }
    fn phrase(&self, r: &mut Rng, n: usize) -> String {
        (0..n).map(|_| self.pick(r)).collect::<Vec<_>>().join(" ")
    }
}

#[derive(Serialize)]
struct RecallFigures {
    notes: usize,
    skills: usize,
    index_build_s: f64,
    spawn_to_first_recall_ms: f64,
    first_recall_mode: String,
    reload_ready_ms: f64,
    tool_after_p50_ms: f64,
    tool_after_p95_ms: f64,
    tool_after_p99_ms: f64,
    tool_after_no_intent_p50_ms: f64,
    /// toolAfter [p50, p99] (ms) of the rounds on the first skill (90% of a protocol fill's
    /// notes), and of the rounds on the other skills.
    tool_after_largest_skill_ms: Option<[f64; 2]>,
    /// toolAfter [p50, p99, the server's CPU a round] (ms) of `--first-skill-rounds` rounds on
    /// the first skill alone.
    tool_after_first_skill_alone_ms: Option<[f64; 3]>,
    tool_after_other_skills_ms: Option<[f64; 2]>,
    /// Of the other skills' rounds: toolAfter [p50, p99] (ms) of each skill's first load since
    /// the spawn (its catalog read cold), and of the loads after it.
    tool_after_other_skills_first_ms: Option<[f64; 2]>,
    tool_after_other_skills_later_ms: Option<[f64; 2]>,
    /// The server's CPU (ms) over the random rounds, a round.
    rounds_cpu_ms: f64,
    modes: std::collections::BTreeMap<String, usize>,
    writes_per_s: f64,
    server_rss_mb: f64,
    server_peak_rss_mb: f64,
    /// The shutdown request (it ends the open session: its use judged), the server's CPU in
    /// it, and the server's peak RSS after it (MB).
    shutdown_ms: f64,
    shutdown_cpu_ms: f64,
    shutdown_peak_rss_mb: f64,
    /// How the store was filled, and (through the protocol) notes/s in each tenth of the fill.
    fill: FillMode,
    fill_per_s: Vec<f64>,
    /// Through the protocol: writes merged as duplicates, and the server's RSS (MB) at the
    /// end of the fill and its peak.
    fill_duplicates: usize,
    fill_rss_mb: f64,
    fill_peak_rss_mb: f64,
    /// Through the protocol: the fill's wall time over its notes.
    fill_ms_per_note: f64,
    /// The embedder's own times, measured right before the fill and right before the round
    /// trips.
    fill_embed: Option<EmbedTimes>,
    embed: Option<EmbedTimes>,
    /// With `--model`: each round trip and write against its own embedding, measured here
    /// right before it.
    paired: Option<Paired>,
}

/// Round trips and writes paired with their own embedding (see [`recall`]).
#[derive(Serialize)]
struct Paired {
    /// toolAfter minus the embedding of the same intent.
    tool_after_over_query_p50_ms: f64,
    tool_after_over_query_p95_ms: f64,
    tool_after_over_query_p99_ms: f64,
    write_p50_ms: f64,
    /// A write minus its note's embedding (two texts when it has a code span).
    write_over_note_p50_ms: f64,
    /// A write over its prose's embedding (one text).
    write_over_text_p50: f64,
    write_over_text_mean: f64,
}

/// Options of `bench recall`.
#[derive(Debug, clap::Args)]
pub struct RecallOpts {
    /// Note counts.
    #[arg(long, value_delimiter = ',', default_value = "1000,100000")]
    pub notes: Vec<usize>,
    /// Skill counts the notes are spread over.
    #[arg(long, value_delimiter = ',', default_value = "1,100")]
    pub skills: Vec<usize>,
    /// toolAfter round trips measured per setting.
    #[arg(long, default_value_t = 1000)]
    pub rounds: usize,
    /// Notes written through the protocol per setting.
    #[arg(long, default_value_t = 1000)]
    pub writes: usize,
    /// Keep the populated data dirs under this folder and reuse them on the next run
    /// (the written notes accumulate).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// With `--keep`: every run starts from the store as it was first kept (a copy,
    /// `data.pristine` beside it, is put back before the run), so that runs compare on the
    /// same store. Without it a kept store changes run after run: its notes and sessions
    /// accumulate, and notes shown in six runs and never used are retired.
    #[arg(long, requires = "keep")]
    pub pristine: bool,
    /// The embedding provider of the servers: static (default) or hash (`--model` sets
    /// the model provider).
    #[arg(long, default_value = "static")]
    pub provider: String,
    /// A sentence-embedding model folder (config.json, tokenizer.json,
    /// model.safetensors): the servers embed with it (`embedding.provider` "model"), and
    /// the bench times one text's embedding with the same model to compare (needs
    /// `cargo xtask bench --features local-model`).
    #[arg(long, value_name = "DIR", conflicts_with = "provider")]
    pub model: Option<PathBuf>,
    /// How the store is filled.
    #[arg(long, default_value = "sql")]
    pub fill: FillMode,
    /// After the rounds, this many more on the first skill alone (a protocol fill's
    /// 90%-of-the-notes skill), reported apart: the random rounds pick it about one time
    /// in `--skills`, too few for its p99.
    #[arg(long, default_value_t = 0)]
    pub first_skill_rounds: usize,
    /// A pause before each of the `--first-skill-rounds` (ms): a host's loads come seconds
    /// apart, while back-to-back rounds start each load while the work the one before left
    /// for after its answer still runs.
    #[arg(long, default_value_t = 0.0)]
    pub pause_ms: f64,
}

fn skill_name(i: usize) -> String {
    format!("bench-skill-{i:03}")
}

/// Loads `n` global notes over `skills` skills straight into the database (the fixture; the
/// protocol's write path is measured separately), with hash vectors.
fn populate(data: &Path, n: usize, skills: usize, words: &Words) -> Result<()> {
    let mut conn = skillmem::db::open(data)?;
    let e = HashEmbedder::default();
    let mut r = Rng::new(n as u64 + skills as u64);
    let now = skillmem::db::now_ms();
    // Through the store's own insert, in chunks (a transaction each) so that the fixture is
    // never held in memory whole.
    let mut start = 0;
    while start < n {
        let end = (start + 5000).min(n);
        let mut notes = Vec::with_capacity(end - start);
        let mut vectors = Vec::with_capacity(end - start);
        for i in start..end {
            let skill = skill_name(i % skills);
            let k = 3 + r.below(3);
            let intent = words.phrase(&mut r, k);
            let k = 10 + r.below(10);
            let delta = format!("{} {}", words.phrase(&mut r, k), i);
            vectors.push(skillmem::embed::embed_note(&e, &intent, &delta)?);
            let created = now - (r.below(90) as i64) * 86_400_000;
            let new = NewNote {
                skill,
                kind: Kind::Gotcha,
                intent,
                delta,
                tags: vec![],
                scope: Scope::Global,
                source: Source::Agent,
                session_id: None,
                skill_hash: None,
                origin: Default::default(),
                pending: false,
            };
            notes.push((new, created));
        }
        let imported: Vec<Imported<'_>> = notes
            .into_iter()
            .zip(&vectors)
            .map(|((new, created_at), v)| Imported {
                new,
                created_at,
                embedded: Some(Embedded { vector: v, model: e.model_id(), matched: None }),
            })
            .collect();
        store::import(&mut conn, "bench", &imported)?;
        start = end;
    }
    Ok(())
}

/// Fills an empty store with `n` notes through `skillmem/note`, 64 requests in flight, 90% to
/// the first skill (all of them with one skill), as a host or an import writes. Returns the
/// notes per second of each tenth of the fill: a write path that slows as the store grows
/// shows as falling figures.
fn fill_through_protocol(
    data: &Path,
    ws: &Path,
    n: usize,
    skills: usize,
    words: &Words,
    embedding: &Value,
) -> Result<Fill> {
    const IN_FLIGHT: usize = 64;
    let (mut s, _) = spawn(data, ws, false, embedding)?;
    let mut r = Rng::new(n as u64 * 7 + skills as u64);
    let mut pending = std::collections::VecDeque::new();
    let tenth = (n / 10).max(1);
    let mut rates = vec![];
    let mut t = Instant::now();
    let mut answered = 0;
    let mut duplicates = 0;
    let fill_start = Instant::now();
    let cpu_before = process_cpu_s(s.client.child.id());
    let wait_one = |s: &mut Server, pending: &mut std::collections::VecDeque<i64>, dups: &mut usize| -> Result<()> {
        let id = pending.pop_front().expect("a request in flight");
        let res = s.client.wait_for(id)?;
        if let Some(e) = res.get("error") {
            bail!("note failed: {e}");
        }
        if res["result"]["status"] == "duplicate" {
            *dups += 1;
        }
        Ok(())
    };
    for i in 0..n {
        let skill = if skills == 1 || r.below(10) < 9 { skill_name(0) } else { skill_name(1 + r.below(skills - 1)) };
        let (intent, delta) = fill_note(&mut r, words, i);
        let id = s.client.send_request(
            "skillmem/note",
            json!({ "skill": skill, "kind": "fix", "intent": intent, "delta": delta }),
        )?;
        pending.push_back(id);
        if pending.len() >= IN_FLIGHT {
            wait_one(&mut s, &mut pending, &mut duplicates)?;
            answered += 1;
            if answered % tenth == 0 {
                rates.push(tenth as f64 / t.elapsed().as_secs_f64().max(1e-9));
                t = Instant::now();
            }
        }
    }
    while !pending.is_empty() {
        wait_one(&mut s, &mut pending, &mut duplicates)?;
        answered += 1;
        if answered % tenth == 0 {
            rates.push(tenth as f64 / t.elapsed().as_secs_f64().max(1e-9));
            t = Instant::now();
        }
    }
    let secs = fill_start.elapsed().as_secs_f64();
    let (rss, peak) = rss_mb(Some(s.client.child.id()));
    let server_cpu_s = process_cpu_s(s.client.child.id()) - cpu_before;
    s.client.request("shutdown", Value::Null)?;
    s.client.notify("exit", Value::Null)?;
    let _ = s.client.child.wait();
    Ok(Fill { rates, duplicates, secs, server_cpu_s, rss_mb: rss, peak_rss_mb: peak, embed: None })
}

/// The intent and lesson of the `i`th note of a fill: a three-word intent, a twelve-word
/// lesson, and in one note of four a code span (a semantic embedder embeds those notes in two
/// views, [`skillmem::embed::embed_notes`]).
fn fill_note(r: &mut Rng, words: &Words, i: usize) -> (String, String) {
    let intent = words.phrase(r, 3);
    let mut delta = format!("{} lesson {i}", words.phrase(r, 12));
    if r.below(4) == 0 {
        delta.push_str(&format!(" with `--{}`", words.pick(r)));
    }
    (intent, delta)
}

/// The embedding options the servers are initialized with.
fn embedding_options(o: &RecallOpts) -> Value {
    match &o.model {
        Some(p) => json!({ "provider": "model", "path": p.display().to_string() }),
        None => json!({ "provider": o.provider }),
    }
}

/// How long the servers' embedder takes, measured in this process with the same embedder and
/// texts made like the bench's: one query (an intent), one text (a note's prose), and one note
/// as a write embeds it (two texts for a note with a code span). Medians and means in ms.
#[derive(Serialize, Clone, Copy, Default)]
struct EmbedTimes {
    query_p50_ms: f64,
    text_p50_ms: f64,
    text_mean_ms: f64,
    note_mean_ms: f64,
    /// One text's share of a batch of 16 (what batching writes together could reach).
    text_in_batch_ms: f64,
    /// Recall's second opinion with a model: the static table's vectors of 50 notes and of
    /// the query (median of 20 runs; 0 for the static and hash embedders).
    second_opinion_ms: f64,
}

/// The servers' embedder, loaded in this process too (none for `http` and `off`).
fn bench_embedder(o: &RecallOpts) -> Result<Option<std::sync::Arc<dyn Embedder>>> {
    use skillmem::config::EmbeddingConfig as C;
    let cfg = match (&o.model, o.provider.as_str()) {
        (Some(p), _) => C::Model { path: p.clone() },
        (None, "static") => C::Static,
        (None, "hash") => C::Hash,
        _ => return Ok(None),
    };
    let Some(e) = skillmem::engine::embedder::from_config(&cfg)? else { return Ok(None) };
    if o.model.is_some() && !e.model_id().starts_with("model:") {
        bail!(
            "--model {}: the model did not load (see the warning above; a build with --features local-model is needed)",
            o.model.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
        );
    }
    Ok(Some(e))
}

fn embed_times(o: &RecallOpts, e: &std::sync::Arc<dyn Embedder>, words: &Words) -> Result<EmbedTimes> {
    const N: usize = 60;
    let mut r = Rng::new(31);
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let t = Instant::now();
        f()?;
        Ok(ms(t.elapsed()))
    };
    // One untimed call first (allocations, lazy initialisation).
    e.embed_one("warm up")?;
    let mut query = vec![];
    let mut text = vec![];
    let mut note = vec![];
    for i in 0..N {
        let k = 2 + r.below(3);
        let intent = words.phrase(&mut r, k);
        query.push(time(&mut || Ok(e.embed_one(&intent).map(drop)?))?);
        let (intent, delta) = fill_note(&mut r, words, i);
        let prose = skillmem::embed::embed_text(e.as_ref(), &intent, &delta);
        text.push(time(&mut || Ok(e.embed_one(&prose).map(drop)?))?);
        note.push(time(&mut || Ok(skillmem::embed::embed_note(e.as_ref(), &intent, &delta).map(drop)?))?);
    }
    let mut r = Rng::new(37);
    let batch: Vec<String> = (0..N)
        .map(|i| {
            let (intent, delta) = fill_note(&mut r, words, i);
            skillmem::embed::embed_text(e.as_ref(), &intent, &delta)
        })
        .collect();
    let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
    let mut batched = 0.0;
    for chunk in refs.chunks(16) {
        batched += time(&mut || Ok(e.embed(chunk).map(drop)?))?;
    }
    let text_in_batch_ms = batched / N as f64;
    let mut second = vec![];
    if o.model.is_some() {
        let table = skillmem::embed::static_table::StaticEmbedder::builtin()?;
        let mut r = Rng::new(41);
        for _ in 0..20 {
            let notes: Vec<(String, String)> = (0..50).map(|i| fill_note(&mut r, words, i)).collect();
            let pairs: Vec<(&str, &str)> = notes.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let intent = words.phrase(&mut r, 3);
            second.push(time(&mut || {
                table.embed_one(&intent)?;
                skillmem::embed::embed_notes(table.as_ref(), &pairs)?;
                Ok(())
            })?);
        }
        second.sort_by(f64::total_cmp);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (text_mean_ms, note_mean_ms) = (mean(&text), mean(&note));
    query.sort_by(f64::total_cmp);
    text.sort_by(f64::total_cmp);
    Ok(EmbedTimes {
        query_p50_ms: pct(&query, 0.5),
        text_p50_ms: pct(&text, 0.5),
        text_mean_ms,
        note_mean_ms,
        text_in_batch_ms,
        second_opinion_ms: pct(&second, 0.5),
    })
}

/// What a fill through the protocol measured.
struct Fill {
    /// Notes/s of each tenth.
    rates: Vec<f64>,
    /// Writes answered `duplicate` (merged into an earlier note).
    duplicates: usize,
    secs: f64,
    /// The CPU time the server used over the fill (all its threads: the index's too), which
    /// the VM's other load moves far less than the wall-clock rate.
    server_cpu_s: f64,
    /// The server's resident size at the end of the fill, and its peak.
    rss_mb: f64,
    peak_rss_mb: f64,
    /// The embedder's times measured right before the fill.
    embed: Option<EmbedTimes>,
}

/// `--pristine`: the first time (or right after a fill), keeps a copy of `data` beside it,
/// `data.pristine`; every other time puts that copy back in place of `data`, so that the run
/// starts from the same store (in place: the workspace and its project stay the same).
fn restore_pristine(data: &Path, filled_now: bool) -> Result<()> {
    let saved = data.with_file_name("data.pristine");
    if filled_now || !saved.join(".populated").exists() {
        let _ = std::fs::remove_dir_all(&saved);
        copy_dir(data, &saved)?;
    } else {
        std::fs::remove_dir_all(data)?;
        copy_dir(&saved, data)?;
    }
    Ok(())
}

/// Copies the folder `from` to `to` (made), files and folders.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

fn workspace(root: &Path, skills: usize) -> Result<PathBuf> {
    let ws = root.join("ws");
    for i in 0..skills {
        let name = skill_name(i);
        let d = ws.join(".claude/skills").join(&name);
        std::fs::create_dir_all(&d)?;
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: bench\nskill-memory:\n  enabled: true\n---\n# {name}\n"),
        )?;
    }
    Ok(ws)
}

struct Server {
    client: skillmem::client::Client,
    /// The host's session for this server's loads: a name of its own, as a host gives each
    /// session (one name for every run made the kept store's one session gather every run's
    /// loads, and each shutdown judge them all).
    session: String,
}

fn spawn(data: &Path, ws: &Path, blocking: bool, embedding: &Value) -> Result<(Server, Duration)> {
    let exe = crate::server_exe()?;
    let home = data.parent().unwrap_or(data).join("home");
    std::fs::create_dir_all(&home)?;
    let data_s = data.display().to_string();
    let home_s = home.display().to_string();
    let mut envs = vec![("SKILLMEM_HOME", data_s.as_str()), ("HOME", home_s.as_str())];
    if blocking {
        envs.push(("SKILLMEM_INDEX_BLOCKING", "1"));
        envs.push(("SKILLMEM_WARM_BLOCKING", "1"));
    }
    let t = Instant::now();
    // SKILLMEM_BENCH_STDERR=1 shows the servers' logs (with SKILLMEM_LOG set).
    let quiet = std::env::var_os("SKILLMEM_BENCH_STDERR").is_none();
    let mut client = skillmem::client::Client::spawn(&exe, &envs, quiet)?;
    let r = client.initialize(ws, json!({ "embedding": embedding }))?;
    if r.get("result").is_none() {
        bail!("initialize failed: {r}");
    }
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
    let session = format!("bench-{}-{at}", std::process::id());
    Ok((Server { client, session }, t.elapsed()))
}

fn tool_after(s: &mut Server, ws: &Path, call: usize, skill: &str, intent: Option<&str>) -> Result<Value> {
    let mut args = json!({ "name": skill });
    if let Some(i) = intent {
        args["intent"] = json!(i);
    }
    let dir = ws.join(".claude/skills").join(skill);
    let r = s.client.request(
        "skillmem/toolAfter",
        json!({ "sessionId": s.session, "callId": format!("c{call}"), "tool": "skill", "args": args,
                "output": "", "metadata": { "dir": dir.display().to_string() } }),
    )?;
    if let Some(e) = r.get("error") {
        bail!("toolAfter failed: {e}");
    }
    Ok(r["result"].clone())
}

/// `cargo xtask bench recall`.
pub fn recall(g: &Global, o: RecallOpts) -> Result<()> {
    let words = Words::new(3000);
    let embedding = embedding_options(&o);
    // The embedder's own times are measured in this process right before the figures they
    // are compared with (the fill; the round trips and writes), at the same load: on a
    // shared machine a figure from another minute is not comparable.
    let embedder = bench_embedder(&o)?;
    let measure = |when: &str| -> Result<Option<EmbedTimes>> {
        let Some(e) = &embedder else { return Ok(None) };
        let t = Some(embed_times(&o, e, &words)?);
        if let (Some(t), false) = (&t, g.json) {
            out(&format!(
                "embedder {embedding} ({when}): one query {:.2} ms (p50), one note's text {:.2} ms (p50; mean {:.2}), one note as written (two texts with a code span) {:.2} ms (mean); a text in a batch of 16 {:.2} ms; recall's second opinion uncached (static table, 50 notes) {:.2} ms",
                t.query_p50_ms, t.text_p50_ms, t.text_mean_ms, t.note_mean_ms, t.text_in_batch_ms, t.second_opinion_ms
            ));
            let _ = std::io::stdout().flush();
        }
        Ok(t)
    };
    let mut all = vec![];
    for &n in &o.notes {
        for &skills in &o.skills {
            if skills > n {
                continue;
            }
            let tmp = tempfile::tempdir()?;
            let root = match &o.keep {
                Some(k) => k.join(format!("{n}-{skills}")),
                None => tmp.path().to_path_buf(),
            };
            let data = root.join("data");
            let fresh = !data.join(".populated").exists();
            if fresh {
                let _ = std::fs::remove_dir_all(&root);
            }
            std::fs::create_dir_all(&data)?;
            let ws = workspace(&root, skills)?;
            let mut fill_per_s = vec![];
            let mut fill_figures = None;
            if fresh {
                if o.fill == FillMode::Protocol {
                    let embed = measure("before the fill")?;
                    let f = fill_through_protocol(&data, &ws, n, skills, &words, &embedding)?;
                    let f = Fill { embed, ..f };
                    fill_per_s = f.rates.clone();
                    if !g.json {
                        let rates: Vec<String> = f.rates.iter().map(|x| format!("{x:.0}")).collect();
                        let per_note = 1000.0 * f.secs / n.max(1) as f64;
                        let vs = embed
                            .map(|t| format!(" ({:.2}× one text's embedding)", per_note / t.text_p50_ms.max(1e-9)))
                            .unwrap_or_default();
                        out(&format!(
                            "fill notes={n} skills={skills} through skillmem/note: notes/s per tenth {}; {:.0} notes/s over {:.1} s, {:.2} ms per note{vs}; server CPU {:.2} ms per note; {} duplicates; server RSS at the end {:.0} MB (peak {:.0} MB)",
                            rates.join(" "),
                            n as f64 / f.secs.max(1e-9),
                            f.secs,
                            per_note,
                            f.server_cpu_s * 1000.0 / n.max(1) as f64,
                            f.duplicates,
                            f.rss_mb,
                            f.peak_rss_mb
                        ));
                        let _ = std::io::stdout().flush();
                    }
                    fill_figures = Some(f);
                } else {
                    populate(&data, n, skills, &words)?;
                }
                std::fs::write(data.join(".populated"), b"")?;
            }
            if o.pristine && o.keep.is_some() {
                restore_pristine(&data, fresh)?;
            }
            // 1. Build and persist the index once (what a long-running server leaves behind).
            let (mut s, build) = spawn(&data, &ws, true, &embedding)?;
            tool_after(&mut s, &ws, 0, &skill_name(0), Some("warm up"))?;
            s.client.request("shutdown", Value::Null)?;
            s.client.notify("exit", Value::Null)?;
            let _ = s.client.child.wait();
            // 2. Spawn to first answered recall, with the persisted index loading behind it.
            let mut r = Rng::new(5);
            let t = Instant::now();
            let (mut s, _) = spawn(&data, &ws, false, &embedding)?;
            let intent = words.phrase(&mut r, 3);
            let first = tool_after(&mut s, &ws, 1, &skill_name(0), Some(&intent))?;
            let spawn_first = ms(t.elapsed());
            let first_mode = first["mode"].as_str().unwrap_or("").to_string();
            drop(s);
            // 3. A server whose index is ready: round trips, writes, RSS.
            let embed = measure("before the round trips")?;
            let t = Instant::now();
            let (mut s, _) = spawn(&data, &ws, true, &embedding)?;
            let reload_ready = ms(t.elapsed());
            let mut lat = vec![];
            let mut modes = std::collections::BTreeMap::new();
            // Each round trip is paired with the embedding of its own intent here, right
            // before it: the difference is what recall adds to the query's embedding, at the
            // same moment's load.
            let mut over = vec![];
            let (mut lat_big, mut lat_small) = (vec![], vec![]);
            let (mut small_first, mut small_later) = (vec![], vec![]);
            let mut loaded = std::collections::HashSet::new();
            let rounds_cpu_before = process_cpu_s(s.client.child.id());
            for i in 0..o.rounds {
                let skill = skill_name(r.below(skills));
                let k = 2 + r.below(3);
                let intent = words.phrase(&mut r, k);
                let q = match &embedder {
                    Some(e) if o.model.is_some() => {
                        let t = Instant::now();
                        e.embed_one(&intent)?;
                        Some(ms(t.elapsed()))
                    }
                    _ => None,
                };
                let t = Instant::now();
                let res = tool_after(&mut s, &ws, 10 + i, &skill, Some(&intent))?;
                lat.push(ms(t.elapsed()));
                // A protocol fill puts 90% of the notes in the first skill: the others are the
                // small skills of a big store.
                if skill == skill_name(0) { &mut lat_big } else { &mut lat_small }.push(ms(t.elapsed()));
                if skill != skill_name(0) {
                    if loaded.insert(skill.clone()) { &mut small_first } else { &mut small_later }
                        .push(ms(t.elapsed()));
                }
                if let Some(q) = q {
                    over.push(ms(t.elapsed()) - q);
                }
                *modes.entry(res["mode"].as_str().unwrap_or("").to_string()).or_insert(0) += 1;
            }
            let rounds_cpu_ms =
                1000.0 * (process_cpu_s(s.client.child.id()) - rounds_cpu_before) / o.rounds.max(1) as f64;
            lat.sort_by(f64::total_cmp);
            lat_big.sort_by(f64::total_cmp);
            lat_small.sort_by(f64::total_cmp);
            small_first.sort_by(f64::total_cmp);
            small_later.sort_by(f64::total_cmp);
            let mut plain = vec![];
            for i in 0..(o.rounds / 5).max(10) {
                let skill = skill_name(r.below(skills));
                let t = Instant::now();
                tool_after(&mut s, &ws, 100_000 + i, &skill, None)?;
                plain.push(ms(t.elapsed()));
            }
            plain.sort_by(f64::total_cmp);
            let mut first_only = vec![];
            let cpu_before = process_cpu_s(s.client.child.id());
            for i in 0..o.first_skill_rounds {
                let k = 2 + r.below(3);
                let intent = words.phrase(&mut r, k);
                if o.pause_ms > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(o.pause_ms / 1000.0));
                }
                let t = Instant::now();
                tool_after(&mut s, &ws, 200_000 + i, &skill_name(0), Some(&intent))?;
                first_only.push(ms(t.elapsed()));
            }
            first_only.sort_by(f64::total_cmp);
            // The server's CPU a round (user and system, all its threads): what a busy machine
            // adds to the wall time does not move it.
            let first_cpu_ms =
                1000.0 * (process_cpu_s(s.client.child.id()) - cpu_before) / o.first_skill_rounds.max(1) as f64;
            // Each write is paired too: its note embedded here as the server embeds it, and its
            // prose alone (one text), right before it.
            let mut write_ms = vec![];
            let mut write_over = vec![];
            let mut write_ratio = vec![];
            let mut busy = Duration::ZERO;
            for i in 0..o.writes {
                let skill = skill_name(r.below(skills));
                let (intent, delta) = fill_note(&mut r, &words, n + i);
                let paired = match &embedder {
                    Some(e) if o.model.is_some() => {
                        let t = Instant::now();
                        skillmem::embed::embed_note(e.as_ref(), &intent, &delta)?;
                        let note = ms(t.elapsed());
                        let t = Instant::now();
                        e.embed_one(&skillmem::embed::embed_text(e.as_ref(), &intent, &delta))?;
                        Some((note, ms(t.elapsed())))
                    }
                    _ => None,
                };
                let t = Instant::now();
                let res = s.client.request(
                    "skillmem/note",
                    json!({ "skill": skill, "kind": "fix", "intent": intent, "delta": delta }),
                )?;
                busy += t.elapsed();
                write_ms.push(ms(t.elapsed()));
                if let Some((note, text)) = paired {
                    write_over.push(ms(t.elapsed()) - note);
                    write_ratio.push(ms(t.elapsed()) / text.max(1e-9));
                }
                if let Some(e) = res.get("error") {
                    bail!("note failed: {e}");
                }
            }
            let writes_per_s = o.writes as f64 / busy.as_secs_f64().max(1e-9);
            for v in [&mut over, &mut write_ms, &mut write_over, &mut write_ratio] {
                v.sort_by(f64::total_cmp);
            }
            let (rss, peak) = rss_mb(Some(s.client.child.id()));
            // The shutdown ends the open session (its notes' use judged): its time and the
            // server's peak after it.
            let cpu_before = process_cpu_s(s.client.child.id());
            let t = Instant::now();
            s.client.request("shutdown", Value::Null)?;
            let shutdown_ms = ms(t.elapsed());
            let shutdown_cpu_ms = 1000.0 * (process_cpu_s(s.client.child.id()) - cpu_before);
            let (_, shutdown_peak) = rss_mb(Some(s.client.child.id()));
            s.client.notify("exit", Value::Null)?;
            let _ = s.client.child.wait();
            let f = RecallFigures {
                notes: n,
                skills,
                index_build_s: build.as_secs_f64(),
                spawn_to_first_recall_ms: spawn_first,
                first_recall_mode: first_mode,
                reload_ready_ms: reload_ready,
                tool_after_p50_ms: pct(&lat, 0.5),
                tool_after_p95_ms: pct(&lat, 0.95),
                tool_after_p99_ms: pct(&lat, 0.99),
                tool_after_no_intent_p50_ms: pct(&plain, 0.5),
                tool_after_largest_skill_ms: (!lat_big.is_empty()).then(|| [pct(&lat_big, 0.5), pct(&lat_big, 0.99)]),
                tool_after_other_skills_ms: (!lat_small.is_empty())
                    .then(|| [pct(&lat_small, 0.5), pct(&lat_small, 0.99)]),
                tool_after_other_skills_first_ms: (!small_first.is_empty())
                    .then(|| [pct(&small_first, 0.5), pct(&small_first, 0.99)]),
                tool_after_other_skills_later_ms: (!small_later.is_empty())
                    .then(|| [pct(&small_later, 0.5), pct(&small_later, 0.99)]),
                rounds_cpu_ms,
                tool_after_first_skill_alone_ms: (!first_only.is_empty())
                    .then(|| [pct(&first_only, 0.5), pct(&first_only, 0.99), first_cpu_ms]),
                modes,
                writes_per_s,
                server_rss_mb: rss,
                server_peak_rss_mb: peak,
                shutdown_ms,
                shutdown_cpu_ms,
                shutdown_peak_rss_mb: shutdown_peak,
                fill: o.fill,
                fill_per_s,
                fill_duplicates: fill_figures.as_ref().map_or(0, |f| f.duplicates),
                fill_rss_mb: fill_figures.as_ref().map_or(0.0, |f| f.rss_mb),
                fill_peak_rss_mb: fill_figures.as_ref().map_or(0.0, |f| f.peak_rss_mb),
                fill_ms_per_note: fill_figures.as_ref().map_or(0.0, |f| 1000.0 * f.secs / n.max(1) as f64),
                fill_embed: fill_figures.as_ref().and_then(|f| f.embed),
                embed,
                paired: (!over.is_empty()).then(|| Paired {
                    tool_after_over_query_p50_ms: pct(&over, 0.5),
                    tool_after_over_query_p95_ms: pct(&over, 0.95),
                    tool_after_over_query_p99_ms: pct(&over, 0.99),
                    write_p50_ms: pct(&write_ms, 0.5),
                    write_over_note_p50_ms: pct(&write_over, 0.5),
                    write_over_text_p50: pct(&write_ratio, 0.5),
                    write_over_text_mean: write_ratio.iter().sum::<f64>() / write_ratio.len().max(1) as f64,
                }),
            };
            if !g.json {
                out(&format!(
                    "recall notes={} skills={}: toolAfter p50 {:.2} ms p95 {:.2} ms p99 {:.2} ms (no intent p50 {:.2} ms; modes {:?}); spawn to first recall {:.0} ms ({}); ready after reload {:.0} ms; first build {:.1} s; writes {:.0}/s; server RSS {:.0} MB (peak {:.0} MB)",
                    f.notes, f.skills, f.tool_after_p50_ms, f.tool_after_p95_ms, f.tool_after_p99_ms, f.tool_after_no_intent_p50_ms, f.modes, f.spawn_to_first_recall_ms, f.first_recall_mode, f.reload_ready_ms, f.index_build_s, f.writes_per_s, f.server_rss_mb, f.server_peak_rss_mb
                ));
                if let (Some(b), Some(s)) = (f.tool_after_largest_skill_ms, f.tool_after_other_skills_ms) {
                    out(&format!(
                        "  by skill: the first skill toolAfter p50 {:.2} ms p99 {:.2} ms; the other skills p50 {:.2} ms p99 {:.2} ms; server CPU {:.3} ms a round",
                        b[0], b[1], s[0], s[1], f.rounds_cpu_ms
                    ));
                }
                out(&format!(
                    "  shutdown (the bench's open session judged) {:.0} ms, server CPU {:.0} ms; server peak RSS after it {:.0} MB",
                    f.shutdown_ms,
                    f.shutdown_cpu_ms,
                    f.shutdown_peak_rss_mb
                ));
                if let (Some(a), Some(b)) = (f.tool_after_other_skills_first_ms, f.tool_after_other_skills_later_ms) {
                    out(&format!(
                        "  the other skills: each one's first load p50 {:.2} ms p99 {:.2} ms; the loads after it p50 {:.2} ms p99 {:.2} ms",
                        a[0], a[1], b[0], b[1]
                    ));
                }
                if let Some(b) = f.tool_after_first_skill_alone_ms {
                    out(&format!(
                        "  the first skill alone, {} rounds: toolAfter p50 {:.2} ms p99 {:.2} ms; server CPU {:.3} ms a round",
                        o.first_skill_rounds, b[0], b[1], b[2]
                    ));
                }
                if let Some(p) = &f.paired {
                    out(&format!(
                        "  paired with their own embedding: toolAfter minus its intent's embedding p50 {:+.2} ms, p95 {:+.2} ms, p99 {:+.2} ms; a write p50 {:.2} ms, minus its note's embedding p50 {:+.2} ms, over its prose's embedding (one text) p50 {:.2}× (mean {:.2}×)",
                        p.tool_after_over_query_p50_ms,
                        p.tool_after_over_query_p95_ms,
                        p.tool_after_over_query_p99_ms,
                        p.write_p50_ms,
                        p.write_over_note_p50_ms,
                        p.write_over_text_p50,
                        p.write_over_text_mean
                    ));
                }
                if let (Some(t), true) = (&f.embed, o.writes > 0) {
                    out(&format!(
                        "  against the embedder: toolAfter p50 {:+.2} ms, p95 {:+.2} ms, p99 {:+.2} ms over one query's embedding ({:.2} ms); one write {:.2} ms, {:.2}× one text's embedding ({:.2} ms)",
                        f.tool_after_p50_ms - t.query_p50_ms,
                        f.tool_after_p95_ms - t.query_p50_ms,
                        f.tool_after_p99_ms - t.query_p50_ms,
                        t.query_p50_ms,
                        1000.0 / f.writes_per_s.max(1e-9),
                        1000.0 / f.writes_per_s.max(1e-9) / t.text_p50_ms.max(1e-9),
                        t.text_p50_ms
                    ));
                }
                let _ = std::io::stdout().flush();
            }
            all.push(f);
        }
    }
    if g.json {
        out(&serde_json::to_string_pretty(&all)?);
    }
    Ok(())
}
