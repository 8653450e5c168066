//! Maintenance: re-embed notes whose vector is missing or of another model, and report on the
//! health of the corpus.
//!
//! Re-embedding reads a batch, embeds it without holding the database lock, and writes it back
//! in one transaction that only touches notes whose text did not change meanwhile; the vector
//! index learns every vector written. A failed batch stops the run with an error that says how
//! far it got: distill never reports success when re-embedding failed.

use std::collections::{BTreeMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use skillmem_embed::{dot, embed_notes_with_pieces};
use skillmem_error::{Error, Result};
use skillmem_skills::progress::Progress;
use skillmem_store::memory::store::{self, Stale};

/// Notes embedded per batch when the caller does not say.
pub const DEFAULT_BATCH: usize = 64;
/// At most this many notes of one skill are compared pairwise for duplicates.
pub const MAX_PAIRWISE: usize = 1_500;
/// At most this many duplicate pairs are reported.
pub const MAX_PAIRS: usize = 100;

/// Notes re-embedded per batch in the background.
pub const BACKGROUND_BATCH: usize = 32;

/// Notes given their pieces for token matching per batch ([`Engine::store_match_pieces`]):
/// tokenizing a note is a few microseconds, where embedding it with a model is milliseconds;
/// a batch holds the connection a few milliseconds.
pub const MATCH_BATCH: usize = 256;

/// How a background run goes easy on the host: a pause between batches, and a flag that
/// stops it (set at shutdown).
#[derive(Debug, Default, Clone)]
pub struct Pace {
    pub pause: std::time::Duration,
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Two notes of one skill whose vectors are nearly the same.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicatePair {
    pub skill: String,
    pub a: i64,
    pub b: i64,
    pub similarity: f32,
}

/// The health of the notes visible from a project.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorpusReport {
    pub project_id: String,
    pub notes: i64,
    pub by_skill: BTreeMap<String, i64>,
    pub by_scope: BTreeMap<String, i64>,
    pub by_source: BTreeMap<String, i64>,
    pub by_kind: BTreeMap<String, i64>,
    pub pinned: i64,
    pub never_recalled: i64,
    /// Notes written against another version of their skill.
    pub older_version: i64,
    pub duplicates: Vec<DuplicatePair>,
    pub duplicate_threshold: f32,
    /// Notes without a vector of the current model.
    pub stale_vectors: i64,
    pub embedding_model: Option<String>,
    pub embedding_dim: Option<usize>,
    /// Conflicting pairs left unresolved (both notes current): replace or retire the older.
    #[serde(default)]
    pub conflicts: Vec<ConflictPair>,
    /// Notes whose lesson or intent holds a secret (`skillmem doctor --fix` redacts them).
    #[serde(default)]
    pub secrets: Vec<SecretNote>,
    pub warnings: Vec<String>,
}

/// A conflicting pair: `newer` reads as a new version of `older` (see `memory::sameness`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConflictPair {
    pub skill: String,
    pub older: i64,
    pub newer: i64,
}

/// A note that holds a secret, and what the secret looks like.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretNote {
    pub id: i64,
    pub skill: String,
    /// What was found (e.g. "a GitHub token"), each kind once.
    pub what: Vec<String>,
}

/// What `distill` did: notes re-embedded, and the report after it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Distilled {
    pub reembedded: usize,
    /// Notes retired now because they were shown in `memory.retireUnusedAfter` sessions and
    /// never used (restorable).
    #[serde(default)]
    pub retired_unused: Vec<super::calls::Decayed>,
    pub report: CorpusReport,
}

/// A re-embedding run's progress as the doors report it.
fn progress_of(done: usize, total: usize) -> Progress {
    let percent = (done * 100).checked_div(total).unwrap_or(100) as u32;
    Progress { message: format!("{done}/{total} notes"), percent: Some(percent) }
}

