//! Token matching: each word piece of an intent looks for its closest word piece in a note,
//! by the static table's rows ([`super::static_table`]), and a note scores the IDF-weighted
//! mean of those best matches.
//!
//! A note's vector averages its word pieces, so one strong match ("presign" for "presigned
//! download link") is diluted by the rest of the lesson; matching piece by piece keeps it
//! (the late interaction of ColBERT, here on the table's frozen token vectors). A piece that
//! most of the notes ranked contain (a skill's own name, "use", "file") says little about
//! which note is meant, so each piece weighs its bm25 IDF among those notes:
//! `ln(1 + (N − df + 0.5) / (df + 0.5))`. Recall adds this score to the cosine when the
//! static table is the embedder (`memory::recall::TOKEN_WEIGHT`).
//!
//! A note's pieces are stored with it when it is written ([`TokenMatch::stored`]), so that a
//! recall reads them with the note instead of tokenizing it; those of a note without them
//! (written by another door, or before they were stored) are kept by the hash of its text (the
//! same notes come back recall after recall of a skill). The cosine of two pieces is the
//! cosine of their int8 rows.

use std::sync::Arc;

use super::cache::{key, ByText};
use super::static_table::StaticEmbedder;

/// Notes whose pieces are kept when they were not stored with the note (written by another
/// door, or before they were stored; see [`TokenMatch::stored`]): about 40 pieces (160 bytes)
/// and the map's entry a note, about 7 MB at most, used only as far as such notes are ranked.
/// Tokenizing the ~60 notes a recall ranks costs more than the rest of token matching.
pub const NOTES_HELD: usize = 32768;

/// Token matching over a static table.
pub struct TokenMatch {
    table: Arc<StaticEmbedder>,
    held: ByText<Arc<[u32]>>,
    /// The first bytes of the pieces this table stores ([`TokenMatch::stored`]).
    tag: [u8; 4],
}

impl TokenMatch {
    /// Matching by `table`'s rows.
    pub fn new(table: Arc<StaticEmbedder>) -> TokenMatch {
        use super::Embedder;
        let k = key(table.model_id()).to_le_bytes();
        TokenMatch { table, held: ByText::new(NOTES_HELD), tag: [k[0], k[1], k[2], k[3]] }
    }

    /// The pieces of a note's text ([`super::note_text`]) as the store keeps them with the
    /// note: four bytes that name the table (a hash of its model id), then each piece's row as
    /// two bytes, little-endian. `None` for a table of more than 65,536 rows.
    pub fn stored(&self, text: &str) -> Option<Vec<u8>> {
        if !self.stores() {
            return None;
        }
        let ids = self.table.match_ids(text);
        let mut out = Vec::with_capacity(4 + 2 * ids.len());
        out.extend_from_slice(&self.tag);
        for id in ids {
            out.extend_from_slice(&(id as u16).to_le_bytes());
        }
        Some(out)
    }

    /// The four bytes [`TokenMatch::stored`] starts a note's pieces with: they name this table.
    pub fn tag(&self) -> [u8; 4] {
        self.tag
    }

    /// Whether [`TokenMatch::stored`] makes pieces (the table's rows fit in two bytes).
    pub fn stores(&self) -> bool {
        self.table.table().vocab.len() <= 1 << 16
    }

    /// The pieces of a [`TokenMatch::stored`] blob; `None` when it is another table's or does
    /// not read (the note's text is tokenized instead).
    fn read(&self, blob: &[u8]) -> Option<Arc<[u32]>> {
        let rest = blob.strip_prefix(&self.tag[..])?;
        if rest.len() % 2 != 0 {
            return None;
        }
        let rows = self.table.table().vocab.len() as u32;
        let ids: Vec<u32> = rest.chunks_exact(2).map(|b| u32::from(u16::from_le_bytes([b[0], b[1]]))).collect();
        ids.iter().all(|id| *id < rows).then(|| ids.into())
    }

    /// The table's model id (matching applies to the notes ranked by that embedder).
    pub fn model_id(&self) -> &str {
        use super::Embedder;
        self.table.model_id()
    }

