//! Curation: listing, scope moves, merges, export, import, and the doctor's checks
//! (`engine/curate/`: the dashboard's and the CLI's `notes`, `export`, `import`, `doctor`).

use super::*;

/// How [`list`] orders notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListOrder {
    /// Newest first.
    #[default]
    Recent,
    /// Most hits (duplicate writes) first.
    Hits,
    /// Most recalls first.
    Recalls,
    /// Most sessions that used it first.
    Used,
}

/// What [`list`] selects: every filter is optional.
#[derive(Debug, Clone, Default)]
pub struct ListQuery<'a> {
    pub skill: Option<&'a str>,
    /// Notes visible from this project (its own and global); `None`: every project's.
    pub project: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub scope: Option<Scope>,
    pub source: Option<&'a str>,
    pub pinned: Option<bool>,
    /// Full-text search: every word must match (the last one as a prefix).
    pub search: Option<&'a str>,
    pub order: ListOrder,
    pub offset: usize,
    /// `None`: every matching note.
    pub limit: Option<usize>,
    /// Vectors of this model count as current.
    pub model: Option<&'a str>,
    /// Also the notes replaced or retired (history); by default only current notes.
    pub include_history: bool,
    /// Only the notes waiting for review (`true`); by default they are left out.
    pub pending: bool,
    /// Only the notes written in this session.
    pub session: Option<&'a str>,
    /// Only trusted (`Some(true)`) or only unverified (`Some(false)`) notes.
    pub trusted: Option<bool>,
}

/// A listed note: the note, the project it is stored under (`''` for global), and whether it
/// has a vector of the current model.
#[derive(Debug, Clone)]
pub struct Listed {
    pub note: Note,
    pub project_id: String,
    pub current_vector: bool,
}

/// An FTS5 query that ANDs the words of `text`, the last one as a prefix (a person typing a
/// search). `None` when no word is left.
pub fn search_query(text: &str) -> Option<String> {
    let words = query_words(text);
    let n = words.len();
    (n > 0).then(|| {
        words
            .iter()
            .enumerate()
            .map(|(i, w)| if i + 1 == n { format!("\"{w}\"*") } else { format!("\"{w}\"") })
            .collect::<Vec<_>>()
            .join(" AND ")
    })
}

fn list_where(q: &ListQuery<'_>, args: &mut Vec<rusqlite::types::Value>) -> String {
    use rusqlite::types::Value as V;
    let mut w = vec![if q.include_history { "1" } else { "notes.retired_at IS NULL" }.to_string()];
    // Notes waiting for review are listed only when asked for; one rejected in review is
    // history (retired, with the reason) and listed as such.
    w.push(
        match (q.pending, q.include_history) {
            (true, _) => "notes.review IS NOT NULL",
            (false, false) => "notes.review IS NULL",
            (false, true) => "(notes.review IS NULL OR notes.retired_at IS NOT NULL)",
        }
        .to_string(),
    );
    let arg = |args: &mut Vec<V>, v: V| {
        args.push(v);
        format!("?{}", args.len())
    };
    if let Some(s) = q.skill {
        let a = arg(args, V::Text(s.into()));
        w.push(format!("notes.skill = {a}"));
    }
    if let Some(p) = q.project {
        let a = arg(args, V::Text(p.into()));
        w.push(format!("((notes.scope = 'project' AND notes.project_id = {a}) OR notes.scope = 'global')"));
    }
    if let Some(k) = q.kind {
        let a = arg(args, V::Text(k.into()));
        w.push(format!("notes.kind = {a}"));
    }
    if let Some(s) = q.scope {
        let a = arg(args, V::Text(s.as_str().into()));
        w.push(format!("notes.scope = {a}"));
    }
    if let Some(s) = q.source {
        let a = arg(args, V::Text(s.into()));
        w.push(format!("notes.source = {a}"));
    }
    if let Some(sid) = q.session {
        let a = arg(args, V::Text(sid.into()));
        w.push(format!("notes.session_id = {a}"));
    }
    if let Some(p) = q.pinned {
        let a = arg(args, V::Integer(p as i64));
        w.push(format!("notes.pinned = {a}"));
    }
    if let Some(t) = q.trusted {
        // Trusted: a person's act, or a use in another session (docs/protocol.md, "Trust").
        let trusted = super::calls::TRUSTED_NOTES;
        w.push(if t { trusted.to_string() } else { format!("NOT {trusted}") });
    }
    if let Some(fq) = q.search.and_then(search_query) {
        let fq = match q.skill {
            Some(s) => within_skill(s, &fq),
            None => fq,
        };
        let a = arg(args, V::Text(fq));
        w.push(format!("notes.id IN (SELECT rowid FROM notes_fts WHERE notes_fts MATCH {a})"));
    }
    w.join(" AND ")
}

