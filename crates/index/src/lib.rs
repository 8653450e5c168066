//! Vector search over note vectors, behind the [`VectorIndex`] trait.
//!
//! SQLite is the source of truth: an index is derived from it, holds the vectors of one
//! embedder model, and can be dropped and rebuilt at any time. [`ExactIndex`] scans the
//! candidate set with exact cosine; it is correct at any size and fast for the per-skill
//! candidate sets recall asks about.

pub mod columns;
pub mod graph;
pub mod hnsw;
pub mod rows;

use std::collections::HashMap;
use std::sync::RwLock;

use skillmem_embed::dot;

pub use columns::ColumnIndex;
pub use hnsw::{HnswIndex, HnswParams};

/// Dot product with eight accumulators, so that the compiler vectorises it (the plain
/// [`dot`] sums in order and is several times slower on long vectors). Differs from [`dot`]
/// only by float rounding.
///
/// On x86-64 with AVX2 and FMA (checked at run time: the binary targets baseline x86-64) it
/// runs a 256-bit fused multiply-add loop, about twice the speed of the SSE2 code the
/// compiler emits for the portable loop.
#[inline]
pub fn fast_dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { avx2::dot(a, b) };
        }
    }
    portable_dot(a, b)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Dot product of the common prefix of `a` and `b`, 32 floats per step.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY (all loads): i + 32 <= n, resp. i + 8 <= n, keep every read inside both slices.
        while i + 32 <= n {
            for (j, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_ps(pa.add(i + 8 * j));
                let y = _mm256_loadu_ps(pb.add(i + 8 * j));
                *acc = _mm256_fmadd_ps(x, y, *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc[0]);
            i += 8;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let hi = _mm256_extractf128_ps(s, 1);
        let lo = _mm256_castps256_ps128(s);
        let q = _mm_add_ps(hi, lo);
        let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        let q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
        let mut sum = _mm_cvtss_f32(q);
        while i < n {
            sum += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        sum
    }
}

/// [`fast_dot`] without SIMD intrinsics (eight accumulators the compiler vectorises).
pub fn portable_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Hashes note ids for the index's maps with one multiplication: std's SipHash resists
/// collision attacks that a map of our own row ids does not face, at several times the cost
/// of a lookup (a recall's exact scan looks up every note of the skill).
#[derive(Default, Clone, Copy)]
pub struct IdHash(u64);

impl std::hash::Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_i64(&mut self, i: i64) {
        let z = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = z ^ (z >> 29);
    }
}

/// A map keyed by note id (see [`IdHash`]).
pub type IdMap<V> = HashMap<i64, V, std::hash::BuildHasherDefault<IdHash>>;

/// A large set of note ids as bits from its smallest id: a graph search asks whether each
/// node it visits is a candidate, and in a skill of 90,000 notes a binary search over their
/// ids per visit was a fifth of the search. Kept beside a candidate list (one bit a note of
/// the span between its first and last id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdBits {
    base: i64,
    words: Vec<u64>,
    /// The ids before each word: an id's place among them is one count and one popcount
    /// away ([`IdBits::rank`]), where a binary search over 90,000 ids missed the cache at
    /// most of its 17 steps (a load looks a hundred up).
    before: Vec<u32>,
}

impl IdBits {
    /// Sets smaller than this are searched by their ids (a binary search of a few thousand
    /// ids stays in cache).
    pub const MIN: usize = 4096;

    /// The bits of `ids` (ascending, no repeats), when there are at least [`IdBits::MIN`] of
    /// them and their span is at most 64 times their number (the bits then take no more
    /// memory than the ids); `None` otherwise.
    pub fn of_sorted(ids: &[i64]) -> Option<IdBits> {
        let (&first, &last) = (ids.first()?, ids.last()?);
        let span = last.checked_sub(first)?.checked_add(1)?;
        if ids.len() < Self::MIN || span > 64 * ids.len() as i64 {
            return None;
        }
        let mut words = vec![0u64; (span as usize).div_ceil(64)];
        for id in ids {
            let d = (id - first) as usize;
            words[d >> 6] |= 1 << (d & 63);
        }
        let mut before = Vec::with_capacity(words.len());
        let mut n = 0u32;
        for w in &words {
            before.push(n);
            n += w.count_ones();
        }
        Some(IdBits { base: first, words, before })
    }

