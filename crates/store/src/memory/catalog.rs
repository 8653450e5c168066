//! An in-memory catalog of the facts recall ranks by (skill, scope, partition, pinned,
//! created_at, and the note's uses and trust), so that a recall over a skill with 100k notes does not read 100k rows from
//! SQLite each time.
//!
//! SQLite stays the source of truth. The catalog is valid only while nothing it has not seen
//! has written to the database: it remembers `PRAGMA data_version` (which moves when another
//! connection commits) and this connection's `total_changes()` (which moves on every write
//! through it). The engine makes its writes through [`Catalog::write`] and
//! [`Catalog::write_always`], which re-read the touched rows and accept the new change count; any other write (another
//! process, another module writing through the same connection) makes the catalog reload
//! in full at the next read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::evidence::Uses;
use super::store::{self, Candidate, Candidates};
use super::{Note, Scope};
use crate::error::Result;

#[derive(Debug, Clone)]
struct Meta {
    id: i64,
    global: bool,
    partition: Arc<str>,
    pinned: bool,
    created_at: i64,
    uses: Uses,
}

struct State {
    data_version: i64,
    changes: u64,
    /// skill → its notes, by id.
    skills: HashMap<Arc<str>, Vec<Meta>>,
    /// note id → skill (hashed by one multiplication: a load inserts every note).
    skill_of: skillmem_index::IdMap<Arc<str>>,
    partitions: HashMap<String, Arc<str>>,
    /// Skills whose candidates' vectors were checked against the index since the last load.
    checked: std::collections::HashSet<String>,
    /// (skill, project) → its candidates, until the skill's notes change.
    cache: HashMap<(String, String), Arc<Candidates>>,
    /// (skill, global, partition) → its note ids in order, kept up to date by writes (a new
    /// note is appended): duplicate detection asks for them on every write.
    parts: HashMap<(String, bool, String), Arc<Vec<i64>>>,
    /// Current notes as [`store::load`] read them, by id ([`Catalog::load_notes`]): a skill's
    /// notes come back recall after recall, and reading one from SQLite costs microseconds.
    /// A write reported for a note drops it; any other write drops them all (with the state).
    notes: HashMap<i64, Arc<Note>>,
    /// The notes of `notes` that are a large skill's (of more than [`HOLD_SKILL_MAX`]), with
    /// the last read that asked for each ([`LARGE_HELD`] at most).
    large: HashMap<i64, u64>,
    /// Counts [`Catalog::load_notes`]'s reads, for `large`.
    reads: u64,
    /// The conflicting pairs, read on the first ask after a load; a write reported for a note
    /// reads that note's pairs again.
    pairs: Option<Pairs>,
}

/// Conflicting pairs both ways: `newer_of[older]` and `older_of[newer]`.
#[derive(Default)]
struct Pairs {
    newer_of: HashMap<i64, Vec<i64>>,
    older_of: HashMap<i64, Vec<i64>>,
}

impl Pairs {
    fn add(&mut self, older: i64, newer: i64) {
        let n = self.newer_of.entry(older).or_default();
        if !n.contains(&newer) {
            n.push(newer);
            self.older_of.entry(newer).or_default().push(older);
        }
    }

    /// Drops every pair `id` is in.
    fn forget(&mut self, id: i64) {
        for newer in self.newer_of.remove(&id).unwrap_or_default() {
            if let Some(o) = self.older_of.get_mut(&newer) {
                o.retain(|x| *x != id);
            }
        }
        for older in self.older_of.remove(&id).unwrap_or_default() {
            if let Some(n) = self.newer_of.get_mut(&older) {
                n.retain(|x| *x != id);
            }
        }
    }
}

/// Notes [`Catalog::load_notes`] keeps in memory at most (~1 KB each); past it they are
/// dropped and read again. 65,536 held up to 64 MB: at 100,000 notes, 600 loads of a
/// 90,000-note skill grew the sidecar from 149 to 183 MB.
pub const NOTES_HELD: usize = 16_384;

/// [`Catalog::load_notes`] keeps the notes of skills of at most this many notes: a larger
/// skill's loads read different notes nearly every time (a handful of its thousands), so
/// holding them only pushed out the small skills' notes, which their loads read again and
/// again. (Three in this crate's tests, which then read notes both ways.)
#[cfg(not(test))]
pub const HOLD_SKILL_MAX: usize = 5_000;
#[cfg(test)]
pub const HOLD_SKILL_MAX: usize = 3;

/// A large skill's notes [`Catalog::load_notes`] keeps, the most recently asked for (the
/// oldest half dropped past it): its loads read a hundred notes the intent found, different
/// nearly every time, and the head's notes ranked by recency and use, the same load after
/// load (reading those again was 0.08 ms of a 90,000-note skill's load).
#[cfg(not(test))]
pub const LARGE_HELD: usize = 512;
#[cfg(test)]
pub const LARGE_HELD: usize = 16;

/// Candidate lists held at most (one per skill and project), then all dropped. A list is
/// what the skill's bm25 index is kept for (`memory/lexicon/`), so a workspace with more
/// skills than this rebuilt them over and over (64 before: at 82 skills each small skill's
/// index was built 4 to 9 times in 3 s of recalls, which FTS5 answered meanwhile). The lists
/// of one project hold each note once, so their memory is the store's notes at most.
pub const LISTS_HELD: usize = 4096;

