//! One note's life after it is written: pin, edit, forget, the facts recall ranks by, loads.

use super::*;

/// Sets or clears the pin of a note.
pub fn set_pinned(conn: &mut Connection, id: i64, pinned: bool) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = tx
        .execute("UPDATE notes SET pinned = ?2, updated_at = ?3 WHERE id = ?1", params![id, pinned as i64, now_ms()])?;
    tx.commit()?;
    if n == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

/// Deletes a note.
pub fn forget(conn: &mut Connection, id: i64, index: Option<&dyn VectorIndex>) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = tx.execute("DELETE FROM notes WHERE id = ?1", [id])?;
    tx.commit()?;
    if n == 0 {
        return Err(not_found(id));
    }
    if let Some(ix) = index {
        ix.remove(id);
    }
    Ok(())
}

/// Replaces a note's delta (and its vector).
pub fn edit(
    conn: &mut Connection,
    id: i64,
    delta: &str,
    embedded: Option<Embedded<'_>>,
    index: Option<&dyn VectorIndex>,
) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = tx
        .execute(
            "UPDATE notes SET delta = ?2, norm_hash = ?3, updated_at = ?4, vector = ?5, vector_model = ?6 WHERE id = ?1",
            params![
                id,
                delta,
                norm_hash(delta),
                now_ms(),
                embedded.as_ref().map(|e| to_blob(e.vector)),
                embedded.as_ref().map(|e| e.model),
            ],
        )
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                Error::invalid(format!("note {id}: another note of the same skill and scope already says exactly that"))
            }
            e => e.into(),
        })?;
    tx.commit()?;
    if n == 0 {
        return Err(not_found(id));
    }
    if let Some(ix) = index {
        match embedded {
            Some(e) if e.model == ix.model_id() => ix.insert(id, e.vector),
            _ => ix.remove(id),
        }
    }
    Ok(())
}

/// Loads notes by id, in the order given (unknown ids are skipped). One statement for all of
/// them (the ids as a JSON array): a block's head of 100-odd notes costs one query, not one
/// each.
pub fn load(conn: &Connection, ids: &[i64]) -> Result<Vec<Note>> {
    if ids.len() <= 1 {
        let mut stmt = conn.prepare_cached(&format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?1"))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(n) = stmt.query_row([id], note_from_row).optional()? {
                out.push(n);
            }
        }
        return Ok(out);
    }
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id IN (SELECT value FROM json_each(?1))"))?;
    let list = serde_json::to_string(ids).map_err(|e| Error::invalid(e.to_string()))?;
    let mut by_id: std::collections::HashMap<i64, Note> =
        stmt.query_map([list], note_from_row)?.map(|r| r.map(|n| (n.id, n))).collect::<Result<_, _>>()?;
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Counts a surfacing for each note (never changes ranking: recall ranks by hits, not recalls).
pub fn mark_recalled(conn: &mut Connection, ids: &[i64]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let tx = write_tx(conn)?;
    {
        let mut stmt = tx.prepare_cached("UPDATE notes SET recalls = recalls + 1, last_used_at = ?2 WHERE id = ?1")?;
        for id in ids {
            stmt.execute(params![id, now])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Sets the facts recall ranks a note by: its hits, when it was written, its pin. For
/// fixtures (the recall eval's ages and hits, tests); the protocol changes them only through
/// duplicate writes, recalls and `pin`.
pub fn set_facts(conn: &mut Connection, id: i64, hits: i64, created_at: i64, pinned: bool) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = tx.execute(
        "UPDATE notes SET hits = ?2, created_at = ?3, pinned = ?4 WHERE id = ?1",
        params![id, hits, created_at, pinned as i64],
    )?;
    tx.commit()?;
    if n == 0 {
        return Err(not_found(id));
    }
    Ok(())
}
