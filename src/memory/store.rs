//! Notes in SQLite: writes with duplicate detection, edits, and the reads recall needs.
//!
//! Every write runs in one `BEGIN IMMEDIATE` transaction ([`crate::db::write_tx`]). A project
//! note is partitioned by its project identity, a global note by the empty partition key, so
//! that writes and duplicate detection stay within one scope and partition.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{norm_hash, NewNote, Note, Scope, WriteStatus};
use crate::db::{now_ms, write_tx};
use crate::embed::{from_blob, to_blob};
use crate::error::{Error, Result};
use crate::index::VectorIndex;

/// The partition a note of `scope` written from `project` lives in.
pub fn partition(scope: Scope, project: &str) -> &str {
    match scope {
        Scope::Project => project,
        Scope::Global => "",
    }
}

const NOTE_COLUMNS: &str =
    "id, skill, scope, origin_project, source, kind, intent, delta, tags, hits, recalls, pinned, skill_hash, created_at, updated_at";

fn note_from_row(r: &Row) -> rusqlite::Result<Note> {
    let scope: String = r.get(2)?;
    let tags: String = r.get(8)?;
    Ok(Note {
        id: r.get(0)?,
        skill: r.get(1)?,
        scope: Scope::parse(&scope).unwrap_or(Scope::Project),
        origin_project: r.get(3)?,
        source: r.get(4)?,
        kind: r.get(5)?,
        intent: r.get(6)?,
        delta: r.get(7)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        hits: r.get(9)?,
        recalls: r.get(10)?,
        pinned: r.get::<_, i64>(11)? != 0,
        skill_hash: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
    })
}