/// The catalog; see the module docs.
#[derive(Default)]
pub struct Catalog {
    state: Mutex<Option<State>>,
    /// Moves whenever notes may have been added, removed or changed: a reload, a write
    /// reported with ids. Not by a write that touched no note's text or facts (a recall's
    /// count), so what is derived from notes' words can be kept across recalls.
    generation: std::sync::atomic::AtomicU64,
}

/// The notes of one skill in one scope and partition (duplicate detection).
pub struct PartitionRead {
    /// Their ids, ascending.
    pub ids: Arc<Vec<i64>>,
    /// As [`Read::vectors_checked`].
    pub vectors_checked: bool,
}

/// What a read found.
pub struct Read {
    pub candidates: Arc<Candidates>,
    /// The index holds the vector of every candidate (the skill was checked since the catalog
    /// was last loaded; a load may bring notes written by another process).
    pub vectors_checked: bool,
    /// Notes in the whole store.
    pub corpus: usize,
    /// [`Catalog::load_notes`] keeps the skill's notes in memory (a skill of at most
    /// [`HOLD_SKILL_MAX`] notes).
    pub held: bool,
}

fn data_version(conn: &Connection) -> Result<i64> {
    // Asked before every read of the catalog: prepared once.
    Ok(conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?)
}

impl State {
    fn intern(&mut self, p: &str) -> Arc<str> {
        if let Some(a) = self.partitions.get(p) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(p);
        self.partitions.insert(p.to_string(), a.clone());
        a
    }

    fn remove(&mut self, id: i64) {
        self.notes.remove(&id);
        if let Some(skill) = self.skill_of.remove(&id) {
            self.cache.retain(|k, _| *k.0 != *skill);
            self.parts.retain(|k, _| *k.0 != *skill);
            if let Some(v) = self.skills.get_mut(&skill) {
                if let Ok(i) = v.binary_search_by_key(&id, |m| m.id) {
                    v.remove(i);
                }
            }
        }
    }

    /// The facts of `id` as held now, if any.
    fn meta(&self, id: i64) -> Option<&Meta> {
        let v = self.skills.get(self.skill_of.get(&id)?)?;
        v.binary_search_by_key(&id, |m| m.id).ok().map(|i| &v[i])
    }

    #[allow(clippy::too_many_arguments)]
    fn upsert(
        &mut self,
        skill: String,
        global: bool,
        partition: &str,
        pinned: bool,
        created_at: i64,
        uses: Uses,
        id: i64,
    ) {
        // A note that stays in its skill and partition (a duplicate write, a pin) keeps its
        // place in the partition's ids.
        let same_place = self.skill_of.get(&id).is_some_and(|s| **s == *skill)
            && self.meta(id).is_some_and(|m| m.global == global && *m.partition == *partition);
        if !same_place {
            self.remove(id);
        }
        let partition = self.intern(partition);
        let meta = Meta { id, global, partition: partition.clone(), pinned, created_at, uses };
        let skill = self.intern(&skill);
        self.cache.retain(|k, _| *k.0 != *skill);
        let v = self.skills.entry(skill.clone()).or_default();
        match v.binary_search_by_key(&id, |m| m.id) {
            Ok(i) => v[i] = meta,
            Err(i) => v.insert(i, meta),
        }
        if !same_place {
            // A new note: appended to its partition's ids when they are kept and it comes
            // last (ids grow); otherwise they are gathered again at the next ask.
            let key = (skill.to_string(), global, partition.to_string());
            if let Some(ids) = self.parts.get_mut(&key) {
                if ids.last().is_none_or(|last| *last < id) {
                    Arc::make_mut(ids).push(id);
                } else {
                    self.parts.remove(&key);
                }
            }
        }
        self.skill_of.insert(id, skill);
    }

    /// Past [`LARGE_HELD`] large skills' notes, drops the older half of them (those asked for
    /// last stay, however many a read brought in).
    fn drop_oldest_large(&mut self) {
        if self.large.len() <= LARGE_HELD {
            return;
        }
        let mut by_age: Vec<(u64, i64)> = self.large.iter().map(|(id, at)| (*at, *id)).collect();
        by_age.sort_unstable();
        for (_, id) in &by_age[..by_age.len() - LARGE_HELD / 2] {
            self.large.remove(id);
            self.notes.remove(id);
        }
    }

    fn refresh(&mut self, conn: &Connection, id: i64) -> Result<()> {
        self.notes.remove(&id);
        if let Some(p) = self.pairs.as_mut() {
            p.forget(id);
            for (older, newer) in store::conflicts_of(conn, id)? {
                p.add(older, newer);
            }
        }
        let mut row = None;
        store::scan_facts(conn, Some(id), &mut |f| {
            row = Some((f.skill.to_string(), f.global, f.partition.to_string(), f.pinned, f.created_at))
        })?;
        match row {
            Some((skill, global, pkey, pinned, created)) => {
                let uses = store::scan_uses(conn, Some(id))?.first().map(|u| u.1).unwrap_or_default();
                self.upsert(skill, global, &pkey, pinned, created, uses, id)
            }
            None => self.remove(id),
        }
        Ok(())
    }
}

