//! The Porter stemmer as SQLite's FTS5 `porter` tokenizer applies it (`fts5_tokenize.c`), so
//! that the in-memory bm25 rung sees the words FTS5 indexes: a word of fewer than 3 or more
//! than 64 bytes is left as it is; otherwise steps 1a to 5b of Porter (1980), with FTS5's
//! rule list (step 2 has `logi` → `log` and `bli` → `ble`). Bytes other than a, e, i, o, u
//! (and y after a consonant) count as consonants, as FTS5 counts them.
//!
//! A test compares it with FTS5 itself over every word of the recall sets.

const MAX_TOKEN: usize = 64;

fn vowel(c: u8, y_is_vowel: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (y_is_vowel && c == b'y')
}

/// Where the first vowel-consonant sequence of `s` ends (its length), 0 when there is none.
fn gobble_vc(s: &[u8], prev_consonant: bool) -> usize {
    let mut cons = prev_consonant;
    let mut i = 0;
    while i < s.len() {
        cons = !vowel(s[i], cons);
        if !cons {
            break;
        }
        i += 1;
    }
    i += 1;
    while i < s.len() {
        cons = !vowel(s[i], cons);
        if cons {
            return i + 1;
        }
        i += 1;
    }
    0
}

/// m > 0
fn m_gt0(s: &[u8]) -> bool {
    gobble_vc(s, false) != 0
}

/// m > 1
fn m_gt1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) != 0
}

/// m = 1
fn m_eq1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) == 0
}

/// *o: ends consonant-vowel-consonant, the last not w, x or y.
fn o_star(s: &[u8]) -> bool {
    match s.last() {
        None | Some(b'w' | b'x' | b'y') => false,
        Some(_) => {
            let mut mask = 0u32;
            let mut cons = false;
            for &c in s {
                cons = !vowel(c, cons);
                mask = (mask << 1) + cons as u32;
            }
            mask & 7 == 5
        }
    }
}

/// *v*: holds a vowel.
fn has_vowel(s: &[u8]) -> bool {
    s.iter().enumerate().any(|(i, &c)| vowel(c, i > 0))
}

#[derive(Clone, Copy)]
enum Cond {
    Gt0,
    Gt1,
    Gt1ST,
}

fn holds(cond: Cond, stem: &[u8]) -> bool {
    match cond {
        Cond::Gt0 => m_gt0(stem),
        Cond::Gt1 => m_gt1(stem),
        Cond::Gt1ST => matches!(stem.last(), Some(b's' | b't')) && m_gt1(stem),
    }
}

/// One step of suffix rules: the first suffix the word ends with (longer than it, as FTS5
/// asks) decides; it is replaced when its condition holds on what comes before it.
fn step(w: &mut Vec<u8>, rules: &[(&str, &str, Cond)]) {
    for &(suffix, with, cond) in rules {
        let s = suffix.as_bytes();
        if w.len() > s.len() && w.ends_with(s) {
            let stem = w.len() - s.len();
            if holds(cond, &w[..stem]) {
                w.truncate(stem);
                w.extend_from_slice(with.as_bytes());
            }
            return;
        }
    }
}

use Cond::*;

const STEP2: &[(&str, &str, Cond)] = &[
    ("ational", "ate", Gt0),
    ("tional", "tion", Gt0),
    ("enci", "ence", Gt0),
    ("anci", "ance", Gt0),
    ("izer", "ize", Gt0),
    ("logi", "log", Gt0),
    ("bli", "ble", Gt0),
    ("alli", "al", Gt0),
    ("entli", "ent", Gt0),
    ("eli", "e", Gt0),
    ("ousli", "ous", Gt0),
    ("ization", "ize", Gt0),
    ("ation", "ate", Gt0),
    ("ator", "ate", Gt0),
    ("alism", "al", Gt0),
    ("iveness", "ive", Gt0),
    ("fulness", "ful", Gt0),
    ("ousness", "ous", Gt0),
    ("aliti", "al", Gt0),
    ("iviti", "ive", Gt0),
    ("biliti", "ble", Gt0),
];

const STEP3: &[(&str, &str, Cond)] = &[
    ("ical", "ic", Gt0),
    ("ness", "", Gt0),
    ("icate", "ic", Gt0),
    ("iciti", "ic", Gt0),
    ("ful", "", Gt0),
    ("ative", "", Gt0),
    ("alize", "al", Gt0),
];

const STEP4: &[(&str, &str, Cond)] = &[
    ("al", "", Gt1),
    ("ance", "", Gt1),
    ("ence", "", Gt1),
    ("er", "", Gt1),
    ("ic", "", Gt1),
    ("able", "", Gt1),
    ("ible", "", Gt1),
    ("ant", "", Gt1),
    ("ement", "", Gt1),
    ("ment", "", Gt1),
    ("ent", "", Gt1),
    ("ion", "", Gt1ST),
    ("ou", "", Gt1),
    ("ism", "", Gt1),
    ("ate", "", Gt1),
    ("iti", "", Gt1),
    ("ous", "", Gt1),
    ("ive", "", Gt1),
    ("ize", "", Gt1),
];

/// The stem of one lower-case token, as FTS5's `porter` tokenizer writes it.
#[cfg(test)]
pub fn stem(token: &str) -> String {
    let mut w = vec![];
    stem_into(token.as_bytes(), &mut w);
    String::from_utf8_lossy(&w).into_owned()
}

