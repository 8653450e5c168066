//! The exact scans of small candidate sets: by the graph's int8 codes first, then exactly for
//! the best few (`scan`), from a [`Pack`] of the codes side by side for the sets recalls search
//! again (`HnswIndex::scan_packed`), and exactly over the current vectors (`exact`).

use std::collections::VecDeque;
use std::sync::Arc;

use super::{HnswIndex, Maps};
use crate::graph::{rescore_depth, Graph};
use crate::top_k;

/// A small candidate set's int8 codes side by side, for the recalls that search it again.
/// A skill's notes are scattered over the graph's whole array, so a [`scan`] waits on a
/// memory read per candidate (measured at 100k notes: 0.34–0.42 ms p50 for a 1,100-note
/// skill, the largest part of its vector rung); read from one contiguous array the same codes
/// take half of that (0.34 -> 0.16 ms p50 in the server's trace; the rest is the dot
/// products). A pack is made by a recall's search (never by a write's near-duplicate check,
/// whose candidate set changes with every write) and is used while the candidate list and
/// [`Maps::changes`] are the same, so it ranks exactly as the scan would.
///
/// A set of at most [`ROWS_MAX`] also holds its candidates' exact rows: every search of it
/// reads about a hundred rows (all of a set up to [`rescore_depth`], the best of a larger
/// one), a positioned read each, scattered over the vectors file, and those reads were a fifth
/// of a ~100-note skill's load (`perf` of the server at 100k notes). Held, they are the same
/// numbers (read once, checked against their checksums), so the pack still ranks exactly as
/// the scan would.
struct Pack {
    changes: u64,
    candidates: Vec<i64>,
    /// The candidates the graph held, in order, with their codes' scales and their codes
    /// (none in a set scored exactly: it is all rescored).
    ids: Vec<i64>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    /// The exact rows of `ids`, side by side, when the set is small enough ([`ROWS_MAX`]).
    rows: Vec<f32>,
    /// The candidates that were pending (scored exactly, as a scan does).
    pending: Vec<i64>,
}

/// Candidate sets larger than this are not packed (a set this large is a large share of the
/// index, or is searched in the graph).
const PACK_MAX: usize = 4096;
/// Candidate sets of at most this many hold their exact rows too (256 KiB at 256 dimensions):
/// the skills of a few hundred notes a workspace's loads come back to.
pub(super) const ROWS_MAX: usize = 256;
/// The bytes the packs may hold together (about thirty skills of a thousand notes at 384
/// dimensions, or about a hundred of a hundred notes with their rows at 256); the least
/// recently used go first.
const PACKS_BYTES: usize = 14 << 20;

#[derive(Default)]
pub(super) struct Packs {
    /// Least recently used first.
    held: VecDeque<Arc<Pack>>,
    bytes: usize,
    /// The bytes of the rows among them (within [`ROWS_BYTES`]).
    rows_bytes: usize,
    /// The sets searched once, not packed yet (their [`set_key`], oldest first): a set is
    /// packed when it is searched again. A pack costs more than the scan it replaces, and
    /// many skills are loaded once in a sidecar's life.
    seen: VecDeque<u64>,
}

/// The bytes of exact rows the packs may hold together (about a hundred sets of a hundred
/// candidates at 256 dimensions: the skills a workspace loads, not every skill of a large
/// store, so that the sidecar stays within its footprint; 4 MiB held forty, and the bench's
/// loads of a hundred skills at random read rows from the file in three loads of five); the
/// least recently used pack that holds rows goes first.
const ROWS_BYTES: usize = 10 << 20;

/// Sets remembered as searched once ([`Packs::seen`]).
const SEEN_MAX: usize = 1024;

/// A candidate set's key in [`Packs::seen`]: a hash of its ids and of the maps' count of
/// changes (a set seen before a change is seen anew).
fn set_key(changes: u64, ids: &[i64]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (changes, ids).hash(&mut h);
    h.finish()
}

impl Pack {
    /// The pack of `ids` (more than [`rescore_depth`] of them), as [`scan`] would score them;
    /// `None` when a row to hold does not read back (the scan then says the graph is damaged).
    fn new(maps: &Maps, g: &Graph, ids: &[i64]) -> Option<Pack> {
        let with_rows = ids.len() <= ROWS_MAX;
        let mut p = Pack {
            changes: maps.changes,
            candidates: ids.to_vec(),
            ids: Vec::with_capacity(ids.len()),
            scales: Vec::with_capacity(ids.len()),
            codes: Vec::with_capacity(ids.len() * g.dim()),
            rows: Vec::with_capacity(if with_rows { ids.len() * g.dim() } else { 0 }),
            pending: vec![],
        };
        let mut row = vec![0.0; g.dim()];
        // The candidates a scan would score from the graph, and the ones it would score exactly.
        for &id in ids {
            match maps.slot_of.get(&id) {
                Some(&slot) if (slot as usize) < g.len() => {
                    let (scale, codes) = g.codes(slot);
                    p.ids.push(id);
                    p.scales.push(scale);
                    p.codes.extend_from_slice(codes);
                    if with_rows {
                        g.read_row(slot, &mut row).then_some(())?;
                        p.rows.extend_from_slice(&row);
                    }
                }
                _ if maps.own.contains_key(&id) => p.pending.push(id),
                _ => {}
            }
        }
        Some(p)
    }

