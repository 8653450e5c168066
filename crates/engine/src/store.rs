//! The engine's part that holds the store: the one SQLite connection, the catalog read
//! through it, the recall counts waiting to be written, and the write-ahead log's
//! checkpointer.
//!
//! A recall does not write its count itself: it leaves the ids here ([`Store::recalled`]), and
//! the server writes them right after it answers ([`Store::flush_recall_counts`]), so that no
//! recall waits for a write transaction (another sidecar of the data directory may hold the
//! write lock) or its commit. Every other use of the connection ([`Store::conn`]) writes the
//! counts still pending first, so that every read sees them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{checkpoint, lock};
use skillmem_store::memory::catalog::Catalog;
use skillmem_store::memory::store;

/// While recalls keep coming, their counts are written at most this often (or once
/// [`RECALL_COUNTS_HELD`] wait), in one transaction: each recall's own write of the 20 to 50
/// notes it surfaced would be a transaction of as many scattered pages, which the next recall
/// would wait for. A read that shows counts writes them first ([`Store::conn`]).
pub const RECALL_COUNTS_EVERY: Duration = Duration::from_secs(1);
/// See [`RECALL_COUNTS_EVERY`].
pub const RECALL_COUNTS_HELD: usize = 16_384;

/// The store of one data directory, as the engine uses it.
pub(super) struct Store {
    conn: Mutex<Connection>,
    /// What recall ranks by, in memory (see [`skillmem_store::memory::catalog`]).
    pub(super) catalog: Catalog,
    /// Notes recalls surfaced whose counts are not written yet.
    pending_recalls: Mutex<Vec<i64>>,
    /// When recall counts were last written (see [`RECALL_COUNTS_EVERY`]).
    counts_written: Mutex<Instant>,
    /// A delayed write of the recall counts is scheduled ([`Store::schedule_recall_counts`]).
    counts_scheduled: AtomicBool,
    /// Checkpoints the write-ahead log off the write path (see `checkpoint.rs`).
    _checkpointer: Option<checkpoint::Checkpointer>,
}

impl Store {
    pub(super) fn new(conn: Connection) -> Store {
        let checkpointer = checkpoint::Checkpointer::start(&conn);
        Store {
            conn: Mutex::new(conn),
            catalog: Catalog::default(),
            pending_recalls: Mutex::new(vec![]),
            counts_written: Mutex::new(Instant::now()),
            counts_scheduled: AtomicBool::new(false),
            _checkpointer: checkpointer,
        }
    }

    /// The database connection, for the engine's own modules (callers outside the engine go
    /// through its operations, never through SQL), with the recall counts still pending
    /// written first, so that every read sees them.
    pub(super) fn conn(&self) -> MutexGuard<'_, Connection> {
        let mut c = lock(&self.conn);
        self.write_recall_counts(&mut c);
        c
    }

    /// The connection for a recall: the counts still pending are left for later (a ranking
    /// reads no count), unless too many wait ([`RECALL_COUNTS_HELD`]).
    pub(super) fn conn_for_recall(&self) -> MutexGuard<'_, Connection> {
        let mut c = lock(&self.conn);
        if lock(&self.pending_recalls).len() >= RECALL_COUNTS_HELD {
            self.write_recall_counts(&mut c);
        }
        c
    }

    /// The connection as it is, the recall counts left pending: for a write that reads no
    /// count and must not wait for theirs (a session's calls).
    pub(super) fn conn_as_is(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// The connection's mutex itself, for a domain that takes its own locks on it (the skill
    /// store, [`skillmem_skills::Skills`]); such uses read and write no note.
    pub(super) fn mutex(&self) -> &Mutex<Connection> {
        &self.conn
    }

    fn write_recall_counts(&self, conn: &mut Connection) {
        let ids = std::mem::take(&mut *lock(&self.pending_recalls));
        if ids.is_empty() {
            return;
        }
        *lock(&self.counts_written) = Instant::now();
        match self.catalog.write_always(conn, |c| store::mark_recalled(c, &ids), |_| vec![]) {
            Ok(()) => self.catalog.recalled(&ids),
            Err(e) => tracing::warn!("the recall counts of {} notes were not written: {e}", ids.len()),
        }
    }

    /// Leaves the ids of the notes a recall surfaced, to be counted later.
    pub(super) fn recalled(&self, ids: &[i64]) {
        lock(&self.pending_recalls).extend_from_slice(ids);
    }

    /// Whether recalls left counts to write ([`Store::flush_recall_counts`]).
    pub(super) fn recall_counts_pending(&self) -> bool {
        !lock(&self.pending_recalls).is_empty()
    }

    /// Whether the recall counts are due: some wait, and they were last written
    /// [`RECALL_COUNTS_EVERY`] ago or more.
    pub(super) fn recall_counts_due(&self) -> bool {
        self.recall_counts_pending() && lock(&self.counts_written).elapsed() >= RECALL_COUNTS_EVERY
    }

    /// Claims the one delayed write of the recall counts: true when counts wait and no write
    /// is scheduled yet.
    pub(super) fn schedule_recall_counts(&self) -> bool {
        self.recall_counts_pending() && !self.counts_scheduled.swap(true, Ordering::AcqRel)
    }

    /// The delayed write [`Store::schedule_recall_counts`] claimed.
    pub(super) fn write_scheduled_recall_counts(&self) {
        self.counts_scheduled.store(false, Ordering::Release);
        self.flush_recall_counts();
    }

    /// Writes the recall counts left by recalls; at once when none is pending.
    pub(super) fn flush_recall_counts(&self) {
        if self.recall_counts_pending() {
            drop(self.conn());
        }
    }
}
