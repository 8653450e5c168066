//! A large skill's bm25 rung without FTS5's `bm25()`: the rows' lengths held, the words'
//! instances read from the index.
//!
//! A 90,000-note skill's bm25 rung scores up to [`FTS_MAX_MATCHES`] notes through FTS5
//! (the words pruned first: [`store::prune_words`]). For every note it scores, `bm25()` looks
//! the note's length up in `notes_fts_docsize`: a statement run a row, two-thirds of the rung's
//! time (perf: the B-tree descents and the statements' steps, 0.3 ms of a load). Here the
//! lengths of every row of the full-text table are held (two bytes a row: 200 KB at 100,000
//! notes), read in one pass off the recalls' path, and the words' occurrences are read from
//! the index as they are (`fts5vocab`'s instances: a row per occurrence, no lookup). The score
//! is FTS5's bm25, computed as `fts5Bm25Function` computes it, operation for operation, so the
//! ranking is the same to the bit ([`bm25_of_instances`]'s test holds it to FTS5's).
//!
//! The lengths hold while no note's text changes and no note is deleted
//! ([`store::text_changes`]); a row written since is looked up on its own.
//!
//! [`FTS_MAX_MATCHES`]: crate::memory::recall::FTS_MAX_MATCHES

use std::collections::HashMap;

use rusqlite::Connection;

use super::super::store::{self, FtsColumn, PrunedWords};
use super::{porter, B, K1, W_DELTA, W_INTENT};
use crate::error::Result;

/// A length not held: looked up (a row written since, or one of 65,535 tokens or more).
const UNKNOWN: u16 = u16::MAX;

/// The full-text table's rows' lengths in tokens (see the module docs).
#[derive(Debug)]
pub struct DocLengths {
    /// [`store::text_changes`] when read: they hold while it stays.
    changes: i64,
    /// By rowid.
    lens: Vec<u16>,
}

impl DocLengths {
    /// Reads the lengths of every row through `conn`; `None` when the rowids are too sparse
    /// to hold by position (more than four ids a row).
    pub fn read(conn: &Connection) -> Result<Option<DocLengths>> {
        let tx = conn.unchecked_transaction()?;
        let (changes, last) = store::text_changes_and_last(&tx)?;
        let (rows, _) = store::fts_totals(&tx)?;
        if last < 0 || last > 4 * rows.max(1024) {
            return Ok(None);
        }
        let mut lens = vec![UNKNOWN; last as usize + 1];
        store::fts_doc_lengths(&tx, |id, n| {
            if let Some(l) = usize::try_from(id).ok().and_then(|i| lens.get_mut(i)) {
                *l = u16::try_from(n).unwrap_or(UNKNOWN);
            }
        })?;
        tx.commit()?;
        Ok(Some(DocLengths { changes, lens }))
    }

    /// Whether they are still the rows' (`changes` is [`store::text_changes`] now).
    pub fn valid_at(&self, changes: i64) -> bool {
        self.changes == changes
    }

    /// Bytes held (for logs).
    pub fn heap_bytes(&self) -> usize {
        self.lens.capacity() * 2
    }

    /// Row `id`'s length, looked up through `conn` when not held; `None` when there is no
    /// such row.
    fn get(&self, conn: &Connection, id: i64) -> Result<Option<f64>> {
        match usize::try_from(id).ok().and_then(|i| self.lens.get(i)) {
            Some(&l) if l != UNKNOWN => Ok(Some(f64::from(l))),
            _ => Ok(store::fts_doc_length(conn, id)?.map(|n| n as f64)),
        }
    }
}

