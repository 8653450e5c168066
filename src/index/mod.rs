//! Vector search over note vectors, behind the [`VectorIndex`] trait.
//!
//! SQLite is the source of truth: an index is derived from it, holds the vectors of one
//! embedder model, and can be dropped and rebuilt at any time. [`ExactIndex`] scans the
//! candidate set with exact cosine; it is correct at any size and fast for the per-skill
//! candidate sets recall asks about.

pub mod catalog;
pub mod columns;
pub mod hnsw;

use std::collections::HashMap;
use std::sync::RwLock;

use crate::embed::dot;

pub use columns::ColumnIndex;
pub use hnsw::{HnswIndex, HnswParams};

/// Dot product with eight accumulators, so that the compiler vectorises it (the plain
/// [`dot`] sums in order and is several times slower on long vectors). Differs from [`dot`]
/// only by float rounding.
pub fn fast_dot(a: &[f32], b: &[f32]) -> f32 {
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
}