    /// The pack of `ids` (at most [`rescore_depth`] of them, at most [`ROWS_MAX`]), as
    /// [`exact`] would score them all: each one's rows, or its pending vector; `None` as for
    /// [`Pack::new`].
    fn exact(maps: &Maps, g: &Graph, ids: &[i64]) -> Option<Pack> {
        let mut p = Pack {
            changes: maps.changes,
            candidates: ids.to_vec(),
            ids: Vec::with_capacity(ids.len()),
            scales: vec![],
            codes: vec![],
            rows: Vec::with_capacity(ids.len() * g.dim()),
            pending: vec![],
        };
        let mut row = vec![0.0; g.dim()];
        // [`Maps::cosine`]'s order: a pending vector first, then the graph's row.
        for &id in ids {
            if maps.own.contains_key(&id) {
                p.pending.push(id);
                continue;
            }
            if let Some(&slot) = maps.slot_of.get(&id).filter(|s| (**s as usize) < g.len()) {
                g.read_row(slot, &mut row).then_some(())?;
                p.ids.push(id);
                p.rows.extend_from_slice(&row);
            }
        }
        Some(p)
    }

    fn bytes(&self) -> usize {
        self.candidates.len() * 8
            + self.ids.len() * 12
            + self.codes.len()
            + self.rows.len() * 4
            + self.pending.len() * 8
    }

    /// The held row of the `j`-th candidate packed.
    fn row(&self, j: usize, dim: usize) -> &[f32] {
        &self.rows[j * dim..(j + 1) * dim]
    }

    /// What [`scan`] (or, for a set packed by [`Pack::exact`], [`exact`]) answers for the
    /// candidates packed, from the codes and rows side by side.
    fn scan(&self, maps: &Maps, g: &Graph, query: &[f32], k: usize) -> Vec<(i64, f32)> {
        let dim = query.len();
        if self.codes.is_empty() && !self.rows.is_empty() {
            let mut scored: Vec<(i64, f32)> =
                self.ids.iter().enumerate().map(|(j, &id)| (id, crate::fast_dot(query, self.row(j, dim)))).collect();
            scored.extend(exact(maps, Some(g), query, self.pending.iter().copied(), k));
            top_k(&mut scored, k);
            return scored;
        }
        let want = rescore_depth(k);
        let mut approx: Vec<(f32, usize)> = self
            .scales
            .iter()
            .zip(self.codes.chunks_exact(query.len().max(1)))
            .enumerate()
            // As [`Graph::approx_cosine`] computes it, rounding included.
            .map(|(j, (scale, codes))| (1.0 - (1.0 - scale * crate::graph::dot_i8(query, codes)), j))
            .collect();
        if approx.len() > want {
            approx.select_nth_unstable_by(want - 1, |a, b| b.0.total_cmp(&a.0));
            approx.truncate(want);
        }
        let mut scored: Vec<(i64, f32)> = Vec::with_capacity(approx.len() + self.pending.len());
        let mut row = vec![];
        for &(_, j) in &approx {
            let id = self.ids[j];
            if !self.rows.is_empty() && !maps.own.contains_key(&id) {
                scored.push((id, crate::fast_dot(query, self.row(j, dim))));
            } else if let Some(c) = maps.cosine(Some(g), query, id, &mut row) {
                scored.push((id, c));
            }
        }
        scored.extend(exact(maps, Some(g), query, self.pending.iter().copied(), k));
        top_k(&mut scored, k);
        scored
    }
}

