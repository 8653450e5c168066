//! Stored vectors and word pieces: what the index loads, and what re-embedding reads and writes.

use super::*;

/// Loads into `index` the stored vectors of `ids` it does not hold yet (notes written by
/// another process sharing the data directory).
pub fn ensure_vectors(conn: &Connection, index: &dyn VectorIndex, ids: &[i64]) -> Result<()> {
    let missing = index.missing(ids);
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

/// Loads the stored vector of `model` of every current note into `index` (history stays out:
/// a retired note in the index would only take a neighbour's place).
pub fn load_index(conn: &Connection, index: &dyn VectorIndex) -> Result<usize> {
    let mut stmt = conn.prepare(
        "SELECT id, vector FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL AND retired_at IS NULL",
    )?;
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

/// Streams the stored vector of `model` of every current note into `sink` (the index's
/// background loader).
pub fn stream_vectors(conn: &Connection, model: &str, sink: &mut dyn FnMut(i64, Vec<f32>)) -> Result<usize> {
    let mut stmt = conn.prepare(
        "SELECT id, vector FROM notes WHERE vector_model = ?1 AND vector IS NOT NULL AND retired_at IS NULL",
    )?;
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
        let n: i64 =
            conn.prepare_cached(OTHER_MODEL_COUNT)?.query_row(params![model, (dim * 4) as i64], |r| r.get(0))?;
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
            // Another model's table made the pieces token matching reads, if any: the run
            // that stores them ([`unmatched_batch`]) makes them anew.
            "UPDATE notes SET vector = ?2, vector_model = ?3, match_pieces = NULL
             WHERE id = ?1 AND intent = ?4 AND delta = ?5",
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

/// How many current notes have no pieces for token matching stored with them
/// ([`Note::match_pieces`]): a few index entries once the run after a start stored them.
pub fn count_unmatched(conn: &Connection) -> Result<usize> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM notes WHERE match_pieces IS NULL AND retired_at IS NULL")?
        .query_row([], |r| r.get(0))?;
    Ok(n as usize)
}

/// The next `limit` current notes past id `after` without pieces for token matching, by id:
/// (id, intent, delta).
pub fn unmatched_batch(conn: &Connection, after: i64, limit: usize) -> Result<Vec<(i64, String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, intent, delta FROM notes WHERE match_pieces IS NULL AND retired_at IS NULL AND id > ?1
         ORDER BY id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![after, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Stores the pieces for token matching of notes as `(id, intent, delta, pieces)`: only where
/// the note still has that text and none (an edit meanwhile stored its own). One transaction
/// for all. Returns how many were stored.
pub fn set_match_pieces(conn: &mut Connection, rows: &[(i64, &str, &str, &[u8])]) -> Result<usize> {
    if rows.is_empty() {
        return Ok(0);
    }
    let tx = write_tx(conn)?;
    let mut n = 0;
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE notes SET match_pieces = ?2 WHERE id = ?1 AND intent = ?3 AND delta = ?4 AND match_pieces IS NULL",
        )?;
        for (id, intent, delta, p) in rows {
            n += stmt.execute(params![id, p, intent, delta])?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `i`-th note of a test: a global lesson of skill `s`.
    fn mk(i: usize) -> NewNote {
        NewNote { scope: Scope::Global, ..NewNote::gotcha("s", "", &format!("lesson {i}")) }
    }

    /// Token matching's pieces: stored by a write and read by recall's loads; cleared by a
    /// text change that does not bring new ones, and by a re-embedding; the notes without
    /// them are counted and batched from the partial index, and filled where the text is
    /// still the one they were made from.
    #[test]
    fn match_pieces_follow_the_text_they_were_made_from() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let v = [0.6f32, 0.8];
        let blob = |i: u8| vec![1u8, 2, 3, 4, i, 0];
        let mut ids = vec![];
        for i in 0..4u8 {
            let b = blob(i);
            let emb = Embedded { vector: &v, model: "m", matched: (i < 3).then_some(&b[..]) };
            ids.push(write(&mut conn, "p", &mk(i as usize), Some(emb), 2.0, None).unwrap().0);
        }
        let stored = |c: &Connection, id: i64| -> Option<Box<[u8]>> { load(c, &[id]).unwrap()[0].match_pieces.clone() };
        assert_eq!(stored(&conn, ids[0]).as_deref(), Some(&blob(0)[..]));
        assert_eq!(stored(&conn, ids[3]), None);
        assert_eq!(get(&conn, ids[0]).unwrap().unwrap().match_pieces, None, "only recall's loads read them");
        assert_eq!(count_unmatched(&conn).unwrap(), 1);
        // (statement, note, what is left): a text change clears them, other changes do not,
        // a text change that brings its own keeps those.
        let cases: Vec<(&str, i64, Option<Vec<u8>>)> = vec![
            ("UPDATE notes SET hits = hits + 1 WHERE id = ?1", ids[0], Some(blob(0))),
            ("UPDATE notes SET delta = delta WHERE id = ?1", ids[0], Some(blob(0))),
            ("UPDATE notes SET delta = 'new words' WHERE id = ?1", ids[0], None),
            (
                "UPDATE notes SET intent = 'a case', match_pieces = x'010203040900' WHERE id = ?1",
                ids[1],
                Some(vec![1, 2, 3, 4, 9, 0]),
            ),
        ];
        for (sql, id, want) in cases {
            conn.execute(sql, [id]).unwrap();
            assert_eq!(stored(&conn, id).map(|b| b.to_vec()), want, "{sql}");
        }
        // A re-embedding clears them: another model's table made them.
        let n = &load(&conn, &[ids[2]]).unwrap()[0];
        set_vectors(&mut conn, "m2", &[(n.id, n.intent.clone(), n.delta.clone())], &[v.to_vec()]).unwrap();
        assert_eq!(stored(&conn, ids[2]), None);
        // Retired notes are not waited for.
        retire(&mut conn, ids[3], "p", None, None).unwrap();
        assert_eq!(count_unmatched(&conn).unwrap(), 2);
        let batch = unmatched_batch(&conn, 0, 10).unwrap();
        assert_eq!(batch.iter().map(|r| r.0).collect::<Vec<_>>(), vec![ids[0], ids[2]]);
        assert_eq!(unmatched_batch(&conn, ids[0], 10).unwrap().len(), 1);
        // Filled where the text is the one read; a note edited meanwhile is left alone.
        let rows: Vec<(i64, &str, &str, &[u8])> = vec![
            (batch[0].0, &batch[0].1, "an older text", &[1, 2, 3, 4, 7, 0]),
            (batch[1].0, &batch[1].1, &batch[1].2, &[1, 2, 3, 4, 8, 0]),
        ];
        assert_eq!(set_match_pieces(&mut conn, &rows).unwrap(), 1);
        assert_eq!(stored(&conn, ids[2]).as_deref(), Some(&[1u8, 2, 3, 4, 8, 0][..]));
        assert_eq!(count_unmatched(&conn).unwrap(), 1);
        // The count and the batch read the partial index, not the table.
        for sql in ["SELECT count(*) FROM notes WHERE match_pieces IS NULL AND retired_at IS NULL",
                    "SELECT id, intent, delta FROM notes WHERE match_pieces IS NULL AND retired_at IS NULL AND id > 0 ORDER BY id LIMIT 5"] {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap()
                .query_map([], |r| r.get(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            assert!(plan.iter().any(|p| p.contains("notes_unmatched")), "{sql}: {plan:?}");
        }
    }

    /// The count of notes whose vector another model made, taken from the index, is the plain
    /// condition's count, and reads no note row.
    #[test]
    fn other_model_count_is_the_plain_count_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
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
            let emb = v.map(|v| Embedded { vector: v, model: model.unwrap_or(""), matched: None });
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
}
