//! The recall cascade: rank the notes of one skill visible from one project for an intent.
//!
//! With an intent, the vector rung (cosine over the notes whose vector is of the current
//! model) and the bm25 rung (FTS5) are combined, so that a note with no current vector still
//! surfaces through its words: with the static table, relevance is the cosine plus token
//! matching ([`TOKEN_WEIGHT`]); with another semantic embedder, the cosine plus a boost for
//! notes that contain most of the intent's words ([`COVERAGE_WEIGHT`]); with a lexical
//! (hash) embedder, bm25 ranks its matches and the vector rung's other notes follow them
//! ([`RRF_K`]). Relevance is blended with recency and the note's smoothed use rate
//! ([`Uses::rate`]: sessions that applied it over sessions shown it) by the skill's ranking
//! weights; how often a note was recalled or re-recorded (`hits`) does not rank it. Every
//! other visible note follows, ranked by recency × use (all of them without an intent, or
//! when nothing matches it), so that the block fills its budget: with few notes the whole
//! memory fits. Pinned notes always come first; ties are broken by uses, then the newer note
//! (the later `created_at`, then the higher id: a note written in the same millisecond as
//! another is still the newer one, so the order does not depend on how fast notes were
//! written), so the order is total and deterministic.

mod beside;
mod rungs;

pub use beside::SearchThread;

use std::sync::Arc;

use rusqlite::Connection;

use super::block::{self, Budget};
use super::catalog::Catalog;
use super::evidence::Uses;
use super::lexicon::LexiconCache;
use super::store::{self, Candidate, Candidates};
use super::{Note, RecallMode};
use crate::embed::Embedder;
use crate::error::Result;
use crate::index::VectorIndex;
use crate::skillmd::frontmatter::Ranking;

/// How many notes each rung contributes to the fusion.
pub const RUNG_DEPTH: usize = 50;
/// Relevance by rank for the lexical rungs: the note at rank `r` (from 0) scores
/// `1 / (RRF_K + r + 1)`. With a lexical embedder (hash) or none, bm25 ranks the notes it
/// matches and the vector rung only adds the notes bm25 did not match, after them: the hash
/// embedder sees the same words bm25 sees, without IDF or length normalisation, a weaker
/// estimate of the same evidence, so it must not reorder bm25's matches (fused by reciprocal
/// rank at weight 0.15 it did: on `recall-dev.json` MRR@10 0.506 against bm25's 0.513); it
/// still finds notes that share only word pieces with the intent. A semantic embedder's rung
/// is scored otherwise: see [`COVERAGE_WEIGHT`].
pub const RRF_K: f32 = 10.0;
/// With a semantic embedder the relevance of a note is its cosine to the intent plus
/// `COVERAGE_WEIGHT × c²`, where `c` is the share of the intent's content words (stemmed,
/// stop words left out) that the note contains; only notes bm25 matched are looked at. A
/// paraphrase shares one word in ten with its note (c² ≈ 0.01, no effect), a lexical intent
/// most of them (c = 1 adds 0.2, a large step on MiniLM's cosine scale): the words decide when
/// they match and stay out of the way when they do not. Rank fusion could not do both: on
/// `recall-dev.json` with all-MiniLM-L6-v2 (MRR@10), a vector-rung weight of 1 against bm25's
/// 1 gave 0.567, 4 → 0.687, 10 → 0.758, vectors alone 0.778: bm25's first place displaced the
/// right paraphrase. With this boost: 0.797 on the same vectors (0.818 with [`embed_text`]'s
/// prose; 0.832 with two views of a note and [`SECOND_WEIGHT`]); weights 0.1–0.3 give the
/// same figures. A note without a current vector still
/// surfaces through this term (below the vector matches). When the vector rung finds nothing
/// (embedder down), bm25 ranks alone.
///
/// [`embed_text`]: crate::embed::embed_text
pub const COVERAGE_WEIGHT: f32 = 0.2;
/// With a sentence model (or an embedding endpoint), the static table ranks too: a note's
/// relevance gains `SECOND_WEIGHT ×` the table's cosine between the intent and the note
/// ([`crate::embed::embed_notes`], computed for the notes a rung found, in microseconds
/// each). Two embedders that err differently: the model reads sentences, the table weighs
/// each word piece by what it means. Measured with all-MiniLM-L6-v2 (MRR@10, pure cosine of
/// the note's text in brackets): `recall-dev.json` 0.832 (0.778); sets made apart from it
/// `recall-own.json` 0.900 (0.892), `recall-set-b.json` 0.915 (0.902), `recall-set-c.json`
/// 0.799 (0.757); offline, weights 0.2 and 0.3 give nearly the same figures and 0.5 loses on
/// three sets (docs/research/local-model.md, "Two views of a note").
pub const SECOND_WEIGHT: f32 = 0.25;
/// When the static table is the embedder, a note's relevance is its cosine plus
/// `TOKEN_WEIGHT ×` its token match ([`crate::embed::tokens`]: each word piece of the intent
/// finds its closest piece in the note, weighted by IDF among the notes the rungs found),
/// instead of the coverage boost, which adds nothing beside it. The two are summed as they
/// come, both cosines. `skillmem eval recall` (MRR@10, the coverage-boosted cosine in
/// brackets): `recall-dev.json` 0.698 (0.680), and on sets made apart from it
/// `recall-own.json` 0.812 (0.781), `recall-set-b.json` 0.754 (0.718), `recall-set-c.json`
/// 0.761 (0.679), `recall-set-d.json` (written blind afterwards) 0.686 (0.653). Offline,
/// weight 0.5 gives 0.705 / 0.814 / 0.758 / 0.722 on the first four, 2 loses on three
/// (docs/research/token-matching.md).
pub const TOKEN_WEIGHT: f32 = 1.0;
/// The half-life-like scale of recency, in days.
pub const RECENCY_DAYS: f32 = 30.0;

