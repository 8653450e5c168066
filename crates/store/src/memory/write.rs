//! A note's write as recall sees it: the store's write, its near-duplicate check among the
//! notes of the partition the catalog holds, the word pieces stored beside the note, and the
//! catalog told which notes changed. The engine calls [`write_note`] and [`edit_note`] with
//! the note's vector already made (embedding happens before the connection's lock); when the
//! index can be trusted with a partition's vectors is known here, not in the engine.

use rusqlite::Connection;

use crate::embed::Pieces;
use crate::error::Result;
use crate::index::VectorIndex;
use crate::memory::catalog::Catalog;
use crate::memory::sameness::Thresholds;
use crate::memory::store::{self, Embedded, Outcome};
use crate::memory::{NewNote, WriteStatus};

/// One note to write, as the engine has prepared it (trimmed, its provenance and skill hash set).
pub struct NoteWrite<'a> {
    /// The project the note is written from (its partition when its scope is the project).
    pub project: &'a str,
    pub new: &'a NewNote,
    /// The note's vector and the model that made it; `None` stores it without one (found by
    /// its words, embedded later by `distill`).
    pub embedded: Option<Embedded<'a>>,
    /// The note's word pieces, by the same model as `embedded`.
    pub pieces: Option<&'a Pieces>,
    pub thresholds: Thresholds,
    /// The note this one takes the place of.
    pub replaces: Option<i64>,
}

/// Writes a note with duplicate detection ([`store::write_among`]) and tells the catalog.
///
/// Near duplicates are looked for among the partition's notes the catalog holds, once the
/// index is known to hold their vectors; otherwise the store asks SQLite. The skill's vectors
/// are checked against the index here once, as a recall does: otherwise every write until
/// the first recall would ask SQLite for the partition's rows (every row of a 90k-note
/// partition, per write: writes into a fresh store slow down as it fills).
pub fn write_note(
    conn: &mut Connection,
    catalog: &Catalog,
    index: Option<&dyn VectorIndex>,
    w: NoteWrite<'_>,
) -> Result<Outcome> {
    let NoteWrite { project, new, embedded, pieces, thresholds, replaces } = w;
    let t0 = std::time::Instant::now();
    let pkey = store::partition(new.scope, project).to_string();
    let part = catalog.partition_ids(conn, &new.skill, new.scope, &pkey)?;
    let ready = index.filter(|ix| !ix.warming());
    if let (Some(ix), false) = (ready, part.vectors_checked) {
        let all = catalog.candidates(conn, &new.skill, project)?;
        let all: Vec<i64> = all.candidates.iter().map(|c| c.id).collect();
        store::ensure_vectors(conn, ix, &all)?;
        catalog.mark_checked(&new.skill);
    }
    let ids = ready.map(|_| part.ids);
    let t_ids = t0.elapsed();
    let model = embedded.as_ref().map(|e| e.model);
    let before = catalog.before_write(conn);
    let o = store::write_among(
        conn,
        project,
        new,
        embedded,
        thresholds,
        index,
        ids.as_deref().map(|v| v.as_slice()),
        replaces,
    )?;
    // Released before the catalog appends the new id to the same list (no copy).
    drop(ids);
    let fresh = o.status == WriteStatus::Inserted || (o.status == WriteStatus::Replaced && o.replaced != Some(o.id));
    if let (Some(p), Some(m), true) = (pieces, model, fresh) {
        store::set_pieces(conn, m, &[(o.id, &new.intent, &new.delta, p)])?;
    }
    let t_write = t0.elapsed();
    let touched: Vec<i64> = std::iter::once(o.id).chain(o.replaced).collect();
    catalog.after_write(conn, before, &touched);
    tracing::trace!(
        "write {}: ids {:?}, write {:?}, catalog {:?}",
        o.id,
        t_ids,
        t_write - t_ids,
        t0.elapsed() - t_write
    );
    Ok(o)
}

/// Replaces note `id`'s lesson with `delta` ([`store::edit`]), with its new vector and
/// pieces, and tells the catalog.
pub fn edit_note(
    conn: &mut Connection,
    catalog: &Catalog,
    index: Option<&dyn VectorIndex>,
    id: i64,
    (intent, delta): (&str, &str),
    embedded: Option<Embedded<'_>>,
    pieces: Option<&Pieces>,
) -> Result<()> {
    let model = embedded.as_ref().map(|e| e.model);
    let edit = |c: &mut Connection| {
        store::edit(c, id, delta, embedded, index)?;
        if let (Some(p), Some(m)) = (pieces, model) {
            store::set_pieces(c, m, &[(id, intent, delta, p)])?;
        }
        Ok(())
    };
    catalog.write(conn, edit, |_| vec![id])
}
