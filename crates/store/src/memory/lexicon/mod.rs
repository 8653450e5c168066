//! The bm25 rung in memory, over one skill's visible notes: between writes, a small skill's
//! recall costs what the skill holds, not what the store holds.
//!
//! FTS5's `bm25()` counts, for every word of the query, the notes of the *whole store* that
//! hold it (it walks each word's posting list) before it scores a single match, so a recall
//! over a 1,000-note skill in a 100,000-note store paid for 100,000 notes on every call (0.45
//! ms of a 2.2 ms round trip). Here each skill of at most [`LEXICON_MAX`] visible notes gets
//! an inverted index of its own, built from its notes once and kept while the skill's
//! candidate list (the catalog's, new with every write to the skill) stays the same; the
//! store-wide counts bm25 weighs a word and a length by (how many notes hold the word, how
//! many notes there are, how many tokens they hold) are read from FTS5 once and kept until a
//! note is written, changed or removed ([`Catalog::generation`]). The counts of every word
//! two notes or more hold are read ahead in one pass over the index, off the recalls' path,
//! and hold across inserts ([`Frequent`]): each count FTS5 makes costs about 0.1 ms.
//!
//! The words are FTS5's (`porter unicode61`: letters and digits, lower-cased, Porter's
//! stems, [`porter`]). The score is FTS5's bm25, term for term in the same order: the same
//! constants (k1 1.2, b 0.75), column weights (intent 2, lesson 1), document length (every
//! token of the row, the skill's token included), average length and IDF, over the whole
//! store. So a recall that finds no index for its skill asks FTS5 instead and gets the same
//! ranking ([`LexiconCache::search`]): an index is never built on a recall's path, but by
//! whoever serves the recall, after answering ([`LexiconCache::take_wanted`]).
//! Counting IDF within the skill instead was tried and lost on all four recall sets (bm25
//! alone, MRR@10: 0.513 → 0.499, 0.683 → 0.663, 0.645 → 0.615, 0.589 → 0.566): with tens of
//! notes a skill, a word's rarity among them is a noisy estimate.

mod lengths;
mod pieces;
mod porter;

pub use lengths::{bm25_of_instances, DocLengths};
pub use pieces::SkillPieces;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::catalog::Catalog;
use super::store::{self, Candidates};
use crate::error::Result;

/// Skills with at most this many visible notes are scored in memory; larger ones by FTS5
/// (pruned: see [`super::recall::FTS_PRUNE_MIN`]), where an index of their own would cost
/// more memory than it saves time.
pub const LEXICON_MAX: usize = 5000;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// The weights of the intent and the lesson (`bm25(notes_fts, 2.0, 1.0, 0.0)`).
const W_INTENT: f64 = 2.0;
const W_DELTA: f64 = 1.0;

/// (notes in the store, notes that hold a word) for a word: what bm25's IDF counts.
pub type StoreDf<'a> = dyn FnMut(&str) -> Result<(f64, f64)> + 'a;

/// The store's counts for [`Lexicon::search`]: each word's, and the average length of a
/// note in tokens.
pub struct Store<'a, 'b> {
    pub df: &'a mut StoreDf<'b>,
    pub avg_len: f64,
}

/// A kept lexicon and the candidate list it was built for.
type Kept = (Arc<Candidates>, Arc<Lexicon>);

/// One skill's inverted index, laid out flat: the stems end to end in one buffer, sorted,
/// and every posting in one array (a stem's postings one run of it). With a vector and a
/// map entry a stem, 99 skills of about 100 notes held 24 MB; flat, about 5 MB.
pub struct Lexicon {
    ids: Vec<i64>,
    /// Each note's length in tokens (intent, lesson and the skill's token), as FTS5 counts.
    lens: Vec<f32>,
    avg_len: f64,
    /// The stems (FTS5's bytes), sorted, end to end; the k-th ends at `stem_ends[k]`.
    stems: Vec<u8>,
    stem_ends: Vec<u32>,
    /// The k-th stem's postings are `postings[starts[k]..starts[k + 1]]`: (note index, the
    /// stem's weighted frequency in the note), by note. Lengths and frequencies are whole
    /// numbers (a word counts 2 in an intent, 1 in a lesson), exact as `f32`.
    starts: Vec<u32>,
    postings: Vec<(u32, f32)>,
}

/// A [`Lexicon`] being built, one note at a time.
#[derive(Default)]
struct Builder {
    ids: Vec<i64>,
    lens: Vec<f32>,
    terms: HashMap<Box<[u8]>, u32>,
    postings: Vec<Vec<(u32, f32)>>,
    scratch: Scratch,
}

/// Buffers reused while notes are added.
#[derive(Default)]
struct Scratch {
    word: String,
    stem: Vec<u8>,
    doc: Vec<(u32, f32)>,
}

/// Calls `f` with each token of `text` (FTS5's: letters and digits, lower-cased), written in
/// `buf`, without allocating per token.
fn each_token(text: &str, buf: &mut String, f: &mut dyn FnMut(&str)) {
    let mut flush = |buf: &mut String| {
        if !buf.is_empty() {
            f(buf);
            buf.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_ascii() {
                buf.push(c.to_ascii_lowercase());
            } else {
                buf.extend(c.to_lowercase());
            }
        } else {
            flush(buf);
        }
    }
    flush(buf);
}

