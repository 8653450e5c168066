//! A thread that searches a large skill's vectors while the recall's own thread runs the bm25
//! rung and reads bm25's notes: at 90,000 notes each takes about half a millisecond.
//!
//! The thread waits for work and is woken by it (about 10 µs on the 2-core machine of
//! docs/benchmarks.md). A thread started for each search is no use there: the kernel puts a new
//! thread on its parent's CPU, where it waited for the parent to finish its bm25 rung (the
//! search started 0.9 ms after it was asked for). Started at the first large skill's recall,
//! it ends with its owner. When it cannot take the search (it could not start, or it panicked),
//! the recall searches on its own thread: the answer is the same either way.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use super::super::store::Candidates;
use crate::index::VectorIndex;

/// What the thread does: a search, its answer sent back.
type Job = Box<dyn FnOnce() + Send>;

/// The search thread (see the module docs); one per engine.
#[derive(Default)]
pub struct SearchThread {
    jobs: Mutex<Option<Sender<Job>>>,
    /// Searches handed over.
    taken: std::sync::atomic::AtomicU64,
}

/// A search handed to a [`SearchThread`]: its nearest notes, once [`Pending::wait`]ed for.
pub struct Pending(Receiver<Vec<(i64, f32)>>);

impl Pending {
    /// The search's answer; `None` when the thread dropped it (it panicked).
    pub fn wait(self) -> Option<Vec<(i64, f32)>> {
        self.0.recv().ok()
    }
}

impl SearchThread {
    /// How many searches the thread was handed.
    pub fn taken(&self) -> u64 {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Hands `index`'s search of the `k` candidates nearest `query` to the thread (started
    /// here the first time); `None` when it cannot take it.
    pub fn search(
        &self,
        index: Arc<dyn VectorIndex>,
        query: Vec<f32>,
        candidates: Arc<Candidates>,
        k: usize,
    ) -> Option<Pending> {
        let (tx, rx) = channel();
        let job: Job = Box::new(move || {
            let hits = index.search_sorted(&query, candidates.ids(), candidates.bits(), k);
            // The recall may have stopped waiting (an error on its side): nothing to do.
            let _ = tx.send(hits);
        });
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        self.taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let job = match jobs.as_ref() {
            Some(s) => match s.send(job) {
                Ok(()) => return Some(Pending(rx)),
                // The thread is gone (it panicked): a new one takes it.
                Err(e) => e.0,
            },
            None => job,
        };
        let (send, jobs_rx) = channel::<Job>();
        let started = std::thread::Builder::new().name("skillmem-search".into()).spawn(move || {
            for job in jobs_rx {
                job();
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
        sent.then_some(Pending(rx))
    }
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
            let got = t.search(ix.clone(), q.clone(), cands.clone(), 2).expect("taken").wait();
            assert_eq!(got.as_ref(), Some(&direct));
        }
        // A job that panics ends the thread; the next search starts another.
        let boom: Job = Box::new(|| panic!("a search that fails"));
        t.jobs.lock().unwrap().as_ref().unwrap().send(boom).unwrap();
        let mut answered = None;
        for _ in 0..100 {
            // The first send after the panic may still reach the dying thread's queue (then
            // its answer is dropped and `wait` says so); a later one starts a new thread.
            if let Some(got) = t.search(ix.clone(), q.clone(), cands.clone(), 2).and_then(Pending::wait) {
                answered = Some(got);
                break;
            }
        }
        assert_eq!(answered, Some(direct));
    }
}