/// The notes `q` selects, and how many there are in all (before offset and limit).
pub fn list(conn: &Connection, q: &ListQuery<'_>) -> Result<(i64, Vec<Listed>)> {
    let mut args = vec![];
    let wh = list_where(q, &mut args);
    let total: i64 = conn.query_row(
        &format!("SELECT count(*) FROM notes WHERE {wh}"),
        rusqlite::params_from_iter(args.iter()),
        |r| r.get(0),
    )?;
    let order = match q.order {
        ListOrder::Recent => "notes.created_at DESC, notes.id DESC",
        ListOrder::Hits => "notes.hits DESC, notes.created_at DESC, notes.id DESC",
        ListOrder::Recalls => "notes.recalls DESC, notes.created_at DESC, notes.id DESC",
        ListOrder::Used => super::calls::MOST_USED_FIRST,
    };
    args.push(rusqlite::types::Value::Text(q.model.unwrap_or("").into()));
    let model_arg = args.len();
    args.push(rusqlite::types::Value::Integer(q.limit.map(|l| l as i64).unwrap_or(-1)));
    args.push(rusqlite::types::Value::Integer(q.offset as i64));
    let n = args.len();
    let cols: String = NOTE_COLUMNS.split(", ").map(|c| format!("notes.{c}")).collect::<Vec<_>>().join(", ");
    // The page's ids first (sorted from the index where the filters allow, without reading
    // every row), then only their rows.
    let mut stmt = conn.prepare(&format!(
        "SELECT {cols}, notes.project_id, (notes.vector IS NOT NULL AND notes.vector_model = ?{model_arg})
         FROM notes WHERE notes.id IN (SELECT notes.id FROM notes WHERE {wh} ORDER BY {order} LIMIT ?{} OFFSET ?{n})
         ORDER BY {order}",
        n - 1
    ))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |r| {
        Ok(Listed {
            note: note_from_row(r)?,
            project_id: r.get(NOTE_COLUMN_COUNT)?,
            current_vector: r.get::<_, i64>(NOTE_COLUMN_COUNT + 1)? != 0,
        })
    })?;
    Ok((total, rows.collect::<Result<_, _>>()?))
}

/// What [`move_scope`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// The note changed scope and kept its id.
    Moved(i64),
    /// The target scope already said exactly that: the note was merged into that one (its
    /// hits, recalls and pin added), and deleted.
    MergedInto(i64),
    /// It already had that scope.
    Unchanged(i64),
}

