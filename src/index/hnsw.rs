//! The HNSW index (hnsw_rs) over the note vectors of one embedder model, persisted in the data
//! directory and rebuilt from SQLite whenever it cannot be trusted.
//!
//! [`HnswIndex`] keeps every current vector in memory (exact search, and the source for a
//! rebuild) and an approximate graph over them. The graph is an accelerator only:
//!
//! - each note id maps to a *slot* (the id hnsw_rs knows); an edited or forgotten note's old
//!   slot is a tombstone, filtered out of every search; when tombstones pile up the graph is
//!   rebuilt without them (compaction);
//! - new vectors are *pending* until a background worker has inserted them; pending vectors
//!   are searched exactly and merged with the graph's answer, so a write is visible at once;
//! - small candidate sets (a skill with few notes, or a skill that is a small share of the
//!   index) are scanned exactly: filtering inside HNSW is slow at low selectivity;
//! - every call into hnsw_rs runs under `catch_unwind`: a panic inside the crate (it asserts
//!   on data it does not like) disables the graph, logs, and search falls back to exact.
//!
//! Files, under `<data dir>/index/<model id>/`: `notes.hnsw.graph` and `notes.hnsw.data`
//! (hnsw_rs's dump), `slots.bin` (slot → note id, little-endian i64), and `manifest.json`
//! (format, model id, dimension, count, highest note id, slots). They are written to a
//! temporary folder and renamed into place, so a crash leaves the old files or the new ones.
//! A missing, mismatched, truncated or otherwise unreadable set is ignored and the graph is
//! rebuilt from the vectors SQLite holds, in the background.
//!
//! hnsw_rs prints to stdout in places; the server keeps frames on a duplicate of fd 1 and
//! points fd 1 at stderr, so such output can never reach the frame stream.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::{Hnsw, Point};
use hnsw_rs::hnswio::HnswIo;
use serde::{Deserialize, Serialize};

use super::{fast_dot, top_k, VectorIndex};

/// Cosine distance `1 - a·b` for unit vectors, clamped at 0. hnsw_rs's own `DistDot` asserts
/// the distance is non-negative, and rounding makes a unit vector's distance to itself
/// slightly negative: a query equal to a stored vector would panic.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClampedDot;

impl Distance<f32> for ClampedDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - fast_dot(a, b)).max(0.0)
    }
}

