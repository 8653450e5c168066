//! The full-text queries over `notes_fts` (bm25 within a skill, pruned for large corpora).

use super::*;

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
pub(super) fn within_skill<'a>(skill: impl Into<Option<&'a str>>, words: &str) -> String {
    match skill.into() {
        Some(skill) => format!("{} AND ({words})", skill_token(skill)),
        None => words.to_string(),
    }
}

fn fts_match(conn: &Connection, skill: &str, project: &str, q: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT notes.id, bm25(notes_fts, 2.0, 1.0, 0.0) AS score FROM notes_fts JOIN notes ON notes.id = notes_fts.rowid
         WHERE notes_fts MATCH ?3 AND notes.skill = ?1 AND {} ORDER BY score, notes.id LIMIT {limit}",
        visible_from(2)
    ))?;
    let q = within_skill(skill, q);
    let rows = stmt.query_map(params![skill, project, q], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// [`fts`] for large corpora: every word of `intent`, bm25 over the full-text table alone,
/// visibility checked against `visible` (sorted ids); `skill` as in [`fts_pruned`].
pub fn fts_every_word(
    conn: &Connection,
    skill: Option<&str>,
    visible: &[i64],
    intent: &str,
    limit: usize,
) -> Result<Vec<(i64, f64)>> {
    let words = query_words(intent);
    if words.is_empty() {
        return Ok(vec![]);
    }
    fts_in_memory(conn, visible, &within_skill(skill, &or_query(&words)), limit)
}

/// [`fts`] for very large skills: the words of `intent` that match the most notes are left
/// out, rarest first, until the words kept match at most `max_matches` notes in all (the
/// rarest word is always kept, and when it alone matches more, only its newest
/// `max_matches` matches are scored). bm25 must score every matching note, and a few common
/// words can match a third of 100k notes; they also weigh least in bm25, so the head of the
/// ranking barely moves. Each word's count is read up to the cap only.
/// `visible` are the ids of the skill's visible notes, sorted: with at most `max_matches`
/// matches, bm25 runs on the full-text table alone and visibility is checked in memory.
/// `skill` ANDs the words with the skill's token: worth it when the skill is a small part of
/// the store (bm25 then scores only its matches); `None` when the skill is most of the store,
/// where the AND would only walk the skill's whole posting list.
/// `count` gives a word's [`fts_count_upto`] (within `skill`, up to `max_matches + 1`): the
/// function itself, or counts kept while no note changes (the same intent words come back load
/// after load, and counting them was a third of this rung).
pub fn fts_pruned(
    conn: &Connection,
    skill: Option<&str>,
    visible: &[i64],
    intent: &str,
    limit: usize,
    max_matches: i64,
    count: &mut dyn FnMut(&str) -> Result<i64>,
) -> Result<Vec<(i64, f64)>> {
    match prune_words(intent, max_matches, count)? {
        Some(p) => fts_pruned_words(conn, skill, visible, &p, limit),
        None => Ok(vec![]),
    }
}

/// The words [`fts_pruned`] scores of an intent: those kept, in the intent's order with
/// their repeats (each is one of FTS5's phrases), each with its count (up to the cap).
#[derive(Debug, Clone, PartialEq)]
pub struct PrunedWords {
    pub words: Vec<String>,
    pub counts: std::collections::HashMap<String, i64>,
    /// Even the rarest word matches more notes than are scored: only its newest
    /// `max_matches` matches are.
    pub newest: Option<i64>,
}

/// The words of `intent` [`fts_pruned`] keeps (see there); `None` when it has none.
pub fn prune_words(
    intent: &str,
    max_matches: i64,
    count: &mut dyn FnMut(&str) -> Result<i64>,
) -> Result<Option<PrunedWords>> {
    let words = query_words(intent);
    if words.is_empty() {
        return Ok(None);
    }
    // How many notes each word matches, counted up to the cap.
    let mut dfs: Vec<(i64, String)> = vec![];
    let mut seen = std::collections::BTreeSet::new();
    for w in words.iter().filter(|w| seen.insert(w.as_str())) {
        dfs.push((count(w)?, w.clone()));
    }
    dfs.sort();
    let mut counts = std::collections::HashMap::new();
    let mut total = 0;
    for (df, w) in dfs {
        if !counts.is_empty() && total + df > max_matches {
            break;
        }
        total += df;
        counts.insert(w, df);
    }
    let words: Vec<String> = words.into_iter().filter(|w| counts.contains_key(w)).collect();
    Ok(Some(PrunedWords { words, counts, newest: (total > max_matches).then_some(max_matches) }))
}

/// bm25 through FTS5 over the words `p` kept ([`prune_words`]).
pub fn fts_pruned_words(
    conn: &Connection,
    skill: Option<&str>,
    visible: &[i64],
    p: &PrunedWords,
    limit: usize,
) -> Result<Vec<(i64, f64)>> {
    let q = within_skill(skill, &or_query(&p.words));
    if let Some(newest) = p.newest {
        // Even the rarest word matches more notes than bm25 scores: only its newest
        // `max_matches` matches are scored (scoring all 40,000 matches of a common word took
        // 24 ms, the tail of a 90,000-note skill's loads).
        return fts_newest(conn, visible, &q, limit, newest);
    }
    fts_in_memory(conn, visible, &q, limit)
}

/// How many notes match `word` (one word of [`query_words`]; within `skill` when given),
/// counted up to `cap` only: at most that much of its posting list is read.
pub fn fts_count_upto(conn: &Connection, skill: Option<&str>, word: &str, cap: i64) -> Result<i64> {
    // The cap is written into the statement: a bound LIMIT makes SQLite prepare the statement
    // again on every run (its planner reads the bound value; see [`fts_newest`]).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?1 LIMIT {cap})"
    ))?;
    Ok(stmt.query_row([within_skill(skill, &format!("\"{}\"", word.replace('"', "")))], |r| r.get(0))?)
}

