//! A thread that searches a large skill's vectors, and reads the notes its search found
//! through a read-only connection of its own, while the recall's own thread runs the bm25
//! rung and reads bm25's notes: at 90,000 notes each takes about half a millisecond.
//!
//! The thread waits for work and is woken by it (about 10 µs on the 2-core machine of
//! docs/benchmarks.md). A thread started for each search is no use there: the kernel puts a new
//! thread on its parent's CPU, where it waited for the parent to finish its bm25 rung (the
//! search started 0.9 ms after it was asked for). Started at the first large skill's recall,
//! it ends with its owner. When it cannot take the search (it could not start, or it panicked),
//! the recall searches on its own thread: the answer is the same either way.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::super::lexicon::SkillPieces;
use super::super::store::{self, Candidates};
use super::super::Note;
use crate::embed::tokens::{Matched, Query, TokenMatch};
use crate::index::VectorIndex;

/// What the thread does: a search (and the reading of its notes through the thread's own
/// connection), its answer sent back.
type Job = Box<dyn FnOnce(&mut Reader) + Send>;

/// The thread's connection to the store, opened at its first read (read-only, a small page
/// cache: it reads a few dozen rows a recall).
#[derive(Default)]
struct Reader {
    conn: Option<(PathBuf, Connection)>,
}

/// The search thread's page cache, in KiB: the rows it reads are scattered over the file
/// (a cache would rarely hold them again), the B-tree's upper pages fit.
const READER_CACHE_KIB: i64 = 1024;

impl Reader {
    /// The current notes among `ids` ([`store::load`]); `None` when the store cannot be read
    /// here (the recall then reads them itself).
    fn load(&mut self, db: &PathBuf, ids: &[i64]) -> Option<Vec<Note>> {
        if self.conn.as_ref().is_none_or(|(p, _)| p != db) {
            let conn =
                Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                    .and_then(|c| {
                        c.busy_timeout(std::time::Duration::from_secs(10))?;
                        c.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
                        Ok(c)
                    });
            match conn {
                Ok(c) => self.conn = Some((db.clone(), c)),
                Err(e) => {
                    tracing::debug!("recall: the search thread cannot read {}: {e}", db.display());
                    return None;
                }
            }
        }
        let (_, conn) = self.conn.as_ref()?;
        store::load(conn, ids).map_err(|e| tracing::debug!("recall: the search thread's read failed: {e}")).ok()
    }
}

/// The search thread (see the module docs); one per engine.
#[derive(Default)]
pub struct SearchThread {
    jobs: Mutex<Option<Sender<Job>>>,
    /// Searches handed over.
    taken: std::sync::atomic::AtomicU64,
    /// Notes the thread read.
    read: Arc<std::sync::atomic::AtomicU64>,
    /// Notes the thread matched ([`Matching`]).
    matched: Arc<std::sync::atomic::AtomicU64>,
}

/// What a search found: its nearest notes (those of a positive score), the notes among
/// them the thread read, when it was given the store (`None`: the recall reads them), and
/// the token matching of those held in a [`Matching`]'s pieces, shared ([`Share`]).
pub struct Found {
    pub hits: Vec<(i64, f32)>,
    pub notes: Option<Vec<Note>>,
    pub share: Option<Arc<Share>>,
}

/// Token matching of the notes a search finds, done on the thread too: the table, the
/// intent's pieces, and the skill's pieces held (a note not held there is left to the recall).
#[derive(Clone)]
pub struct Matching {
    pub tokens: Arc<TokenMatch>,
    pub query: Arc<Query>,
    pub held: Arc<SkillPieces>,
}

/// Parts a search's notes are matched in ([`Share`]).
const PARTS: usize = 3;