    /// Where `id` is among the ids, ascending (its index in the list the bits were made of);
    /// `None` when it is not one of them.
    pub fn rank(&self, id: i64) -> Option<usize> {
        let d = id.checked_sub(self.base).filter(|d| *d >= 0)? as u64;
        let at = usize::try_from(d >> 6).ok()?;
        let w = *self.words.get(at)?;
        let bit = d & 63;
        if (w >> bit) & 1 == 0 {
            return None;
        }
        let below = w & ((1u64 << bit) - 1);
        Some(self.before[at] as usize + below.count_ones() as usize)
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: i64) -> bool {
        let Some(d) = id.checked_sub(self.base).filter(|d| *d >= 0) else { return false };
        let d = d as u64;
        usize::try_from(d >> 6).ok().and_then(|w| self.words.get(w)).is_some_and(|w| (w >> (d & 63)) & 1 == 1)
    }
}

/// A searchable set of unit vectors keyed by note id.
pub trait VectorIndex: Send + Sync {
    /// The embedder model id whose vectors this index holds.
    fn model_id(&self) -> &str;
    /// Adds or replaces the vector of `id`.
    fn insert(&self, id: i64, v: &[f32]);
    /// Forgets `id`.
    fn remove(&self, id: i64);
    /// True when `id` has a vector here.
    fn contains(&self, id: i64) -> bool;
    /// The ids of `ids` without a vector here, in order (a recall checks a skill's every
    /// candidate: one lock for all of them where the index has one).
    fn missing(&self, ids: &[i64]) -> Vec<i64> {
        ids.iter().copied().filter(|id| !self.contains(*id)).collect()
    }
    /// How many vectors are held.
    fn len(&self) -> usize;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True while the stored vectors are still being loaded in the background: callers skip
    /// the vector rung for large candidate sets rather than load vectors one by one.
    fn warming(&self) -> bool {
        false
    }
    /// The `k` most similar of `candidates` to `query`, best first, with their cosine.
    /// Candidates without a vector here are passed over.
    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)>;
    /// [`VectorIndex::search`] over `candidates` known to be ascending with no repeats (a
    /// recall's, kept in order by the catalog): an index that needs them in order need not
    /// check. `bits`, when given, are the same set's [`IdBits`], for membership.
    fn search_sorted(&self, query: &[f32], candidates: &[i64], bits: Option<&IdBits>, k: usize) -> Vec<(i64, f32)> {
        let _ = bits;
        self.search(query, candidates, k)
    }
    /// The most similar of `candidates` to `query` when its cosine is at least `min`
    /// (duplicate detection: `min` is high, so the one wanted is far closer than the rest and
    /// an approximate index may look at fewer candidates than for a ranking; see
    /// [`NEAREST_EF`]).
    fn nearest(&self, query: &[f32], candidates: &[i64], min: f32) -> Option<(i64, f32)> {
        self.search(query, candidates, 1).into_iter().next().filter(|(_, s)| *s >= min)
    }
    /// The `k` most similar of `candidates` whose cosine is at least `min`, best first (a
    /// write compares itself with its nearest notes: see `memory::sameness`). As with
    /// [`VectorIndex::nearest`], `min` is high.
    fn neighbours(&self, query: &[f32], candidates: &[i64], min: f32, k: usize) -> Vec<(i64, f32)> {
        let mut v = self.search(query, candidates, k);
        v.retain(|(_, s)| *s >= min);
        v
    }
}

/// The candidate list of the first graph search of [`VectorIndex::nearest`] (a ranking uses
/// the index's `ef_search`, 64). Every write into a skill large enough for the graph pays for
/// this search (at 65k notes in one skill, the search with 64 took two thirds of the write
/// path). A short list finds a near duplicate that stands out; when it finds nothing above
/// the threshold but something within [`NEAREST_MARGIN`] below, the search is done again with
/// `ef_search`. Measured on `bench recall --fill protocol` (dense synthetic lessons): at 10k
/// notes an exact scan finds 1356 duplicates, 64 alone 1353, 16 alone 1336, 16 then 64 within
/// 0.03 1353; at 100k notes 64 alone 27,418, 16 alone 26,177, 16 then 64 within 0.03 27,427.
pub const NEAREST_EF: usize = 16;
/// See [`NEAREST_EF`].
pub const NEAREST_MARGIN: f32 = 0.03;

/// [`NEAREST_EF`] and [`NEAREST_MARGIN`], or `SKILLMEM_NEAREST=ef,margin` (benchmarks).
pub fn nearest_params() -> (usize, f32) {
    static P: std::sync::OnceLock<(usize, f32)> = std::sync::OnceLock::new();
    *P.get_or_init(|| {
        let v = std::env::var("SKILLMEM_NEAREST").unwrap_or_default();
        let mut it = v.split(',');
        let ef = it.next().and_then(|x| x.trim().parse().ok()).unwrap_or(NEAREST_EF);
        let margin = it.next().and_then(|x| x.trim().parse().ok()).unwrap_or(NEAREST_MARGIN);
        (ef, margin)
    })
}

