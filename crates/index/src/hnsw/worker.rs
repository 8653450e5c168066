//! The background worker: it reloads the saved graph and verifies it against the stored
//! vectors (or loads them and builds one), then inserts pending vectors one at a time
//! (planned under the read lock, applied under the write lock), compacts when tombstones pile
//! up, and saves on request.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{read, write, HnswIndex, Loader, Manifest, Shared, BATCH, FORMAT, TOMB};
use crate::graph::Graph;
use crate::rows::{row_sum, Rows};
use crate::IdMap;

pub(super) fn worker(s: Arc<Shared>, loader: Option<Loader>) {
    let t = Instant::now();
    // The saved graph first: searches use it at once, while the stored vectors stream past
    // it to be checked (issue 49: a start was ready only once every vector was in memory).
    let reloaded = loader.is_some() && catch_unwind(AssertUnwindSafe(|| reload(&s))).unwrap_or(false);
    if reloaded {
        s.verifying.store(true, Ordering::SeqCst);
        s.loaded.store(true, Ordering::SeqCst);
    }
    {
        let (lock, cv) = &s.reloading;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = false;
        cv.notify_all();
    }
    if let Some(load) = loader {
        if reloaded {
            // The verification is background work beside a start's first recalls: on a thread
            // of lower priority, so that those get the cores first.
            let spawned = std::thread::scope(|sc| {
                std::thread::Builder::new()
                    .name("skillmem-index-verify".into())
                    .spawn_scoped(sc, || {
                        lower_priority();
                        stream(&s, &load, Some(Verify::new(&s)));
                    })
                    .is_ok()
            });
            if !spawned {
                stream(&s, &load, Some(Verify::new(&s)));
            }
        } else {
            stream(&s, &load, None);
        }
        s.loaded.store(true, Ordering::SeqCst);
        *s.loader.lock().unwrap_or_else(|e| e.into_inner()) = Some(load);
    }
    let ok = catch_unwind(AssertUnwindSafe(|| {
        if !reloaded && !reload(&s) {
            build(&s, None);
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
            // A request waits until the pending vectors are in (a verification asks while
            // it still has them to insert).
            let asked = m.own.is_empty() && s.save_requested.load(Ordering::SeqCst);
            if asked {
                s.save_requested.store(false, Ordering::SeqCst);
            }
            (
                // Not once the process is ending: a build would stop at once.
                m.tombstones > 1000 && m.tombstones > live / 4 && !s.ending.load(Ordering::SeqCst),
                m.own.is_empty() && ((asked && m.dirty > 0) || m.dirty >= 1000.max(live / 10)),
            )
        };
        if read(&s.graph).as_ref().is_some_and(Graph::damaged) {
            if catch_unwind(AssertUnwindSafe(|| repair(&s))).is_err() {
                give_up(&s, "repairing");
                return;
            }
            continue;
        }
        if compact {
            tracing::info!("vector index: compacting ({} tombstones)", read(&s.maps).tombstones);
            if catch_unwind(AssertUnwindSafe(|| build(&s, None))).is_err() {
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

/// Runs `load`: each stored vector is checked against the reloaded graph (`check`), or, with
/// no graph yet, kept as pending for the build.
fn stream(s: &Shared, load: &Loader, mut check: Option<Verify>) {
    let t = Instant::now();
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        load(&mut |id, v| {
            if v.len() != s.dim {
                return;
            }
            if let Some(c) = check.as_mut() {
                c.row(s, id, v);
                return;
            }
            let mut m = write(&s.maps);
            if !m.removed.contains(&id) && !m.own.contains_key(&id) && !m.slot_of.contains_key(&id) {
                m.own.insert(id, v);
                m.changes += 1;
            }
        })
    }));
    let ok = matches!(loaded, Ok(Ok(_)));
    match loaded {
        Ok(Ok(n)) => tracing::debug!("vector index: {n} stored vectors loaded in {} ms", t.elapsed().as_millis()),
        Ok(Err(e)) => tracing::warn!(
            "vector index: cannot load the stored vectors ({e}); notes missing from the index are found by their words"
        ),
        Err(_) => tracing::error!("vector index: the vector loader panicked"),
    }
    if let Some(c) = check {
        c.finish(s, ok);
    }
    write(&s.maps).removed.clear();
    s.verifying.store(false, Ordering::SeqCst);
    // The loader's connection and its page cache are gone: give their pages back.
    release_free_memory();
}

/// Lowers the calling thread's scheduling priority (Linux: nice 10 for this thread alone).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no preconditions; a refusal changes nothing.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

/// A row failed its checksum: the graph is verified again against the stored vectors (each
/// slot's row read back), so that a note whose row is damaged gets its stored vector back as
/// pending. Without a loader (tests) the graph is built again from what reads back.
fn repair(s: &Shared) {
    let held = s.loader.lock().unwrap_or_else(|e| e.into_inner()).take();
    match held {
        Some(load) => {
            tracing::warn!("vector index: a row failed its checksum; verifying the graph against the stored vectors");
            s.building.store(true, Ordering::SeqCst);
            s.verifying.store(true, Ordering::SeqCst);
            let check = Verify::new(s);
            stream(s, &load, Some(check));
            if let Some(g) = read(&s.graph).as_ref() {
                g.clear_damaged();
            }
            *s.loader.lock().unwrap_or_else(|e| e.into_inner()) = Some(load);
            s.building.store(false, Ordering::SeqCst);
        }
        None => build(s, None),
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
        let mut row = vec![0.0; graph.dim()];
        for (id, slot) in live {
            // A row that cannot be read back is left out: recall loads a candidate's stored
            // vector again when the index does not hold it.
            if (slot as usize) < graph.len() && !m.own.contains_key(&id) && graph.read_row(slot, &mut row) {
                m.own.insert(id, row.clone());
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
/// Its rows go to a temporary file as they are inserted (with a folder), never all to memory;
/// each vector is fetched under a short lock (an owned copy, or the old graph's row), so
/// writes go on meanwhile.
///
/// A build the process's end stops ([`HnswIndex::finish`]; or after `most` inserts, in tests)
/// saves what it built ([`suspend`]), and the next build resumes from it: a sidecar that lives
/// shorter than a build (100,000 notes take a dozen seconds of a core) still gets there.
pub(super) fn build(s: &Shared, most: Option<usize>) {
    let t = Instant::now();
    let _flag = Flag::set(&s.in_build);
    let ids: Vec<i64> = {
        let m = read(&s.maps);
        let mut ids: Vec<i64> = m.own.keys().chain(m.slot_of.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let (mut graph, mut built) = match resume(s) {
        Some(r) => r,
        None => {
            let rows = match s.dir.as_ref().and_then(|d| d.parent()) {
                Some(parent) => Rows::private_in(s.dim, parent),
                None => Rows::in_memory(s.dim),
            };
            (Graph::new(s.dim, s.params.m, s.params.ef_construction, ids.len()).with_rows(rows), vec![])
        }
    };
    let resumed = built.len();
    let had: IdSet = built.iter().copied().collect();
    built.reserve(ids.len().saturating_sub(resumed));
    for (i, &id) in ids.iter().enumerate() {
        if i % 256 == 0 && (s.stop.load(Ordering::Relaxed) || s.ending.load(Ordering::Relaxed)) {
            if s.ending.load(Ordering::Relaxed) {
                suspend(s, &graph, &built, ids.len(), t);
            }
            return;
        }
        if most.is_some_and(|n| built.len() - resumed >= n) {
            suspend(s, &graph, &built, ids.len(), t);
            return;
        }
        if had.contains(&id) {
            continue;
        }
        let v = {
            let m = read(&s.maps);
            let g = read(&s.graph);
            m.vector(g.as_ref(), id).map(|v| v.into_owned())
        };
        if let Some(v) = v {
            graph.insert(&v);
            built.push(id);
        }
    }
    let mut m = write(&s.maps);
    let mut old = write(&s.graph);
    // Every current vector: in the new graph when it is still the one built from, else owned.
    let mut slots = built;
    let mut slot_of = IdMap::with_capacity_and_hasher(slots.len(), Default::default());
    let mut tombstones = 0;
    for (slot, id) in slots.iter_mut().enumerate() {
        let sum = graph.row_sum(slot as u32);
        let same = match m.own.get(id) {
            Some(v) => row_sum(v) == sum,
            None => m
                .slot_of
                .get(id)
                .is_some_and(|&o| old.as_ref().is_some_and(|g| (o as usize) < g.len() && g.row_sum(o) == sum)),
        };
        if same && !slot_of.contains_key(id) {
            slot_of.insert(*id, slot as u32);
        } else {
            *id = TOMB;
            tombstones += 1;
        }
    }
    let unmatched: Vec<(i64, u32)> =
        m.slot_of.iter().filter(|(id, _)| !slot_of.contains_key(id)).map(|(i, s)| (*i, *s)).collect();
    if let Some(prev) = old.as_ref() {
        let mut row = vec![0.0; prev.dim()];
        for (id, slot) in unmatched {
            if !m.own.contains_key(&id) && (slot as usize) < prev.len() && prev.read_row(slot, &mut row) {
                m.own.insert(id, row.clone());
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
    if resumed > 0 {
        tracing::info!(
            "vector index: built over {n} vectors in {} ms, resuming a stopped build of {resumed}",
            t.elapsed().as_millis()
        );
    } else {
        tracing::info!("vector index: built over {n} vectors in {} ms", t.elapsed().as_millis());
    }
    collapse(s);
    if let Err(e) = save(s) {
        tracing::warn!("vector index: cannot write the index files ({e}); they will be rebuilt next start");
    }
}

/// Loads the persisted graph when its manifest matches, and reconciles it with the vectors
/// held so far: a slot whose note holds another vector is a tombstone (that vector stays
/// pending); once every stored vector is loaded (tests, benchmarks: the vectors were inserted
/// first), a slot whose note holds none is a tombstone too, else it stays until the worker's
/// verification has seen the stored vectors stream past ([`Verify`]).
pub(super) fn reload(s: &Shared) -> bool {
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
    let Some(slots) = read_slots(&dir, man.slots) else {
        tracing::warn!("vector index: {} has a missing or truncated slots file; rebuilding", dir.display());
        return false;
    };
    let graph = match Graph::load(&dir, s.dim, s.params.ef_construction) {
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
    let all_loaded = s.loaded.load(Ordering::SeqCst);
    let mut m = write(&s.maps);
    let mut slots = slots;
    let mut slot_of = IdMap::with_capacity_and_hasher(slots.len(), Default::default());
    let mut tombstones = 0;
    for (slot, id) in slots.iter_mut().enumerate() {
        let same = *id != TOMB
            && !slot_of.contains_key(id)
            && !m.removed.contains(id)
            && match m.own.get(id) {
                Some(v) => row_sum(v) == graph.row_sum(slot as u32),
                None => !all_loaded,
            };
        if same {
            slot_of.insert(*id, slot as u32);
        } else {
            *id = TOMB;
            tombstones += 1;
        }
    }
    let live = slot_of.len();
    let total = m.own.len();
    if all_loaded && live * 2 < total {
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
    collapse(s);
    true
}

/// The new graph's blocks moved into huge pages, once it answers searches
/// ([`Graph::collapse_huge_pages`]; inserts wait meanwhile, searches do not).
fn collapse(s: &Shared) {
    let t = Instant::now();
    if let Some(g) = read(&s.graph).as_ref() {
        g.collapse_huge_pages();
    }
    tracing::debug!("vector index: blocks collapsed into huge pages in {} ms", t.elapsed().as_millis());
}

/// Checks a reloaded graph against the stored vectors as they stream past; none is kept. A
/// note whose vector differs from its slot's (by the row checksum), or that has no slot, is
/// queued as pending with its vector; a slot that no stored vector confirmed is a tombstone
/// once the stream is complete. A note written or forgotten since the start is newer than the
/// stream and left alone.
struct Verify {
    /// The slots the reload brought, and which of them a stored vector confirmed.
    reloaded: usize,
    seen: Vec<bool>,
    changed: usize,
    added: usize,
    row: Vec<f32>,
    t: Instant,
}

impl Verify {
    fn new(s: &Shared) -> Verify {
        let reloaded = read(&s.maps).slots.len();
        Verify { reloaded, seen: vec![false; reloaded], changed: 0, added: 0, row: vec![], t: Instant::now() }
    }

    fn row(&mut self, s: &Shared, id: i64, v: Vec<f32>) {
        let mut m = write(&s.maps);
        if m.removed.contains(&id) || m.own.contains_key(&id) {
            return;
        }
        match m.slot_of.get(&id).copied() {
            Some(slot) if (slot as usize) < self.reloaded => {
                self.seen[slot as usize] = true;
                // The same vector by its checksum, a row that reads back as that vector, and
                // the codes of that row.
                let same = {
                    let g = read(&s.graph);
                    self.row.resize(s.dim, 0.0);
                    g.as_ref().is_some_and(|g| {
                        (slot as usize) < g.len()
                            && g.row_sum(slot) == row_sum(&v)
                            && g.read_row(slot, &mut self.row)
                            && g.codes_match(slot, &self.row)
                    })
                };
                if same {
                    return;
                }
                self.changed += 1;
            }
            // Inserted since the start: newer than this row.
            Some(_) => return,
            None => self.added += 1,
        }
        m.tombstone(id);
        m.own.insert(id, v);
        m.queue.push_back(id);
        m.changes += 1;
    }

    fn finish(self, s: &Shared, complete: bool) {
        let mut m = write(&s.maps);
        let mut gone = 0;
        if complete {
            for (slot, seen) in self.seen.iter().enumerate() {
                let id = m.slots[slot];
                if !seen && id != TOMB && m.slot_of.get(&id) == Some(&(slot as u32)) {
                    m.tombstone(id);
                    gone += 1;
                }
            }
        }
        if gone > 0 {
            m.changes += 1;
            m.dirty += 1;
        }
        if gone + self.changed + self.added > 0 {
            // Saved as soon as the differences are in the graph, so that the next start does
            // not find them again (a sidecar's life may be shorter than a save's threshold).
            s.save_requested.store(true, Ordering::SeqCst);
        }
        tracing::info!(
            "vector index: verified {} reloaded slots against the stored vectors in {} ms: {} changed, {} new, {} gone{}",
            self.reloaded,
            self.t.elapsed().as_millis(),
            self.changed,
            self.added,
            gone,
            if complete { "" } else { " (the stream stopped early: unconfirmed slots kept)" }
        );
    }
}

/// Writes the graph, its rows, the slots and the manifest into a temporary folder, then swaps
/// it in.
pub(super) fn save(s: &Shared) -> std::io::Result<()> {
    let Some(dir) = s.dir.clone() else { return Ok(()) };
    let _one = s.save_lock.lock().unwrap_or_else(|e| e.into_inner());
    let _writing = Flag::set(&s.writing);
    let parent = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let (tmp, saving) = staging(&parent)?;
    let slots = {
        let mut m = write(&s.maps);
        m.dirty = 0;
        m.slots.clone()
    };
    {
        // Only the worker changes the graph, and it is here: the slots copied above match.
        let g = read(&s.graph);
        let Some(g) = g.as_ref() else { return Ok(()) };
        if g.len() != slots.len() {
            return Err(std::io::Error::other("the graph changed while it was being saved"));
        }
        write_files(s, tmp.path(), g, &slots)?;
    }
    let tmp = tmp.keep();
    // Unlinked while still held: the folder's time is now, which a sweep reads as in use.
    let _ = std::fs::remove_file(tmp.join(SAVING));
    let old = parent.join(format!("{OLD_PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&old);
    if dir.exists() {
        std::fs::rename(&dir, &old)?;
    }
    std::fs::rename(&tmp, &dir)?;
    let _ = std::fs::remove_dir_all(&old);
    drop(saving);
    Ok(())
}

/// A temporary folder in `parent` to write a save into, and its lock file, held until the
/// folder is renamed into place: a sweep by another process leaves it alone, and finds it
/// free once this process is gone (see [`sweep`]).
fn staging(parent: &Path) -> std::io::Result<(tempfile::TempDir, std::fs::File)> {
    std::fs::create_dir_all(parent)?;
    sweep(parent);
    let tmp = tempfile::Builder::new().prefix(TMP_PREFIX).tempdir_in(parent)?;
    let saving = hold(&tmp.path().join(SAVING))?;
    Ok((tmp, saving))
}

/// Writes `graph` (its rows too), `slots` (slot → note id; [`TOMB`] for a tombstone) and the
/// manifest into `dir`.
fn write_files(s: &Shared, dir: &Path, graph: &Graph, slots: &[i64]) -> std::io::Result<()> {
    graph.save(dir)?;
    let bytes: Vec<u8> = slots.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(dir.join("slots.bin"), bytes)?;
    let live = slots.iter().filter(|&&id| id != TOMB);
    let man = Manifest {
        format: FORMAT,
        model_id: s.model_id.clone(),
        dim: s.dim,
        count: live.clone().count(),
        slots: slots.len(),
        max_note_id: live.max().copied().unwrap_or(0),
    };
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&man).map_err(std::io::Error::other)?)
}

/// The folder of a stopped build's progress, beside the index's: `.build-<model>` holds its
/// graph files, its slots (each a note id) and a manifest, written as a save writes them.
fn partial_dir(s: &Shared) -> Option<PathBuf> {
    let dir = s.dir.as_ref()?;
    let name = dir.file_name()?.to_str()?;
    Some(dir.parent()?.join(format!("{PARTIAL_PREFIX}{name}")))
}

/// Saves the progress of a build that is stopped after `built` of `total` vectors, for the
/// next build to resume ([`resume`]); a few hundred vectors are not worth the writing.
fn suspend(s: &Shared, graph: &Graph, built: &[i64], total: usize, t: Instant) {
    let Some(to) = partial_dir(s) else { return };
    if built.len() < MIN_PARTIAL {
        return;
    }
    let _one = s.save_lock.lock().unwrap_or_else(|e| e.into_inner());
    let _writing = Flag::set(&s.writing);
    let saved = || -> std::io::Result<()> {
        let parent = to.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        let (tmp, saving) = staging(&parent)?;
        write_files(s, tmp.path(), graph, built)?;
        let tmp = tmp.keep();
        let _ = std::fs::remove_file(tmp.join(SAVING));
        let _ = std::fs::remove_dir_all(&to);
        std::fs::rename(&tmp, &to)?;
        drop(saving);
        Ok(())
    };
    let w = Instant::now();
    match saved() {
        Ok(()) => tracing::info!(
            "vector index: build stopped after {} of {total} vectors ({} ms); saved in {} ms for the next start to resume",
            built.len(),
            t.elapsed().as_millis(),
            w.elapsed().as_millis()
        ),
        Err(e) => tracing::warn!("vector index: cannot save the stopped build ({e}); the next start builds anew"),
    }
}

/// Takes a stopped build's progress ([`suspend`]): its graph, whose rows are appended to from
/// now on, and each slot's note id. The folder is first renamed to one of this process's
/// (another process resuming at the same time finds it gone and builds anew), then removed
/// (the open files stay readable). Progress that does not load, or is for another model, is
/// dropped. Slots whose notes have changed or gone since are tombstones once the build ends.
fn resume(s: &Shared) -> Option<(Graph, Vec<i64>)> {
    let from = partial_dir(s)?;
    if !from.is_dir() {
        return None;
    }
    let taken = from.with_file_name(format!("{RESUME_PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&taken);
    std::fs::rename(&from, &taken).ok()?;
    let loaded = (|| -> Result<(Graph, Vec<i64>), String> {
        let man = HnswIndex::manifest(&taken).ok_or("no readable manifest")?;
        if man.format != FORMAT || man.model_id != s.model_id || man.dim != s.dim {
            return Err("it is for another model or format".into());
        }
        let ids = read_slots(&taken, man.slots).ok_or("its slots file is missing or truncated")?;
        let g = Graph::load_owned(&taken, s.dim, s.params.ef_construction).map_err(|e| e.to_string())?;
        if g.len() != ids.len() || ids.contains(&TOMB) {
            return Err("its graph does not match its slots".into());
        }
        Ok((g, ids))
    })();
    let _ = std::fs::remove_dir_all(&taken);
    match loaded {
        Ok((g, ids)) => {
            tracing::info!("vector index: resuming a stopped build of {} vectors", ids.len());
            Some((g, ids))
        }
        Err(why) => {
            tracing::warn!(
                "vector index: cannot resume the stopped build in {} ({why}); building anew",
                from.display()
            );
            None
        }
    }
}

/// `slots.bin` in `dir`: `n` note ids (little-endian i64), or None when it holds another count.
fn read_slots(dir: &Path, n: usize) -> Option<Vec<i64>> {
    let b = std::fs::read(dir.join("slots.bin")).ok()?;
    (b.len() == n * 8)
        .then(|| b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0xff; 8]))).collect())
}

/// Sets a flag for as long as it is held (cleared however the holder ends, a panic too).
struct Flag<'a>(&'a AtomicBool);

impl<'a> Flag<'a> {
    fn set(flag: &'a AtomicBool) -> Flag<'a> {
        flag.store(true, Ordering::SeqCst);
        Flag(flag)
    }
}

impl Drop for Flag<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Note ids, as a set.
type IdSet = std::collections::HashSet<i64, std::hash::BuildHasherDefault<crate::IdHash>>;

/// A stopped build with fewer vectors than this is not saved.
const MIN_PARTIAL: usize = 256;
/// A stopped build's progress (see [`partial_dir`]).
const PARTIAL_PREFIX: &str = ".build-";
/// A stopped build's progress, taken by the process of this id to resume it.
const RESUME_PREFIX: &str = ".resume-";
/// A save's temporary folder, beside the index folders.
const TMP_PREFIX: &str = ".tmp-index-";
/// The index folder a save is replacing, named by the saving process's id.
const OLD_PREFIX: &str = ".old-";
/// The file a save holds locked in its temporary folder while it writes it.
const SAVING: &str = ".saving";
/// A temporary folder without a lock file (written before it had one) is left alone this long.
const UNLOCKED_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Creates `path` and takes an exclusive lock on it, released when the file is closed (or the
/// process ends, however it ends).
fn hold(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

/// Removes what saves of killed processes left in `parent`: each is a copy of an index (a
/// hundred megabytes or more at 100,000 notes), and a sidecar is often killed rather than
/// shut down. A temporary folder is left when its lock file is held (a save under way in any
/// process); an `.old-PID` folder when that process is alive.
pub(super) fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = e.path();
        let stale = if name.starts_with(TMP_PREFIX) {
            let lock = path.join(SAVING);
            if lock.exists() {
                hold(&lock).is_ok()
            } else {
                let age = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
                age.is_some_and(|a| a > UNLOCKED_GRACE)
            }
        } else if let Some(pid) = name.strip_prefix(OLD_PREFIX).or_else(|| name.strip_prefix(RESUME_PREFIX)) {
            pid.parse::<i32>().is_ok_and(|pid| pid != std::process::id() as i32 && !alive(pid))
        } else {
            false
        };
        if stale && e.file_type().is_ok_and(|t| t.is_dir()) {
            match std::fs::remove_dir_all(&path) {
                Ok(()) => {
                    tracing::info!("vector index: removed {}, left by a save that did not finish", path.display())
                }
                Err(why) => tracing::debug!("vector index: cannot remove {}: {why}", path.display()),
            }
        }
    }
}

/// Whether process `pid` exists (a signal 0 reaches it, or it belongs to another user).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