/// Moves a note to `scope`: to global (visible from every project), or to project scope under
/// `project`. An exact duplicate already there absorbs it.
pub fn move_scope(
    conn: &mut Connection,
    id: i64,
    scope: Scope,
    project: &str,
    index: Option<&dyn VectorIndex>,
) -> Result<Moved> {
    let tx = write_tx(conn)?;
    let row: Option<(String, String, String, String)> = tx
        .query_row("SELECT skill, scope, project_id, norm_hash FROM notes WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((skill, old_scope, old_pkey, hash)) = row else { return Err(not_found(id)) };
    let pkey = partition(scope, project);
    if old_scope == scope.as_str() && old_pkey == pkey {
        return Ok(Moved::Unchanged(id));
    }
    let twin: Option<i64> = tx
        .query_row(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4
             AND retired_at IS NULL",
            params![skill, scope.as_str(), pkey, hash],
            |r| r.get(0),
        )
        .optional()?;
    let out = match twin {
        Some(keep) => {
            absorb(&tx, keep, id)?;
            Moved::MergedInto(keep)
        }
        None => {
            tx.execute(
                "UPDATE notes SET scope = ?2, project_id = ?3, updated_at = ?4 WHERE id = ?1",
                params![id, scope.as_str(), pkey, now_ms()],
            )?;
            Moved::Moved(id)
        }
    };
    tx.commit()?;
    if let (Moved::MergedInto(_), Some(ix)) = (out, index) {
        ix.remove(id);
    }
    Ok(out)
}

/// `keep` takes over `drop`'s hits (plus one: the duplicate write it stands for), recalls and
/// pin; `drop` is kept as history, replaced by `keep`. Inside the caller's transaction.
fn absorb(tx: &rusqlite::Transaction<'_>, keep: i64, drop: i64) -> Result<()> {
    tx.execute(
        "UPDATE notes SET hits = hits + (SELECT hits + 1 FROM notes WHERE id = ?2),
                          recalls = recalls + (SELECT recalls FROM notes WHERE id = ?2),
                          pinned = max(pinned, (SELECT pinned FROM notes WHERE id = ?2)),
                          last_used_at = max(coalesce(last_used_at, 0), coalesce((SELECT last_used_at FROM notes WHERE id = ?2), 0)),
                          updated_at = ?3
         WHERE id = ?1",
        params![keep, drop, now_ms()],
    )?;
    // Kept as history, replaced by the note it was merged into.
    tx.execute(
        "UPDATE notes SET retired_at = ?3, superseded_by = ?2, reason = 'merged', updated_at = ?3 WHERE id = ?1",
        params![drop, keep, now_ms()],
    )?;
    Ok(())
}

/// Merges note `drop` into note `keep` (both of one skill): `keep` takes its hits, recalls
/// and pin, `drop` is kept as history (replaced by `keep`).
pub fn merge(conn: &mut Connection, keep: i64, drop: i64, index: Option<&dyn VectorIndex>) -> Result<()> {
    if keep == drop {
        return Err(Error::invalid(format!("cannot merge note {keep} into itself; give two different ids")));
    }
    let tx = write_tx(conn)?;
    let skill_of = |id: i64| -> Result<String> {
        tx.query_row("SELECT skill FROM notes WHERE id = ?1", [id], |r| r.get(0))
            .optional()?
            .ok_or_else(|| not_found(id))
    };
    let (a, b) = (skill_of(keep)?, skill_of(drop)?);
    if a != b {
        return Err(Error::invalid(format!(
            "note {keep} is of skill {a:?} and note {drop} of skill {b:?}; only notes of one skill can be merged"
        )));
    }
    absorb(&tx, keep, drop)?;
    tx.commit()?;
    if let Some(ix) = index {
        ix.remove(drop);
    }
    Ok(())
}

/// A stored note with what an export writes besides it.
#[derive(Debug, Clone)]
pub struct ExportRow {
    pub note: Note,
    pub project_id: String,
    pub norm_hash: String,
    pub vector_model: Option<String>,
}

/// Every note (of `skill`, of `scope`, when given), oldest first.
pub fn export_rows(conn: &Connection, skill: Option<&str>, scope: Option<Scope>) -> Result<Vec<ExportRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {NOTE_COLUMNS}, project_id, norm_hash, vector_model FROM notes
         WHERE (?1 IS NULL OR skill = ?1) AND (?2 IS NULL OR scope = ?2) ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![skill, scope.map(Scope::as_str)], |r| {
        Ok(ExportRow {
            note: note_from_row(r)?,
            project_id: r.get(NOTE_COLUMN_COUNT)?,
            norm_hash: r.get(NOTE_COLUMN_COUNT + 1)?,
            vector_model: r.get(NOTE_COLUMN_COUNT + 2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A note to import: its stored fields, and its vector of `model` (when the importer embedded
/// it).
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub note: Note,
    pub project_id: String,
    pub vector: Option<Vec<f32>>,
}

/// Writes `rows` in ONE transaction. A current note (a row without `retired_at`) that says
/// what a current note of its partition says (the same normalised text, or a near neighbour
/// that [`sameness`] judges the same, among vectors of `model` including notes imported
/// earlier in the same run) bumps that note's hits instead. Rows of history (`retired_at`) are
/// stored as they are, their `superseded_by` (an id of the export) mapped to the note that
/// row became here. Any failure rolls the whole import back.
pub fn import_rows(
    conn: &mut Connection,
    rows: &[ImportRow],
    model: Option<&str>,
    t: Thresholds,
) -> Result<Vec<(i64, WriteStatus)>> {
    use std::collections::HashMap;
    let tx = write_tx(conn)?;
    let mut out = Vec::with_capacity(rows.len());
    // The vectors of each (skill, scope, partition) met so far, with the notes imported into it.
    type Partition = (String, String, String);
    let mut vectors: HashMap<Partition, Vec<(i64, Vec<f32>, String)>> = HashMap::new();
    // Export id → the note it became here (history rows name their successor by export id).
    let mut became: HashMap<i64, i64> = HashMap::new();
    let mut successors: Vec<(i64, i64)> = vec![];
    {
        let mut exact = tx.prepare_cached(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4
             AND retired_at IS NULL",
        )?;
        let mut part = tx.prepare_cached(
            "SELECT id, vector, delta FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4
             AND retired_at IS NULL",
        )?;
        let mut bump = tx.prepare_cached("UPDATE notes SET hits = hits + 1, last_used_at = ?2 WHERE id = ?1")?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits,
                                recalls, pinned, norm_hash, skill_hash, created_at, updated_at, vector, vector_model,
                                session_id, host, transcript, transcript_at, origin_source, review)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                     ?19, ?20, ?21, ?22, ?23, ?24)",
        )?;
        let now = now_ms();
        for row in rows {
            let n = &row.note;
            let pkey = if n.scope == Scope::Global { String::new() } else { row.project_id.clone() };
            let hash = norm_hash(&n.delta);
            let key = (n.skill.clone(), n.scope.as_str().to_string(), pkey.clone());
            let found: Option<i64> =
                exact.query_row(params![n.skill, n.scope.as_str(), pkey, hash], |r| r.get(0)).optional()?;
            let history = n.retired_at.is_some();
            let found = match (found, model, &row.vector) {
                _ if history => None,
                (Some(id), _, _) => Some(id),
                (None, Some(m), Some(v)) if v.iter().any(|x| *x != 0.0) => {
                    if !vectors.contains_key(&key) {
                        let got = part
                            .query_map(params![n.skill, n.scope.as_str(), pkey, m], |r| {
                                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?, r.get::<_, String>(2)?))
                            })?
                            .filter_map(|r| r.ok())
                            .filter_map(|(id, b, d)| from_blob(&b).map(|v| (id, v, d)))
                            .collect();
                        vectors.insert(key.clone(), got);
                    }
                    let mine = sameness::signature(&n.delta);
                    let mut near: Vec<(i64, f32, &str)> = vectors[&key]
                        .iter()
                        .filter(|(_, w, _)| w.len() == v.len())
                        .map(|(id, w, d)| (*id, crate::embed::dot(v, w), d.as_str()))
                        .filter(|(_, s, _)| *s >= t.merge)
                        .collect();
                    near.sort_by(|a, b| b.1.total_cmp(&a.1));
                    near.into_iter()
                        .find(|(_, s, d)| {
                            sameness::restates(d, &n.delta)
                                || sameness::relate_signatures(&sameness::signature(d), &mine, *s, t) == Relation::Same
                        })
                        .map(|(id, _, _)| id)
                }
                _ => None,
            };
            if let Some(id) = found {
                bump.execute(params![id, now])?;
                if n.id != 0 {
                    became.insert(n.id, id);
                }
                out.push((id, WriteStatus::Duplicate));
                continue;
            }
            let tags = serde_json::to_string(&n.tags).unwrap_or_else(|_| "[]".into());
            let vec_model = row.vector.as_ref().and(model);
            insert.execute(params![
                n.skill,
                n.scope.as_str(),
                pkey,
                n.origin_project,
                n.source.as_str(),
                n.kind.as_str(),
                n.intent,
                n.delta,
                tags,
                n.hits,
                n.recalls,
                n.pinned as i64,
                hash,
                n.skill_hash,
                n.created_at,
                n.updated_at,
                row.vector.as_deref().map(to_blob),
                vec_model,
                n.session_id,
                n.origin.host,
                n.origin.transcript,
                n.origin.transcript_at,
                n.origin_source.map(Source::as_str),
                n.pending.then_some("pending"),
            ])?;
            let id = tx.last_insert_rowid();
            if n.id != 0 {
                became.insert(n.id, id);
            }
            if history {
                tx.execute(
                    "UPDATE notes SET retired_at = ?2, reason = ?3 WHERE id = ?1",
                    params![id, n.retired_at, n.reason],
                )?;
                if let Some(by) = n.superseded_by {
                    successors.push((id, by));
                }
            } else if let Some(v) = &row.vector {
                vectors.entry(key).or_default().push((id, v.clone(), n.delta.clone()));
            }
            out.push((id, WriteStatus::Inserted));
        }
        // A successor that is not in the import (or that was a duplicate) leaves the history
        // row retired without one.
        for (id, by) in successors {
            if let Some(to) = became.get(&by) {
                tx.execute("UPDATE notes SET superseded_by = ?2 WHERE id = ?1", params![id, to])?;
            }
        }
    }
    tx.commit()?;
    Ok(out)
}

