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

use super::super::lexicon::{self, SkillPieces, LEXICON_MAX};
use super::super::store;
use super::super::{Note, RecallMode};
use super::beside::Matching;
use super::{
    load_notes, query_vector, HeldPieces, Prepared, Query, Rungs, COVERAGE_WEIGHT, FTS_MAX_MATCHES, FTS_PRUNE_MIN,
    RRF_K, RUNG_DEPTH, SECOND_WEIGHT, TOKEN_WEIGHT, WARMING_EXACT_MAX,
};
use crate::embed::tokens::{self, Matched};
use crate::embed::Embedder;
use crate::error::Result;
use crate::index::VectorIndex;

/// What the rungs found for an intent.
pub(super) struct Found {
    /// Each found note's relevance (not normalised).
    pub rel: HashMap<i64, f32>,
    /// The rung that found each note (the vector rung when both did).
    pub found_by: HashMap<i64, RecallMode>,
    /// Notes read for scoring, by id: the head's load does not read them again.
    pub loaded: HashMap<i64, Arc<Note>>,
    pub mode: RecallMode,
    /// The skill's pieces held, when they stood for its notes in scoring (none was read).
    pub held: Option<Arc<SkillPieces>>,
}

impl Default for Found {
    /// Nothing found: the notes are ranked by recency and use alone.
    fn default() -> Self {
        Found {
            rel: HashMap::new(),
            found_by: HashMap::new(),
            loaded: HashMap::new(),
            mode: RecallMode::Recent,
            held: None,
        }
    }
}

/// Runs both rungs over the candidates of `p` and scores what they found. A large skill's
/// vector search runs on [`Rungs::beside`]'s thread, which also reads the notes it found,
/// while this one runs the bm25 rung and reads bm25's notes ([`PARALLEL_MIN`]); the answer is
/// the same as one after the other.
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
    let owned;
    let search = match vector_index(rungs, ids) {
        Some(Search { index, query: None }) => {
            owned = query_vector(rungs.embedder.expect("a search has an embedder"), intent);
            Some((index, &owned[..]))
        }
        Some(Search { index, query: Some(v) }) => Some((index, v)),
        None => None,
    };
    let search = search.filter(|(_, v)| v.iter().any(|x| *x != 0.0));
    if let (Some((ix, _)), false) = (search, p.vectors_checked) {
        store::ensure_vectors(conn, ix, ids)?;
    }
    let semantic = rungs.embedder.is_some_and(|e| !e.lexical());
    // A large skill's pieces held in memory stand for its notes in scoring: its rungs read
    // no note then (the head's are read after).
    let held = match (semantic, pieces_suffice(rungs), p.lexicons) {
        (true, Some(m), Some(lex)) if ids.len() > LEXICON_MAX => lex.pieces(conn, (q.skill, q.project), m.tag())?,
        _ => None,
    };
    // Token matching over the pieces held is split: each thread matches the notes it found
    // (the cosines of their pieces, most of its time), and the scores are made of both.
    let tq = held.as_ref().and(pieces_suffice(rungs)).map(|m| Arc::new(m.query(intent)));
    let mut pre: HashMap<i64, Matched> = HashMap::new();
    let bits = cands.bits();
    let run = |(ix, v): (&dyn VectorIndex, &[f32])| {
        let t = std::time::Instant::now();
        let mut hits = ix.search_sorted(v, ids, bits, RUNG_DEPTH);
        hits.retain(|(_, s)| *s > 0.0);
        tracing::trace!(
            "rank: query ready after {:?}, searched {} candidates in {:?}",
            t.duration_since(t0),
            ids.len(),
            t.elapsed()
        );
        (hits, t.elapsed())
    };
    let bm25 = || -> Result<_> {
        let t = std::time::Instant::now();
        let hits = bm25_hits(conn, q, rungs, p, intent, ids)?;
        Ok((hits, t.elapsed()))
    };
    let mut read = vec![];
    let beside = match (search, rungs.beside.as_ref()) {
        (Some((_, v)), Some(b)) if ids.len() > PARALLEL_MIN => {
            let t = std::time::Instant::now();
            let db = b.db.clone().filter(|_| held.is_none());
            let matching = match (&b.tokens, &tq, &held) {
                (Some(tokens), Some(query), Some(held)) => {
                    Some(Matching { tokens: tokens.clone(), query: query.clone(), held: held.clone() })
                }
                _ => None,
            };
            b.thread
                .search(b.index.clone(), v.to_vec(), p.candidates.clone(), RUNG_DEPTH, (db, matching))
                .map(|h| (h, t))
        }
        _ => None,
    };
    let ((vec_hits, t_vec), (fts_hits, t_fts)) = match (beside, search) {
        (Some((pending, t)), Some(s)) => {
            let fts = bm25()?;
            // bm25's notes are read while the search goes on (scoring reads them anyway).
            // Or matched, when their pieces are held.
            match (&held, &tq, &rungs.beside) {
                (Some(h), Some(query), Some(super::Beside { tokens: Some(tokens), .. })) => {
                    let m = Matching { tokens: tokens.clone(), query: query.clone(), held: h.clone() };
                    pre.extend(super::beside::match_held(&m, &fts.0));
                }
                (None, ..) => {
                    let fts_ids: Vec<i64> = fts.0.iter().map(|(id, _)| *id).collect();
                    read = load_notes(conn, p.held, &fts_ids)?;
                }
                _ => {}
            }
            let waited = std::time::Instant::now();
            let vec = match pending.wait() {
                Some(super::beside::Found { hits, notes, share }) => {
                    let found_in = waited.elapsed();
                    // This thread's part of the search's matching, then the other's.
                    let mine = share.as_ref().map_or(0, |s| s.work(&|id| pre.contains_key(&id)));
                    pending.done();
                    let theirs = share.map(|s| s.take()).unwrap_or_default();
                    tracing::trace!(
                        "rank: searched {} candidates beside bm25 (their notes read: {}), waited {found_in:?} \
                         for the search, matched {mine} of its notes here and {} there in {:?}",
                        ids.len(),
                        notes.is_some(),
                        theirs.len().saturating_sub(mine),
                        waited.elapsed() - found_in
                    );
                    pre.extend(theirs);
                    // The notes bm25 found too are bm25's copies (the catalog's, when it
                    // holds them).
                    let have: std::collections::HashSet<i64> = read.iter().map(|n| n.id).collect();
                    read.extend(notes.into_iter().flatten().filter(|n| !have.contains(&n.id)).map(Arc::new));
                    (hits, t.elapsed())
                }
                None => run(s),
            };
            (vec, fts)
        }
        (_, s) => (s.map(run).unwrap_or_default(), bm25()?),
    };
    tracing::trace!("rank: vector rung {t_vec:?}, bm25 rung {t_fts:?}");
    let mut found = Found { loaded: read.into_iter().map(|n| (n.id, n)).collect(), ..Found::default() };
    if semantic && !vec_hits.is_empty() {
        let pieces = held.as_deref().map(|h| HeldMatch { held: h, query: tq.as_deref(), matched: pre });
        semantic_relevance(conn, rungs, p, intent, (&vec_hits, &fts_hits), pieces, &mut found)?;
        found.held = held;
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

/// Skills with more candidates than this search their vectors on the [`SearchThread`] while
/// the bm25 rung runs (about 0.4 ms each at 90,000 notes; handing a search over costs about
/// 10 µs, more than half a small skill's whole search).
///
/// [`SearchThread`]: super::beside::SearchThread
pub const PARALLEL_MIN: usize = super::FTS_PRUNE_MIN;

/// What the vector rung searches: the index, and the intent's vector when the caller
/// embedded it (`None`: embed it).
struct Search<'a> {
    index: &'a dyn VectorIndex,
    query: Option<&'a [f32]>,
}