/// The token matching of a search's notes, in parts either thread claims: the search thread
/// starts as soon as its search is done, the recall's own thread joins once its bm25 rung is
/// (it waited for the search's matching a quarter of a millisecond at 90,000 notes: the one
/// thread matched 50 notes while the other had nothing left to do).
pub struct Share {
    matching: Matching,
    parts: Vec<Vec<i64>>,
    next: std::sync::atomic::AtomicUsize,
    matched: Mutex<Vec<(i64, Matched)>>,
    /// The thread's count of notes matched ([`SearchThread::matched`]).
    count: Arc<std::sync::atomic::AtomicU64>,
}

impl Share {
    fn new<T>(matching: Matching, hits: &[(i64, T)], count: Arc<std::sync::atomic::AtomicU64>) -> Share {
        let ids: Vec<i64> = hits.iter().map(|(id, _)| *id).collect();
        let per = ids.len().div_ceil(PARTS).max(1);
        Share {
            matching,
            parts: ids.chunks(per).map(<[i64]>::to_vec).collect(),
            next: Default::default(),
            matched: Default::default(),
            count,
        }
    }

    /// Matches the parts no thread claimed yet, one at a time, until none is left; notes
    /// `skip` holds are not matched again. Returns how many notes it matched.
    pub fn work(&self, skip: &dyn Fn(i64) -> bool) -> usize {
        let mut n = 0;
        loop {
            let i = self.next.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let Some(part) = self.parts.get(i) else { return n };
            let ids: Vec<(i64, ())> = part.iter().filter(|id| !skip(**id)).map(|id| (*id, ())).collect();
            let got = match_held(&self.matching, &ids);
            n += got.len();
            self.count.fetch_add(got.len() as u64, std::sync::atomic::Ordering::Relaxed);
            self.matched.lock().unwrap_or_else(|e| e.into_inner()).extend(got);
        }
    }