/// Notes written per day (UTC, `YYYY-MM-DD`) and notes last used (recalled or hit) per day,
/// over the last `days`, visible from `project`: the dashboard's chart.
pub fn activity_by_day(conn: &Connection, project: &str, days: i64) -> Result<Vec<(String, i64, i64)>> {
    let since = now_ms() - days * 86_400_000;
    let mut stmt = conn.prepare(
        "SELECT day, sum(w), sum(u) FROM (
            SELECT date(created_at / 1000, 'unixepoch') AS day, 1 AS w, 0 AS u FROM notes
             WHERE created_at >= ?2 AND ((scope = 'project' AND project_id = ?1) OR scope = 'global')
            UNION ALL
            SELECT date(last_used_at / 1000, 'unixepoch'), 0, 1 FROM notes
             WHERE last_used_at >= ?2 AND ((scope = 'project' AND project_id = ?1) OR scope = 'global')
         ) GROUP BY day ORDER BY day",
    )?;
    let rows = stmt.query_map(params![project, since], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every project a note was written from, or stored under, with its note count.
pub fn projects(conn: &Connection) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT origin_project, count(*) FROM notes WHERE origin_project != '' GROUP BY origin_project ORDER BY 2 DESC",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The full-text index's own integrity check against the notes table: `None` when sound,
/// else SQLite's message.
pub fn fts_integrity(conn: &Connection) -> Result<Option<String>> {
    match conn.execute("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)", []) {
        Ok(_) => Ok(None),
        Err(rusqlite::Error::SqliteFailure(_, msg)) => Ok(Some(msg.unwrap_or_else(|| "corrupt".into()))),
        Err(e) => Err(e.into()),
    }
}

/// Rebuilds the full-text index from the notes table.
pub fn fts_rebuild(conn: &mut Connection) -> Result<()> {
    let tx = write_tx(conn)?;
    tx.execute("INSERT INTO notes_fts (notes_fts) VALUES ('rebuild')", [])?;
    tx.commit()?;
    Ok(())
}

/// The ids of every current note with a vector of `model`, ascending.
pub fn ids_with_vectors(conn: &Connection, model: &str) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare(
        "SELECT id FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL AND retired_at IS NULL ORDER BY id",
    )?;
    let rows = stmt.query_map([model], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every skill with notes, with its count (all projects).
pub fn skills_with_notes(conn: &Connection) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare("SELECT skill, count(*) FROM notes GROUP BY skill ORDER BY skill")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What `doctor` reads of the notes' provenance (migration 0011).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProvenanceHealth {
    /// The provenance columns, or the sources `import` and `team`, the notes table lacks.
    pub missing: Vec<String>,
    /// Notes by source, every note (history and the review queue included).
    pub by_source: Vec<(String, i64)>,
    /// Notes that name no host and no session (written before provenance was kept).
    pub unknown: i64,
    /// Historian notes that name no transcript.
    pub historian_without_transcript: i64,
    /// Notes waiting for review.
    pub pending: i64,
}

/// The notes' provenance, for `doctor`.
pub fn provenance_health(conn: &Connection) -> Result<ProvenanceHealth> {
    let mut h = ProvenanceHealth::default();
    let columns: Vec<String> = {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_xinfo('notes')")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    for c in ["session_id", "host", "transcript", "transcript_at", "origin_source", "review", "review_replaces"] {
        if !columns.iter().any(|x| x == c) {
            h.missing.push(format!("column {c}"));
        }
    }
    let table: String =
        conn.query_row("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'notes'", [], |r| r.get(0))?;
    for s in ["import", "team"] {
        if !table.contains(&format!("'{s}'")) {
            h.missing.push(format!("source {s}"));
        }
    }
    if !h.missing.is_empty() {
        return Ok(h);
    }
    let mut stmt = conn.prepare("SELECT source, count(*) FROM notes GROUP BY source ORDER BY source")?;
    h.by_source = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    (h.unknown, h.historian_without_transcript, h.pending) = conn.query_row(
        "SELECT coalesce(sum(host IS NULL AND session_id IS NULL), 0),
                coalesce(sum(source = 'historian' AND transcript IS NULL), 0),
                coalesce(sum(review IS NOT NULL AND retired_at IS NULL), 0)
         FROM notes",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(h)
}