/// The index the vector rung searches, if any: not one of another model, nor one still
/// loading when the skill is large.
fn vector_index<'a>(rungs: &Rungs<'a>, ids: &[i64]) -> Option<Search<'a>> {
    let (true, Some(e), Some(ix)) = (rungs.use_vectors, rungs.embedder, rungs.index) else { return None };
    if e.model_id() != ix.model_id() {
        return None;
    }
    if ix.warming() && ids.len() > WARMING_EXACT_MAX {
        tracing::debug!("recall: vector index still loading; {} candidates ranked lexically", ids.len());
        return None;
    }
    Some(Search { index: ix, query: rungs.query })
}

/// Token matching over the static table, when it is what scores the notes the rungs found
/// and all that reads of them (their pieces): no local model's pieces, no second opinion.
fn pieces_suffice<'a>(rungs: &Rungs<'a>) -> Option<&'a crate::embed::tokens::TokenMatch> {
    let matching = rungs.tokens.filter(|t| rungs.embedder.is_some_and(|e| e.model_id() == t.model_id()));
    let contextual =
        rungs.query_pieces.is_some_and(|q| !q.ids.is_empty() && rungs.embedder.is_some_and(|e| e.has_pieces()));
    matching.filter(|t| t.stores() && !contextual && rungs.second.is_none())
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
        let words = {
            let mut count = |w: &str| match kept.as_mut() {
                Some(k) => k.count_upto(conn, narrow, w, cap),
                None => store::fts_count_upto(conn, narrow, w, cap),
            };
            store::prune_words(intent, FTS_MAX_MATCHES, &mut count)?
        };
        let Some(words) = words else { return Ok(vec![]) };
        // Over the whole store, the rows' lengths held spare bm25 a lookup a row.
        let lengths = match (narrow, p.lexicons) {
            (None, Some(l)) => l.lengths(store::text_changes(conn)?, (q.skill, q.project)),
            _ => None,
        };
        let held = match (lengths, kept.as_mut()) {
            (Some(lens), Some(k)) => {
                let totals = k.totals(conn)?;
                let visible = |id: i64| cands.bits().map_or_else(|| ids.binary_search(&id).is_ok(), |b| b.contains(id));
                lexicon::bm25_of_instances(conn, &lens, &visible, &words, totals, RUNG_DEPTH)?
            }
            _ => None,
        };
        match held {
            Some(hits) => hits,
            None => store::fts_pruned_words(conn, narrow, ids, &words, RUNG_DEPTH)?,
        }
    } else if p.corpus > FTS_PRUNE_MIN {
        store::fts_every_word(conn, narrow, ids, intent, RUNG_DEPTH)?
    } else {
        store::fts(conn, q.skill, q.project, intent, RUNG_DEPTH)?
    };
    Ok(fts_hits)
}

