//! The HNSW index over the note vectors of one embedder model, persisted in the data
//! directory and rebuilt from SQLite whenever it cannot be trusted.
//!
//! [`HnswIndex`] keeps every current vector once: in the graph ([`Graph`], our own HNSW) for
//! the notes it holds (their int8 codes in memory, their exact rows in a file, read back for
//! the head of a result: issue 49), as an owned copy for the others. The graph is an
//! accelerator:
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
//! Files, under `<data dir>/index/<model id>/`: `graph.bin` and `vectors.f32`
//! ([`Graph::save`]), `slots.bin` (slot → note id, little-endian i64), and `manifest.json`
//! (format, model id, dimension, count, highest note id, slots). They are written to a
//! temporary folder and renamed into place, so a crash leaves the old files or the new ones,
//! and a file once in place is never written again (several processes may read it). A
//! missing, mismatched, truncated or otherwise unreadable set is ignored and the graph is
//! rebuilt from the vectors SQLite holds, in the background.
//!
//! A start reloads the saved graph first and searches it at once; the stored vectors are
//! then streamed from SQLite and each is checked against its slot's row checksum, without
//! being kept: a note whose vector changed, or that is new, is queued as pending, a slot
//! whose note is gone becomes a tombstone (`worker.rs`, `verify`).
//!
//! Here: the index, its maps and its searches; `scan.rs`: the exact scans of small candidate
//! sets (by int8 codes, packed for the sets recalls repeat); `worker.rs`: the background worker
//! (load, reload or build, insert, compact, save).

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::graph::Graph;
use super::rows::row_sum;
use super::{top_k, IdBits, IdMap, VectorIndex};

mod scan;
mod worker;

use scan::{exact, Packs};
use worker::{build, reload, save, worker};

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
/// Format 1 was hnsw_rs's dump, 2 our graph with its exact vectors inside; their files are
/// ignored and rebuilt.
const FORMAT: u32 = 3;
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
    /// Forgotten while the vectors were still loading or being verified (the loader must not
    /// bring them back).
    removed: HashSet<i64>,
    /// Counts the changes that may give an id another vector or none (every change of the
    /// maps but the worker's moves of pending vectors into the graph): a [`Pack`] made at
    /// another count is stale.
    changes: u64,
}

impl Maps {
    /// The current vector of `id` (a graph's row is read back: `None` when it cannot be).
    fn vector<'a>(&'a self, graph: Option<&Graph>, id: i64) -> Option<Cow<'a, [f32]>> {
        if let Some(v) = self.own.get(&id) {
            return Some(Cow::Borrowed(v));
        }
        let slot = *self.slot_of.get(&id)?;
        let g = graph.filter(|g| (slot as usize) < g.len())?;
        let mut row = vec![0.0; g.dim()];
        g.read_row(slot, &mut row).then_some(Cow::Owned(row))
    }

    /// True when `id`'s current vector is `v` (a slot's by its row checksum).
    fn holds(&self, graph: Option<&Graph>, id: i64, v: &[f32]) -> bool {
        if let Some(own) = self.own.get(&id) {
            return own.as_slice() == v;
        }
        match (self.slot_of.get(&id), graph) {
            (Some(&slot), Some(g)) if (slot as usize) < g.len() => g.row_sum(slot) == row_sum(v),
            _ => false,
        }
    }

    /// `query`'s cosine with `id`'s current vector: exact, or by the graph's int8 codes when
    /// its row cannot be read back (the graph then says it is damaged).
    fn cosine(&self, graph: Option<&Graph>, query: &[f32], id: i64, row: &mut Vec<f32>) -> Option<f32> {
        if let Some(v) = self.own.get(&id) {
            return (v.len() == query.len()).then(|| super::fast_dot(query, v));
        }
        let slot = *self.slot_of.get(&id)?;
        let g = graph.filter(|g| (slot as usize) < g.len() && g.dim() == query.len())?;
        row.resize(g.dim(), 0.0);
        Some(g.exact_cosine(query, slot, row).unwrap_or_else(|| g.approx_cosine(query, slot)))
    }

    fn tombstone(&mut self, id: i64) {
        if let Some(slot) = self.slot_of.remove(&id) {
            self.slots[slot as usize] = TOMB;
            self.tombstones += 1;
        }
    }
}