/// [`fts_in_memory`] over the newest `newest` matches of `q` only (by rowid: FTS5 walks its
/// posting lists from the end and stops there).
fn fts_newest(conn: &Connection, visible: &[i64], q: &str, limit: usize, newest: i64) -> Result<Vec<(i64, f64)>> {
    // `newest` is written into the statement, not bound: SQLite's planner reads a bound LIMIT's
    // value, and binding it again (even to the same value) makes every run prepare the
    // statement anew (measured with `StatementStatus::RePrepare`: once a run).
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT rowid, score FROM (SELECT rowid, bm25(notes_fts, 2.0, 1.0, 0.0) AS score FROM notes_fts
         WHERE notes_fts MATCH ?1 ORDER BY rowid DESC LIMIT {newest}) ORDER BY score, rowid",
    ))?;
    let mut rows = stmt.query([q])?;
    visible_head(&mut rows, visible, limit)
}

/// bm25 over the full-text table alone, visibility checked against `visible` (sorted ids):
/// the same answer as the join in [`fts`], without a notes-table lookup per match.
fn fts_in_memory(conn: &Connection, visible: &[i64], q: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, bm25(notes_fts, 2.0, 1.0, 0.0) AS score FROM notes_fts WHERE notes_fts MATCH ?1 ORDER BY score, rowid",
    )?;
    let mut rows = stmt.query([q])?;
    visible_head(&mut rows, visible, limit)
}