/// What the two rungs found: the vector rung's notes and bm25's, best first.
type Hits<'a> = (&'a [(i64, f32)], &'a [(i64, f64)]);

/// Notes' pieces held, by id: `None` for a note that matched already.
type HeldPiecesOf = Vec<(i64, Option<Vec<u32>>)>;

/// A large skill's pieces held, standing for its notes in token matching: the intent's
/// pieces, and what the notes matched already matched of them (on either thread).
struct HeldMatch<'a> {
    held: &'a SkillPieces,
    query: Option<&'a tokens::Query>,
    matched: HashMap<i64, Matched>,
}

/// A semantic embedder's relevance: the cosine plus token matching (see [`TOKEN_WEIGHT`]), a
/// local model's contextual token matching alone, or a word-coverage boost (see
/// [`COVERAGE_WEIGHT`]), then the static table's second opinion, into `found.rel`; the notes it
/// scored are left in `found.loaded` (those read before taken from there). With `held`
/// pieces (only when they are all it reads: [`pieces_suffice`]) a note held there is scored
/// by them, not read (and by what it matched already, when it did).
fn semantic_relevance(
    conn: &Connection,
    rungs: &Rungs<'_>,
    p: &Prepared<'_>,
    intent: &str,
    (vec_hits, fts_hits): Hits<'_>,
    held: Option<HeldMatch<'_>>,
    found: &mut Found,
) -> Result<()> {
    let rel = &mut found.rel;
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
    // Those not `read` already (nor held as pieces), then all of them in the order of `load`.
    let mut by_id = std::mem::take(&mut found.loaded);
    // The held notes' pieces, or what they matched already (`None`).
    let (pieces, mut pre, query): (HeldPiecesOf, _, _) = match held {
        Some(HeldMatch { held, query, matched }) => {
            let pieces = load
                .iter()
                .filter(|id| !by_id.contains_key(id))
                .filter_map(|id| match matched.contains_key(id) {
                    true => Some((*id, None)),
                    false => Some((*id, Some(held.get(*id)?))),
                })
                .collect();
            (pieces, matched, query)
        }
        None => (vec![], HashMap::new(), None),
    };
    let by_pieces: std::collections::HashSet<i64> = pieces.iter().map(|(id, _)| *id).collect();
    let missing: Vec<i64> =
        load.iter().copied().filter(|id| !by_id.contains_key(id) && !by_pieces.contains(id)).collect();
    by_id.extend(load_notes(conn, p.held, &missing)?.into_iter().map(|n| (n.id, n)));
    let notes: Vec<Arc<Note>> = load.iter().filter_map(|id| by_id.remove(id)).collect();
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
        // A note scores the same read or held, matched here or on the search thread: by the
        // set of its pieces, among the same notes.
        let t_match = std::time::Instant::now();
        let owned;
        let q = match query {
            Some(q) => q,
            None => {
                owned = m.query(intent);
                &owned
            }
        };
        let to_match: Vec<(i64, crate::embed::tokens::Note<'_>)> = notes
            .iter()
            .map(|n| {
                let note = crate::embed::tokens::Note {
                    intent: &n.intent,
                    delta: &n.delta,
                    stored: n.match_pieces.as_deref(),
                    pieces: None,
                };
                (n.id, note)
            })
            .chain(pieces.iter().filter_map(|(id, p)| Some((*id, crate::embed::tokens::Note::of_pieces(p.as_ref()?)))))
            .collect();
        let refs: Vec<crate::embed::tokens::Note<'_>> = to_match.iter().map(|(_, n)| *n).collect();
        let mut ids: Vec<i64> = to_match.iter().map(|(id, _)| *id).collect();
        let mut matched = m.matched(q, &refs);
        let before = pieces.iter().filter(|(id, p)| p.is_none() && pre.contains_key(id)).count();
        for (id, _) in pieces.iter().filter(|(_, p)| p.is_none()) {
            if let Some(mm) = pre.remove(id) {
                ids.push(*id);
                matched.push(mm);
            }
        }
        for (id, s) in ids.iter().zip(crate::embed::tokens::scores_of(q, &matched)) {
            *rel.entry(*id).or_default() += TOKEN_WEIGHT * s;
        }
        tracing::trace!(
            "rank: token matching of {} notes ({} by their pieces held, {} matched before) {:?}",
            ids.len(),
            pieces.len(),
            before,
            t_match.elapsed()
        );
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
    found.loaded = notes.into_iter().map(|n| (n.id, n)).collect();
    Ok(())
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
