//! A small BERT WordPiece tokenizer (uncased), the one all-MiniLM-L6-v2 was trained with.
//!
//! It reproduces what the `tokenizers` crate does with that model's `tokenizer.json`
//! (BertNormalizer with lower-casing and accent stripping, BertPreTokenizer, WordPiece with
//! the `##` continuation prefix) so that the default build needs neither that crate nor its
//! dependencies: only the two Unicode tables already in the tree. The `local-model` build
//! checks the two agree (`skillmem model distill` refuses a vocabulary where they do not).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use unicode_general_category::{get_general_category, GeneralCategory as G};
use unicode_normalization::UnicodeNormalization;

/// Words longer than this many characters become `[UNK]` (as in BERT).
const MAX_WORD_CHARS: usize = 100;

/// FxHash (rustc's): the vocabulary's keys are short and not chosen by an adversary, and
/// tokenizing is lookups (several per word: the longest piece is looked for first), so a
/// hasher a few times faster than SipHash makes the static embedder as much faster.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut add = |w: u64| self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// An uncased WordPiece tokenizer over a vocabulary (one token a line, the line number is
/// the id).
#[derive(Debug, Clone)]
pub struct WordPiece {
    /// Word-initial pieces, and continuation pieces (`##` stripped): looked up by a slice of
    /// the word, never a copy.
    ids: HashMap<Box<str>, u32, BuildHasherDefault<Fx>>,
    cont: HashMap<Box<str>, u32, BuildHasherDefault<Fx>>,
    unk: Option<u32>,
    /// The longest piece in characters: a longer slice is never looked up.
    max_chars: usize,
}

impl WordPiece {
    /// A tokenizer over `vocab` (the id of a token is its index).
    pub fn new<S: AsRef<str>>(vocab: &[S]) -> Self {
        let mut ids: HashMap<Box<str>, u32, BuildHasherDefault<Fx>> = HashMap::default();
        let mut cont: HashMap<Box<str>, u32, BuildHasherDefault<Fx>> = HashMap::default();
        let mut max_chars = 0;
        for (i, t) in vocab.iter().enumerate() {
            let t = t.as_ref();
            // The last of two equal tokens wins, as it did in one map built in order.
            match t.strip_prefix("##") {
                Some(piece) => cont.insert(piece.into(), i as u32),
                None => ids.insert(t.into(), i as u32),
            };
            max_chars = max_chars.max(t.chars().count());
        }
        let unk = ids.get("[UNK]").copied();
        WordPiece { ids, cont, unk, max_chars }
    }

    /// The id of `[UNK]`, if the vocabulary has one.
    pub fn unk(&self) -> Option<u32> {
        self.unk
    }

    /// The token ids of `text`, without special tokens (`[CLS]`/`[SEP]`); a word that has no
    /// WordPiece split is one `[UNK]`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = vec![];
        for word in pre_tokenize(&normalize(text)) {
            self.word(&word, &mut out);
        }
        out
    }

    /// Appends the pieces of one pre-tokenized word.
    fn word(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > MAX_WORD_CHARS {
            out.extend(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0; // index into chars
        while start < chars.len() {
            // No piece is longer than the longest token.
            let mut end = chars.len().min(start + self.max_chars);
            let mut found = None;
            let map = if start > 0 { &self.cont } else { &self.ids };
            while start < end {
                let from = chars[start].0;
                let to = if end == chars.len() { word.len() } else { chars[end].0 };
                if let Some(id) = map.get(&word[from..to]) {
                    found = Some(*id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(start_len);
                    out.extend(self.unk);
                    return;
                }
            }
        }
    }
}

fn is_control(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        _ => matches!(get_general_category(c), G::Control | G::Format | G::PrivateUse),
    }
}

fn is_chinese(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation
        )
}

/// BertNormalizer: drop control characters, whitespace to spaces, spaces around CJK
/// ideographs, strip accents (NFD, non-spacing marks dropped), lower-case.
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        // ASCII has no accents, nothing NFD changes, and lower-cases byte by byte.
        let mut out: String = text
            .chars()
            .filter(|&c| c != '\0' && !is_control(c))
            .map(|c| if c.is_whitespace() { ' ' } else { c.to_ascii_lowercase() })
            .collect();
        out.shrink_to_fit();
        return out;
    }
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_chinese(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    let stripped: String = cleaned.nfd().filter(|c| get_general_category(*c) != G::NonspacingMark).collect();
    stripped.to_lowercase()
}