fn load(conn: &Connection) -> Result<State> {
    let mut st = State {
        data_version: data_version(conn)?,
        changes: conn.total_changes(),
        skills: HashMap::new(),
        skill_of: Default::default(),
        partitions: HashMap::new(),
        checked: Default::default(),
        cache: HashMap::new(),
        parts: HashMap::new(),
        notes: HashMap::new(),
        large: HashMap::new(),
        reads: 0,
        pairs: None,
    };
    // Text is read in place and interned: a load of 100k notes makes a handful of strings,
    // not 300k. Rows come in the covering index's order (by skill), so the previous row's
    // skill and partition are tried before a lookup, and a skill's notes are gathered in a
    // list of their own until its skill changes (a load was a third of a start's first
    // recall at 100k notes).
    let t0 = std::time::Instant::now();
    let mut last_skill: Option<Arc<str>> = None;
    let mut last_partition: Option<Arc<str>> = None;
    let mut run: Vec<Meta> = vec![];
    // Room for every note at once (FTS5's row count, which also counts the notes replaced or
    // retired, is read from one record; a damaged record asks for no more than 4M): the map
    // is not grown and copied again and again.
    let (rows, _) = store::fts_totals(conn)?;
    st.skill_of.reserve(rows.clamp(0, 1 << 22) as usize);
    let flush = |st: &mut State, skill: &Arc<str>, run: &mut Vec<Meta>| {
        if !run.is_empty() {
            // A skill's first run is moved, not copied.
            match st.skills.entry(skill.clone()) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().append(run),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(std::mem::take(run));
                }
            }
        }
    };
    // The previous row's skill and partition are compared as text and kept: a row takes a
    // count of each string it holds and no more (counts are atomic; six a row, cloned and
    // dropped again, were 98.6 ms at the median of a 100k-note load against 84.1 now).
    store::scan_facts(conn, None, &mut |f| {
        if last_skill.as_deref() != Some(f.skill) {
            if let Some(prev) = &last_skill {
                flush(&mut st, prev, &mut run);
            }
            last_skill = Some(st.intern(f.skill));
        }
        if last_partition.as_deref() != Some(f.partition) {
            last_partition = Some(st.intern(f.partition));
        }
        let (Some(skill), Some(partition)) = (&last_skill, &last_partition) else { return };
        run.push(Meta {
            id: f.id,
            global: f.global,
            partition: partition.clone(),
            pinned: f.pinned,
            created_at: f.created_at,
            uses: Uses::default(),
        });
        st.skill_of.insert(f.id, skill.clone());
    })?;
    if let Some(prev) = &last_skill {
        flush(&mut st, prev, &mut run);
    }
    let t_facts = t0.elapsed();
    // Read in the covering index's order (notes_catalog); kept by id.
    for v in st.skills.values_mut() {
        v.sort_unstable_by_key(|m| m.id);
    }
    let t_sorted = t0.elapsed();
    // Only notes that were shown, confirmed or vouched for have evidence: a few rows.
    for (id, uses) in store::scan_uses(conn, None)? {
        let Some(skill) = st.skill_of.get(&id) else { continue };
        if let Some(v) = st.skills.get_mut(skill) {
            if let Ok(i) = v.binary_search_by_key(&id, |m| m.id) {
                v[i].uses = uses;
            }
        }
    }
    tracing::trace!("catalog: facts read in {t_facts:?}, sorted by {t_sorted:?}, uses read by {:?}", t0.elapsed());
    Ok(st)
}

