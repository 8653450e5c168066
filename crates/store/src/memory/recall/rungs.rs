//! Recall's rungs for an intent: the notes the vector index finds (cosine over the notes whose
//! vector is of the current model) and the notes bm25 finds (a small skill's own index, else
//! FTS5), and their relevance: with a semantic embedder, the cosine plus token matching
//! ([`TOKEN_WEIGHT`]), a local model's contextual token matching alone, or a word-coverage boost
//! ([`COVERAGE_WEIGHT`]), and the static table's second opinion ([`SECOND_WEIGHT`]); with a
//! lexical one, bm25's order continued by the vector rung's ([`RRF_K`]). What is done with the
//! relevance (blended with recency and use, the head chosen) is [`super::rank_prepared`]'s.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::Connection;

use super::super::lexicon::LEXICON_MAX;
use super::super::store;
use super::super::{Note, RecallMode};
use super::{
    load_notes, query_vector, HeldPieces, Prepared, Query, Rungs, COVERAGE_WEIGHT, FTS_MAX_MATCHES, FTS_PRUNE_MIN,
    RRF_K, RUNG_DEPTH, SECOND_WEIGHT, TOKEN_WEIGHT, WARMING_EXACT_MAX,
};
use crate::embed::Embedder;
use crate::error::Result;

/// What the rungs found for an intent.
pub(super) struct Found {
    /// Each found note's relevance (not normalised).
    pub rel: HashMap<i64, f32>,
    /// The rung that found each note (the vector rung when both did).
    pub found_by: HashMap<i64, RecallMode>,
    /// Notes read for scoring, by id: the head's load does not read them again.
    pub loaded: HashMap<i64, Arc<Note>>,
    pub mode: RecallMode,
}

impl Default for Found {
    /// Nothing found: the notes are ranked by recency and use alone.
    fn default() -> Self {
        Found { rel: HashMap::new(), found_by: HashMap::new(), loaded: HashMap::new(), mode: RecallMode::Recent }
    }
}

/// Runs both rungs over the candidates of `p` and scores what they found.
pub(super) fn find(
    conn: &Connection,
    q: &Query<'_>,
    rungs: &Rungs<'_>,
    p: &Prepared<'_>,
    intent: &str,
    t0: std::time::Instant,
) -> Result<Found> {
    let cands = &p.candidates;
    let ids = cands.ids();
    let vec_hits = vector_hits(conn, rungs, p, intent, ids, t0)?;
    let t_vec = t0.elapsed();
    let fts_hits = bm25_hits(conn, q, rungs, p, intent, ids)?;
    tracing::trace!("rank: vector rung {:?}, bm25 rung {:?}", t_vec, t0.elapsed() - t_vec);
    let mut found = Found::default();
    let semantic = rungs.embedder.is_some_and(|e| !e.lexical());
    if semantic && !vec_hits.is_empty() {
        found.loaded = semantic_relevance(conn, rungs, p, intent, &vec_hits, &fts_hits, &mut found.rel)?;
    } else {
        lexical_relevance(&vec_hits, &fts_hits, &mut found.rel);
    }
    for (id, _) in &fts_hits {
        found.found_by.insert(*id, RecallMode::Fts);
    }
    for (id, _) in &vec_hits {
        found.found_by.insert(*id, RecallMode::Vector);
    }
    found.mode = if !vec_hits.is_empty() {
        RecallMode::Vector
    } else if !fts_hits.is_empty() {
        RecallMode::Fts
    } else {
        RecallMode::Recent
    };
    Ok(found)
}

/// The vector rung: the candidates nearest the intent (positive cosines only), none when the
/// index is of another model, still loading a large skill, or the intent embeds to nothing.
fn vector_hits(
    conn: &Connection,
    rungs: &Rungs<'_>,
    p: &Prepared<'_>,
    intent: &str,
    ids: &[i64],
    t0: std::time::Instant,
) -> Result<Vec<(i64, f32)>> {
    let mut vec_hits = vec![];
    if let (true, Some(e), Some(ix)) = (rungs.use_vectors, rungs.embedder, rungs.index) {
        if e.model_id() == ix.model_id() {
            let owned;
            let qv: &[f32] = match rungs.query {
                Some(v) => v,
                None => {
                    owned = query_vector(e, intent);
                    &owned
                }
            };
            let warming = ix.warming() && ids.len() > WARMING_EXACT_MAX;
            if warming {
                tracing::debug!("recall: vector index still loading; {} candidates ranked lexically", ids.len());
            }
            if qv.iter().any(|x| *x != 0.0) && !warming {
                if !p.vectors_checked {
                    store::ensure_vectors(conn, ix, ids)?;
                }
                let t_search = std::time::Instant::now();
                vec_hits = ix.search_sorted(qv, ids, p.candidates.bits(), RUNG_DEPTH);
                vec_hits.retain(|(_, s)| *s > 0.0);
                tracing::trace!(
                    "rank: query ready after {:?}, searched {} candidates in {:?}",
                    t_search.duration_since(t0),
                    ids.len(),
                    t_search.elapsed()
                );
            }
        }
    }
    Ok(vec_hits)
}

