//! The HNSW index over the note vectors of one embedder model, persisted in the data
//! directory and rebuilt from SQLite whenever it cannot be trusted.
//!
//! [`HnswIndex`] keeps every current vector in memory, once: in the graph ([`Graph`], our own
//! HNSW) for the notes it holds, as an owned copy for the others. The graph is an accelerator:
//!
//! - each note id maps to a *slot* (a node of the graph); an edited or forgotten note's old
//!   slot is a tombstone, filtered out of every search; when tombstones pile up the graph is
//!   rebuilt without them (compaction);
//! - new vectors are *pending* until the background worker has inserted them; pending
//!   vectors are searched exactly and merged with the graph's answer, so a write is visible
//!   at once;
//! - the worker inserts one vector at a time: it plans the insertion under the graph's read
//!   lock (searches run beside it) and applies it under the write lock (microseconds), so a
//!   search never waits for an insertion's searches;
//! - small candidate sets (a skill with few notes, or a skill that is a small share of the
//!   index) are scanned exactly: filtering inside HNSW is slow at low selectivity.
//!
//! Locks are always taken maps first, then graph.
//!
//! Files, under `<data dir>/index/<model id>/`: `graph.bin` ([`Graph::save`]), `slots.bin`
//! (slot → note id, little-endian i64), and `manifest.json` (format, model id, dimension,
//! count, highest note id, slots). They are written to a temporary folder and renamed into
//! place, so a crash leaves the old files or the new ones. A missing, mismatched, truncated or
//! otherwise unreadable set is ignored and the graph is rebuilt from the vectors SQLite holds,
//! in the background.

use std::collections::{HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::graph::Graph;
use super::{fast_dot, top_k, IdMap, VectorIndex};

/// Graph parameters.
#[derive(Debug, Clone, Copy)]
pub struct HnswParams {
    /// Links per node on the upper layers (twice as many on layer 0).
    pub m: usize,
    /// Candidate list size while building.
    pub ef_construction: usize,
    /// Candidate list size while searching (at least `2k`).
    pub ef_search: usize,
    /// Candidate sets of at most this many ids are scanned exactly.
    pub exact_max: usize,
    /// Candidate sets smaller than this share of the index are scanned exactly.
    pub min_selectivity: f32,
}

impl Default for HnswParams {
    fn default() -> Self {
        Self { m: 16, ef_construction: 64, ef_search: 64, exact_max: 2048, min_selectivity: 0.1 }
    }
}

const TOMB: i64 = -1;
/// Format 1 was hnsw_rs's dump; its files are ignored and rebuilt.
const FORMAT: u32 = 2;
const GRAPH_FILE: &str = "graph.bin";
/// Inserts per worker round (between checks for compaction, saving and stopping).
const BATCH: usize = 256;

/// The manifest stored beside the graph files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: u32,
    pub model_id: String,
    pub dim: usize,
    /// Live notes in the graph.
    pub count: usize,
    /// Slots in the graph (live and tombstoned).
    pub slots: usize,
    /// The highest note id in the graph.
    pub max_note_id: i64,
}

#[derive(Default)]
struct Maps {
    /// The current vectors not in the graph (pending; before the first build, all of them).
    own: IdMap<Vec<f32>>,
    /// Ids waiting for the worker, oldest first (an id no longer in `own` is skipped).
    queue: VecDeque<i64>,
    /// slot → note id (`TOMB` when superseded or forgotten); as long as the graph.
    slots: Vec<i64>,
    /// note id → its live slot.
    slot_of: IdMap<u32>,
    tombstones: usize,
    /// Inserts since the files were last written.
    dirty: usize,
    /// Forgotten while the vectors were still loading (the loader must not bring them back).
    removed: HashSet<i64>,
    /// Counts the changes that may give an id another vector or none (every change of the
    /// maps but the worker's moves of pending vectors into the graph): a [`Pack`] made at
    /// another count is stale.
    changes: u64,
}

impl Maps {
    /// The current vector of `id`.
    fn vector<'a>(&'a self, graph: Option<&'a Graph>, id: i64) -> Option<&'a [f32]> {
        if let Some(v) = self.own.get(&id) {
            return Some(v);
        }
        let slot = *self.slot_of.get(&id)?;
        graph.filter(|g| (slot as usize) < g.len()).map(|g| g.vector(slot))
    }

    fn tombstone(&mut self, id: i64) {
        if let Some(slot) = self.slot_of.remove(&id) {
            self.slots[slot as usize] = TOMB;
            self.tombstones += 1;
        }
    }
}

