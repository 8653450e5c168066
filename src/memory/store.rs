//! Notes in SQLite: writes with duplicate detection, edits, and the reads recall needs.
//!
//! Every write runs in one `BEGIN IMMEDIATE` transaction ([`crate::db::write_tx`]). A project
//! note is partitioned by its project identity, a global note by the empty partition key, so
//! that writes and duplicate detection stay within one scope and partition.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{norm_hash, Kind, NewNote, Note, Scope, Source, WriteStatus};
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
    let source: String = r.get(4)?;
    let kind: String = r.get(5)?;
    let tags: String = r.get(8)?;
    Ok(Note {
        id: r.get(0)?,
        skill: r.get(1)?,
        scope: Scope::parse(&scope).unwrap_or(Scope::Project),
        origin_project: r.get(3)?,
        // Every row is written from the enums; a spelling this version does not know (a newer
        // writer) reads as the most general one rather than failing the whole recall.
        source: Source::parse(&source).unwrap_or(Source::Agent),
        kind: Kind::parse(&kind).unwrap_or(Kind::Discovery),
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
    Error::unknown_note(id)
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

/// The one "visible from a project" predicate: the notes of the project bound to SQL
/// parameter `?n` (its own partition) plus every global note.
pub fn visible_from(n: usize) -> String {
    format!("((scope = 'project' AND project_id = ?{n}) OR scope = 'global')")
}

/// Every note of `skill` visible from `project` (its own plus global).
pub fn candidates(conn: &Connection, skill: &str, project: &str) -> Result<Vec<Candidate>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, pinned, hits, created_at FROM notes WHERE skill = ?1 AND {} ORDER BY id",
        visible_from(2)
    ))?;
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
         WHERE notes_fts MATCH ?3 AND notes.skill = ?1 AND {} ORDER BY score, notes.id LIMIT ?4",
        visible_from(2)
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
    crate::text::words(text)
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
    let mut stmt = conn.prepare(&format!(
        "SELECT skill, count(*), sum(pinned), sum(recalls) FROM notes WHERE {} GROUP BY skill ORDER BY skill",
        visible_from(1)
    ))?;
    let rows = stmt.query_map([project], |r| {
        Ok(SkillCount { skill: r.get(0)?, notes: r.get(1)?, pinned: r.get(2)?, recalls: r.get(3)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many visible notes have no vector of `model`.
pub fn stale_vectors(conn: &Connection, project: &str, model: Option<&str>) -> Result<i64> {
    Ok(conn.query_row(
        &format!("SELECT count(*) FROM notes WHERE {} AND (vector IS NULL OR vector_model IS NOT ?2)", visible_from(1)),
        params![project, model],
        |r| r.get(0),
    )?)
}

/// How many notes of the whole store have no vector of `model` (`None`: embedding off).
pub fn unembedded(conn: &Connection, model: Option<&str>) -> Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM notes WHERE vector IS NULL OR vector_model IS NOT ?1", [model], |r| {
        r.get(0)
    })?)
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

/// The facts of one note as recall's catalog keeps them, borrowed from the row being read.
pub struct Facts<'a> {
    pub id: i64,
    pub skill: &'a str,
    pub global: bool,
    /// The partition key: the project of a project note, "" for a global one.
    pub partition: &'a str,
    pub pinned: bool,
    pub hits: i64,
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
    const COLUMNS: &str = "SELECT id, skill, scope, project_id, pinned, hits, created_at FROM notes";
    let mut stmt = match only {
        Some(_) => conn.prepare_cached(&format!("{COLUMNS} WHERE id = ?1"))?,
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
            hits: r.get(5)?,
            created_at: r.get(6)?,
        });
    }
    Ok(())
}

/// Which notes a re-embedding run takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// Without a vector, or with one of another model or dimension (`distill`).
    Any,
    /// With a vector of another model or dimension (the background run after a start).
    OtherModel,
    /// With a vector of the model but without its pieces (a model that has them: see
    /// [`set_pieces`]).
    Pieceless,
}

