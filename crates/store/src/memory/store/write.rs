//! Writing a note: exact and near duplicates, the one INSERT, bulk imports.

use super::*;

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The note written, or the one that already said the same thing.
    pub id: i64,
    pub status: WriteStatus,
    /// The note this write took the place of (`replaces`).
    pub replaced: Option<i64>,
    /// An existing note this one reads as a new version of (a conflicting pair, both kept).
    pub conflicts_with: Option<i64>,
}

/// How many of the nearest notes a write compares itself with (the nearest may name other
/// specifics while the next one says the same thing).
const NEIGHBOURS: usize = 8;

/// Writes a note, or bumps the hits of a note that says the same thing (see [`write_among`]);
/// `dedup_threshold` is the merge cosine, the same-subject cosine the default.
pub fn write(
    conn: &mut Connection,
    project: &str,
    new: &NewNote,
    embedded: Option<Embedded<'_>>,
    dedup_threshold: f32,
    index: Option<&dyn VectorIndex>,
) -> Result<(i64, WriteStatus)> {
    let t = Thresholds { merge: dedup_threshold, subject: dedup_threshold.min(DEFAULT_SUBJECT) };
    let o = write_among(conn, project, new, embedded, t, index, None, None)?;
    Ok((o.id, o.status))
}

/// `memory.conflictThreshold`'s default (see [`crate::config::MemoryConfig`]).
const DEFAULT_SUBJECT: f32 = 0.8;

