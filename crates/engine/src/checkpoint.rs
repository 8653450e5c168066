//! Checkpoints the database's write-ahead log on a thread and a connection of its own.
//!
//! SQLite checkpoints by default inside the commit that takes the log past 1000 pages, and a
//! checkpoint syncs the log and the database file to disk: a write through `skillmem/note`
//! then waits for two `fsync`s every few dozen writes (measured while filling a store through
//! the protocol: p50 commit 0.13 ms, p99 19 ms, the slowest 461 ms on a busy disk; three
//! quarters of the time spent committing was in those). Here the engine's connection only
//! checkpoints past [`SAFETY_PAGES`] (the thread fell behind or is gone) and the thread runs
//! a passive checkpoint every [`PERIOD`], which never blocks a writer.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How often the thread checkpoints.
pub const PERIOD: Duration = Duration::from_millis(250);
/// The engine's connection checkpoints itself past this many log pages (16 MB of 4 KB pages).
pub const SAFETY_PAGES: i64 = 4096;

type Stop = Arc<(Mutex<bool>, Condvar)>;

/// The checkpointing thread; stopped when dropped.
pub(super) struct Checkpointer {
    stop: Stop,
}

impl Checkpointer {
    /// Starts checkpointing the database `conn` is open on, and leaves the engine's connection
    /// checkpointing only past [`SAFETY_PAGES`]. None (and `conn` untouched) for a database
    /// without a file, or when the thread cannot start.
    pub(super) fn start(conn: &Connection) -> Option<Checkpointer> {
        let path = conn.path().filter(|p| !p.is_empty())?.to_string();
        let own =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| tracing::debug!("checkpointer: cannot open {path}: {e}"))
                .ok()?;
        let stop: Stop = Arc::new((Mutex::new(false), Condvar::new()));
        let s = stop.clone();
        let spawned = std::thread::Builder::new().name("skillmem-checkpoint".into()).spawn(move || run(own, s));
        if let Err(e) = spawned {
            tracing::debug!("checkpointer: cannot start its thread ({e}); SQLite checkpoints in the commits");
            return None;
        }
        if let Err(e) = conn.pragma_update(None, "wal_autocheckpoint", SAFETY_PAGES) {
            tracing::debug!("checkpointer: cannot raise wal_autocheckpoint ({e})");
        }
        Some(Checkpointer { stop })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

fn run(conn: Connection, stop: Stop) {
    let (lock, cv) = &*stop;
    let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        stopped = cv.wait_timeout(stopped, PERIOD).unwrap_or_else(|e| e.into_inner()).0;
        if *stopped {
            return;
        }
        // A passive checkpoint copies what no reader still needs and never waits for a lock;
        // with nothing new in the log it only reads the log's index.
        let r = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        });
        match r {
            Ok((_, log, done)) if log > 0 => tracing::trace!("checkpoint: {done} of {log} log pages"),
            Ok(_) => {}
            Err(e) => tracing::debug!("checkpoint: {e}"),
        }
    }
}