/// A vector with the model that made it.
pub struct Embedded<'a> {
    pub vector: &'a [f32],
    pub model: &'a str,
}

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
    let near = match (exact, &embedded) {
        (None, Some(e)) if e.vector.iter().any(|x| *x != 0.0) => {
            match (index.filter(|ix| ix.model_id() == e.model), partition_ids) {
                (Some(ix), Some(ids)) => {
                    ix.search(e.vector, ids, 1).first().filter(|(_, s)| *s >= dedup_threshold).map(|(id, _)| *id)
                }
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
    let tags = serde_json::to_string(&new.tags).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags,
                            norm_hash, skill_hash, session_id, created_at, updated_at, vector, vector_model)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14, ?15)",
        params![
            new.skill,
            new.scope.as_str(),
            pkey,
            project,
            new.source.as_str(),
            new.kind.as_str(),
            new.intent,
            new.delta,
            tags,
            hash,
            new.skill_hash,
            new.session_id,
            now,
            embedded.as_ref().map(|e| to_blob(e.vector)),
            embedded.as_ref().map(|e| e.model),
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.commit()?;
    if let (Some(ix), Some(e)) = (index, embedded) {
        if ix.model_id() == e.model {
            ix.insert(id, e.vector);
        }
    }
    Ok((id, WriteStatus::Inserted))
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
        let best = ix.search(e.vector, &ids, 1);
        return Ok(best.first().filter(|(_, s)| *s >= threshold).map(|(id, _)| *id));
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

/// Loads into `index` the stored vectors of `ids` it does not hold yet (notes written by
/// another process sharing the data directory).
pub fn ensure_vectors(conn: &Connection, index: &dyn VectorIndex, ids: &[i64]) -> Result<()> {
    let missing: Vec<i64> = ids.iter().copied().filter(|id| !index.contains(*id)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached("SELECT vector FROM notes WHERE id = ?1 AND vector_model = ?2")?;
    for id in missing {
        let blob: Option<Vec<u8>> = stmt.query_row(params![id, index.model_id()], |r| r.get(0)).optional()?;
        if let Some(v) = blob.and_then(|b| from_blob(&b)) {
            index.insert(id, &v);
        }
    }
    Ok(())
}

/// Loads every stored vector of `model` into `index`.
pub fn load_index(conn: &Connection, index: &dyn VectorIndex) -> Result<usize> {
    let mut stmt = conn.prepare("SELECT id, vector FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL")?;
    let rows = stmt.query_map([index.model_id()], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut n = 0;
    for row in rows {
        let (id, blob) = row?;
        if let Some(v) = from_blob(&blob) {
            index.insert(id, &v);
            n += 1;
        }
    }
    Ok(n)
}

/// Streams every stored vector of `model` into `sink` (the index's background loader).
pub fn stream_vectors(conn: &Connection, model: &str, sink: &mut dyn FnMut(i64, Vec<f32>)) -> Result<usize> {
    let mut stmt = conn.prepare("SELECT id, vector FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL")?;
    let mut rows = stmt.query([model])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let blob: Vec<u8> = r.get(1)?;
        if let Some(v) = from_blob(&blob) {
            sink(r.get(0)?, v);
            n += 1;
        }
    }
    Ok(n)
}

/// One note by id.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Note>> {
    Ok(conn.query_row(&format!("SELECT {NOTE_COLUMNS} FROM notes WHERE id = ?1"), [id], note_from_row).optional()?)
}

fn not_found(id: i64) -> Error {
    Error::NotFound(format!("no note with id {id}; list notes with skillmem/recall"))
}

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

/// The facts recall ranks a visible note by.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: i64,
    pub pinned: bool,
    pub hits: i64,
    pub created_at: i64,
}

const VISIBLE: &str = "skill = ?1 AND ((scope = 'project' AND project_id = ?2) OR scope = 'global')";

/// Every note of `skill` visible from `project` (its own plus global).
pub fn candidates(conn: &Connection, skill: &str, project: &str) -> Result<Vec<Candidate>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT id, pinned, hits, created_at FROM notes WHERE {VISIBLE} ORDER BY id"))?;
    let rows = stmt.query_map(params![skill, project], |r| {
        Ok(Candidate { id: r.get(0)?, pinned: r.get::<_, i64>(1)? != 0, hits: r.get(2)?, created_at: r.get(3)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The visible notes of `skill` that match `intent` in full text, best (lowest bm25) first.
pub fn fts(conn: &Connection, skill: &str, project: &str, intent: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
    let Some(q) = fts_query(intent) else { return Ok(vec![]) };
    fts_match(conn, skill, project, &q, limit)
}

/// The full-text token that stands for a skill (column `skill_key`, migration 0004): `sk` and
/// the lower-case hex of its name, so any name is one token that no word of a note spells.
pub fn skill_token(skill: &str) -> String {
    let hex: String = skill.bytes().map(|b| format!("{b:02x}")).collect();
    format!("\"sk{hex}\"")
}

/// `words` (an FTS5 OR query) restricted to the notes of `skill` (unrestricted for `None`).
fn within_skill<'a>(skill: impl Into<Option<&'a str>>, words: &str) -> String {
    match skill.into() {
        Some(skill) => format!("{} AND ({words})", skill_token(skill)),
        None => words.to_string(),
    }
}

fn fts_match(conn: &Connection, skill: &str, project: &str, q: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT notes.id, bm25(notes_fts, 2.0, 1.0, 0.0) AS score FROM notes_fts JOIN notes ON notes.id = notes_fts.rowid
         WHERE notes_fts MATCH ?3 AND notes.{VISIBLE} ORDER BY score, notes.id LIMIT ?4",
    ))?;
    let q = within_skill(skill, q);
    let rows = stmt.query_map(params![skill, project, q, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`fts`] for large corpora (`max_matches = i64::MAX`: every word, visibility checked in
/// memory) and very large skills: the words of `intent` that match the most notes are left
/// out, rarest first, until the words kept match at most `max_matches` notes in all (the
/// rarest word is always kept). bm25 must score every matching note, and a few common words
/// can match a third of 100k notes; they also weigh least in bm25, so the head of the
/// ranking barely moves. Each word's count is read up to the cap only.
/// `visible` are the ids of the skill's visible notes, sorted: with at most `max_matches`
/// matches, bm25 runs on the full-text table alone and visibility is checked in memory.
/// `skill` ANDs the words with the skill's token: worth it when the skill is a small part of
/// the store (bm25 then scores only its matches); `None` when the skill is most of the store,
/// where the AND would only walk the skill's whole posting list.
pub fn fts_pruned(
    conn: &Connection,
    skill: Option<&str>,
    visible: &[i64],
    intent: &str,
    limit: usize,
    max_matches: i64,
) -> Result<Vec<(i64, f64)>> {
    let words = query_words(intent);
    if words.is_empty() {
        return Ok(vec![]);
    }
    if max_matches == i64::MAX {
        return fts_in_memory(conn, visible, &within_skill(skill, &or_query(&words)), limit);
    }
    // How many notes each word matches, counted up to the cap (reading at most that much
    // of its posting list).
    let mut count =
        conn.prepare_cached("SELECT count(*) FROM (SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?1 LIMIT ?2)")?;
    let mut dfs: Vec<(i64, String)> = vec![];
    let mut seen = std::collections::BTreeSet::new();
    for w in words.iter().filter(|w| seen.insert(w.as_str())) {
        let df: i64 =
            count.query_row(params![within_skill(skill, &format!("\"{w}\"")), max_matches + 1], |r| r.get(0))?;
        dfs.push((df, w.clone()));
    }
    dfs.sort();
    let mut kept = std::collections::BTreeSet::new();
    let mut total = 0;
    for (df, w) in dfs {
        if !kept.is_empty() && total + df > max_matches {
            break;
        }
        total += df;
        kept.insert(w);
    }
    let words: Vec<String> = words.into_iter().filter(|w| kept.contains(w)).collect();
    fts_in_memory(conn, visible, &within_skill(skill, &or_query(&words)), limit)
}

/// bm25 over the full-text table alone, visibility checked against `visible` (sorted ids):
/// the same answer as the join in [`fts`], without a notes-table lookup per match.
fn fts_in_memory(conn: &Connection, visible: &[i64], q: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, bm25(notes_fts, 2.0, 1.0, 0.0) AS score FROM notes_fts WHERE notes_fts MATCH ?1 ORDER BY score, rowid",
    )?;
    let mut rows = stmt.query([q])?;
    let mut out = vec![];
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        if visible.binary_search(&id).is_ok() {
            out.push((id, r.get(1)?));
            if out.len() == limit {
                break;
            }
        }
    }
    Ok(out)
}

/// The words of an intent as the bm25 rung queries them: every word (letters and digits,
/// lower-cased) in the order written, repeats kept. No stop-word list: bm25's IDF already
/// weighs a word by how rare it is among the notes (a word in more than half of them counts
/// for nothing), while a fixed English list also throws away words that carry the meaning of
/// a coding intent ("not", "no", "out", "up", "after", "before", "again", "keeps", "all").
/// Repeats are bm25's query-term frequency: a word said twice counts twice.
pub fn query_words(text: &str) -> Vec<String> {
    crate::embed::hash::words(text)
}

/// `words` as an FTS5 query: each quoted (so no word can be read as FTS syntax), OR-ed.
fn or_query(words: &[String]) -> String {
    words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR ")
}

/// An FTS5 query that ORs the words of `text` ([`query_words`]). `None` when nothing is left.
pub fn fts_query(text: &str) -> Option<String> {
    let words = query_words(text);
    (!words.is_empty()).then(|| or_query(&words))
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
    let mut stmt = conn.prepare(
        "SELECT skill, count(*), sum(pinned), sum(recalls) FROM notes
         WHERE (scope = 'project' AND project_id = ?1) OR scope = 'global' GROUP BY skill ORDER BY skill",
    )?;
    let rows = stmt.query_map([project], |r| {
        Ok(SkillCount { skill: r.get(0)?, notes: r.get(1)?, pinned: r.get(2)?, recalls: r.get(3)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many visible notes have no vector of `model`.
pub fn stale_vectors(conn: &Connection, project: &str, model: Option<&str>) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM notes WHERE ((scope = 'project' AND project_id = ?1) OR scope = 'global')
         AND (vector IS NULL OR vector_model IS NOT ?2)",
        params![project, model],
        |r| r.get(0),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_stays_within_its_skill() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let mk = |skill: &str, delta: &str| NewNote {
            skill: skill.into(),
            kind: super::super::Kind::Gotcha,
            intent: String::new(),
            delta: delta.into(),
            tags: vec![],
            scope: Scope::Global,
            source: super::super::Source::Agent,
            session_id: None,
            skill_hash: None,
        };
        let (a, _) = write(&mut conn, "p", &mk("jq", "rebase the widgets"), None, 0.9, None).unwrap();
        write(&mut conn, "p", &mk("git-rebase", "rebase the branch"), None, 0.9, None).unwrap();
        let (u, _) = write(&mut conn, "p", &mk("café-tools", "rebase with accents"), None, 0.9, None).unwrap();
        let got: Vec<i64> = fts(&conn, "jq", "p", "rebase", 10).unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![a]);
        let got: Vec<i64> = fts(&conn, "café-tools", "p", "rebase", 10).unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![u]);
        let visible = vec![a];
        let got: Vec<i64> = fts_pruned(&conn, Some("jq"), &visible, "rebase widgets", 10, 1)
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(got, vec![a]);
        // A word that spells another skill's token finds nothing of that skill.
        let token = skill_token("git-rebase").trim_matches('"').to_string();
        assert!(fts(&conn, "jq", "p", &token, 10).unwrap().is_empty());
    }

    #[test]
    fn fts_query_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Cannot iterate over null", Some("\"cannot\" OR \"iterate\" OR \"over\" OR \"null\"")),
            ("the of", Some("\"the\" OR \"of\"")),
            ("", None),
            (" -- ?! ", None),
            (
                "AND OR NOT \"quoted\" col:umn*",
                Some("\"and\" OR \"or\" OR \"not\" OR \"quoted\" OR \"col\" OR \"umn\""),
            ),
            ("jq jq JQ", Some("\"jq\" OR \"jq\" OR \"jq\"")),
        ];
        for (text, want) in cases {
            assert_eq!(fts_query(text).as_deref(), *want, "{text:?}");
        }
    }
}

