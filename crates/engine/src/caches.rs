//! The engine's part that holds what recall keeps between calls besides the catalog: the head
//! of each skill's recency order, small skills' bm25 rung in memory with the connection it is
//! built through, the notes' word pieces read for token matching, and the thread that searches a
//! large skill's vectors. All of it is derived from the store and can be dropped at any time.

use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags};

use super::lock;
use skillmem_error::Result;
use skillmem_store::memory::lexicon::LexiconCache;
use skillmem_store::memory::recall;

/// Recall's caches (see the module docs).
pub(super) struct RecallCaches {
    /// Notes' pieces read for recall, kept by model and text (with a local model).
    pub(super) held_pieces: recall::HeldPieces,
    /// The head of each skill's recency × hits order (see [`recall::RestCache`]).
    pub(super) rest: recall::RestCache,
    /// Small skills' bm25 rung in memory.
    pub(super) lexicons: LexiconCache,
    /// The thread that searches a large skill's vectors beside its bm25 rung.
    pub(super) search: recall::SearchThread,
    /// The connection their indexes are built through, kept so that its page cache holds the
    /// skills' rows the next time (see [`super::Engine::build_lexicons`]).
    lexicon_conn: Mutex<Option<Connection>>,
}

impl Default for RecallCaches {
    fn default() -> Self {
        RecallCaches {
            held_pieces: recall::HeldPieces::new(recall::PIECES_HELD),
            rest: recall::RestCache::default(),
            lexicons: LexiconCache::default(),
            search: recall::SearchThread::default(),
            lexicon_conn: Mutex::new(None),
        }
    }
}

impl RecallCaches {
    /// The connection the bm25 indexes are built through, opened the first time on the
    /// database file `path` names (`None`: an in-memory database, which no second connection
    /// can open).
    pub(super) fn lexicon_conn(
        &self,
        path: impl FnOnce() -> Option<String>,
    ) -> Result<Option<std::sync::MutexGuard<'_, Option<Connection>>>> {
        let mut own = lock(&self.lexicon_conn);
        if own.is_none() {
            let Some(path) = path().filter(|p| !p.is_empty()) else { return Ok(None) };
            let c = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            c.busy_timeout(std::time::Duration::from_secs(5))?;
            *own = Some(c);
        }
        Ok(Some(own))
    }
}