/// Writes a note in one transaction. A current note of the same skill, scope and partition
/// that says the same thing takes the write as a hit instead (its hits go up, nothing new is
/// stored): the same normalised text, or a near neighbour (cosine ≥ `t.merge` among vectors
/// of the same model) that [`sameness`] judges [`Relation::Same`]. A near neighbour judged
/// [`Relation::Update`] is recorded with the new note as a conflicting pair.
///
/// With `replaces`, the note takes that note's place: its hits and pin carry over, the old one
/// leaves recall and is kept as history (`superseded_by`). The old note must be current, of
/// the same skill, and visible from `project`; otherwise nothing is written.
///
/// `partition_ids` are the ids of the partition's current notes, given by a caller whose
/// index is known to hold their vectors (otherwise SQLite is asked).
#[allow(clippy::too_many_arguments)]
pub fn write_among(
    conn: &mut Connection,
    project: &str,
    new: &NewNote,
    embedded: Option<Embedded<'_>>,
    t: Thresholds,
    index: Option<&dyn VectorIndex>,
    partition_ids: Option<&[i64]>,
    replaces: Option<i64>,
) -> Result<Outcome> {
    let mut hash = norm_hash(&new.delta);
    let pkey = partition(new.scope, project);
    let now = now_ms();
    let tx = write_tx(conn)?;
    let old = match replaces {
        Some(id) => Some(replaceable(&tx, id, &new.skill, project)?),
        None => None,
    };
    // Every write asks this and the insert below: both prepared once per connection.
    let exact: Option<i64> = tx
        .prepare_cached(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4
             AND retired_at IS NULL",
        )?
        .query_row(params![new.skill, new.scope.as_str(), pkey, hash], |r| r.get(0))
        .optional()?;
    // The normalised text drops punctuation: "offset -1" and "offset 1" hash alike. Such a
    // twin that names other specifics is another note, stored under a hash of its exact text.
    let exact = match exact {
        Some(id) => {
            let theirs: String = tx.query_row("SELECT delta FROM notes WHERE id = ?1", [id], |r| r.get(0))?;
            let t_same = Thresholds { merge: 0.0, subject: 0.0 };
            if sameness::relate(&theirs, &new.delta, 1.0, t_same) == Relation::Same {
                Some(id)
            } else {
                hash = exact_text_hash(&new.delta);
                None
            }
        }
        None => None,
    };
    let t0 = std::time::Instant::now();
    let mut same = exact;
    let mut conflict = None;
    if let (None, Some(e), None) = (exact, &embedded, old.as_ref()) {
        if e.vector.iter().any(|x| *x != 0.0) {
            let near = match (index.filter(|ix| ix.model_id() == e.model), partition_ids) {
                (Some(ix), Some(ids)) => ix.neighbours(e.vector, ids, t.search(), NEIGHBOURS),
                _ => near_notes(&tx, &new.skill, new.scope, pkey, e, t.search(), index)?,
            };
            (same, conflict) = judge(&tx, &new.delta, &near, t)?;
        }
    }
    let t_near = t0.elapsed();
    let bump = |tx: &Connection, id: i64| -> Result<()> {
        tx.execute(
            "UPDATE notes SET hits = hits + 1, last_used_at = ?2, skill_hash = COALESCE(?3, skill_hash) WHERE id = ?1",
            params![id, now, new.skill_hash],
        )?;
        // The agent's own note (never held for review) saying what a note waiting for review
        // says accepts that note: the agent vouches for it.
        if !new.pending && new.source == Source::Agent {
            tx.execute("UPDATE notes SET review = NULL WHERE id = ?1 AND review IS NOT NULL", [id])?;
        }
        Ok(())
    };
    // A correction waiting for review takes nothing's place yet: it is stored pending, with
    // the note it is to replace once accepted.
    if let (Some(old), true, None) = (&old, new.pending, exact) {
        let id = insert(&tx, project, new, &hash, now, embedded.as_ref())?;
        tx.execute("UPDATE notes SET review_replaces = ?2 WHERE id = ?1", params![id, old.id])?;
        tx.commit()?;
        if let (Some(ix), Some(e)) = (index, &embedded) {
            if ix.model_id() == e.model {
                ix.insert(id, e.vector);
            }
        }
        return Ok(Outcome { id, status: WriteStatus::Inserted, replaced: None, conflicts_with: None });
    }
    if let Some(old) = old {
        // The replacement says exactly what a current note says: the old note gives way to
        // that one (or, when it is the old note itself, nothing changes).
        if let Some(id) = exact {
            if id == old.id {
                tx.commit()?;
                return Ok(Outcome { id, status: WriteStatus::Duplicate, replaced: None, conflicts_with: None });
            }
            bump(&tx, id)?;
            supersede(&tx, old.id, id, now)?;
            tx.commit()?;
            if let Some(ix) = index {
                ix.remove(old.id);
            }
            return Ok(Outcome { id, status: WriteStatus::Replaced, replaced: Some(old.id), conflicts_with: None });
        }
        let id = insert(&tx, project, new, &hash, now, embedded.as_ref())?;
        tx.execute("UPDATE notes SET hits = ?2, pinned = ?3 WHERE id = ?1", params![id, old.hits, old.pinned as i64])?;
        supersede(&tx, old.id, id, now)?;
        tx.commit()?;
        if let Some(ix) = index {
            ix.remove(old.id);
            if let Some(e) = embedded.filter(|e| e.model == ix.model_id()) {
                ix.insert(id, e.vector);
            }
        }
        return Ok(Outcome { id, status: WriteStatus::Replaced, replaced: Some(old.id), conflicts_with: None });
    }
    if let Some(id) = same {
        bump(&tx, id)?;
        tx.commit()?;
        return Ok(Outcome { id, status: WriteStatus::Duplicate, replaced: None, conflicts_with: None });
    }
    let id = insert(&tx, project, new, &hash, now, embedded.as_ref())?;
    if let Some(older) = conflict {
        tx.prepare_cached("INSERT OR IGNORE INTO note_conflicts (older, newer, created_at) VALUES (?1, ?2, ?3)")?
            .execute(params![older, id, now])?;
    }
    let t_insert = t0.elapsed();
    tx.commit()?;
    let t_commit = t0.elapsed();
    if let (Some(ix), Some(e)) = (index, embedded) {
        if ix.model_id() == e.model {
            ix.insert(id, e.vector);
        }
    }
    tracing::trace!(
        "write_among {id}: near {:?} ({} ids), insert {:?}, commit {:?}, index {:?}",
        t_near,
        partition_ids.map_or(0, <[i64]>::len),
        t_insert - t_near,
        t_commit - t_insert,
        t0.elapsed() - t_commit
    );
    Ok(Outcome { id, status: WriteStatus::Inserted, replaced: None, conflicts_with: conflict })
}

/// The duplicate-check hash of a note whose normalised text another, different note already
/// has: the hash of its exact (trimmed) text, marked so that it never equals a normalised one.
pub(super) fn exact_text_hash(delta: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(delta.trim().as_bytes());
    let hex: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("x{hex}")
}

/// What a replacement carries over from the note it replaces.
struct Replaced {
    id: i64,
    hits: i64,
    pinned: bool,
}

