//! A small BERT WordPiece tokenizer (uncased), the one all-MiniLM-L6-v2 was trained with.
//!
//! It reproduces what the `tokenizers` crate does with that model's `tokenizer.json`
//! (BertNormalizer with lower-casing and accent stripping, BertPreTokenizer, WordPiece with
//! the `##` continuation prefix) so that the default build needs neither that crate nor its
//! dependencies: only the two Unicode tables already in the tree. The `local-model` build
//! checks the two agree (`skillmem model distill` refuses a vocabulary where they do not).

use std::collections::HashMap;

use unicode_general_category::{get_general_category, GeneralCategory as G};
use unicode_normalization::UnicodeNormalization;

/// Words longer than this many characters become `[UNK]` (as in BERT).
const MAX_WORD_CHARS: usize = 100;

/// An uncased WordPiece tokenizer over a vocabulary (one token a line, the line number is
/// the id).
#[derive(Debug, Clone)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    unk: Option<u32>,
}

impl WordPiece {
    /// A tokenizer over `vocab` (the id of a token is its index).
    pub fn new<S: AsRef<str>>(vocab: &[S]) -> Self {
        let ids: HashMap<String, u32> =
            vocab.iter().enumerate().map(|(i, t)| (t.as_ref().to_string(), i as u32)).collect();
        let unk = ids.get("[UNK]").copied();
        WordPiece { ids, unk }
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
        let mut key = String::with_capacity(word.len() + 2);
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let from = chars[start].0;
                let to = if end == chars.len() { word.len() } else { chars[end].0 };
                key.clear();
                if start > 0 {
                    key.push_str("##");
                }
                key.push_str(&word[from..to]);
                if let Some(id) = self.ids.get(&key) {
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

    #[test]
    fn overlong_words_are_unknown() {
        let t = tok();
        assert_eq!(t.encode(&"a".repeat(101)), vec![1]);
    }
}