/// BertPreTokenizer: split on whitespace (dropped) and punctuation (each mark its own word).
pub fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = vec![];
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        } else if is_punct(c) {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            words.push(c.to_string());
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok() -> WordPiece {
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "aff", "able", ",", "cafe", "'", "s"];
        WordPiece::new(&vocab)
    }

    #[test]
    fn table_of_texts() {
        let t = tok();
        let cases: &[(&str, &[u32])] = &[
            ("unaffable", &[4, 5, 6]),
            ("UnAffable able", &[4, 5, 6, 8]),
            ("able,aff", &[8, 9, 7]),
            ("Café's", &[10, 11, 12]),
            ("unxable", &[1]),
            ("", &[]),
            ("  \t\n ", &[]),
            ("\u{0}able\u{200b}", &[8]),
        ];
        for (text, want) in cases {
            assert_eq!(t.encode(text), *want, "{text:?}");
        }
    }

    #[test]
    fn normalizer_and_pre_tokenizer() {
        assert_eq!(normalize("Héllo\tWörld"), "hello world");
        assert_eq!(normalize("日本"), " 日  本 ");
        assert_eq!(pre_tokenize("don't stop—now!"), vec!["don", "'", "t", "stop", "—", "now", "!"]);
        assert_eq!(pre_tokenize("a_b c-d"), vec!["a", "_", "b", "c", "-", "d"]);
    }

    /// The greedy longest-match of BERT's WordPiece, written plainly (one map with the `##`
    /// keys, every slice looked up): the fast lookups must give the same ids.
    fn reference(vocab: &[String], text: &str) -> Vec<u32> {
        let ids: HashMap<&str, u32> = vocab.iter().enumerate().map(|(i, t)| (t.as_str(), i as u32)).collect();
        let unk = ids.get("[UNK]").copied();
        let mut out = vec![];
        for word in pre_tokenize(&normalize(text)) {
            let chars: Vec<(usize, char)> = word.char_indices().collect();
            if chars.len() > MAX_WORD_CHARS {
                out.extend(unk);
                continue;
            }
            let (mut pieces, mut start) = (vec![], 0);
            while start < chars.len() {
                let found = (start + 1..=chars.len()).rev().find_map(|end| {
                    let to = if end == chars.len() { word.len() } else { chars[end].0 };
                    let key = format!("{}{}", if start > 0 { "##" } else { "" }, &word[chars[start].0..to]);
                    ids.get(key.as_str()).map(|id| (*id, end))
                });
                match found {
                    Some((id, end)) => {
                        pieces.push(id);
                        start = end;
                    }
                    None => {
                        pieces = unk.into_iter().collect();
                        break;
                    }
                }
            }
            out.extend(pieces);
        }
        out
    }

    #[test]
    fn the_builtin_vocabulary_tokenizes_as_the_plain_algorithm_does() {
        let table = crate::embed::static_table::Table::parse(std::borrow::Cow::Borrowed(
            crate::embed::static_table::BUILTIN_TABLE,
        ))
        .unwrap();
        let t = WordPiece::new(&table.vocab);
        let mut texts: Vec<String> = [
            "Parse a CSV export with `--delimiter=';'` (not the default)",
            "kalomi strathadrifro zeplugla unaffable Café's naïve résumé",
            "Übergröße façade 日本語のテキスト emoji 🎉 tabs\tand\nnewlines\u{0}",
            "antidisestablishmentarianism supercalifragilisticexpialidocious",
            "SELECT * FROM notes WHERE id = 42; -- a comment",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Pseudo-words of syllables (the bench's notes): many slices that are not tokens.
        let syl = ["ka", "lo", "mi", "str", "tha", "zu", "ph", "x", "qu", "é"];
        let mut x = 7u64;
        for _ in 0..200 {
            let words: Vec<String> = (0..6)
                .map(|_| {
                    (0..1 + (x % 5) as usize)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            syl[(x % syl.len() as u64) as usize]
                        })
                        .collect()
                })
                .collect();
            texts.push(words.join(" "));
        }
        for text in &texts {
            assert_eq!(t.encode(text), reference(&table.vocab, text), "{text:?}");
        }
    }

    #[test]
    fn overlong_words_are_unknown() {
        let t = tok();
        assert_eq!(t.encode(&"a".repeat(101)), vec![1]);
    }
}