/// The note `id` when `new_skill`'s write from `project` may replace it: current, of the same
/// skill, visible from the project.
fn replaceable(tx: &Connection, id: i64, new_skill: &str, project: &str) -> Result<Replaced> {
    type Row = (String, i64, bool, Option<i64>, Option<i64>, bool);
    let row: Option<Row> = tx
        .query_row(
            &format!(
                "SELECT skill, hits, pinned, retired_at, superseded_by, {} FROM notes WHERE id = ?1",
                visible_with_history(2)
            ),
            params![id, project],
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0, r.get(3)?, r.get(4)?, r.get::<_, i64>(5)? != 0)),
        )
        .optional()?;
    let Some((skill, hits, pinned, retired, by, visible)) = row else { return Err(not_found(id)) };
    if !visible {
        return Err(Error::NotFound(format!(
            "note {id} is not visible from this project (it belongs to another project); list this project's notes with skillmem notes"
        )));
    }
    if skill != new_skill {
        return Err(Error::invalid(format!(
            "note {id} is a note of skill {skill:?}, not {new_skill:?}: a replacement stays within its skill"
        )));
    }
    if let Some(by) = by {
        return Err(Error::invalid(format!("note {id} was already replaced by note {by}; replace note {by} instead")));
    }
    if retired.is_some() {
        return Err(Error::invalid(format!(
            "note {id} is retired; restore it first (skillmem/restore) or write the lesson as a new note"
        )));
    }
    Ok(Replaced { id, hits, pinned })
}

/// Takes note `old` out of recall as replaced by `new`.
fn supersede(tx: &Connection, old: i64, new: i64, now: i64) -> Result<()> {
    tx.execute(
        "UPDATE notes SET retired_at = ?3, superseded_by = ?2, updated_at = ?3 WHERE id = ?1",
        params![old, new, now],
    )?;
    Ok(())
}

/// The first of `near` (best first) that says the same as `delta`, and the first that reads as
/// an older version of it.
fn judge(tx: &Connection, delta: &str, near: &[(i64, f32)], t: Thresholds) -> Result<(Option<i64>, Option<i64>)> {
    if near.is_empty() {
        return Ok((None, None));
    }
    let mine = sameness::signature(delta);
    let mut stmt = tx.prepare_cached("SELECT delta FROM notes WHERE id = ?1 AND retired_at IS NULL")?;
    let mut conflict = None;
    for (id, cos) in near {
        let Some(theirs) = stmt.query_row([id], |r| r.get::<_, String>(0)).optional()? else { continue };
        if sameness::restates(&theirs, delta) {
            return Ok((Some(*id), None));
        }
        match sameness::relate_signatures(&sameness::signature(&theirs), &mine, *cos, t) {
            Relation::Same => return Ok((Some(*id), None)),
            Relation::Update if conflict.is_none() => conflict = Some(*id),
            _ => {}
        }
    }
    Ok((None, conflict))
}

/// The one INSERT of a note: `new` written from `project` at `at`, with its normalised-text
/// hash and its vector, if any.
fn insert(
    tx: &Connection,
    project: &str,
    new: &NewNote,
    hash: &str,
    at: i64,
    embedded: Option<&Embedded<'_>>,
) -> Result<i64> {
    let tags = serde_json::to_string(&new.tags).unwrap_or_else(|_| "[]".into());
    let mut stmt = tx.prepare_cached(
        "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags,
                            norm_hash, skill_hash, session_id, created_at, updated_at, vector, vector_model,
                            host, transcript, transcript_at, review, match_pieces)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
    )?;
    stmt.execute(params![
        new.skill,
        new.scope.as_str(),
        partition(new.scope, project),
        project,
        new.source.as_str(),
        new.kind.as_str(),
        new.intent,
        new.delta,
        tags,
        hash,
        new.skill_hash,
        new.session_id,
        at,
        embedded.map(|e| to_blob(e.vector)),
        embedded.map(|e| e.model),
        new.origin.host,
        new.origin.transcript,
        new.origin.transcript_at,
        new.pending.then_some("pending"),
        embedded.and_then(|e| e.matched),
    ])?;
    Ok(tx.last_insert_rowid())
}

/// A note to [`import`]: what [`write`] takes, with the time it was written.
pub struct Imported<'a> {
    pub new: NewNote,
    pub created_at: i64,
    pub embedded: Option<Embedded<'a>>,
}