/// Exact cosine over the candidates.
pub struct ExactIndex {
    model_id: String,
    vectors: RwLock<HashMap<i64, Vec<f32>>>,
}

impl ExactIndex {
    /// An empty index for vectors of `model_id`.
    pub fn new(model_id: impl Into<String>) -> Self {
        Self { model_id: model_id.into(), vectors: RwLock::new(HashMap::new()) }
    }
}

impl VectorIndex for ExactIndex {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn insert(&self, id: i64, v: &[f32]) {
        self.vectors.write().unwrap_or_else(|e| e.into_inner()).insert(id, v.to_vec());
    }

    fn remove(&self, id: i64) {
        self.vectors.write().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    fn contains(&self, id: i64) -> bool {
        self.vectors.read().unwrap_or_else(|e| e.into_inner()).contains_key(&id)
    }

    fn len(&self) -> usize {
        self.vectors.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        let map = self.vectors.read().unwrap_or_else(|e| e.into_inner());
        let mut scored: Vec<(i64, f32)> = candidates
            .iter()
            .filter_map(|id| map.get(id).filter(|v| v.len() == query.len()).map(|v| (*id, dot(query, v))))
            .collect();
        top_k(&mut scored, k);
        scored
    }
}

/// Sorts best first (ties by id) and keeps `k`.
pub fn top_k(scored: &mut Vec<(i64, f32)>, k: usize) {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_search_orders_and_filters() {
        let ix = ExactIndex::new("m");
        ix.insert(1, &[1.0, 0.0]);
        ix.insert(2, &[0.6, 0.8]);
        ix.insert(3, &[0.0, 1.0]);
        let got = ix.search(&[1.0, 0.0], &[1, 2, 3, 9], 2);
        assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2]);
        let only3 = ix.search(&[1.0, 0.0], &[3], 5);
        assert_eq!(only3, vec![(3, 0.0)]);
        ix.remove(1);
        assert!(!ix.contains(1));
        assert_eq!(ix.len(), 2);
    }

    #[test]
    fn id_bits_hold_exactly_their_ids() {
        let dense: Vec<i64> = (10..10 + IdBits::MIN as i64 * 2).step_by(2).collect();
        let spaced: Vec<i64> = (0..IdBits::MIN as i64).map(|i| i * 64).collect();
        let negative: Vec<i64> = (-(IdBits::MIN as i64)..0).collect();
        // (the set, whether it gets bits)
        let cases: Vec<(&str, Vec<i64>, bool)> = vec![
            ("empty", vec![], false),
            ("too few", (1..IdBits::MIN as i64).collect(), false),
            ("every id", (1..=IdBits::MIN as i64).collect(), true),
            ("every other id", dense, true),
            ("64 apart", spaced, true),
            ("65 apart", (0..IdBits::MIN as i64).map(|i| i * 65).collect(), false),
            ("below zero", negative, true),
            ("uneven gaps", (0..IdBits::MIN as i64 * 3).filter(|i| i % 3 != 1 && i % 7 != 0).collect(), true),
            ("the widest span", vec![i64::MIN, i64::MAX], false),
        ];
        for (case, ids, bits) in cases {
            let got = IdBits::of_sorted(&ids);
            assert_eq!(got.is_some(), bits, "{case}");
            let Some(b) = got else { continue };
            let (lo, hi) = (ids[0], *ids.last().unwrap());
            for id in (lo - 130..=hi + 130).chain([i64::MIN, i64::MAX, 0]) {
                assert_eq!(b.contains(id), ids.binary_search(&id).is_ok(), "{case}: {id}");
                assert_eq!(b.rank(id), ids.binary_search(&id).ok(), "{case}: the place of {id}");
            }
        }
    }

    #[test]
    fn fast_dot_matches_the_plain_sum_at_every_length() {
        for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 100, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0).collect();
            let want: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            for got in [fast_dot(&a, &b), portable_dot(&a, &b)] {
                assert!((f64::from(got) - want).abs() < 1e-4, "n={n}: {got} vs {want}");
            }
            // Unequal lengths: the common prefix.
            assert!((fast_dot(&a, &b[..n / 2]) - portable_dot(&a[..n / 2], &b[..n / 2])).abs() < 1e-4);
        }
    }
}