impl Builder {
    /// Adds one note (its words stemmed into reused buffers: no allocation per word).
    fn add(&mut self, id: i64, intent: &str, delta: &str) {
        let i = self.ids.len() as u32;
        let Builder { terms, postings, scratch, .. } = self;
        let Scratch { word, stem, doc } = scratch;
        doc.clear();
        let mut len = 1.0;
        for (text, w) in [(intent, W_INTENT), (delta, W_DELTA)] {
            each_token(text, word, &mut |tok| {
                len += 1.0;
                porter::stem_into(tok.as_bytes(), stem);
                let t = match terms.get(stem.as_slice()) {
                    Some(t) => *t,
                    None => {
                        let t = postings.len() as u32;
                        postings.push(vec![]);
                        terms.insert(stem.as_slice().into(), t);
                        t
                    }
                };
                doc.push((t, w as f32));
            });
        }
        doc.sort_unstable_by_key(|d| d.0);
        let mut k = 0;
        while k < doc.len() {
            let t = doc[k].0;
            let mut f = 0.0;
            while k < doc.len() && doc[k].0 == t {
                f += doc[k].1;
                k += 1;
            }
            postings[t as usize].push((i, f));
        }
        self.ids.push(id);
        self.lens.push(len);
    }

    /// The flat index of the notes added.
    fn finish(self) -> Lexicon {
        let avg_len = if self.lens.is_empty() {
            1.0
        } else {
            self.lens.iter().map(|l| f64::from(*l)).sum::<f64>() / self.lens.len() as f64
        };
        let mut terms: Vec<(Box<[u8]>, u32)> = self.terms.into_iter().collect();
        terms.sort_unstable();
        let total: usize = self.postings.iter().map(Vec::len).sum();
        let mut lex = Lexicon {
            ids: self.ids,
            lens: self.lens,
            avg_len,
            stems: Vec::with_capacity(terms.iter().map(|t| t.0.len()).sum()),
            stem_ends: Vec::with_capacity(terms.len()),
            starts: Vec::with_capacity(terms.len() + 1),
            postings: Vec::with_capacity(total),
        };
        lex.starts.push(0);
        for (stem, t) in terms {
            lex.stems.extend_from_slice(&stem);
            lex.stem_ends.push(lex.stems.len() as u32);
            lex.postings.extend_from_slice(&self.postings[t as usize]);
            lex.starts.push(lex.postings.len() as u32);
        }
        lex
    }
}

impl Lexicon {
    /// The index of `notes` (id, intent, lesson).
    pub fn build<'a>(notes: impl IntoIterator<Item = (i64, &'a str, &'a str)>) -> Lexicon {
        let mut b = Builder::default();
        for (id, intent, delta) in notes {
            b.add(id, intent, delta);
        }
        b.finish()
    }

    /// The postings of `stem`, if a note holds it.
    fn postings_of(&self, stem: &[u8]) -> Option<&[(u32, f32)]> {
        let at =
            |k: usize| &self.stems[if k == 0 { 0 } else { self.stem_ends[k - 1] as usize }..self.stem_ends[k] as usize];
        let (mut lo, mut hi) = (0, self.stem_ends.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match at(mid).cmp(stem) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return Some(&self.postings[self.starts[mid] as usize..self.starts[mid + 1] as usize])
                }
            }
        }
        None
    }

    /// The notes indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no note is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The notes that hold a word of `intent`, best first (ties by id), at most `limit`, each
    /// with its bm25 score negated (lower is better, as FTS5 answers). `store` gives the
    /// notes of the store, how many hold a word and their average length ([`StoreCounts`]);
    /// `None`: the skill's own.
    pub fn search(&self, intent: &str, limit: usize, mut store: Option<Store<'_, '_>>) -> Result<Vec<(i64, f64)>> {
        let avg_len = store.as_ref().map_or(self.avg_len, |s| s.avg_len);
        let mut score = vec![0f64; self.ids.len()];
        let mut matched = vec![false; self.ids.len()];
        // Each word of the query counts, repeats too (FTS5 takes each as a phrase).
        let mut stem = vec![];
        for word in crate::text::words(intent) {
            porter::stem_into(word.as_bytes(), &mut stem);
            let Some(list) = self.postings_of(&stem) else { continue };
            let (n, hit) = match store.as_mut() {
                Some(s) => (s.df)(&word)?,
                None => (self.ids.len() as f64, list.len() as f64),
            };
            let idf = ((n - hit + 0.5) / (hit + 0.5)).ln();
            let idf = if idf > 0.0 { idf } else { 1e-6 };
            for &(i, f) in list {
                let (i, f) = (i as usize, f64::from(f));
                let norm = K1 * (1.0 - B + B * f64::from(self.lens[i]) / avg_len);
                score[i] += idf * f * (K1 + 1.0) / (f + norm);
                matched[i] = true;
            }
        }
        let mut found: Vec<(f64, i64)> =
            (0..self.ids.len()).filter(|&i| matched[i]).map(|i| (score[i], self.ids[i])).collect();
        let order = |a: &(f64, i64), b: &(f64, i64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > limit {
            if limit > 0 {
                found.select_nth_unstable_by(limit - 1, order);
            }
            found.truncate(limit);
        }
        found.sort_by(order);
        Ok(found.into_iter().map(|(s, id)| (id, -s)).collect())
    }
}

/// How many notes hold each of the store's frequent words, read in one pass over the
/// full-text index ([`store::fts_frequent_terms`]), off the recalls' path: a word many notes
/// hold is the costly one to count (FTS5 reads its whole posting list: 0.3–1 ms at 100,000
/// notes), and intents bring new words load after load. The counts hold while the store's
/// text changes ([`store::text_changes`]) stay what they were; the notes inserted since (ids
/// past `last`) are counted on top, so they stay exact across the writes of a session.
pub struct Frequent {
    changes: i64,
    last: i64,
    /// By FTS5's term (a word's Porter stem).
    docs: HashMap<String, i64>,
}