impl HnswIndex {
    /// [`scan`], from a [`Pack`] of the candidates when one is held (or made, with `pack`).
    pub(super) fn scan_packed(
        &self,
        maps: &Maps,
        graph: Option<&Graph>,
        query: &[f32],
        ids: &[i64],
        k: usize,
        pack: bool,
    ) -> Vec<(i64, f32)> {
        let want = rescore_depth(k);
        // A set scored all exactly is packed for its rows alone.
        let all_exact = ids.len() <= want;
        let g = match graph {
            Some(g) if g.dim() == query.len() && !ids.is_empty() && ids.len() <= PACK_MAX => g,
            _ => return scan(maps, graph, query, ids, k),
        };
        if all_exact && ids.len() > ROWS_MAX {
            return scan(maps, graph, query, ids, k);
        }
        let mut packs = self.shared.packs.lock().unwrap_or_else(|e| e.into_inner());
        let held = packs.held.iter().position(|p| p.changes == maps.changes && p.candidates == ids);
        let p = match held {
            Some(i) => {
                let p = packs.held.remove(i).expect("found above");
                packs.held.push_back(p.clone());
                p
            }
            None if pack => {
                let key = set_key(maps.changes, ids);
                if let Some(i) = packs.seen.iter().position(|k| *k == key) {
                    packs.seen.remove(i);
                } else {
                    if packs.seen.len() >= SEEN_MAX {
                        packs.seen.pop_front();
                    }
                    packs.seen.push_back(key);
                    drop(packs);
                    return scan(maps, graph, query, ids, k);
                }
                drop(packs);
                let made = if all_exact { Pack::exact(maps, g, ids) } else { Pack::new(maps, g, ids) };
                let Some(p) = made.map(Arc::new) else { return scan(maps, graph, query, ids, k) };
                let mut packs = self.shared.packs.lock().unwrap_or_else(|e| e.into_inner());
                // A pack of another count can never be used again.
                packs.held.retain(|q| q.changes == maps.changes && q.candidates != ids);
                packs.held.push_back(p.clone());
                packs.bytes = packs.held.iter().map(|q| q.bytes()).sum();
                packs.rows_bytes = packs.held.iter().map(|q| q.rows.len() * 4).sum();
                while (packs.bytes > PACKS_BYTES || packs.rows_bytes > ROWS_BYTES) && packs.held.len() > 1 {
                    let over_rows = packs.bytes <= PACKS_BYTES;
                    let i = if over_rows { packs.held.iter().position(|q| !q.rows.is_empty()).unwrap_or(0) } else { 0 };
                    let gone = packs.held.remove(i).expect("more than one");
                    packs.bytes -= gone.bytes();
                    packs.rows_bytes -= gone.rows.len() * 4;
                }
                p
            }
            None => {
                drop(packs);
                return scan(maps, graph, query, ids, k);
            }
        };
        p.scan(maps, g, query, k)
    }
}

/// The exact top `k` of `ids` for `query`. When the graph holds them, a first pass ranks them
/// by their int8 codes and only the best [`rescore_depth`] are scored exactly, from their
/// rows: a skill's few thousand notes are scattered over the whole array, so the scan is
/// bound by memory reads, and the codes are a quarter of the float rows (which are not in
/// memory at all since issue 49; measured at 100k notes: the exact scan of a 1k-note skill
/// was a third of its recall's vector rung).
fn scan(maps: &Maps, graph: Option<&Graph>, query: &[f32], ids: &[i64], k: usize) -> Vec<(i64, f32)> {
    let want = rescore_depth(k);
    let g = match graph {
        Some(g) if g.dim() == query.len() && ids.len() > want => g,
        _ => return exact(maps, graph, query, ids.iter().copied(), k),
    };
    let mut slots: Vec<(i64, u32)> = Vec::with_capacity(ids.len());
    let mut pending = vec![];
    for &id in ids {
        match maps.slot_of.get(&id) {
            Some(&slot) if (slot as usize) < g.len() => slots.push((id, slot)),
            _ if maps.own.contains_key(&id) => pending.push(id),
            _ => {}
        }
    }
    // Blocks and rows requested a few candidates ahead: the reads overlap instead of waiting
    // one after the other.
    let mut approx: Vec<(f32, i64, u32)> = Vec::with_capacity(slots.len());
    for (j, &(id, slot)) in slots.iter().enumerate() {
        if let Some(&(_, next)) = slots.get(j + SCAN_AHEAD) {
            g.prefetch_block(next);
        }
        approx.push((g.approx_cosine(query, slot), id, slot));
    }
    if approx.len() > want {
        approx.select_nth_unstable_by(want - 1, |a, b| b.0.total_cmp(&a.0));
        approx.truncate(want);
    }
    let mut scored: Vec<(i64, f32)> = Vec::with_capacity(approx.len() + pending.len());
    let mut row = vec![0.0; g.dim()];
    for &(approx, id, slot) in &approx {
        scored.push((id, g.exact_cosine(query, slot, &mut row).unwrap_or(approx)));
    }
    scored.extend(exact(maps, graph, query, pending.into_iter(), k));
    top_k(&mut scored, k);
    scored
}

/// Candidates whose memory [`scan`] requests ahead of the one it scores.
const SCAN_AHEAD: usize = 6;

/// Exact cosine of `query` against the current vectors of `ids`, best `k`.
pub(super) fn exact(
    maps: &Maps,
    graph: Option<&Graph>,
    query: &[f32],
    ids: impl Iterator<Item = i64>,
    k: usize,
) -> Vec<(i64, f32)> {
    let mut row = vec![];
    let mut scored: Vec<(i64, f32)> =
        ids.filter_map(|id| Some((id, maps.cosine(graph, query, id, &mut row)?))).collect();
    top_k(&mut scored, k);
    scored
}
