//! An exact index laid out by dimension, for sparse query vectors (the hash embedder's).
//!
//! The hash embedder's vectors are hashed lexical features: unrelated notes are nearly
//! orthogonal, so an HNSW graph over them has no neighbourhoods to walk and a search visits a
//! large share of the index (measured: slower than an exact scan at 100k notes). A short
//! intent, though, sets only a few dozen of 512 buckets. Stored by dimension (in chunks of
//! [`CHUNK`] notes, column-major inside a chunk), the exact scores of every note are the sum
//! of the query's non-zero columns: O(non-zeros × notes) reads instead of O(dim × notes).
//!
//! Scores are the exact cosine to about 1e-4 (components are stored in 16-bit fixed point). Vectors are held once; a forgotten note's
//! slot is filled with the last one (no tombstones).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use super::hnsw::Loader;
use super::{top_k, VectorIndex};

/// Notes per chunk.
pub const CHUNK: usize = 1024;
/// Ids below this are also mapped to slots through a plain array.
const DENSE_MAX: i64 = 1 << 26;
const NONE: u32 = u32::MAX;
/// Unit-vector components are stored as `round(x * SCALE)`: half the memory and the memory
/// traffic of f32, scores within about 1e-4 of the exact cosine.
pub const SCALE: f32 = 32767.0;

fn quantize(x: f32) -> i16 {
    (x.clamp(-1.0, 1.0) * SCALE).round() as i16
}

#[derive(Default)]
struct Cols {
    /// Each chunk holds `dim × CHUNK` components in 16-bit fixed point (see [`SCALE`]):
    /// column `j` of the chunk at `j * CHUNK`.
    chunks: Vec<Box<[i16]>>,
    /// slot → note id.
    ids: Vec<i64>,
    slot_of: HashMap<i64, usize>,
    /// The same for ids below [`DENSE_MAX`] (rowids are dense): `NONE` when absent.
    dense: Vec<u32>,
    /// Forgotten while the loader runs (it must not bring them back).
    removed: std::collections::HashSet<i64>,
}

struct Shared {
    model_id: String,
    dim: usize,
    cols: RwLock<Cols>,
    loaded: AtomicBool,
}

/// The column-major exact index; see the module docs.
pub struct ColumnIndex {
    shared: Arc<Shared>,
}

impl Cols {
    fn set_slot(&mut self, id: i64, slot: Option<usize>) {
        match slot {
            Some(s) => {
                self.slot_of.insert(id, s);
            }
            None => {
                self.slot_of.remove(&id);
            }
        }
        if (0..DENSE_MAX).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize((i + 1).next_power_of_two(), NONE);
            }
            self.dense[i] = slot.map(|s| s as u32).unwrap_or(NONE);
        }
    }

    #[inline]
    fn slot(&self, id: i64) -> Option<usize> {
        if (0..DENSE_MAX).contains(&id) {
            let s = *self.dense.get(id as usize)?;
            (s != NONE).then_some(s as usize)
        } else {
            self.slot_of.get(&id).copied()
        }
    }

    fn put(&mut self, dim: usize, slot: usize, v: &[f32]) {
        let (c, off) = (slot / CHUNK, slot % CHUNK);
        let chunk = &mut self.chunks[c];
        for (j, x) in v.iter().enumerate().take(dim) {
            chunk[j * CHUNK + off] = quantize(*x);
        }
    }

    fn get(&self, dim: usize, slot: usize) -> Vec<f32> {
        let (c, off) = (slot / CHUNK, slot % CHUNK);
        (0..dim).map(|j| self.chunks[c][j * CHUNK + off] as f32 / SCALE).collect()
    }

    fn insert(&mut self, dim: usize, id: i64, v: &[f32]) {
        let slot = match self.slot_of.get(&id) {
            Some(s) => *s,
            None => {
                let s = self.ids.len();
                if s / CHUNK >= self.chunks.len() {
                    self.chunks.push(vec![0i16; dim * CHUNK].into_boxed_slice());
                }
                self.ids.push(id);
                self.set_slot(id, Some(s));
                s
            }
        };
        self.put(dim, slot, v);
    }

    fn remove(&mut self, dim: usize, id: i64) {
        let Some(slot) = self.slot_of.get(&id).copied() else { return };
        self.set_slot(id, None);
        let last = self.ids.len() - 1;
        if slot != last {
            let moved = self.ids[last];
            let v = self.get(dim, last);
            self.put(dim, slot, &v);
            self.ids[slot] = moved;
            self.set_slot(moved, Some(slot));
        }
        self.put(dim, last, &vec![0.0; dim]);
        self.ids.pop();
        if self.chunks.len() > self.ids.len().div_ceil(CHUNK) + 1 {
            self.chunks.pop();
        }
    }
}

impl ColumnIndex {
    /// An empty index for vectors of `model_id` of dimension `dim`.
    pub fn new(model_id: impl Into<String>, dim: usize) -> Self {
        ColumnIndex {
            shared: Arc::new(Shared {
                model_id: model_id.into(),
                dim,
                cols: RwLock::new(Cols::default()),
                loaded: AtomicBool::new(false),
            }),
        }
    }

