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

/// Records what backs a note (JSON: a mined lesson's calls, a historian lesson's error line),
/// unless it has a record already: the first evidence of a lesson stays.
pub fn set_evidence(conn: &mut Connection, id: i64, evidence: &str) -> Result<()> {
    let tx = write_tx(conn)?;
    tx.execute("UPDATE notes SET evidence = ?2 WHERE id = ?1 AND evidence IS NULL", params![id, evidence])?;
    tx.commit()?;
    Ok(())
}

/// What backs a note (see [`set_evidence`]), by note id, for the notes of `ids` that have a
/// record.
pub fn evidence_records(conn: &Connection, ids: &[i64]) -> Result<std::collections::HashMap<i64, String>> {
    let mut out = std::collections::HashMap::new();
    if ids.len() > 256 {
        // Few notes have a record: one scan of those.
        let wanted: std::collections::HashSet<i64> = ids.iter().copied().collect();
        let mut stmt = conn.prepare_cached("SELECT id, evidence FROM notes WHERE evidence IS NOT NULL")?;
        for r in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
            let (id, e) = r?;
            if wanted.contains(&id) {
                out.insert(id, e);
            }
        }
        return Ok(out);
    }
    let mut stmt = conn.prepare_cached("SELECT evidence FROM notes WHERE id = ?1 AND evidence IS NOT NULL")?;
    for id in ids {
        if let Some(e) = stmt.query_row([id], |r| r.get::<_, String>(0)).optional()? {
            out.insert(*id, e);
        }
    }
    Ok(out)
}

/// The note `id` as seen from `project`: `Err(NotFound)` when there is none, or when it
/// belongs to another project.
pub fn visible_note(tx: &Connection, id: i64, project: &str) -> Result<Note> {
    let n = tx
        .query_row(
            &format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?1 AND {}", visible_with_history(2)),
            params![id, project],
            note_from_row,
        )
        .optional()?;
    match n {
        Some(n) => Ok(n),
        None if get(tx, id)?.is_some() => Err(Error::NotFound(format!(
            "note {id} belongs to another project and is not visible from this one; list this project's notes with skillmem notes"
        ))),
        None => Err(not_found(id)),
    }
}

/// Retires a note: out of recall and the default listings, kept with `reason` until it is
/// restored or purged.
pub fn retire(
    conn: &mut Connection,
    id: i64,
    project: &str,
    reason: Option<&str>,
    index: Option<&dyn VectorIndex>,
) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = visible_note(&tx, id, project)?;
    if let Some(by) = n.superseded_by {
        return Err(Error::invalid(format!(
            "note {id} was already replaced by note {by} and is out of recall; to remove it for good use skillmem/purge"
        )));
    }
    if n.retired_at.is_some() {
        return Err(Error::invalid(format!("note {id} is already retired; skillmem/restore brings it back")));
    }
    tx.execute(
        "UPDATE notes SET retired_at = ?2, reason = ?3, updated_at = ?2 WHERE id = ?1",
        params![id, now_ms(), reason.map(str::trim).filter(|r| !r.is_empty())],
    )?;
    tx.commit()?;
    if let Some(ix) = index {
        ix.remove(id);
    }
    Ok(())
}