/// The first `limit` rows (rowid, score) whose rowid is among `visible` (sorted).
fn visible_head(rows: &mut rusqlite::Rows<'_>, visible: &[i64], limit: usize) -> Result<Vec<(i64, f64)>> {
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

/// How many notes of the store (current or not, as FTS5's bm25 counts) hold `word` (one word
/// of [`query_words`]).
pub fn fts_doc_count(conn: &Connection, word: &str) -> Result<i64> {
    let mut stmt = conn.prepare_cached("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1")?;
    Ok(stmt.query_row([format!("\"{}\"", word.replace('"', ""))], |r| r.get(0))?)
}

/// The notes holding `word` (as [`fts_doc_count`] counts them) among those of id above
/// `after`: what an insert since a count added to it.
pub fn fts_doc_count_after(conn: &Connection, word: &str, after: i64) -> Result<i64> {
    let mut stmt = conn.prepare_cached("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1 AND rowid > ?2")?;
    Ok(stmt.query_row(params![format!("\"{}\"", word.replace('"', "")), after], |r| r.get(0))?)
}

/// Terms of the full-text index with the notes holding each ([`fts_frequent_terms`]).
pub type TermCounts = Vec<(String, i64)>;

/// The full-text index's terms held by at least `min_docs` notes (current or not, as
/// [`fts_doc_count`] counts them), with those counts; and, read in the same transaction, the
/// store's count of text changes ([`text_changes`]) and its highest note id: the counts hold
/// while the one stays, with the notes inserted past the other added. One pass over the index
/// (FTS5's `fts5vocab`, a table of this connection's own).
pub fn fts_frequent_terms(conn: &Connection, min_docs: i64) -> Result<(TermCounts, i64, i64)> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.notes_fts_terms USING fts5vocab(main, notes_fts, row)",
    )?;
    // One read transaction: the counts, the changes and the last id of the same moment.
    let tx = conn.unchecked_transaction()?;
    let changes = text_changes(&tx)?;
    let last: i64 = tx.query_row("SELECT coalesce(max(id), 0) FROM notes", [], |r| r.get(0))?;
    let terms = {
        let mut stmt = tx.prepare("SELECT term, doc FROM temp.notes_fts_terms WHERE doc >= ?1")?;
        let rows = stmt.query_map([min_docs], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<Vec<_>, _>>()?
    };
    tx.commit()?;
    Ok((terms, changes, last))
}

/// Calls `f` with (rowid, tokens) of every row of the full-text table: its length as FTS5's
/// bm25 reads it (`notes_fts_docsize`: the tokens of every column, the skill's token included).
pub fn fts_doc_lengths(conn: &Connection, mut f: impl FnMut(i64, u64)) -> Result<()> {
    let mut stmt = conn.prepare("SELECT id, sz FROM notes_fts_docsize")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if let rusqlite::types::ValueRef::Blob(b) = r.get_ref(1)? {
            f(r.get(0)?, doc_size(b));
        }
    }
    Ok(())
}

/// Row `id`'s length in tokens (as [`fts_doc_lengths`]); `None` when the table has no such row.
pub fn fts_doc_length(conn: &Connection, id: i64) -> Result<Option<u64>> {
    let mut stmt = conn.prepare_cached("SELECT sz FROM notes_fts_docsize WHERE id = ?1")?;
    let sz: Option<Vec<u8>> = stmt.query_row([id], |r| r.get(0)).optional()?;
    Ok(sz.map(|b| doc_size(&b)))
}

/// The tokens of a docsize record: a varint per column, summed.
fn doc_size(mut b: &[u8]) -> u64 {
    let mut n = 0u64;
    while let Some((v, used)) = varint(b) {
        n = n.saturating_add(v);
        b = &b[used..];
    }
    n
}