    /// What the parts matched so far (all of them once [`Pending::done`]).
    pub fn take(&self) -> Vec<(i64, Matched)> {
        std::mem::take(&mut *self.matched.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A search handed to a [`SearchThread`]: what it found, once [`Pending::wait`]ed for, then
/// the end of its share of the matching ([`Pending::done`]).
pub struct Pending(Receiver<Found>, Receiver<()>);

impl Pending {
    /// The search's answer; `None` when the thread dropped it (it panicked).
    pub fn wait(&self) -> Option<Found> {
        self.0.recv().ok()
    }

    /// Waits until the thread has matched the parts it claimed (or is gone).
    pub fn done(&self) {
        let _ = self.1.recv();
    }
}

impl SearchThread {
    /// How many searches the thread was handed.
    pub fn taken(&self) -> u64 {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many notes the thread read.
    pub fn read(&self) -> u64 {
        self.read.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many notes of its searches were matched (on either thread: [`Share`]).
    pub fn matched(&self) -> u64 {
        self.matched.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Hands `index`'s search of the `k` candidates nearest `query` to the thread (started
    /// here the first time), and the reading of the notes it finds from the store at `db`
    /// when given, and their token matching when given; `None` when it cannot take it.
    pub fn search(
        &self,
        index: Arc<dyn VectorIndex>,
        query: Vec<f32>,
        candidates: Arc<Candidates>,
        k: usize,
        (db, matching): (Option<PathBuf>, Option<Matching>),
    ) -> Option<Pending> {
        let (tx, rx) = channel();
        let (done_tx, done_rx) = channel();
        let read = self.read.clone();
        let matched_n = self.matched.clone();
        let job: Job = Box::new(move |reader: &mut Reader| {
            let t = std::time::Instant::now();
            let mut hits = index.search_sorted(&query, candidates.ids(), candidates.bits(), k);
            hits.retain(|(_, s)| *s > 0.0);
            let searched = t.elapsed();
            let notes = db.and_then(|db| reader.load(&db, &hits.iter().map(|(id, _)| *id).collect::<Vec<_>>()));
            let read_in = t.elapsed() - searched;
            read.fetch_add(notes.as_ref().map_or(0, Vec::len) as u64, std::sync::atomic::Ordering::Relaxed);
            let share = matching.map(|m| Arc::new(Share::new(m, &hits, matched_n)));
            // The hits first: the recall's thread claims parts of the matching once free.
            // It may have stopped waiting (an error on its side): nothing more to do then.
            if tx.send(Found { hits, notes, share: share.clone() }).is_err() {
                return;
            }
            let matched = share.map_or(0, |s| s.work(&|_| false));
            tracing::trace!(
                "rank: the search thread searched in {searched:?}, read notes in {read_in:?}, matched {matched} in {:?}",
                t.elapsed() - searched - read_in
            );
            let _ = done_tx.send(());
        });
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        self.taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let job = match jobs.as_ref() {
            Some(s) => match s.send(job) {
                Ok(()) => return Some(Pending(rx, done_rx)),
                // The thread is gone (it panicked): a new one takes it.
                Err(e) => e.0,
            },
            None => job,
        };
        let (send, jobs_rx) = channel::<Job>();
        let started = std::thread::Builder::new().name("skillmem-search".into()).spawn(move || {
            let mut reader = Reader::default();
            for job in jobs_rx {
                job(&mut reader);
            }
        });
        if let Err(e) = started {
            tracing::debug!("recall: no search thread ({e}); the vector rung runs after bm25");
            *jobs = None;
            self.taken.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
        let sent = send.send(job).is_ok();
        *jobs = Some(send);
        sent.then_some(Pending(rx, done_rx))
    }
}

/// What the notes among `hits` whose pieces `m` holds match of its query, by id.
pub fn match_held<T>(m: &Matching, hits: &[(i64, T)]) -> Vec<(i64, Matched)> {
    let held: Vec<(i64, Vec<u32>)> = hits.iter().filter_map(|(id, _)| Some((*id, m.held.get(*id)?))).collect();
    let refs: Vec<crate::embed::tokens::Note<'_>> =
        held.iter().map(|(_, p)| crate::embed::tokens::Note::of_pieces(p)).collect();
    held.iter().map(|(id, _)| *id).zip(m.tokens.matched(&m.query, &refs)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{ExactIndex, VectorIndex};
    use crate::memory::store::Candidate;

    fn candidates(ids: &[i64]) -> Arc<Candidates> {
        Arc::new(Candidates::new(
            ids.iter()
                .map(|id| Candidate { id: *id, pinned: false, created_at: 0, uses: Default::default() })
                .collect(),
        ))
    }

    #[test]
    fn the_thread_answers_as_the_index_does_and_survives_a_panic() {
        let ix: Arc<dyn VectorIndex> = Arc::new(ExactIndex::new("m"));
        for (id, v) in [(1, [1.0, 0.0]), (2, [0.6, 0.8]), (3, [0.0, 1.0])] {
            ix.insert(id, &v);
        }
        let cands = candidates(&[1, 2, 3]);
        let t = SearchThread::default();
        let q = vec![1.0, 0.1];
        let direct = ix.search_sorted(&q, cands.ids(), cands.bits(), 2);
        assert_eq!(direct.len(), 2);
        for _ in 0..3 {
            let found = t.search(ix.clone(), q.clone(), cands.clone(), 2, (None, None)).expect("taken").wait().unwrap();
            assert_eq!(found.hits, direct);
            assert!(found.notes.is_none(), "no store given: none read");
            assert!(found.share.is_none(), "no matching given");
        }
        // A job that panics ends the thread; the next search starts another.
        let boom: Job = Box::new(|_| panic!("a search that fails"));
        t.jobs.lock().unwrap().as_ref().unwrap().send(boom).unwrap();
        let mut answered = None;
        for _ in 0..100 {
            // The first send after the panic may still reach the dying thread's queue (then
            // its answer is dropped and `wait` says so); a later one starts a new thread.
            if let Some(found) = t.search(ix.clone(), q.clone(), cands.clone(), 2, (None, None)).and_then(|p| p.wait())
            {
                answered = Some(found.hits);
                break;
            }
        }
        assert_eq!(answered, Some(direct));
    }
}
