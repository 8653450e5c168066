//! The recall cascade: rank the notes of one skill visible from one project for an intent.
//!
//! With an intent, the vector rung (cosine over the notes whose vector is of the current
//! model) and the bm25 rung (FTS5) are combined, so that a note with no current vector still
//! surfaces through its words: with a semantic embedder, relevance is the cosine plus a boost
//! for notes that contain most of the intent's words ([`COVERAGE_WEIGHT`]); with a lexical
//! (hash) embedder, bm25 ranks its matches and the vector rung's other notes follow them
//! ([`RRF_K`]). Relevance is blended with recency and hits by the skill's ranking weights.
//! Every other visible note follows, ranked by recency × hits (all of them without an intent,
//! or when nothing matches it), so that the block fills its budget: with few notes the whole
//! memory fits. Pinned notes always come first; ties are broken by hits, then recency, then
//! id, so the order is total and deterministic.

use rusqlite::Connection;

use super::frontmatter::Ranking;
use super::store::{self, Candidate};
use super::{Note, RecallMode};
use crate::embed::Embedder;
use crate::error::Result;
use crate::index::VectorIndex;

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
/// prose); weights 0.1–0.3 give the same figures. A note without a current vector still
/// surfaces through this term (below the vector matches). When the vector rung finds nothing
/// (embedder down), bm25 ranks alone.
///
/// [`embed_text`]: crate::engine::embed_text
pub const COVERAGE_WEIGHT: f32 = 0.2;
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
    pub note: Note,
    /// The note's score within its tier: relevance blended by the skill's weights for notes a
    /// rung found, recency and hits for the rest.
    pub score: f32,
    /// A rung (vector or bm25) found this note for the intent; these come first.
    pub matched: bool,
}

/// The ranking of one recall, best first, pinned notes first.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub mode: RecallMode,
    pub notes: Vec<Ranked>,
}

/// The rungs a ranking may use.
pub struct Rungs<'a> {
    pub embedder: Option<&'a dyn Embedder>,
    pub index: Option<&'a dyn VectorIndex>,
    /// Off to measure the bm25 rung alone.
    pub use_vectors: bool,
    pub use_fts: bool,
}

/// Candidates gathered by the caller (from [`crate::index::catalog`], say) instead of
/// SQLite.
pub struct Prepared {
    /// Every visible note of the skill, by id (shared: the catalog caches it).
    pub candidates: std::sync::Arc<Vec<Candidate>>,
    /// The index is known to hold the vector of every candidate that has one of its model
    /// (skips the per-query check for notes written by another process).
    pub vectors_checked: bool,
    /// Rank fully but load and return only the first `keep` notes.
    pub keep: usize,
    /// Notes in the whole store (0: unknown). Above [`FTS_PRUNE_MIN`] the bm25 rung checks
    /// visibility in memory instead of joining every match to the notes table.
    pub corpus: usize,
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
        Prepared { candidates: candidates.into(), vectors_checked: false, keep: usize::MAX, corpus: 0 },
    )
}

