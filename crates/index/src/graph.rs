//! Our HNSW graph (Malkov & Yashunin; the construction of hnswlib), held in flat arrays.
//!
//! Nodes are numbered 0.. in insertion order (the index calls them *slots*). Per node:
//!
//! - one 64-byte-aligned *block* laid out like hnswlib's level 0: the int8 scale, the number
//!   of layer-0 links, `2m` link slots, and the vector in int8 (one scale per vector), so that
//!   a search finds a candidate's links beside the codes whose distance put it in the queue,
//!   and each distance reads a few cache lines instead of a float vector;
//! - its level, and for the few nodes above layer 0 their upper links (`m` per layer);
//! - its exact vector, a row of [`Rows`]: kept in a file, not in memory (issue 49: at 100k
//!   × 384 the rows were 154 MB of a 215 MB index). Construction and the walk compare the
//!   int8 codes (a new node's own vector against its neighbours' codes, two nodes by their
//!   codes); a search reads back the rows of only the head of its list and rescores them
//!   exactly ([`rescore_depth`]).
//!
//! Inserting is split in two so that searches never wait for the slow part: [`Graph::plan`]
//! (`&self`: the searches and the neighbour selection, under a read lock beside any number of
//! searches) and [`Graph::apply`] (`&mut self`: pushes the node and writes the planned link
//! lists, microseconds). A plan is only valid for the graph it was made on; `apply` refuses a
//! plan made before another node was added. The index has a single writer, so in practice
//! every plan applies.
//!
//! A node's level is drawn from a hash of its slot number, so a build is reproducible.
//!
//! Files: [`Graph::save`] writes `graph.bin` (header, levels, the rows' checksums, the blocks
//! as they are in memory, upper links; little-endian) and `vectors.f32` (the rows);
//! [`Graph::load`] checks the sizes, every count, scale and link against the header and
//! refuses anything else, so a damaged file is rebuilt, never trusted; a row is checked
//! against its checksum each time it is read.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::path::Path;

use super::rows::Rows;

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"SKMGRAPH";
/// The file layout's version (1 held the exact vectors inside the graph file).
const VERSION: u32 = 2;
/// The graph's file, and the exact rows' file, in the folder given to [`Graph::save`].
pub const GRAPH_FILE: &str = "graph.bin";
pub const VECTORS_FILE: &str = "vectors.f32";
/// Levels are capped here (a node reaches level 16 with probability m^-16).
const MAX_LEVEL: usize = 15;
/// Byte offsets inside a block.
const SCALE_AT: usize = 0;
const COUNT_AT: usize = 4;
const LINKS_AT: usize = 8;
/// Neighbours whose blocks are requested ahead of the distance being computed.
const PREFETCH_AHEAD: usize = 2;

/// One cache line of [`Graph::blocks`].
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// The HNSW graph; see the module docs.
pub struct Graph {
    dim: usize,
    /// Links per node on the upper layers; layer 0 holds `2m`.
    m: usize,
    ef_construction: usize,
    /// Lines per block.
    stride: usize,
    blocks: Vec<Line>,
    /// The exact vectors, out of memory (see the module docs).
    rows: Rows,
    /// A row failed its checksum.
    damaged: std::sync::atomic::AtomicBool,
    levels: Vec<u8>,
    /// Per node above layer 0: for each layer `1..=level`, a count then `m` links.
    upper: Vec<Box<[u32]>>,
    entry: u32,
    max_level: usize,
}

/// What [`Graph::apply`] writes for one new node; see [`Graph::plan`].
pub struct Plan {
    /// The slot the node gets (the graph's size when planned).
    slot: u32,
    level: usize,
    /// The node's own links, per layer `0..=level`.
    links: Vec<Vec<u32>>,
    /// Neighbours' new link lists: (node, layer, links).
    updates: Vec<(u32, usize, Vec<u32>)>,
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
    /// Per thread: a visit mark per node and the current mark.
    static VISITED: std::cell::RefCell<(Vec<u32>, u32)> = const { std::cell::RefCell::new((Vec::new(), 0)) };
}

/// Runs `f` with a visit-mark array of at least `n` entries and a fresh mark.
fn with_visited<R>(n: usize, f: impl FnOnce(&mut [u32], u32) -> R) -> R {
    VISITED.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (marks, mark) = &mut *guard;
        if marks.len() < n {
            marks.resize(n, 0);
        }
        *mark = mark.wrapping_add(1);
        if *mark == 0 {
            marks.fill(0);
            *mark = 1;
        }
        let m = *mark;
        f(marks, m)
    })
}