impl Stale {
    /// The condition, over `?1` = the model id and `?2` = the vector's length in bytes.
    fn sql(self) -> &'static str {
        match self {
            Stale::Any => "(vector IS NULL OR vector_model IS NOT ?1 OR length(vector) != ?2)",
            Stale::OtherModel => "(vector IS NOT NULL AND (vector_model IS NOT ?1 OR length(vector) != ?2))",
            Stale::Pieceless => {
                "(vector_model = ?1 AND length(vector) = ?2
                  AND NOT EXISTS (SELECT 1 FROM note_pieces p WHERE p.note_id = notes.id AND p.model = ?1))"
            }
        }
    }
}

/// [`Stale::OtherModel`]'s count over `?1` = the model id and `?2` = the vector's length in
/// bytes, as disjoint ranges of the index `notes_by_vector_model`.
const OTHER_MODEL_COUNT: &str = "SELECT (SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model IS NULL)
      + (SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model < ?1)
      + (SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model > ?1)
      + (SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model = ?1 AND length(vector) < ?2)
      + (SELECT count(*) FROM notes WHERE vector IS NOT NULL AND vector_model = ?1 AND length(vector) > ?2)";

/// How many notes of the whole store are `which` for `model` of `dim` numbers.
pub fn count_stale(conn: &Connection, which: Stale, model: &str, dim: usize) -> Result<usize> {
    if which == Stale::OtherModel {
        // The same condition as five disjoint ranges of `notes_by_vector_model`: a few index
        // seeks when (as usual) almost every vector is the current model's, where the plain
        // condition reads every note row. The server asks after every request.
        let n: i64 = conn.query_row(OTHER_MODEL_COUNT, params![model, (dim * 4) as i64], |r| r.get(0))?;
        return Ok(n as usize);
    }
    let n: i64 = conn.query_row(
        &format!("SELECT count(*) FROM notes WHERE {}", which.sql()),
        params![model, (dim * 4) as i64],
        |r| r.get(0),
    )?;
    Ok(n as usize)
}

/// The next `limit` notes past id `after` that are `which` for `model` of `dim` numbers, by
/// id: (id, intent, delta).
pub fn stale_batch(
    conn: &Connection,
    which: Stale,
    model: &str,
    dim: usize,
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, String, String)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, intent, delta FROM notes WHERE id > ?3 AND {} ORDER BY id LIMIT ?4",
        which.sql()
    ))?;
    let rows = stmt
        .query_map(params![model, (dim * 4) as i64, after, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Stores re-embedded vectors of `model`, one transaction for all: `(id, intent, delta)` as
/// [`stale_batch`] read them. A note whose text changed meanwhile is left alone (it got its
/// vector from the edit). Returns the indices into `rows` that were written.
pub fn set_vectors(
    conn: &mut Connection,
    model: &str,
    rows: &[(i64, String, String)],
    vectors: &[Vec<f32>],
) -> Result<Vec<usize>> {
    let mut written = vec![];
    let tx = write_tx(conn)?;
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE notes SET vector = ?2, vector_model = ?3 WHERE id = ?1 AND intent = ?4 AND delta = ?5",
        )?;
        for (i, ((id, intent, delta), v)) in rows.iter().zip(vectors).enumerate() {
            if stmt.execute(params![id, to_blob(v), model, intent, delta])? == 1 {
                written.push(i);
            }
        }
    }
    tx.commit()?;
    Ok(written)
}

/// Stores the pieces by `model` of notes as `(id, intent, delta, pieces)`: only where the
/// note still has that text (a note edited meanwhile gets its pieces from the edit). One
/// transaction for all. Returns how many were stored.
pub fn set_pieces(
    conn: &mut Connection,
    model: &str,
    rows: &[(i64, &str, &str, &crate::embed::Pieces)],
) -> Result<usize> {
    if rows.is_empty() {
        return Ok(0);
    }
    let tx = write_tx(conn)?;
    let mut n = 0;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT OR REPLACE INTO note_pieces (note_id, model, pieces)
             SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM notes WHERE id = ?1 AND intent = ?4 AND delta = ?5)",
        )?;
        for (id, intent, delta, p) in rows {
            n += stmt.execute(params![id, model, p.to_blob(), intent, delta])?;
        }
    }
    tx.commit()?;
    Ok(n)
}