impl Engine {
    /// `skillmem/distill`: re-embeds stale notes of the whole data directory in batches,
    /// calling `progress` after each, then reports on the notes visible from this project.
    pub fn distill(&self, batch_size: Option<usize>, progress: &mut dyn FnMut(Progress)) -> Result<Distilled> {
        let batch = batch_size.unwrap_or(DEFAULT_BATCH).clamp(1, 10_000);
        let mut warnings = vec![];
        let reembedded = match self.embedder() {
            None => {
                warnings.push(
                    "embedding is off (embedding.provider = \"off\"): nothing was re-embedded; notes are recalled by their words only"
                        .to_string(),
                );
                0
            }
            Some(e) => {
                let has_pieces = e.has_pieces();
                let mut n = self.reembed(batch, Stale::Any, &Pace::default(), progress)?;
                if has_pieces {
                    n += self.reembed(batch, Stale::Pieceless, &Pace::default(), progress)?;
                }
                self.store_match_pieces(&Pace::default())?;
                n
            }
        };
        let retired_unused = self.decay(None)?;
        let mut report = self.corpus_report()?;
        report.warnings.extend(warnings);
        Ok(Distilled { reembedded, retired_unused, report })
    }

    /// Re-embeds, in the background after a start, the notes whose vector was made by another
    /// model (a changed `embedding` configuration, or a new default embedder): batches of
    /// [`BACKGROUND_BATCH`] with `pace.pause` between them, until done or `pace.stop` is set.
    /// Until a note is re-embedded it is found by its words (the bm25 rung): the vector index
    /// only holds vectors of the current model. Notes without any vector (stored while the
    /// embedder failed, or with embedding off) wait for `distill`, as before.
    pub fn reembed_other_models(&self, pace: &Pace, progress: &mut dyn FnMut(Progress)) -> Result<usize> {
        let Some(has_pieces) = self.embedder().map(|e| e.has_pieces()) else { return Ok(0) };
        let mut n = self.reembed(BACKGROUND_BATCH, Stale::OtherModel, pace, progress)?;
        if has_pieces {
            // Notes written before the model's pieces were kept, or by another door: recall
            // ranks a skill by token matching once all the notes it finds have them.
            n += self.reembed(BACKGROUND_BATCH, Stale::Pieceless, pace, progress)?;
        }
        Ok(n)
    }

    /// How many current notes [`Engine::store_match_pieces`] would give their pieces.
    pub fn unmatched_count(&self) -> Result<usize> {
        match &self.embedding.tokens {
            Some(t) if t.stores() => store::count_unmatched(&self.conn_for_recall()),
            _ => Ok(0),
        }
    }