impl Graph {
    /// An empty graph for vectors of `dim` floats, `m` links per node (`2m` on layer 0),
    /// room for `capacity` nodes before the arrays grow.
    pub fn new(dim: usize, m: usize, ef_construction: usize, capacity: usize) -> Graph {
        let m = m.clamp(2, 255);
        let stride = (LINKS_AT + 4 * 2 * m + dim).div_ceil(64);
        Graph {
            dim,
            m,
            ef_construction: ef_construction.max(m),
            stride,
            blocks: Vec::with_capacity(capacity * stride),
            rows: Rows::in_memory(dim),
            damaged: std::sync::atomic::AtomicBool::new(false),
            levels: Vec::with_capacity(capacity),
            upper: Vec::with_capacity(capacity),
            entry: 0,
            max_level: 0,
        }
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// True when the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The same empty graph with its rows kept in `rows` (a build's private file).
    pub fn with_rows(mut self, rows: Rows) -> Graph {
        assert!(self.is_empty() && rows.is_empty(), "rows are given to an empty graph");
        self.rows = rows;
        self
    }

    /// Reads `slot`'s exact vector into `out` (`dim` floats); false when its row cannot be
    /// read or does not match its checksum (the caller falls back to the codes).
    pub fn read_row(&self, slot: u32, out: &mut [f32]) -> bool {
        self.rows.read(slot, out)
    }

    /// True when `slot`'s int8 codes and scale are those of `row` (a reloaded graph is
    /// verified against its rows).
    pub fn codes_match(&self, slot: u32, row: &[f32]) -> bool {
        let mut codes = vec![0i8; self.dim];
        let scale = quantize(row, &mut codes);
        let (s, c) = self.codes(slot);
        s.to_bits() == scale.to_bits() && c == codes.as_slice()
    }

    /// The checksum of `slot`'s exact vector ([`super::rows::row_sum`]).
    pub fn row_sum(&self, slot: u32) -> u64 {
        self.rows.sum(slot)
    }

    /// The cosine of `q` and `slot`'s vector from its int8 codes (within about 0.01 of the
    /// exact one; reads a third of the memory the float row does).
    #[inline]
    pub fn approx_cosine(&self, q: &[f32], slot: u32) -> f32 {
        1.0 - self.dist_i8(q, slot)
    }

    /// Asks the CPU to start loading `slot`'s block (ahead of [`Graph::approx_cosine`]).
    #[inline]
    pub fn prefetch_block(&self, slot: u32) {
        prefetch(self.block(slot).as_ptr(), self.stride);
    }

    /// Asks the kernel to back the blocks with huge pages where it can (Linux,
    /// `transparent_hugepage` in `madvise` mode, the common default). A search or a scan
    /// reads a few blocks scattered over tens of megabytes: with 4 KiB pages nearly every
    /// read also misses the TLB. Advice only; nothing changes when it is refused.
    pub fn advise_huge_pages(&self) {
        advise_huge(self.blocks.as_ptr().cast::<u8>(), self.blocks.capacity() * 64);
    }

    /// Asks the kernel to move the written blocks into huge pages now (Linux 6.1+,
    /// `MADV_COLLAPSE`; advice only, an error changes nothing). [`Graph::advise_huge_pages`]
    /// after a load leaves them to the kernel's background collapsing, which at 100,000 notes
    /// had not begun four seconds into a run of loads; advised before the load, the blocks'
    /// first touches compacted memory and the reload took 42–149 ms against 47–56 ms. Called
    /// on the index's worker once the graph answers searches: the copy (45 MB at 100,000
    /// notes) is off a recall's path. Only whole 2 MiB pages of written blocks: the room for
    /// growth stays unbacked.
    pub fn collapse_huge_pages(&self) {
        #[cfg(target_os = "linux")]
        {
            const HUGE: usize = 2 << 20;
            let p = self.blocks.as_ptr() as usize;
            let (start, end) = (p.div_ceil(HUGE) * HUGE, (p + self.blocks.len() * 64) / HUGE * HUGE);
            if end > start {
                // SAFETY: the range lies inside the blocks' live allocation; MADV_COLLAPSE
                // only changes how the kernel backs it (the bytes are copied as they are,
                // under the kernel's locks), never its contents.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_COLLAPSE);
                }
            }
        }
    }