/// Streams the stored vectors into the sink it is given (in the worker: once at the start,
/// and again to repair a graph whose rows fail their checksums).
pub type Loader = Box<dyn Fn(&mut dyn FnMut(i64, Vec<f32>)) -> skillmem_error::Result<usize> + Send + Sync>;

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
    /// The worker is building or loading the graph, or verifying a reloaded one.
    building: AtomicBool,
    /// A reloaded graph is being checked against the stored vectors (removals are recorded
    /// in [`Maps::removed`] meanwhile).
    verifying: AtomicBool,
    /// The worker failed (a bug): stay exact.
    broken: AtomicBool,
    wake: (Mutex<bool>, Condvar),
    stop: AtomicBool,
    /// The process is ending ([`HnswIndex::finish`]): a build saves its progress and stops.
    ending: AtomicBool,
    /// A build (the first, a compaction or a repair's) is under way.
    in_build: AtomicBool,
    /// Files are being written (a save's, or a stopped build's): the unsaved count is
    /// already zero, and the files are not in place yet.
    writing: AtomicBool,
    /// Held through a save or a stopped build's write: two saves of one graph at once (the
    /// worker's and a caller's [`HnswIndex::save`]) read its rows file through one shared
    /// offset, and swap the same folders.
    save_lock: Mutex<()>,
    save_requested: AtomicBool,
    searches: AtomicUsize,
    packs: Mutex<Packs>,
    /// The worker's loader, kept to verify the graph again when a row fails its checksum.
    loader: Mutex<Option<Loader>>,
    /// True from a start that found saved files until the worker has tried to reload them.
    reloading: (Mutex<bool>, Condvar),
}