    /// The pieces of each note: those given ([`Note::pieces`]), else those stored with it
    /// ([`TokenMatch::stored`]), else those held by its text, else its text tokenized (and
    /// held).
    fn pieces<'a>(&self, notes: &[Note<'a>]) -> Vec<NoteIds<'a>> {
        let rows = self.table.table().vocab.len() as u32;
        let given = |n: &Note<'a>| n.pieces.filter(|p| p.iter().all(|id| *id < rows)).map(NoteIds::Given);
        let mut out: Vec<Option<NoteIds<'a>>> =
            notes.iter().map(|n| given(n).or_else(|| n.stored.and_then(|b| self.read(b)).map(NoteIds::Held))).collect();
        let unread: Vec<usize> = (0..notes.len()).filter(|i| out[*i].is_none()).collect();
        if unread.is_empty() {
            return out.into_iter().map(|p| p.unwrap_or(NoteIds::Given(&[]))).collect();
        }
        // Their texts are made only here: a note read with its pieces needs none.
        let texts: Vec<String> = unread.iter().map(|i| super::note_text(notes[*i].intent, notes[*i].delta)).collect();
        let keys: Vec<u64> = texts.iter().map(|t| key(t)).collect();
        let mut new = vec![];
        for (((i, k), text), held) in unread.iter().zip(&keys).zip(&texts).zip(self.held.get_many(&keys)) {
            out[*i] = Some(NoteIds::Held(held.unwrap_or_else(|| {
                let ids: Arc<[u32]> = self.table.match_ids(text).into();
                new.push((*k, ids.clone()));
                ids
            })));
        }
        tracing::trace!(
            "token matching: {} of {} notes without stored pieces, {} tokenized (not held)",
            unread.len(),
            notes.len(),
            new.len()
        );
        self.held.insert_many(new);
        out.into_iter().map(|p| p.unwrap_or(NoteIds::Given(&[]))).collect()
    }

    /// The score of each of `notes` for `query`, in order: for each piece of the query, the
    /// cosine of its closest piece in the note, weighted by the piece's IDF among `notes`,
    /// averaged. 0 for a note or a query without pieces.
    pub fn scores(&self, query: &str, notes: &[Note<'_>]) -> Vec<f32> {
        let q = self.query(query);
        scores_of(&q, &self.matched(&q, notes))
    }

    /// A query's pieces, to match notes against ([`TokenMatch::matched`]).
    pub fn query(&self, text: &str) -> Query {
        let ids = self.table.match_ids(text);
        let table = self.table.table();
        let inv = ids.iter().map(|id| table.inv_norm(*id)).collect();
        Query { ids, inv }
    }

    /// What each of `notes` matches of `q`, in order: the part of [`TokenMatch::scores`] that
    /// is each note's own, so that notes matched apart (on two threads) score as if together
    /// ([`scores_of`]).
    pub fn matched(&self, q: &Query, notes: &[Note<'_>]) -> Vec<Matched> {
        if q.ids.is_empty() {
            return vec![Matched::default(); notes.len()];
        }
        let pieces = self.pieces(notes);
        let table = self.table.table();
        // Two int8 rows: an exact integer dot product, times the rows' inverse lengths. The
        // query's rows are widened to i16 once; each note piece's row is then read once for
        // all of them ([`dots_i8`]).
        let dim = table.dim;
        let mut wide: Vec<i16> = Vec::with_capacity(q.ids.len() * dim);
        for id in &q.ids {
            let row = table.row_i8(*id);
            wide.extend(row.iter().map(|x| i16::from(*x)));
            wide.resize(wide.len() + dim - row.len(), 0);
        }
        let mut dots = vec![0i32; q.ids.len()];
        best_matches_rows(
            &q.ids,
            &pieces,
            |t, out| {
                dots_i8(&wide, dim, table.row_i8(t), &mut dots);
                let inv_t = table.inv_norm(t);
                for ((o, d), inv_q) in out.iter_mut().zip(&dots).zip(&q.inv) {
                    *o = *d as f32 * inv_q * inv_t;
                }
            },
            |t| table.prefetch_row(t),
        )
    }
}

/// A note's pieces as matching reads them: borrowed from the caller, or read or held.
enum NoteIds<'a> {
    Given(&'a [u32]),
    Held(Arc<[u32]>),
}

impl AsRef<[u32]> for NoteIds<'_> {
    fn as_ref(&self) -> &[u32] {
        match self {
            NoteIds::Given(p) => p,
            NoteIds::Held(p) => p,
        }
    }
}

/// A query's pieces and their rows' inverse lengths ([`TokenMatch::query`]).
#[derive(Debug, Clone, Default)]
pub struct Query {
    ids: Vec<u32>,
    inv: Vec<f32>,
}

/// What a note matches of a query ([`TokenMatch::matched`]): for each query piece, the
/// cosine of the note's closest piece (none for a note without pieces), and whether the
/// note holds that piece (its IDF counts the notes that do).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matched {
    best: Vec<f32>,
    holds: Vec<bool>,
}

