//! Writing a note: exact and near duplicates, the one INSERT, bulk imports.

use super::*;

/// Writes a note, or bumps the hits of an exact (same normalised text) or near (cosine ≥
/// `dedup_threshold` among vectors of the same model) duplicate in the same partition and
/// returns its id. A duplicate write re-validates the note against `new.skill_hash`.
pub fn write(
    conn: &mut Connection,
    project: &str,
    new: &NewNote,
    embedded: Option<Embedded<'_>>,
    dedup_threshold: f32,
    index: Option<&dyn VectorIndex>,
) -> Result<(i64, WriteStatus)> {
    write_among(conn, project, new, embedded, dedup_threshold, index, None)
}

/// [`write`], with the ids of the notes in the note's skill, scope and partition given by the
/// caller (whose index is known to hold their vectors), for near-duplicate detection.
pub fn write_among(
    conn: &mut Connection,
    project: &str,
    new: &NewNote,
    embedded: Option<Embedded<'_>>,
    dedup_threshold: f32,
    index: Option<&dyn VectorIndex>,
    partition_ids: Option<&[i64]>,
) -> Result<(i64, WriteStatus)> {
    let hash = norm_hash(&new.delta);
    let pkey = partition(new.scope, project);
    let now = now_ms();
    let tx = write_tx(conn)?;
    let exact: Option<i64> = tx
        .query_row(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4",
            params![new.skill, new.scope.as_str(), pkey, hash],
            |r| r.get(0),
        )
        .optional()?;
    let t0 = std::time::Instant::now();
    let near = match (exact, &embedded) {
        (None, Some(e)) if e.vector.iter().any(|x| *x != 0.0) => {
            match (index.filter(|ix| ix.model_id() == e.model), partition_ids) {
                (Some(ix), Some(ids)) => ix.nearest(e.vector, ids, dedup_threshold).map(|(id, _)| id),
                _ => near_duplicate(&tx, &new.skill, new.scope, pkey, e, dedup_threshold, index)?,
            }
        }
        _ => None,
    };
    if let Some(id) = exact.or(near) {
        tx.execute(
            "UPDATE notes SET hits = hits + 1, last_used_at = ?2, skill_hash = COALESCE(?3, skill_hash) WHERE id = ?1",
            params![id, now, new.skill_hash],
        )?;
        tx.commit()?;
        return Ok((id, WriteStatus::Duplicate));
    }
    let t_near = t0.elapsed();
    let id = insert(&tx, project, new, &hash, now, embedded.as_ref())?;
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
    Ok((id, WriteStatus::Inserted))
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
                            norm_hash, skill_hash, session_id, created_at, updated_at, vector, vector_model)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14, ?15)",
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

fn near_duplicate(
    conn: &Connection,
    skill: &str,
    scope: Scope,
    pkey: &str,
    e: &Embedded<'_>,
    threshold: f32,
    index: Option<&dyn VectorIndex>,
) -> Result<Option<i64>> {
    if let Some(ix) = index.filter(|ix| ix.model_id() == e.model) {
        let mut stmt = conn.prepare_cached(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4",
        )?;
        let ids: Vec<i64> =
            stmt.query_map(params![skill, scope.as_str(), pkey, e.model], |r| r.get(0))?.collect::<Result<_, _>>()?;
        ensure_vectors(conn, ix, &ids)?;
        return Ok(ix.nearest(e.vector, &ids, threshold).map(|(id, _)| id));
    }
    let mut stmt = conn.prepare_cached(
        "SELECT id, vector FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4",
    )?;
    let mut best: Option<(i64, f32)> = None;
    let rows = stmt.query_map(params![skill, scope.as_str(), pkey, e.model], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    for row in rows {
        let (id, blob) = row?;
        if let Some(v) = from_blob(&blob).filter(|v| v.len() == e.vector.len()) {
            let s = crate::embed::dot(e.vector, &v);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((id, s));
            }
        }
    }
    Ok(best.filter(|(_, s)| *s >= threshold).map(|(id, _)| id))
}