/// Words held by at least this many notes are counted ahead ([`Frequent`]): each count FTS5
/// makes costs about 0.1 ms however few notes hold the word (it opens every segment of the
/// index), and a word of one note is most of a store's words (numbers, names, paths).
const FREQUENT_MIN: i64 = 2;

/// Frequent words held at most (the most frequent first).
const FREQUENT_HELD: usize = 65_536;

impl Frequent {
    /// The counts of `conn`'s store now.
    fn read(conn: &Connection) -> Result<Frequent> {
        let (mut terms, changes, last) = store::fts_frequent_terms(conn, FREQUENT_MIN)?;
        if terms.len() > FREQUENT_HELD {
            terms.select_nth_unstable_by(FREQUENT_HELD - 1, |a, b| b.1.cmp(&a.1));
            terms.truncate(FREQUENT_HELD);
        }
        Ok(Frequent { changes, last, docs: terms.into_iter().collect() })
    }

    /// How many notes hold `word` (a word of [`crate::text::words`]), when it is one of the
    /// frequent ones: its count then, and those of the notes inserted since (`inserted`: the
    /// store's last id is past [`Frequent::last`]). `None` for a word not held, or one FTS5
    /// might split or fold otherwise than a plain ASCII word.
    fn docs(&self, conn: &Connection, word: &str, inserted: bool) -> Result<Option<i64>> {
        if !word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Ok(None);
        }
        let mut stem = Vec::with_capacity(word.len());
        porter::stem_into(word.as_bytes(), &mut stem);
        let Some(then) = std::str::from_utf8(&stem).ok().and_then(|t| self.docs.get(t)) else { return Ok(None) };
        let since = if inserted { store::fts_doc_count_after(conn, word, self.last)? } else { 0 };
        Ok(Some(then + since))
    }
}

/// The store-wide counts of bm25, kept while the notes' generation is the same.
#[derive(Default)]
pub struct StoreCounts {
    generation: Option<u64>,
    /// The frequent words' counts, when they hold for the store now, and whether notes were
    /// inserted since they were read.
    frequent: Option<(Arc<Frequent>, bool)>,
    /// FTS5's rows and their average length in tokens ([`store::fts_totals`]).
    totals: Option<(f64, f64)>,
    df: HashMap<String, f64>,
    /// [`store::fts_count_upto`] by (skill, word, cap): what the pruned bm25 rung of a large
    /// skill counts ([`store::fts_pruned`]).
    upto: HashMap<(Option<String>, String, i64), i64>,
}

/// Words whose counts are kept at most.
const COUNTS_HELD: usize = 65_536;

impl StoreCounts {
    /// (notes in the store, their average length in tokens), as FTS5's bm25 reads them.
    pub fn totals(&mut self, conn: &Connection) -> Result<(f64, f64)> {
        if let Some(t) = self.totals {
            return Ok(t);
        }
        let (rows, tokens) = store::fts_totals(conn)?;
        let rows = rows as f64;
        // FTS5 divides as it is; with no rows there is no note to score either.
        let t = (rows, if rows > 0.0 { tokens as f64 / rows } else { 1.0 });
        Ok(*self.totals.insert(t))
    }

    /// (notes in the store, notes that hold `word`), as FTS5's bm25 counts them.
    fn get(&mut self, conn: &Connection, word: &str) -> Result<(f64, f64)> {
        let (rows, _) = self.totals(conn)?;
        if let Some(d) = self.df.get(word) {
            return Ok((rows, *d));
        }
        let d = match self.frequent.as_ref().map(|(f, new)| f.docs(conn, word, *new)).transpose()?.flatten() {
            Some(d) => d as f64,
            None => store::fts_doc_count(conn, word)? as f64,
        };
        if self.df.len() >= COUNTS_HELD {
            self.df.clear();
        }
        self.df.insert(word.to_string(), d);
        Ok((rows, d))
    }

    /// [`store::fts_count_upto`], kept. Over the whole store (`skill` `None`), a frequent
    /// word's count is [`Frequent`]'s when no note was inserted since it was read: FTS5's
    /// count of the word, capped, with no query (one cost about 27 µs of a large skill's load,
    /// for each intent word seen the first time).
    pub fn count_upto(&mut self, conn: &Connection, skill: Option<&str>, word: &str, cap: i64) -> Result<i64> {
        if let (None, Some((f, false))) = (skill, &self.frequent) {
            if let Some(n) = f.docs(conn, word, false)? {
                return Ok(n.min(cap));
            }
        }
        let key = (skill.map(str::to_string), word.to_string(), cap);
        if let Some(n) = self.upto.get(&key) {
            return Ok(*n);
        }
        let n = store::fts_count_upto(conn, skill, word, cap)?;
        if self.upto.len() >= COUNTS_HELD {
            self.upto.clear();
        }
        self.upto.insert(key, n);
        Ok(n)
    }
}

