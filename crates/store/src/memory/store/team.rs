//! The local side of team memory (src/team/, docs/team.md, migration 0006_team): the outbox the
//! triggers fill, the uid of each shared note, the pull cursor, and applying what a pull
//! brought. Pulled changes are applied with `team_applying` holding a row, so that the triggers
//! do not send them back.

use super::*;

/// The local sync state (`team_state`).
#[derive(Debug, Clone, PartialEq)]
pub struct TeamLocal {
    pub machine: String,
    pub target: String,
    pub cursor: i64,
    pub last_push_at: Option<i64>,
    pub last_pull_at: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_at: Option<i64>,
}

/// A note as the team sees it (no vector, no local id).
#[derive(Debug, Clone, PartialEq)]
pub struct TeamNote {
    pub skill: String,
    pub scope: String,
    pub project_id: String,
    pub origin_project: String,
    pub source: String,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    /// JSON array of strings.
    pub tags: String,
    pub pinned: bool,
    pub hits: i64,
    pub norm_hash: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the note left recall (replaced or retired); `None` while it is current.
    pub retired_at: Option<i64>,
    /// The team id of the note that replaced it, when that note is shared.
    pub superseded_by: Option<String>,
    /// Why it was retired or replaced.
    pub reason: Option<String>,
    /// What backs it (JSON, as the note's `evidence` column); `None` when nothing does.
    pub evidence: Option<String>,
}

/// One pending local change, with the note's current state (`None` once it is deleted).
#[derive(Debug, Clone)]
pub struct TeamOutboxRow {
    pub id: i64,
    pub kind: String,
    pub note_id: i64,
    /// The uid the event names (forgets) or the note's uid, once it has one.
    pub uid: Option<String>,
    /// Why the note is held back, when it is.
    pub held: Option<String>,
    /// Hits the event adds ('note': the hits it was written with; 'hit': the increment).
    pub hits: i64,
    pub note: Option<TeamNote>,
    /// The local id of the note that replaced it (its uid may be decided in the same push).
    pub successor: Option<i64>,
}

/// A note's row as a pull brought it, with the vector this machine made for it (if any).
#[derive(Debug, Clone)]
pub struct TeamIncoming {
    pub uid: String,
    pub deleted: bool,
    pub note: TeamNote,
    pub vector: Option<Vec<f32>>,
}

/// What applying a pull did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamApplied {
    pub inserted: Vec<i64>,
    pub updated: Vec<i64>,
    pub removed: Vec<i64>,
    /// Notes whose lesson changed (their vector was replaced or cleared).
    pub reembedded: Vec<i64>,
    /// Notes the team replaced or retired: out of recall here, kept as history.
    pub retired: Vec<i64>,
    /// Notes the team brought back into recall.
    pub restored: Vec<i64>,
}

// The source pushed is who first wrote the note (a note pulled or imported here says so in
// `origin_source`), so that an edit made here does not tell the team it came from the team.
const TEAM_NOTE_COLUMNS: &str = "n.skill, n.scope, n.project_id, n.origin_project,
     CASE WHEN n.source IN ('import', 'team') THEN COALESCE(n.origin_source, n.source) ELSE n.source END, n.kind, n.intent, n.delta, n.tags, n.pinned, n.hits, n.norm_hash, n.created_at, n.updated_at,
     n.retired_at, (SELECT s.uid FROM team_notes s WHERE s.note_id = n.superseded_by AND s.held IS NULL), n.reason, n.superseded_by,
     n.evidence";