/// What to rank.
pub struct Query<'a> {
    pub skill: &'a str,
    pub project: &'a str,
    pub intent: Option<&'a str>,
    pub ranking: Ranking,
    pub now_ms: i64,
}

/// A ranked note.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub note: Arc<Note>,
    /// The note's score within its tier: relevance blended by the skill's weights for notes a
    /// rung found, recency and use for the rest.
    pub score: f32,
    /// A rung (vector or bm25) found this note for the intent; these come first.
    pub matched: bool,
    /// Its use counts and trust.
    pub uses: Uses,
}

/// The ranking of one recall, best first, pinned notes first.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub mode: RecallMode,
    pub notes: Vec<Ranked>,
    /// The rung that found each matched note (`Vector` when the vector rung did, else `Fts`);
    /// a note not in it was ranked by recency and use (shown by the dashboard's preview).
    pub found_by: std::collections::HashMap<i64, RecallMode>,
    /// Ranked after `notes` but not loaded yet (see [`Prepared::load_first`]), in order.
    pub unloaded: Vec<Unloaded>,
    /// Notes of `unloaded` read already, to score them: [`Outcome::load_next`] takes them
    /// from here (two in three of a large skill's rest were read twice).
    read: std::collections::HashMap<i64, Arc<Note>>,
    /// [`Outcome::load_next`] loads a few notes at a time ([`HEAD_CHUNK`]).
    chunked: bool,
}

/// A note of the ranked head not loaded yet: what the ranking knows of it.
#[derive(Debug, Clone, Copy)]
pub struct Unloaded {
    pub id: i64,
    pub score: f32,
    pub matched: bool,
    pub uses: Uses,
    pub pinned: bool,
    pub created_at: i64,
    /// The least its intent and lesson count in a block ([`block::text_chars`], at most
    /// theirs): known for a large skill whose pieces are held, else 0.
    ///
    /// [`block::text_chars`]: super::block::text_chars
    pub text_chars: usize,
}

/// The notes of a large skill's head loaded at a time when its notes were not read for
/// scoring (its pieces are held: [`SkillPieces`]), after the first ones (as many as `budget`
/// could hold at the least each costs, and one more): a block shows a handful of them, and
/// each is read from the file; the rest load only while the block may take another.
///
/// [`SkillPieces`]: super::lexicon::SkillPieces
pub const HEAD_CHUNK: usize = 12;

impl Outcome {
    /// Loads notes left in [`Outcome::unloaded`] and appends them in their order (a note
    /// deleted meanwhile is left out): all of them, or, when the notes were not read for
    /// scoring, the next few (see [`HEAD_CHUNK`]); asked again while a block of `budget`
    /// may take another.
    pub fn load_next(&mut self, conn: &Connection, held: Option<&Catalog>, budget: &Budget) -> Result<()> {
        if self.unloaded.is_empty() {
            return Ok(());
        }
        let n = match (self.chunked, self.notes.is_empty()) {
            (false, _) => usize::MAX,
            (true, true) => first_chunk(&self.unloaded, budget),
            (true, false) => HEAD_CHUNK,
        };
        let rest = if self.unloaded.len() > n {
            let later = self.unloaded.split_off(n);
            std::mem::replace(&mut self.unloaded, later)
        } else {
            std::mem::take(&mut self.unloaded)
        };
        let mut by_id = std::mem::take(&mut self.read);
        let ids: Vec<i64> = rest.iter().map(|r| r.id).filter(|id| !by_id.contains_key(id)).collect();
        by_id.extend(load_notes(conn, held, &ids)?.into_iter().map(|n| (n.id, n)));
        self.notes.extend(rest.into_iter().filter_map(|u| {
            by_id.remove(&u.id).map(|note| Ranked { note, score: u.score, matched: u.matched, uses: u.uses })
        }));
        Ok(())
    }
}

/// How many of the head's first notes `budget` could hold at the least each costs
/// ([`block::note_tokens_at_least`]), and one more (at most [`HEAD_CHUNK`]): what a block is
/// likely to read before it is full.
fn first_chunk(head: &[Unloaded], budget: &Budget) -> usize {
    let (mut total, mut unverified, mut fit) = (0, 0, 0);
    for u in head {
        let least = block::note_tokens_at_least(u);
        let unproven = !u.pinned && !u.uses.trusted;
        if total + least > budget.max_tokens || (unproven && unverified + least > budget.max_unverified_tokens) {
            break;
        }
        total += least;
        unverified += if unproven { least } else { 0 };
        fit += 1;
    }
    (fit + 1).min(HEAD_CHUNK)
}

/// The rungs a ranking may use.
pub struct Rungs<'a> {
    pub embedder: Option<&'a dyn Embedder>,
    pub index: Option<&'a dyn VectorIndex>,
    /// A second, semantic embedder that scores the notes the rungs found (see
    /// [`SECOND_WEIGHT`]); none when `embedder` is the static table itself.
    pub second: Option<&'a dyn Embedder>,
    /// Token matching over the static table (see [`TOKEN_WEIGHT`]); applies when `embedder`
    /// is that table.
    pub tokens: Option<&'a crate::embed::tokens::TokenMatch>,
    /// The intent's contextual pieces by `embedder`, when it has them (a local model): the
    /// notes the rungs found are then ranked by token matching over their stored pieces
    /// ([`crate::embed::tokens::score_contextual`]), when every one of them has its pieces.
    pub query_pieces: Option<&'a crate::embed::Pieces>,
    /// Notes' pieces read before, by model and text ([`HeldPieces`]): a skill's notes come
    /// back recall after recall, and reading their pieces is half of token matching's time.
    pub held_pieces: Option<&'a HeldPieces>,
    /// A thread to run a large skill's vector search on while bm25 runs here, and `index`
    /// (the same index) shared with it; `None`: one after the other.
    pub beside: Option<Beside<'a>>,
    /// Off to measure the bm25 rung alone.
    pub use_vectors: bool,
    pub use_fts: bool,
    /// The intent's vector by `embedder`, when the caller embedded it before taking the
    /// database lock (see the engine's recall: a model takes milliseconds a
    /// text, and writes and other recalls wait for that lock); `None`: embedded here.
    pub query: Option<&'a [f32]>,
}