/// The bm25 rung: a small skill's own index when it has one; else FTS5, which ranks the same,
/// pruned to the candidates in memory when the store is large.
fn bm25_hits(
    conn: &Connection,
    q: &Query<'_>,
    rungs: &Rungs<'_>,
    p: &Prepared<'_>,
    intent: &str,
    ids: &[i64],
) -> Result<Vec<(i64, f64)>> {
    let cands = &p.candidates;
    // The skill's token narrows bm25 to its notes when they are a small part of the store.
    let narrow = (p.corpus == 0 || cands.len() * 2 < p.corpus).then_some(q.skill);
    // A small skill's own index when it has one; else FTS5, which ranks the same.
    let in_memory = match p.lexicons.filter(|_| rungs.use_fts && cands.len() <= LEXICON_MAX) {
        Some(lex) => lex.search(conn, (q.skill, q.project), cands, p.held, intent, RUNG_DEPTH)?,
        None => None,
    };
    let fts_hits = if !rungs.use_fts {
        vec![]
    } else if let Some(hits) = in_memory {
        hits
    } else if cands.len() > FTS_PRUNE_MIN {
        // Each word's count is kept while no note changes (the lexicons' store counts).
        let cap = FTS_MAX_MATCHES + 1;
        let mut kept = p.lexicons.map(|l| l.counts(conn, p.held)).transpose()?;
        let mut count = |w: &str| match kept.as_mut() {
            Some(k) => k.count_upto(conn, narrow, w, cap),
            None => store::fts_count_upto(conn, narrow, w, cap),
        };
        store::fts_pruned(conn, narrow, ids, intent, RUNG_DEPTH, FTS_MAX_MATCHES, &mut count)?
    } else if p.corpus > FTS_PRUNE_MIN {
        store::fts_every_word(conn, narrow, ids, intent, RUNG_DEPTH)?
    } else {
        store::fts(conn, q.skill, q.project, intent, RUNG_DEPTH)?
    };
    Ok(fts_hits)
}

/// A semantic embedder's relevance: the cosine plus token matching (see [`TOKEN_WEIGHT`]), a
/// local model's contextual token matching alone, or a word-coverage boost (see
/// [`COVERAGE_WEIGHT`]), then the static table's second opinion. Returns the notes read.
fn semantic_relevance(
    conn: &Connection,
    rungs: &Rungs<'_>,
    p: &Prepared<'_>,
    intent: &str,
    vec_hits: &[(i64, f32)],
    fts_hits: &[(i64, f64)],
    rel: &mut HashMap<i64, f32>,
) -> Result<HashMap<i64, Arc<Note>>> {
    // Cosine plus token matching (see [`TOKEN_WEIGHT`]) or a word-coverage boost
    // (see [`COVERAGE_WEIGHT`]).
    for (id, s) in vec_hits {
        rel.insert(*id, *s);
    }
    let matching = rungs.tokens.filter(|t| rungs.embedder.is_some_and(|e| e.model_id() == t.model_id()));
    let contextual = match (rungs.query_pieces, rungs.embedder) {
        (Some(q), Some(e)) if e.has_pieces() && !q.ids.is_empty() => Some((q, e.model_id())),
        _ => None,
    };
    let fts_ids: Vec<i64> = fts_hits.iter().map(|(id, _)| *id).collect();
    let mut load: Vec<i64> = fts_ids.clone();
    if rungs.second.is_some() || matching.is_some() || contextual.is_some() {
        load.extend(vec_hits.iter().map(|(id, _)| *id));
        load.sort_unstable();
        load.dedup();
    }
    let notes = load_notes(conn, p.held, &load)?;
    let by_pieces = match contextual {
        Some((q, model)) => contextual_scores(conn, q, model, &notes, rungs.held_pieces)?,
        None => None,
    };
    if let Some(scores) = &by_pieces {
        // Token matching ranks alone (see [`crate::embed::tokens::score_contextual`]).
        for (note, s) in notes.iter().zip(scores) {
            rel.insert(note.id, *s);
        }
    } else if let Some(m) = matching {
        let refs: Vec<crate::embed::tokens::Note<'_>> = notes
            .iter()
            .map(|n| crate::embed::tokens::Note {
                intent: &n.intent,
                delta: &n.delta,
                stored: n.match_pieces.as_deref(),
            })
            .collect();
        let t_match = std::time::Instant::now();
        for (note, s) in notes.iter().zip(m.scores(intent, &refs)) {
            *rel.entry(note.id).or_default() += TOKEN_WEIGHT * s;
        }
        tracing::trace!("rank: token matching of {} notes {:?}", notes.len(), t_match.elapsed());
    } else {
        let terms = crate::text::query_terms(intent);
        for note in &notes {
            if fts_ids.contains(&note.id) {
                let c = crate::text::coverage(&terms, &note.intent, &note.delta);
                *rel.entry(note.id).or_default() += COVERAGE_WEIGHT * c * c;
            }
        }
    }
    if let (Some(second), None) = (rungs.second, &by_pieces) {
        second_opinion(second, intent, &notes, rel);
    }
    Ok(notes.into_iter().map(|n| (n.id, n)).collect())
}

