//! Text analysis shared by the embedders, the bm25 rung and recall's word coverage: words,
//! stop words, a light stemmer, the query terms and coverage built on them, and a lesson's
//! prose without its code spans; and [`redact`], the one place a text is judged to hold a
//! secret.
//!
//! A leaf crate: it depends on no other crate, so that every domain that reads words reads
//! them the same way, and every write path redacts the same way, without depending on another
//! domain.

pub mod redact;
pub mod unsafe_fix;

/// Lower-cased alphanumeric words (`_` and `-` split words; digits kept).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
}

static STOP: WordSet = WordSet::new(&[
    "a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "onto", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that",
    "these", "those", "i", "my", "me", "we", "our", "you", "your", "he", "she", "they", "them", "their", "do", "does",
    "did", "doing", "so", "not", "no", "can", "could", "should", "would", "will", "just", "than", "too", "very", "how",
    "what", "when", "where", "which", "who", "why", "there", "here", "up", "out", "about", "after", "before", "again",
    "keeps", "get", "gets", "got", "use", "using", "used", "via", "s", "t", "have", "has", "had", "all", "any", "some",
    "each", "one",
]);

/// A fixed list of words looked up by hash: the lists are read for every word of every note
/// written and every intent ranked, and a scan compared each word with each entry.
pub struct WordSet {
    list: &'static [&'static str],
    set: std::sync::OnceLock<std::collections::HashSet<&'static str>>,
}

impl WordSet {
    pub const fn new(list: &'static [&'static str]) -> WordSet {
        WordSet { list, set: std::sync::OnceLock::new() }
    }

    /// The entry equal to `w`, if the list has it.
    pub fn get(&self, w: &str) -> Option<&'static str> {
        self.set.get_or_init(|| self.list.iter().copied().collect()).get(w).copied()
    }

    pub fn contains(&self, w: &str) -> bool {
        self.get(w).is_some()
    }
}

/// True for words too common to carry meaning.
pub fn is_stop(w: &str) -> bool {
    STOP.contains(w)
}

/// A light English suffix stripper (enough to join plural and -ing/-ed forms).
pub fn stem(w: &str) -> &str {
    let n = w.len();
    if n <= 3 || !w.is_ascii() {
        return w;
    }
    for suf in ["ing", "ed", "es", "s"] {
        if let Some(base) = w.strip_suffix(suf) {
            if base.len() >= 3 && !(suf == "s" && base.ends_with('s')) {
                return base;
            }
        }
    }
    w
}

/// The content words of an intent, stemmed, each once.
pub fn query_terms(intent: &str) -> Vec<String> {
    let mut terms: Vec<String> = vec![];
    for w in words(intent).iter().filter(|w| !is_stop(w)) {
        let t = stem(w).to_string();
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    terms
}

/// The share of `terms` (from [`query_terms`]) found among a note's stemmed words, in [0, 1].
pub fn coverage(terms: &[String], intent: &str, delta: &str) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    let mut have: std::collections::HashSet<String> = Default::default();
    for text in [intent, delta] {
        have.extend(words(text).iter().map(|w| stem(w).to_string()));
    }
    terms.iter().filter(|t| have.contains(t.as_str())).count() as f32 / terms.len() as f32
}

/// `text` without its inline code spans (between backticks), whitespace collapsed. An
/// unclosed backtick keeps the rest of the text; a text that is all code is returned whole.
pub fn prose(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let mut kept = String::with_capacity(text.len());
    for (i, part) in parts.iter().enumerate() {
        // Odd parts are inside a span, unless the last backtick is unclosed.
        let closed = i + 1 < parts.len() || parts.len() % 2 == 1;
        if i % 2 == 0 || !closed {
            kept.push_str(part);
        }
        kept.push(' ');
    }
    let mut out = String::with_capacity(kept.len());
    for w in kept.split_whitespace() {
        let glued = w.starts_with([',', ';', '.', ':', ')']) && !out.is_empty();
        if !out.is_empty() && !glued {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.chars().any(char::is_alphanumeric) {
        out
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_table() {
        let cases: &[(&str, &str)] = &[
            ("use `jq -r` for raw output, not `jq`.", "use for raw output, not."),
            ("no code here", "no code here"),
            ("`a` and `b`; then `c`", "and; then"),
            ("unclosed `tick keeps the rest", "unclosed tick keeps the rest"),
            ("`all code`", "`all code`"),
            ("a\n `x`  b", "a b"),
        ];
        for (text, want) in cases {
            assert_eq!(prose(text), *want, "{text:?}");
        }
    }

    #[test]
    fn stems() {
        for (w, s) in [("strings", "string"), ("running", "runn"), ("passed", "pass"), ("class", "class"), ("is", "is")]
        {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn coverage_table() {
        assert_eq!(
            query_terms("Cannot iterate over the nulls, iterating"),
            ["cannot", "iterate", "over", "null", "iterat"]
        );
        let cases: &[(&str, &str, &str, f32)] = &[
            (
                "jq error Cannot iterate over null",
                "Cannot iterate over null",
                "`.items[]` on a missing key errors",
                5.0 / 6.0,
            ),
            ("restart crashed services", "restart on failure", "`Restart=on-failure` restarts crashed services", 1.0),
            ("my daemon dies at logout", "run services as a normal user", "units stop at logout", 1.0 / 3.0),
            ("the of and", "anything", "at all", 0.0),
            ("", "x", "y", 0.0),
        ];
        for (intent, ni, nd, want) in cases {
            let got = coverage(&query_terms(intent), ni, nd);
            assert!((got - want).abs() < 1e-6, "{intent:?}: {got} != {want}");
        }
    }
}