/// [`stem`] of a token's bytes, written to `w` (cleared first; no allocation once `w` has
/// room). Cutting bytes of a UTF-8 token can split a character: FTS5 keeps the bytes, and so
/// does this.
pub fn stem_into(b: &[u8], w: &mut Vec<u8>) {
    w.clear();
    w.extend_from_slice(b);
    if b.len() < 3 || b.len() > MAX_TOKEN {
        return;
    }
    // Step 1a.
    if w.ends_with(b"s") {
        let n = w.len();
        if w[n - 2] == b'e' {
            if (n > 4 && w[n - 4] == b's' && w[n - 3] == b's') || (n > 3 && w[n - 3] == b'i') {
                w.truncate(n - 2);
            } else {
                w.truncate(n - 1);
            }
        } else if w[n - 2] != b's' {
            w.truncate(n - 1);
        }
    }
    // Step 1b.
    let n = w.len();
    let mut more = false;
    if n > 3 && w.ends_with(b"eed") {
        if m_gt0(&w[..n - 3]) {
            w.truncate(n - 1);
        }
    } else if n > 2 && w.ends_with(b"ed") {
        if has_vowel(&w[..n - 2]) {
            w.truncate(n - 2);
            more = true;
        }
    } else if n > 3 && w.ends_with(b"ing") && has_vowel(&w[..n - 3]) {
        w.truncate(n - 3);
        more = true;
    }
    if more {
        let n = w.len();
        let grow = [(&b"at"[..], &b"ate"[..]), (b"bl", b"ble"), (b"iz", b"ize")]
            .iter()
            .find(|(s, _)| n > 2 && w.ends_with(s))
            .map(|(_, with)| *with);
        if let Some(with) = grow {
            w.truncate(n - 2);
            w.extend_from_slice(with);
        } else if n >= 2 {
            let c = w[n - 1];
            if !vowel(c, false) && !matches!(c, b'l' | b's' | b'z') && c == w[n - 2] {
                w.truncate(n - 1);
            } else if m_eq1(w) && o_star(w) {
                w.push(b'e');
            }
        }
    }
    // Step 1c.
    let n = w.len();
    if n > 0 && w[n - 1] == b'y' && has_vowel(&w[..n - 1]) {
        w[n - 1] = b'i';
    }
    // Steps 2 to 4 (each looks at the second-last byte, so a word of one byte is left alone).
    for rules in [STEP2, STEP3, STEP4] {
        if w.len() >= 2 {
            step(w, rules);
        }
    }
    // Step 5a.
    let n = w.len();
    if n > 0 && w[n - 1] == b'e' {
        let s = &w[..n - 1];
        if m_gt1(s) || (m_eq1(s) && !o_star(s)) {
            w.truncate(n - 1);
        }
    }
    // Step 5b.
    let n = w.len();
    if n > 1 && w[n - 1] == b'l' && w[n - 2] == b'l' && m_gt1(&w[..n - 1]) {
        w.truncate(n - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stem_table() {
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("generalization", "gener"),
            ("hopefulness", "hope"),
            ("electricity", "electr"),
            ("adjustment", "adjust"),
            ("adoption", "adopt"),
            ("controlling", "control"),
            ("rolled", "roll"),
            ("caching", "cach"),
            ("retries", "retri"),
            ("is", "is"),
            ("zz", "zz"),
            ("ed", "ed"),
            ("sed", "sed"),
            ("lockfile", "lockfil"),
            ("123s", "123"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    /// The stems FTS5 itself writes for every word of the recall sets and the historian's
    /// skills (and inflections of them).
    #[test]
    fn stems_as_fts5_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut text = String::new();
        for f in ["bench/recall-set-b.json", "bench/recall-set-c.json", "bench/recall-set-d.json"] {
            text.push_str(&std::fs::read_to_string(root.join(f)).unwrap());
        }
        for e in std::fs::read_dir(root.join("bench/historian/skills")).unwrap() {
            text.push_str(&std::fs::read_to_string(e.unwrap().path().join("SKILL.md")).unwrap());
        }
        let mut words: Vec<String> = crate::text::words(&text);
        let base = words.clone();
        for w in base.iter().take(3000) {
            for end in ["s", "es", "ed", "ing", "ly", "ness", "ational", "ization", "ement", "iveness", "ll", "e"] {
                words.push(format!("{w}{end}"));
            }
        }
        words.sort();
        words.dedup();
        words.retain(|w| w.is_ascii());
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = 'porter unicode61');
             CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance');",
        )
        .unwrap();
        {
            let mut ins = conn.prepare("INSERT INTO t (rowid, x) VALUES (?1, ?2)").unwrap();
            for (i, w) in words.iter().enumerate() {
                ins.execute(rusqlite::params![i as i64, w]).unwrap();
            }
        }
        let mut q = conn.prepare("SELECT doc, term FROM v").unwrap();
        let rows = q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).unwrap();
        let mut checked = 0;
        for row in rows {
            let (doc, term) = row.unwrap();
            let w = &words[doc as usize];
            assert_eq!(stem(w), term, "{w}");
            checked += 1;
        }
        assert!(checked > 5000, "{checked} words checked");
    }
}
