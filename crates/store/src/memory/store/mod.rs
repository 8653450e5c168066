//! Notes in SQLite: every SQL statement over `notes` and `notes_fts` lives in this folder, one
//! file a concern (see ARCHITECTURE.md):
//!
//! - `mod.rs`: the columns a note is read by, the partition a note lives in, and the one
//!   "visible from a project" predicate;
//! - `write.rs`: writing a note, with duplicate detection;
//! - `notes.rs`: one note's life after it is written (pin, edit, forget, facts, loads);
//! - `fts.rs`: the full-text queries;
//! - `vectors.rs`: stored vectors and word pieces (the index's loads, re-embedding);
//! - `reads.rs`: the counts and scans recall's catalog, stats and reports read;
//! - `review.rs`: the review queue (accept, reject);
//! - `team.rs`: the local side of team sync (outbox, uids, applying a pull);
//! - `calls.rs`: sessions' calls and notes' evidence (shown, used, ignored);
//! - `curate.rs`: listing, scope moves, merges, export and import.
//!
//! Every write runs in one `BEGIN IMMEDIATE` transaction ([`crate::db::write_tx`]). A project
//! note is partitioned by its project identity, a global note by the empty partition key, so
//! that writes and duplicate detection stay within one scope and partition.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::sameness::{self, Relation, Thresholds};
use super::{norm_hash, Kind, NewNote, Note, Scope, Source, WriteStatus};
use crate::db::{now_ms, write_tx};
use crate::embed::{from_blob, to_blob};
use crate::error::{Error, Result};
use crate::index::VectorIndex;

mod calls;
mod curate;
mod fts;
mod notes;
mod reads;
mod review;
mod team;
mod vectors;
mod write;

pub use calls::*;
pub use curate::*;
pub use fts::*;
pub use notes::*;
pub use reads::*;
pub use review::*;
pub use team::*;
pub use vectors::*;
pub use write::*;

/// The partition a note of `scope` written from `project` lives in.
pub fn partition(scope: Scope, project: &str) -> &str {
    match scope {
        Scope::Project => project,
        Scope::Global => "",
    }
}

const NOTE_COLUMNS: &str = "id, skill, scope, origin_project, source, kind, intent, delta, tags, hits, recalls, pinned, skill_hash, created_at, updated_at, retired_at, superseded_by, reason, session_id, host, transcript, transcript_at, origin_source, review, review_replaces";

/// How many columns [`NOTE_COLUMNS`] reads (the next column of a wider select is this one).
const NOTE_COLUMN_COUNT: usize = 25;

fn note_from_row(r: &Row) -> rusqlite::Result<Note> {
    let scope: String = r.get(2)?;
    let source: String = r.get(4)?;
    let kind: String = r.get(5)?;
    let tags: String = r.get(8)?;
    Ok(Note {
        id: r.get(0)?,
        skill: r.get(1)?,
        scope: scope.parse().unwrap_or(Scope::Project),
        origin_project: r.get(3)?,
        // Every row is written from the enums; a spelling this version does not know (a newer
        // writer) reads as the most general one rather than failing the whole recall.
        source: source.parse().unwrap_or(Source::Agent),
        kind: kind.parse().unwrap_or(Kind::Discovery),
        intent: r.get(6)?,
        delta: r.get(7)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        hits: r.get(9)?,
        recalls: r.get(10)?,
        pinned: r.get::<_, i64>(11)? != 0,
        skill_hash: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
        retired_at: r.get(15)?,
        superseded_by: r.get(16)?,
        reason: r.get(17)?,
        session_id: r.get(18)?,
        origin: super::Origin { host: r.get(19)?, transcript: r.get(20)?, transcript_at: r.get(21)? },
        origin_source: r.get::<_, Option<String>>(22)?.and_then(|s| s.parse().ok()),
        pending: r.get::<_, Option<String>>(23)?.is_some(),
        review_replaces: r.get(24)?,
        match_pieces: None,
    })
}

/// A vector with the model that made it.
pub struct Embedded<'a> {
    pub vector: &'a [f32],
    pub model: &'a str,
    /// The text's pieces for token matching, as [`Note::match_pieces`] keeps them (a static
    /// table's embedder makes them; `None` stores none).
    pub matched: Option<&'a [u8]>,
}