/// The scores of notes that matched `q` as `matched` ([`TokenMatch::matched`]), each
/// query piece weighted by its IDF among them: [`TokenMatch::scores`] of the same notes.
pub fn scores_of(q: &Query, matched: &[Matched]) -> Vec<f32> {
    if q.ids.is_empty() {
        return vec![0.0; matched.len()];
    }
    let n = matched.len() as f32;
    let weights: Vec<f32> = (0..q.ids.len())
        .map(|j| {
            let df = matched.iter().filter(|m| m.holds.get(j).copied().unwrap_or(false)).count() as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let total: f32 = weights.iter().sum();
    if total <= 0.0 {
        return vec![0.0; matched.len()];
    }
    matched
        .iter()
        .map(|m| {
            if m.best.is_empty() {
                return 0.0;
            }
            m.best.iter().zip(&weights).map(|(b, w)| b * w).sum::<f32>() / total
        })
        .collect()
}

/// A note as token matching sees it: its intent and lesson (its text is
/// [`super::note_text`] of them) and the pieces stored with it, if any
/// ([`TokenMatch::stored`]).
#[derive(Debug, Clone, Copy)]
pub struct Note<'a> {
    pub intent: &'a str,
    pub delta: &'a str,
    pub stored: Option<&'a [u8]>,
    /// Its pieces as [`TokenMatch::stored`] made them (this table's rows), read already:
    /// used first. A note scores by the set of its pieces, so they may be in any order and
    /// each once.
    pub pieces: Option<&'a [u32]>,
}

impl<'a> Note<'a> {
    /// A note of one text (no intent), its pieces tokenized or held.
    pub fn text(text: &'a str) -> Note<'a> {
        Note { intent: "", delta: text, stored: None, pieces: None }
    }

    /// A note known by its pieces alone ([`Note::pieces`]).
    pub fn of_pieces(pieces: &'a [u32]) -> Note<'a> {
        Note { pieces: Some(pieces), ..Note::text("") }
    }
}

/// How many distinct pieces ahead [`score_pieces`] requests a row: a recall's ~2,000 pieces
/// have their rows scattered over the table's megabytes, and each read would otherwise wait
/// for memory in turn.
const ROWS_AHEAD: usize = 4;

/// [`TokenMatch::matched`] over piece ids, with `cos(j, t)` the similarity of the query's
/// `j`-th piece and piece `t`; `ahead(t)` requests what `cos` will read of piece `t`.
#[cfg(test)]
fn best_matches(q: &[u32], notes: &[Arc<[u32]>], cos: impl Fn(usize, u32) -> f32, ahead: impl Fn(u32)) -> Vec<Matched> {
    best_matches_rows(
        q,
        notes,
        |t, out| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = cos(j, t);
            }
        },
        ahead,
    )
}

/// [`best_matches`] with `cos_row(t, out)` writing the similarity of piece `t` to each query
/// piece into `out` (one a query piece).
fn best_matches_rows<P: AsRef<[u32]>>(
    q: &[u32],
    notes: &[P],
    cos_row: impl FnMut(u32, &mut [f32]),
    ahead: impl Fn(u32),
) -> Vec<Matched> {
    // The cosines of a note piece to every query piece, computed once per distinct piece and
    // found by the piece's id (ids are a vocabulary's rows: a dense table beats hashing the
    // ~2,000 pieces of a recall's notes). The table is the thread's own, kept from call to
    // call: an entry counts only when it bears this call's stamp, so no call clears it (a
    // fresh table of the vocabulary's 30,000 rows was 120 KB to fill at every call, four a
    // large skill's load).
    let top = notes.iter().flat_map(|p| p.as_ref().iter()).max().map_or(0, |m| *m as usize + 1);
    ROW_OF.with(|cell| {
        let mut table = cell.borrow_mut();
        let stamp = table.next_stamp(top);
        let row_of = &mut table.entries;
        let mut distinct: Vec<u32> = vec![];
        for t in notes.iter().flat_map(|p| p.as_ref().iter()) {
            let e = &mut row_of[*t as usize];
            if e.0 != stamp {
                *e = (stamp, distinct.len() as u32);
                distinct.push(*t);
            }
        }
        matches_of(q, notes, &distinct, |t| row_of[t as usize].1, cos_row, &ahead)
    })
}

/// A piece's row among a call's distinct pieces, by piece id, stamped with the call that set
/// it ([`best_matches`]).
#[derive(Default)]
struct RowOf {
    entries: Vec<(u32, u32)>,
    stamp: u32,
}

impl RowOf {
    /// A stamp no entry bears, with room for ids below `top`.
    fn next_stamp(&mut self, top: usize) -> u32 {
        if self.entries.len() < top {
            self.entries.resize(top, (0, 0));
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: old stamps could come back; start over.
            self.entries.fill((0, 0));
            self.stamp = 1;
        }
        self.stamp
    }
}

thread_local! {
    static ROW_OF: std::cell::RefCell<RowOf> = std::cell::RefCell::new(RowOf::default());
}

/// [`best_matches`] once the distinct pieces are known, `row_of(t)` the row of piece `t`.
fn matches_of<P: AsRef<[u32]>>(
    q: &[u32],
    notes: &[P],
    distinct: &[u32],
    row_of: impl Fn(u32) -> u32,
    mut cos_row: impl FnMut(u32, &mut [f32]),
    ahead: impl Fn(u32),
) -> Vec<Matched> {
    let nq = q.len();
    let mut rows: Vec<f32> = vec![0.0; distinct.len() * nq];
    // Which query pieces each distinct piece is (a bit a query piece, for the first 64): a
    // note holds a query piece when one of its pieces is it.
    let mut is_query: Vec<u64> = vec![0; distinct.len()];
    for &t in distinct.iter().take(ROWS_AHEAD) {
        ahead(t);
    }
    for (i, &t) in distinct.iter().enumerate() {
        if let Some(&next) = distinct.get(i + ROWS_AHEAD) {
            ahead(next);
        }
        cos_row(t, &mut rows[i * nq..(i + 1) * nq]);
        for (j, qt) in q.iter().enumerate().take(64) {
            if *qt == t {
                is_query[i] |= 1 << j;
            }
        }
    }
    notes
        .iter()
        .map(|p| {
            let p = p.as_ref();
            let mut held = 0u64;
            let mut best = vec![f32::NEG_INFINITY; if p.is_empty() { 0 } else { nq }];
            for t in p.iter() {
                let at = row_of(*t) as usize;
                held |= is_query[at];
                for (b, c) in best.iter_mut().zip(&rows[at * nq..(at + 1) * nq]) {
                    *b = b.max(*c);
                }
            }
            let holds =
                q.iter().enumerate().map(|(j, t)| if j < 64 { held & (1 << j) != 0 } else { p.contains(t) }).collect();
            Matched { best, holds }
        })
        .collect()
}

/// [`TokenMatch::scores`] over piece ids (see [`best_matches`]).
#[cfg(test)]
fn score_pieces(q: &[u32], notes: &[Arc<[u32]>], cos: impl Fn(usize, u32) -> f32, ahead: impl Fn(u32)) -> Vec<f32> {
    let query = Query { ids: q.to_vec(), inv: vec![] };
    if q.is_empty() {
        return vec![0.0; notes.len()];
    }
    scores_of(&query, &best_matches(q, notes, cos, ahead))
}

/// The bm25 IDF of each query piece among `notes` (each a list of piece ids):
/// `ln(1 + (N − df + 0.5) / (df + 0.5))`.
fn idf(q: &[u32], notes: &[&[u32]]) -> Vec<f32> {
    let n = notes.len() as f32;
    q.iter()
        .map(|t| {
            let df = notes.iter().filter(|p| p.contains(t)).count() as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect()
}

/// Token matching over a model's contextual pieces ([`super::Pieces`]): each piece of the
/// query finds its closest piece in the note (the cosine of their vectors, which depend on
/// the text around them), and the note scores the mean of those best cosines, each weighted
/// by the query piece's IDF among `notes`. 0 for a note or a query without pieces, or pieces
/// of another dimension.
pub fn score_contextual(query: &super::Pieces, notes: &[&super::Pieces]) -> Vec<f32> {
    let nq = query.ids.len();
    if nq == 0 {
        return vec![0.0; notes.len()];
    }
    let ids: Vec<&[u32]> = notes.iter().map(|p| &p.ids[..]).collect();
    let weights = idf(&query.ids, &ids);
    let total: f32 = weights.iter().sum();
    let mut best = vec![0f32; nq];
    notes
        .iter()
        .map(|p| {
            if p.ids.is_empty() || p.dim != query.dim || total <= 0.0 {
                return 0.0;
            }
            best.iter_mut().for_each(|b| *b = f32::NEG_INFINITY);
            for i in 0..p.ids.len() {
                let (row, scale) = (p.row(i), p.scales[i]);
                for (j, b) in best.iter_mut().enumerate() {
                    // Both sides int8: an exact integer dot product, then the two scales.
                    *b = b.max(dot_i8_i8(query.row(j), row) as f32 * query.scales[j] * scale);
                }
            }
            best.iter().zip(&weights).map(|(b, w)| b * w).sum::<f32>() / total
        })
        .collect()
}

/// `a · b` over the common prefix, exactly (int8 values, at most 2¹⁶ of them).
pub fn dot_i8_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { avx2_dot_i8_i8(a, b) };
        }
    }
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_dot_i8_i8(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    // SAFETY (both loads): i + 16 <= n keeps every read inside both slices.
    while i + 16 <= n {
        let x = _mm256_cvtepi8_epi16(_mm_loadu_si128(pa.add(i).cast()));
        let y = _mm256_cvtepi8_epi16(_mm_loadu_si128(pb.add(i).cast()));
        // Pairs of i16 products summed into i32 lanes: |x·y| ≤ 2¹⁴, a pair ≤ 2¹⁵.
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
        i += 16;
    }
    let mut lanes = [0i32; 8];
    _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc);
    let tail: i32 = a[i..n].iter().zip(&b[i..n]).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
    lanes.iter().sum::<i32>() + tail
}