/// See [`Rungs::beside`].
pub struct Beside<'a> {
    pub thread: &'a SearchThread,
    pub index: Arc<dyn VectorIndex>,
    /// The store's file: the thread also reads the notes its search finds, through a
    /// connection of its own, while the recall's thread reads bm25's (`None`: the recall
    /// reads them all).
    pub db: Option<std::path::PathBuf>,
    /// Token matching ([`Rungs::tokens`], shared): the thread also matches the notes it found
    /// whose pieces are held ([`super::lexicon::SkillPieces`]), while the recall's thread
    /// matches bm25's (`None`: the recall matches them all).
    pub tokens: Option<Arc<crate::embed::tokens::TokenMatch>>,
}

/// Candidates gathered by the caller (from [`crate::memory::catalog`], say) instead of
/// SQLite.
pub struct Prepared<'a> {
    /// Every visible note of the skill, by id (shared: the catalog caches it).
    pub candidates: std::sync::Arc<Candidates>,
    /// The index is known to hold the vector of every candidate that has one of its model
    /// (skips the per-query check for notes written by another process).
    pub vectors_checked: bool,
    /// Rank fully but load and return only the first `keep` notes.
    pub keep: usize,
    /// Of those, load only the first `load_first` now; the others are left in
    /// [`Outcome::unloaded`] for [`Outcome::load_next`] (a block rarely shows all it could hold).
    pub load_first: usize,
    /// Notes in the whole store (0: unknown). Above [`FTS_PRUNE_MIN`] the bm25 rung checks
    /// visibility in memory instead of joining every match to the notes table.
    pub corpus: usize,
    /// Keeps the head of the candidates' recency × use order between calls.
    pub rest_cache: Option<&'a RestCache>,
    /// Reads notes from memory where it read them before ([`Catalog::load_notes`]).
    pub held: Option<&'a Catalog>,
    /// The bm25 rung in memory for skills of at most [`LEXICON_MAX`] visible notes that have
    /// their index built ([`LexiconCache::search`]); `None`: FTS5 for every skill.
    pub lexicons: Option<&'a LexiconCache>,
}

/// The current notes among `ids`, in order: from `held` when given, else from the store.
fn load_notes(conn: &Connection, held: Option<&Catalog>, ids: &[i64]) -> Result<Vec<Arc<Note>>> {
    match held {
        Some(c) => c.load_notes(conn, ids),
        None => Ok(store::load(conn, ids)?.into_iter().map(Arc::new).collect()),
    }
}

/// The head of a candidate list's order by recency × use (the order of the notes no rung
/// found), kept per skill and project while the list (the same `Arc`), the day and the
/// weights are the same: a recall over a skill with 100k notes then fills its block without
/// scoring every note again. The day is the UTC day [`recency`] counts by.
#[derive(Default)]
pub struct RestCache {
    map: std::sync::Mutex<std::collections::HashMap<(String, String), RestEntry>>,
}

struct RestEntry {
    candidates: std::sync::Arc<Candidates>,
    day: i64,
    weights: (u32, u32),
    /// Indices into `candidates`, best first; `complete` when it holds all of them.
    head: std::sync::Arc<Vec<u32>>,
    complete: bool,
}

impl RestCache {
    fn head(
        &self,
        q: &Query<'_>,
        cands: &std::sync::Arc<Candidates>,
        rest: Ranking,
        want: usize,
    ) -> (std::sync::Arc<Vec<u32>>, bool) {
        let key = (q.skill.to_string(), q.project.to_string());
        let day = q.now_ms.div_euclid(DAY_MS);
        let weights = (rest.recency.to_bits(), rest.used.to_bits());
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.get(&key) {
            let fresh = std::sync::Arc::ptr_eq(&e.candidates, cands) && e.day == day && e.weights == weights;
            if fresh && (e.complete || e.head.len() >= want) {
                return (e.head.clone(), e.complete);
            }
        }
        let (head, complete) = rest_head(cands, rest, q.now_ms, want);
        let head = std::sync::Arc::new(head);
        if map.len() >= 256 {
            map.clear();
        }
        map.insert(key, RestEntry { candidates: cands.clone(), day, weights, head: head.clone(), complete });
        (head, complete)
    }
}

/// The first `want` candidates (indices) in the order of notes no rung found: pinned first,
/// then recency × use by `rest`, then uses, recency, id. `true` when that is all of them.
fn rest_head(cands: &[Candidate], rest: Ranking, now_ms: i64, want: usize) -> (Vec<u32>, bool) {
    let mut scored: Vec<(f32, u32)> = cands
        .iter()
        .enumerate()
        .map(|(i, c)| (rest.recency * recency(c.created_at, now_ms) + rest.used * c.uses.rate(), i as u32))
        .collect();
    let order = |a: &(f32, u32), b: &(f32, u32)| {
        let (x, y) = (&cands[a.1 as usize], &cands[b.1 as usize]);
        y.pinned
            .cmp(&x.pinned)
            .then(b.0.total_cmp(&a.0))
            .then(y.uses.used.cmp(&x.uses.used))
            .then(y.created_at.cmp(&x.created_at))
            .then(y.id.cmp(&x.id))
    };
    let complete = want >= scored.len();
    if !complete {
        if want > 0 {
            scored.select_nth_unstable_by(want - 1, order);
        }
        scored.truncate(want);
    }
    scored.sort_by(order);
    (scored.into_iter().map(|(_, i)| i).collect(), complete)
}