/// A lexical embedder's relevance: bm25 ranks the notes it matches; the vector rung's notes
/// that bm25 did not match continue its ranking (see [`RRF_K`]).
fn lexical_relevance(vec_hits: &[(i64, f32)], fts_hits: &[(i64, f64)], rel: &mut HashMap<i64, f32>) {
    // bm25 ranks the notes it matches; a lexical embedder's notes that bm25 did not
    // match continue its ranking (see [`RRF_K`]).
    for (r, (id, _)) in fts_hits.iter().enumerate() {
        rel.insert(*id, 1.0 / (RRF_K + r as f32 + 1.0));
    }
    let mut r = fts_hits.len();
    for (id, _) in vec_hits {
        if !rel.contains_key(id) {
            rel.insert(*id, 1.0 / (RRF_K + r as f32 + 1.0));
            r += 1;
        }
    }
}

/// Token matching of `notes` against the intent's pieces `q` over the notes' stored pieces
/// by `model` (those in `held` first), in order; `None` when a note has none (written by
/// another door, or before the model's pieces were kept: the background run after a start
/// makes them), and the ranking falls back to the cosine.
fn contextual_scores(
    conn: &Connection,
    q: &crate::embed::Pieces,
    model: &str,
    notes: &[Arc<Note>],
    held: Option<&HeldPieces>,
) -> Result<Option<Vec<f32>>> {
    if notes.is_empty() {
        return Ok(None);
    }
    let t0 = std::time::Instant::now();
    let keys: Vec<u64> =
        notes.iter().map(|n| crate::embed::cache::key_of(&[model, n.intent.as_str(), n.delta.as_str()])).collect();
    let mut found = held.map(|h| h.get_many(&keys)).unwrap_or_else(|| vec![None; notes.len()]);
    let missing: Vec<i64> = notes.iter().zip(&found).filter(|(_, p)| p.is_none()).map(|(n, _)| n.id).collect();
    if !missing.is_empty() {
        let mut stored = store::pieces(conn, model, &missing)?;
        let mut new = vec![];
        for ((n, slot), k) in notes.iter().zip(found.iter_mut()).zip(&keys) {
            if let Some(p) = stored.remove(&n.id) {
                let p = std::sync::Arc::new(p);
                new.push((*k, p.clone()));
                *slot = Some(p);
            }
        }
        if let Some(h) = held {
            h.insert_many(new);
        }
    }
    let Some(refs) = found.iter().map(|p| p.as_deref()).collect::<Option<Vec<_>>>() else {
        tracing::debug!(
            "recall: {} of {} notes have no pieces yet; ranked by the cosine",
            found.iter().filter(|p| p.is_none()).count(),
            notes.len()
        );
        return Ok(None);
    };
    let read = t0.elapsed();
    let scores = crate::embed::tokens::score_contextual(q, &refs);
    tracing::trace!(
        "rank: contextual token matching of {} notes {:?} (pieces read in {read:?}, {} of them from the store)",
        notes.len(),
        t0.elapsed(),
        missing.len()
    );
    Ok(Some(scores))
}

/// Adds [`SECOND_WEIGHT`] × `second`'s cosine to the relevance of `notes`; an embedder that
/// fails adds nothing.
fn second_opinion(
    second: &dyn Embedder,
    intent: &str,
    notes: &[Arc<Note>],
    rel: &mut std::collections::HashMap<i64, f32>,
) {
    let t0 = std::time::Instant::now();
    let pairs: Vec<(&str, &str)> = notes.iter().map(|n| (n.intent.as_str(), n.delta.as_str())).collect();
    let _trace = TraceOnDrop(t0, notes.len());
    let scored = second.embed_one(intent).and_then(|q| Ok((crate::embed::embed_notes(second, &pairs)?, q)));
    match scored {
        Ok((vectors, q)) => {
            for (note, v) in notes.iter().zip(&vectors) {
                if v.len() == q.len() {
                    *rel.entry(note.id).or_default() += SECOND_WEIGHT * crate::embed::dot(&q, v);
                }
            }
        }
        Err(why) => tracing::warn!("{why}; recall ranks without the static table's opinion"),
    }
}

/// Traces the second opinion's time when dropped.
struct TraceOnDrop(std::time::Instant, usize);

impl Drop for TraceOnDrop {
    fn drop(&mut self) {
        tracing::trace!("second opinion: {:?} for {} notes", self.0.elapsed(), self.1);
    }
}