/// Each (skill, project)'s [`Lexicon`], kept while its candidate list is the same `Arc` (the
/// catalog hands out a new one when a note of the skill changes).
#[derive(Default)]
pub struct LexiconCache {
    map: Mutex<HashMap<(String, String), Kept>>,
    counts: Mutex<StoreCounts>,
    frequent: Mutex<Option<Arc<Frequent>>>,
    /// The catalog's generation when [`LexiconCache::warm_frequent`] last found the frequent
    /// words' counts to be the store's.
    frequent_checked: Mutex<Option<u64>>,
    builds: std::sync::atomic::AtomicUsize,
    /// The (skill, project)s a recall found no index for: to build after the answer
    /// ([`LexiconCache::take_wanted`]).
    wanted: Mutex<std::collections::BTreeSet<(String, String)>>,
    /// Someone builds indexes now ([`LexiconCache::begin_building`]).
    building: std::sync::atomic::AtomicBool,
    /// Large skills' token-matching pieces ([`SkillPieces`]), by skill.
    pieces: Mutex<HashMap<String, Arc<SkillPieces>>>,
    /// The full-text rows' lengths, for large skills' bm25 ([`DocLengths`]).
    lengths: Mutex<Option<Arc<DocLengths>>>,
}

/// Notes whose pieces [`LexiconCache::warm_pieces`] holds at most, over every large skill
/// (about 90 bytes a note). First come: a skill that does not fit beside those held is ranked
/// from its notes, as without them, rather than two skills pushing each other out at every
/// load (each read is a pass over the skill's notes). 6,000 in this crate's tests.
#[cfg(not(test))]
pub const PIECES_HELD: usize = 200_000;
#[cfg(test)]
pub const PIECES_HELD: usize = 6_000;

/// While held, indexes are being built; see [`LexiconCache::begin_building`].
pub struct Building<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Building<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Lexicons kept at most (one per skill and project), as many as the catalog's candidate
/// lists ([`crate::memory::catalog::LISTS_HELD`]): past it all are dropped and built again.
/// Each note is in one skill's index, so the indexes together hold the small skills' notes
/// once.
const LEXICONS_HELD: usize = crate::memory::catalog::LISTS_HELD;