// ---- curation: listing, export, import ----------------------------------------------------
// (`engine/curate.rs`: the dashboard's and the CLI's `notes`, `export`, `import`, `doctor`.)

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
    let mut w = vec!["1".to_string()];
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
    if let Some(p) = q.pinned {
        let a = arg(args, V::Integer(p as i64));
        w.push(format!("notes.pinned = {a}"));
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
        Ok(Listed { note: note_from_row(r)?, project_id: r.get(15)?, current_vector: r.get::<_, i64>(16)? != 0 })
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
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4",
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
/// pin; `drop` is deleted. Inside the caller's transaction.
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
    tx.execute("DELETE FROM notes WHERE id = ?1", [drop])?;
    Ok(())
}

/// Merges note `drop` into note `keep` (both of one skill): `keep` takes its hits, recalls
/// and pin, `drop` is deleted.
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
            project_id: r.get(15)?,
            norm_hash: r.get(16)?,
            vector_model: r.get(17)?,
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

/// Writes `rows` in ONE transaction: an exact duplicate (same skill, scope, partition and
/// normalised text) or a near duplicate (cosine ≥ `threshold` among vectors of `model` in the
/// same partition, including notes imported earlier in the same run) bumps the existing
/// note's hits instead. Any failure rolls the whole import back.
pub fn import(
    conn: &mut Connection,
    rows: &[ImportRow],
    model: Option<&str>,
    threshold: f32,
) -> Result<Vec<(i64, WriteStatus)>> {
    use std::collections::HashMap;
    let tx = write_tx(conn)?;
    let mut out = Vec::with_capacity(rows.len());
    // The vectors of each (skill, scope, partition) met so far, with the notes imported into it.
    type Partition = (String, String, String);
    let mut vectors: HashMap<Partition, Vec<(i64, Vec<f32>)>> = HashMap::new();
    {
        let mut exact = tx.prepare_cached(
            "SELECT id FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND norm_hash = ?4",
        )?;
        let mut part = tx.prepare_cached(
            "SELECT id, vector FROM notes WHERE skill = ?1 AND scope = ?2 AND project_id = ?3 AND vector_model = ?4",
        )?;
        let mut bump = tx.prepare_cached("UPDATE notes SET hits = hits + 1, last_used_at = ?2 WHERE id = ?1")?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits,
                                recalls, pinned, norm_hash, skill_hash, created_at, updated_at, vector, vector_model)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        )?;
        let now = now_ms();
        for row in rows {
            let n = &row.note;
            let pkey = if n.scope == Scope::Global { String::new() } else { row.project_id.clone() };
            let hash = norm_hash(&n.delta);
            let key = (n.skill.clone(), n.scope.as_str().to_string(), pkey.clone());
            let found: Option<i64> =
                exact.query_row(params![n.skill, n.scope.as_str(), pkey, hash], |r| r.get(0)).optional()?;
            let found = match (found, model, &row.vector) {
                (Some(id), _, _) => Some(id),
                (None, Some(m), Some(v)) if v.iter().any(|x| *x != 0.0) => {
                    if !vectors.contains_key(&key) {
                        let got = part
                            .query_map(params![n.skill, n.scope.as_str(), pkey, m], |r| {
                                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                            })?
                            .filter_map(|r| r.ok())
                            .filter_map(|(id, b)| from_blob(&b).map(|v| (id, v)))
                            .collect();
                        vectors.insert(key.clone(), got);
                    }
                    vectors[&key]
                        .iter()
                        .filter(|(_, w)| w.len() == v.len())
                        .map(|(id, w)| (*id, crate::embed::dot(v, w)))
                        .filter(|(_, s)| *s >= threshold)
                        .max_by(|a, b| a.1.total_cmp(&b.1))
                        .map(|(id, _)| id)
                }
                _ => None,
            };
            if let Some(id) = found {
                bump.execute(params![id, now])?;
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
                n.source,
                n.kind,
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
            ])?;
            let id = tx.last_insert_rowid();
            if let Some(v) = &row.vector {
                vectors.entry(key).or_default().push((id, v.clone()));
            }
            out.push((id, WriteStatus::Inserted));
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

/// The ids of every note with a vector of `model`, ascending.
pub fn ids_with_vectors(conn: &Connection, model: &str) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT id FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL ORDER BY id")?;
    let rows = stmt.query_map([model], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every skill with notes, with its count (all projects).
pub fn skills_with_notes(conn: &Connection) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare("SELECT skill, count(*) FROM notes GROUP BY skill ORDER BY skill")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