/// Writes many notes in one transaction, without duplicate detection: bulk loads whose
/// notes are known to be distinct (the benchmarks' fixtures). Same rows as [`write`] would
/// store. Returns their ids, in order.
pub fn import(conn: &mut Connection, project: &str, notes: &[Imported<'_>]) -> Result<Vec<i64>> {
    let tx = write_tx(conn)?;
    let mut ids = Vec::with_capacity(notes.len());
    for n in notes {
        ids.push(insert(&tx, project, &n.new, &norm_hash(&n.new.delta), n.created_at, n.embedded.as_ref())?);
    }
    tx.commit()?;
    Ok(ids)
}

/// The current notes of the partition nearest to `e`, at least `min` alike, best first, at
/// most [`NEIGHBOURS`] (asked of SQLite: the caller's index does not know the partition).
/// A note as [`pair_written_elsewhere`] reads it: skill, scope, partition, lesson, vector,
/// its model, when it was written.
type PairRow = (String, String, String, String, Option<Vec<u8>>, Option<String>, i64);

/// Records the conflicting pairs that notes written elsewhere (a team pull) form with this
/// machine's notes: each of `ids` that is current and has a vector is judged against its near
/// neighbours in its partition, as a write is, and a [`Relation::Update`] makes a pair, the
/// older by `created_at` first (a pulled note may be the older). Nothing is merged: both notes
/// were written, each on its machine. Returns how many pairs were recorded.
pub fn pair_written_elsewhere(
    conn: &mut Connection,
    ids: &[i64],
    t: Thresholds,
    index: Option<&dyn VectorIndex>,
) -> Result<usize> {
    let tx = write_tx(conn)?;
    let mut pairs = 0;
    for id in ids {
        let row: Option<PairRow> = tx
            .query_row(
                "SELECT skill, scope, project_id, delta, vector, vector_model, created_at FROM notes
                 WHERE id = ?1 AND retired_at IS NULL",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
            )
            .optional()?;
        let Some((skill, scope, pkey, delta, Some(blob), Some(model), created)) = row else { continue };
        let Some(vector) = from_blob(&blob) else { continue };
        let scope = if scope == "project" { Scope::Project } else { Scope::Global };
        let e = Embedded { vector: &vector, model: &model, matched: None };
        let near: Vec<(i64, f32)> = near_notes(&tx, &skill, scope, &pkey, &e, t.search(), index)?
            .into_iter()
            .filter(|(n, _)| n != id)
            .collect();
        let (_, conflict) = judge(&tx, &delta, &near, t)?;
        let Some(other) = conflict else { continue };
        let theirs: i64 = tx.query_row("SELECT created_at FROM notes WHERE id = ?1", [other], |r| r.get(0))?;
        let (older, newer) = if (theirs, other) <= (created, *id) { (other, *id) } else { (*id, other) };
        pairs += tx.execute(
            "INSERT OR IGNORE INTO note_conflicts (older, newer, created_at) VALUES (?1, ?2, ?3)",
            params![older, newer, now_ms()],
        )?;
    }
    tx.commit()?;
    Ok(pairs)
}

fn near_notes(
    conn: &Connection,
    skill: &str,
    scope: Scope,
    pkey: &str,
    e: &Embedded<'_>,
    min: f32,
    index: Option<&dyn VectorIndex>,
) -> Result<Vec<(i64, f32)>> {
    if let Some(ix) = index.filter(|ix| ix.model_id() == e.model) {
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4
             AND retired_at IS NULL",
        )?;
        let ids: Vec<i64> =
            stmt.query_map(params![skill, scope.as_str(), pkey, e.model], |r| r.get(0))?.collect::<Result<_, _>>()?;
        ensure_vectors(conn, ix, &ids)?;
        return Ok(ix.neighbours(e.vector, &ids, min, NEIGHBOURS));
    }
    let mut stmt = conn.prepare_cached(
        "SELECT id, vector FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4
         AND retired_at IS NULL",
    )?;
    let mut near: Vec<(i64, f32)> = vec![];
    let rows = stmt.query_map(params![skill, scope.as_str(), pkey, e.model], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    for row in rows {
        let (id, blob) = row?;
        if let Some(v) = from_blob(&blob).filter(|v| v.len() == e.vector.len()) {
            let s = crate::embed::dot(e.vector, &v);
            if s >= min {
                near.push((id, s));
            }
        }
    }
    near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.truncate(NEIGHBOURS);
    Ok(near)
}