/// Brings a retired or replaced note back into recall. Beside a current note that replaced
/// it, it forms a conflicting pair with that note (which stays the newer).
pub fn restore(conn: &mut Connection, id: i64, project: &str, index: Option<&dyn VectorIndex>) -> Result<()> {
    let tx = write_tx(conn)?;
    let n = visible_note(&tx, id, project)?;
    if n.is_current() {
        return Err(Error::invalid(format!("note {id} is current (not retired or replaced): nothing to restore")));
    }
    let twin: Option<i64> = tx
        .query_row(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = (SELECT project_id FROM notes WHERE id = ?3)
             AND norm_hash = (SELECT norm_hash FROM notes WHERE id = ?3) AND retired_at IS NULL",
            params![n.skill, n.scope.as_str(), id],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(twin) = twin {
        return Err(Error::invalid(format!(
            "note {twin} is current and says exactly what note {id} says; nothing to restore"
        )));
    }
    tx.execute(
        "UPDATE notes SET retired_at = NULL, superseded_by = NULL, reason = NULL, updated_at = ?2 WHERE id = ?1",
        params![id, now_ms()],
    )?;
    if let Some(by) = n.superseded_by {
        tx.execute(
            "INSERT OR IGNORE INTO note_conflicts (older, newer, created_at)
             SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?2 AND retired_at IS NULL)",
            params![id, by, now_ms()],
        )?;
    }
    tx.commit()?;
    if let Some(ix) = index {
        let blob: Option<Vec<u8>> = conn
            .query_row(
                "SELECT vector FROM notes WHERE id = ?1 AND vector_model = ?2",
                params![id, ix.model_id()],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        if let Some(v) = blob.and_then(|b| from_blob(&b)) {
            ix.insert(id, &v);
        }
    }
    Ok(())
}

/// Deletes a note and the older versions it replaced, for good. Returns their ids.
pub fn purge(conn: &mut Connection, id: i64, project: &str, index: Option<&dyn VectorIndex>) -> Result<Vec<i64>> {
    let tx = write_tx(conn)?;
    visible_note(&tx, id, project)?;
    let ids: Vec<i64> = {
        let mut stmt = tx.prepare(
            "WITH RECURSIVE chain(id) AS (SELECT ?1 UNION SELECT n.id FROM notes n JOIN chain c ON n.superseded_by = c.id)
             SELECT id FROM chain ORDER BY id",
        )?;
        let rows = stmt.query_map([id], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    {
        let mut del = tx.prepare_cached("DELETE FROM notes WHERE id = ?1")?;
        for i in &ids {
            del.execute([i])?;
        }
    }
    tx.commit()?;
    if let Some(ix) = index {
        for i in &ids {
            ix.remove(*i);
        }
    }
    Ok(ids)
}

/// A note's versions: the older ones it replaced (oldest first), itself, and the newer ones
/// that replaced it, in order. `Err(NotFound)` when the note is not visible from `project`.
pub fn versions(conn: &Connection, id: i64, project: &str) -> Result<Vec<Note>> {
    visible_note(conn, id, project)?;
    let mut older: Vec<Note> = vec![];
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {NOTE_COLUMNS} FROM notes WHERE superseded_by = ?1 ORDER BY id"))?;
    let mut frontier = vec![id];
    while let Some(next) = frontier.pop() {
        let found: Vec<Note> = stmt.query_map([next], note_from_row)?.collect::<Result<_, _>>()?;
        for n in found {
            if n.id != id && !older.iter().any(|o| o.id == n.id) {
                frontier.push(n.id);
                older.push(n);
            }
        }
    }
    older.sort_by_key(|n| (n.created_at, n.id));
    let Some(me) = get(conn, id)? else { return Err(not_found(id)) };
    let mut out = older;
    let mut next = me.superseded_by;
    out.push(me);
    while let Some(n) = next.and_then(|i| get(conn, i).ok().flatten()) {
        if out.iter().any(|o| o.id == n.id) {
            break;
        }
        next = n.superseded_by;
        out.push(n);
    }
    Ok(out)
}

/// Every conflicting pair `(older, newer)` of the store, current or not, by `older` (the
/// catalog holds them: a block asks for the pairs among its head on every load).
pub fn all_conflicts(conn: &Connection) -> Result<Vec<(i64, i64)>> {
    let mut stmt = conn.prepare_cached("SELECT older, newer FROM note_conflicts ORDER BY older, newer")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The conflicting pairs `(older, newer)` note `id` is in, either side.
pub fn conflicts_of(conn: &Connection, id: i64) -> Result<Vec<(i64, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT older, newer FROM note_conflicts WHERE older = ?1
         UNION SELECT older, newer FROM note_conflicts WHERE newer = ?1",
    )?;
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The unresolved conflicting pairs visible from `project` (both notes current): `(skill,
/// older, newer)`, by skill.
pub fn unresolved_conflicts(conn: &Connection, project: &str) -> Result<Vec<(String, i64, i64)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT skill, older, newer FROM (
             SELECT o.skill, o.scope, o.project_id, o.retired_at, o.review, c.older, c.newer FROM note_conflicts c
             JOIN notes o ON o.id = c.older
             JOIN notes n ON n.id = c.newer AND n.retired_at IS NULL AND n.review IS NULL)
         WHERE {} ORDER BY skill, older, newer",
        visible_from(1)
    ))?;
    let rows = stmt.query_map([project], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Keeps note `id`'s text as a version of it, when it is current and about to become `new_delta`:
/// a history row (reason `edited`) replaced by the note itself, with its provenance. Every
/// edit keeps one, local (`edit`) or pulled from the team (`team_apply`).
pub(super) fn keep_old_text(tx: &Connection, id: i64, new_delta: &str, now: i64) -> Result<()> {
    tx.execute(
        "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits, recalls,
                            pinned, norm_hash, skill_hash, session_id, created_at, updated_at, vector, vector_model,
                            retired_at, superseded_by, reason, host, transcript, transcript_at, origin_source)
         SELECT skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits, recalls, 0, norm_hash,
                skill_hash, session_id, created_at, ?2, vector, vector_model, ?2, id, 'edited', host, transcript,
                transcript_at, origin_source
         FROM notes WHERE id = ?1 AND retired_at IS NULL AND delta IS NOT ?3",
        params![id, now, new_delta],
    )?;
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
    let now = now_ms();
    match get(&tx, id)? {
        None => return Err(not_found(id)),
        Some(n) if !n.is_current() => {
            return Err(Error::invalid(format!(
                "note {id} is retired or replaced; restore it first (skillmem/restore) to edit it"
            )))
        }
        Some(_) => {}
    }
    keep_old_text(&tx, id, delta, now)?;
    let n = tx
        .execute(
            "UPDATE notes SET delta = ?2, norm_hash = ?3, updated_at = ?4, vector = ?5, vector_model = ?6,
                              match_pieces = ?7 WHERE id = ?1",
            params![
                id,
                delta,
                norm_hash(delta),
                now,
                embedded.as_ref().map(|e| to_blob(e.vector)),
                embedded.as_ref().map(|e| e.model),
                embedded.as_ref().and_then(|e| e.matched),
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

/// Loads current notes by id, in the order given (unknown ids, notes replaced or retired
/// meanwhile, and notes waiting for review are skipped). One statement for all of
/// them (the ids as a JSON array): a block's head of 100-odd notes costs one query, not one
/// each.
pub fn load(conn: &Connection, ids: &[i64]) -> Result<Vec<Note>> {
    // With the pieces token matching reads (see [`Note::match_pieces`]).
    let with_pieces = |r: &rusqlite::Row| -> rusqlite::Result<Note> {
        let mut n = note_from_row(r)?;
        n.match_pieces = r.get::<_, Option<Vec<u8>>>(NOTE_COLUMN_COUNT)?.map(Vec::into_boxed_slice);
        Ok(n)
    };
    if ids.len() <= 1 {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS}, match_pieces FROM notes WHERE id = ?1 AND retired_at IS NULL AND review IS NULL"
        ))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(n) = stmt.query_row([id], with_pieces).optional()? {
                out.push(n);
            }
        }
        return Ok(out);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {NOTE_COLUMNS}, match_pieces FROM notes WHERE id IN (SELECT value FROM json_each(?1)) AND retired_at IS NULL AND review IS NULL"
    ))?;
    let list = serde_json::to_string(ids).map_err(|e| Error::invalid(e.to_string()))?;
    let mut by_id: std::collections::HashMap<i64, Note> =
        stmt.query_map([list], with_pieces)?.map(|r| r.map(|n| (n.id, n))).collect::<Result<_, _>>()?;
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

/// The history's health (doctor): notes whose successor is missing, and how many notes are
/// history (replaced or retired).
pub fn history_health(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn.query_row(
        "SELECT (SELECT count(*) FROM notes h WHERE h.superseded_by IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM notes n WHERE n.id = h.superseded_by)),
                (SELECT count(*) FROM notes WHERE retired_at IS NOT NULL)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?)
}

/// Gives the notes `ids` written under a session id of the MCP door's own making (`prefix`)
/// the host's session `session`: the hook door that read the host's transcript knows which
/// session the MCP server served. Returns how many changed.
pub fn claim_for_session(conn: &mut Connection, session: &str, ids: &[i64], prefix: &str) -> Result<usize> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut n = 0;
    {
        let mut st = tx.prepare_cached(
            "UPDATE notes SET session_id = ?1 WHERE id = ?2 AND session_id IS NOT NULL AND substr(session_id, 1, length(?3)) = ?3",
        )?;
        for id in ids {
            n += st.execute(rusqlite::params![session, id, prefix])?;
        }
    }
    tx.commit()?;
    Ok(n)
}