/// Graph parameters.
#[derive(Debug, Clone, Copy)]
pub struct HnswParams {
    /// Links per node (hnsw_rs's `max_nb_connection`).
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

/// hnsw_rs's `file_dump` only works with the maximum number of layers.
const MAX_LAYER: usize = 16;
const TOMB: i64 = -1;
const FORMAT: u32 = 1;
const BASENAME: &str = "notes";
/// Inserts per worker batch (the graph takes them in parallel).
const BATCH: usize = 1024;

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

type Graph = Hnsw<'static, f32, ClampedDot>;

/// A vector held by the index: owned until the graph holds it, then the graph's own copy
/// (so that 100k vectors are held once, not twice).
enum Stored {
    Own(Vec<f32>),
    Graph(Arc<Point<'static, f32>>),
}

impl Stored {
    fn v(&self) -> &[f32] {
        match self {
            Stored::Own(v) => v,
            Stored::Graph(p) => p.get_v(),
        }
    }
}

#[derive(Default)]
struct Maps {
    /// Every current vector, by note id.
    vectors: HashMap<i64, Stored>,
    /// Points of each graph layer already adopted into `vectors`.
    adopted: Vec<usize>,
    /// slot → note id (`TOMB` when superseded or forgotten).
    slots: Vec<i64>,
    /// note id → its live slot.
    slot_of: HashMap<i64, usize>,
    /// Not yet handed to the worker.
    pending: HashSet<i64>,
    /// Handed to the worker, not yet searchable in the graph.
    inflight: HashSet<i64>,
    tombstones: usize,
    /// Inserts since the files were last written.
    dirty: usize,
    /// Forgotten while the vectors were still loading (the loader must not bring them back).
    removed: HashSet<i64>,
}

/// Streams the stored vectors into the sink it is given (run once, in the worker).
pub type Loader = Box<dyn FnOnce(&mut dyn FnMut(i64, Vec<f32>)) -> crate::error::Result<usize> + Send>;

struct Shared {
    model_id: String,
    dim: usize,
    dir: Option<PathBuf>,
    params: HnswParams,
    maps: RwLock<Maps>,
    graph: RwLock<Option<Arc<Graph>>>,
    /// The flat copy searched instead of the graph (see [`Flat`]).
    flat: RwLock<Option<Arc<Flat>>>,
    /// Vectors are all loaded (before that, big candidate sets skip the vector rung).
    loaded: AtomicBool,
    /// The worker is building or loading the graph.
    building: AtomicBool,
    /// The graph panicked once: stay exact.
    broken: AtomicBool,
    wake: (Mutex<bool>, Condvar),
    stop: AtomicBool,
    save_requested: AtomicBool,
    searches: AtomicUsize,
}

/// A flat copy of the graph, searched without hnsw_rs's per-query hash map and
/// reference-counted heap entries (its `search` spends most of its time there, not in
/// distances). Laid out like hnswlib's level 0: one block per slot, 64-byte aligned, holding
/// the slot's layer-0 neighbours (slot numbers) and its vector in int8 (one scale per vector),
/// so that a candidate's links arrive with the vector whose distance put it in the queue, and
/// each distance reads 6 cache lines instead of 24 (a 384-float vector is rarely cached). The
/// walk compares int8 distances; the final list is re-scored with the exact vectors (the
/// graph's own), so scores are exact cosines.
///
/// It covers the slots below `len`; the worker refreshes it as the graph grows, and the few
/// newer slots are searched exactly until then. Links the graph gained after the copy are
/// missing from it, which only costs a little recall until the next refresh.
struct Flat {
    /// Slots covered: `0..len`.
    len: usize,
    /// The graph's points by slot (their vectors are the graph's own copy). Held so that the
    /// vectors `exact` points into live as long as the copy.
    _points: Vec<Arc<Point<'static, f32>>>,
    /// Where each slot's exact vector starts (inside its point, which never moves or changes).
    exact: Vec<*const f32>,
    dim: usize,
    /// `len` blocks of `stride` lines: scale (f32), neighbour count (u32), `max_links`
    /// neighbours (u32), `dim` int8 codes.
    blocks: Vec<Line>,
    stride: usize,
    max_links: usize,
    /// Upper layers (1..): slot → neighbours, for the greedy descent.
    upper: Vec<HashMap<u32, Vec<u32>>>,
    entry: u32,
}

/// One cache line of [`Flat::blocks`].
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

// SAFETY: `exact` points into vectors owned by `_points` (immutable `Arc`s held by the same
// value), so sharing a `Flat` between threads shares only immutable floats.
unsafe impl Send for Flat {}
// SAFETY: as above.
unsafe impl Sync for Flat {}

/// Asks the CPU to start loading `lines` cache lines from `p` (a hint; no effect on results).
#[inline(always)]
fn prefetch(p: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for l in 0..lines {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * l).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}

/// A vector in int8: `v ≈ scale × codes`, `scale` = max |v_i| / 127.
fn quantize(v: &[f32], codes: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.fill(0);
        return 0.0;
    }
    let inv = 127.0 / max;
    for (c, x) in codes.iter_mut().zip(v) {
        *c = (x * inv).round().clamp(-127.0, 127.0) as i8;
    }
    max / 127.0
}

/// `q · codes` over the common prefix (the caller multiplies by the scale).
#[inline]
fn dot_i8(q: &[f32], codes: &[i8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { avx2_dot_i8(q, codes) };
        }
    }
    portable_dot_i8(q, codes)
}

fn portable_dot_i8(q: &[f32], codes: &[i8]) -> f32 {
    let n = q.len().min(codes.len());
    let mut acc = [0.0f32; 8];
    let mut cq = q[..n].chunks_exact(8);
    let mut cc = codes[..n].chunks_exact(8);
    for (x, c) in (&mut cq).zip(&mut cc) {
        for i in 0..8 {
            acc[i] += x[i] * f32::from(c[i]);
        }
    }
    let tail: f32 = cq.remainder().iter().zip(cc.remainder()).map(|(x, c)| x * f32::from(*c)).sum();
    acc.iter().sum::<f32>() + tail
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_dot_i8(q: &[f32], codes: &[i8]) -> f32 {
    use std::arch::x86_64::*;
    let n = q.len().min(codes.len());
    let (pq, pc) = (q.as_ptr(), codes.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (all loads): i + 32 <= n, resp. i + 8 <= n, keep every read inside both slices.
    while i + 32 <= n {
        for (j, acc) in acc.iter_mut().enumerate() {
            let c = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(pc.add(i + 8 * j).cast())));
            *acc = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(i + 8 * j)), c, *acc);
        }
        i += 32;
    }
    while i + 8 <= n {
        let c = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(pc.add(i).cast())));
        acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(i)), c, acc[0]);
        i += 8;
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let q4 = _mm_add_ps(_mm256_extractf128_ps(s, 1), _mm256_castps256_ps128(s));
    let q4 = _mm_add_ps(q4, _mm_movehl_ps(q4, q4));
    let q4 = _mm_add_ss(q4, _mm_shuffle_ps(q4, q4, 1));
    let mut sum = _mm_cvtss_f32(q4);
    while i < n {
        sum += *pq.add(i) * f32::from(*pc.add(i));
        i += 1;
    }
    sum
}

#[derive(Clone, Copy)]
struct Scored(f32, u32);

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

