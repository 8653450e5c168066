//! Counts and scans: what recall's catalog, stats, the corpus report and the editor read.

use super::*;

/// Corpus counts visible from a project.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillCount {
    pub skill: String,
    pub notes: i64,
    pub pinned: i64,
    pub recalls: i64,
}

/// Per-skill counts of the notes visible from `project`.
pub fn counts(conn: &Connection, project: &str) -> Result<Vec<SkillCount>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT skill, count(*), sum(pinned), sum(recalls) FROM notes WHERE {} GROUP BY skill ORDER BY skill",
        visible_from(1)
    ))?;
    let rows = stmt.query_map([project], |r| {
        Ok(SkillCount { skill: r.get(0)?, notes: r.get(1)?, pinned: r.get(2)?, recalls: r.get(3)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The facts of one note as recall's catalog keeps them, borrowed from the row being read.
pub struct Facts<'a> {
    pub id: i64,
    pub skill: &'a str,
    pub global: bool,
    /// The partition key: the project of a project note, "" for a global one.
    pub partition: &'a str,
    pub pinned: bool,
    pub created_at: i64,
}

/// The text of a column value read in place ("" for anything else).
fn text(v: rusqlite::types::ValueRef<'_>) -> &str {
    match v {
        rusqlite::types::ValueRef::Text(t) => std::str::from_utf8(t).unwrap_or(""),
        _ => "",
    }
}

/// Calls `sink` with the [`Facts`] of the note `only`, or of every note (`None`; read from
/// the covering index `notes_catalog`, text in place: a scan of 100k notes allocates nothing
/// per row).
pub fn scan_facts(conn: &Connection, only: Option<i64>, sink: &mut dyn FnMut(Facts<'_>)) -> Result<()> {
    // Current notes only (history is never ranked, nor a note waiting for review); the
    // condition is the covering index's own, so the scan reads the index alone.
    const COLUMNS: &str =
        "SELECT id, skill, scope, project_id, pinned, created_at FROM notes WHERE retired_at IS NULL AND review IS NULL";
    let mut stmt = match only {
        Some(_) => conn.prepare_cached(&format!("{COLUMNS} AND id = ?1"))?,
        None => conn.prepare_cached(COLUMNS)?,
    };
    let mut rows = match only {
        Some(id) => stmt.query([id])?,
        None => stmt.query([])?,
    };
    while let Some(r) = rows.next()? {
        sink(Facts {
            id: r.get(0)?,
            skill: text(r.get_ref(1)?),
            global: text(r.get_ref(2)?) == Scope::Global.as_str(),
            partition: text(r.get_ref(3)?),
            pinned: r.get::<_, i64>(4)? != 0,
            created_at: r.get(5)?,
        });
    }
    Ok(())
}

/// What the corpus report reads of one visible note.
pub struct ReportRow {
    pub skill: String,
    pub scope: String,
    pub source: String,
    pub kind: String,
    pub pinned: bool,
    pub recalls: i64,
    pub skill_hash: Option<String>,
    /// Without a vector of the current model.
    pub stale: bool,
}

/// Calls `sink` with every note visible from `project` (the corpus report), `model` being the
/// current embedder's (`None`: off, every note is stale).
pub fn scan_visible(
    conn: &Connection,
    project: &str,
    model: Option<&str>,
    sink: &mut dyn FnMut(ReportRow),
) -> Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT skill, scope, source, kind, pinned, recalls, skill_hash, vector IS NULL OR vector_model IS NOT ?2
         FROM notes WHERE {}",
        visible_from(1)
    ))?;
    let mut rows = stmt.query(params![project, model])?;
    while let Some(row) = rows.next()? {
        sink(ReportRow {
            skill: row.get(0)?,
            scope: row.get(1)?,
            source: row.get(2)?,
            kind: row.get(3)?,
            pinned: row.get::<_, i64>(4)? != 0,
            recalls: row.get(5)?,
            skill_hash: row.get(6)?,
            stale: row.get::<_, i64>(7)? != 0,
        });
    }
    Ok(())
}

// ---- editor: a skill's memory at a glance -----------------------------------------------

/// A skill's notes visible from `project`, counted: `(project notes, global notes, pinned)`.
pub fn scope_counts(conn: &Connection, skill: &str, project: &str) -> Result<(i64, i64, i64)> {
    Ok(conn.query_row(
        &format!(
            "SELECT coalesce(sum(scope = 'project'), 0), coalesce(sum(scope = 'global'), 0), coalesce(sum(pinned), 0)
             FROM notes WHERE skill = ?1 AND {}",
            visible_from(2)
        ),
        rusqlite::params![skill, project],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

/// The ids of a skill's `limit` leading notes visible from `project`: pinned first, then by
/// hits, then newest.
pub fn leading_ids(conn: &Connection, skill: &str, project: &str, limit: usize) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT id FROM notes WHERE skill = ?1 AND {} ORDER BY pinned DESC, hits DESC, created_at DESC, id DESC LIMIT ?3",
        visible_from(2)
    ))?;
    let rows = stmt.query_map(rusqlite::params![skill, project, limit as i64], |r| r.get(0))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// Calls `f` with (id, intent, lesson) of every current note of `skill` (read in place, in
/// one scan of the skill's index): what the in-memory bm25 rung indexes.
pub fn scan_texts(conn: &Connection, skill: &str, f: &mut dyn FnMut(i64, &str, &str)) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, intent, delta FROM notes WHERE skill = ?1 AND retired_at IS NULL AND review IS NULL",
    )?;
    let mut rows = stmt.query([skill])?;
    while let Some(r) = rows.next()? {
        f(r.get(0)?, text(r.get_ref(1)?), text(r.get_ref(2)?));
    }
    Ok(())
}

/// Calls `f` with (id, stored pieces, intent, lesson) of every current note of `skill` that
/// has its token-matching pieces stored, in id order (read in place): what recall holds of a
/// large skill's notes (`memory::lexicon::SkillPieces`).
pub fn scan_match_pieces(conn: &Connection, skill: &str, mut f: impl FnMut(i64, &[u8], &str, &str)) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT id, match_pieces, intent, delta FROM notes WHERE skill = ?1 AND retired_at IS NULL AND review IS NULL
         AND match_pieces IS NOT NULL ORDER BY id",
    )?;
    let mut rows = stmt.query([skill])?;
    while let Some(r) = rows.next()? {
        if let rusqlite::types::ValueRef::Blob(b) = r.get_ref(1)? {
            f(r.get(0)?, b, text(r.get_ref(2)?), text(r.get_ref(3)?));
        }
    }
    Ok(())
}