/// One note by id.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Note>> {
    // Prepared once: a session's end reads every note it showed.
    let mut st = conn.prepare_cached(&format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?1"))?;
    Ok(st.query_row([id], note_from_row).optional()?)
}

/// The error for a note id that names no note.
pub fn not_found(id: i64) -> Error {
    Error::unknown_note(id)
}

/// The facts recall ranks a visible note by.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: i64,
    pub pinned: bool,
    pub created_at: i64,
    /// Its use counts and trust (the evidence of the sessions that were shown it).
    pub uses: crate::memory::evidence::Uses,
}

/// A skill's visible notes in id order, with their ids apart: recall hands the ids to the
/// vector index and to bm25 as they are, and finds a note by binary search, with no copy and
/// no check of their order at each load (at 90,000 notes those passes were a seventh of a
/// load's time under perf).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candidates {
    notes: Vec<Candidate>,
    ids: Vec<i64>,
    /// The ids' bits, for a large dense list ([`crate::index::IdBits::of_sorted`]).
    bits: Option<crate::index::IdBits>,
}

impl Candidates {
    /// `notes` in id order (sorted here when they are not; a repeated id is kept once).
    pub fn new(mut notes: Vec<Candidate>) -> Candidates {
        if !notes.windows(2).all(|w| w[0].id < w[1].id) {
            notes.sort_by_key(|c| c.id);
            notes.dedup_by_key(|c| c.id);
        }
        let ids: Vec<i64> = notes.iter().map(|c| c.id).collect();
        let bits = crate::index::IdBits::of_sorted(&ids);
        Candidates { notes, ids, bits }
    }

    /// The ids, ascending.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// The ids as bits, when they are many and dense enough (see
    /// [`crate::index::IdBits::of_sorted`]).
    pub fn bits(&self) -> Option<&crate::index::IdBits> {
        self.bits.as_ref()
    }

    /// Where the note `id` is among them.
    pub fn index_of(&self, id: i64) -> Option<usize> {
        match &self.bits {
            Some(b) => b.rank(id),
            None => self.ids.binary_search(&id).ok(),
        }
    }
}

impl std::ops::Deref for Candidates {
    type Target = [Candidate];
    fn deref(&self) -> &[Candidate] {
        &self.notes
    }
}

impl FromIterator<Candidate> for Candidates {
    fn from_iter<I: IntoIterator<Item = Candidate>>(it: I) -> Candidates {
        Candidates::new(it.into_iter().collect())
    }
}

/// The one "visible from a project" predicate: the current notes of the project bound to SQL
/// parameter `?n` (its own partition) plus every current global note. History (notes replaced
/// or retired) is left out, and so are notes waiting for review (`review`); see
/// [`visible_with_history`].
pub fn visible_from(n: usize) -> String {
    format!("(retired_at IS NULL AND review IS NULL AND {})", visible_with_history(n))
}

/// [`visible_from`] with the notes replaced or retired (history listings, restore, purge).
pub fn visible_with_history(n: usize) -> String {
    format!("((scope = 'project' AND project_id = ?{n}) OR scope = 'global')")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_kept_in_id_order_with_their_ids() {
        let c = |id: i64| Candidate { id, pinned: id == 7, created_at: id * 10, uses: Default::default() };
        // (the notes as given, the ids kept, in order)
        let cases: &[(&[i64], &[i64])] =
            &[(&[], &[]), (&[1, 2, 9], &[1, 2, 9]), (&[9, 1, 7], &[1, 7, 9]), (&[3, 3, 1], &[1, 3])];
        for (given, want) in cases {
            let got = Candidates::new(given.iter().map(|&id| c(id)).collect());
            assert_eq!(got.ids(), *want, "{given:?}");
            assert_eq!(got.iter().map(|x| x.id).collect::<Vec<_>>(), *want, "{given:?}");
            for (i, id) in want.iter().enumerate() {
                assert_eq!(got.index_of(*id), Some(i));
                assert_eq!(got[i], c(*id), "the facts stay with their note");
            }
            assert_eq!(got.index_of(4), None);
        }
        // A list large enough for bits finds each note's place by them.
        let ids: Vec<i64> = (1..20_000).filter(|i| i % 3 != 0).collect();
        let got = Candidates::new(ids.iter().map(|&id| c(id)).collect());
        assert!(got.bits().is_some());
        for id in 0..20_002 {
            assert_eq!(got.index_of(id), ids.binary_search(&id).ok(), "{id}");
        }
    }
}
