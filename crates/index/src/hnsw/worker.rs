//! The background worker: it loads the stored vectors, reloads the saved graph or builds one,
//! then inserts pending vectors one at a time (planned under the read lock, applied under the
//! write lock), compacts when tombstones pile up, and saves on request.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{read, write, HnswIndex, Loader, Manifest, Shared, BATCH, FORMAT, GRAPH_FILE, TOMB};
use crate::graph::Graph;
use crate::IdMap;

pub(super) fn worker(s: Arc<Shared>, loader: Option<Loader>) {
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
pub(super) fn build(s: &Shared) {
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
pub(super) fn save(s: &Shared) -> std::io::Result<()> {
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