    /// Bytes held by the arrays (for logs and benchmarks).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 64
            + self.rows.heap_bytes()
            + self.levels.capacity()
            + self.upper.capacity() * std::mem::size_of::<Box<[u32]>>()
            + self.upper.iter().map(|u| u.len() * 4).sum::<usize>()
    }

    fn m0(&self) -> usize {
        2 * self.m
    }

    #[inline]
    fn block(&self, slot: u32) -> &[u8] {
        let s = slot as usize * self.stride;
        bytes_of(&self.blocks[s..s + self.stride])
    }

    /// The links of `slot` on layer 0.
    #[inline]
    fn links0(&self, slot: u32) -> impl Iterator<Item = u32> + '_ {
        let b = self.block(slot);
        let count = read_u32(b, COUNT_AT) as usize;
        b[LINKS_AT..LINKS_AT + 4 * count.min(self.m0())]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    /// The links of `slot` on `layer` ≥ 1 (empty above its level).
    fn links_up(&self, slot: u32, layer: usize) -> &[u32] {
        let u = &self.upper[slot as usize];
        let at = (layer - 1) * (self.m + 1);
        match u.get(at) {
            Some(&count) => &u[at + 1..at + 1 + (count as usize).min(self.m)],
            None => &[],
        }
    }

    fn links(&self, slot: u32, layer: usize, out: &mut Vec<u32>) {
        out.clear();
        if layer == 0 {
            out.extend(self.links0(slot));
        } else {
            out.extend_from_slice(self.links_up(slot, layer));
        }
    }

    fn set_links(&mut self, slot: u32, layer: usize, links: &[u32]) {
        if layer == 0 {
            let m0 = self.m0();
            let s = slot as usize * self.stride;
            let b = bytes_of_mut(&mut self.blocks[s..s + self.stride]);
            let n = links.len().min(m0);
            b[COUNT_AT..COUNT_AT + 4].copy_from_slice(&(n as u32).to_le_bytes());
            for (i, l) in links[..n].iter().enumerate() {
                b[LINKS_AT + 4 * i..LINKS_AT + 4 * i + 4].copy_from_slice(&l.to_le_bytes());
            }
        } else {
            let m = self.m;
            let u = &mut self.upper[slot as usize];
            let at = (layer - 1) * (m + 1);
            if at + m < u.len() {
                let n = links.len().min(m);
                u[at] = n as u32;
                u[at + 1..at + 1 + n].copy_from_slice(&links[..n]);
            }
        }
    }

    /// The distance `1 - a·b` of two nodes by their int8 codes (construction: neither row
    /// is in memory).
    #[inline]
    fn dist_codes(&self, a: u32, b: u32) -> f32 {
        let (sa, ca) = self.codes(a);
        let (sb, cb) = self.codes(b);
        1.0 - sa * sb * skillmem_embed::tokens::dot_i8_i8(ca, cb) as f32
    }

    /// The int8 distance `1 - q·v` (approximate).
    #[inline]
    fn dist_i8(&self, q: &[f32], slot: u32) -> f32 {
        let (scale, codes) = self.codes(slot);
        1.0 - scale * dot_i8(q, codes)
    }

    /// The int8 codes of `slot`'s vector and their scale (the vector is about `scale` times
    /// the codes).
    #[inline]
    pub fn codes(&self, slot: u32) -> (f32, &[i8]) {
        let b = self.block(slot);
        let scale = f32::from_le_bytes([b[SCALE_AT], b[SCALE_AT + 1], b[SCALE_AT + 2], b[SCALE_AT + 3]]);
        let at = LINKS_AT + 4 * self.m0();
        // SAFETY: i8 and u8 have the same size and alignment; any byte is a valid i8.
        let codes: &[i8] = unsafe { std::slice::from_raw_parts(b[at..].as_ptr().cast::<i8>(), self.dim) };
        (scale, codes)
    }

    /// The level of the node that gets `slot`: geometric with ratio `1/m`, from a hash of the
    /// slot (reproducible builds).
    fn level_for(&self, slot: u32) -> usize {
        let mut z = u64::from(slot).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // Uniform in (0, 1].
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let ml = 1.0 / (self.m as f64).ln();
        ((-u.ln() * ml).floor() as usize).min(MAX_LEVEL)
    }

    /// Greedy descent on `layer` from `ep` (int8 distances to `q`).
    fn greedy(&self, q: &[f32], mut ep: u32, mut d: f32, layer: usize) -> (u32, f32) {
        loop {
            let mut moved = false;
            for &nb in self.links_up(ep, layer) {
                let dn = self.dist_i8(q, nb);
                if dn < d {
                    (ep, d, moved) = (nb, dn, true);
                }
            }
            if !moved {
                return (ep, d);
            }
        }
    }

    /// The `ef` nearest nodes to `q` on `layer` reachable from `eps`, nearest first, with
    /// their int8 distances (no filter: construction; `q` is the new node's exact vector, the
    /// nodes' codes are within about 0.002 of theirs).
    fn search_layer(&self, q: &[f32], eps: &[(f32, u32)], ef: usize, layer: usize) -> Vec<(f32, u32)> {
        with_visited(self.len(), |marks, mark| {
            let mut cands: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(ef * 4);
            let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef + 1);
            for &(d, e) in eps {
                marks[e as usize] = mark;
                cands.push(Reverse(Scored(d, e)));
                best.push(Scored(d, e));
            }
            while best.len() > ef {
                best.pop();
            }
            let mut nbs = Vec::with_capacity(self.m0());
            while let Some(Reverse(Scored(dc, c))) = cands.pop() {
                if best.len() >= ef && best.peek().is_some_and(|w| dc > w.0) {
                    break;
                }
                self.links(c, layer, &mut nbs);
                nbs.retain(|&nb| {
                    let seen = &mut marks[nb as usize];
                    let fresh = *seen != mark;
                    *seen = mark;
                    fresh
                });
                if layer == 0 {
                    for &nb in nbs.iter().take(PREFETCH_AHEAD) {
                        prefetch(self.block(nb).as_ptr(), self.stride);
                    }
                }
                for (j, &nb) in nbs.iter().enumerate() {
                    if layer == 0 {
                        if let Some(&next) = nbs.get(j + PREFETCH_AHEAD) {
                            prefetch(self.block(next).as_ptr(), self.stride);
                        }
                    }
                    let dn = self.dist_i8(q, nb);
                    if best.len() < ef || best.peek().is_some_and(|w| dn < w.0) {
                        cands.push(Reverse(Scored(dn, nb)));
                        best.push(Scored(dn, nb));
                        if best.len() > ef {
                            best.pop();
                        }
                    }
                }
            }
            let mut found: Vec<(f32, u32)> = best.into_iter().map(|s| (s.0, s.1)).collect();
            found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            found
        })
    }

    /// hnswlib's neighbour heuristic: from `cands` (nearest first, distances to the node being
    /// linked), keep a candidate only when it is nearer to that node than to every one kept
    /// so far, up to `max`. `between` gives the distance of two candidates.
    fn select(cands: &[(f32, u32)], max: usize, between: &dyn Fn(u32, u32) -> f32) -> Vec<u32> {
        let mut kept: Vec<(f32, u32)> = Vec::with_capacity(max);
        for &(d, c) in cands {
            if kept.len() >= max {
                break;
            }
            if kept.iter().all(|&(_, r)| between(c, r) >= d) {
                kept.push((d, c));
            }
        }
        kept.into_iter().map(|x| x.1).collect()
    }

    /// Plans inserting `v` as the next node: its links on each of its layers, and the new
    /// link lists of the neighbours that link back to it. See the module docs.
    pub fn plan(&self, v: &[f32]) -> Plan {
        let slot = self.len() as u32;
        let level = self.level_for(slot);
        let mut plan = Plan { slot, level, links: vec![Vec::new(); level + 1], updates: Vec::new() };
        if self.is_empty() || v.len() != self.dim {
            return plan;
        }
        let mut ep = self.entry;
        let mut d = self.dist_i8(v, ep);
        for layer in (level + 1..=self.max_level).rev() {
            (ep, d) = self.greedy(v, ep, d, layer);
        }
        let mut eps = vec![(d, ep)];
        // Two nodes' distance: the new one by its exact vector, the others by their codes.
        let between = |a: u32, b: u32| match (a == slot, b == slot) {
            (true, true) => 0.0,
            (true, false) => self.dist_i8(v, b),
            (false, true) => self.dist_i8(v, a),
            (false, false) => self.dist_codes(a, b),
        };
        let mut theirs = Vec::with_capacity(self.m0() + 1);
        for layer in (0..=level.min(self.max_level)).rev() {
            let found = self.search_layer(v, &eps, self.ef_construction, layer);
            let mine = Self::select(&found, self.m, &between);
            let cap = if layer == 0 { self.m0() } else { self.m };
            for &nb in &mine {
                self.links(nb, layer, &mut theirs);
                if theirs.len() < cap {
                    theirs.push(slot);
                    plan.updates.push((nb, layer, theirs.clone()));
                    continue;
                }
                let mut scored: Vec<(f32, u32)> = theirs.iter().map(|&x| (between(nb, x), x)).collect();
                scored.push((between(nb, slot), slot));
                scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let kept = Self::select(&scored, cap, &between);
                if kept != theirs {
                    plan.updates.push((nb, layer, kept));
                }
            }
            plan.links[layer] = mine;
            eps = found;
        }
        plan
    }

    /// Adds the node `plan` was made for, with vector `v`; returns its slot, or `None` when
    /// the plan was made on an earlier state of the graph (plan again).
    pub fn apply(&mut self, v: &[f32], plan: Plan) -> Option<u32> {
        if plan.slot as usize != self.len() || v.len() != self.dim {
            return None;
        }
        let slot = plan.slot;
        if self.blocks.len() + self.stride > self.blocks.capacity() {
            self.blocks.reserve(self.blocks.len().max(64 * self.stride));
            self.advise_huge_pages();
        }
        self.rows.push(v);
        let mut block = vec![Line([0; 64]); self.stride];
        {
            let b = bytes_of_mut(&mut block);
            let at = LINKS_AT + 4 * self.m0();
            let mut codes = vec![0i8; self.dim];
            let scale = quantize(v, &mut codes);
            b[SCALE_AT..SCALE_AT + 4].copy_from_slice(&scale.to_le_bytes());
            for (dst, c) in b[at..at + self.dim].iter_mut().zip(&codes) {
                *dst = *c as u8;
            }
        }
        self.blocks.extend_from_slice(&block);
        self.levels.push(plan.level as u8);
        self.upper.push(vec![0u32; plan.level * (self.m + 1)].into_boxed_slice());
        for (layer, links) in plan.links.iter().enumerate() {
            self.set_links(slot, layer, links);
        }
        for (nb, layer, links) in &plan.updates {
            self.set_links(*nb, *layer, links);
        }
        if slot == 0 || plan.level > self.max_level {
            self.entry = slot;
            self.max_level = plan.level;
        }
        Some(slot)
    }

    /// Inserts `v` (plan and apply at once: building a graph no one searches yet).
    pub fn insert(&mut self, v: &[f32]) -> u32 {
        let plan = self.plan(v);
        let slot = plan.slot;
        self.apply(v, plan);
        slot
    }

    /// The `k` nearest nodes passing `keep`, best first, as (slot, exact cosine); `ef`
    /// candidates. The walk compares int8 distances; the head of the final list
    /// ([`rescore_depth`]) is re-scored from the exact rows. A row that cannot be read keeps
    /// its int8 cosine, and [`Graph::damaged`] says so from then on.
    pub fn search(&self, q: &[f32], k: usize, ef: usize, keep: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)> {
        if self.is_empty() || q.len() != self.dim || k == 0 {
            return vec![];
        }
        let ef = ef.max(k);
        let mut ep = self.entry;
        let mut d = self.dist_i8(q, ep);
        for layer in (1..=self.max_level).rev() {
            loop {
                let mut moved = false;
                for &nb in self.links_up(ep, layer) {
                    let dn = self.dist_i8(q, nb);
                    if dn < d {
                        (ep, d, moved) = (nb, dn, true);
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        with_visited(self.len(), |marks, mark| {
            let mut cands: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(ef * 4);
            let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(ef + 1);
            let mut fresh: Vec<u32> = Vec::with_capacity(self.m0());
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
                for nb in self.links0(c) {
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
                    let dn = self.dist_i8(q, nb);
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
            let mut head = best.into_sorted_vec();
            head.truncate(rescore_depth(k));
            let mut row = vec![0.0f32; self.dim];
            let mut out: Vec<(usize, f32)> = head
                .into_iter()
                .map(|Scored(d, slot)| (slot as usize, self.exact_cosine(q, slot, &mut row).unwrap_or(1.0 - d)))
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(k);
            out
        })
    }

    /// `q`'s exact cosine with `slot`'s row (read into `row`), or `None` when the row cannot be
    /// read or is not the vector it was (then [`Graph::damaged`] is set).
    pub fn exact_cosine(&self, q: &[f32], slot: u32, row: &mut [f32]) -> Option<f32> {
        if self.rows.read(slot, row) {
            Some(super::fast_dot(q, row))
        } else {
            if !self.damaged.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::error!("vector index: a row of the vectors file does not match its checksum; ranking by the int8 codes until it is rebuilt");
            }
            None
        }
    }

    /// True once a row could not be read back as it was written (the index should be rebuilt
    /// from the stored vectors).
    pub fn damaged(&self) -> bool {
        self.damaged.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets that a row failed (the slots whose rows failed are tombstones now).
    pub fn clear_damaged(&self) {
        self.damaged.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Writes `graph.bin` and `vectors.f32` into `dir` (see the module docs for the layout),
    /// both synced, and reads the rows from the new `vectors.f32` from then on (the file this
    /// graph read them from may belong to a save another process replaces).
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let vectors = dir.join(VECTORS_FILE);
        let mut f = std::fs::File::create(&vectors)?;
        self.rows.write_to(&mut f)?;
        drop(f);
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(GRAPH_FILE))?);
        w.write_all(MAGIC)?;
        for x in [VERSION, self.dim as u32, self.m as u32, self.len() as u32, self.entry, self.max_level as u32] {
            w.write_all(&x.to_le_bytes())?;
        }
        w.write_all(&self.levels)?;
        let sums: Vec<u8> = self.rows.sums().iter().flat_map(|x| x.to_le_bytes()).collect();
        w.write_all(&sums)?;
        w.write_all(bytes_of(&self.blocks))?;
        let mut buf = Vec::new();
        for u in &self.upper {
            buf.clear();
            buf.extend(u.iter().flat_map(|x| x.to_le_bytes()));
            w.write_all(&buf)?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        self.rows.adopt(std::fs::File::open(&vectors)?);
        Ok(())
    }

    /// Reads a graph written by [`Graph::save`] into `dir` for vectors of `dim` floats; an
    /// error says what is wrong with the files (nothing of them is trusted unchecked; the
    /// rows are checked as they are read).
    pub fn load(dir: &Path, dim: usize, ef_construction: usize) -> std::io::Result<Graph> {
        let path = dir.join(GRAPH_FILE);
        let bad =
            |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
        let file = std::fs::File::open(&path)?;
        let size = file.metadata()?.len();
        let mut r = std::io::BufReader::with_capacity(1 << 16, file);
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(bad("not a skillmem graph file"));
        }
        let mut head = [0u32; 6];
        for h in &mut head {
            let mut b = [0u8; 4];
            r.read_exact(&mut b)?;
            *h = u32::from_le_bytes(b);
        }
        let [version, fdim, m, n, entry, max_level] = head;
        let (fdim, m, n, max_level) = (fdim as usize, m as usize, n as usize, max_level as usize);
        if version != VERSION {
            return Err(bad("written by another version"));
        }
        if fdim != dim || !(2..=255).contains(&m) || max_level > MAX_LEVEL || (n > 0 && entry as usize >= n) {
            return Err(bad("header does not match"));
        }
        let mut g = Graph::new(dim, m, ef_construction, 0);
        let stride = g.stride;
        let fixed = 8 + 24 + n as u64 * (1 + 8 + 64 * stride as u64);
        if size < fixed {
            return Err(bad("truncated"));
        }
        g.levels.resize(n, 0);
        r.read_exact(&mut g.levels)?;
        if g.levels.iter().any(|&l| l as usize > max_level) || (n > 0 && g.levels[entry as usize] as usize != max_level)
        {
            return Err(bad("levels do not match the header"));
        }
        let upper_words: usize = g.levels.iter().map(|&l| l as usize * (m + 1)).sum();
        if size != fixed + upper_words as u64 * 4 {
            return Err(bad("truncated or too long"));
        }
        let mut sums = vec![0u8; n * 8];
        r.read_exact(&mut sums)?;
        let sums: Vec<u64> = sums.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        // Room for an eighth more nodes (untouched, so not resident): growing a vector of
        // 64-byte-aligned lines copies it (the allocator cannot move it in place), and the
        // first insert after a start made the server hold the blocks twice for a moment
        // (45 MB more at 100k notes).
        g.blocks = Vec::with_capacity((n + n / 8 + 1024) * stride);
        g.blocks.resize(n * stride, Line([0; 64]));
        r.read_exact(bytes_of_mut(&mut g.blocks))?;
        for slot in 0..n as u32 {
            let b = g.block(slot);
            let scale = f32::from_le_bytes([b[SCALE_AT], b[SCALE_AT + 1], b[SCALE_AT + 2], b[SCALE_AT + 3]]);
            if !scale.is_finite() || scale < 0.0 {
                return Err(bad("a scale is not a number"));
            }
            let count = read_u32(b, COUNT_AT) as usize;
            if count > 2 * m {
                return Err(bad("a link count is out of range"));
            }
            if g.links0(slot).any(|l| l as usize >= n) {
                return Err(bad("a link points past the last node"));
            }
        }
        let mut words = vec![];
        for slot in 0..n {
            words.resize(g.levels[slot] as usize * (m + 1) * 4, 0u8);
            r.read_exact(&mut words)?;
            let u: Box<[u32]> = words.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            for chunk in u.chunks_exact(m + 1) {
                let count = chunk[0] as usize;
                if count > m || chunk[1..=count].iter().any(|&l| l as usize >= n) {
                    return Err(bad("an upper link is out of range"));
                }
            }
            g.upper.push(u);
        }
        g.entry = entry;
        g.max_level = max_level;
        g.rows = Rows::shared(dim, std::fs::File::open(dir.join(VECTORS_FILE))?, sums)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.join(VECTORS_FILE).display())))?;
        Ok(g)
    }

    /// As [`Graph::load`], for files this process alone can reach (a stopped build's, taken
    /// to resume it): rows inserted from now on are appended to its vectors file.
    pub fn load_owned(dir: &Path, dim: usize, ef_construction: usize) -> std::io::Result<Graph> {
        let g = Graph::load(dir, dim, ef_construction)?;
        let file = std::fs::OpenOptions::new().read(true).write(true).open(dir.join(VECTORS_FILE))?;
        g.rows.own(file)?;
        Ok(g)
    }
}