/// Calls `f` with (rowid, column) of every instance of the full-text index's term `term` (a
/// token as FTS5 stores it: lower-cased, stemmed), by rowid: what bm25 counts of a word in a
/// row, read without bm25 (which looks each row's length up in the table, a statement a row).
pub fn fts_instances(conn: &Connection, term: &str, mut f: impl FnMut(i64, FtsColumn)) -> Result<()> {
    const SQL: &str = "SELECT doc, col FROM temp.notes_fts_instances WHERE term = ?1";
    let mut stmt = match conn.prepare_cached(SQL) {
        Ok(s) => s,
        Err(_) => {
            // The table is this connection's own, made at its first use.
            conn.execute_batch(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.notes_fts_instances USING fts5vocab(main, notes_fts, instance)",
            )?;
            conn.prepare_cached(SQL)?
        }
    };
    let mut rows = stmt.query([term])?;
    while let Some(r) = rows.next()? {
        let col = match r.get_ref(1)? {
            rusqlite::types::ValueRef::Text(b"intent") => FtsColumn::Intent,
            rusqlite::types::ValueRef::Text(b"delta") => FtsColumn::Delta,
            _ => FtsColumn::Other,
        };
        f(r.get(0)?, col);
    }
    Ok(())
}

/// A column of the full-text table, as bm25 weighs it (`bm25(notes_fts, 2.0, 1.0, 0.0)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FtsColumn {
    Intent,
    Delta,
    /// The skill's token.
    Other,
}

/// How many times a note's text changed or a note was deleted (migration 0024): what can
/// lower a word's count.
pub fn text_changes(conn: &Connection) -> Result<i64> {
    Ok(conn.prepare_cached("SELECT n FROM text_changes")?.query_row([], |r| r.get(0))?)
}