thread_local! {
    /// Per thread: a visit mark per slot and the current mark.
    static VISITED: std::cell::RefCell<(Vec<u32>, u32)> = const { std::cell::RefCell::new((Vec::new(), 0)) };
}

/// Byte offsets inside a block.
const SCALE_AT: usize = 0;
const COUNT_AT: usize = 4;
const LINKS_AT: usize = 8;

impl Flat {
    /// Copies the links and vectors of `graph` (whose slots are its points' origin ids).
    fn new(graph: &Graph) -> Option<Flat> {
        let n = graph.get_nb_point();
        let pi = graph.get_point_indexation();
        let top = graph.get_max_level_observed() as usize;
        let mut points: Vec<Option<Arc<Point<'static, f32>>>> = vec![None; n];
        let mut layer0: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut upper: Vec<HashMap<u32, Vec<u32>>> = vec![HashMap::new(); top];
        let mut entry = None;
        for layer in 0..=top {
            for p in pi.get_layer_iterator(layer) {
                let slot = p.get_origin_id();
                if slot >= n {
                    // Inserted while we copy: left to the exact scan.
                    continue;
                }
                if layer == top && entry.is_none() {
                    entry = Some(slot as u32);
                }
                for (l, list) in p.get_neighborhood_id().into_iter().enumerate().take(top + 1) {
                    let ids: Vec<u32> = list.iter().map(|nb| nb.d_id).filter(|&d| d < n).map(|d| d as u32).collect();
                    if l == 0 {
                        layer0[slot] = ids;
                    } else if !ids.is_empty() {
                        upper[l - 1].insert(slot as u32, ids);
                    }
                }
                points[slot] = Some(p);
            }
        }
        let points: Vec<Arc<Point<'static, f32>>> = points.into_iter().collect::<Option<Vec<_>>>()?;
        let dim = points.first().map_or(0, |p| p.get_v().len());
        if points.iter().any(|p| p.get_v().len() != dim) {
            return None;
        }
        let exact = points.iter().map(|p| p.get_v().as_ptr()).collect();
        let max_links = layer0.iter().map(Vec::len).max().unwrap_or(0);
        let stride = (LINKS_AT + 4 * max_links + dim).div_ceil(64);
        let mut blocks = vec![Line([0; 64]); n * stride];
        let mut codes = vec![0i8; dim];
        for (slot, (p, links)) in points.iter().zip(&layer0).enumerate() {
            let scale = quantize(p.get_v(), &mut codes);
            let block: &mut [u8] = bytemuck_lines(&mut blocks[slot * stride..(slot + 1) * stride]);
            block[SCALE_AT..SCALE_AT + 4].copy_from_slice(&scale.to_le_bytes());
            block[COUNT_AT..COUNT_AT + 4].copy_from_slice(&(links.len() as u32).to_le_bytes());
            for (i, l) in links.iter().enumerate() {
                block[LINKS_AT + 4 * i..LINKS_AT + 4 * i + 4].copy_from_slice(&l.to_le_bytes());
            }
            let at = LINKS_AT + 4 * max_links;
            for (b, c) in block[at..at + dim].iter_mut().zip(&codes) {
                *b = *c as u8;
            }
        }
        Some(Flat { len: n, _points: points, exact, dim, blocks, stride, max_links, upper, entry: entry? })
    }

    #[inline]
    fn block(&self, slot: u32) -> &[u8] {
        let s = slot as usize * self.stride;
        bytes_of_lines(&self.blocks[s..s + self.stride])
    }

    /// The layer-0 neighbours of `slot`.
    #[inline]
    fn links(&self, slot: u32) -> impl Iterator<Item = u32> + '_ {
        let b = self.block(slot);
        let count = u32::from_le_bytes([b[COUNT_AT], b[COUNT_AT + 1], b[COUNT_AT + 2], b[COUNT_AT + 3]]) as usize;
        b[LINKS_AT..LINKS_AT + 4 * count.min(self.max_links)]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    /// The int8 distance `1 - q·v` (approximate).
    #[inline]
    fn dist(&self, q: &[f32], slot: u32) -> f32 {
        let b = self.block(slot);
        let scale = f32::from_le_bytes([b[SCALE_AT], b[SCALE_AT + 1], b[SCALE_AT + 2], b[SCALE_AT + 3]]);
        let at = LINKS_AT + 4 * self.max_links;
        // SAFETY: i8 and u8 have the same size and alignment; any byte is a valid i8.
        let codes: &[i8] = unsafe { std::slice::from_raw_parts(b[at..].as_ptr().cast::<i8>(), self.dim) };
        1.0 - scale * dot_i8(q, codes)
    }

    /// The exact cosine of `q` and `slot`'s vector.
    #[inline]
    fn cosine(&self, q: &[f32], slot: u32) -> f32 {
        // SAFETY: `exact[slot]` starts a vector of `dim` floats owned by `_points[slot]`,
        // which lives as long as `self` and is never written.
        fast_dot(q, unsafe { std::slice::from_raw_parts(self.exact[slot as usize], self.dim) })
    }

