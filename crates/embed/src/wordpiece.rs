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
#[derive(Debug)]
pub struct WordPiece {
    /// Pieces that begin a word.
    first: HashMap<Box<str>, u32, Fx>,
    /// Pieces that continue one, without their `##`.
    rest: HashMap<Box<str>, u32, Fx>,
    unk: Option<u32>,
    /// The longest token's length in characters (`##` left out): no longer piece is looked up.
    longest: usize,
    /// Words split before, and their pieces (at most [`WORDS_HELD`], then all dropped). A
    /// word's split tries every piece length from the longest down, a hash each; recall
    /// tokenizes the notes it has not held yet, whose words are mostly ones seen before.
    words: std::sync::Mutex<HashMap<Box<str>, Box<[u32]>, Fx>>,
}

/// Words whose pieces [`WordPiece`] keeps: about 80 bytes each with the map's entry and
/// the allocator's, so about 1.3 MB (65,536 held cost the sidecar 5 MB at 100,000 notes).
const WORDS_HELD: usize = 16_384;

impl Clone for WordPiece {
    fn clone(&self) -> Self {
        WordPiece {
            first: self.first.clone(),
            rest: self.rest.clone(),
            unk: self.unk,
            longest: self.longest,
            words: Default::default(),
        }
    }
}

/// The hash of the pieces' maps: the FxHash of rustc (a multiply and a rotate per word of the
/// key). A tokenization looks up a few pieces per word, each a short slice of it; SipHash,
/// the standard map's, took most of that time. The keys are a fixed vocabulary, so nothing an
/// outsider types can crowd one bucket.
#[derive(Debug, Clone, Copy, Default)]
struct Fx;

impl std::hash::BuildHasher for Fx {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

/// See [`Fx`].
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        let mut tail = [0u8; 8];
        let r = chunks.remainder();
        tail[..r.len()].copy_from_slice(r);
        self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(tail) ^ ((r.len() as u64) << 59)).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl WordPiece {
    /// A tokenizer over `vocab` (the id of a token is its index; of a token listed twice, its
    /// last line).
    pub fn new<S: AsRef<str>>(vocab: &[S]) -> Self {
        let mut first: HashMap<Box<str>, u32, Fx> = HashMap::with_capacity_and_hasher(vocab.len(), Fx);
        let mut rest: HashMap<Box<str>, u32, Fx> = HashMap::with_capacity_and_hasher(vocab.len() / 4, Fx);
        for (i, t) in vocab.iter().enumerate() {
            let t = t.as_ref();
            first.insert(t.into(), i as u32);
            if let Some(r) = t.strip_prefix("##") {
                rest.insert(r.into(), i as u32);
            }
        }
        let unk = first.get("[UNK]").copied();
        let longest = vocab
            .iter()
            .map(|t| {
                let t = t.as_ref();
                t.strip_prefix("##").unwrap_or(t).chars().count()
            })
            .max()
            .unwrap_or(0);
        WordPiece { first, rest, unk, longest, words: Default::default() }
    }

    /// The id of `[UNK]`, if the vocabulary has one.
    pub fn unk(&self) -> Option<u32> {
        self.unk
    }

    /// The token ids of `text`, without special tokens (`[CLS]`/`[SEP]`); a word that has no
    /// WordPiece split is one `[UNK]`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = vec![];
        let mut bounds = vec![];
        let normalized = normalize(text);
        let mut held = self.words.lock().unwrap_or_else(|e| e.into_inner());
        for word in pre_tokenize(&normalized) {
            if let Some(pieces) = held.get(word) {
                out.extend_from_slice(pieces);
                continue;
            }
            let at = out.len();
            self.word(word, &mut bounds, &mut out);
            if held.len() >= WORDS_HELD {
                held.clear();
            }
            held.insert(word.into(), out[at..].into());
        }
        out
    }

    /// Appends the pieces of one pre-tokenized word (`bounds`: a buffer for its characters'
    /// offsets). A word holds no `#` (punctuation is a word of its own), so a piece that
    /// begins it is never one of the `##` tokens: `first` answers as the whole vocabulary would.
    fn word(&self, word: &str, bounds: &mut Vec<usize>, out: &mut Vec<u32>) {
        // Piece boundaries as byte offsets, one per character, and the word's end.
        bounds.clear();
        bounds.extend(word.char_indices().map(|(i, _)| i).chain([word.len()]));
        let chars = bounds.len() - 1;
        if chars > MAX_WORD_CHARS {
            out.extend(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0; // index into bounds
        while start < chars {
            let mut end = chars.min(start + self.longest);
            let mut found = None;
            let map = if start > 0 { &self.rest } else { &self.first };
            while start < end {
                if let Some(id) = map.get(&word[bounds[start]..bounds[end]]) {
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
        // ASCII's control characters are its only ones (category Cc), looked up quickly.
        _ if c.is_ascii() => c.is_ascii_control(),
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
        || !c.is_ascii()
            && matches!(
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
    if cleaned.is_ascii() {
        // NFD leaves ASCII as it is, and it has no marks to strip.
        cleaned.make_ascii_lowercase();
        return cleaned;
    }
    let stripped: String = cleaned.nfd().filter(|c| get_general_category(*c) != G::NonspacingMark).collect();
    stripped.to_lowercase()
}

/// BertPreTokenizer: split on whitespace (dropped) and punctuation (each mark its own word).
pub fn pre_tokenize(text: &str) -> Vec<&str> {
    let mut words = vec![];
    let mut start = None; // byte offset where the current word began
    for (i, c) in text.char_indices() {
        let punct = is_punct(c);
        if c.is_whitespace() || punct {
            if let Some(s) = start.take() {
                words.push(&text[s..i]);
            }
            if punct {
                words.push(&text[i..i + c.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
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
        // Again, the words now held: the same pieces.
        for (text, want) in cases {
            assert_eq!(t.encode(text), *want, "{text:?} (held)");
        }
    }

    #[test]
    fn normalizer_and_pre_tokenizer() {
        assert_eq!(normalize("Héllo\tWörld"), "hello world");
        // The ASCII fast path: controls dropped, whitespace to spaces, lower-cased.
        assert_eq!(normalize("\u{7}AbC\tX\r\nY\u{7f}"), "abc x  y");
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