impl Catalog {
    fn fresh<'a>(&self, conn: &Connection, guard: &'a mut Option<State>) -> Result<&'a mut State> {
        let dv = data_version(conn)?;
        let valid = guard.as_ref().is_some_and(|s| s.data_version == dv && s.changes == conn.total_changes());
        if !valid {
            self.bump();
            let t = std::time::Instant::now();
            let st = load(conn)?;
            tracing::debug!("catalog: {} notes loaded in {:?}", st.skill_of.len(), t.elapsed());
            *guard = Some(st);
        }
        Ok(guard.as_mut().expect("loaded above"))
    }

    /// Every skill with a current note, by name.
    pub fn skills(&self, conn: &Connection) -> Result<Vec<String>> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        let mut v: Vec<String> = st.skills.iter().filter(|(_, m)| !m.is_empty()).map(|(k, _)| k.to_string()).collect();
        v.sort();
        Ok(v)
    }

    /// Records that the vectors of `skill`'s notes were checked against the index.
    pub fn mark_checked(&self, skill: &str) {
        if let Some(st) = self.state.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            st.checked.insert(skill.to_string());
        }
    }

    /// Every note of `skill` visible from `project` (its own plus global), by id.
    pub fn candidates(&self, conn: &Connection, skill: &str, project: &str) -> Result<Read> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        let vectors_checked = st.checked.contains(skill);
        let held = st.skills.get(skill).is_none_or(|v| v.len() <= HOLD_SKILL_MAX);
        let key = (skill.to_string(), project.to_string());
        if let Some(c) = st.cache.get(&key) {
            return Ok(Read { candidates: c.clone(), vectors_checked, corpus: st.skill_of.len(), held });
        }
        // Partitions are interned: the project's is one pointer.
        let mine = st.partitions.get(project).cloned();
        let candidates: Candidates = st
            .skills
            .get(skill)
            .map(|v| {
                v.iter()
                    .filter(|m| m.global || mine.as_ref().is_some_and(|p| Arc::ptr_eq(p, &m.partition)))
                    .map(|m| Candidate { id: m.id, pinned: m.pinned, created_at: m.created_at, uses: m.uses })
                    .collect()
            })
            .unwrap_or_default();
        let candidates = Arc::new(candidates);
        if st.cache.len() >= LISTS_HELD {
            st.cache.clear();
        }
        st.cache.insert(key, candidates.clone());
        Ok(Read { candidates, vectors_checked, corpus: st.skill_of.len(), held })
    }

    /// The ids of the notes of `skill` in one scope and partition (duplicate detection), in
    /// order. Kept between calls and extended by the writes reported to
    /// [`Catalog::after_write`], so that a write does not gather a large partition's ids
    /// again.
    pub fn partition_ids(
        &self,
        conn: &Connection,
        skill: &str,
        scope: Scope,
        partition: &str,
    ) -> Result<PartitionRead> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        let vectors_checked = st.checked.contains(skill);
        let global = scope == Scope::Global;
        let key = (skill.to_string(), global, partition.to_string());
        if let Some(ids) = st.parts.get(&key) {
            return Ok(PartitionRead { ids: ids.clone(), vectors_checked });
        }
        let ids: Vec<i64> = st
            .skills
            .get(skill)
            .map(|v| v.iter().filter(|m| m.global == global && &*m.partition == partition).map(|m| m.id).collect())
            .unwrap_or_default();
        let ids = Arc::new(ids);
        // As the candidate lists: dropping a large partition's ids makes its next write
        // gather them again.
        if st.parts.len() >= LISTS_HELD {
            st.parts.clear();
        }
        st.parts.insert(key, ids.clone());
        Ok(PartitionRead { ids, vectors_checked })
    }

    fn bump(&self) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// The notes' generation as this process last saw it: [`Catalog::generation`] without
    /// asking the store whether another process wrote (nor reloading): for work off the
    /// recalls' path, which the next recall's check catches up.
    pub fn seen_generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The notes' generation as of now (another process's writes seen): equal while no note
    /// was written, changed or removed.
    pub fn generation(&self, conn: &Connection) -> Result<u64> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.fresh(conn, &mut g)?;
        Ok(self.generation.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// The current notes among `ids` as [`store::load`] reads them (in the order of `ids`, a
    /// note that is not current left out), from memory where they were read before.
    pub fn load_notes(&self, conn: &Connection, ids: &[i64]) -> Result<Vec<Arc<Note>>> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        st.reads += 1;
        let missing: Vec<i64> = ids.iter().copied().filter(|id| !st.notes.contains_key(id)).collect();
        for id in ids {
            if let Some(at) = st.large.get_mut(id) {
                *at = st.reads;
            }
        }
        // This read's large-skill notes (answered even when more than are kept).
        let mut passing: HashMap<i64, Arc<Note>> = HashMap::new();
        if !missing.is_empty() {
            let read = store::load(conn, &missing)?;
            let (held, large): (Vec<Note>, Vec<Note>) = read
                .into_iter()
                .partition(|n| st.skills.get(n.skill.as_str()).is_none_or(|v| v.len() <= HOLD_SKILL_MAX));
            if st.notes.len() + held.len() + large.len() > NOTES_HELD {
                st.notes.clear();
                st.large.clear();
            }
            st.notes.extend(held.into_iter().map(|n| (n.id, Arc::new(n))));
            for n in large {
                let n = Arc::new(n);
                st.large.insert(n.id, st.reads);
                st.notes.insert(n.id, n.clone());
                passing.insert(n.id, n);
            }
        }
        // Shared, not copied (copying a held note's strings was a twelfth of a small skill's
        // load); recall asks for each note once.
        let out = ids.iter().filter_map(|id| passing.remove(id).or_else(|| st.notes.get(id).cloned())).collect();
        st.drop_oldest_large();
        Ok(out)
    }

    /// Reads ahead the notes among `ids` that [`Catalog::load_notes`] would hold and does not
    /// yet, when they fit beside those held without dropping any (a warm-up never pushes out
    /// what loads read); returns how many it read. The first load of a small skill then finds
    /// its notes held: reading ~100 rows was a third of it.
    pub fn read_ahead(&self, conn: &Connection, ids: &[i64]) -> Result<usize> {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        let held_skill =
            |id: &i64| st.skill_of.get(id).and_then(|s| st.skills.get(s)).is_some_and(|v| v.len() <= HOLD_SKILL_MAX);
        let missing: Vec<i64> = ids.iter().copied().filter(|id| !st.notes.contains_key(id) && held_skill(id)).collect();
        if missing.is_empty() || st.notes.len() + missing.len() > NOTES_HELD {
            return Ok(0);
        }
        let read = store::load(conn, &missing)?;
        let n = read.len();
        st.notes.extend(read.into_iter().map(|n| (n.id, Arc::new(n))));
        Ok(n)
    }

    /// Whether note `id` is held in memory ([`Catalog::load_notes`], [`Catalog::read_ahead`]).
    pub fn holds(&self, id: i64) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|st| st.notes.contains_key(&id))
    }

    /// The conflicting pairs `(older, newer)` with both notes among `ids`, both current and
    /// recalled (not waiting for review), by `older` then `newer`: from memory, the table
    /// read once a load.
    pub fn conflicts_among(&self, conn: &Connection, ids: &[i64]) -> Result<Vec<(i64, i64)>> {
        if ids.len() < 2 {
            return Ok(vec![]);
        }
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = self.fresh(conn, &mut g)?;
        if st.pairs.is_none() {
            let mut p = Pairs::default();
            for (older, newer) in store::all_conflicts(conn)? {
                p.add(older, newer);
            }
            st.pairs = Some(p);
        }
        let pairs = st.pairs.as_ref().expect("read above");
        let wanted: std::collections::HashSet<i64> = ids.iter().copied().collect();
        let mut out = vec![];
        for older in ids.iter().filter(|id| st.skill_of.contains_key(id)) {
            for newer in pairs.newer_of.get(older).into_iter().flatten() {
                if wanted.contains(newer) && st.skill_of.contains_key(newer) {
                    out.push((*older, *newer));
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Records that `ids` were surfaced ([`store::mark_recalled`], reported with
    /// [`Catalog::after_write`] before): their held copies count the recall too.
    pub fn recalled(&self, ids: &[i64]) {
        if let Some(st) = self.state.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            for id in ids {
                if let Some(n) = st.notes.get_mut(id) {
                    // A copy only when a recall still shares it (the few notes its block shows).
                    Arc::make_mut(n).recalls += 1;
                }
            }
        }
    }

    /// The current change count of `conn`, to pass to [`Catalog::after_write`].
    pub(super) fn before_write(&self, conn: &Connection) -> u64 {
        conn.total_changes()
    }

    /// Records a write through `conn` that touched `ids` (written, pinned, edited, deleted):
    /// when the catalog was in step before it (`before` from [`Catalog::before_write`]), the
    /// rows are re-read and the new change count accepted; otherwise it reloads later.
    pub(super) fn after_write(&self, conn: &Connection, before: u64, ids: &[i64]) {
        if !ids.is_empty() {
            self.bump();
        }
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(st) = g.as_mut() else { return };
        let ok = st.changes == before
            && data_version(conn).ok() == Some(st.data_version)
            && ids.iter().try_for_each(|id| st.refresh(conn, *id)).is_ok();
        if ok {
            st.changes = conn.total_changes();
        } else {
            *g = None;
        }
    }

    /// Runs `write`, a store write through `conn`, and when it succeeds records the notes
    /// `touched` names of its outcome ([`Catalog::after_write`]). After a failure the catalog
    /// is not told: the connection's change count may have moved, and its next read reloads.
    pub fn write<T>(
        &self,
        conn: &mut Connection,
        write: impl FnOnce(&mut Connection) -> Result<T>,
        touched: impl FnOnce(&T) -> Vec<i64>,
    ) -> Result<T> {
        let before = self.before_write(conn);
        let out = write(conn)?;
        self.after_write(conn, before, &touched(&out));
        Ok(out)
    }

    /// Runs `write` through `conn` and records the notes `touched` names of its outcome,
    /// whatever it is: for writes that change no note's text (the catalog stays in step
    /// instead of reloading every note) or whose notes are known before the write.
    pub fn write_always<T>(
        &self,
        conn: &mut Connection,
        write: impl FnOnce(&mut Connection) -> T,
        touched: impl FnOnce(&T) -> Vec<i64>,
    ) -> T {
        let before = self.before_write(conn);
        let out = write(conn);
        self.after_write(conn, before, &touched(&out));
        out
    }

    /// Runs `write` through `conn`, a write of what is derived from the text of the notes
    /// `ids` (their pieces for token matching): nothing the catalog ranks by changes, so it
    /// stays in step without a reload, and only its held copies of those notes are read again.
    pub fn write_derived<T>(
        &self,
        conn: &mut Connection,
        write: impl FnOnce(&mut Connection) -> Result<T>,
        ids: &[i64],
    ) -> Result<T> {
        let before = self.before_write(conn);
        let out = write(conn)?;
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(st) = g.as_mut() {
            if st.changes == before && data_version(conn).ok() == Some(st.data_version) {
                for id in ids {
                    st.notes.remove(id);
                }
                st.changes = conn.total_changes();
            } else {
                *g = None;
            }
        }
        Ok(out)
    }

    /// Forgets everything, so the next read rebuilds from the store (after a bulk change such
    /// as an import).
    pub fn invalidate(&self) {
        self.bump();
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store;
    use crate::memory::{Kind, NewNote};

    fn conn() -> (tempfile::TempDir, Connection) {
        let d = tempfile::tempdir().unwrap();
        let c = crate::db::open(d.path()).unwrap();
        (d, c)
    }

    fn add(c: &mut Connection, skill: &str, scope: &str, pkey: &str, delta: &str) -> i64 {
        let new = NewNote { kind: Kind::Fix, scope: scope.parse().unwrap(), ..NewNote::gotcha(skill, "", delta) };
        store::write(c, pkey, &new, None, 0.9, None).unwrap().0
    }

    /// The pairs held in memory are the table's: read once, then kept in step by the writes
    /// reported for a note (a new pair, a purge), and only pairs of two current notes.
    #[test]
    fn conflicting_pairs_follow_reported_writes() {
        let (_d, mut c) = conn();
        let cat = Catalog::default();
        let [a, b, x] = ["pin serde 0.8", "pin serde 0.9", "unrelated"].map(|t| add(&mut c, "jq", "project", "p", t));
        let pair = |c: &Connection, o: i64, n: i64| {
            c.execute("INSERT INTO note_conflicts (older, newer, created_at) VALUES (?1, ?2, 0)", [o, n]).unwrap();
        };
        pair(&c, a, b);
        assert_eq!(cat.conflicts_among(&c, &[x, b, a]).unwrap(), vec![(a, b)]);
        assert_eq!(cat.conflicts_among(&c, &[a, x]).unwrap(), vec![], "both notes must be asked for");
        // A new note and its pair, reported as a write of that note.
        let before = cat.before_write(&c);
        let d = add(&mut c, "jq", "project", "p", "pin serde 1.0");
        pair(&c, b, d);
        cat.after_write(&c, before, &[d]);
        assert_eq!(cat.conflicts_among(&c, &[a, b, d]).unwrap(), vec![(a, b), (b, d)]);
        // A note purged: its pairs go with it (the table's cascade), and the id is not current.
        let before = cat.before_write(&c);
        c.execute("DELETE FROM notes WHERE id = ?1", [b]).unwrap();
        cat.after_write(&c, before, &[b]);
        assert_eq!(cat.conflicts_among(&c, &[a, b, d]).unwrap(), vec![]);
        // An unreported write: read again from the table.
        pair(&c, a, d);
        assert_eq!(cat.conflicts_among(&c, &[a, d]).unwrap(), vec![(a, d)]);
    }

    /// A write of what is derived from notes' text (their pieces for token matching) keeps
    /// the catalog in step: no reload, the same candidate list, and the held copies of those
    /// notes read again with what was written. Any other write it is not told of reloads it.
    #[test]
    fn a_derived_write_keeps_the_catalog_and_rereads_its_notes() {
        let (_d, mut c) = conn();
        let cat = Catalog::default();
        let ids: Vec<i64> = ["use -r", "use -s", "use -c"].iter().map(|t| add(&mut c, "jq", "global", "", t)).collect();
        let list = cat.candidates(&c, "jq", "p").unwrap().candidates;
        assert!(cat.load_notes(&c, &ids).unwrap().iter().all(|n| n.match_pieces.is_none()));
        assert!(ids.iter().all(|id| cat.holds(*id)));
        let generation = cat.generation(&c).unwrap();
        let rows: Vec<(i64, &str, &str, &[u8])> = vec![(ids[0], "", "use -r", &[1, 2, 3, 4, 5, 0])];
        let n = cat.write_derived(&mut c, |c| store::set_match_pieces(c, &rows), &[ids[0]]).unwrap();
        assert_eq!(n, 1);
        assert_eq!(cat.generation(&c).unwrap(), generation, "no reload");
        assert!(Arc::ptr_eq(&cat.candidates(&c, "jq", "p").unwrap().candidates, &list));
        assert!(!cat.holds(ids[0]) && cat.holds(ids[1]));
        let notes = cat.load_notes(&c, &ids).unwrap();
        assert_eq!(notes[0].match_pieces.as_deref(), Some(&[1u8, 2, 3, 4, 5, 0][..]));
        // The same write, untold: the catalog reloads.
        c.execute("UPDATE notes SET match_pieces = x'0102030406' WHERE id = ?1", [ids[1]]).unwrap();
        assert_ne!(cat.generation(&c).unwrap(), generation);
    }

    /// A skill's candidate list is the same list (the one its bm25 index is kept for) after
    /// recalls of many other skills, as long as no write changes it.
    #[test]
    fn a_skills_list_stays_while_many_skills_are_read() {
        let (_d, mut c) = conn();
        for i in 0..100 {
            add(&mut c, &format!("skill-{i}"), "project", "p", &format!("lesson {i}"));
        }
        let cat = Catalog::default();
        let first = cat.candidates(&c, "skill-0", "p").unwrap().candidates;
        for i in 1..100 {
            cat.candidates(&c, &format!("skill-{i}"), "p").unwrap();
        }
        let again = cat.candidates(&c, "skill-0", "p").unwrap().candidates;
        assert!(Arc::ptr_eq(&first, &again), "the list was dropped and read again");
    }

    /// The bm25 rung without the join (large stores) gives the join's answer.
    #[test]
    fn bm25_checked_in_memory_equals_the_join() {
        let (_d, mut c) = conn();
        let words = ["csv", "quote", "fields", "raw", "output", "null", "iterate", "filter"];
        for i in 0..300 {
            let skill = if i % 3 == 0 { "pdf" } else { "jq" };
            let scope = if i % 5 == 0 { "global" } else { "project" };
            let pkey = if scope == "global" {
                ""
            } else if i % 2 == 0 {
                "p1"
            } else {
                "p2"
            };
            let delta = format!("{} {} {} note {i}", words[i % 8], words[(i * 3) % 8], words[(i * 7 + 1) % 8]);
            add(&mut c, skill, scope, pkey, &delta);
        }
        for intent in ["csv fields", "raw null output", "iterate", "nothing here"] {
            let visible: Vec<i64> = store::candidates(&c, "jq", "p1").unwrap().iter().map(|c| c.id).collect();
            let join = store::fts(&c, "jq", "p1", intent, 50).unwrap();
            let mem = store::fts_every_word(&c, Some("jq"), &visible, intent, 50).unwrap();
            assert_eq!(join, mem, "{intent}");
        }
    }

    /// The partition ids kept between writes are the ones SQLite holds, through new notes,
    /// duplicate writes, pins, deletions and moves reported to the catalog.
    #[test]
    fn partition_ids_follow_reported_writes() {
        let (_d, mut c) = conn();
        let cat = Catalog::default();
        let check = |c: &Connection| {
            for (scope, pkey) in [(Scope::Project, "p1"), (Scope::Project, "p2"), (Scope::Global, "")] {
                let want: Vec<i64> = c
                    .prepare(
                        "SELECT id FROM notes WHERE skill = 'jq' AND scope = ?1 AND project_id = ?2 AND retired_at IS NULL
                         ORDER BY id",
                    )
                    .unwrap()
                    .query_map(rusqlite::params![scope.as_str(), pkey], |r| r.get(0))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                assert_eq!(*cat.partition_ids(c, "jq", scope, pkey).unwrap().ids, want, "{pkey}");
            }
        };
        let reported = |c: &mut Connection, scope: &str, pkey: &str, delta: &str| {
            let before = cat.before_write(c);
            let id = add(c, "jq", scope, pkey, delta);
            cat.after_write(c, before, &[id]);
            id
        };
        reported(&mut c, "project", "p1", "a");
        check(&c);
        for i in 0..5 {
            reported(&mut c, "project", "p1", &format!("n{i}"));
            reported(&mut c, "global", "", &format!("g{i}"));
            check(&c);
        }
        // A duplicate write (hits + 1) and a pin keep the list.
        let dup = reported(&mut c, "project", "p1", "n2");
        check(&c);
        let before = cat.before_write(&c);
        store::set_pinned(&mut c, dup, true).unwrap();
        cat.after_write(&c, before, &[dup]);
        check(&c);
        // A deletion, then a move to another partition.
        let before = cat.before_write(&c);
        store::retire(&mut c, dup, "p1", None, None).unwrap();
        cat.after_write(&c, before, &[dup]);
        check(&c);
        let moved = reported(&mut c, "project", "p1", "to move");
        let before = cat.before_write(&c);
        c.execute("UPDATE notes SET project_id = 'p2', origin_project = 'p2' WHERE id = ?1", [moved]).unwrap();
        cat.after_write(&c, before, &[moved]);
        check(&c);
        reported(&mut c, "project", "p2", "after the move");
        check(&c);
    }

    #[test]
    fn matches_sqlite_through_own_and_foreign_writes() {
        let (d, mut c) = conn();
        let cat = Catalog::default();
        add(&mut c, "jq", "project", "p1", "a");
        add(&mut c, "jq", "global", "", "b");
        add(&mut c, "jq", "project", "p2", "c");
        let check = |c: &Connection| {
            for p in ["p1", "p2", "p3"] {
                let got = cat.candidates(c, "jq", p).unwrap().candidates;
                assert_eq!(*got, store::candidates(c, "jq", p).unwrap(), "{p}");
            }
        };
        check(&c);
        // An unreported write through the same connection.
        let id = add(&mut c, "jq", "project", "p1", "d");
        check(&c);
        // A reported one.
        let before = cat.before_write(&c);
        let created = store::get(&c, id).unwrap().unwrap().created_at;
        store::set_facts(&mut c, id, 4, created, true).unwrap();
        cat.after_write(&c, before, &[id]);
        cat.mark_checked("jq");
        assert!(cat.candidates(&c, "jq", "p1").unwrap().vectors_checked);
        check(&c);
        // Another connection.
        let mut other = crate::db::open(d.path()).unwrap();
        store::retire(&mut other, id, "p1", None, None).unwrap();
        assert!(!cat.candidates(&c, "jq", "p1").unwrap().vectors_checked);
        check(&c);
        let ids = cat.partition_ids(&c, "jq", Scope::Global, "").unwrap().ids;
        assert_eq!(*ids, vec![2]);
    }

    /// A large skill's notes asked for load after load stay held; the others pass through,
    /// and never more than [`LARGE_HELD`] of them are kept, however many one read asks for.
    #[test]
    fn a_large_skills_notes_read_again_and_again_stay_held() {
        let (_d, mut c) = conn();
        let cat = Catalog::default();
        let ids: Vec<i64> = (0..20).map(|i| add(&mut c, "jq", "project", "p1", &format!("lesson {i}"))).collect();
        let large = |cat: &Catalog| cat.state.lock().unwrap().as_ref().unwrap().large.len();
        let (head, rest) = ids.split_at(2);
        for round in 0..12 {
            let mut asked = head.to_vec();
            asked.extend(rest.iter().cycle().skip(round * 3).take(3));
            let want = store::load(&c, &asked).unwrap();
            let got = cat.load_notes(&c, &asked).unwrap();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "round {round}");
            assert!(head.iter().all(|id| cat.holds(*id)), "round {round}");
            assert!(large(&cat) <= LARGE_HELD, "round {round}");
        }
        // One read of more than are kept answers every note it asked for.
        let want = store::load(&c, &ids).unwrap();
        assert_eq!(format!("{:?}", cat.load_notes(&c, &ids).unwrap()), format!("{want:?}"));
        assert!(large(&cat) <= LARGE_HELD);
        // A held one follows a write, as the small skills' do.
        let before = cat.before_write(&c);
        store::set_pinned(&mut c, head[0], true).unwrap();
        cat.after_write(&c, before, &[head[0]]);
        assert!(cat.load_notes(&c, &head[..1]).unwrap()[0].pinned);
    }

    /// Notes read through the catalog are the ones SQLite holds now: through reported writes
    /// (a duplicate's hits, a pin, an edit, a retirement), unreported and foreign ones, and
    /// counted recalls.
    #[test]
    fn held_notes_follow_every_write() {
        let (d, mut c) = conn();
        let cat = Catalog::default();
        let ids: Vec<i64> = (0..6).map(|i| add(&mut c, "jq", "project", "p1", &format!("lesson {i}"))).collect();
        // A skill small enough that its notes are held (jq's are read through: HOLD_SKILL_MAX).
        let small: Vec<i64> = (0..2).map(|i| add(&mut c, "yq", "project", "p1", &format!("small {i}"))).collect();
        let mut all = ids.clone();
        all.extend(&small);
        all.push(9999);
        let check = |c: &Connection, why: &str| {
            let want = store::load(c, &all).unwrap();
            let got = cat.load_notes(c, &all).unwrap();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{why}");
        };
        check(&c, "first read");
        check(&c, "held");
        let reported = |c: &mut Connection, id: i64, f: &dyn Fn(&mut Connection)| {
            let before = cat.before_write(c);
            f(c);
            cat.after_write(c, before, &[id]);
        };
        reported(&mut c, ids[0], &|c| {
            add(c, "jq", "project", "p1", "lesson 0");
        });
        check(&c, "a duplicate write");
        reported(&mut c, ids[1], &|c| store::set_pinned(c, ids[1], true).unwrap());
        check(&c, "a pin");
        reported(&mut c, ids[2], &|c| {
            c.execute("UPDATE notes SET delta = 'edited', updated_at = updated_at + 1 WHERE id = ?1", [ids[2]])
                .unwrap();
        });
        check(&c, "an edit");
        reported(&mut c, small[0], &|c| {
            c.execute("UPDATE notes SET delta = 'held, edited', updated_at = updated_at + 1 WHERE id = ?1", [small[0]])
                .unwrap();
        });
        check(&c, "an edit of a held note");
        reported(&mut c, small[1], &|c| store::retire(c, small[1], "p1", None, None).unwrap());
        check(&c, "a held note retired");
        reported(&mut c, ids[3], &|c| store::retire(c, ids[3], "p1", None, None).unwrap());
        check(&c, "a retirement");
        c.execute("UPDATE notes SET delta = 'unreported' WHERE id = ?1", [ids[4]]).unwrap();
        check(&c, "an unreported write");
        let other = crate::db::open(d.path()).unwrap();
        other.execute("UPDATE notes SET delta = 'elsewhere' WHERE id = ?1", [ids[5]]).unwrap();
        check(&c, "another connection's write");
        let before = cat.before_write(&c);
        store::mark_recalled(&mut c, &ids).unwrap();
        cat.after_write(&c, before, &[]);
        cat.recalled(&ids);
        check(&c, "recalls counted");
    }

    /// A read-ahead holds a small skill's notes as a load reads them, and only while they fit
    /// beside those held: it never drops what loads read.
    #[test]
    fn reading_ahead_holds_small_skills_notes_as_loads_read_them() {
        let (_d, mut c) = conn();
        let cat = Catalog::default();
        let small: Vec<i64> = (0..2).map(|i| add(&mut c, "yq", "project", "p1", &format!("small {i}"))).collect();
        let large: Vec<i64> = (0..4).map(|i| add(&mut c, "jq", "project", "p1", &format!("large {i}"))).collect();
        let more: Vec<i64> = (0..2).map(|i| add(&mut c, "zq", "project", "p1", &format!("more {i}"))).collect();
        assert_eq!(cat.read_ahead(&c, &large).unwrap(), 0, "a large skill's notes are read through");
        assert_eq!(cat.read_ahead(&c, &small).unwrap(), 2);
        assert_eq!(cat.read_ahead(&c, &small).unwrap(), 0, "held already");
        // Held copies follow a reported edit like any other.
        let before = cat.before_write(&c);
        c.execute("UPDATE notes SET delta = 'edited', updated_at = updated_at + 1 WHERE id = ?1", [small[0]]).unwrap();
        cat.after_write(&c, before, &[small[0]]);
        let want = store::load(&c, &small).unwrap();
        assert_eq!(format!("{:?}", cat.load_notes(&c, &small).unwrap()), format!("{want:?}"));
        // Full: nothing is read ahead, and nothing held is dropped.
        let mut g = cat.state.lock().unwrap();
        let st = g.as_mut().unwrap();
        for id in 0..NOTES_HELD as i64 - 2 {
            st.notes.insert(1_000_000 + id, Arc::new(want[0].clone()));
        }
        drop(g);
        assert_eq!(cat.read_ahead(&c, &more).unwrap(), 0, "no room");
        assert_eq!(cat.state.lock().unwrap().as_ref().unwrap().notes.len(), NOTES_HELD);
    }
}