    /// The `k` nearest slots passing `keep`, best first, as (slot, cosine); `ef` candidates.
    fn search(&self, q: &[f32], k: usize, ef: usize, keep: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let ef = ef.max(k);
        let mut ep = self.entry;
        let mut d = self.dist(q, ep);
        for layer in self.upper.iter().rev() {
            loop {
                let mut moved = false;
                for &nb in layer.get(&ep).map(Vec::as_slice).unwrap_or(&[]) {
                    let dn = self.dist(q, nb);
                    if dn < d {
                        (ep, d, moved) = (nb, dn, true);
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        VISITED.with(|cell| {
            let mut guard = cell.borrow_mut();
            let (marks, mark) = &mut *guard;
            if marks.len() < self.len {
                marks.resize(self.len, 0);
            }
            *mark = mark.wrapping_add(1);
            if *mark == 0 {
                marks.fill(0);
                *mark = 1;
            }
            let mark = *mark;
            let mut cands: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(ef * 4);
            let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef + 1);
            let mut fresh: Vec<u32> = Vec::with_capacity(self.max_links);
            marks[ep as usize] = mark;
            cands.push(Reverse(Scored(d, ep)));
            if keep(ep as usize) {
                best.push(Scored(d, ep));
            }
            while let Some(Reverse(Scored(dc, c))) = cands.pop() {
                if best.len() >= ef && best.peek().is_some_and(|w| dc > w.0) {
                    break;
                }
                // The unvisited neighbours first, their blocks requested ahead: each distance
                // then finds the next block on its way.
                fresh.clear();
                for nb in self.links(c) {
                    let seen = &mut marks[nb as usize];
                    if *seen == mark {
                        continue;
                    }
                    *seen = mark;
                    fresh.push(nb);
                }
                for &nb in fresh.iter().take(PREFETCH_AHEAD) {
                    prefetch(self.block(nb).as_ptr(), self.stride);
                }
                for (j, &nb) in fresh.iter().enumerate() {
                    if let Some(&next) = fresh.get(j + PREFETCH_AHEAD) {
                        prefetch(self.block(next).as_ptr(), self.stride);
                    }
                    let dn = self.dist(q, nb);
                    if best.len() < ef || best.peek().is_some_and(|w| dn < w.0) {
                        cands.push(Reverse(Scored(dn, nb)));
                        if keep(nb as usize) {
                            best.push(Scored(dn, nb));
                            if best.len() > ef {
                                best.pop();
                            }
                        }
                    }
                }
            }
            // Re-scored exactly: the int8 distances only chose the list.
            let mut out: Vec<(usize, f32)> = best.into_iter().map(|s| (s.1 as usize, self.cosine(q, s.1))).collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(k);
            out
        })
    }
}

/// Neighbours whose blocks are requested ahead of the distance being computed.
const PREFETCH_AHEAD: usize = 2;

fn bytes_of_lines(lines: &[Line]) -> &[u8] {
    // SAFETY: `Line` is 64 plain bytes with no padding.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast::<u8>(), lines.len() * 64) }
}

fn bytemuck_lines(lines: &mut [Line]) -> &mut [u8] {
    // SAFETY: `Line` is 64 plain bytes with no padding.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<u8>(), lines.len() * 64) }
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
            flat: RwLock::new(None),
            loaded: AtomicBool::new(false),
            building: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            stop: AtomicBool::new(false),
            save_requested: AtomicBool::new(false),
            searches: AtomicUsize::new(0),
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
                tracing::error!("vector index: cannot start the index worker ({e}); vectors are not searched");
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
        if self.shared.building.load(Ordering::SeqCst) || read(&self.shared.graph).is_none() {
            return false;
        }
        let m = read(&self.shared.maps);
        m.pending.is_empty() && m.inflight.is_empty()
    }

    /// Vectors waiting for the graph.
    pub fn pending(&self) -> usize {
        let m = read(&self.shared.maps);
        m.pending.len() + m.inflight.len()
    }

    /// Tombstoned slots in the graph.
    pub fn tombstones(&self) -> usize {
        read(&self.shared.maps).tombstones
    }

    /// Writes the graph files now. Only while no worker runs (benchmarks, tests); a running
    /// worker is asked with [`HnswIndex::request_save`].
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
        let flat = read(&self.shared.flat).clone()?;
        let slots = &maps.slots;
        let keep = |slot: usize| slots.get(slot).is_some_and(|&id| id != TOMB);
        let found = flat.search(query, k, ef, &keep);
        Some(found.into_iter().map(|(slot, score)| (slots[slot], score)).collect())
    }

    /// Searches hnsw_rs's own graph (no flat copy, no exact merge), for benchmarks.
    pub fn search_hnsw_rs(&self, query: &[f32], k: usize, ef: usize) -> Option<Vec<(i64, f32)>> {
        let graph = read(&self.shared.graph).clone()?;
        let maps = read(&self.shared.maps);
        let found = catch_unwind(AssertUnwindSafe(|| graph.search(query, k, ef.max(k)))).ok()?;
        Some(
            found
                .into_iter()
                .filter_map(|n| {
                    let id = *maps.slots.get(n.d_id)?;
                    (id != TOMB).then_some((id, 1.0 - n.distance))
                })
                .collect(),
        )
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

    fn exact(&self, maps: &Maps, query: &[f32], ids: impl Iterator<Item = i64>, k: usize) -> Vec<(i64, f32)> {
        let mut scored: Vec<(i64, f32)> = ids
            .filter_map(|id| {
                maps.vectors
                    .get(&id)
                    .map(Stored::v)
                    .filter(|v| v.len() == query.len())
                    .map(|v| (id, fast_dot(query, v)))
            })
            .collect();
        top_k(&mut scored, k);
        scored
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

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

fn tombstone(m: &mut Maps, id: i64) {
    if let Some(slot) = m.slot_of.remove(&id) {
        m.slots[slot] = TOMB;
        m.tombstones += 1;
    }
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
            if m.vectors.get(&id).is_some_and(|old| old.v() == v) {
                return;
            }
            tombstone(&mut m, id);
            m.vectors.insert(id, Stored::Own(v.to_vec()));
            m.pending.insert(id);
        }
        self.notify();
    }

    fn remove(&self, id: i64) {
        let mut m = write(&self.shared.maps);
        if !self.shared.loaded.load(Ordering::SeqCst) {
            m.removed.insert(id);
        }
        m.vectors.remove(&id);
        m.pending.remove(&id);
        m.inflight.remove(&id);
        tombstone(&mut m, id);
    }

    fn contains(&self, id: i64) -> bool {
        read(&self.shared.maps).vectors.contains_key(&id)
    }

    fn len(&self) -> usize {
        read(&self.shared.maps).vectors.len()
    }

    fn warming(&self) -> bool {
        !self.shared.loaded.load(Ordering::SeqCst)
    }

    fn search(&self, query: &[f32], candidates: &[i64], k: usize) -> Vec<(i64, f32)> {
        self.search_ef(query, candidates, k, self.shared.params.ef_search.max(2 * k))
    }

    fn nearest(&self, query: &[f32], candidates: &[i64], min: f32) -> Option<(i64, f32)> {
        let (ef, margin) = super::nearest_params();
        let first = self.search_ef(query, candidates, 1, ef).into_iter().next();
        match first {
            Some((id, s)) if s >= min => return Some((id, s)),
            Some((_, s)) if s < min - margin => return None,
            None if candidates.is_empty() => return None,
            _ => {}
        }
        // Close below the threshold: a longer list may find one above it (a scan, for sets
        // searched exactly, gave the answer already).
        let s = &self.shared;
        let total = read(&s.maps).vectors.len().max(1);
        if candidates.len() <= s.params.exact_max || (candidates.len() as f32) < s.params.min_selectivity * total as f32
        {
            return None;
        }
        self.search_ef(query, candidates, 1, s.params.ef_search).into_iter().next().filter(|(_, s)| *s >= min)
    }
}

impl HnswIndex {
    /// [`VectorIndex::search`] with `ef` candidates in the graph.
    fn search_ef(&self, query: &[f32], candidates: &[i64], k: usize, ef: usize) -> Vec<(i64, f32)> {
        if k == 0 || candidates.is_empty() {
            return vec![];
        }
        let s = &self.shared;
        let graph = if s.broken.load(Ordering::Relaxed) { None } else { read(&s.graph).clone() };
        let maps = read(&s.maps);
        let total = maps.vectors.len().max(1);
        let small = candidates.len() <= s.params.exact_max
            || (candidates.len() as f32) < s.params.min_selectivity * total as f32;
        let graph = match graph {
            Some(g) if !small && query.len() == s.dim => g,
            _ => return self.exact(&maps, query, candidates.iter().copied(), k),
        };
        // Read under the maps lock: a rebuild swaps slots and flat copy under it together.
        let flat = read(&s.flat).clone().filter(|f| f.len <= maps.slots.len());
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
        let filter = |slot: &usize| {
            let id = slots.get(*slot).copied().unwrap_or(TOMB);
            id != TOMB && cands.binary_search(&id).is_ok()
        };
        let ef = ef.max(k);
        s.searches.fetch_add(1, Ordering::Relaxed);
        if let Some(flat) = flat {
            let keep = |slot: usize| filter(&slot);
            let mut out: Vec<(i64, f32)> =
                flat.search(query, k, ef, &keep).into_iter().map(|(slot, score)| (slots[slot], score)).collect();
            // Slots newer than the flat copy, and vectors not in the graph yet: exactly.
            let newer = slots[flat.len..].iter().copied().filter(|&id| id != TOMB);
            let extra = newer
                .chain(maps.pending.iter().chain(maps.inflight.iter()).copied())
                .filter(|id| cands.binary_search(id).is_ok());
            out.extend(self.exact(&maps, query, extra, k));
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.dedup_by_key(|x| x.0);
            top_k(&mut out, k);
            return out;
        }
        let found = catch_unwind(AssertUnwindSafe(|| graph.search_filter(query, k, ef, Some(&filter))));
        let found = match found {
            Ok(f) => f,
            Err(_) => {
                drop(maps);
                tracing::error!("vector index: hnsw_rs panicked during a search; searching exactly from now on");
                s.broken.store(true, Ordering::SeqCst);
                *write(&s.graph) = None;
                *write(&s.flat) = None;
                let maps = read(&s.maps);
                return self.exact(&maps, query, candidates.iter().copied(), k);
            }
        };
        let mut out: Vec<(i64, f32)> = found
            .into_iter()
            .filter_map(|n| {
                let id = *slots.get(n.d_id)?;
                let v = maps.vectors.get(&id)?;
                Some((id, fast_dot(query, v.v())))
            })
            .collect();
        let extra =
            maps.pending.iter().chain(maps.inflight.iter()).copied().filter(|id| cands.binary_search(id).is_ok());
        out.extend(self.exact(&maps, query, extra, k));
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
                if !m.removed.contains(&id) && !m.vectors.contains_key(&id) {
                    m.vectors.insert(id, Stored::Own(v));
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
    if !reload(&s) {
        build(&s);
    }
    s.building.store(false, Ordering::SeqCst);
    tracing::info!(
        "vector index ready: {} vectors of {} in {} ms",
        read(&s.maps).vectors.len(),
        s.model_id,
        t.elapsed().as_millis()
    );
    loop {
        if s.stop.load(Ordering::SeqCst) {
            break;
        }
        let inserted = drain(&s);
        if s.broken.load(Ordering::SeqCst) {
            return;
        }
        let (compact, save_now) = {
            let m = read(&s.maps);
            let live = m.slot_of.len();
            let asked = s.save_requested.swap(false, Ordering::SeqCst) && m.dirty > 0;
            (
                m.tombstones > 1000 && m.tombstones > live / 4,
                m.pending.is_empty() && (asked || m.dirty >= 1000.max(live / 10)),
            )
        };
        if compact {
            tracing::info!("vector index: compacting ({} tombstones)", read(&s.maps).tombstones);
            build(&s);
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
            if read(&s.maps).pending.is_empty() && !s.save_requested.load(Ordering::SeqCst) {
                continue;
            }
            break;
        }
        *woken = false;
    }
    let dirty = read(&s.maps).dirty;
    if dirty > 0 && !s.broken.load(Ordering::SeqCst) {
        let _ = save(&s);
    }
}

/// Inserts a batch of pending vectors into the graph; returns how many.
fn drain(s: &Shared) -> usize {
    let Some(graph) = read(&s.graph).clone() else { return 0 };
    let batch: Vec<(usize, Vec<f32>)> = {
        let mut m = write(&s.maps);
        let ids: Vec<i64> = m.pending.iter().copied().take(BATCH).collect();
        let mut batch = Vec::with_capacity(ids.len());
        for id in ids {
            m.pending.remove(&id);
            let Some(v) = m.vectors.get(&id).map(|s| s.v().to_vec()) else { continue };
            let slot = m.slots.len();
            m.slots.push(id);
            m.slot_of.insert(id, slot);
            m.inflight.insert(id);
            batch.push((slot, v));
        }
        batch
    };
    if batch.is_empty() {
        return 0;
    }
    let data: Vec<(&[f32], usize)> = batch.iter().map(|(slot, v)| (v.as_slice(), *slot)).collect();
    let ok = catch_unwind(AssertUnwindSafe(|| {
        if data.len() > 16 {
            graph.parallel_insert_slice(&data);
        } else {
            for d in &data {
                graph.insert_slice(*d);
            }
        }
    }))
    .is_ok();
    let mut m = write(&s.maps);
    for (slot, _) in &batch {
        let id = m.slots[*slot];
        if id != TOMB {
            m.inflight.remove(&id);
        }
    }
    m.dirty += batch.len();
    // Adopting walks every point of the graph (hnsw_rs offers no way to start at the new
    // ones), under the maps' write lock: done once the owned copies pile up, not per batch
    // (per batch it was a quarter of the worker's time at 65k notes, and held up searches).
    let n = graph.get_nb_point();
    if ok && n.saturating_sub(m.adopted.iter().sum::<usize>()) > FLAT_LAG.max(n / 50) {
        adopt(&graph, &mut m);
    }
    drop(m);
    if !ok {
        tracing::error!("vector index: hnsw_rs panicked while inserting; searching exactly from now on");
        s.broken.store(true, Ordering::SeqCst);
        *write(&s.graph) = None;
        *write(&s.flat) = None;
        return batch.len();
    }
    // Refresh the flat copy once the slots it does not cover would slow the exact merge.
    let covered = read(&s.flat).as_ref().map_or(0, |f| f.len);
    let n = graph.get_nb_point();
    if n - covered.min(n) > FLAT_LAG.max(n / 50) {
        if let Some(flat) = flat_of(&graph) {
            *write(&s.flat) = Some(flat);
        }
    }
    batch.len()
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

/// Replaces the owned copies of the vectors the graph now holds with the graph's points.
/// Only the worker inserts, so the layers' new tails are exactly the points not seen yet.
fn adopt(graph: &Graph, m: &mut Maps) {
    let pi = graph.get_point_indexation();
    let top = graph.get_max_level_observed() as usize;
    let mut adopted = std::mem::take(&mut m.adopted);
    adopted.resize(adopted.len().max(top + 1), 0);
    for (layer, seen) in adopted.iter_mut().enumerate().take(top + 1) {
        for p in pi.get_layer_iterator(layer).skip(*seen) {
            *seen += 1;
            let slot = p.get_origin_id();
            let Some(&id) = m.slots.get(slot) else { continue };
            if id == TOMB || m.slot_of.get(&id) != Some(&slot) {
                continue;
            }
            if let Some(st) = m.vectors.get_mut(&id) {
                // Owned copies, and points of a graph this one replaced (compaction).
                if st.v() == p.get_v() {
                    *st = Stored::Graph(p);
                }
            }
        }
    }
    m.adopted = adopted;
}

/// Slots newer than the flat copy that are searched exactly before it is refreshed (or 2% of
/// the graph, whichever is more).
const FLAT_LAG: usize = 1024;

/// The flat copy of `graph`, logged when it cannot be made (search then uses hnsw_rs's own).
fn flat_of(graph: &Graph) -> Option<Arc<Flat>> {
    if graph.get_nb_point() == 0 {
        return None;
    }
    let t = Instant::now();
    match catch_unwind(AssertUnwindSafe(|| Flat::new(graph))) {
        Ok(Some(f)) => {
            tracing::debug!("vector index: flat copy of {} points in {} ms", f.len, t.elapsed().as_millis());
            Some(Arc::new(f))
        }
        _ => {
            tracing::warn!("vector index: cannot copy the graph's links; searching through hnsw_rs");
            None
        }
    }
}

fn new_graph(s: &Shared, n: usize) -> Graph {
    Hnsw::new(s.params.m, n.max(1024), MAX_LAYER, s.params.ef_construction, ClampedDot)
}

/// Builds a fresh graph over every current vector (also compacts: tombstones are left out).
fn build(s: &Shared) {
    let t = Instant::now();
    let (ids, vecs): (Vec<i64>, Vec<Vec<f32>>) = {
        let m = read(&s.maps);
        m.vectors.iter().map(|(id, v)| (*id, v.v().to_vec())).unzip()
    };
    let graph = new_graph(s, ids.len());
    let data: Vec<(&[f32], usize)> = vecs.iter().enumerate().map(|(slot, v)| (v.as_slice(), slot)).collect();
    let ok = catch_unwind(AssertUnwindSafe(|| graph.parallel_insert_slice(&data))).is_ok();
    drop(data);
    if !ok {
        tracing::error!("vector index: hnsw_rs panicked while building; searching exactly");
        s.broken.store(true, Ordering::SeqCst);
        return;
    }
    let flat = flat_of(&graph);
    let mut m = write(&s.maps);
    let mut slots = ids.clone();
    let mut slot_of = HashMap::with_capacity(ids.len());
    let mut tombstones = 0;
    let mut pending: HashSet<i64> = m.pending.drain().collect();
    pending.extend(m.inflight.drain());
    for (slot, (id, v)) in ids.iter().zip(&vecs).enumerate() {
        // A vector changed or forgotten while the graph was being built is a tombstone.
        if m.vectors.get(id).map(Stored::v) == Some(v.as_slice()) {
            slot_of.insert(*id, slot);
            pending.remove(id);
        } else {
            slots[slot] = TOMB;
            tombstones += 1;
        }
    }
    for id in m.vectors.keys() {
        if !slot_of.contains_key(id) {
            pending.insert(*id);
        }
    }
    m.slots = slots;
    m.slot_of = slot_of;
    m.pending = pending;
    m.tombstones = tombstones;
    m.dirty = ids.len().max(1);
    m.adopted.clear();
    drop(vecs);
    adopt(&graph, &mut m);
    *write(&s.flat) = flat;
    drop(m);
    *write(&s.graph) = Some(Arc::new(graph));
    release_free_memory();
    tracing::info!("vector index: built over {} vectors in {} ms", ids.len(), t.elapsed().as_millis());
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
    let loaded = catch_unwind(AssertUnwindSafe(|| -> Option<Graph> {
        // The reloader must outlive the graph; it is small, so it lives for the process.
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(&dir, BASENAME)));
        let g: Graph = io.load_hnsw::<f32, ClampedDot>().ok()?;
        (g.get_nb_point() == man.slots).then_some(g)
    }));
    let graph = match loaded {
        Ok(Some(g)) => g,
        _ => {
            tracing::warn!("vector index: the files in {} are unreadable or truncated; rebuilding", dir.display());
            return false;
        }
    };
    // Check the graph's vectors against the current ones: a slot whose note is gone or whose
    // vector changed is a tombstone; current vectors without a slot are inserted.
    let stored: Option<HashMap<usize, Arc<Point<'static, f32>>>> = catch_unwind(AssertUnwindSafe(|| {
        let mut out = HashMap::with_capacity(man.slots);
        for p in graph.get_point_indexation() {
            out.insert(p.get_origin_id(), p);
        }
        out
    }))
    .ok();
    let Some(stored) = stored else { return false };
    let flat = flat_of(&graph);
    let mut m = write(&s.maps);
    let mut slots = slots;
    let mut slot_of = HashMap::with_capacity(slots.len());
    let mut tombstones = 0;
    for (slot, id) in slots.iter_mut().enumerate() {
        let same = *id != TOMB
            && !slot_of.contains_key(id)
            && m.vectors.get(id).zip(stored.get(&slot)).is_some_and(|(a, b)| a.v() == b.get_v());
        if same {
            slot_of.insert(*id, slot);
        } else {
            if *id != TOMB {
                *id = TOMB;
            }
            tombstones += 1;
        }
    }
    let live = slot_of.len();
    if live * 2 < m.vectors.len() {
        tracing::info!("vector index: persisted graph covers {live} of {} vectors; rebuilding", m.vectors.len());
        return false;
    }
    let pending: HashSet<i64> = m.vectors.keys().copied().filter(|id| !slot_of.contains_key(id)).collect();
    m.dirty = pending.len() + usize::from(tombstones > 0);
    m.slots = slots;
    m.slot_of = slot_of;
    m.pending = pending;
    m.inflight.clear();
    m.tombstones = tombstones;
    m.adopted.clear();
    drop(stored);
    adopt(&graph, &mut m);
    *write(&s.flat) = flat;
    drop(m);
    *write(&s.graph) = Some(Arc::new(graph));
    release_free_memory();
    tracing::info!("vector index: reloaded {live} vectors from {} in {} ms", dir.display(), t.elapsed().as_millis());
    true
}