/// Streams the stored vectors into the sink it is given (run once, in the worker).
pub type Loader = Box<dyn FnOnce(&mut dyn FnMut(i64, Vec<f32>)) -> skillmem_error::Result<usize> + Send>;

struct Shared {
    model_id: String,
    dim: usize,
    dir: Option<PathBuf>,
    params: HnswParams,
    maps: RwLock<Maps>,
    /// None until the first build or reload.
    graph: RwLock<Option<Graph>>,
    /// Vectors are all loaded (before that, big candidate sets skip the vector rung).
    loaded: AtomicBool,
    /// The worker is building or loading the graph.
    building: AtomicBool,
    /// The worker failed (a bug): stay exact.
    broken: AtomicBool,
    wake: (Mutex<bool>, Condvar),
    stop: AtomicBool,
    save_requested: AtomicBool,
    searches: AtomicUsize,
    packs: Mutex<Packs>,
}

/// The HNSW-backed [`VectorIndex`]; see the module docs.
pub struct HnswIndex {
    shared: Arc<Shared>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The folder of one model's index under `data_dir`.
pub fn index_dir(data_dir: &Path, model_id: &str) -> PathBuf {
    let safe: String =
        model_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
    data_dir.join("index").join(safe)
}

impl HnswIndex {
    /// An empty index for vectors of `model_id` of dimension `dim`, persisted under `dir`
    /// (none: in memory only). Call [`HnswIndex::start`] once the vectors are inserted (or
    /// [`HnswIndex::mark_loaded`]) to let the worker load or build the graph.
    pub fn new(model_id: impl Into<String>, dim: usize, dir: Option<PathBuf>, params: HnswParams) -> Self {
        let shared = Arc::new(Shared {
            model_id: model_id.into(),
            dim,
            dir,
            params,
            maps: RwLock::new(Maps::default()),
            graph: RwLock::new(None),
            loaded: AtomicBool::new(false),
            building: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            stop: AtomicBool::new(false),
            save_requested: AtomicBool::new(false),
            searches: AtomicUsize::new(0),
            packs: Mutex::new(Packs::default()),
        });
        HnswIndex { shared, worker: Mutex::new(None) }
    }

