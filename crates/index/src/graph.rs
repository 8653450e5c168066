//! Our HNSW graph (Malkov & Yashunin; the construction of hnswlib), held in flat arrays.
//!
//! Nodes are numbered 0.. in insertion order (the index calls them *slots*). Per node:
//!
//! - its exact vector, in one contiguous `Vec<f32>` (`dim` floats a node): insertion compares
//!   exact distances, and every search re-scores its final list with them;
//! - one 64-byte-aligned *block* laid out like hnswlib's level 0: the int8 scale, the number
//!   of layer-0 links, `2m` link slots, and the vector in int8 (one scale per vector), so that
//!   a search finds a candidate's links beside the codes whose distance put it in the queue,
//!   and each distance reads a few cache lines instead of a 1.5 kB float vector;
//! - its level, and for the few nodes above layer 0 their upper links (`m` per layer).
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
//! Files: [`Graph::save`] writes one little-endian file (header, levels, vectors, layer-0
//! links, upper links); [`Graph::load`] checks its size, every count and every link against
//! the header and refuses anything else, so a damaged file is rebuilt, never trusted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::path::Path;

use super::fast_dot;

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"SKMGRAPH";
/// The file layout's version.
const VERSION: u32 = 1;
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
    vectors: Vec<f32>,
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
            vectors: Vec::with_capacity(capacity * dim),
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

    /// The exact vector of `slot`.
    pub fn vector(&self, slot: u32) -> &[f32] {
        let s = slot as usize * self.dim;
        &self.vectors[s..s + self.dim]
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

    /// Asks the CPU to start loading `slot`'s exact vector.
    #[inline]
    pub fn prefetch_vector(&self, slot: u32) {
        prefetch(self.vector(slot).as_ptr().cast::<u8>(), (self.dim * 4).div_ceil(64));
    }

    /// Asks the kernel to back the two big arrays with huge pages where it can (Linux,
    /// `transparent_hugepage` in `madvise` mode, the common default). A search or a scan
    /// reads a few blocks and rows scattered over tens of megabytes: with 4 KiB pages nearly
    /// every read also misses the TLB. Advice only; nothing changes when it is refused.
    pub fn advise_huge_pages(&self) {
        advise_huge(self.blocks.as_ptr().cast::<u8>(), self.blocks.capacity() * 64);
        advise_huge(self.vectors.as_ptr().cast::<u8>(), self.vectors.capacity() * 4);
    }

    /// Bytes held by the arrays (for logs and benchmarks).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 64
            + self.vectors.capacity() * 4
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

    /// The exact distance `1 - a·b`.
    #[inline]
    fn exact(a: &[f32], b: &[f32]) -> f32 {
        1.0 - fast_dot(a, b)
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

    /// Greedy descent on `layer` from `ep` (exact distances to `q`).
    fn greedy(&self, q: &[f32], mut ep: u32, mut d: f32, layer: usize) -> (u32, f32) {
        loop {
            let mut moved = false;
            for &nb in self.links_up(ep, layer) {
                let dn = Self::exact(q, self.vector(nb));
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
    /// exact distances (no filter: construction). On layer 0 the walk compares int8
    /// distances like a search (measured at 100k × 384: build time and recall in
    /// docs/research/ann-index.md); the list is re-scored exactly for the neighbour heuristic.
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
                    // Layer 0 (nearly all the work) walks the int8 codes, as a search does;
                    // the list found is re-scored exactly below.
                    let dn = if layer == 0 {
                        if let Some(&next) = nbs.get(j + PREFETCH_AHEAD) {
                            prefetch(self.block(next).as_ptr(), self.stride);
                        }
                        self.dist_i8(q, nb)
                    } else {
                        Self::exact(q, self.vector(nb))
                    };
                    if best.len() < ef || best.peek().is_some_and(|w| dn < w.0) {
                        cands.push(Reverse(Scored(dn, nb)));
                        best.push(Scored(dn, nb));
                        if best.len() > ef {
                            best.pop();
                        }
                    }
                }
            }
            let mut found: Vec<(f32, u32)> =
                best.into_iter().map(|s| (Self::exact(q, self.vector(s.1)), s.1)).collect();
            found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            found
        })
    }

    /// hnswlib's neighbour heuristic: from `cands` (nearest first, distances to the node being
    /// linked), keep a candidate only when it is nearer to that node than to every one kept
    /// so far, up to `max`. `vec_of` gives each candidate's vector.
    fn select<'a>(cands: &[(f32, u32)], max: usize, vec_of: &dyn Fn(u32) -> &'a [f32]) -> Vec<u32> {
        let mut kept: Vec<(f32, u32)> = Vec::with_capacity(max);
        for &(d, c) in cands {
            if kept.len() >= max {
                break;
            }
            let vc = vec_of(c);
            if kept.iter().all(|&(_, r)| Self::exact(vc, vec_of(r)) >= d) {
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
        let mut d = Self::exact(v, self.vector(ep));
        for layer in (level + 1..=self.max_level).rev() {
            (ep, d) = self.greedy(v, ep, d, layer);
        }
        let mut eps = vec![(d, ep)];
        let vec_of = |n: u32| if n == slot { v } else { self.vector(n) };
        let mut theirs = Vec::with_capacity(self.m0() + 1);
        for layer in (0..=level.min(self.max_level)).rev() {
            let found = self.search_layer(v, &eps, self.ef_construction, layer);
            let mine = Self::select(&found, self.m, &vec_of);
            let cap = if layer == 0 { self.m0() } else { self.m };
            for &nb in &mine {
                self.links(nb, layer, &mut theirs);
                if theirs.len() < cap {
                    theirs.push(slot);
                    plan.updates.push((nb, layer, theirs.clone()));
                    continue;
                }
                let vn = self.vector(nb);
                let mut scored: Vec<(f32, u32)> = theirs.iter().map(|&x| (Self::exact(vn, vec_of(x)), x)).collect();
                scored.push((Self::exact(vn, v), slot));
                scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let kept = Self::select(&scored, cap, &vec_of);
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
        let grows = self.vectors.len() + v.len() > self.vectors.capacity();
        self.vectors.extend_from_slice(v);
        if grows {
            self.blocks.reserve(self.vectors.capacity() / self.dim.max(1) * self.stride - self.blocks.len());
            self.advise_huge_pages();
        }
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
    /// candidates. The walk compares int8 distances; the final list is re-scored exactly.
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
            let mut out: Vec<(usize, f32)> =
                best.into_iter().map(|s| (s.1 as usize, fast_dot(q, self.vector(s.1)))).collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(k);
            out
        })
    }

    /// Writes the graph to `path` (see the module docs for the layout).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        w.write_all(MAGIC)?;
        for x in [VERSION, self.dim as u32, self.m as u32, self.len() as u32, self.entry, self.max_level as u32] {
            w.write_all(&x.to_le_bytes())?;
        }
        w.write_all(&self.levels)?;
        let mut buf = Vec::with_capacity(self.dim * 4);
        for chunk in self.vectors.chunks(self.dim.max(1)) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
            w.write_all(&buf)?;
        }
        for slot in 0..self.len() as u32 {
            let b = self.block(slot);
            w.write_all(&b[COUNT_AT..LINKS_AT + 4 * self.m0()])?;
        }
        for u in &self.upper {
            buf.clear();
            buf.extend(u.iter().flat_map(|x| x.to_le_bytes()));
            w.write_all(&buf)?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    }

    /// Reads a graph written by [`Graph::save`] for vectors of `dim` floats; an error says
    /// what is wrong with the file (nothing of it is trusted unchecked).
    pub fn load(path: &Path, dim: usize, ef_construction: usize) -> std::io::Result<Graph> {
        let bad =
            |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        let mut r = std::io::BufReader::with_capacity(1 << 20, file);
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
        let mut g = Graph::new(dim, m, ef_construction, n);
        g.levels.resize(n, 0);
        r.read_exact(&mut g.levels)?;
        if g.levels.iter().any(|&l| l as usize > max_level) || (n > 0 && g.levels[entry as usize] as usize != max_level)
        {
            return Err(bad("levels do not match the header"));
        }
        let upper_words: usize = g.levels.iter().map(|&l| l as usize * (m + 1)).sum();
        let want = 8 + 24 + n as u64 + (n * dim * 4) as u64 + (n * 4 * (1 + 2 * m)) as u64 + upper_words as u64 * 4;
        if size != want {
            return Err(bad("truncated or too long"));
        }
        let mut buf = vec![0u8; dim * 4];
        g.vectors.reserve_exact(n * dim);
        for _ in 0..n {
            r.read_exact(&mut buf)?;
            g.vectors.extend(buf.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        if g.vectors.iter().any(|x| !x.is_finite()) {
            return Err(bad("a vector is not finite"));
        }
        g.blocks = vec![Line([0; 64]); n * g.stride];
        let links_len = 4 * (1 + 2 * m);
        let mut codes = vec![0i8; dim];
        for slot in 0..n {
            let s = slot * g.stride;
            let b = bytes_of_mut(&mut g.blocks[s..s + g.stride]);
            r.read_exact(&mut b[COUNT_AT..COUNT_AT + links_len])?;
            let count = read_u32(b, COUNT_AT) as usize;
            if count > 2 * m {
                return Err(bad("a link count is out of range"));
            }
            for i in 0..count {
                if read_u32(b, LINKS_AT + 4 * i) as usize >= n {
                    return Err(bad("a link points past the last node"));
                }
            }
            let scale = quantize(&g.vectors[slot * dim..(slot + 1) * dim], &mut codes);
            b[SCALE_AT..SCALE_AT + 4].copy_from_slice(&scale.to_le_bytes());
            let at = LINKS_AT + 4 * 2 * m;
            for (dst, c) in b[at..at + dim].iter_mut().zip(&codes) {
                *dst = *c as u8;
            }
        }
        let mut word = [0u8; 4];
        for slot in 0..n {
            let words = g.levels[slot] as usize * (m + 1);
            let mut u = vec![0u32; words].into_boxed_slice();
            for x in u.iter_mut() {
                r.read_exact(&mut word)?;
                *x = u32::from_le_bytes(word);
            }
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
        Ok(g)
    }
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
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
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
        let path = dir.path().join("graph.bin");
        g.save(&path).unwrap();
        let back = Graph::load(&path, dim, 32).unwrap();
        assert_eq!(back.len(), g.len());
        for i in 0..300u64 {
            let q = unit(i + 1000, dim);
            assert_eq!(back.search(&q, 5, 32, &|_| true), g.search(&q, 5, 32, &|_| true));
        }
        assert!(Graph::load(&path, dim + 1, 32).is_err(), "another dimension");
        let bytes = std::fs::read(&path).unwrap();
        // Truncated, one byte too many, a foreign file, a link past the end.
        let cases: Vec<Vec<u8>> = vec![
            bytes[..bytes.len() - 1].to_vec(),
            [bytes.clone(), vec![0]].concat(),
            b"not a graph at all, just some text".to_vec(),
            {
                let mut b = bytes.clone();
                let links0 = 8 + 24 + 300 + 300 * dim * 4;
                // Node 0's first link.
                b[links0 + 4..links0 + 8].copy_from_slice(&5000u32.to_le_bytes());
                b[links0..links0 + 4].copy_from_slice(&1u32.to_le_bytes());
                b
            },
        ];
        for (i, case) in cases.iter().enumerate() {
            std::fs::write(&path, case).unwrap();
            assert!(Graph::load(&path, dim, 32).is_err(), "case {i} was accepted");
        }
    }
}