/// Writes the graph, the slots and the manifest into a temporary folder, then swaps it in.
fn save(s: &Shared) -> std::io::Result<()> {
    let Some(dir) = s.dir.clone() else { return Ok(()) };
    let Some(graph) = read(&s.graph).clone() else { return Ok(()) };
    // hnsw_rs cannot dump a graph without points ("unexpected error"): the first note of a
    // fresh store may still be pending. Nothing is lost: the next start builds from SQLite.
    if graph.get_nb_point() == 0 {
        return Ok(());
    }
    let parent = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&parent)?;
    let tmp = tempfile::Builder::new().prefix(".tmp-index-").tempdir_in(&parent)?;
    let (slots, count, max_note_id) = {
        let mut m = write(&s.maps);
        m.dirty = 0;
        let max = m.slot_of.keys().copied().max().unwrap_or(0);
        (m.slots.clone(), m.slot_of.len(), max)
    };
    // Slots past the graph's count are still being inserted: leave them out.
    let n = graph.get_nb_point().min(slots.len());
    let dumped = catch_unwind(AssertUnwindSafe(|| graph.file_dump(tmp.path(), BASENAME)));
    match dumped {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(std::io::Error::other(format!("hnsw_rs dump: {e}"))),
        Err(_) => return Err(std::io::Error::other("hnsw_rs panicked while dumping")),
    }
    let slots = &slots[..n];
    let bytes: Vec<u8> = slots.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(tmp.path().join("slots.bin"), bytes)?;
    let man = Manifest {
        format: FORMAT,
        model_id: s.model_id.clone(),
        dim: s.dim,
        count: count.min(n),
        slots: n,
        max_note_id,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int8_dot_is_close_to_the_exact_one_at_every_length() {
        for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 100, 384, 385] {
            let mut a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let mut b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0).collect();
            crate::embed::normalize(&mut a);
            crate::embed::normalize(&mut b);
            let mut codes = vec![0i8; n];
            let scale = quantize(&b, &mut codes);
            let want = fast_dot(&a, &b);
            for got in [scale * dot_i8(&a, &codes), scale * portable_dot_i8(&a, &codes)] {
                assert!((got - want).abs() < 0.01, "n={n}: {got} vs {want}");
            }
        }
        let mut codes = [1i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut codes), 0.0);
        assert_eq!(codes, [0; 4]);
    }
}