    /// Stores the static table's pieces for token matching with the current notes that have
    /// none (written before they were stored, by an import or a team pull, or re-embedded):
    /// batches of [`MATCH_BATCH`] with `pace.pause` between them, until done or `pace.stop`
    /// is set. Until then a recall tokenizes such a note's text. Nothing when the static
    /// table is not the embedder (token matching then does not apply).
    pub fn store_match_pieces(&self, pace: &Pace) -> Result<usize> {
        let Some(tokens) = self.embedding.tokens.clone().filter(|t| t.stores()) else { return Ok(0) };
        let (mut done, mut after) = (0, 0i64);
        loop {
            if pace.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                break;
            }
            if done > 0 && !pace.pause.is_zero() {
                std::thread::sleep(pace.pause);
            }
            let rows = store::unmatched_batch(&self.conn(), after, MATCH_BATCH)?;
            let Some(last) = rows.last() else { break };
            after = last.0;
            let blobs: Vec<Option<Vec<u8>>> =
                rows.iter().map(|(_, i, d)| tokens.stored(&skillmem_embed::note_text(i, d))).collect();
            let with: Vec<(i64, &str, &str, &[u8])> = rows
                .iter()
                .zip(&blobs)
                .filter_map(|((id, i, d), b)| Some((*id, i.as_str(), d.as_str(), b.as_deref()?)))
                .collect();
            if with.is_empty() {
                break;
            }
            // Derived from the text: the catalog stays in step (a reload per batch held a
            // recall of a large store a tenth of a second).
            let ids: Vec<i64> = with.iter().map(|r| r.0).collect();
            done += self.store.catalog.write_derived(&mut self.conn(), |c| store::set_match_pieces(c, &with), &ids)?;
        }
        if done > 0 {
            tracing::info!(notes = done, "stored the pieces token matching reads");
        }
        Ok(done)
    }

    /// How many notes [`Engine::reembed_other_models`] would re-embed. The server asks after
    /// every request: the notes without the model's pieces (a scan of the model's notes) are
    /// counted once, and again after an import or a team sync stored notes without them.
    pub fn other_model_count(&self) -> Result<usize> {
        let Some(e) = self.embedder() else { return Ok(0) };
        // Reads no recall count: the pending ones stay batched (see `conn_for_recall`).
        let conn = self.conn_for_recall();
        // Nothing changed since a count found none (a recall changes no note): none now.
        let generation = self.store.catalog.generation(&conn)?;
        if self.embedding.none_to_reembed(generation, e.has_pieces()) {
            return Ok(0);
        }
        let mut n = store::count_stale(&conn, Stale::OtherModel, e.model_id(), e.dim())?;
        if e.has_pieces() && self.embedding.count_pieces() {
            n += store::count_stale(&conn, Stale::Pieceless, e.model_id(), e.dim())?;
        }

        self.embedding.counted(generation, n);
        Ok(n)
    }

    /// Notes were stored without the model's pieces: the next [`Engine::other_model_count`]
    /// counts them.
    pub(super) fn pieces_missing(&self) {
        self.embedding.pieces_missing();
    }

    fn reembed(&self, batch: usize, which: Stale, pace: &Pace, progress: &mut dyn FnMut(Progress)) -> Result<usize> {
        let Some(embedder) = self.embedder().cloned() else { return Ok(0) };
        let model = embedder.model_id().to_string();
        let dim = embedder.dim();
        let total = store::count_stale(&self.conn(), which, &model, dim)?;
        progress(progress_of(0, total));
        let mut done = 0;
        let mut last_id = 0i64;
        loop {
            if pace.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                break;
            }
            if done > 0 && !pace.pause.is_zero() {
                std::thread::sleep(pace.pause);
            }
            let rows = store::stale_batch(&self.conn(), which, &model, dim, last_id, batch)?;
            let Some(last) = rows.last() else { break };
            last_id = last.0;
            let notes: Vec<(&str, &str)> = rows.iter().map(|(_, i, d)| (i.as_str(), d.as_str())).collect();
            let fail = |why: String| {
                Error::storage(format!(
                    "re-embedding failed after {done} of {total} notes: {why}; the other notes keep their old vectors (still found by their words); fix the embedder and run distill again"
                ))
            };
            let (vectors, pieces): (Vec<Vec<f32>>, Vec<Option<skillmem_embed::Pieces>>) =
                embed_notes_with_pieces(embedder.as_ref(), &notes)
                    .map_err(|e| fail(e.to_string()))?
                    .into_iter()
                    .unzip();
            if vectors.len() != rows.len() || vectors.iter().any(|v| v.len() != dim) {
                return Err(fail(format!(
                    "the embedder returned {} vectors for {} notes, or vectors of the wrong dimension (expected {dim})",
                    vectors.len(),
                    rows.len()
                )));
            }
            // A note edited meanwhile got its vector from the edit, and is left alone.
            let written_at = store::set_vectors(&mut self.conn(), &model, &rows, &vectors)?;
            let with_pieces: Vec<(i64, &str, &str, &skillmem_embed::Pieces)> = written_at
                .iter()
                .filter_map(|&i| pieces[i].as_ref().map(|p| (rows[i].0, rows[i].1.as_str(), rows[i].2.as_str(), p)))
                .collect();
            store::set_pieces(&mut self.conn(), &model, &with_pieces)?;
            let written: Vec<(i64, &Vec<f32>)> = written_at.into_iter().map(|i| (rows[i].0, &vectors[i])).collect();
            if let Some(ix) = self.vector_index().filter(|ix| ix.model_id() == model) {
                for (id, v) in &written {
                    ix.insert(*id, v);
                }
            }
            done += written.len();
            progress(progress_of(done, total));
        }
        tracing::info!(reembedded = done, model = %model, "distill: re-embedded notes");
        Ok(done)
    }

    /// Notes that hold a secret: those visible from this project, or every project's
    /// (`all_projects`, for `doctor`).
    pub fn notes_with_secrets(&self, all_projects: bool) -> Result<Vec<SecretNote>> {
        let f = super::NoteFilter { all_projects, ..Default::default() };
        let page = self.all_notes(&f)?;
        Ok(page
            .notes
            .into_iter()
            .filter_map(|n| {
                let mut what: Vec<String> = vec![];
                for text in [&n.delta, &n.intent] {
                    for w in skillmem_text::redact::redact(text).1 {
                        if !what.iter().any(|x| x == w) {
                            what.push(w.to_string());
                        }
                    }
                }
                (!what.is_empty()).then_some(SecretNote { id: n.id, skill: n.skill, what })
            })
            .collect())
    }

    /// Redacts every note that holds a secret in its lesson (`doctor --fix`): the ids redacted,
    /// and the ids left for a person (nothing but the secret would be left: edit or forget them).
    pub fn redact_notes(&self) -> Result<(Vec<i64>, Vec<i64>)> {
        let (mut done, mut left) = (vec![], vec![]);
        for s in self.notes_with_secrets(true)? {
            let Some(note) = store::get(&self.conn(), s.id)? else { continue };
            match self.edit(s.id, &note.delta) {
                Ok(()) => done.push(s.id),
                Err(Error::InvalidParams(_)) => left.push(s.id),
                Err(e) => return Err(e),
            }
        }
        Ok((done, left))
    }

    /// The health of the notes visible from this project.
    pub fn corpus_report(&self) -> Result<CorpusReport> {
        let project = self.project_id().to_string();
        let model = self.embedder().map(|e| e.model_id().to_string());
        let dim = self.embedder().map(|e| e.dim());
        let threshold = self.config().memory.dedup_threshold;
        let mut r = CorpusReport {
            project_id: project.clone(),
            duplicate_threshold: threshold,
            embedding_model: model.clone(),
            embedding_dim: dim,
            ..Default::default()
        };
        let mut per_skill_hashes: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        store::scan_visible(&self.conn(), &project, model.as_deref(), &mut |row| {
            r.notes += 1;
            *r.by_skill.entry(row.skill.clone()).or_default() += 1;
            *r.by_scope.entry(row.scope).or_default() += 1;
            *r.by_source.entry(row.source).or_default() += 1;
            *r.by_kind.entry(row.kind).or_default() += 1;
            r.pinned += row.pinned as i64;
            r.never_recalled += (row.recalls == 0) as i64;
            r.stale_vectors += row.stale as i64;
            per_skill_hashes.entry(row.skill).or_default().push(row.skill_hash);
        })?;
        for (skill, hashes) in &per_skill_hashes {
            if let Ok(ctx) = self.skill_context(skill, None) {
                if let Some(current) = ctx.version {
                    r.older_version +=
                        hashes.iter().filter(|h| h.as_deref().is_some_and(|h| h != current)).count() as i64;
                }
            }
        }
        r.secrets = self.notes_with_secrets(false)?;
        if let Some(model) = &model {
            r.duplicates =
                self.duplicate_pairs(&project, model, threshold, per_skill_hashes.keys(), &mut r.warnings)?;
        }
        r.conflicts = store::unresolved_conflicts(&self.conn(), &project)?
            .into_iter()
            .map(|(skill, older, newer)| ConflictPair { skill, older, newer })
            .collect();
        Ok(r)
    }

    pub(super) fn duplicate_pairs<'a>(
        &self,
        project: &str,
        model: &str,
        threshold: f32,
        skills: impl Iterator<Item = &'a String>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<DuplicatePair>> {
        let mut pairs = vec![];
        let conn = self.conn();
        let mut warned = HashSet::new();
        for skill in skills {
            let mut vs = store::skill_vectors(&conn, project, skill, model, MAX_PAIRWISE + 1)?;
            if vs.len() > MAX_PAIRWISE {
                vs.truncate(MAX_PAIRWISE);
                if warned.insert(skill.clone()) {
                    warnings.push(format!(
                        "skill {skill:?} has more than {MAX_PAIRWISE} notes; only the oldest {MAX_PAIRWISE} were compared for duplicates"
                    ));
                }
            }
            for i in 0..vs.len() {
                for j in i + 1..vs.len() {
                    if vs[i].1.len() != vs[j].1.len() {
                        continue;
                    }
                    let s = dot(&vs[i].1, &vs[j].1);
                    if s >= threshold {
                        pairs.push(DuplicatePair { skill: skill.clone(), a: vs[i].0, b: vs[j].0, similarity: s });
                    }
                }
            }
        }
        pairs.sort_by(|x, y| y.similarity.total_cmp(&x.similarity).then(x.a.cmp(&y.a)).then(x.b.cmp(&y.b)));
        if pairs.len() > MAX_PAIRS {
            warnings.push(format!("{} duplicate pairs found; the {MAX_PAIRS} most similar are listed", pairs.len()));
            pairs.truncate(MAX_PAIRS);
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use skillmem_config::Config;
    use skillmem_embed::hash::HashEmbedder;
    use skillmem_embed::Embedder;
    use skillmem_store::memory::store;
    use skillmem_store::memory::NewNote;

    /// An embedder that fails after `ok_batches` batches.
    struct Flaky {
        inner: HashEmbedder,
        ok_batches: usize,
        calls: AtomicUsize,
    }

    impl Embedder for Flaky {
        fn model_id(&self) -> &str {
            self.inner.model_id()
        }
        fn dim(&self) -> usize {
            self.inner.dim()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            if self.calls.fetch_add(1, Ordering::SeqCst) >= self.ok_batches {
                return Err(Error::storage("the embedding endpoint is down"));
            }
            self.inner.embed(texts)
        }
    }

    fn engine_with(dir: &std::path::Path, e: Option<Arc<dyn Embedder>>) -> Engine {
        let conn = skillmem_store::db::open(dir).unwrap();
        let cfg = Config { data_dir: dir.to_path_buf(), project_id: Some("p".into()), ..Config::default() };
        Engine::with_embedder(conn, cfg, None, e).unwrap()
    }

    fn seed(e: &Engine, n: usize) {
        for i in 0..n {
            let new = NewNote::gotcha("jq", "", &format!("lesson number {i} about zebra{i}"));
            store::write(&mut e.conn(), "p", &new, None, 0.92, None).unwrap();
        }
    }

    #[test]
    fn reembeds_in_batches_with_progress_and_teaches_the_index() {
        let d = tempfile::tempdir().unwrap();
        seed(&engine_with(d.path(), None), 5);
        let e = engine_with(d.path(), Some(Arc::new(HashEmbedder::default())));
        let mut seen = vec![];
        let r = e.distill(Some(2), &mut |p| seen.push(p)).unwrap();
        assert_eq!(r.reembedded, 5);
        assert_eq!(r.report.stale_vectors, 0);
        assert_eq!(r.report.notes, 5);
        assert_eq!(r.report.never_recalled, 5);
        let steps: Vec<&str> = seen.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(steps, vec!["0/5 notes", "2/5 notes", "4/5 notes", "5/5 notes"]);
        let percents: Vec<Option<u32>> = seen.iter().map(|p| p.percent).collect();
        assert_eq!(percents, vec![Some(0), Some(40), Some(80), Some(100)]);
        assert_eq!(e.vector_index().unwrap().len(), 5);
        // A second run has nothing left to do.
        assert_eq!(e.distill(None, &mut |_| {}).unwrap().reembedded, 0);
    }

    #[test]
    fn a_failing_embedder_is_an_error_not_a_success() {
        let d = tempfile::tempdir().unwrap();
        seed(&engine_with(d.path(), None), 5);
        let flaky = Flaky { inner: HashEmbedder::default(), ok_batches: 1, calls: AtomicUsize::new(0) };
        let e = engine_with(d.path(), Some(Arc::new(flaky)));
        let err = e.distill(Some(2), &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("after 2 of 5 notes"), "{err}");
        assert!(err.contains("endpoint is down"), "{err}");
        let report = e.corpus_report().unwrap();
        assert_eq!(report.stale_vectors, 3);
    }

    #[test]
    fn off_reports_a_warning_and_counts() {
        let d = tempfile::tempdir().unwrap();
        let e = engine_with(d.path(), None);
        seed(&e, 2);
        let r = e.distill(None, &mut |_| {}).unwrap();
        assert_eq!(r.reembedded, 0);
        assert_eq!(r.report.notes, 2);
        assert!(r.report.warnings[0].contains("embedding is off"));
    }
}