    /// Runs `loader` on a background thread (none: the vectors are all inserted already);
    /// until it is done the index says it is warming.
    pub fn start(&self, loader: Option<Loader>) {
        let Some(load) = loader else {
            self.shared.loaded.store(true, Ordering::SeqCst);
            return;
        };
        let s = self.shared.clone();
        let spawned = std::thread::Builder::new().name("skillmem-index".into()).spawn(move || {
            let t = std::time::Instant::now();
            let r = load(&mut |id, v| {
                if v.len() != s.dim {
                    return;
                }
                let mut c = s.cols.write().unwrap_or_else(|e| e.into_inner());
                if !c.removed.contains(&id) && !c.slot_of.contains_key(&id) {
                    c.insert(s.dim, id, &v);
                }
            });
            match r {
                Ok(n) => tracing::info!("vector index ready: {n} vectors of {} in {} ms", s.model_id, t.elapsed().as_millis()),
                Err(e) => tracing::warn!(
                    "vector index: cannot load the stored vectors ({e}); notes missing from the index are found by their words"
                ),
            }
            s.cols.write().unwrap_or_else(|e| e.into_inner()).removed.clear();
            s.loaded.store(true, Ordering::SeqCst);
        });
        if spawned.is_err() {
            tracing::error!("vector index: cannot start the loader thread; vectors load on demand");
            self.shared.loaded.store(true, Ordering::SeqCst);
        }
    }

    /// Blocks until the stored vectors are loaded.
    pub fn wait_ready(&self) {
        while !self.shared.loaded.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn cols(&self) -> std::sync::RwLockReadGuard<'_, Cols> {
        self.shared.cols.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl VectorIndex for ColumnIndex {
    fn model_id(&self) -> &str {
        &self.shared.model_id
    }

    fn insert(&self, id: i64, v: &[f32]) {
        if v.len() != self.shared.dim {
            return;
        }
        self.shared.cols.write().unwrap_or_else(|e| e.into_inner()).insert(self.shared.dim, id, v);
    }

    fn remove(&self, id: i64) {
        let mut c = self.shared.cols.write().unwrap_or_else(|e| e.into_inner());
        if !self.shared.loaded.load(Ordering::SeqCst) {
            c.removed.insert(id);
        }
        c.remove(self.shared.dim, id);
    }

    fn contains(&self, id: i64) -> bool {
        self.cols().slot_of.contains_key(&id)
    }

    fn len(&self) -> usize {
        self.cols().ids.len()
    }

    fn warming(&self) -> bool {
        !self.shared.loaded.load(Ordering::SeqCst)
    }

    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        let dim = self.shared.dim;
        if query.len() != dim || k == 0 {
            return vec![];
        }
        let nz: Vec<(usize, f32)> = query.iter().copied().enumerate().filter(|(_, x)| *x != 0.0).collect();
        let c = self.cols();
        let mut scored: Vec<(i64, f32)>;
        if candidates.len() * 8 < c.ids.len() {
            // Few candidates: gather their non-zero columns.
            scored = candidates
                .iter()
                .filter_map(|id| {
                    let slot = c.slot(*id)?;
                    let (ch, off) = (&c.chunks[slot / CHUNK], slot % CHUNK);
                    Some((*id, nz.iter().map(|(j, q)| q * ch[j * CHUNK + off] as f32).sum::<f32>() / SCALE))
                })
                .collect();
        } else {
            let mut acc = vec![0.0f32; c.chunks.len() * CHUNK];
            for (ch, a) in c.chunks.iter().zip(acc.chunks_exact_mut(CHUNK)) {
                for (j, q) in &nz {
                    let col = &ch[j * CHUNK..(j + 1) * CHUNK];
                    for (x, y) in a.iter_mut().zip(col) {
                        *x += q * *y as f32;
                    }
                }
            }
            // Stream the candidates through a buffer that is cut back to the best `k`
            // whenever it fills, so that 100k candidates are never collected.
            let order = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
            let mut floor = f32::NEG_INFINITY;
            scored = Vec::with_capacity(8 * k);
            for id in candidates {
                let Some(s) = c.slot(*id) else { continue };
                let v = acc[s] / SCALE;
                if v < floor {
                    continue;
                }
                scored.push((*id, v));
                if scored.len() == 8 * k {
                    scored.select_nth_unstable_by(k - 1, order);
                    scored.truncate(k);
                    floor = scored.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
                }
            }
        }
        top_k(&mut scored, k);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExactIndex;

    #[test]
    fn agrees_with_exact_through_inserts_edits_and_removals() {
        let e = skillmem_embed::hash::HashEmbedder::default();
        use skillmem_embed::Embedder;
        let col = ColumnIndex::new("m", 512);
        col.start(None);
        let ex = ExactIndex::new("m");
        let texts: Vec<String> =
            (0..3000).map(|i| format!("note {i} about parsing {} files and {}", i % 17, i % 5)).collect();
        for (i, t) in texts.iter().enumerate() {
            let v = e.embed_one(t).unwrap();
            col.insert(i as i64 + 1, &v);
            ex.insert(i as i64 + 1, &v);
        }
        for id in (1..3000).step_by(7) {
            col.remove(id);
            ex.remove(id);
        }
        let v = e.embed_one("an edited note about parsing").unwrap();
        col.insert(10, &v);
        ex.insert(10, &v);
        assert_eq!(col.len(), ex.len());
        let all: Vec<i64> = (1..=3000).collect();
        let few: Vec<i64> = (1..=200).collect();
        for q in ["parsing 3 files", "edited note", "files and 4"] {
            let qv = e.embed_one(q).unwrap();
            for cands in [&all, &few] {
                let a = col.search(&qv, cands, 20);
                let b = ex.search(&qv, cands, 20);
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(&b) {
                    assert!((x.1 - y.1).abs() < 2e-4, "{q}: {a:?} vs {b:?}");
                }
            }
        }
        assert!(!col.contains(1) && col.contains(2));
    }
}