/// `t · q_j` for each query row `q_j` (`wide` holds them widened to i16, `dim` each), exactly,
/// into `out`; `t` beyond `dim` is ignored and short of it counts as zeros.
pub fn dots_i8(wide: &[i16], dim: usize, t: &[i8], out: &mut [i32]) {
    let n = t.len().min(dim);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { avx2_dots_i8(wide, dim, &t[..n], out) };
            return;
        }
    }
    for (o, q) in out.iter_mut().zip(wide.chunks_exact(dim.max(1))) {
        *o = t[..n].iter().zip(q).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
    }
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_dots_i8(wide: &[i16], dim: usize, t: &[i8], out: &mut [i32]) {
    use std::arch::x86_64::*;
    const BLOCK: usize = 16;
    let n = t.len();
    let chunks = n / 16;
    let rows = out.len().min(wide.len().checked_div(dim).unwrap_or(0));
    out.fill(0);
    // `t` widened a block of 16 chunks (256 values) at a time, then every query row against
    // that block: each chunk's 16 products summed in pairs into i32 lanes (|x·y| ≤ 2¹⁴).
    let mut tw = [_mm256_setzero_si256(); BLOCK];
    let mut c0 = 0;
    while c0 < chunks {
        let c1 = (c0 + BLOCK).min(chunks);
        for c in c0..c1 {
            // SAFETY: c < chunks keeps the 16 bytes inside `t`.
            tw[c - c0] = _mm256_cvtepi8_epi16(_mm_loadu_si128(t.as_ptr().add(16 * c).cast()));
        }
        for (j, o) in out.iter_mut().enumerate().take(rows) {
            let q = wide.as_ptr().add(j * dim);
            let mut acc = _mm256_setzero_si256();
            for c in c0..c1 {
                // SAFETY: 16 * c + 16 <= n <= dim keeps the read inside row j of `wide`.
                let y = _mm256_loadu_si256(q.add(16 * c).cast());
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(tw[c - c0], y));
            }
            let s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
            *o += _mm_cvtsi128_si32(s);
        }
        c0 = c1;
    }
    for (j, o) in out.iter_mut().enumerate().take(rows) {
        let q = &wide[j * dim..j * dim + n];
        *o += t[16 * chunks..].iter().zip(&q[16 * chunks..]).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum::<i32>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces are equal or not: cosine 1 or 0.
    fn exact(q: &[u32]) -> impl Fn(usize, u32) -> f32 + '_ {
        move |j, t| if q[j] == t { 1.0 } else { 0.0 }
    }

    /// The thread's table of rows is kept from call to call: each call's matches are those a
    /// fresh table gives, whatever calls came before it, across the stamp's wrap too.
    #[test]
    fn matches_do_not_depend_on_the_calls_before() {
        const Q: [u32; 3] = [9, 1, 2];
        fn cos(j: usize, t: u32) -> f32 {
            1.0 / (1.0 + (Q[j] as f32 - t as f32).abs())
        }
        let lists: Vec<Vec<Arc<[u32]>>> = vec![
            vec![vec![5, 9].into(), vec![1].into()],
            vec![vec![9, 2, 7].into()],
            vec![vec![1, 2].into(), vec![3].into(), vec![9].into(), vec![].into()],
            vec![],
        ];
        let fresh = |notes: &Vec<Arc<[u32]>>| {
            let notes = notes.clone();
            std::thread::spawn(move || best_matches(&Q, &notes, cos, |_| {})).join().unwrap()
        };
        for notes in lists.iter().chain(&lists) {
            assert_eq!(best_matches(&Q, notes, cos, |_| {}), fresh(notes), "{notes:?}");
        }
        ROW_OF.with(|c| c.borrow_mut().stamp = u32::MAX - 1);
        for notes in lists.iter().chain(&lists) {
            assert_eq!(best_matches(&Q, notes, cos, |_| {}), fresh(notes), "{notes:?} across the wrap");
        }
    }

    #[test]
    fn scores_by_idf_weighted_best_matches() {
        let notes: Vec<Arc<[u32]>> = vec![vec![1, 2, 3].into(), vec![1, 4].into(), vec![].into(), vec![1, 2].into()];
        let idf = |df: f32| (1.0 + (4.0 - df + 0.5) / (df + 0.5)).ln();
        let (w1, w2, w4) = (idf(3.0), idf(2.0), idf(1.0));
        // (query, expected score of each note)
        let cases: Vec<(Vec<u32>, Vec<f32>)> = vec![
            (vec![1], vec![1.0, 1.0, 0.0, 1.0]),
            (vec![9], vec![0.0, 0.0, 0.0, 0.0]),
            (vec![], vec![0.0, 0.0, 0.0, 0.0]),
            // A rare piece counts more than a common one.
            (vec![1, 4], vec![w1 / (w1 + w4), 1.0, 0.0, w1 / (w1 + w4)]),
            (vec![2, 4], vec![w2 / (w2 + w4), w4 / (w2 + w4), 0.0, w2 / (w2 + w4)]),
            // A repeated query piece counts each time.
            (vec![2, 2, 4], vec![2.0 * w2 / (2.0 * w2 + w4), w4 / (2.0 * w2 + w4), 0.0, 2.0 * w2 / (2.0 * w2 + w4)]),
        ];
        for (q, want) in cases {
            let got = score_pieces(&q, &notes, exact(&q), |_| {});
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "query {q:?}: {got:?} want {want:?}");
            }
        }
    }

    /// Unit rows along axes: piece `a` is axis `a % dim`.
    fn axes(dim: usize, ids: &[u32]) -> super::super::Pieces {
        let mut rows = vec![0f32; ids.len() * dim];
        for (i, id) in ids.iter().enumerate() {
            rows[i * dim + *id as usize % dim] = 1.0;
        }
        super::super::Pieces::from_rows(dim, ids.to_vec(), &rows)
    }

    #[test]
    fn contextual_pieces_score_like_the_static_ones() {
        let notes = [axes(4, &[1, 2, 3]), axes(4, &[1, 0]), axes(4, &[]), axes(4, &[1, 2])];
        let refs: Vec<&super::super::Pieces> = notes.iter().collect();
        let as_ids: Vec<Arc<[u32]>> = notes.iter().map(|p| p.ids.clone().into()).collect();
        for q in [vec![1u32], vec![1, 0], vec![2, 0], vec![2, 2, 0], vec![]] {
            let got = score_contextual(&axes(4, &q), &refs);
            let want = score_pieces(&q, &as_ids, exact(&q), |_| {});
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "query {q:?}: {got:?} want {want:?}");
            }
        }
        // Another dimension scores nothing.
        assert_eq!(score_contextual(&axes(4, &[1]), &[&axes(3, &[1])]), vec![0.0]);
    }

    #[test]
    fn pieces_blobs_round_trip_and_bad_ones_are_refused() {
        let p = super::super::Pieces::from_rows(3, vec![7, 9], &[0.6, 0.8, 0.0, -1.0, 0.0, 0.0]);
        assert_eq!(p.rows, vec![95, 127, 0, -127, 0, 0]);
        let b = p.to_blob();
        assert_eq!(super::super::Pieces::from_blob(&b), Some(p.clone()));
        let empty = super::super::Pieces::from_rows(3, vec![], &[]);
        assert_eq!(super::super::Pieces::from_blob(&empty.to_blob()), Some(empty));
        // (blob, why it is refused)
        let mut dim0 = b.clone();
        dim0[..4].copy_from_slice(&0u32.to_le_bytes());
        let mut huge = b.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![], "empty"),
            (b[..7].to_vec(), "no header"),
            (b[..b.len() - 1].to_vec(), "a row cut short"),
            ([b.clone(), vec![0]].concat(), "a byte too many"),
            (dim0, "dimension 0"),
            (huge, "a count past the end"),
        ];
        for (blob, why) in cases {
            assert_eq!(super::super::Pieces::from_blob(&blob), None, "{why}");
        }
    }

    #[test]
    fn int8_dot_products_are_exact() {
        // A fixed pseudo-random walk over the whole int8 range, and the extremes.
        let walk: Vec<i8> = (0..400u32).map(|k| (k.wrapping_mul(2_654_435_761) >> 24) as u8 as i8).collect();
        let rev: Vec<i8> = walk.iter().rev().copied().collect();
        let (max, min) = (vec![127i8; 400], vec![-128i8; 400]);
        let naive = naive_dot;
        // (a, b) over prefixes of several lengths, around the 16-wide steps
        for (a, b) in [(&walk, &rev), (&walk, &walk), (&max, &max), (&min, &min), (&max, &min)] {
            for n in [0, 1, 15, 16, 17, 31, 32, 33, 255, 384, 385, 400] {
                assert_eq!(dot_i8_i8(&a[..n], &b[..n]), naive(&a[..n], &b[..n]), "length {n}");
            }
            // Unequal lengths: the common prefix.
            assert_eq!(dot_i8_i8(&a[..40], &b[..23]), naive(&a[..23], &b[..23]));
        }
        assert_eq!(dot_i8_i8(&min, &min), 400 * 128 * 128);
    }

    #[test]
    fn query_rows_dot_a_piece_exactly() {
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (seed >> 16) as u8 as i8
        };
        for (dim, tlen, rows) in
            [(0, 0, 2), (1, 1, 1), (15, 15, 3), (16, 16, 2), (17, 17, 4), (256, 256, 9), (300, 300, 5), (384, 200, 3)]
        {
            let wide: Vec<i16> = (0..dim * rows).map(|_| i16::from(next())).collect();
            let mut t: Vec<i8> = (0..tlen).map(|_| next()).collect();
            if let Some(x) = t.first_mut() {
                *x = i8::MIN;
            }
            let mut out = vec![-1; rows];
            dots_i8(&wide, dim, &t, &mut out);
            for (j, o) in out.iter().enumerate() {
                let q: Vec<i8> = wide[j * dim..(j + 1) * dim].iter().map(|x| *x as i8).collect();
                assert_eq!(*o, naive_dot(&t, &q), "dim {dim}, row {j}");
            }
        }
        // The extremes: every product 2^14, summed over 256 values.
        let mut out = [0];
        dots_i8(&[-128; 256], 256, &[i8::MIN; 256], &mut out);
        assert_eq!(out[0], 256 * 128 * 128);
    }

    fn naive_dot(a: &[i8], b: &[i8]) -> i32 {
        a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
    }

    #[test]
    fn the_closest_piece_counts() {
        // Cosine by distance between ids: the best match of 10 in [12, 30] is 12.
        let near = |_: usize, b: u32| 1.0 - (10u32.abs_diff(b) as f32) / 10.0;
        let got = score_pieces(&[10], &[vec![12, 30].into(), vec![30].into()], near, |_| {});
        assert!((got[0] - 0.8).abs() < 1e-6 && (got[1] + 1.0).abs() < 1e-6, "{got:?}");
    }

    #[test]
    fn the_builtin_table_matches_meaning_and_skips_punctuation() {
        let m = TokenMatch::new(StaticEmbedder::builtin().unwrap());
        let table = StaticEmbedder::builtin().unwrap();
        assert!(table
            .match_ids("a , . ; `x`")
            .iter()
            .all(|id| !table.table().vocab[*id as usize].starts_with(['.', ',', ';', '`'])));
        let texts = [
            "presigned download link\n`aws s3 presign s3://b/f --expires-in 3600` prints a temporary URL",
            "sync a folder\n`aws s3 sync ./logs s3://b/logs` uploads what changed",
            "lifecycle rules\nexpire old objects after 30 days",
        ];
        let notes: Vec<Note<'_>> = texts.iter().map(|t| Note::text(t)).collect();
        let s = m.scores("share a file for an hour via a temporary link", &notes);
        assert!(s[0] > s[1] && s[0] > s[2], "{s:?}");
        // Kept by text: asked again, the same scores.
        assert_eq!(m.scores("share a file for an hour via a temporary link", &notes), s);
        assert_eq!(m.held.len(), 3);
        assert_eq!(m.scores("", &notes), vec![0.0; 3]);
        // A piece is its own closest match.
        let id = table.match_ids("presign")[0];
        let own = m.scores("presign", &[Note::text("presign")])[0];
        assert!((own - 1.0).abs() < 1e-4, "{own} ({id})");
    }

    #[test]
    fn stored_pieces_score_as_the_text_and_bad_ones_are_tokenized() {
        let m = TokenMatch::new(StaticEmbedder::builtin().unwrap());
        let texts = [
            "presigned download link\n`aws s3 presign s3://b/f --expires-in 3600` prints a temporary URL",
            "sync a folder\n`aws s3 sync ./logs s3://b/logs` uploads what changed",
            "",
        ];
        let query = "share a file for an hour via a temporary link";
        let blobs: Vec<Vec<u8>> = texts.iter().map(|t| m.stored(t).unwrap()).collect();
        let by_text: Vec<Note<'_>> = texts.iter().map(|t| Note::text(t)).collect();
        let fresh = TokenMatch::new(StaticEmbedder::builtin().unwrap());
        let (want, want_two) = (fresh.scores(query, &by_text), fresh.scores(query, &by_text[..2]));
        // Stored pieces are read, not tokenized: nothing is held, the scores are the text's.
        let stored: Vec<Note<'_>> =
            texts.iter().zip(&blobs).map(|(t, b)| Note { stored: Some(b), ..Note::text(t) }).collect();
        assert_eq!(m.scores(query, &stored), want);
        assert_eq!(m.held.len(), 0, "stored pieces were read");
        assert_eq!(m.read(&blobs[2]).as_deref(), Some(&[][..]), "a text without pieces stores none");
        // A blob that does not read falls back to the note's text: (blob, why).
        let mut other = blobs[0].clone();
        other[0] ^= 1;
        let mut odd = blobs[0].clone();
        odd.push(0);
        let mut past = blobs[0].clone();
        past.extend_from_slice(&u16::MAX.to_le_bytes());
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (other, "another table's"),
            (odd, "an odd length"),
            (past, "a row past the table's end"),
            (vec![], "empty"),
            (blobs[0][..3].to_vec(), "cut inside the tag"),
        ];
        for (blob, why) in cases {
            assert_eq!(m.read(&blob), None, "{why}");
            let one = Note { stored: Some(&blob), ..Note::text(texts[0]) };
            assert_eq!(m.scores(query, &[one, by_text[1]]), want_two, "{why}");
        }
    }

    /// Notes matched apart (as a recall's two threads match the notes each found) score as
    /// when matched together, to the bit, wherever the list is cut; a note matched twice
    /// counts as the note it is.
    #[test]
    fn notes_matched_apart_score_as_together() {
        let m = TokenMatch::new(StaticEmbedder::builtin().unwrap());
        let texts = [
            "presigned download link\n`aws s3 presign s3://b/f --expires-in 3600` prints a temporary URL",
            "sync a folder\n`aws s3 sync ./logs s3://b/logs` uploads what changed",
            "",
            "share the file with a link that expires in an hour",
            "lifecycle rules expire old objects after 30 days",
        ];
        let notes: Vec<Note<'_>> = texts.iter().map(|t| Note::text(t)).collect();
        for query in ["share a file for an hour via a temporary link", "", "s3"] {
            let want = m.scores(query, &notes);
            let q = m.query(query);
            for cut in 0..=notes.len() {
                let mut matched = m.matched(&q, &notes[..cut]);
                matched.extend(m.matched(&q, &notes[cut..]));
                let got = scores_of(&q, &matched);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{query:?} cut at {cut}");
            }
        }
    }

    /// A note scores by the set of its pieces: given sorted and each once (as recall holds a
    /// large skill's), the scores are those of its stored pieces, to the bit; given pieces
    /// that are not the table's rows fall back to what is stored.
    #[test]
    fn given_pieces_score_as_stored_ones_in_any_order_each_once() {
        let m = TokenMatch::new(StaticEmbedder::builtin().unwrap());
        let texts = [
            "presigned download link\n`aws s3 presign s3://b/f --expires-in 3600` prints a temporary URL, a URL",
            "sync a folder\n`aws s3 sync ./logs s3://b/logs` uploads what changed in the folder",
            "",
        ];
        let query = "share a file for an hour via a temporary link";
        let blobs: Vec<Vec<u8>> = texts.iter().map(|t| m.stored(t).unwrap()).collect();
        let stored: Vec<Note<'_>> = blobs.iter().map(|b| Note { stored: Some(b), ..Note::text("") }).collect();
        let want = m.scores(query, &stored);
        let sets: Vec<Vec<u32>> = blobs
            .iter()
            .map(|b| {
                let mut ids = m.read(b).unwrap().to_vec();
                ids.sort_unstable();
                ids.dedup();
                ids
            })
            .collect();
        assert!(sets[0].len() < blobs[0].len() / 2 - 2, "the first text repeats a piece");
        let given: Vec<Note<'_>> = sets.iter().map(|p| Note::of_pieces(p)).collect();
        assert_eq!(m.scores(query, &given), want);
        let past = [u32::MAX];
        let bad = Note { stored: Some(&blobs[0]), ..Note::of_pieces(&past) };
        assert_eq!(m.scores(query, &[bad, given[1], given[2]]), want, "a row past the table's end");
    }
}