fn team_note_at(r: &Row, i: usize) -> rusqlite::Result<Option<TeamNote>> {
    let Some(skill) = r.get::<_, Option<String>>(i)? else { return Ok(None) };
    Ok(Some(TeamNote {
        skill,
        scope: r.get(i + 1)?,
        project_id: r.get(i + 2)?,
        origin_project: r.get(i + 3)?,
        source: r.get(i + 4)?,
        kind: r.get(i + 5)?,
        intent: r.get(i + 6)?,
        delta: r.get(i + 7)?,
        tags: r.get(i + 8)?,
        pinned: r.get::<_, i64>(i + 9)? != 0,
        hits: r.get(i + 10)?,
        norm_hash: r.get(i + 11)?,
        created_at: r.get(i + 12)?,
        updated_at: r.get(i + 13)?,
        retired_at: r.get(i + 14)?,
        superseded_by: r.get(i + 15)?,
        reason: r.get(i + 16)?,
        // (i + 17 is the local successor, read by the outbox)
        evidence: r.get(i + 18)?,
    }))
}

/// The sync state, if team sync ever ran here.
pub fn team_local(conn: &Connection) -> Result<Option<TeamLocal>> {
    Ok(conn
        .query_row(
            "SELECT machine, target, cursor, last_push_at, last_pull_at, last_error, last_error_at FROM team_state WHERE id = 1",
            [],
            |r| {
                Ok(TeamLocal {
                    machine: r.get(0)?,
                    target: r.get(1)?,
                    cursor: r.get(2)?,
                    last_push_at: r.get(3)?,
                    last_pull_at: r.get(4)?,
                    last_error: r.get(5)?,
                    last_error_at: r.get(6)?,
                })
            },
        )
        .optional()?)
}

/// Makes sure the sync state exists for `target` (the server and team). The first time, and
/// whenever the target changes, the cursor starts over and every note is queued for a push
/// (the server keeps one row per uid, so pushing again is harmless). `machine` is used when
/// no id was made yet. Returns the state.
pub fn team_begin(conn: &mut Connection, machine: &str, target: &str) -> Result<TeamLocal> {
    let tx = write_tx(conn)?;
    let current: Option<(String, String)> = tx
        .query_row("SELECT machine, target FROM team_state WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let fresh = match &current {
        Some((_, t)) => t != target,
        None => true,
    };
    if fresh {
        let machine = current.map(|c| c.0).unwrap_or_else(|| machine.to_string());
        tx.execute(
            "INSERT OR REPLACE INTO team_state (id, machine, target, cursor) VALUES (1, ?1, ?2, 0)",
            params![machine, target],
        )?;
        tx.execute("DELETE FROM team_notes", [])?;
        tx.execute("DELETE FROM team_outbox", [])?;
        super::calls::counts_forget(&tx)?;
        super::calls::support_forget(&tx)?;
        // Current notes only: history rows (an edit's old text) share the uid of the note they
        // are a version of, and travel with the events that made them.
        tx.execute(
            "INSERT INTO team_outbox (kind, note_id, hits) SELECT 'note', id, hits FROM notes WHERE retired_at IS NULL ORDER BY id",
            [],
        )?;
    }
    tx.commit()?;
    team_local(conn)?.ok_or_else(|| Error::storage("team sync state missing after it was written"))
}