/// How many of a search's best candidates by their int8 codes are re-scored from the exact
/// rows for `k` results: twice `k`, and at least `k + 16`. The codes put a vector's cosine
/// within about 0.002 of the exact one, so the exact top `k` is inside this head unless more
/// than `k` others are that close; reading fewer rows keeps a search off the disk cache
/// (one positioned read a row).
pub fn rescore_depth(k: usize) -> usize {
    (2 * k).max(k + 16)
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn bytes_of(lines: &[Line]) -> &[u8] {
    // SAFETY: `Line` is 64 plain bytes with no padding.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast::<u8>(), lines.len() * 64) }
}

fn bytes_of_mut(lines: &mut [Line]) -> &mut [u8] {
    // SAFETY: `Line` is 64 plain bytes with no padding.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<u8>(), lines.len() * 64) }
}

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

/// `madvise(MADV_HUGEPAGE)` over the whole 2 MiB pages inside `len` bytes from `p`.
fn advise_huge(p: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (p as usize).div_ceil(HUGE) * HUGE;
        let end = (p as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside one live allocation of ours; MADV_HUGEPAGE only
            // changes how the kernel backs it, never its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
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
pub fn dot_i8(q: &[f32], codes: &[i8]) -> f32 {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fast_dot;

    /// A unit vector of `dim` from `seed` (xorshift).
    pub(crate) fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        skillmem_embed::normalize(&mut v);
        v
    }

    #[test]
    fn int8_dot_is_close_to_the_exact_one_at_every_length() {
        for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 100, 384, 385] {
            let mut a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let mut b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0).collect();
            skillmem_embed::normalize(&mut a);
            skillmem_embed::normalize(&mut b);
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

    #[test]
    fn every_node_is_found_by_its_own_vector_and_links_stay_in_bounds() {
        let dim = 24;
        let vs: Vec<Vec<f32>> = (0..600).map(|i| unit(i, dim)).collect();
        let mut g = Graph::new(dim, 8, 48, 0);
        for v in &vs {
            g.insert(v);
        }
        assert_eq!(g.len(), vs.len());
        for (i, v) in vs.iter().enumerate() {
            let got = g.search(v, 1, 32, &|_| true);
            assert_eq!(got[0].0, i, "node {i}");
            assert!((got[0].1 - 1.0).abs() < 1e-5);
        }
        for slot in 0..g.len() as u32 {
            assert!(g.links0(slot).all(|l| (l as usize) < g.len() && l != slot));
            assert!(g.links0(slot).count() <= 16);
        }
        // The filter is honoured: only odd nodes come back.
        let got = g.search(&vs[10], 5, 64, &|s| s % 2 == 1);
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|(s, _)| s % 2 == 1));
    }

    #[test]
    fn a_plan_made_on_an_older_graph_is_refused() {
        let mut g = Graph::new(4, 4, 16, 0);
        g.insert(&[1.0, 0.0, 0.0, 0.0]);
        let stale = g.plan(&[0.0, 1.0, 0.0, 0.0]);
        g.insert(&[0.0, 0.0, 1.0, 0.0]);
        assert!(g.apply(&[0.0, 1.0, 0.0, 0.0], stale).is_none());
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn save_and_load_round_trip_and_damaged_files_are_refused() {
        let dim = 16;
        let mut g = Graph::new(dim, 6, 32, 0);
        for i in 0..300 {
            g.insert(&unit(i, dim));
        }
        let dir = tempfile::tempdir().unwrap();
        g.save(dir.path()).unwrap();
        let back = Graph::load(dir.path(), dim, 32).unwrap();
        assert_eq!(back.len(), g.len());
        for i in 0..300u64 {
            let q = unit(i + 1000, dim);
            assert_eq!(back.search(&q, 5, 32, &|_| true), g.search(&q, 5, 32, &|_| true));
        }
        // The saved graph still answers from the file it wrote, and grows past it.
        g.insert(&unit(5000, dim));
        assert_eq!(g.search(&unit(5000, dim), 1, 32, &|_| true)[0].0, 300);
        assert!(Graph::load(dir.path(), dim + 1, 32).is_err(), "another dimension");
        let graph = dir.path().join(GRAPH_FILE);
        let bytes = std::fs::read(&graph).unwrap();
        let stride = g.stride;
        let blocks = 8 + 24 + 300 + 300 * 8;
        // Truncated, one byte too many, a foreign file, a link past the end, a scale that is
        // not a number.
        let cases: Vec<Vec<u8>> = vec![
            bytes[..bytes.len() - 1].to_vec(),
            [bytes.clone(), vec![0]].concat(),
            b"not a graph at all, just some text".to_vec(),
            {
                let mut b = bytes.clone();
                // Node 0's first link.
                b[blocks + COUNT_AT..blocks + COUNT_AT + 4].copy_from_slice(&1u32.to_le_bytes());
                b[blocks + LINKS_AT..blocks + LINKS_AT + 4].copy_from_slice(&5000u32.to_le_bytes());
                b
            },
            {
                let mut b = bytes.clone();
                let at = blocks + 64 * stride * 7 + SCALE_AT;
                b[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
                b
            },
        ];
        for (i, case) in cases.iter().enumerate() {
            std::fs::write(&graph, case).unwrap();
            assert!(Graph::load(dir.path(), dim, 32).is_err(), "case {i} was accepted");
        }
        // A vectors file with a row too few, or none: refused.
        std::fs::write(&graph, &bytes).unwrap();
        let vectors = dir.path().join(VECTORS_FILE);
        let rows = std::fs::read(&vectors).unwrap();
        std::fs::write(&vectors, &rows[..rows.len() - 4 * dim]).unwrap();
        assert!(Graph::load(dir.path(), dim, 32).is_err(), "a short vectors file was accepted");
        std::fs::remove_file(&vectors).unwrap();
        assert!(Graph::load(dir.path(), dim, 32).is_err(), "a missing vectors file was accepted");
        // A row changed on disk: the graph loads (its links are sound) but that row is not
        // read as a vector; its node keeps its int8 cosine and the graph says it is damaged.
        let mut changed = rows.clone();
        changed[4 * dim * 11] ^= 0x20;
        std::fs::write(&vectors, &changed).unwrap();
        let hurt = Graph::load(dir.path(), dim, 32).unwrap();
        assert!(!hurt.damaged());
        let q = unit(11, dim);
        let got = hurt.search(&q, 1, 32, &|_| true);
        assert_eq!(got[0].0, 11);
        assert!((got[0].1 - 1.0).abs() < 0.01, "{}", got[0].1);
        assert!(hurt.damaged());
    }

    /// Quantization round trips: each vector's codes times its scale come back within half a
    /// step of every coordinate, the codes span ±127, and cosines by the codes (one side or
    /// both) stay within 0.01 of the exact ones.
    #[test]
    fn quantization_round_trips() {
        let dim = 64;
        let ramp: Vec<f32> = (0..dim).map(|i| i as f32 / dim as f32 - 0.5).collect();
        let mut spike = vec![1e-3f32; dim];
        spike[5] = 1.0;
        let tiny: Vec<f32> = (0..dim).map(|i| if i % 2 == 0 { 1e-30 } else { -1e-30 }).collect();
        let huge: Vec<f32> = (0..dim).map(|i| (i as f32 - 31.5) * 1e30).collect();
        let mut basis = vec![0.0f32; dim];
        basis[0] = 1.0;
        let cases: Vec<(&str, Vec<f32>)> = vec![
            ("unit", unit(1, dim)),
            ("another unit", unit(2, dim)),
            ("ramp", ramp),
            ("one spike", spike),
            ("a basis vector", basis),
            ("tiny", tiny),
            ("huge", huge),
            ("zeros", vec![0.0; dim]),
            ("negative", unit(3, dim).iter().map(|x| -x.abs()).collect()),
        ];
        for (name, v) in &cases {
            let mut codes = vec![0i8; dim];
            let scale = quantize(v, &mut codes);
            let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!(scale.is_finite() && scale >= 0.0, "{name}");
            assert!((scale * 127.0 - max).abs() <= max * 1e-6, "{name}: scale {scale} for max {max}");
            assert!(codes.iter().all(|&c| c >= -127), "{name}: -128 is never used");
            if max > 0.0 {
                assert_eq!(codes.iter().map(|c| c.unsigned_abs()).max(), Some(127), "{name}");
            }
            for (x, &c) in v.iter().zip(&codes) {
                let back = scale * f32::from(c);
                assert!((back - x).abs() <= scale * 0.5 * (1.0 + 1e-5) + f32::MIN_POSITIVE, "{name}: {x} -> {back}");
            }
        }
        // Cosines of unit vectors: exact against the codes of one side (search), and the
        // codes of both sides (construction).
        let units: Vec<Vec<f32>> = (0..40).map(|i| unit(i + 100, dim)).collect();
        let mut g = Graph::new(dim, 4, 16, 0);
        for u in &units {
            g.insert(u);
        }
        for (i, a) in units.iter().enumerate() {
            for (j, b) in units.iter().enumerate() {
                let exact = fast_dot(a, b);
                let one = 1.0 - g.dist_i8(a, j as u32);
                let both = 1.0 - g.dist_codes(i as u32, j as u32);
                assert!((one - exact).abs() < 0.01, "{i},{j}: {one} vs {exact}");
                assert!((both - exact).abs() < 0.01, "{i},{j}: {both} vs {exact}");
                let mut row = vec![0.0; dim];
                assert_eq!(g.exact_cosine(a, j as u32, &mut row), Some(exact), "rows read back exactly");
            }
        }
    }
}