/// Skills with more visible notes than this prune the bm25 rung's most common words
/// ([`store::fts_pruned`]) so that bm25 scores at most [`FTS_MAX_MATCHES`] notes.
pub const FTS_PRUNE_MIN: usize = 5000;
/// See [`FTS_PRUNE_MIN`].
pub const FTS_MAX_MATCHES: i64 = 500;

/// Candidate sets larger than this skip the vector rung while the index is still loading
/// its vectors (loading them one by one would cost more than the lexical rungs).
pub const WARMING_EXACT_MAX: usize = 2048;

/// Ranks the visible notes of `q.skill` for `q.intent`.
pub fn rank(conn: &Connection, q: &Query<'_>, rungs: &Rungs<'_>) -> Result<Outcome> {
    let candidates = store::candidates(conn, q.skill, q.project)?;
    rank_prepared(
        conn,
        q,
        rungs,
        Prepared {
            candidates: candidates.into(),
            vectors_checked: false,
            keep: usize::MAX,
            load_first: usize::MAX,
            corpus: 0,
            rest_cache: None,
            held: None,
            lexicons: None,
        },
    )
}

/// [`rank`] over candidates the caller gathered; same ranking.
pub fn rank_prepared(conn: &Connection, q: &Query<'_>, rungs: &Rungs<'_>, p: Prepared<'_>) -> Result<Outcome> {
    let t0 = std::time::Instant::now();
    let cands = std::sync::Arc::clone(&p.candidates);
    if cands.is_empty() {
        return Ok(Outcome {
            mode: RecallMode::None,
            notes: vec![],
            found_by: Default::default(),
            unloaded: vec![],
            read: Default::default(),
            chunked: false,
        });
    }
    let intent = q.intent.map(str::trim).filter(|s| !s.is_empty());
    let rungs::Found { rel, found_by, loaded, mode, held } = match intent {
        Some(intent) => rungs::find(conn, q, rungs, &p, intent, t0)?,
        None => rungs::Found::default(),
    };
    let t_rungs = t0.elapsed();
    let max_rel = rel.values().copied().fold(0.0f32, f32::max);
    // The notes no rung found (all of them without relevance) are ranked by recency and use
    // alone, after the ones a rung found: a must-not-skip note that shares no word with
    // today's intent still fills the room the block has.
    let rest = {
        let s = q.ranking.recency + q.ranking.used;
        if s > 0.0 {
            Ranking { relevance: 0.0, recency: q.ranking.recency / s, used: q.ranking.used / s }
        } else {
            Ranking { relevance: 0.0, recency: 0.5, used: 0.5 }
        }
    };
    // The notes a rung found, scored by relevance (found by id, not by looking every
    // candidate up).
    let mut found: Vec<i64> = rel.keys().copied().collect();
    found.sort_unstable();
    let mut scored: Vec<(Candidate, bool, f32)> = Vec::with_capacity(found.len() + p.keep.min(cands.len()));
    for id in &found {
        if let Some(i) = cands.index_of(*id) {
            let c = &cands[i];
            let rv = if max_rel > 0.0 { rel[id] / max_rel } else { 0.0 };
            let s = q.ranking.relevance * rv
                + q.ranking.recency * recency(c.created_at, q.now_ms)
                + q.ranking.used * c.uses.rate();
            scored.push((c.clone(), true, s));
        }
    }
    // Then the others, in their own order, as many as the head can hold: at most `keep` of
    // them can be in it. The pinned ones come first in that order, so all of them are kept.
    let want = p.keep.saturating_add(found.len());
    let (head, _) = match p.rest_cache {
        Some(cache) => cache.head(q, &cands, rest, want),
        None => {
            let (h, c) = rest_head(&cands, rest, q.now_ms, want);
            (std::sync::Arc::new(h), c)
        }
    };
    let mut others = 0;
    for &i in head.iter() {
        if others >= p.keep {
            break;
        }
        let c = &cands[i as usize];
        if found.binary_search(&c.id).is_ok() {
            continue;
        }
        let s = rest.recency * recency(c.created_at, q.now_ms) + rest.used * c.uses.rate();
        scored.push((c.clone(), false, s));
        others += 1;
    }
    let order = |a: &(Candidate, bool, f32), b: &(Candidate, bool, f32)| {
        b.0.pinned
            .cmp(&a.0.pinned)
            .then(b.1.cmp(&a.1))
            .then(b.2.total_cmp(&a.2))
            .then(b.0.uses.used.cmp(&a.0.uses.used))
            .then(b.0.created_at.cmp(&a.0.created_at))
            .then(b.0.id.cmp(&a.0.id))
    };
    if p.keep < scored.len() {
        // Ids are unique, so the order is total: selecting then sorting the head gives the
        // same head as sorting everything.
        if p.keep > 0 {
            scored.select_nth_unstable_by(p.keep - 1, order);
        }
        scored.truncate(p.keep);
    }
    scored.sort_by(order);
    let t_score = t0.elapsed();
    // The notes were not read for scoring (their pieces are held): the head loads a few at a
    // time ([`Outcome::load_next`]), each known to cost at least its text.
    let load_first = if held.is_some() { 0 } else { p.load_first };
    let unloaded: Vec<Unloaded> = if scored.len() > load_first {
        scored
            .drain(load_first..)
            .map(|(c, matched, score)| Unloaded {
                id: c.id,
                score,
                matched,
                uses: c.uses,
                pinned: c.pinned,
                created_at: c.created_at,
                text_chars: held.as_ref().and_then(|h| h.text_chars(c.id)).unwrap_or(0),
            })
            .collect()
    } else {
        vec![]
    };
    let ids: Vec<i64> = scored.iter().map(|(c, _, _)| c.id).filter(|id| !loaded.contains_key(id)).collect();
    let notes = load_notes(conn, p.held, &ids)?;
    tracing::trace!(
        "rank: rungs {:?}, score {:?}, load {:?} ({} notes; {} read for scoring)",
        t_rungs,
        t_score - t_rungs,
        t0.elapsed() - t_score,
        ids.len(),
        loaded.len()
    );
    // Joined by id: a note deleted since the candidates were gathered (by another process)
    // is not loaded, and must not shift the scores of the notes after it.
    let mut by_id = loaded;
    by_id.extend(notes.into_iter().map(|n| (n.id, n)));
    let notes = scored
        .into_iter()
        .filter_map(|(c, matched, score)| by_id.remove(&c.id).map(|note| Ranked { note, score, matched, uses: c.uses }))
        .collect();
    // What is left of the notes read for scoring that the rest of the head holds.
    let read = unloaded.iter().filter_map(|u| by_id.remove_entry(&u.id)).collect();
    Ok(Outcome { mode, notes, found_by, unloaded, read, chunked: held.is_some() })
}