/// The pieces by `model` of those of `ids` that have them (a blob that does not read is
/// left out, as if missing).
pub fn pieces(
    conn: &Connection,
    model: &str,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, crate::embed::Pieces>> {
    let mut stmt = conn.prepare_cached(
        "SELECT note_id, pieces FROM note_pieces WHERE model = ?1 AND note_id IN (SELECT value FROM json_each(?2))",
    )?;
    let list = serde_json::to_string(ids).map_err(|e| Error::invalid(e.to_string()))?;
    let rows = stmt.query_map(params![model, list], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut out = std::collections::HashMap::new();
    for row in rows {
        let (id, blob) = row?;
        if let Some(p) = crate::embed::Pieces::from_blob(&blob) {
            out.insert(id, p);
        }
    }
    Ok(out)
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

/// The vectors of `model` of the notes of `skill` visible from `project`, oldest first, at
/// most `limit` (duplicate pairs in the corpus report). Rows whose vector cannot be read are
/// skipped.
pub fn skill_vectors(
    conn: &Connection,
    project: &str,
    skill: &str,
    model: &str,
    limit: usize,
) -> Result<Vec<(i64, Vec<f32>)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, vector FROM notes WHERE {} AND skill = ?2 AND vector_model = ?3 ORDER BY id LIMIT ?4",
        visible_from(1)
    ))?;
    let rows = stmt.query_map(params![project, skill, model, limit as i64], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    Ok(rows.filter_map(|r| r.ok()).filter_map(|(id, b)| from_blob(&b).map(|v| (id, v))).collect())
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

    /// The count of notes whose vector another model made, taken from the index, is the plain
    /// condition's count, and reads no note row.
    #[test]
    fn other_model_count_is_the_plain_count_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let mk = |i: usize| NewNote {
            skill: "s".into(),
            kind: super::super::Kind::Gotcha,
            intent: String::new(),
            delta: format!("lesson {i}"),
            tags: vec![],
            scope: Scope::Global,
            source: super::super::Source::Agent,
            session_id: None,
            skill_hash: None,
        };
        let (v2, v3) = (vec![0.6f32, 0.8], vec![0.6f32, 0.8, 0.0]);
        // (vector, model): none, the current one, a shorter or longer one of the same model,
        // models before and after it in byte order, and a vector without a model.
        let rows: Vec<(Option<&[f32]>, Option<&str>)> = vec![
            (None, None),
            (Some(&v2), Some("m")),
            (Some(&v2), Some("m")),
            (Some(&v3), Some("m")),
            (Some(&v2[..1]), Some("m")),
            (Some(&v2), Some("a")),
            (Some(&v2), Some("z")),
            (Some(&v2), Some("")),
            (Some(&v2), None),
        ];
        for (i, (v, model)) in rows.iter().enumerate() {
            let emb = v.map(|v| Embedded { vector: v, model: model.unwrap_or("") });
            let (id, _) = write(&mut conn, "p", &mk(i), emb, 2.0, None).unwrap();
            if v.is_some() && model.is_none() {
                conn.execute("UPDATE notes SET vector_model = NULL WHERE id = ?1", [id]).unwrap();
            }
        }
        for (model, dim) in [("m", 2usize), ("m", 3), ("a", 2), ("zz", 1), ("", 2)] {
            let plain: i64 = conn
                .query_row(
                    &format!("SELECT count(*) FROM notes WHERE {}", Stale::OtherModel.sql()),
                    params![model, (dim * 4) as i64],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(count_stale(&conn, Stale::OtherModel, model, dim).unwrap() as i64, plain, "{model} {dim}");
        }
        assert_eq!(count_stale(&conn, Stale::OtherModel, "m", 2).unwrap(), 6);
        // Of the current model's two notes with a whole vector, those without its pieces.
        assert_eq!(count_stale(&conn, Stale::Pieceless, "m", 2).unwrap(), 2);
        let batch = stale_batch(&conn, Stale::Pieceless, "m", 2, 0, 10).unwrap();
        assert_eq!(batch.len(), 2);
        let p = crate::embed::Pieces::from_rows(2, vec![1], &[1.0, 0.0]);
        let (id, intent, delta) = &batch[0];
        set_pieces(&mut conn, "m", &[(*id, intent, delta, &p)]).unwrap();
        assert_eq!(count_stale(&conn, Stale::Pieceless, "m", 2).unwrap(), 1);
        // Pieces of another model do not count.
        let (id, intent, delta) = &batch[1];
        set_pieces(&mut conn, "other", &[(*id, intent, delta, &p)]).unwrap();
        assert_eq!(count_stale(&conn, Stale::Pieceless, "m", 2).unwrap(), 1);
        assert_eq!(pieces(&conn, "m", &[batch[0].0, batch[1].0]).unwrap().len(), 1);
        // Every part of the count seeks a range of the index (rows are read only for the notes
        // in it, which are the stale ones): no scan of the table.
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {OTHER_MODEL_COUNT}")).unwrap();
        let plan: Vec<String> = stmt.query_map(params!["m", 8], |r| r.get(3)).unwrap().map(|r| r.unwrap()).collect();
        let scans: Vec<&String> = plan.iter().filter(|p| p.contains("notes")).collect();
        assert_eq!(scans.len(), 5, "{plan:?}");
        assert!(
            scans.iter().all(|p| p.starts_with("SEARCH notes USING") && p.contains("notes_by_vector_model")),
            "{plan:?}"
        );
    }

    /// Every statement over a table lives in its store module: the notes (and their full-text
    /// index) here, the skill uses in `memory/usage.rs`, the hook's sessions in
    /// `hosts/store.rs`. Test modules are left out (schema tests write rows of older
    /// schemas by hand), and so is the full-text self-heal at open in `db/` (schema-level).
    #[test]
    fn every_statement_over_a_table_lives_in_its_store() {
        let rules: &[(&[&str], &str)] = &[
            (&["from notes", "into notes", "update notes", "delete from notes", "notes_fts"], "src/memory/store.rs"),
            (&["skill_uses"], "src/memory/usage.rs"),
            (&["host_sessions"], "src/hosts/store.rs"),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![];
        let mut dirs = vec![root.join("src")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 20, "the source tree is where it was expected: {}", root.display());
        let mut wrong = vec![];
        for file in files {
            let rel = file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&file).unwrap();
            let mut code = match text.find("#[cfg(test)]\nmod ") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            if rel == "src/db/mod.rs" {
                if let Some(a) = code.find("fn heal_fts(") {
                    let b = code[a..].find("\n}\n").map_or(code.len(), |b| a + b);
                    code.replace_range(a..b, "");
                }
            }
            for (n, line) in code.lines().enumerate() {
                let lower = line.to_lowercase();
                if lower.trim_start().starts_with("//") {
                    continue;
                }
                for (patterns, home) in rules {
                    if rel != *home && patterns.iter().any(|p| lower.contains(p)) {
                        wrong.push(format!("{rel}:{}: {} (belongs in {home})", n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "statements outside their store module:\n{}", wrong.join("\n"));
    }
}

// ---- team sync ----
//
// The local side of team memory (src/team/, docs/team.md, migration 0006_team): the outbox the
// triggers fill, the uid of each shared note, the pull cursor, and applying what a pull
// brought. Pulled changes are applied with `team_applying` holding a row, so that the triggers
// do not send them back.

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
}

const TEAM_NOTE_COLUMNS: &str = "n.skill, n.scope, n.project_id, n.origin_project, n.source, n.kind, n.intent, n.delta, n.tags, n.pinned, n.hits, n.norm_hash, n.created_at, n.updated_at";

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
        tx.execute("INSERT INTO team_outbox (kind, note_id, hits) SELECT 'note', id, hits FROM notes ORDER BY id", [])?;
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
            // Another local note may hold that uid already (an edit made two notes say the
            // same); the first keeps it.
            match map.execute(params![note_id, uid, held]) {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::ConstraintViolation => {}
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
/// is known here updates that note (a pin, an edit, a scope move, the team's hit count),
/// except for what this machine changed and has not pushed yet (that change comes later in
/// the server's sequence, so it wins); a tombstone deletes it; a new uid that says exactly
/// what a local note says is merged into it; any other is inserted. `model` stamps the
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
                if tx.execute("DELETE FROM notes WHERE id = ?1", [id])? > 0 {
                    out.removed.push(id);
                }
                tx.execute("DELETE FROM team_notes WHERE note_id = ?1", [id])?;
                tx.execute("DELETE FROM team_outbox WHERE note_id = ?1", [id])?;
            }
            continue;
        }
        if local.is_none() {
            let same: Option<(i64, Option<String>)> = tx
                .query_row(
                    "SELECT n.id, t.uid FROM notes n LEFT JOIN team_notes t ON t.note_id = n.id
                     WHERE n.skill = ?1 AND n.scope = ?2 AND n.project_id = ?3 AND n.norm_hash = ?4",
                    params![n.skill, n.scope, n.project_id, n.norm_hash],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
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
        }
        let Some(id) = local else {
            if n.scope == "project" && !with_project {
                continue;
            }
            tx.execute(
                "INSERT INTO notes (skill, scope, project_id, origin_project, source, kind, intent, delta, tags, hits,
                                    pinned, norm_hash, created_at, updated_at, vector, vector_model)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
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
                    n.norm_hash,
                    n.created_at,
                    now,
                    row.vector.as_deref().map(to_blob),
                    row.vector.as_ref().and(model),
                ],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute("INSERT INTO team_notes (note_id, uid) VALUES (?1, ?2)", params![id, row.uid])?;
            out.inserted.push(id);
            if row.vector.is_some() {
                out.reembedded.push(id);
            }
            continue;
        };
        // What this machine changed and has not pushed yet.
        let (pending_hits, pin, edit, scope): (i64, i64, i64, i64) = tx.query_row(
            "SELECT COALESCE(sum(CASE WHEN kind IN ('note', 'hit') THEN hits END), 0),
                    count(CASE WHEN kind = 'pin' THEN 1 END), count(CASE WHEN kind = 'edit' THEN 1 END),
                    count(CASE WHEN kind = 'scope' THEN 1 END)
             FROM team_outbox WHERE note_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        tx.execute("UPDATE notes SET hits = ?2 WHERE id = ?1", params![id, n.hits + pending_hits])?;
        if pin == 0 {
            tx.execute(
                "UPDATE notes SET pinned = ?2 WHERE id = ?1 AND pinned IS NOT ?2",
                params![id, n.pinned as i64],
            )?;
        }
        if edit == 0 {
            let changed = tx.execute(
                "UPDATE notes SET delta = ?2, intent = ?3, norm_hash = ?4, tags = ?5, updated_at = ?6, vector = ?7,
                        vector_model = ?8 WHERE id = ?1 AND delta IS NOT ?2",
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
            );
            match changed {
                Ok(k) if k > 0 => out.reembedded.push(id),
                Ok(_) => {}
                // Another note here already says exactly that: keep both as they are.
                Err(rusqlite::Error::SqliteFailure(f, _)) if f.code == rusqlite::ErrorCode::ConstraintViolation => {}
                Err(e) => return Err(e.into()),
            }
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
        out.updated.push(id);
    }
    tx.execute("DELETE FROM team_applying", [])?;
    tx.execute("UPDATE team_state SET cursor = max(cursor, ?1), last_pull_at = ?2 WHERE id = 1", params![cursor, now])?;
    tx.commit()?;
    Ok(out)
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
pub fn import_rows(
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