/// The next `limit` pending local changes, oldest first.
pub fn team_outbox(conn: &Connection, limit: usize) -> Result<Vec<TeamOutboxRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT o.id, o.kind, o.note_id, COALESCE(o.uid, t.uid), t.held, o.hits, {TEAM_NOTE_COLUMNS}
         FROM team_outbox o LEFT JOIN notes n ON n.id = o.note_id LEFT JOIN team_notes t ON t.note_id = o.note_id
         ORDER BY o.id LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit as i64], |r| {
        Ok(TeamOutboxRow {
            id: r.get(0)?,
            kind: r.get(1)?,
            note_id: r.get(2)?,
            uid: r.get(3)?,
            held: r.get(4)?,
            hits: r.get(5)?,
            note: team_note_at(r, 6)?,
            successor: r.get(6 + 17)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many local changes wait for a push.
pub fn team_pending(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM team_outbox", [], |r| r.get(0))?)
}

/// A pushed batch was applied (or held back) up to outbox id `upto`: records the uid of each
/// note that got one (`held`: why it stays here) and drops the batch from the outbox. A note
/// the server says was forgotten (`forgotten`) is deleted here too.
pub fn team_ack(
    conn: &mut Connection,
    upto: i64,
    uids: &[(i64, String, Option<String>)],
    forgotten: &[i64],
) -> Result<Vec<i64>> {
    let tx = write_tx(conn)?;
    {
        let mut map = tx.prepare_cached(
            "INSERT INTO team_notes (note_id, uid, held) VALUES (?1, ?2, ?3)
             ON CONFLICT (note_id) DO UPDATE SET uid = excluded.uid, held = excluded.held",
        )?;
        for (note_id, uid, held) in uids {
            // Another local note may hold that uid already: a retired one (the lesson was
            // written again after it was retired here) hands it to the current note; otherwise
            // (an edit made two notes say the same) the first keeps it.
            match map.execute(params![note_id, uid, held]) {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                    let moved = tx.execute(
                        "UPDATE OR IGNORE team_notes SET note_id = ?1, held = ?3, successor = NULL
                         WHERE uid = ?2 AND note_id <> ?1
                           AND EXISTS (SELECT 1 FROM notes n WHERE n.id = team_notes.note_id AND n.retired_at IS NOT NULL)
                           AND EXISTS (SELECT 1 FROM notes n WHERE n.id = ?1 AND n.retired_at IS NULL)",
                        params![note_id, uid, held],
                    )?;
                    if moved > 0 {
                        tracing::debug!(note_id, uid, "team id moved from a retired note to the current one");
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    tx.execute("DELETE FROM team_outbox WHERE id <= ?1", [upto])?;
    tx.execute("UPDATE team_state SET last_push_at = ?1 WHERE id = 1", [now_ms()])?;
    let mut removed = vec![];
    if !forgotten.is_empty() {
        tx.execute("INSERT INTO team_applying (x) VALUES (1)", [])?;
        for id in forgotten {
            if tx.execute("DELETE FROM notes WHERE id = ?1", [id])? > 0 {
                removed.push(*id);
            }
            tx.execute("DELETE FROM team_notes WHERE note_id = ?1", [id])?;
            tx.execute("DELETE FROM team_outbox WHERE note_id = ?1", [id])?;
        }
        tx.execute("DELETE FROM team_applying", [])?;
    }
    tx.commit()?;
    Ok(removed)
}

/// Which of `rows` need a vector made here: new notes, and notes whose lesson changed.
pub fn team_needs_vector(conn: &Connection, rows: &[(String, String)]) -> Result<Vec<bool>> {
    let mut stmt =
        conn.prepare_cached("SELECT n.delta FROM team_notes t JOIN notes n ON n.id = t.note_id WHERE t.uid = ?1")?;
    rows.iter()
        .map(|(uid, delta)| {
            let local: Option<String> = stmt.query_row([uid], |r| r.get(0)).optional()?;
            Ok(local.is_none_or(|d| d != *delta))
        })
        .collect()
}

/// Applies pulled rows in one transaction and moves the cursor to `cursor`. A row whose uid
/// is known here updates that note (a pin, an edit, a scope move, a retirement or a restore,
/// the team's hit count), except for what this machine changed and has not pushed yet (that
/// change comes later in the server's sequence, so it wins). An edit keeps the old text here
/// as a version, as a local edit does; a tombstone (a purge) deletes the note and the older
/// versions it replaced; a new uid that says exactly what a current local note says is merged
/// into it; any other is inserted (a replaced or retired one as history). `model` stamps the
/// vectors. Project notes are applied only with `with_project` (or when already here).
pub fn team_apply(
    conn: &mut Connection,
    rows: &[TeamIncoming],
    cursor: i64,
    model: Option<&str>,
    with_project: bool,
) -> Result<TeamApplied> {
    let mut out = TeamApplied::default();
    let now = now_ms();
    let tx = write_tx(conn)?;
    tx.execute("INSERT INTO team_applying (x) VALUES (1)", [])?;
    for row in rows {
        let n = &row.note;
        let mut local: Option<i64> =
            tx.query_row("SELECT note_id FROM team_notes WHERE uid = ?1", [&row.uid], |r| r.get(0)).optional()?;
        if row.deleted {
            if let Some(id) = local {
                out.removed.extend(delete_with_versions(&tx, id)?);
            }
            continue;
        }
        // The normalised text drops punctuation ("offset -1", "offset 1"): a current note here
        // with the same normalised text is the same lesson only when it names the same
        // specifics; otherwise the pulled one is stored beside it under a hash of its exact
        // text, as a local write of it would be.
        let mut norm_hash = n.norm_hash.clone();
        if local.is_none() && n.retired_at.is_none() {
            let twin: Option<(i64, Option<String>, String)> = tx
                .query_row(
                    "SELECT n.id, t.uid, n.delta FROM notes n LEFT JOIN team_notes t ON t.note_id = n.id
                     WHERE n.skill = ?1 AND n.scope = ?2 AND n.project_id = ?3 AND n.norm_hash = ?4 AND n.retired_at IS NULL",
                    params![n.skill, n.scope, n.project_id, n.norm_hash],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let exact = crate::memory::sameness::Thresholds { merge: 0.0, subject: 0.0 };
            let same = match twin {
                Some((id, uid, theirs))
                    if crate::memory::sameness::relate(&theirs, &n.delta, 1.0, exact)
                        == crate::memory::sameness::Relation::Same =>
                {
                    Some((id, uid))
                }
                Some(_) => {
                    norm_hash = super::write::exact_text_hash(&n.delta);
                    None
                }
                None => None,
            };
            match same {
                // Mapped to another uid already: the team has two rows that say the same
                // thing; this machine keeps one note.
                Some((_, Some(_))) => continue,
                Some((id, None)) => {
                    tx.execute("INSERT INTO team_notes (note_id, uid) VALUES (?1, ?2)", params![id, row.uid])?;
                    local = Some(id);
                }
                None => {}
            }
            // A mined lesson here with the same key is the same lesson in other words (task
            // paths and ids differ from machine to machine): one note, as for the same text.
            if let (None, Some(key)) = (local, mined_key(n.evidence.as_deref())) {
                match super::calls::lesson_here(&tx, &n.skill, &n.scope, &n.project_id, &key)? {
                    Some((_, Some(_))) => continue,
                    Some((id, None)) => {
                        tx.execute("INSERT INTO team_notes (note_id, uid) VALUES (?1, ?2)", params![id, row.uid])?;
                        local = Some(id);
                    }
                    None => {}
                }
            }
        }
        let Some(id) = local else {
            if n.scope == "project" && !with_project {
                continue;
            }
            let successor = team_note_id(&tx, n.superseded_by.as_deref().unwrap_or(""))?;
            tx.execute(
                "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits,
                                    pinned, norm_hash, created_at, updated_at, vector, vector_model,
                                    retired_at, superseded_by, reason, evidence)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                params![
                    n.skill,
                    n.scope,
                    n.project_id,
                    n.origin_project,
                    n.source,
                    n.kind,
                    n.intent,
                    n.delta,
                    n.tags,
                    n.hits,
                    n.pinned as i64,
                    norm_hash,
                    n.created_at,
                    now,
                    row.vector.as_deref().map(to_blob),
                    row.vector.as_ref().and(model),
                    n.retired_at,
                    successor,
                    n.reason,
                    n.evidence,
                ],
            )?;
            let id = tx.last_insert_rowid();
            let waiting = if successor.is_none() { n.superseded_by.as_deref() } else { None };
            tx.execute(
                "INSERT INTO team_notes (note_id, uid, successor) VALUES (?1, ?2, ?3)",
                params![id, row.uid, waiting],
            )?;
            out.inserted.push(id);
            if row.vector.is_some() && n.retired_at.is_none() {
                out.reembedded.push(id);
            }
            continue;
        };
        // A lesson a person rejected here in review stays rejected, whatever the team does
        // with it (but purge it): nothing of the team's row is taken. (A held lesson the team
        // retired is not: the team's restore brings it back, held, into the queue.)
        let rejected_here: bool = tx.query_row(
            "SELECT review IS NOT NULL AND retired_at IS NOT NULL AND (reason = ?2 OR reason LIKE ?2 || ': %')
             FROM notes WHERE id = ?1",
            params![id, super::review::REJECTED],
            |r| r.get(0),
        )?;
        if rejected_here {
            continue;
        }
        // What this machine changed and has not pushed yet.
        let (pending_hits, pin, edit, scope, life): (i64, i64, i64, i64, i64) = tx.query_row(
            "SELECT COALESCE(sum(CASE WHEN kind IN ('note', 'hit') THEN hits END), 0),
                    count(CASE WHEN kind = 'pin' THEN 1 END), count(CASE WHEN kind = 'edit' THEN 1 END),
                    count(CASE WHEN kind = 'scope' THEN 1 END), count(CASE WHEN kind IN ('retire', 'restore') THEN 1 END)
             FROM team_outbox WHERE note_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?;
        tx.execute("UPDATE notes SET hits = ?2 WHERE id = ?1", params![id, n.hits + pending_hits])?;
        // The first evidence a note gets stays, here as on the server.
        tx.execute(
            "UPDATE notes SET evidence = ?2 WHERE id = ?1 AND evidence IS NULL AND ?2 IS NOT NULL",
            params![id, n.evidence],
        )?;
        if pin == 0 {
            tx.execute(
                "UPDATE notes SET pinned = ?2 WHERE id = ?1 AND pinned IS NOT ?2",
                params![id, n.pinned as i64],
            )?;
        }
        if edit == 0 && edited_elsewhere(&tx, id, n)? {
            // The old text stays here as a version of the note, as a local edit keeps it.
            super::notes::keep_old_text(&tx, id, &n.delta, now)?;
            tx.execute(
                "UPDATE notes SET delta = ?2, intent = ?3, norm_hash = ?4, tags = ?5, updated_at = ?6, vector = ?7,
                        vector_model = ?8 WHERE id = ?1",
                params![
                    id,
                    n.delta,
                    n.intent,
                    n.norm_hash,
                    n.tags,
                    now,
                    row.vector.as_deref().map(to_blob),
                    row.vector.as_ref().and(model)
                ],
            )?;
            out.reembedded.push(id);
        }
        if scope == 0 {
            match tx.execute(
                "UPDATE notes SET scope = ?2, project_id = ?3 WHERE id = ?1 AND (scope IS NOT ?2 OR project_id IS NOT ?3)",
                params![id, n.scope, n.project_id],
            ) {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::ConstraintViolation => {}
                Err(e) => return Err(e.into()),
            }
        }
        if life == 0 {
            apply_life(&tx, id, n, &mut out)?;
        }
        out.updated.push(id);
    }
    // Retirements that named a successor before it had reached this machine.
    tx.execute(
        "UPDATE notes SET superseded_by = (SELECT s.note_id FROM team_notes t JOIN team_notes s ON s.uid = t.successor
                                           WHERE t.note_id = notes.id)
         WHERE id IN (SELECT t.note_id FROM team_notes t JOIN team_notes s ON s.uid = t.successor)
           AND retired_at IS NOT NULL",
        [],
    )?;
    tx.execute(
        "UPDATE team_notes SET successor = NULL WHERE successor IS NOT NULL
           AND (successor IN (SELECT uid FROM team_notes)
                OR NOT EXISTS (SELECT 1 FROM notes n WHERE n.id = team_notes.note_id AND n.retired_at IS NOT NULL))",
        [],
    )?;
    tx.execute("DELETE FROM team_applying", [])?;
    tx.execute("UPDATE team_state SET cursor = max(cursor, ?1), last_pull_at = ?2 WHERE id = 1", params![cursor, now])?;
    tx.commit()?;
    Ok(out)
}

/// The mined lesson key a note's evidence names, if it names one.
fn mined_key(evidence: Option<&str>) -> Option<String> {
    crate::memory::Backing::parse(evidence?)?.key.filter(|k| !k.is_empty())
}

/// Whether the team's row says another lesson than the local note `id`, and this machine can
/// take it (no other current note here already says exactly that).
fn edited_elsewhere(tx: &Connection, id: i64, n: &TeamNote) -> Result<bool> {
    let differs: bool =
        tx.query_row("SELECT delta IS NOT ?2 FROM notes WHERE id = ?1", params![id, n.delta], |r| r.get(0))?;
    if !differs {
        return Ok(false);
    }
    let twin: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM notes o JOIN notes m ON m.id = ?1
                        WHERE o.id <> ?1 AND o.skill = m.skill AND o.scope = m.scope AND o.project_id = m.project_id
                          AND o.norm_hash = ?2 AND o.retired_at IS NULL)",
        params![id, n.norm_hash],
        |r| r.get(0),
    )?;
    // Another note here already says exactly that: keep both as they are.
    Ok(!twin)
}

/// Takes the team's word on whether note `id` is current: retires it (with the successor and
/// reason the team has) or restores it. A restore that would make two current notes say
/// exactly the same leaves it retired.
fn apply_life(tx: &Connection, id: i64, n: &TeamNote, out: &mut TeamApplied) -> Result<()> {
    let successor = match n.superseded_by.as_deref() {
        Some(uid) => team_note_id(tx, uid)?,
        None => None,
    };
    match n.retired_at {
        Some(at) => {
            let k = tx.execute(
                "UPDATE notes SET retired_at = ?2, superseded_by = ?3, reason = ?4 WHERE id = ?1 AND retired_at IS NULL",
                params![id, at, successor, n.reason],
            )?;
            if k > 0 {
                out.retired.push(id);
            } else if successor.is_some() {
                tx.execute(
                    "UPDATE notes SET superseded_by = ?2 WHERE id = ?1 AND superseded_by IS NULL",
                    params![id, successor],
                )?;
            }
            let waiting = if successor.is_none() { n.superseded_by.as_deref() } else { None };
            tx.execute("UPDATE team_notes SET successor = ?2 WHERE note_id = ?1", params![id, waiting])?;
        }
        None => {
            match tx.execute(
                "UPDATE notes SET retired_at = NULL, superseded_by = NULL, reason = NULL WHERE id = ?1 AND retired_at IS NOT NULL",
                [id],
            ) {
                Ok(k) if k > 0 => out.restored.push(id),
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::ConstraintViolation => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Deletes note `id` and the older versions it replaced here (a purge the team made), with
/// their team ids and pending changes. Returns the ids deleted.
fn delete_with_versions(tx: &Connection, id: i64) -> Result<Vec<i64>> {
    let ids: Vec<i64> = {
        let mut stmt = tx.prepare_cached(
            "WITH RECURSIVE chain(id) AS (SELECT ?1 UNION SELECT n.id FROM notes n JOIN chain c ON n.superseded_by = c.id)
             SELECT id FROM chain ORDER BY id",
        )?;
        let rows = stmt.query_map([id], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut removed = vec![];
    for i in ids {
        if tx.execute("DELETE FROM notes WHERE id = ?1", [i])? > 0 {
            removed.push(i);
        }
        tx.execute("DELETE FROM team_notes WHERE note_id = ?1", [i])?;
        tx.execute("DELETE FROM team_outbox WHERE note_id = ?1", [i])?;
    }
    Ok(removed)
}

/// Records the last sync failure (`None`: the last sync succeeded).
pub fn team_record_error(conn: &mut Connection, error: Option<&str>) -> Result<()> {
    let tx = write_tx(conn)?;
    tx.execute(
        "UPDATE team_state SET last_error = ?1, last_error_at = CASE WHEN ?1 IS NULL THEN last_error_at ELSE ?2 END WHERE id = 1",
        params![error, now_ms()],
    )?;
    tx.commit()?;
    Ok(())
}

/// A note held back from the team, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamHeld {
    pub note_id: i64,
    pub skill: String,
    pub reason: String,
}

/// The notes held back from the team.
pub fn team_held(conn: &Connection) -> Result<Vec<TeamHeld>> {
    let mut stmt = conn.prepare(
        "SELECT t.note_id, n.skill, t.held FROM team_notes t JOIN notes n ON n.id = t.note_id
         WHERE t.held IS NOT NULL ORDER BY t.note_id",
    )?;
    let rows = stmt.query_map([], |r| Ok(TeamHeld { note_id: r.get(0)?, skill: r.get(1)?, reason: r.get(2)? }))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The local id of the note with team id `uid`, if it is here.
pub fn team_note_id(conn: &Connection, uid: &str) -> Result<Option<i64>> {
    Ok(conn.query_row("SELECT note_id FROM team_notes WHERE uid = ?1", [uid], |r| r.get(0)).optional()?)
}

/// The team id of a local note, if it has one.
pub fn team_uid(conn: &Connection, note_id: i64) -> Result<Option<String>> {
    Ok(conn.query_row("SELECT uid FROM team_notes WHERE note_id = ?1", [note_id], |r| r.get(0)).optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(delta: &str, key: &str) -> TeamNote {
        TeamNote {
            skill: "deploy".into(),
            scope: "global".into(),
            project_id: String::new(),
            origin_project: "p".into(),
            source: "transcript".into(),
            kind: "fix".into(),
            intent: String::new(),
            delta: delta.into(),
            tags: "[]".into(),
            pinned: false,
            hits: 0,
            norm_hash: crate::memory::norm_hash(delta),
            created_at: 1,
            updated_at: 1,
            retired_at: None,
            superseded_by: None,
            reason: None,
            evidence: Some(serde_json::json!({ "key": key }).to_string()),
        }
    }

    /// A mined lesson stored here as the miner stores it: held, with its key and one session.
    fn mined_here(conn: &mut Connection, n: &TeamNote, key: &str) -> i64 {
        conn.execute(
            "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, delta, norm_hash, created_at,
                                updated_at, review, evidence)
             VALUES (?1, ?2, ?3, ?4, 'transcript', 'fix', ?5, ?6, 1, 1, 'pending', ?7)",
            params![n.skill, n.scope, n.project_id, n.origin_project, n.delta, n.norm_hash, n.evidence],
        )
        .unwrap();
        let id = conn.last_insert_rowid();
        super::super::record_support(conn, &n.skill, key, "s1", id).unwrap();
        id
    }

    fn pulled(uid: &str, note: TeamNote) -> TeamIncoming {
        TeamIncoming { uid: uid.into(), deleted: false, note, vector: None }
    }

    fn review_of(conn: &Connection, id: i64) -> (Option<String>, bool) {
        conn.query_row("SELECT review, retired_at IS NOT NULL FROM notes WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    }

    /// A lesson the team released arrives where the same lesson is held: with the same text
    /// (the twin check) or in other words under the same key, it maps onto the note here (one
    /// note, still held until the support says otherwise); a lesson a person rejected here
    /// stays rejected; a lesson nobody here mined is inserted, shown, not held.
    #[test]
    fn a_pulled_mined_lesson_maps_onto_the_one_held_here_and_never_holds_or_unholds() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        team_begin(&mut conn, "me", "target").unwrap();
        let same = lesson("`npm ci` fails with `ERESOLVE`; `npm ci --legacy-peer-deps` works.", "npm|eresolve");
        let same_here = mined_here(&mut conn, &same, "npm|eresolve");
        let theirs =
            lesson("`pytest /home/b/app` fails with `No module named app`; `python -m pytest` works.", "pytest|m");
        let ours =
            lesson("`pytest /home/a/app` fails with `No module named app`; `python -m pytest` works.", "pytest|m");
        let ours_here = mined_here(&mut conn, &ours, "pytest|m");
        let rejected = lesson("`tar x a.tgz` fails; `tar xzf a.tgz` works.", "tar|xzf");
        let rejected_here = mined_here(&mut conn, &rejected, "tar|xzf");
        conn.execute("UPDATE notes SET retired_at = 5, reason = 'rejected in review' WHERE id = ?1", [rejected_here])
            .unwrap();
        let new = lesson("`helm upgrade` fails with `UPGRADE FAILED`; `helm upgrade --atomic` works.", "helm|atomic");

        let rows = [pulled("u1", same), pulled("u2", theirs.clone()), pulled("u3", rejected), pulled("u4", new)];
        let applied = team_apply(&mut conn, &rows, 4, None, false).unwrap();
        assert_eq!(team_note_id(&conn, "u1").unwrap(), Some(same_here), "the same text: the twin");
        assert_eq!(team_note_id(&conn, "u2").unwrap(), Some(ours_here), "other words, the same key");
        assert_eq!(team_note_id(&conn, "u3").unwrap(), Some(rejected_here));
        let inserted = team_note_id(&conn, "u4").unwrap().unwrap();
        assert_eq!(applied.inserted, vec![inserted]);
        // A pull neither releases a held lesson nor brings back a rejected one, nor holds one.
        assert_eq!(review_of(&conn, same_here), (Some("pending".into()), false));
        assert_eq!(review_of(&conn, ours_here), (Some("pending".into()), false));
        assert_eq!(review_of(&conn, rejected_here), (Some("pending".into()), true));
        assert_eq!(review_of(&conn, inserted), (None, false));
        // One current note per lesson here (the team's words kept, ours as a version).
        let current: i64 = conn
            .query_row("SELECT count(*) FROM notes WHERE retired_at IS NULL AND skill = 'deploy'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(current, 3, "same, ours (the pytest lesson), the new one; the rejected one is retired");
        let delta: String = conn.query_row("SELECT delta FROM notes WHERE id = ?1", [ours_here], |r| r.get(0)).unwrap();
        assert_eq!(delta, theirs.delta);

        // The team retires the lesson held here, then restores it: retired with the team's
        // reason, then back in the queue, held (a rejection here would have stayed).
        let retired = TeamIncoming {
            note: TeamNote { retired_at: Some(9), reason: Some("outdated".into()), ..theirs.clone() },
            ..pulled("u2", theirs.clone())
        };
        team_apply(&mut conn, &[retired], 5, None, false).unwrap();
        assert_eq!(review_of(&conn, ours_here), (Some("pending".into()), true));
        team_apply(&mut conn, &[pulled("u2", theirs.clone())], 6, None, false).unwrap();
        assert_eq!(review_of(&conn, ours_here), (Some("pending".into()), false));
        conn.execute("UPDATE notes SET reason = 'rejected in review: not a lesson' WHERE id = ?1", [rejected_here])
            .unwrap();
        let again = lesson("`tar x a.tgz` fails; `tar xzf a.tgz` works.", "tar|xzf");
        team_apply(&mut conn, &[pulled("u3", again)], 7, None, false).unwrap();
        assert_eq!(review_of(&conn, rejected_here), (Some("pending".into()), true), "what the person said too");

        // A second team row of a lesson already mapped here (another machine's words): one note.
        let more =
            lesson("`pytest /home/c/app` fails with `No module named app`; `python -m pytest` works.", "pytest|m");
        let applied = team_apply(&mut conn, &[pulled("u5", more)], 8, None, false).unwrap();
        assert!(applied.inserted.is_empty() && applied.updated.is_empty(), "{applied:?}");
        assert_eq!(team_note_id(&conn, "u5").unwrap(), None);
    }
}