/// How long a recall waits for a saved graph being reloaded (see [`HnswIndex::warming`]).
const RELOAD_WAIT: std::time::Duration = std::time::Duration::from_millis(300);

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
            verifying: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            stop: AtomicBool::new(false),
            ending: AtomicBool::new(false),
            in_build: AtomicBool::new(false),
            writing: AtomicBool::new(false),
            save_lock: Mutex::new(()),
            save_requested: AtomicBool::new(false),
            searches: AtomicUsize::new(0),
            packs: Mutex::new(Packs::default()),
            loader: Mutex::new(None),
            reloading: (Mutex::new(false), Condvar::new()),
        });
        HnswIndex { shared, worker: Mutex::new(None) }
    }

    /// Starts the background worker: it runs `loader` (none: the vectors are all inserted
    /// already), reloads the persisted graph when it matches, else builds one, then keeps
    /// inserting new vectors.
    pub fn start(&self, loader: Option<Loader>) {
        if loader.is_none() {
            self.shared.loaded.store(true, Ordering::SeqCst);
        } else if self.shared.dir.as_ref().is_some_and(|d| d.join("manifest.json").is_file()) {
            *self.shared.reloading.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
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
                *self.shared.reloading.0.lock().unwrap_or_else(|e| e.into_inner()) = false;
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

    /// Writes the graph files now (benchmarks, tests; one save at a time, the worker's
    /// waits); at the end of a process ask the worker with [`HnswIndex::finish`].
    pub fn save(&self) -> std::io::Result<()> {
        save(&self.shared)
    }

    /// The process is ending: a build under way stops and saves its progress for the next
    /// start to resume, and unsaved inserts are written. Waits for that at most `wait` (not
    /// for a start's loading of the stored vectors); no build starts after this.
    pub fn finish(&self, wait: std::time::Duration) {
        self.shared.ending.store(true, Ordering::SeqCst);
        self.shared.save_requested.store(true, Ordering::SeqCst);
        self.notify();
        let t = Instant::now();
        // The stream of stored vectors at a start is not waited for (nothing of it is lost).
        let busy = |s: &Shared| {
            s.in_build.load(Ordering::SeqCst)
                || s.writing.load(Ordering::SeqCst)
                || (!s.building.load(Ordering::SeqCst) && read(&s.maps).dirty > 0)
        };
        while t.elapsed() < wait && !self.worker_gone() && busy(&self.shared) {
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
        build(&self.shared, None);
    }

    /// As [`HnswIndex::build_now`], stopped after `inserts` insertions the way the end of a
    /// process stops a build ([`HnswIndex::finish`]): its progress is saved, for the next
    /// build to resume (tests).
    pub fn build_part(&self, inserts: usize) {
        self.shared.loaded.store(true, Ordering::SeqCst);
        build(&self.shared, Some(inserts));
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

impl Drop for HnswIndex {
    /// Stops the worker without waiting for it: a build in progress must not hold up the
    /// end of a one-shot command (the files are rebuilt or completed at the next start).
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.notify();
    }
}

/// Candidate ids as a search gets them: known to be ascending (no check needed; with their
/// bits or not), or not.
enum Order<'a> {
    Ascending(&'a [i64]),
    /// Ascending, with the same set's bits for membership.
    Bits(&'a [i64], &'a IdBits),
    Unknown(&'a [i64]),
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
                if m.holds(graph.as_ref(), id, v) {
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
        if !self.shared.loaded.load(Ordering::SeqCst) || self.shared.verifying.load(Ordering::SeqCst) {
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

    fn missing(&self, ids: &[i64]) -> Vec<i64> {
        let m = read(&self.shared.maps);
        ids.iter().copied().filter(|id| !m.own.contains_key(id) && !m.slot_of.contains_key(id)).collect()
    }

    fn len(&self) -> usize {
        let m = read(&self.shared.maps);
        m.own.len() + m.slot_of.len()
    }

    /// While a saved graph is being reloaded (tens of milliseconds at 100,000 notes, a few at
    /// 1,000), waits for it, at most [`RELOAD_WAIT`]: the first recall of a start (or of a
    /// hook's one-shot process) then searches the graph instead of ranking a large skill
    /// lexically or loading a small one's vectors one by one from the store.
    fn warming(&self) -> bool {
        let (lock, cv) = &self.shared.reloading;
        let pending = lock.lock().unwrap_or_else(|e| e.into_inner());
        if *pending {
            drop(cv.wait_timeout_while(pending, RELOAD_WAIT, |p| *p).unwrap_or_else(|e| e.into_inner()));
        }
        !self.shared.loaded.load(Ordering::SeqCst)
    }

    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        self.search_ef(query, Order::Unknown(candidates), k, self.shared.params.ef_search.max(2 * k), true)
    }

    fn search_sorted(&self, query: &[f32], candidates: &[i64], bits: Option<&IdBits>, k: usize) -> Vec<(i64, f32)> {
        debug_assert!(candidates.windows(2).all(|w| w[0] < w[1]), "candidates must be ascending");
        let order = match bits {
            Some(b) => Order::Bits(candidates, b),
            None => Order::Ascending(candidates),
        };
        self.search_ef(query, order, k, self.shared.params.ef_search.max(2 * k), true)
    }

    fn nearest(&self, query: &[f32], candidates: &[i64], min: f32) -> Option<(i64, f32)> {
        let (ef, margin) = super::nearest_params();
        let first = self.search_ef(query, Order::Unknown(candidates), 1, ef, false).into_iter().next();
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
        self.search_ef(query, Order::Unknown(candidates), 1, s.params.ef_search, false)
            .into_iter()
            .next()
            .filter(|(_, s)| *s >= min)
    }

    fn neighbours(&self, query: &[f32], candidates: &[i64], min: f32, k: usize) -> Vec<(i64, f32)> {
        // As [`VectorIndex::nearest`]: a short list first, the longer one only when the best
        // found is close below `min` and the set was not scanned exactly.
        let (ef, margin) = super::nearest_params();
        let mut v = self.search_ef(query, Order::Unknown(candidates), k, ef.max(k), false);
        let best = v.first().map(|x| x.1);
        if best.is_none_or(|b| b < min && b >= min - margin) && !self.scanned_exactly(candidates.len(), self.len()) {
            v = self.search_ef(query, Order::Unknown(candidates), k, self.shared.params.ef_search.max(k), false);
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
    fn search_ef(&self, query: &[f32], candidates: Order<'_>, k: usize, ef: usize, pack: bool) -> Vec<(i64, f32)> {
        let (candidates, known_sorted, bits) = match candidates {
            Order::Ascending(c) => (c, true, None),
            Order::Bits(c, b) => (c, true, Some(b)),
            Order::Unknown(c) => (c, false, None),
        };
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
        let sorted = known_sorted || candidates.windows(2).all(|w| w[0] < w[1]);
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
        let member = |id: i64| match bits {
            Some(b) => b.contains(id),
            None => cands.binary_search(&id).is_ok(),
        };
        let keep = |slot: usize| {
            let id = slots.get(slot).copied().unwrap_or(TOMB);
            id != TOMB && member(id)
        };
        s.searches.fetch_add(1, Ordering::Relaxed);
        let mut out: Vec<(i64, f32)> =
            g.search(query, k, ef.max(k), &keep).into_iter().map(|(slot, score)| (slots[slot], score)).collect();
        if g.damaged() {
            // The worker verifies the graph against the stored vectors again.
            self.notify();
        }
        // Vectors not in the graph yet: exactly.
        let extra = maps.own.keys().copied().filter(|id| member(*id));
        out.extend(exact(&maps, Some(g), query, extra, k));
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.dedup_by_key(|x| x.0);
        top_k(&mut out, k);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::unit;

    /// An index over the unit vectors of ids `1..=n`, built by its worker and ready.
    fn ready(n: i64, dim: usize) -> HnswIndex {
        let ix = HnswIndex::new("m", dim, None, HnswParams::default());
        ix.start(Some(Box::new(move |sink: &mut dyn FnMut(i64, Vec<f32>)| {
            for id in 1..=n {
                sink(id, unit(id as u64, dim));
            }
            Ok(n as usize)
        })));
        ix.wait_ready();
        ix
    }

    /// A candidate set searched again is answered from its pack (the codes side by side, and a
    /// small set's rows; packed at its second search) as the scan answers it, to the bit: sets
    /// scored all exactly (pending vectors among them) and sets ranked by their codes then
    /// rescored, around the sizes where the way changes. A set scored all exactly is the exact
    /// answer.
    #[test]
    fn a_packed_set_answers_as_its_scan() {
        const DIM: usize = 16;
        let n = 1200i64;
        let ix = ready(n, DIM);
        let exact = crate::ExactIndex::new("m");
        for id in 1..=n + 3 {
            exact.insert(id, &unit(id as u64, DIM));
        }
        // Pending until the worker moves them into the graph (a set scored all exactly answers
        // the same either way).
        for id in n + 1..=n + 3 {
            ix.insert(id, &unit(id as u64, DIM));
        }
        for k in [5usize, 50] {
            let want = crate::graph::rescore_depth(k);
            for len in [1, 7, want - 1, want, want + 1, scan::ROWS_MAX, scan::ROWS_MAX + 1, 700] {
                let mut set: Vec<i64> = (1..=n).step_by(n as usize / len).take(len).collect();
                if len <= want && len > 3 {
                    set.truncate(len - 3);
                    set.extend(n + 1..=n + 3);
                }
                for q in 0..8u64 {
                    let q = unit(q + 2_000_000, DIM);
                    let case = format!("k {k}, {len} candidates");
                    let scanned = ix.search_ef(&q, Order::Unknown(&set), k, 64, false);
                    assert_eq!(scanned.len(), k.min(set.len()), "{case}");
                    // Packed at its second search, used from the third.
                    for search in ["first", "second", "third"] {
                        assert_eq!(ix.search(&q, &set, k), scanned, "{case}: the {search} search");
                    }
                    if len <= want {
                        let ids = |v: &[(i64, f32)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
                        assert_eq!(ids(&scanned), ids(&exact.search(&q, &set, k)), "{case}: exact");
                    }
                }
            }
        }
    }

    /// A graph search over candidates given with their bits answers as the same search over
    /// their ids, for sets large enough to have bits and to be searched through the graph.
    #[test]
    fn a_search_with_the_candidates_bits_answers_as_with_their_ids() {
        const DIM: usize = 16;
        let n = 2 * IdBits::MIN as i64;
        let ix = ready(n, DIM);
        let all: Vec<i64> = (1..=n).collect();
        let odd: Vec<i64> = all.iter().copied().filter(|i| i % 2 == 1).collect();
        let thirds: Vec<i64> = all.iter().copied().filter(|i| i % 3 != 0).collect();
        for (case, cands) in [("all", &all), ("odd", &odd), ("two in three", &thirds)] {
            let bits = IdBits::of_sorted(cands).expect("large and dense");
            assert!(!ix.scanned_exactly(cands.len(), ix.len()), "{case}: searched through the graph");
            for q in 0..20u64 {
                let q = unit(q + 1_000_000, DIM);
                let by_ids = ix.search_sorted(&q, cands, None, 10);
                assert_eq!(by_ids.len(), 10, "{case}");
                assert!(by_ids.iter().all(|(id, _)| cands.binary_search(id).is_ok()), "{case}");
                assert_eq!(ix.search_sorted(&q, cands, Some(&bits), 10), by_ids, "{case}");
            }
        }
    }
}