/// What [`store::fts_pruned_words`] answers for `p` (FTS5's bm25 over the words kept, the
/// rows `visible` says are, best first, at most `limit`), from the held `lens` and
/// the words' instances. `totals` are FTS5's rows and their average length in tokens
/// ([`super::StoreCounts::totals`]). `None`
/// when it cannot answer the same: when only a word's newest matches are scored, for a word
/// FTS5 might split or fold otherwise than a plain ASCII word, or for a row of no length.
pub fn bm25_of_instances(
    conn: &Connection,
    lens: &DocLengths,
    visible: &dyn Fn(i64) -> bool,
    p: &PrunedWords,
    totals: (f64, f64),
    limit: usize,
) -> Result<Option<Vec<(i64, f64)>>> {
    if p.newest.is_some() || !p.words.iter().all(|w| w.bytes().all(|b| b.is_ascii_alphanumeric())) {
        return Ok(None);
    }
    let n = p.words.len();
    // Each phrase's frequency in each row that holds one: `fts5Bm25Function`'s `aFreq`.
    let mut row_of: crate::index::IdMap<usize> = Default::default();
    let mut docs: Vec<i64> = vec![];
    let mut freq: Vec<f64> = vec![];
    let mut idf = Vec::with_capacity(n);
    let (rows, avgdl) = totals;
    let mut stem = vec![];
    let mut read: HashMap<&str, Vec<(i64, f64)>> = HashMap::new();
    for (i, w) in p.words.iter().enumerate() {
        let Some(&hit) = p.counts.get(w) else { return Ok(None) };
        // Whole numbers below 2^53: as exact as FTS5's integer subtraction.
        let x = (rows - hit as f64 + 0.5) / (hit as f64 + 0.5);
        let x = x.ln();
        idf.push(if x <= 0.0 { 1e-6 } else { x });
        if !read.contains_key(w.as_str()) {
            porter::stem_into(w.as_bytes(), &mut stem);
            let Ok(term) = std::str::from_utf8(&stem) else { return Ok(None) };
            let mut list = vec![];
            store::fts_instances(conn, term, |doc, col| {
                let weight = match col {
                    FtsColumn::Intent => W_INTENT,
                    FtsColumn::Delta => W_DELTA,
                    FtsColumn::Other => 0.0,
                };
                list.push((doc, weight));
            })?;
            read.insert(w, list);
        }
        for &(doc, weight) in &read[w.as_str()] {
            let r = *row_of.entry(doc).or_insert_with(|| {
                docs.push(doc);
                freq.extend(std::iter::repeat_n(0.0, n));
                docs.len() - 1
            });
            freq[r * n + i] += weight;
        }
    }
    let mut scored: Vec<(f64, i64)> = Vec::with_capacity(docs.len());
    for (r, &doc) in docs.iter().enumerate() {
        if !visible(doc) {
            continue;
        }
        let Some(d) = lens.get(conn, doc)? else { return Ok(None) };
        let mut score = 0.0f64;
        for (i, f) in freq[r * n..(r + 1) * n].iter().enumerate() {
            score += idf[i] * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl)));
        }
        scored.push((-score, doc));
    }
    // FTS5's `ORDER BY score, rowid` (SQLite compares numbers by value: -0.0 is 0.0), the
    // visible ones' head.
    let order =
        |a: &(f64, i64), b: &(f64, i64)| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1));
    if scored.len() > limit {
        if limit > 0 {
            scored.select_nth_unstable_by(limit - 1, order);
        }
        scored.truncate(limit);
    }
    scored.sort_by(order);
    Ok(Some(scored.into_iter().map(|(s, id)| (id, s)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::NewNote;

    /// A small deterministic generator (no dependency): xorshift.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
        /// Skewed to the first words, as prose is.
        fn word<'a>(&mut self, words: &[&'a str]) -> &'a str {
            let a = self.below(words.len());
            words[self.below(a + 1)]
        }
    }

    const WORDS: &[&str] = &[
        "the",
        "rebase",
        "rebases",
        "rebased",
        "branch",
        "push",
        "force",
        "widget",
        "widgets",
        "quote",
        "csv",
        "fields",
        "null",
        "iterate",
        "jq",
        "cargo",
        "test",
        "tests",
        "testing",
        "lock",
        "locks",
        "uv",
        "sync",
        "python",
        "cache",
        "caches",
        "caching",
        "docker",
        "build",
        "layer",
        "layers",
        "nginx",
        "restart",
        "reload",
        "settings",
        "timeout",
        "retry",
        "retries",
        "flaky",
        "ci",
        "runner",
        "token",
        "tokens",
        "path",
        "paths",
        "1",
        "42",
        "x86",
        "arm64",
        "v2",
        "sk6a71",
        "generalization",
        "relational",
        "hopeful",
    ];

    fn text(r: &mut Rng, most: usize) -> String {
        let n = 1 + r.below(most);
        (0..n).map(|_| r.word(WORDS)).collect::<Vec<_>>().join(" ")
    }

    /// The same notes, best first, with the same scores to the bit as FTS5's `bm25()` over
    /// the same pruned words: for intents of repeated words, stems, words no note holds, a
    /// word only an intent holds, numbers; every note visible and a part of them; with notes
    /// written after the lengths were read (looked up); until a text changes (stale).
    #[test]
    fn ranks_as_fts5_to_the_bit() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let write = |conn: &mut Connection, r: &mut Rng, i: usize| -> i64 {
            let skill = ["jq", "git", "docker"][r.below(3)];
            let intent = if r.below(3) == 0 { String::new() } else { text(r, 5) };
            let delta = format!("{} n{i}", text(r, 12));
            let new = NewNote::gotcha(skill, &intent, &delta);
            store::write(conn, "p", &new, None, 0.9, None).unwrap().0
        };
        let mut ids: Vec<i64> = (0..400).map(|i| write(&mut conn, &mut r, i)).collect();
        let lens = DocLengths::read(&conn).unwrap().expect("dense ids");
        // Written after: their lengths are looked up.
        ids.extend((400..430).map(|i| write(&mut conn, &mut r, i)));
        ids.sort_unstable();
        let some: Vec<i64> = ids.iter().copied().filter(|id| id % 3 != 0).collect();
        let (rows, tokens) = store::fts_totals(&conn).unwrap();
        let totals = (rows as f64, tokens as f64 / rows as f64);
        let mut intents: Vec<String> = vec![
            "rebase".into(),
            "rebase rebase branch".into(),
            "Rebased widgets".into(),
            "caching caches cache".into(),
            "generalization relational hopeful".into(),
            "nothing matches zzz".into(),
            "42 x86 arm64".into(),
            "sk6a71".into(),
            "n17 the".into(),
        ];
        intents.extend((0..150).map(|_| text(&mut r, 4)));
        let mut compared = 0;
        for intent in &intents {
            for max in [5i64, 40, 500] {
                let mut count = |w: &str| store::fts_count_upto(&conn, None, w, max + 1);
                let Some(p) = store::prune_words(intent, max, &mut count).unwrap() else { continue };
                for visible in [&ids, &some] {
                    for limit in [3, 50] {
                        let want = store::fts_pruned_words(&conn, None, visible, &p, limit).unwrap();
                        let seen = |id: i64| visible.binary_search(&id).is_ok();
                        let got = bm25_of_instances(&conn, &lens, &seen, &p, totals, limit).unwrap();
                        match got {
                            Some(got) => {
                                let bits =
                                    |v: &[(i64, f64)]| v.iter().map(|(i, s)| (*i, s.to_bits())).collect::<Vec<_>>();
                                assert_eq!(bits(&got), bits(&want), "{intent:?} at most {max}, limit {limit}");
                                compared += 1;
                            }
                            None => assert!(
                                p.newest.is_some(),
                                "{intent:?} at most {max}: only a word's newest matches are left to FTS5"
                            ),
                        }
                    }
                }
            }
        }
        assert!(compared > 600, "{compared} rankings compared");
        assert!(lens.valid_at(store::text_changes(&conn).unwrap()), "inserts leave the lengths valid");
        conn.execute("UPDATE notes SET delta = 'changed' WHERE id = ?1", [ids[0]]).unwrap();
        assert!(!lens.valid_at(store::text_changes(&conn).unwrap()), "a changed text makes them stale");
    }

    /// Too sparse a table of rowids is not held by position.
    #[test]
    fn sparse_rowids_are_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let new = NewNote::gotcha("jq", "", "one lesson");
        store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
        assert!(DocLengths::read(&conn).unwrap().is_some());
        // A note of a high id (an id is the highest before it, plus one).
        conn.execute("UPDATE notes SET id = 1000000", []).unwrap();
        let new = NewNote::gotcha("jq", "", "a later lesson");
        let (id, _) = store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
        assert!(id > 1_000_000, "{id}");
        assert!(DocLengths::read(&conn).unwrap().is_none());
    }
}