/// [`rank`] over candidates the caller gathered; same ranking.
pub fn rank_prepared(conn: &Connection, q: &Query<'_>, rungs: &Rungs<'_>, p: Prepared) -> Result<Outcome> {
    let t0 = std::time::Instant::now();
    let cands = p.candidates;
    if cands.is_empty() {
        return Ok(Outcome { mode: RecallMode::None, notes: vec![] });
    }
    let intent = q.intent.map(str::trim).filter(|s| !s.is_empty());
    let mut rel: std::collections::HashMap<i64, f32> = Default::default();
    let mut mode = RecallMode::Recent;
    if let Some(intent) = intent {
        let ids: Vec<i64> = cands.iter().map(|c| c.id).collect();
        let mut vec_hits = vec![];
        if let (true, Some(e), Some(ix)) = (rungs.use_vectors, rungs.embedder, rungs.index) {
            if e.model_id() == ix.model_id() {
                // An embedder that fails leaves the lexical rungs to answer.
                let qv = e.embed_one(intent).unwrap_or_else(|why| {
                    tracing::warn!("{why}; recall uses the lexical rungs");
                    vec![]
                });
                let warming = ix.warming() && ids.len() > WARMING_EXACT_MAX;
                if warming {
                    tracing::debug!("recall: vector index still loading; {} candidates ranked lexically", ids.len());
                }
                if qv.iter().any(|x| *x != 0.0) && !warming {
                    if !p.vectors_checked {
                        store::ensure_vectors(conn, ix, &ids)?;
                    }
                    vec_hits = ix.search(&qv, &ids, RUNG_DEPTH);
                    vec_hits.retain(|(_, s)| *s > 0.0);
                }
            }
        }
        let t_vec = t0.elapsed();
        // The skill's token narrows bm25 to its notes when they are a small part of the store.
        let narrow = (p.corpus == 0 || cands.len() * 2 < p.corpus).then_some(q.skill);
        let fts_hits = if !rungs.use_fts {
            vec![]
        } else if cands.len() > FTS_PRUNE_MIN && ids.windows(2).all(|w| w[0] < w[1]) {
            store::fts_pruned(conn, narrow, &ids, intent, RUNG_DEPTH, FTS_MAX_MATCHES)?
        } else if p.corpus > FTS_PRUNE_MIN && ids.windows(2).all(|w| w[0] < w[1]) {
            store::fts_pruned(conn, narrow, &ids, intent, RUNG_DEPTH, i64::MAX)?
        } else {
            store::fts(conn, q.skill, q.project, intent, RUNG_DEPTH)?
        };
        tracing::trace!("rank: vector rung {:?}, bm25 rung {:?}", t_vec, t0.elapsed() - t_vec);
        let semantic = rungs.embedder.is_some_and(|e| !e.lexical());
        if semantic && !vec_hits.is_empty() {
            // Cosine plus a word-coverage boost (see [`COVERAGE_WEIGHT`]).
            for (id, s) in &vec_hits {
                rel.insert(*id, *s);
            }
            let fts_ids: Vec<i64> = fts_hits.iter().map(|(id, _)| *id).collect();
            let terms = query_terms(intent);
            for note in store::load(conn, &fts_ids)? {
                let c = coverage(&terms, &note.intent, &note.delta);
                *rel.entry(note.id).or_default() += COVERAGE_WEIGHT * c * c;
            }
        } else {
            // bm25 ranks the notes it matches; a lexical embedder's notes that bm25 did not
            // match continue its ranking (see [`RRF_K`]).
            for (r, (id, _)) in fts_hits.iter().enumerate() {
                rel.insert(*id, 1.0 / (RRF_K + r as f32 + 1.0));
            }
            let mut r = fts_hits.len();
            for (id, _) in &vec_hits {
                if !rel.contains_key(id) {
                    rel.insert(*id, 1.0 / (RRF_K + r as f32 + 1.0));
                    r += 1;
                }
            }
        }
        mode = if !vec_hits.is_empty() {
            RecallMode::Vector
        } else if !fts_hits.is_empty() {
            RecallMode::Fts
        } else {
            RecallMode::Recent
        };
    }
    let t_rungs = t0.elapsed();
    let max_rel = rel.values().copied().fold(0.0f32, f32::max);
    let max_hits = cands.iter().map(|c| c.hits).max().unwrap_or(0);
    // The notes no rung found (all of them without relevance) are ranked by recency and hits
    // alone, after the ones a rung found: a must-not-skip note that shares no word with
    // today's intent still fills the room the block has.
    let rest = {
        let s = q.ranking.recency + q.ranking.hit;
        if s > 0.0 {
            Ranking { relevance: 0.0, recency: q.ranking.recency / s, hit: q.ranking.hit / s }
        } else {
            Ranking { relevance: 0.0, recency: 0.5, hit: 0.5 }
        }
    };
    // hit_score per small hit count, computed once (same values).
    let mut hit_memo = [f32::NAN; 256];
    let mut hits_of = |h: i64| {
        if (0..256).contains(&h) {
            let m = &mut hit_memo[h as usize];
            if m.is_nan() {
                *m = hit_score(h, max_hits);
            }
            *m
        } else {
            hit_score(h, max_hits)
        }
    };
    // Which candidates a rung found: a merge walk over ids when the candidates are sorted by
    // id (the catalog's and SQLite's order), so that 100k candidates cost no hash lookups.
    let mut found: Vec<i64> = rel.keys().copied().collect();
    found.sort_unstable();
    let sorted = cands.windows(2).all(|w| w[0].id < w[1].id);
    let mut next = 0;
    let mut scored: Vec<(Candidate, bool, f32)> = Vec::with_capacity(cands.len());
    for c in cands.iter() {
        let matched = if sorted {
            while next < found.len() && found[next] < c.id {
                next += 1;
            }
            next < found.len() && found[next] == c.id
        } else {
            found.binary_search(&c.id).is_ok()
        };
        let h = hits_of(c.hits);
        let r = recency(c.created_at, q.now_ms);
        let s = if matched {
            let rv = if max_rel > 0.0 { rel.get(&c.id).copied().unwrap_or(0.0) / max_rel } else { 0.0 };
            q.ranking.relevance * rv + q.ranking.recency * r + q.ranking.hit * h
        } else {
            rest.recency * r + rest.hit * h
        };
        scored.push((c.clone(), matched, s));
    }
    let order = |a: &(Candidate, bool, f32), b: &(Candidate, bool, f32)| {
        b.0.pinned
            .cmp(&a.0.pinned)
            .then(b.1.cmp(&a.1))
            .then(b.2.total_cmp(&a.2))
            .then(b.0.hits.cmp(&a.0.hits))
            .then(b.0.created_at.cmp(&a.0.created_at))
            .then(a.0.id.cmp(&b.0.id))
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
    let ids: Vec<i64> = scored.iter().map(|(c, _, _)| c.id).collect();
    let notes = store::load(conn, &ids)?;
    tracing::trace!(
        "rank: rungs {:?}, score {:?}, load {:?} ({} notes)",
        t_rungs,
        t_score - t_rungs,
        t0.elapsed() - t_score,
        ids.len()
    );
    let notes =
        notes.into_iter().zip(scored).map(|(note, (_, matched, score))| Ranked { note, score, matched }).collect();
    Ok(Outcome { mode, notes })
}

/// The content words of an intent, stemmed, each once.
pub fn query_terms(intent: &str) -> Vec<String> {
    use crate::embed::hash::{is_stop, stem, words};
    let mut terms: Vec<String> = vec![];
    for w in words(intent).iter().filter(|w| !is_stop(w)) {
        let t = stem(w).to_string();
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    terms
}

/// The share of `terms` (from [`query_terms`]) found among a note's stemmed words, in [0, 1].
pub fn coverage(terms: &[String], intent: &str, delta: &str) -> f32 {
    use crate::embed::hash::{stem, words};
    if terms.is_empty() {
        return 0.0;
    }
    let mut have: std::collections::HashSet<String> = Default::default();
    for text in [intent, delta] {
        have.extend(words(text).iter().map(|w| stem(w).to_string()));
    }
    terms.iter().filter(|t| have.contains(t.as_str())).count() as f32 / terms.len() as f32
}

/// Recency in (0, 1]: 1 today, ½ after [`RECENCY_DAYS`]. Whole days, so that the ranking does
/// not move between two calls a moment apart.
pub fn recency(created_at: i64, now_ms: i64) -> f32 {
    let days = ((now_ms - created_at).max(0) / 86_400_000) as f32;
    1.0 / (1.0 + days / RECENCY_DAYS)
}

/// Hits in [0, 1], log-scaled against the most-hit visible note.
pub fn hit_score(hits: i64, max_hits: i64) -> f32 {
    if max_hits <= 0 {
        return 0.0;
    }
    ((1 + hits.max(0)) as f32).ln() / ((1 + max_hits) as f32).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_table() {
        assert_eq!(
            query_terms("Cannot iterate over the nulls, iterating"),
            ["cannot", "iterate", "over", "null", "iterat"]
        );
        let cases: &[(&str, &str, &str, f32)] = &[
            (
                "jq error Cannot iterate over null",
                "Cannot iterate over null",
                "`.items[]` on a missing key errors",
                5.0 / 6.0,
            ),
            ("restart crashed services", "restart on failure", "`Restart=on-failure` restarts crashed services", 1.0),
            ("my daemon dies at logout", "run services as a normal user", "units stop at logout", 1.0 / 3.0),
            ("the of and", "anything", "at all", 0.0),
            ("", "x", "y", 0.0),
        ];
        for (intent, ni, nd, want) in cases {
            let got = coverage(&query_terms(intent), ni, nd);
            assert!((got - want).abs() < 1e-6, "{intent:?}: {got} != {want}");
        }
    }

    #[test]
    fn recency_and_hits_table() {
        let day = 86_400_000;
        for (created, now, want) in [(0, 0, 1.0), (0, 30 * day, 0.5), (0, day - 1, 1.0), (10, 0, 1.0)] {
            assert!((recency(created, now) - want).abs() < 1e-6, "{created} {now}");
        }
        for (h, m, want) in [(0, 0, 0.0), (0, 9, 0.0), (9, 9, 1.0)] {
            assert!((hit_score(h, m) - want).abs() < 1e-6);
        }
    }
}