/// Notes' pieces kept in memory by model and text (~20 KB a note with all-MiniLM-L6-v2; at
/// most [`PIECES_HELD`] notes). A note whose text changes gets another key, so old pieces are
/// never served for a new text; pieces not stored yet are not kept, so a later backfill is seen.
pub type HeldPieces = crate::embed::cache::ByText<std::sync::Arc<crate::embed::Pieces>>;

/// Notes whose pieces [`HeldPieces`] keeps (~20 MB at most with all-MiniLM-L6-v2).
pub const PIECES_HELD: usize = 1024;

/// The vector of a recall's intent; an embedder that fails gives an empty one (the lexical
/// rungs answer).
pub fn query_vector(e: &dyn Embedder, intent: &str) -> Vec<f32> {
    e.embed_one(intent.trim()).unwrap_or_else(|why| {
        tracing::warn!("{why}; recall uses the lexical rungs");
        vec![]
    })
}

/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// Recency in (0, 1]: 1 today, ½ after [`RECENCY_DAYS`]. Counted in UTC days (days between
/// the note's day and today's), so that the ranking moves only at midnight UTC, never between
/// two calls a moment apart.
pub fn recency(created_at: i64, now_ms: i64) -> f32 {
    let days = (now_ms.div_euclid(DAY_MS) - created_at.div_euclid(DAY_MS)).max(0) as f32;
    1.0 / (1.0 + days / RECENCY_DAYS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector rung alone, over `index` by `embedder`.
    fn vectors_only<'a>(embedder: &'a dyn Embedder, index: &'a dyn VectorIndex) -> Rungs<'a> {
        Rungs { use_vectors: true, use_fts: false, embedder: Some(embedder), index: Some(index), ..fts_only() }
    }

    /// The bm25 rung alone.
    fn fts_only() -> Rungs<'static> {
        Rungs {
            embedder: None,
            index: None,
            second: None,
            tokens: None,
            query_pieces: None,
            held_pieces: None,
            beside: None,
            use_vectors: false,
            use_fts: true,
            query: None,
        }
    }

    #[test]
    fn the_cached_head_ranks_like_the_full_ranking() {
        use crate::memory::{NewNote, Scope};
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let words = ["rebase", "conflict", "branch", "stash", "commit", "push", "tag", "merge"];
        for i in 0..60i64 {
            let delta = format!("note {i}: {} then {}", words[i as usize % 8], words[(i as usize * 3) % 8]);
            let scope = if i % 5 == 0 { Scope::Global } else { Scope::Project };
            let new = NewNote { scope, ..NewNote::gotcha("git", "", &delta) };
            let (id, _) = store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
            store::set_facts(&mut conn, id, 0, (i % 9) * 86_400_000, i % 17 == 3).unwrap();
            let e = crate::memory::evidence::Evidence { shown: 5, used: (i * 7) % 5, ..Default::default() };
            store::add_evidence(&mut conn, &[(id, e)]).unwrap();
        }
        let cache = RestCache::default();
        let rungs = fts_only();
        let ids = |o: &Outcome| o.notes.iter().map(|r| (r.note.id, r.matched)).collect::<Vec<_>>();
        for ranking in [Ranking::default(), Ranking { relevance: 0.5, recency: 0.4, used: 0.1 }] {
            for intent in [None, Some("rebase conflict"), Some("tag"), Some("nothing matches zzz")] {
                for now_day in [9, 40] {
                    let q = Query { skill: "git", project: "p", intent, ranking, now_ms: now_day * 86_400_000 + 5 };
                    let full = rank(&conn, &q, &rungs).unwrap();
                    assert_eq!(full.notes.len(), 60, "every visible note is ranked");
                    // One candidate list for every call, as the catalog shares it: the cache
                    // answers from the second call on (and recomputes for a longer head).
                    let cands: std::sync::Arc<Candidates> = store::candidates(&conn, "git", "p").unwrap().into();
                    for keep in [1, 5, 20, 59, 60, 100, 5] {
                        for _ in 0..2 {
                            let p = Prepared {
                                candidates: cands.clone(),
                                vectors_checked: false,
                                keep,
                                load_first: usize::MAX,
                                corpus: 0,
                                rest_cache: Some(&cache),
                                held: None,
                                lexicons: None,
                            };
                            let got = rank_prepared(&conn, &q, &rungs, p).unwrap();
                            let want: Vec<_> = ids(&full).into_iter().take(keep).collect();
                            assert_eq!(ids(&got), want, "{intent:?} keep {keep} day {now_day}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_note_deleted_mid_recall_takes_no_score_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let mut ids = vec![];
        for i in 0..4i64 {
            let new = crate::memory::NewNote::gotcha("git", "", &format!("lesson {i} about rebase"));
            let (id, _) = store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
            // Distinct uses: distinct scores, the most used first.
            let e = crate::memory::evidence::Evidence { shown: 10, used: 10 - i * 3, ..Default::default() };
            store::add_evidence(&mut conn, &[(id, e)]).unwrap();
            ids.push(id);
        }
        let rungs = fts_only();
        // The candidates as the catalog handed them out, before another process deletes one.
        let cands: std::sync::Arc<Candidates> = store::candidates(&conn, "git", "p").unwrap().into();
        let prepared = || Prepared {
            candidates: cands.clone(),
            vectors_checked: false,
            keep: usize::MAX,
            load_first: usize::MAX,
            corpus: 0,
            rest_cache: None,
            held: None,
            lexicons: None,
        };
        // Without an intent a note's score comes from the candidates' facts alone, so it must
        // not move when another note is gone.
        for _ in 0..2 {
            let q = Query { skill: "git", project: "p", intent: None, ranking: Ranking::default(), now_ms: 5 };
            let before = rank_prepared(&conn, &q, &rungs, prepared()).unwrap();
            let score_of: std::collections::HashMap<i64, (f32, bool)> =
                before.notes.iter().map(|r| (r.note.id, (r.score, r.matched))).collect();
            let mut other = crate::db::open(dir.path()).unwrap();
            let gone = before.notes[0].note.id;
            store::retire(&mut other, gone, "p", None, None).unwrap();
            let after = rank_prepared(&conn, &q, &rungs, prepared()).unwrap();
            assert_eq!(after.notes.len(), before.notes.len() - 1);
            for r in &after.notes {
                assert_ne!(r.note.id, gone);
                assert_eq!(score_of[&r.note.id], (r.score, r.matched), "note {}", r.note.id);
            }
        }
    }

    /// A semantic embedder (of the given model id) that sees every text the same way: only
    /// a second opinion or token matching can tell its notes apart.
    struct Blind(String);
    impl Embedder for Blind {
        fn model_id(&self) -> &str {
            &self.0
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    /// Two notes of equal cosine under [`Blind`] of model `model`; the first is newer (by a
    /// millisecond), so it wins every tie: it is the wrong one for [`BLIND_INTENT`].
    fn blind_store(model: &str) -> (tempfile::TempDir, Connection, crate::index::ExactIndex, Vec<i64>) {
        use crate::index::ExactIndex;
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let index = ExactIndex::new(model);
        let lessons = [
            ("pin the compiler toolchain for the team", "a rust-toolchain.toml with a channel line"),
            ("reload the web server after editing its configuration", "nginx -s reload rereads the config"),
        ];
        let mut ids = vec![];
        for (intent, delta) in lessons {
            let new = crate::memory::NewNote::gotcha("ops", intent, delta);
            let (id, _) = store::write(&mut conn, "p", &new, None, 2.0, None).unwrap();
            store::set_facts(&mut conn, id, 0, if ids.is_empty() { 1 } else { 0 }, false).unwrap();
            index.insert(id, &[1.0, 0.0]);
            ids.push(id);
        }
        (dir, conn, index, ids)
    }

    const BLIND_INTENT: &str = "nginx picks up my changed settings only after a restart";

    fn rank_blind(conn: &Connection, rungs: &Rungs<'_>) -> Outcome {
        let cands: std::sync::Arc<Candidates> = store::candidates(conn, "ops", "p").unwrap().into();
        let q =
            Query { skill: "ops", project: "p", intent: Some(BLIND_INTENT), ranking: Ranking::default(), now_ms: 5 };
        let p = Prepared {
            candidates: cands,
            vectors_checked: true,
            keep: usize::MAX,
            load_first: usize::MAX,
            corpus: 0,
            rest_cache: None,
            held: None,
            lexicons: None,
        };
        rank_prepared(conn, &q, rungs, p).unwrap()
    }

    #[test]
    fn the_static_table_breaks_what_the_model_cannot_tell_apart() {
        let (_dir, conn, index, ids) = blind_store("blind");
        let table = crate::embed::static_table::StaticEmbedder::builtin().unwrap();
        let blind = Blind("blind".into());
        for (second, want) in [(None, ids[0]), (Some(table.as_ref() as &dyn Embedder), ids[1])] {
            let rungs = Rungs { second, ..vectors_only(&blind, &index) };
            let out = rank_blind(&conn, &rungs);
            assert_eq!(out.mode, RecallMode::Vector);
            assert_eq!(out.notes[0].note.id, want, "second opinion: {}", second.is_some());
        }
    }

    /// [`Blind`] with pieces: each word of a text is a piece along its own axis (of 16), so
    /// token matching counts shared words.
    struct Pieced;
    impl Embedder for Pieced {
        fn model_id(&self) -> &str {
            "pieced"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
        fn has_pieces(&self) -> bool {
            true
        }
        fn embed_with_pieces(&self, texts: &[&str], want: &[bool]) -> Result<crate::embed::WithPieces> {
            let pieces = texts
                .iter()
                .zip(want)
                .map(|(t, w)| {
                    w.then(|| {
                        let ids: Vec<u32> = t
                            .split_whitespace()
                            .map(|w| w.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) % 16)
                            .collect();
                        let mut rows = vec![0f32; ids.len() * 16];
                        for (i, id) in ids.iter().enumerate() {
                            rows[i * 16 + *id as usize] = 1.0;
                        }
                        crate::embed::Pieces::from_rows(16, ids, &rows)
                    })
                })
                .collect();
            Ok((self.embed(texts)?, pieces))
        }
    }

    #[test]
    fn stored_pieces_rank_by_token_matching_and_missing_ones_fall_back_to_the_cosine() {
        // Each step without and with pieces kept in memory: the same rankings, except where
        // the kept pieces stand in for rows read before.
        for keep in [false, true] {
            let held = HeldPieces::new(16);
            let held = keep.then_some(&held);
            let (_dir, mut conn, index, ids) = blind_store("pieced");
            let e = Pieced;
            let notes = store::load(&conn, &ids).unwrap();
            let (_, query) = e.embed_with_pieces(&[BLIND_INTENT], &[true]).unwrap();
            let query = query[0].clone().unwrap();
            let rungs = |q| Rungs { query_pieces: q, held_pieces: held, ..vectors_only(&e, &index) };
            // No pieces stored: the cosine ties, hits decide (the first note).
            assert_eq!(rank_blind(&conn, &rungs(Some(&query))).notes[0].note.id, ids[0]);
            let mut stored = vec![];
            for n in &notes {
                let text = crate::embed::note_text(&n.intent, &n.delta);
                let (_, p) = e.embed_with_pieces(&[&text], &[true]).unwrap();
                stored.push(p[0].clone().unwrap());
            }
            // One note with pieces, one without: still the cosine.
            let one = [(notes[1].id, notes[1].intent.as_str(), notes[1].delta.as_str(), &stored[1])];
            assert_eq!(store::set_pieces(&mut conn, "pieced", &one).unwrap(), 1);
            assert_eq!(rank_blind(&conn, &rungs(Some(&query))).notes[0].note.id, ids[0]);
            // Both: the note that shares the intent's words ("nginx", "a", "after", ...) wins.
            let zero = [(notes[0].id, notes[0].intent.as_str(), notes[0].delta.as_str(), &stored[0])];
            assert_eq!(store::set_pieces(&mut conn, "pieced", &zero).unwrap(), 1);
            assert_eq!(rank_blind(&conn, &rungs(Some(&query))).notes[0].note.id, ids[1]);
            // Without the intent's pieces, the cosine again.
            assert_eq!(rank_blind(&conn, &rungs(None)).notes[0].note.id, ids[0]);
            // Rows gone from the store: pieces kept in memory still rank; without, the cosine.
            conn.execute("DELETE FROM note_pieces", []).unwrap();
            let want = if keep { ids[1] } else { ids[0] };
            assert_eq!(rank_blind(&conn, &rungs(Some(&query))).notes[0].note.id, want, "kept {keep}");
            let both = [zero[0], one[0]];
            assert_eq!(store::set_pieces(&mut conn, "pieced", &both).unwrap(), 2);
            // Pieces of a text the note no longer has are not stored; an edit drops the old
            // ones, and those kept in memory belong to the old text.
            let stale = [(notes[0].id, "another intent", notes[0].delta.as_str(), &stored[0])];
            assert_eq!(store::set_pieces(&mut conn, "pieced", &stale).unwrap(), 0);
            store::edit(&mut conn, notes[1].id, "nginx -s reload rereads the config files", None, None).unwrap();
            assert!(!store::pieces(&conn, "pieced", &ids).unwrap().contains_key(&notes[1].id));
            assert_eq!(rank_blind(&conn, &rungs(Some(&query))).notes[0].note.id, ids[0], "kept {keep}");
            // Deleted with their note.
            store::purge(&mut conn, notes[0].id, "p", None).unwrap();
            assert!(store::pieces(&conn, "pieced", &ids).unwrap().is_empty());
        }
    }

    #[test]
    fn token_matching_ranks_when_the_table_is_the_embedder() {
        let table = crate::embed::static_table::StaticEmbedder::builtin().unwrap();
        let id = table.model_id().to_string();
        let matcher = crate::embed::tokens::TokenMatch::new(table);
        // (embedder's model id, token matching on, the note ranked first)
        for (model, on, first) in [(id.as_str(), false, 0), (id.as_str(), true, 1), ("blind", true, 0)] {
            let (_dir, conn, index, ids) = blind_store(model);
            let blind = Blind(model.into());
            let rungs = Rungs { tokens: on.then_some(&matcher), ..vectors_only(&blind, &index) };
            let out = rank_blind(&conn, &rungs);
            assert_eq!(out.mode, RecallMode::Vector);
            assert_eq!(out.notes[0].note.id, ids[first], "model {model}, matching {on}");
        }
    }

    /// A large skill (more candidates than [`rungs::PARALLEL_MIN`]) ranks the same whether its
    /// vector search runs on the search thread, beside bm25 and the reading of bm25's notes,
    /// or after them; with the static table as the embedder (token matching) and a lexical one.
    #[test]
    fn a_large_skill_ranks_the_same_with_its_search_beside_bm25() {
        use crate::index::ExactIndex;
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let table = crate::embed::static_table::StaticEmbedder::builtin().unwrap();
        let hash = crate::embed::hash::HashEmbedder::new(64);
        let words = ["rebase", "conflict", "branch", "stash", "commit", "push", "tag", "merge", "hook", "blame"];
        let (by_table, by_hash) =
            (Arc::new(ExactIndex::new(table.model_id())), Arc::new(ExactIndex::new(hash.model_id())));
        let n = rungs::PARALLEL_MIN + 200;
        let notes: Vec<store::Imported<'_>> = (0..n)
            .map(|i| {
                let w = |k: usize| words[(i * k + i / 7) % words.len()];
                let new = crate::memory::NewNote::gotcha(
                    "git",
                    "",
                    &format!("lesson {i}: {} the {} before a {}", w(1), w(3), w(7)),
                );
                store::Imported { new, created_at: (i as i64 % 40) * DAY_MS, embedded: None }
            })
            .collect();
        let ids = store::import(&mut conn, "p", &notes).unwrap();
        for (id, note) in ids.iter().zip(&notes) {
            by_table.insert(*id, &table.embed_one(&note.new.delta).unwrap());
            by_hash.insert(*id, &hash.embed_one(&note.new.delta).unwrap());
        }
        let matcher = Arc::new(crate::embed::tokens::TokenMatch::new(table.clone()));
        // Their pieces stored with them, as a write stores them (but every 50th: read then).
        let unmatched = |id: &i64| id % 50 == 0;
        for (id, note) in ids.iter().zip(&notes).filter(|(id, _)| !unmatched(id)) {
            let pieces = matcher.stored(&crate::embed::note_text("", &note.new.delta));
            conn.execute("UPDATE notes SET match_pieces = ?2 WHERE id = ?1", rusqlite::params![id, pieces]).unwrap();
        }
        let cands: Arc<Candidates> = store::candidates(&conn, "git", "p").unwrap().into();
        assert_eq!(cands.len(), n);
        let thread = SearchThread::default();
        let static_table: &dyn Embedder = table.as_ref();
        let cases: [(&dyn Embedder, &Arc<ExactIndex>, Option<&crate::embed::tokens::TokenMatch>); 2] =
            [(static_table, &by_table, Some(matcher.as_ref())), (&hash, &by_hash, None)];
        let summary = |o: &Outcome| -> Vec<(i64, u32, bool)> {
            o.notes.iter().map(|r| (r.note.id, r.score.to_bits(), r.matched)).collect()
        };
        for (embedder, index, tokens) in cases {
            let shared: Arc<dyn VectorIndex> = index.clone();
            for intent in ["rebase conflict", "stash before push", "blame the hook", "zzz nothing"] {
                let q =
                    Query { skill: "git", project: "p", intent: Some(intent), ranking: Ranking::default(), now_ms: 5 };
                let prepared = || Prepared {
                    candidates: cands.clone(),
                    vectors_checked: true,
                    keep: 40,
                    load_first: 10,
                    corpus: n,
                    rest_cache: None,
                    held: None,
                    lexicons: None,
                };
                let after = Rungs { tokens, ..vectors_and_fts(embedder, index.as_ref()) };
                let want = rank_prepared(&conn, &q, &after, prepared()).unwrap();
                // The thread searching, and searching and reading the notes it found.
                for db in [None, Some(dir.path().join(crate::db::DB_FILE))] {
                    let (taken, read) = (thread.taken(), thread.read());
                    let reads = db.is_some();
                    let beside = Beside { thread: &thread, index: shared.clone(), db, tokens: None };
                    let beside = Rungs { beside: Some(beside), ..after };
                    let got = rank_prepared(&conn, &q, &beside, prepared()).unwrap();
                    assert_eq!(thread.taken(), taken + 1, "{intent}: the search ran on the thread");
                    let found_some = got.found_by.values().any(|m| *m == RecallMode::Vector);
                    assert_eq!(thread.read() > read, reads && found_some, "{intent}: the thread read its notes");
                    assert_eq!(summary(&got), summary(&want), "{intent} by {}", embedder.model_id());
                    let notes = |o: &Outcome| format!("{:?}", o.notes.iter().map(|r| &r.note).collect::<Vec<_>>());
                    assert_eq!(notes(&got), notes(&want), "{intent}");
                    assert_eq!(got.mode, want.mode);
                    assert_eq!(got.found_by, want.found_by);
                }
                // The skill's pieces held stand for its notes in token matching: the same
                // ranking, none of its notes read for it, whether the search thread matches the
                // notes it found or this one matches them all.
                let lexicons = crate::memory::lexicon::LexiconCache::default();
                for on_thread in tokens.map(|m| [None, Some(matcher.clone())].map(|t| (m, t))).into_iter().flatten() {
                    let (m, on_thread) = on_thread;
                    assert_eq!(lexicons.warm_pieces(&conn, "git", m.tag(), n).unwrap(), on_thread.is_none());
                    let held = Prepared { lexicons: Some(&lexicons), ..prepared() };
                    let db = Some(dir.path().join("x"));
                    let beside = Beside { thread: &thread, index: shared.clone(), db, tokens: on_thread };
                    let beside = Rungs { beside: Some(beside), ..after };
                    let (read, matched) = (thread.read(), thread.matched());
                    let on = beside.beside.as_ref().is_some_and(|b| b.tokens.is_some());
                    let got = rank_prepared(&conn, &q, &beside, held).unwrap();
                    assert_eq!(thread.read(), read, "{intent}: the thread read no note");
                    let found_some = got.found_by.values().any(|m| *m == RecallMode::Vector);
                    assert_eq!(thread.matched() > matched, on && found_some, "{intent}: the thread matched its notes");
                    let ranked = |o: &Outcome| -> Vec<(i64, u32, bool)> {
                        summary(o)
                            .into_iter()
                            .chain(o.unloaded.iter().map(|u| (u.id, u.score.to_bits(), u.matched)))
                            .collect()
                    };
                    assert_eq!(ranked(&got), ranked(&want), "{intent}, pieces held");
                    assert_eq!((got.mode, &got.found_by), (want.mode, &want.found_by));
                    let known = got.unloaded.iter().all(|u| u.text_chars > 0 || unmatched(&u.id));
                    assert!(known, "{intent}: what each note not loaded costs is known");
                }
            }
        }
    }

    /// Both rungs, over `index` by `embedder`.
    fn vectors_and_fts<'a>(embedder: &'a dyn Embedder, index: &'a dyn VectorIndex) -> Rungs<'a> {
        Rungs { use_fts: true, ..vectors_only(embedder, index) }
    }

    #[test]
    fn recency_table() {
        let day = 86_400_000;
        for (created, now, want) in [(0, 0, 1.0), (0, 30 * day, 0.5), (0, day - 1, 1.0), (10, 0, 1.0)] {
            assert!((recency(created, now) - want).abs() < 1e-6, "{created} {now}");
        }
    }
}