impl LexiconCache {
    fn kept(&self, key: (&str, &str), cands: &Arc<Candidates>) -> Option<Arc<Lexicon>> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&(key.0.to_string(), key.1.to_string())).filter(|(c, _)| Arc::ptr_eq(c, cands)).map(|(_, l)| l.clone())
    }

    /// Indexes the skill's current notes among `cands` (read in one scan through `conn`) and
    /// keeps the index for `cands`.
    fn build(&self, conn: &Connection, key: (&str, &str), cands: &Arc<Candidates>) -> Result<Arc<Lexicon>> {
        let t = std::time::Instant::now();
        let visible = |id: i64| cands.index_of(id).is_some();
        let mut b = Builder::default();
        store::scan_texts(conn, key.0, &mut |id, intent, delta| {
            if visible(id) {
                b.add(id, intent, delta);
            }
        })?;
        let lex = b.finish();
        let notes = lex.len();
        let lex = Arc::new(lex);
        tracing::debug!("recall {}: bm25 index of {notes} notes built in {:?}", key.0, t.elapsed());
        self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= LEXICONS_HELD {
            map.clear();
        }
        map.insert((key.0.to_string(), key.1.to_string()), (cands.clone(), lex.clone()));
        Ok(lex)
    }

    /// Builds the index of `cands` ahead of the first recall (through `conn`, a connection of
    /// the caller's own, so that recalls do not wait for it), unless it is there already or
    /// the skill is too large for one ([`LEXICON_MAX`]). A write meanwhile gives the skill a new candidate list, for
    /// which this index is never used.
    pub fn warm(&self, conn: &Connection, key: (&str, &str), cands: &Arc<Candidates>) -> Result<()> {
        if cands.len() > LEXICON_MAX || self.kept(key, cands).is_some() {
            return Ok(());
        }
        self.build(conn, key, cands).map(|_| ())
    }

    /// Reads and holds the pieces of `skill`'s notes stored with table `tag` (a large skill's:
    /// see [`SkillPieces`]; about `notes` of them) through `conn`, unless those held are valid
    /// and miss fewer than one note in a hundred written since. Returns whether it read them.
    pub fn warm_pieces(&self, conn: &Connection, skill: &str, tag: [u8; 4], notes: usize) -> Result<bool> {
        let (changes, last) = store::text_changes_and_last(conn)?;
        {
            let mut map = self.pieces.lock().unwrap_or_else(|e| e.into_inner());
            let fresh = map.get(skill).is_some_and(|p| {
                p.tag() == tag && p.valid_at(changes) && p.newer_than_held(last) * 100 <= p.len() as i64
            });
            if fresh {
                return Ok(false);
            }
            // Dropped before the pass: the old and the new are never held together.
            map.remove(skill);
            if map.values().map(|p| p.len()).sum::<usize>() + notes > PIECES_HELD {
                return Ok(false);
            }
        }
        let t = std::time::Instant::now();
        let read = Arc::new(SkillPieces::read(conn, skill, tag, notes)?);
        tracing::debug!(
            "recall: the pieces of {} notes of {skill} read in {:?} ({} KiB)",
            read.len(),
            t.elapsed(),
            read.heap_bytes() / 1024
        );
        let mut map = self.pieces.lock().unwrap_or_else(|e| e.into_inner());
        if map.values().map(|p| p.len()).sum::<usize>() + read.len() > PIECES_HELD {
            return Ok(false);
        }
        map.insert(skill.to_string(), read);
        Ok(true)
    }

    /// The pieces held of `key`'s skill stored with table `tag`, while valid (`changes` is
    /// [`store::text_changes`] now, asked of the caller's connection); `None` otherwise, and
    /// the skill is left for [`LexiconCache::take_wanted`] to read again.
    pub fn pieces(&self, conn: &Connection, key: (&str, &str), tag: [u8; 4]) -> Result<Option<Arc<SkillPieces>>> {
        let held = self.pieces.lock().unwrap_or_else(|e| e.into_inner()).get(key.0).cloned();
        let (changes, last) = store::text_changes_and_last(conn)?;
        let valid = held.filter(|p| p.tag() == tag && p.valid_at(changes));
        if valid.as_ref().is_none_or(|p| p.newer_than_held(last) * 100 > p.len() as i64) {
            let mut w = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
            if w.len() < LEXICONS_HELD {
                w.insert((key.0.to_string(), key.1.to_string()));
            }
        }
        Ok(valid)
    }

    /// Reads and holds the full-text rows' lengths ([`DocLengths`]) through `conn`, unless
    /// those held are valid. Returns whether it read them.
    pub fn warm_lengths(&self, conn: &Connection) -> Result<bool> {
        let changes = store::text_changes(conn)?;
        {
            let mut held = self.lengths.lock().unwrap_or_else(|e| e.into_inner());
            if held.as_ref().is_some_and(|l| l.valid_at(changes)) {
                return Ok(false);
            }
            // Dropped before the pass: the old and the new are never held together.
            *held = None;
        }
        let t = std::time::Instant::now();
        let Some(read) = DocLengths::read(conn)? else { return Ok(false) };
        tracing::debug!(
            "recall: the full-text rows' lengths read in {:?} ({} KiB)",
            t.elapsed(),
            read.heap_bytes() / 1024
        );
        *self.lengths.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(read));
        Ok(true)
    }

    /// The rows' lengths held, while valid (`changes` is [`store::text_changes`] now);
    /// `None` otherwise, and `key`'s skill is left for [`LexiconCache::take_wanted`], whose
    /// builder reads them again.
    pub fn lengths(&self, changes: i64, key: (&str, &str)) -> Option<Arc<DocLengths>> {
        let held = self.lengths.lock().unwrap_or_else(|e| e.into_inner()).clone().filter(|l| l.valid_at(changes));
        if held.is_none() {
            let mut w = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
            if w.len() < LEXICONS_HELD {
                w.insert((key.0.to_string(), key.1.to_string()));
            }
        }
        held
    }

    /// Drops the pieces held (read again for the skills recalls want them for).
    pub fn forget_pieces(&self) {
        self.pieces.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// How many indexes were built so far (warming included).
    pub fn builds(&self) -> usize {
        self.builds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a recall left a skill without an index to build ([`LexiconCache::take_wanted`]).
    pub fn any_wanted(&self) -> bool {
        !self.wanted.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The (skill, project)s recalls found no index for since the last call: build their
    /// current candidates' with [`LexiconCache::warm`].
    pub fn take_wanted(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.wanted.lock().unwrap_or_else(|e| e.into_inner())).into_iter().collect()
    }

    /// Claims the building of indexes: `None` while another caller builds (which also takes
    /// what is wanted meanwhile), so that no index is built twice at once.
    pub fn begin_building(&self) -> Option<Building<'_>> {
        use std::sync::atomic::Ordering;
        self.building
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Building(&self.building))
    }

    /// The store's counts, kept while `held`'s generation stays (none kept without it).
    pub fn counts(&self, conn: &Connection, held: Option<&Catalog>) -> Result<std::sync::MutexGuard<'_, StoreCounts>> {
        let generation = match held {
            Some(c) => Some(c.generation(conn)?),
            None => None,
        };
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if generation.is_none() || counts.generation != generation {
            let frequent = self.frequent.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let frequent = match frequent {
                Some(f) => match store::text_changes_and_last(conn)? {
                    (changes, last) if changes == f.changes => {
                        let inserted = last > f.last;
                        Some((f, inserted))
                    }
                    _ => None,
                },
                None => None,
            };
            *counts = StoreCounts { generation, frequent, ..Default::default() };
        }
        Ok(counts)
    }

    /// Reads the store's frequent words' counts ([`Frequent`]) through `conn` (a connection
    /// of the caller's own: one pass over the full-text index, about 0.1 s at 100,000 notes),
    /// unless those held are the store's now (no text changed, no note inserted since). With
    /// the catalog's `generation`, that is not even asked while the generation is the one it
    /// was last found at (a server calls this after every answer). Returns whether it read
    /// them.
    pub fn warm_frequent(&self, conn: &Connection, generation: Option<u64>) -> Result<bool> {
        let held = self.frequent.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut checked = self.frequent_checked.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_some() && generation.is_some() && *checked == generation {
            return Ok(false);
        }
        if held.is_some_and(|f| store::text_changes_and_last(conn).ok() == Some((f.changes, f.last))) {
            *checked = generation;
            return Ok(false);
        }
        let t = std::time::Instant::now();
        let f = Frequent::read(conn)?;
        tracing::debug!("recall: counts of {} frequent words read in {:?}", f.docs.len(), t.elapsed());
        let f = Arc::new(f);
        *self.frequent.lock().unwrap_or_else(|e| e.into_inner()) = Some(f.clone());
        // The counts kept now take them up too, with no insert since (those they hold already
        // are exact as well). Counts kept for an older store than these were read from are
        // dropped by the next `counts`, which sees the catalog's generation moved.
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.frequent = Some((f, false));
        *checked = generation;
        Ok(true)
    }

    /// bm25 over `cands` (the visible notes of `skill` from `project`) for `intent`: see
    /// [`Lexicon::search`]. `None` when the skill has no index for `cands` yet: the caller
    /// asks FTS5, which ranks the same, and the skill is left for
    /// [`LexiconCache::take_wanted`] (building an index costs tens of milliseconds, reading
    /// the skill's notes from all over the file). The store's counts are kept while `held`'s
    /// generation stays (read again each call without it).
    pub fn search(
        &self,
        conn: &Connection,
        key: (&str, &str),
        cands: &Arc<Candidates>,
        held: Option<&Catalog>,
        intent: &str,
        limit: usize,
    ) -> Result<Option<Vec<(i64, f64)>>> {
        let Some(lex) = self.kept(key, cands) else {
            let mut w = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
            if w.len() < LEXICONS_HELD {
                w.insert((key.0.to_string(), key.1.to_string()));
            }
            return Ok(None);
        };
        let mut counts = self.counts(conn, held)?;
        let (_, avg_len) = counts.totals(conn)?;
        let mut df = |w: &str| counts.get(conn, w);
        lex.search(intent, limit, Some(Store { df: &mut df, avg_len })).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A global gotcha of `skill` with no intent.
    fn lesson(skill: &str, delta: &str) -> crate::memory::NewNote {
        crate::memory::NewNote {
            scope: crate::memory::Scope::Global,
            ..crate::memory::NewNote::gotcha(skill, "", delta)
        }
    }

    /// The order and scores FTS5's bm25 gives, with the store's counts (other skills' notes
    /// in the store too), or with the skill's own when the store holds only the skill.
    #[test]
    fn ranks_as_fts5() {
        use crate::memory::NewNote;
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let words = ["csv", "quote", "fields", "raw", "output", "null", "iterate", "filter", "slurp", "keys"];
        let fill = |conn: &mut rusqlite::Connection, skill: &str, shift: usize| {
            for i in 0..120usize {
                let w = |k: usize| words[(k + shift) % 10];
                let intent = if i % 4 == 0 { format!("{} {}", w(i), w(i / 4)) } else { String::new() };
                let delta = format!(
                    "{} {} {} {} lesson number {i}",
                    w(i),
                    w(i * 3),
                    w(i * 7 + 1),
                    if i % 3 == 0 { w(i * 5) } else { "x" }
                );
                let new = NewNote::gotcha(skill, &intent, &delta);
                store::write(conn, "p", &new, None, 0.9, None).unwrap();
            }
        };
        let intents = [
            "csv fields",
            "quoting csvs filtered",
            "raw null output",
            "iterate",
            "slurp slurp keys",
            "nothing here",
            "",
            "CSV, Quote!",
        ];
        let check = |conn: &rusqlite::Connection, own: bool| {
            let cands: Arc<Candidates> = store::candidates(conn, "jq", "p").unwrap().into();
            let ids: Vec<i64> = cands.iter().map(|c| c.id).collect();
            let notes = store::load(conn, &ids).unwrap();
            let lex = Lexicon::build(notes.iter().map(|n| (n.id, n.intent.as_str(), n.delta.as_str())));
            let cache = LexiconCache::default();
            cache.warm(conn, ("jq", "p"), &cands).unwrap();
            for intent in intents {
                let want = store::fts(conn, "jq", "p", intent, 30).unwrap();
                let got = if own {
                    lex.search(intent, 30, None).unwrap()
                } else {
                    cache.search(conn, ("jq", "p"), &cands, None, intent, 30).unwrap().unwrap()
                };
                let ids = |v: &[(i64, f64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
                assert_eq!(ids(&got), ids(&want), "{intent:?}");
                for ((_, a), (_, b)) in got.iter().zip(&want) {
                    // The same terms summed in the same order: the same doubles, or within
                    // the last bits where the average length is computed another way.
                    assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{intent:?}: {a} vs {b}");
                }
            }
        };
        // Only this skill in the store: its own counts are the store's.
        fill(&mut conn, "jq", 0);
        check(&conn, true);
        check(&conn, false);
        // Another skill whose notes share some words and are longer: the store's counts and
        // average length, as FTS5 reads them.
        fill(&mut conn, "pdf", 3);
        for i in 0..40 {
            let delta = format!("csv fields of a much longer lesson that goes on and on about output {i} and more");
            let new = NewNote::gotcha("pdf", "", &delta);
            store::write(&mut conn, "p", &new, None, 0.9, None).unwrap();
        }
        check(&conn, false);
    }

    #[test]
    fn search_table() {
        let lex = Lexicon::build([
            (1, "", "quote csv fields"),
            (2, "csv", "write rows"),
            (3, "", "nothing in common"),
            (4, "", "csv csv csv csv"),
        ]);
        let ids = |v: Result<Vec<(i64, f64)>>| v.unwrap().into_iter().map(|x| x.0).collect::<Vec<_>>();
        // A word in the intent column weighs double; a repeated word counts with saturation.
        assert_eq!(ids(lex.search("csv", 10, None)), vec![4, 2, 1]);
        assert_eq!(ids(lex.search("quote", 10, None)), vec![1]);
        assert_eq!(ids(lex.search("csv", 2, None)), vec![4, 2]);
        assert_eq!(ids(lex.search("zzz", 10, None)), Vec::<i64>::new());
        assert_eq!(ids(lex.search("", 10, None)), Vec::<i64>::new());
        assert!(ids(Lexicon::build([]).search("csv", 10, None)).is_empty());
    }

    /// A recall with no index answers `None` (the caller asks FTS5) and leaves the skill
    /// wanted; an index built through another connection is the one recall then uses, and
    /// answers as FTS5 does.
    #[test]
    fn built_after_a_recall_that_found_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        for i in 0..40 {
            store::write(
                &mut conn,
                "p",
                &lesson("jq", &format!("quote the csv fields of row kind {}", i % 7)),
                None,
                0.9,
                None,
            )
            .unwrap();
        }
        let cands: Arc<Candidates> = store::candidates(&conn, "jq", "p").unwrap().into();
        let cache = LexiconCache::default();
        assert!(!cache.any_wanted());
        assert_eq!(cache.search(&conn, ("jq", "p"), &cands, None, "csv kind 3", 10).unwrap(), None);
        assert_eq!(cache.builds(), 0, "a recall never builds");
        let wanted = cache.take_wanted();
        assert_eq!(wanted.len(), 1);
        assert_eq!(wanted, vec![("jq".to_string(), "p".to_string())]);
        assert!(!cache.any_wanted());
        let other = crate::db::open(dir.path()).unwrap();
        {
            let _b = cache.begin_building().expect("nobody builds");
            assert!(cache.begin_building().is_none(), "one builder at a time");
            cache.warm(&other, ("jq", "p"), &cands).unwrap();
            cache.warm(&other, ("jq", "p"), &cands).unwrap();
        }
        assert!(cache.begin_building().is_some(), "released");
        assert_eq!(cache.builds(), 1);
        let fts = store::fts(&conn, "jq", "p", "csv kind 3", 10).unwrap();
        assert_eq!(cache.search(&conn, ("jq", "p"), &cands, None, "csv kind 3", 10).unwrap(), Some(fts));
        assert_eq!(cache.builds(), 1, "recall used the index built ahead");
        assert!(!cache.any_wanted());
        // Another candidate list (a write to the skill) has no index until one is built.
        let again: Arc<Candidates> = store::candidates(&conn, "jq", "p").unwrap().into();
        assert_eq!(cache.search(&conn, ("jq", "p"), &again, None, "csv", 10).unwrap(), None);
        assert!(cache.any_wanted());
    }

    /// A word's count up to a cap is kept while no note changes and counted again after a
    /// write; without a catalog nothing is kept.
    /// The frequent words' counts, read ahead in one pass, are what FTS5 counts: after
    /// inserts (counted on top), and after an edit or a removal (no longer used until read
    /// again). A word FTS5 might split or fold otherwise is counted by FTS5 itself.
    #[test]
    fn frequent_words_count_as_fts5_across_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let write = |conn: &mut rusqlite::Connection, delta: &str| -> i64 {
            store::write(conn, "p", &lesson("jq", delta), None, 0.9, None).unwrap().0
        };
        for i in 0..5 {
            write(&mut conn, &format!("rebasing the widgets {i}"));
        }
        let first = write(&mut conn, "rebase the branch, café");
        let catalog = Catalog::default();
        let cache = LexiconCache::default();
        let words = ["rebase", "rebased", "widgets", "widget", "branch", "café", "the", "nothing", "9"];
        let check = |conn: &rusqlite::Connection, when: &str| {
            let mut counts = cache.counts(conn, Some(&catalog)).unwrap();
            for w in words {
                let want = store::fts_doc_count(conn, w).unwrap() as f64;
                assert_eq!(counts.get(conn, w).unwrap().1, want, "{w} {when}");
            }
            counts.frequent.is_some()
        };
        assert!(!check(&conn, "before they are read"));
        assert!(cache.warm_frequent(&conn, Some(1)).unwrap());
        assert!(!cache.warm_frequent(&conn, None).unwrap(), "read once while they hold");
        assert!(!cache.warm_frequent(&conn, Some(1)).unwrap());
        let held = cache.frequent.lock().unwrap().clone().unwrap();
        assert_eq!(held.docs.get("rebas"), Some(&6));
        assert_eq!(held.docs.get("branch"), None, "held by one note: counted when asked");
        assert!(check(&conn, "read"));
        // Inserts: the counts hold, the new notes counted on top.
        write(&mut conn, "rebase widgets again");
        write(&mut conn, "widgets, widgets");
        assert!(check(&conn, "after inserts"));
        assert!(!cache.warm_frequent(&conn, Some(1)).unwrap(), "the generation they were read at: not asked");
        assert!(cache.warm_frequent(&conn, Some(2)).unwrap(), "notes inserted since: read again");
        assert!(!cache.warm_frequent(&conn, Some(3)).unwrap(), "asked, and still the store's");
        assert!(check(&conn, "read after inserts"));
        // An edit: the counts are not used until read again.
        store::edit(&mut conn, first, "merge the branch", None, None).unwrap();
        assert!(!check(&conn, "after an edit"));
        assert!(cache.warm_frequent(&conn, None).unwrap());
        assert!(check(&conn, "read again"));
        // A removal, by another connection.
        let other = crate::db::open(dir.path()).unwrap();
        other.execute("DELETE FROM notes WHERE id = ?1", [first]).unwrap();
        assert!(!check(&conn, "after a removal"));
    }

    #[test]
    fn a_frequent_words_count_up_to_a_cap_needs_no_query() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let write = |conn: &mut rusqlite::Connection, delta: &str| {
            store::write(conn, "p", &lesson("jq", delta), None, 0.9, None).unwrap();
        };
        for i in 0..6 {
            write(&mut conn, &format!("rebasing the widgets {i}"));
        }
        write(&mut conn, "merge the branch");
        let catalog = Catalog::default();
        let cache = LexiconCache::default();
        // A store with no notes: a count asked of it is 0, one from memory is the store's.
        let empty_dir = tempfile::tempdir().unwrap();
        let empty = crate::db::open(empty_dir.path()).unwrap();
        // (word, cap, held: answered from memory)
        let cases: &[(&str, i64, bool)] = &[
            ("rebase", 100, true),
            ("rebased", 3, true),
            ("widgets", 6, true),
            ("widget", 5, true),
            ("branch", 100, false),
            ("café", 100, false),
            ("nothing", 100, false),
        ];
        let check = |conn: &rusqlite::Connection, when: &str, from_memory: bool| {
            let mut counts = cache.counts(conn, Some(&catalog)).unwrap();
            for &(w, cap, held) in cases {
                let want = store::fts_count_upto(conn, None, w, cap).unwrap();
                assert_eq!(counts.count_upto(conn, None, w, cap).unwrap(), want, "{w} {cap} {when}");
                if held && from_memory {
                    assert_eq!(counts.count_upto(&empty, None, w, cap).unwrap(), want, "{w} {cap} {when}: a query");
                }
            }
        };
        check(&conn, "before they are read", false);
        assert!(cache.warm_frequent(&conn, Some(1)).unwrap());
        check(&conn, "read", true);
        // Inserts: counted by FTS5 until the counts are read again.
        write(&mut conn, "rebase widgets again");
        check(&conn, "after an insert", false);
        assert!(cache.warm_frequent(&conn, Some(2)).unwrap());
        check(&conn, "read after an insert", true);
        // Within a skill: always FTS5's.
        let mut counts = cache.counts(&conn, Some(&catalog)).unwrap();
        assert_eq!(counts.count_upto(&empty, Some("jq"), "rebase", 100).unwrap(), 0);
    }

    /// Large skills' pieces are held first come, within [`PIECES_HELD`] notes: a skill with
    /// no room beside those held is not read (it stays wanted, ranked from its notes), the one
    /// held stays; another table's pieces are not served; a changed text makes them stale, and
    /// they are read again.
    #[test]
    fn pieces_are_held_first_come_within_their_room() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let tag = *b"TAG1";
        for (skill, n) in [("a", 4u16), ("b", 3)] {
            for i in 0..n {
                let (id, _) =
                    store::write(&mut conn, "p", &lesson(skill, &format!("lesson {i}")), None, 0.9, None).unwrap();
                let blob = [&tag[..], &i.to_le_bytes()].concat();
                conn.execute("UPDATE notes SET match_pieces = ?2 WHERE id = ?1", rusqlite::params![id, blob]).unwrap();
            }
        }
        let cache = LexiconCache::default();
        let held = |skill: &str, tag: [u8; 4]| cache.pieces(&conn, (skill, "p"), tag).unwrap().map(|p| p.len());
        assert!(cache.warm_pieces(&conn, "a", tag, 4).unwrap());
        assert!(!cache.warm_pieces(&conn, "a", tag, 4).unwrap(), "held and valid: not read again");
        // b as large as the room left, and a little more.
        assert!(!cache.warm_pieces(&conn, "b", tag, PIECES_HELD - 3).unwrap(), "no room beside a's");
        assert_eq!((held("a", tag), held("b", tag)), (Some(4), None));
        assert!(cache.take_wanted().contains(&("b".to_string(), "p".to_string())), "b stays wanted");
        assert_eq!(held("a", *b"OTHR"), None, "another table's pieces");
        conn.execute("UPDATE notes SET delta = 'changed' WHERE id = (SELECT min(id) FROM notes WHERE skill = 'a')", [])
            .unwrap();
        assert_eq!(held("a", tag), None, "a changed text: stale");
        assert!(cache.warm_pieces(&conn, "a", tag, 4).unwrap());
        assert_eq!(held("a", tag), Some(3), "read again (the changed note has no pieces until they are made)");
    }

    #[test]
    fn counts_up_to_a_cap_are_kept_until_a_note_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::db::open(dir.path()).unwrap();
        let write = |conn: &mut rusqlite::Connection, skill: &str, delta: &str| {
            store::write(conn, "p", &lesson(skill, delta), None, 0.9, None).unwrap();
        };
        for i in 0..5 {
            write(&mut conn, "jq", &format!("rebase the widgets {i}"));
        }
        write(&mut conn, "git", "rebase the branch");
        let catalog = Catalog::default();
        let cache = LexiconCache::default();
        let count = |conn: &rusqlite::Connection, held: Option<&Catalog>, skill: Option<&str>, cap: i64| {
            cache.counts(conn, held).unwrap().count_upto(conn, skill, "rebase", cap).unwrap()
        };
        // (skill, cap, count): the cap bounds the count; a skill narrows it.
        let cases: &[(Option<&str>, i64, i64)] =
            &[(None, 100, 6), (None, 4, 4), (Some("jq"), 100, 5), (Some("git"), 100, 1)];
        for &(skill, cap, want) in cases {
            assert_eq!(count(&conn, Some(&catalog), skill, cap), want, "{skill:?} {cap}");
        }
        assert_eq!(cache.counts(&conn, Some(&catalog)).unwrap().upto.len(), cases.len(), "each kept");
        // Another connection writes: the catalog sees a new generation, the counts follow.
        let mut other = crate::db::open(dir.path()).unwrap();
        write(&mut other, "jq", "rebase once more");
        assert_eq!(count(&conn, Some(&catalog), None, 100), 7);
        assert_eq!(count(&conn, Some(&catalog), Some("jq"), 100), 6);
        write(&mut other, "jq", "rebase and again");
        assert_eq!(count(&conn, None, Some("jq"), 100), 7, "nothing kept without a catalog");
        assert_eq!(count(&conn, Some(&catalog), Some("jq"), 100), 7);
    }
}
