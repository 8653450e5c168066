//! Team memory: a team's machines share their notes through a PostgreSQL server, while
//! SQLite stays the place every recall reads from (docs/team.md).
//!
//! - [`server`]: the server schema (created and migrated here), the team claim, push, pull,
//!   `LISTEN`.
//! - [`backoff`]: retry delays.
//!
//! The `[team]` section is read with the rest of the configuration (`config::team`;
//! [`TeamConfig`] is re-exported here).
//!
//! The local half (outbox, uids, cursor, applying a pull) is SQL over the notes table and
//! lives in [`crate::memory::store`] ("team sync"); the engine (`engine/team.rs`) drives a
//! sync: push the outbox in batches, then pull from the cursor, embedding pulled notes with
//! its own embedder. Knows nothing of the engine, the server or the wire.

// The crates below, under the module names the code has always used (`crate::memory::…`).
use skillmem_config as config;
use skillmem_error as error;
use skillmem_store::memory;

pub mod backoff;
pub mod server;

pub use crate::config::team::{Share, TeamConfig};

/// A note's team id: the hash of its skill, scope, project partition and lesson at the time it
/// was first shared, so that two machines writing the same lesson get the same id, and an edit
/// keeps it. The lesson counts by its normalised text (`norm_hash`: case, spacing and
/// punctuation aside) and by the specifics the merge rule reads in it (numbers with their sign,
/// versions, flags, paths, code): the normalised text alone drops punctuation, and "offset -1"
/// and "offset 1" would be one row on the server.
pub fn note_uid(skill: &str, scope: &str, project_id: &str, norm_hash: &str, lesson: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [skill, scope, project_id, norm_hash] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    // No specifics: the id is what it always was (notes shared before keep theirs).
    for s in crate::memory::sameness::signature(lesson).specifics {
        h.update([1u8]);
        h.update(s.as_bytes());
    }
    h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// A new machine id: random enough to never meet another's (the clock, the process, the
/// data directory and the host name, hashed).
pub fn new_machine_id(data_dir: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    h.update(t.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(data_dir.display().to_string().as_bytes());
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        h.update(host.as_bytes());
    }
    let addr = &h as *const _ as usize;
    h.update(addr.to_le_bytes());
    h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn uid_is_stable_and_separates_its_parts() {
        let a = super::note_uid("jq", "global", "", "abc", "use jq");
        assert_eq!(a, super::note_uid("jq", "global", "", "abc", "Use jq."));
        assert_ne!(a, super::note_uid("jq", "project", "", "abc", "use jq"));
        assert_ne!(super::note_uid("ab", "c", "", "", ""), super::note_uid("a", "bc", "", "", ""));
        // The same normalised text, other specifics: two ids.
        let h = crate::memory::norm_hash("set the offset to 1");
        assert_eq!(h, crate::memory::norm_hash("set the offset to -1"));
        assert_ne!(
            super::note_uid("db", "global", "", &h, "set the offset to 1"),
            super::note_uid("db", "global", "", &h, "set the offset to -1")
        );
        assert_eq!(a.len(), 32);
    }
}