/// [`text_changes`] and the highest note id, read together.
pub fn text_changes_and_last(conn: &Connection) -> Result<(i64, i64)> {
    let mut stmt =
        conn.prepare_cached("SELECT (SELECT n FROM text_changes), (SELECT coalesce(max(id), 0) FROM notes)")?;
    Ok(stmt.query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// What FTS5's bm25 reads from the full-text table's averages record (`notes_fts_data`, id
/// 1): how many rows it holds (every note, current or not) and how many tokens they hold in
/// all, over every column. bm25 compares a note's length with `tokens / rows`.
pub fn fts_totals(conn: &Connection) -> Result<(i64, i64)> {
    let mut stmt = conn.prepare_cached("SELECT block FROM notes_fts_data WHERE id = 1")?;
    let block: Option<Vec<u8>> = stmt.query_row([], |r| r.get(0)).optional()?;
    Ok(block.map(|b| averages(&b)).unwrap_or((0, 0)))
}

/// Decodes an FTS5 averages record: a varint of rows, then a varint of tokens per column.
fn averages(mut b: &[u8]) -> (i64, i64) {
    let mut next = || {
        let (v, n) = varint(b)?;
        b = &b[n..];
        Some(v as i64)
    };
    let rows = next().unwrap_or(0);
    let mut tokens = 0i64;
    while let Some(t) = next() {
        tokens = tokens.saturating_add(t);
    }
    (rows, tokens)
}

/// SQLite's variable-length integer (as FTS5 writes it): big-endian groups of 7 bits, the
/// high bit set on every byte but the last, and a ninth byte of 8 bits. The value and the
/// bytes it took; `None` on an empty or cut-short input.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((v << 8) | x as u64, 9));
        }
        v = (v << 7) | (x & 0x7f) as u64;
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        type Case = (&'static [u8], Option<(u64, usize)>);
        let table: &[Case] = &[
            (&[0x00], Some((0, 1))),
            (&[0x7f], Some((127, 1))),
            (&[0x81, 0x00], Some((128, 2))),
            (&[0x82, 0x2c, 0x05], Some((300, 2))),
            (&[0xff, 0x7f], Some((16383, 2))),
            (&[0x81, 0x80, 0x00], Some((16384, 3))),
            (&[0x80; 8], None),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], Some((u64::MAX, 9))),
            (&[], None),
            (&[0x81], None),
        ];
        for (bytes, want) in table {
            assert_eq!(varint(bytes), *want, "{bytes:02x?}");
        }
        assert_eq!(averages(&[0x03, 0x05, 0x81, 0x00, 0x03]), (3, 5 + 128 + 3));
        assert_eq!(averages(&[]), (0, 0));
    }

    /// A global gotcha of `skill` written by the agent.
    fn note(skill: &str, intent: &str, delta: &str) -> NewNote {
        NewNote { scope: Scope::Global, ..NewNote::gotcha(skill, intent, delta) }
    }

    /// The averages record holds what counting the table gives: its rows and its tokens
    /// (each row also holds its skill's token).
    #[test]
    fn totals_count_the_table() {
        let d = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(d.path()).unwrap();
        assert_eq!(fts_totals(&conn).unwrap(), (0, 0));
        let mk = |intent: &str, delta: &str| note("jq", intent, delta);
        write(&mut conn, "p", &mk("", "one two three"), None, 0.9, None).unwrap();
        write(&mut conn, "p", &mk("csv", "quote the fields"), None, 0.9, None).unwrap();
        let (x, _) = write(&mut conn, "p", &mk("", "xylophones"), None, 0.9, None).unwrap();
        assert_eq!(fts_totals(&conn).unwrap(), (3, (3 + 1) + (1 + 3 + 1) + (1 + 1)));
        purge(&mut conn, x, "p", None).unwrap();
        assert_eq!(fts_totals(&conn).unwrap(), (2, (3 + 1) + (1 + 3 + 1)));
    }

    #[test]
    fn bm25_stays_within_its_skill() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let mk = |skill: &str, delta: &str| note(skill, "", delta);
        let (a, _) = write(&mut conn, "p", &mk("jq", "rebase the widgets"), None, 0.9, None).unwrap();
        write(&mut conn, "p", &mk("git-rebase", "rebase the branch"), None, 0.9, None).unwrap();
        let (u, _) = write(&mut conn, "p", &mk("café-tools", "rebase with accents"), None, 0.9, None).unwrap();
        let got: Vec<i64> = fts(&conn, "jq", "p", "rebase", 10).unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![a]);
        let got: Vec<i64> = fts(&conn, "café-tools", "p", "rebase", 10).unwrap().into_iter().map(|x| x.0).collect();
        assert_eq!(got, vec![u]);
        let visible = vec![a];
        let mut count = |w: &str| fts_count_upto(&conn, Some("jq"), w, 2);
        let got: Vec<i64> = fts_pruned(&conn, Some("jq"), &visible, "rebase widgets", 10, 1, &mut count)
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
    fn a_word_too_common_to_score_is_scored_over_its_newest_matches() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        // The oldest note says "rebase" three times: the best over all matches. The other
        // three are alike (one "rebase" in as many words), so they rank by id.
        let mut ids = vec![];
        for delta in
            ["rebase rebase rebase", "rebase the branch", "rebase then push", "rebase onto main", "cherry pick"]
        {
            ids.push(write(&mut conn, "p", &note("jq", "", delta), None, 0.9, None).unwrap().0);
        }
        let got = |intent: &str, max: i64| -> Vec<i64> {
            let found = if max == i64::MAX {
                fts_every_word(&conn, None, &ids, intent, 10)
            } else {
                let mut count = |w: &str| fts_count_upto(&conn, None, w, max + 1);
                fts_pruned(&conn, None, &ids, intent, 10, max, &mut count)
            };
            found.unwrap().into_iter().map(|x| x.0).collect()
        };
        // (intent, the cap on matches scored (none: every word), the notes found, best first)
        let cases: &[(&str, i64, &[usize])] = &[
            ("rebase", i64::MAX, &[0, 1, 2, 3]),
            // At the cap every match is still scored.
            ("rebase", 4, &[0, 1, 2, 3]),
            // Over it, only the newest two of the rarest word's matches.
            ("rebase", 2, &[2, 3]),
            // A rarer word under the cap is scored alone; the common one is left out.
            ("cherry rebase", 2, &[4]),
        ];
        for (intent, max, want) in cases {
            let want: Vec<i64> = want.iter().map(|&i| ids[i]).collect();
            assert_eq!(got(intent, *max), want, "{intent:?} at most {max}");
        }
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