    /// Starts the background worker: it runs `loader` (none: the vectors are all inserted
    /// already), reloads the persisted graph when it matches, else builds one, then keeps
    /// inserting new vectors.
    pub fn start(&self, loader: Option<Loader>) {
        if loader.is_none() {
            self.shared.loaded.store(true, Ordering::SeqCst);
        }
        self.shared.building.store(true, Ordering::SeqCst);
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new().name("skillmem-index".into()).spawn(move || worker(shared, loader));
        match handle {
            Ok(h) => *self.worker.lock().unwrap_or_else(|e| e.into_inner()) = Some(h),
            Err(e) => {
                tracing::error!("vector index: cannot start the index worker ({e}); vectors are searched exactly");
                self.shared.building.store(false, Ordering::SeqCst);
                self.shared.broken.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Marks the vectors loaded without a worker (exact search only).
    pub fn mark_loaded(&self) {
        self.shared.loaded.store(true, Ordering::SeqCst);
    }

    /// Blocks until the graph holds every vector inserted so far (or the worker gave up).
    pub fn wait_ready(&self) {
        loop {
            if self.is_ready() || self.shared.broken.load(Ordering::SeqCst) || self.worker_gone() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn worker_gone(&self) -> bool {
        self.worker.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_none_or(|h| h.is_finished())
    }

    /// True when the graph exists and nothing is waiting to be inserted.
    pub fn is_ready(&self) -> bool {
        if self.shared.building.load(Ordering::SeqCst) {
            return false;
        }
        let m = read(&self.shared.maps);
        m.own.is_empty() && read(&self.shared.graph).is_some()
    }

    /// Vectors waiting for the graph.
    pub fn pending(&self) -> usize {
        read(&self.shared.maps).own.len()
    }

    /// Tombstoned slots in the graph.
    pub fn tombstones(&self) -> usize {
        read(&self.shared.maps).tombstones
    }

    /// Bytes the graph's arrays hold (none before the first build).
    pub fn graph_bytes(&self) -> usize {
        read(&self.shared.graph).as_ref().map_or(0, Graph::heap_bytes)
    }

    /// Writes the graph files now. Only while no worker runs (benchmarks, tests); a running
    /// worker is asked with [`HnswIndex::flush`].
    pub fn save(&self) -> std::io::Result<()> {
        save(&self.shared)
    }

    /// Asks the worker to write the files when it has unsaved inserts, and waits for it at
    /// most `wait` (a build in progress is not waited for).
    pub fn flush(&self, wait: std::time::Duration) {
        self.shared.save_requested.store(true, Ordering::SeqCst);
        self.notify();
        let t = Instant::now();
        while t.elapsed() < wait && !self.worker_gone() && !self.shared.building.load(Ordering::SeqCst) {
            if read(&self.shared.maps).dirty == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The manifest of the persisted files, when readable.
    pub fn manifest(dir: &Path) -> Option<Manifest> {
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).ok()?).ok()
    }

    /// Searches the graph only (no exact merge), for benchmarks: `k` nearest note ids.
    pub fn search_graph(&self, query: &[f32], k: usize, ef: usize) -> Option<Vec<(i64, f32)>> {
        let maps = read(&self.shared.maps);
        let graph = read(&self.shared.graph);
        let g = graph.as_ref()?;
        let slots = &maps.slots;
        let keep = |slot: usize| slots.get(slot).is_some_and(|&id| id != TOMB);
        let found = g.search(query, k, ef, &keep);
        Some(found.into_iter().map(|(slot, score)| (slots[slot], score)).collect())
    }

    /// Builds the graph over the current vectors in the calling thread (benchmarks, tests).
    pub fn build_now(&self) {
        self.shared.loaded.store(true, Ordering::SeqCst);
        build(&self.shared);
    }

    /// Reloads the persisted graph in the calling thread; false when it is unusable.
    pub fn reload_now(&self) -> bool {
        self.shared.loaded.store(true, Ordering::SeqCst);
        reload(&self.shared)
    }

    fn notify(&self) {
        let (lock, cv) = &self.shared.wake;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_one();
    }
}

/// A small candidate set's int8 codes side by side, for the recalls that search it again.
/// A skill's notes are scattered over the graph's whole array, so a [`scan`] waits on a
/// memory read per candidate (measured at 100k notes: 0.34–0.42 ms p50 for a 1,100-note
/// skill, the largest part of its vector rung); read from one contiguous array the same codes
/// take half of that (0.34 -> 0.16 ms p50 in the server's trace; the rest is the dot
/// products). A pack is made by a recall's search (never by a write's near-duplicate check,
/// whose candidate set changes with every write) and is used while the candidate list and
/// [`Maps::changes`] are the same, so it ranks exactly as the scan would.
struct Pack {
    changes: u64,
    candidates: Vec<i64>,
    /// The candidates the graph held, in order, with their codes' scales and their codes.
    ids: Vec<i64>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    /// The candidates that were pending (scored exactly, as a scan does).
    pending: Vec<i64>,
}

/// Candidate sets larger than this are not packed (a set this large is a large share of the
/// index, or is searched in the graph).
const PACK_MAX: usize = 4096;
/// The bytes the packs may hold together (about twenty skills of a thousand notes at 384
/// dimensions); the least recently used go first.
const PACKS_BYTES: usize = 8 << 20;

#[derive(Default)]
struct Packs {
    /// Least recently used first.
    held: VecDeque<Arc<Pack>>,
    bytes: usize,
}

impl Pack {
    fn new(maps: &Maps, g: &Graph, ids: &[i64]) -> Pack {
        let mut p = Pack {
            changes: maps.changes,
            candidates: ids.to_vec(),
            ids: Vec::with_capacity(ids.len()),
            scales: Vec::with_capacity(ids.len()),
            codes: Vec::with_capacity(ids.len() * g.dim()),
            pending: vec![],
        };
        // The candidates a scan would score from the graph, and the ones it would score exactly.
        for &id in ids {
            match maps.slot_of.get(&id) {
                Some(&slot) if (slot as usize) < g.len() => {
                    let (scale, codes) = g.codes(slot);
                    p.ids.push(id);
                    p.scales.push(scale);
                    p.codes.extend_from_slice(codes);
                }
                _ if maps.own.contains_key(&id) => p.pending.push(id),
                _ => {}
            }
        }
        p
    }

    fn bytes(&self) -> usize {
        self.candidates.len() * 8 + self.ids.len() * 12 + self.codes.len() + self.pending.len() * 8
    }

    /// What [`scan`] answers for the candidates packed, from the codes side by side.
    fn scan(&self, maps: &Maps, g: &Graph, query: &[f32], k: usize) -> Vec<(i64, f32)> {
        let want = (RESCORE * k).max(64);
        let mut approx: Vec<(f32, usize)> = self
            .scales
            .iter()
            .zip(self.codes.chunks_exact(query.len().max(1)))
            .enumerate()
            // As [`Graph::approx_cosine`] computes it, rounding included.
            .map(|(j, (scale, codes))| (1.0 - (1.0 - scale * super::graph::dot_i8(query, codes)), j))
            .collect();
        if approx.len() > want {
            approx.select_nth_unstable_by(want - 1, |a, b| b.0.total_cmp(&a.0));
            approx.truncate(want);
        }
        let mut scored: Vec<(i64, f32)> = Vec::with_capacity(approx.len() + self.pending.len());
        for &(_, j) in &approx {
            let id = self.ids[j];
            if let Some(v) = maps.vector(Some(g), id) {
                scored.push((id, fast_dot(query, v)));
            }
        }
        scored.extend(exact(maps, Some(g), query, self.pending.iter().copied(), k));
        top_k(&mut scored, k);
        scored
    }
}

impl HnswIndex {
    /// [`scan`], from a [`Pack`] of the candidates when one is held (or made, with `pack`).
    fn scan_packed(
        &self,
        maps: &Maps,
        graph: Option<&Graph>,
        query: &[f32],
        ids: &[i64],
        k: usize,
        pack: bool,
    ) -> Vec<(i64, f32)> {
        let want = (RESCORE * k).max(64);
        let g = match graph {
            Some(g) if g.dim() == query.len() && ids.len() > want && ids.len() <= PACK_MAX => g,
            _ => return scan(maps, graph, query, ids, k),
        };
        let mut packs = self.shared.packs.lock().unwrap_or_else(|e| e.into_inner());
        let held = packs.held.iter().position(|p| p.changes == maps.changes && p.candidates == ids);
        let p = match held {
            Some(i) => {
                let p = packs.held.remove(i).expect("found above");
                packs.held.push_back(p.clone());
                p
            }
            None if pack => {
                drop(packs);
                let p = Arc::new(Pack::new(maps, g, ids));
                let mut packs = self.shared.packs.lock().unwrap_or_else(|e| e.into_inner());
                // A pack of another count can never be used again.
                packs.held.retain(|q| q.changes == maps.changes && q.candidates != ids);
                packs.held.push_back(p.clone());
                packs.bytes = packs.held.iter().map(|q| q.bytes()).sum();
                while packs.bytes > PACKS_BYTES && packs.held.len() > 1 {
                    let gone = packs.held.pop_front().expect("more than one");
                    packs.bytes -= gone.bytes();
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
/// by their int8 codes and only the best [`RESCORE`] × `k` (at least 64) are scored exactly:
/// a skill's few thousand notes are scattered over the whole array, so the scan is bound by
/// memory reads, and the codes are a third of the float rows (measured at 100k notes: the
/// exact scan of a 1k-note skill was a third of its recall's vector rung).
fn scan(maps: &Maps, graph: Option<&Graph>, query: &[f32], ids: &[i64], k: usize) -> Vec<(i64, f32)> {
    let want = (RESCORE * k).max(64);
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
    for (j, &(_, id, slot)) in approx.iter().enumerate() {
        if let Some(&(_, _, next)) = approx.get(j + SCAN_AHEAD) {
            g.prefetch_vector(next);
        }
        scored.push((id, fast_dot(query, g.vector(slot))));
    }
    scored.extend(exact(maps, graph, query, pending.into_iter(), k));
    top_k(&mut scored, k);
    scored
}

/// Candidates whose memory [`scan`] requests ahead of the one it scores.
const SCAN_AHEAD: usize = 6;

/// See [`scan`].
const RESCORE: usize = 4;

/// Exact cosine of `query` against the current vectors of `ids`, best `k`.
fn exact(
    maps: &Maps,
    graph: Option<&Graph>,
    query: &[f32],
    ids: impl Iterator<Item = i64>,
    k: usize,
) -> Vec<(i64, f32)> {
    let mut scored: Vec<(i64, f32)> = ids
        .filter_map(|id| maps.vector(graph, id).filter(|v| v.len() == query.len()).map(|v| (id, fast_dot(query, v))))
        .collect();
    top_k(&mut scored, k);
    scored
}

impl Drop for HnswIndex {
    /// Stops the worker without waiting for it: a build in progress must not hold up the
    /// end of a one-shot command (the files are rebuilt or completed at the next start).
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.notify();
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl VectorIndex for HnswIndex {
    fn model_id(&self) -> &str {
        &self.shared.model_id
    }

    fn insert(&self, id: i64, v: &[f32]) {
        if v.len() != self.shared.dim {
            tracing::warn!(
                "vector index: note {id} has dimension {} instead of {}; not indexed",
                v.len(),
                self.shared.dim
            );
            return;
        }
        {
            let mut m = write(&self.shared.maps);
            {
                let graph = read(&self.shared.graph);
                if m.vector(graph.as_ref(), id).is_some_and(|old| old == v) {
                    return;
                }
            }
            m.tombstone(id);
            m.own.insert(id, v.to_vec());
            m.queue.push_back(id);
            m.changes += 1;
        }
        self.notify();
    }

    fn remove(&self, id: i64) {
        let mut m = write(&self.shared.maps);
        if !self.shared.loaded.load(Ordering::SeqCst) {
            m.removed.insert(id);
        }
        m.own.remove(&id);
        m.tombstone(id);
        m.changes += 1;
    }

    fn contains(&self, id: i64) -> bool {
        let m = read(&self.shared.maps);
        m.own.contains_key(&id) || m.slot_of.contains_key(&id)
    }

    fn len(&self) -> usize {
        let m = read(&self.shared.maps);
        m.own.len() + m.slot_of.len()
    }

    fn warming(&self) -> bool {
        !self.shared.loaded.load(Ordering::SeqCst)
    }

    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        self.search_ef(query, candidates, k, self.shared.params.ef_search.max(2 * k), true)
    }

    fn nearest(&self, query: &[f32], candidates: &[i64], min: f32) -> Option<(i64, f32)> {
        let (ef, margin) = super::nearest_params();
        let first = self.search_ef(query, candidates, 1, ef, false).into_iter().next();
        match first {
            Some((id, s)) if s >= min => return Some((id, s)),
            Some((_, s)) if s < min - margin => return None,
            None if candidates.is_empty() => return None,
            _ => {}
        }
        // Close below the threshold: a longer list may find one above it (a scan, for sets
        // searched exactly, gave the answer already).
        let s = &self.shared;
        if self.scanned_exactly(candidates.len(), self.len()) {
            return None;
        }
        self.search_ef(query, candidates, 1, s.params.ef_search, false).into_iter().next().filter(|(_, s)| *s >= min)
    }

    fn neighbours(&self, query: &[f32], candidates: &[i64], min: f32, k: usize) -> Vec<(i64, f32)> {
        // As [`VectorIndex::nearest`]: a short list first, the longer one only when the best
        // found is close below `min` and the set was not scanned exactly.
        let (ef, margin) = super::nearest_params();
        let mut v = self.search_ef(query, candidates, k, ef.max(k), false);
        let best = v.first().map(|x| x.1);
        if best.is_none_or(|b| b < min && b >= min - margin) && !self.scanned_exactly(candidates.len(), self.len()) {
            v = self.search_ef(query, candidates, k, self.shared.params.ef_search.max(k), false);
        }
        v.retain(|(_, s)| *s >= min);
        v
    }
}

impl HnswIndex {
    /// Whether a search over `n` candidates of `total` vectors scans them exactly.
    fn scanned_exactly(&self, n: usize, total: usize) -> bool {
        let p = &self.shared.params;
        n <= p.exact_max || (n as f32) < p.min_selectivity * total.max(1) as f32
    }

    /// [`VectorIndex::search`] with `ef` candidates in the graph.
    fn search_ef(&self, query: &[f32], candidates: &[i64], k: usize, ef: usize, pack: bool) -> Vec<(i64, f32)> {
        if k == 0 || candidates.is_empty() {
            return vec![];
        }
        let s = &self.shared;
        let maps = read(&s.maps);
        let graph = read(&s.graph);
        let g = graph.as_ref().filter(|g| !g.is_empty());
        let total = maps.own.len() + maps.slot_of.len();
        let g = match g {
            Some(g) if !self.scanned_exactly(candidates.len(), total) && query.len() == s.dim => g,
            _ => return self.scan_packed(&maps, graph.as_ref(), query, candidates, k, pack),
        };
        let sorted = candidates.windows(2).all(|w| w[0] < w[1]);
        let owned;
        let cands: &[i64] = if sorted {
            candidates
        } else {
            let mut c = candidates.to_vec();
            c.sort_unstable();
            c.dedup();
            owned = c;
            &owned
        };
        let slots = &maps.slots;
        let keep = |slot: usize| {
            let id = slots.get(slot).copied().unwrap_or(TOMB);
            id != TOMB && cands.binary_search(&id).is_ok()
        };
        s.searches.fetch_add(1, Ordering::Relaxed);
        let mut out: Vec<(i64, f32)> =
            g.search(query, k, ef.max(k), &keep).into_iter().map(|(slot, score)| (slots[slot], score)).collect();
        // Vectors not in the graph yet: exactly.
        let extra = maps.own.keys().copied().filter(|id| cands.binary_search(id).is_ok());
        out.extend(exact(&maps, Some(g), query, extra, k));
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.dedup_by_key(|x| x.0);
        top_k(&mut out, k);
        out
    }
}

// ---- the worker ------------------------------------------------------------------------

fn worker(s: Arc<Shared>, loader: Option<Loader>) {
    let t = Instant::now();
    if let Some(load) = loader {
        let loaded = catch_unwind(AssertUnwindSafe(|| {
            load(&mut |id, v| {
                if v.len() != s.dim {
                    return;
                }
                let mut m = write(&s.maps);
                if !m.removed.contains(&id) && !m.own.contains_key(&id) && !m.slot_of.contains_key(&id) {
                    m.own.insert(id, v);
                    m.changes += 1;
                }
            })
        }));
        match loaded {
            Ok(Ok(n)) => tracing::debug!("vector index: {n} stored vectors loaded in {} ms", t.elapsed().as_millis()),
            Ok(Err(e)) => tracing::warn!("vector index: cannot load the stored vectors ({e}); notes missing from the index are found by their words"),
            Err(_) => tracing::error!("vector index: the vector loader panicked"),
        }
        write(&s.maps).removed.clear();
        s.loaded.store(true, Ordering::SeqCst);
    }
    if s.stop.load(Ordering::SeqCst) {
        return;
    }
    let ok = catch_unwind(AssertUnwindSafe(|| {
        if !reload(&s) {
            build(&s);
        }
    }))
    .is_ok();
    s.building.store(false, Ordering::SeqCst);
    if !ok {
        give_up(&s, "building");
        return;
    }
    tracing::info!(
        "vector index ready: {} vectors of {} in {} ms",
        {
            let m = read(&s.maps);
            m.own.len() + m.slot_of.len()
        },
        s.model_id,
        t.elapsed().as_millis()
    );
    loop {
        if s.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(inserted) = catch_unwind(AssertUnwindSafe(|| drain(&s))) else {
            give_up(&s, "inserting");
            return;
        };
        let (compact, save_now) = {
            let m = read(&s.maps);
            let live = m.slot_of.len();
            let asked = s.save_requested.swap(false, Ordering::SeqCst) && m.dirty > 0;
            (
                m.tombstones > 1000 && m.tombstones > live / 4,
                m.own.is_empty() && (asked || m.dirty >= 1000.max(live / 10)),
            )
        };
        if compact {
            tracing::info!("vector index: compacting ({} tombstones)", read(&s.maps).tombstones);
            if catch_unwind(AssertUnwindSafe(|| build(&s))).is_err() {
                give_up(&s, "compacting");
                return;
            }
            continue;
        }
        if save_now {
            if let Err(e) = save(&s) {
                tracing::warn!("vector index: cannot write the index files ({e}); they will be rebuilt next start");
            }
        }
        if inserted > 0 {
            continue;
        }
        let (lock, cv) = &s.wake;
        let mut woken = lock.lock().unwrap_or_else(|e| e.into_inner());
        while !*woken && !s.stop.load(Ordering::SeqCst) {
            woken = cv.wait_timeout(woken, std::time::Duration::from_secs(5)).unwrap_or_else(|e| e.into_inner()).0;
            if read(&s.maps).queue.is_empty() && !s.save_requested.load(Ordering::SeqCst) {
                continue;
            }
            break;
        }
        *woken = false;
    }
    if read(&s.maps).dirty > 0 {
        let _ = save(&s);
    }
}

/// A bug in the worker: the graph is dropped and every search is exact from now on (the
/// vectors it held are moved back to the owned copies first, so none is lost).
fn give_up(s: &Shared, doing: &str) {
    tracing::error!("vector index: the index worker failed while {doing}; searching exactly from now on");
    s.broken.store(true, Ordering::SeqCst);
    let mut m = write(&s.maps);
    let mut g = write(&s.graph);
    if let Some(graph) = g.take() {
        let live: Vec<(i64, u32)> = m.slot_of.drain().collect();
        for (id, slot) in live {
            if (slot as usize) < graph.len() && !m.own.contains_key(&id) {
                m.own.insert(id, graph.vector(slot).to_vec());
            }
        }
    }
    m.slots.clear();
    m.queue.clear();
    m.tombstones = 0;
    m.changes += 1;
}

/// Inserts up to [`BATCH`] pending vectors into the graph, one at a time; returns how many.
fn drain(s: &Shared) -> usize {
    let mut done = 0;
    while done < BATCH && !s.stop.load(Ordering::Relaxed) {
        let (id, v) = {
            let mut m = write(&s.maps);
            let next = loop {
                let Some(id) = m.queue.pop_front() else { break None };
                if let Some(v) = m.own.get(&id) {
                    break Some((id, v.clone()));
                }
            };
            match next {
                Some(x) => x,
                None => return done,
            }
        };
        let plan = {
            let g = read(&s.graph);
            let Some(g) = g.as_ref() else {
                write(&s.maps).queue.push_front(id);
                return done;
            };
            g.plan(&v)
        };
        let mut m = write(&s.maps);
        if m.own.get(&id).is_none_or(|cur| *cur != v) {
            // Forgotten or changed while planned (a changed one is queued again).
            continue;
        }
        let mut g = write(&s.graph);
        let Some(graph) = g.as_mut() else { return done };
        match graph.apply(&v, plan) {
            Some(slot) => {
                debug_assert_eq!(slot as usize, m.slots.len());
                m.own.remove(&id);
                m.slots.push(id);
                m.slot_of.insert(id, slot);
                m.dirty += 1;
                done += 1;
            }
            None => m.queue.push_front(id),
        }
    }
    done
}

/// Hands the memory freed by a build or reload (the vectors' transient copies) back to the
/// system, so that the resident size reflects what the index holds.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Builds a fresh graph over every current vector (also compacts: tombstones are left out).
fn build(s: &Shared) {
    let t = Instant::now();
    let (ids, vecs): (Vec<i64>, Vec<f32>) = {
        let m = read(&s.maps);
        let g = read(&s.graph);
        let mut ids: Vec<i64> = m.own.keys().chain(m.slot_of.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut vecs = Vec::with_capacity(ids.len() * s.dim);
        ids.retain(|&id| match m.vector(g.as_ref(), id) {
            Some(v) => {
                vecs.extend_from_slice(v);
                true
            }
            None => false,
        });
        (ids, vecs)
    };
    let mut graph = Graph::new(s.dim, s.params.m, s.params.ef_construction, ids.len());
    for (i, v) in vecs.chunks_exact(s.dim.max(1)).enumerate() {
        if i % 1024 == 0 && s.stop.load(Ordering::Relaxed) {
            return;
        }
        graph.insert(v);
    }
    drop(vecs);
    let mut m = write(&s.maps);
    let mut old = write(&s.graph);
    // Every current vector: in the new graph when it is still the one built from, else owned.
    let mut slots = ids;
    let mut slot_of = IdMap::with_capacity_and_hasher(slots.len(), Default::default());
    let mut tombstones = 0;
    for (slot, id) in slots.iter_mut().enumerate() {
        if m.vector(old.as_ref(), *id) == Some(graph.vector(slot as u32)) && !slot_of.contains_key(id) {
            slot_of.insert(*id, slot as u32);
        } else {
            *id = TOMB;
            tombstones += 1;
        }
    }
    let unmatched: Vec<(i64, u32)> =
        m.slot_of.iter().filter(|(id, _)| !slot_of.contains_key(id)).map(|(i, s)| (*i, *s)).collect();
    if let Some(prev) = old.as_ref() {
        for (id, slot) in unmatched {
            if !m.own.contains_key(&id) && (slot as usize) < prev.len() {
                let v = prev.vector(slot).to_vec();
                m.own.insert(id, v);
            }
        }
    }
    m.own.retain(|id, _| !slot_of.contains_key(id));
    m.queue = m.own.keys().copied().collect();
    m.slots = slots;
    m.slot_of = slot_of;
    m.tombstones = tombstones;
    m.dirty = m.slots.len().max(1);
    m.changes += 1;
    let n = graph.len();
    graph.advise_huge_pages();
    *old = Some(graph);
    drop(old);
    drop(m);
    release_free_memory();
    tracing::info!("vector index: built over {n} vectors in {} ms", t.elapsed().as_millis());
    if let Err(e) = save(s) {
        tracing::warn!("vector index: cannot write the index files ({e}); they will be rebuilt next start");
    }
}

/// Loads the persisted graph when its manifest matches; reconciles it with the vectors.
fn reload(s: &Shared) -> bool {
    let Some(dir) = s.dir.clone() else { return false };
    let t = Instant::now();
    let Some(man) = HnswIndex::manifest(&dir) else {
        if dir.exists() {
            tracing::info!("vector index: no readable manifest in {}; rebuilding", dir.display());
        }
        return false;
    };
    if man.format != FORMAT || man.model_id != s.model_id || man.dim != s.dim {
        tracing::info!("vector index: {} is for another model or format; rebuilding", dir.display());
        return false;
    }
    let slots: Vec<i64> = match std::fs::read(dir.join("slots.bin")) {
        Ok(b) if b.len() == man.slots * 8 => {
            b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0xff; 8]))).collect()
        }
        _ => {
            tracing::warn!("vector index: {} has a missing or truncated slots file; rebuilding", dir.display());
            return false;
        }
    };
    let graph = match Graph::load(&dir.join(GRAPH_FILE), s.dim, s.params.ef_construction) {
        Ok(g) if g.len() == man.slots => g,
        Ok(_) => {
            tracing::warn!("vector index: the graph in {} does not match its manifest; rebuilding", dir.display());
            return false;
        }
        Err(e) => {
            tracing::warn!("vector index: {e}; rebuilding");
            return false;
        }
    };
    // Check the graph's vectors against the current ones: a slot whose note is gone or whose
    // vector changed is a tombstone; current vectors without a slot are inserted.
    let mut m = write(&s.maps);
    let mut slots = slots;
    let mut slot_of = IdMap::with_capacity_and_hasher(slots.len(), Default::default());
    let mut tombstones = 0;
    for (slot, id) in slots.iter_mut().enumerate() {
        let same = *id != TOMB
            && !slot_of.contains_key(id)
            && m.own.get(id).is_some_and(|v| v.as_slice() == graph.vector(slot as u32));
        if same {
            slot_of.insert(*id, slot as u32);
        } else {
            *id = TOMB;
            tombstones += 1;
        }
    }
    let live = slot_of.len();
    let total = m.own.len();
    if live * 2 < total {
        tracing::info!("vector index: persisted graph covers {live} of {total} vectors; rebuilding");
        return false;
    }
    m.own.retain(|id, _| !slot_of.contains_key(id));
    m.queue = m.own.keys().copied().collect();
    m.dirty = m.own.len() + usize::from(tombstones > 0);
    m.slots = slots;
    m.slot_of = slot_of;
    m.tombstones = tombstones;
    m.changes += 1;
    graph.advise_huge_pages();
    *write(&s.graph) = Some(graph);
    drop(m);
    release_free_memory();
    tracing::info!("vector index: reloaded {live} vectors from {} in {} ms", dir.display(), t.elapsed().as_millis());
    true
}

/// Writes the graph, the slots and the manifest into a temporary folder, then swaps it in.
fn save(s: &Shared) -> std::io::Result<()> {
    let Some(dir) = s.dir.clone() else { return Ok(()) };
    let parent = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&parent)?;
    let tmp = tempfile::Builder::new().prefix(".tmp-index-").tempdir_in(&parent)?;
    let (slots, count, max_note_id) = {
        let mut m = write(&s.maps);
        m.dirty = 0;
        let max = m.slot_of.keys().copied().max().unwrap_or(0);
        (m.slots.clone(), m.slot_of.len(), max)
    };
    {
        // Only the worker changes the graph, and it is here: the slots copied above match.
        let g = read(&s.graph);
        let Some(g) = g.as_ref() else { return Ok(()) };
        if g.len() != slots.len() {
            return Err(std::io::Error::other("the graph changed while it was being saved"));
        }
        g.save(&tmp.path().join(GRAPH_FILE))?;
    }
    let bytes: Vec<u8> = slots.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(tmp.path().join("slots.bin"), bytes)?;
    let man =
        Manifest { format: FORMAT, model_id: s.model_id.clone(), dim: s.dim, count, slots: slots.len(), max_note_id };
    std::fs::write(tmp.path().join("manifest.json"), serde_json::to_vec_pretty(&man).map_err(std::io::Error::other)?)?;
    let tmp = tmp.keep();
    let old = parent.join(format!(".old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&old);
    if dir.exists() {
        std::fs::rename(&dir, &old)?;
    }
    std::fs::rename(&tmp, &dir)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}
