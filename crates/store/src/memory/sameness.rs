//! When two notes say the same thing: the rule a write is merged by (`store::write`), and the
//! rule that marks a new version of a lesson (a *conflicting pair*).
//!
//! Closeness in meaning (the cosine of the two notes' vectors) is not enough: "always pass
//! --no-verify" and "never pass --no-verify" are as close as two notes get, and so are the
//! lessons about partition 21 and partition 35. A write is merged into a note only when, on
//! top of the cosine, it names the same **specifics** in the same order (numbers and
//! versions, code spans, flags, paths, identifiers), has the same **polarity** (an even or
//! odd number of negations: never, not, don't, without, ...) and the same **contrast words**
//! (before/after, enable/disable, ...). Close in meaning but other specifics reads as a new
//! version of the same lesson ([`Relation::Update`]), unless the specifics that differ name
//! another thing (a number after an entity word: partition 21, shard 7, customer 4411,
//! PROJ-118), which makes the two distinct lessons.
//!
//! Pure text in, plain values out; measured on labelled pairs by `skillmem eval merge`
//! (bench/merge/, docs/protocol.md "A note's life").

use crate::text::WordSet;
use std::collections::BTreeSet;

/// How a new note relates to an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// Says the same thing: the write is a hit on the existing note.
    Same,
    /// The same subject with other specifics or the other polarity: a new version; both are
    /// kept and recorded as a conflicting pair (the newer leads).
    Update,
    /// Different lessons: both kept, nothing recorded.
    Distinct,
}

impl Relation {
    /// The spelling `skillmem eval merge` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Same => "same",
            Relation::Update => "update",
            Relation::Distinct => "distinct",
        }
    }
}

/// The thresholds a relation is judged by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Cosine at or above which a note that names the same specifics is merged
    /// (`memory.dedup_threshold`).
    pub merge: f32,
    /// Cosine at or above which two notes that share a specific, or differ only in polarity
    /// or a contrast word, are taken for the same subject (`memory.conflict_threshold`).
    pub subject: f32,
}

impl Thresholds {
    /// The least cosine at which a stored note can relate to a new one otherwise than
    /// [`Relation::Distinct`] (a restatement aside): where a write's search for neighbours stops.
    pub fn search(self) -> f32 {
        self.subject.min(SWAPPED_SUBJECT)
    }
}

/// What [`relate`] compares of a text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Signature {
    /// The specifics, in the order first written, each once.
    pub specifics: Vec<String>,
    /// Those of [`Signature::specifics`] that name a thing (partition 21, PROJ-118).
    pub ids: BTreeSet<String>,
    /// An odd number of negations.
    pub negated: bool,
    /// The contrast words present (see [`CONTRASTS`]).
    pub contrasts: BTreeSet<&'static str>,
    /// The word each negation bears on (the next content word): "milliseconds, not seconds"
    /// is not "seconds, not milliseconds".
    pub negated_words: BTreeSet<String>,
    /// With two specifics or more, which of them share a clause with a negation (`"not"`) or
    /// with a contrast word: "an error in src/ but allowed in scripts/" is not "allowed in src/
    /// but an error in scripts/", and "eu-west-1 has it; us-east-1 does not" is not the other
    /// way round. (With one specific there is nothing to swap, and a clause written first or
    /// last says the same.)
    pub roles: BTreeSet<(String, String)>,
    /// The content words, stemmed ([`crate::text::query_terms`]).
    pub words: BTreeSet<String>,
    /// The content words of the prose around the specifics (code spans, flags, paths,
    /// identifiers and numbers left out), stemmed.
    pub prose: BTreeSet<String>,
}

/// How many content words two notes may differ in and still say the same thing.
pub const MERGE_WORDS_APART: usize = 1;

/// Words that turn a lesson around. Contractions are read without their apostrophe.
static NEGATIONS: WordSet = WordSet::new(&[
    "not",
    "never",
    "no",
    "dont",
    "don't",
    "doesnt",
    "doesn't",
    "didnt",
    "didn't",
    "isnt",
    "isn't",
    "arent",
    "aren't",
    "wasnt",
    "wasn't",
    "cannot",
    "cant",
    "can't",
    "wont",
    "won't",
    "shouldnt",
    "shouldn't",
    "mustnt",
    "mustn't",
    "without",
    "avoid",
    "nor",
    "none",
    "neither",
    "unless",
    "instead",
    "rather",
]);

/// Words that end a clause (besides `, ; : .` and brackets).
static CLAUSE_ENDS: WordSet = WordSet::new(&[
    "but",
    "so",
    "because",
    "since",
    "or",
    "otherwise",
    "unless",
    "while",
    "whereas",
    "though",
    "although",
]);

/// Pairs of words whose swap turns a lesson into another: each word stands for itself.
static CONTRASTS: WordSet = WordSet::new(&[
    "before",
    "after",
    "enable",
    "enabled",
    "disable",
    "disabled",
    "true",
    "false",
    "on",
    "off",
    "add",
    "remove",
    "allow",
    "allowed",
    "deny",
    "denied",
    "include",
    "exclude",
    "increase",
    "decrease",
    "higher",
    "lower",
    "more",
    "less",
    "first",
    "last",
    "min",
    "max",
    "minimum",
    "maximum",
    "start",
    "stop",
    "open",
    "close",
    "above",
    "below",
    "older",
    "newer",
    "earlier",
    "later",
    "inside",
    "outside",
    "upper",
    "lowercase",
    "uppercase",
    "sync",
    "async",
    "public",
    "private",
    "required",
    "optional",
    "success",
    "failure",
    "accept",
    "reject",
    "new",
    "old",
    "legacy",
]);

/// Words after which a number names a thing rather than a value.
static ENTITIES: WordSet = WordSet::new(&[
    "partition",
    "shard",
    "customer",
    "client",
    "user",
    "ticket",
    "issue",
    "pr",
    "job",
    "build",
    "run",
    "step",
    "table",
    "row",
    "order",
    "account",
    "tenant",
    "project",
    "page",
    "line",
    "item",
    "case",
    "task",
    "id",
    "node",
    "cluster",
    "region",
    "room",
    "invoice",
    "batch",
    "chapter",
    "section",
    "phase",
    "stage",
    "test",
    "#",
]);

/// The signature of a text (see the module docs).
pub fn signature(text: &str) -> Signature {
    #[derive(Default)]
    struct Clause {
        specifics: Vec<String>,
        negations: usize,
        contrasts: Vec<&'static str>,
    }
    let mut sig = Signature { words: crate::text::query_terms(text).into_iter().collect(), ..Default::default() };
    let mut clauses: Vec<Clause> = vec![Clause::default()];
    let push = |s: String, id: bool, sig: &mut Signature, clause: &mut Clause| {
        if s.is_empty() {
            return;
        }
        if id {
            sig.ids.insert(s.clone());
        }
        if !sig.specifics.contains(&s) {
            sig.specifics.push(s.clone());
        }
        clause.specifics.push(s);
    };
    // Code spans are read first: each is one specific, its words not read again; the text
    // around them is read word by word, a span standing where it was.
    let mut tokens: Vec<(bool, &str)> = vec![];
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        tokens.extend(rest[..a].split_whitespace().map(|w| (false, w)));
        let after = &rest[a + 1..];
        match after.find('`') {
            Some(b) => {
                tokens.push((true, after[..b].trim()));
                rest = &after[b + 1..];
            }
            None => rest = after,
        }
    }
    tokens.extend(rest.split_whitespace().map(|w| (false, w)));
    let caps_words = tokens.iter().filter(|(code, w)| !code && is_caps(trim(w))).count();
    let shouting = caps_words * 2 > tokens.len();
    let mut negations = 0usize;
    let mut previous = String::new();
    let mut after_negation = false;
    let mut prose = String::new();
    for (code, raw) in tokens {
        let clause = clauses.last_mut().expect("one clause at least");
        if code {
            push(raw.to_string(), false, &mut sig, clause);
            after_negation = false;
            continue;
        }
        let specifics_before = clause.specifics.len();
        let w = trim(raw);
        let lower = w.to_lowercase().replace('\u{2019}', "'");
        let negation = NEGATIONS.contains(&lower) || lower.ends_with("n't");
        if after_negation && !negation && !w.is_empty() && !crate::text::is_stop(&lower) {
            sig.negated_words.insert(lower.clone());
            after_negation = false;
        }
        if negation {
            negations += 1;
            clause.negations += 1;
            after_negation = true;
        } else if w.is_empty() {
        } else if let Some(c) = CONTRASTS.get(&lower) {
            sig.contrasts.insert(c);
            clause.contrasts.push(c);
        } else if is_flag(w) {
            push(w.to_string(), false, &mut sig, clause);
        } else if w.chars().any(|c| c.is_ascii_digit()) {
            let id = ENTITIES.contains(&previous) || w.starts_with('#') || is_ticket(w);
            push(lower.clone(), id, &mut sig, clause);
        } else if is_path(w) || is_identifier(w) || (!shouting && is_caps(w)) {
            push(lower.clone(), false, &mut sig, clause);
        }
        if clause.specifics.len() == specifics_before {
            prose.push_str(raw);
            prose.push(' ');
        }
        previous = lower.trim_end_matches("'s").to_string();
        let ends = raw.ends_with([',', ';', ':', '.', ')', '(']) && !is_path(raw) || CLAUSE_ENDS.contains(&lower);
        if ends {
            clauses.push(Clause::default());
        }
    }
    sig.prose = crate::text::query_terms(&prose).into_iter().collect();
    sig.negated = negations % 2 == 1;
    if sig.specifics.len() >= 2 {
        for c in &clauses {
            for s in &c.specifics {
                if c.negations % 2 == 1 {
                    sig.roles.insert(("not".to_string(), s.clone()));
                }
                for k in &c.contrasts {
                    sig.roles.insert((k.to_string(), s.clone()));
                }
            }
        }
    }
    sig
}

/// How the note `new` relates to the stored note `old`, whose vectors have cosine `cosine`.
/// A restatement ([`restates`]) is the same lesson whatever the cosine.
pub fn relate(old: &str, new: &str, cosine: f32, t: Thresholds) -> Relation {
    if restates(old, new) {
        return Relation::Same;
    }
    relate_signatures(&signature(old), &signature(new), cosine, t)
}

/// The words of `text` as compared by [`restates`]: whitespace collapsed, prose case-folded,
/// while code spans, flags, paths and identifiers keep their exact spelling (`ls -R` is not
/// `ls -r`, `RUST_LOG` is not `rust_log`).
pub fn folded(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = text;
    let fold_words = |part: &str, out: &mut Vec<String>| {
        for w in part.split_whitespace() {
            let core = trim(w);
            if is_flag(core) || is_path(core) || is_identifier(core) {
                out.push(w.to_string());
            } else {
                out.push(w.to_lowercase());
            }
        }
    };
    while let Some(a) = rest.find('`') {
        fold_words(&rest[..a], &mut out);
        let after = &rest[a + 1..];
        match after.find('`') {
            Some(b) => {
                out.push(format!("`{}`", after[..b].split_whitespace().collect::<Vec<_>>().join(" ")));
                rest = &after[b + 1..];
            }
            None => {
                out.push("`".to_string());
                rest = after;
            }
        }
    }
    fold_words(rest, &mut out);
    out
}

/// Two texts that are equal after collapsing whitespace and case-folding the prose say the
/// same lesson, always: a restatement in other capitals or spacing is never a new note, nor a
/// new version of one.
pub fn restates(a: &str, b: &str) -> bool {
    folded(a) == folded(b)
}

/// The share of the shorter text's content words that the other text has too (the overlap
/// coefficient of [`Signature::words`], or of [`Signature::prose`] where that is higher): a new version of a lesson restates most of it with a
/// change, where two lessons that merely share a subject (one tool, one flag) share little else.
pub fn word_overlap(a: &Signature, b: &Signature) -> f32 {
    let overlap = |x: &BTreeSet<String>, y: &BTreeSet<String>| {
        let shorter = x.len().min(y.len());
        if shorter == 0 {
            return 0.0;
        }
        x.intersection(y).count() as f32 / shorter as f32
    };
    // Read with its specifics (a short note is mostly its flags and names) and without them
    // (a long one shares a tool's name with every lesson of its skill): the better of the two.
    overlap(&a.words, &b.words).max(overlap(&a.prose, &b.prose))
}

/// A new version of a lesson shares more than this [`word_overlap`] with it: most of its words.
pub const UPDATE_OVERLAP: f32 = 0.5;

/// The cosine from which two notes naming the same versions in swapped roles are taken for one
/// subject: the swap is itself a sign of one pin, so it is believed below
/// [`Thresholds::subject`] (a new version reworded around the swap reads further apart).
pub const SWAPPED_SUBJECT: f32 = 0.6;

/// The version numbers a signature names, in the order first named, each once: `0.8`, `v4`
/// and `upload-artifact@v4` all name a version (`0.8`, `4`, `4`). Ids (partition 21) are not
/// versions.
fn versions(s: &Signature) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for sp in s.specifics.iter().filter(|sp| !s.ids.contains(*sp)) {
        // The version is the specific's last run of digits and dots, after a `v`, `@` or the
        // start: `node18` is a name, `v18` and `@18.2` are versions.
        let t = sp.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        let start = t.rfind(|c: char| !(c.is_ascii_digit() || c == '.')).map_or(0, |i| i + 1);
        let run = t[start..].trim_matches('.');
        let before = t[..start].chars().last();
        let prefix_ok = match before {
            None => true,
            Some('v' | 'V') => t[..start.saturating_sub(1)].chars().last().is_none_or(|c| !c.is_ascii_alphanumeric()),
            Some(c) => !c.is_ascii_alphanumeric(),
        };
        if !run.is_empty() && run.chars().any(|c| c.is_ascii_digit()) && prefix_ok && !out.iter().any(|v| v == run) {
            out.push(run.to_string());
        }
    }
    out
}

/// The same two or more version numbers, named in another order: "pin to 0.8; 0.9 breaks it"
/// and "pin to 0.9; 0.8 is unmaintained" are two versions of one pin.
fn swapped_versions(a: &Signature, b: &Signature) -> bool {
    let (va, vb) = (versions(a), versions(b));
    if va.len() < 2 || va == vb {
        return false;
    }
    let (mut sa, mut sb) = (va.clone(), vb.clone());
    sa.sort();
    sb.sort();
    sa == sb
}

/// [`relate`] on signatures already read.
pub fn relate_signatures(a: &Signature, b: &Signature, cosine: f32, t: Thresholds) -> Relation {
    let same_turn = a.negated == b.negated && a.contrasts == b.contrasts;
    // The same words but for one (a filler word, a plural): a new word in either is something
    // the other does not say.
    let words_apart = a.words.symmetric_difference(&b.words).count();
    let same_specifics: bool = {
        let (x, y): (BTreeSet<&String>, BTreeSet<&String>) =
            (a.specifics.iter().collect(), b.specifics.iter().collect());
        x == y
    };
    if cosine >= t.merge
        && same_specifics
        && same_turn
        && a.negated_words == b.negated_words
        && a.roles == b.roles
        && words_apart <= MERGE_WORDS_APART
    {
        return Relation::Same;
    }
    // A new version restates most of the lesson it updates; notes that share a subject (a
    // tool, a flag) but little else are two lessons, however close their vectors.
    if word_overlap(a, b) <= UPDATE_OVERLAP {
        return Relation::Distinct;
    }
    if cosine >= SWAPPED_SUBJECT && swapped_versions(a, b) {
        return Relation::Update;
    }
    if cosine < t.subject {
        return Relation::Distinct;
    }
    // Specifics that differ and name a thing: another partition, another ticket.
    let sa: BTreeSet<&String> = a.specifics.iter().collect();
    let sb: BTreeSet<&String> = b.specifics.iter().collect();
    if sa.symmetric_difference(&sb).any(|s| a.ids.contains(*s) || b.ids.contains(*s)) {
        return Relation::Distinct;
    }
    if !same_turn {
        return Relation::Update;
    }
    // Other specifics: the same subject when they share one (the tool or the flag a version
    // or a value is about), or when the two say everything else alike.
    let shared = sa.intersection(&sb).next().is_some();
    if shared || cosine >= t.merge {
        return Relation::Update;
    }
    Relation::Distinct
}

/// A word without the punctuation around it (a flag keeps its dashes, a path its slashes, a
/// call its brackets).
fn trim(w: &str) -> &str {
    const END: &[char] = &[']', '}', '"', '\'', '\u{201d}', '\u{2019}', ',', ';', ':', '.', '!', '?', '>', '*'];
    let mut w = w.trim_start_matches(['(', '[', '{', '"', '\'', '\u{201c}', '\u{2018}', '<', '*']);
    loop {
        let before = w.len();
        w = w.trim_end_matches(END);
        // `(v2),` and `ls -la)`: a closing bracket without its opening one.
        if w.ends_with(')') && w.matches(')').count() > w.matches('(').count() {
            w = &w[..w.len() - 1];
        }
        if w.len() == before {
            return w;
        }
    }
}

fn is_flag(w: &str) -> bool {
    let body = w.trim_start_matches('-');
    let dashes = w.len() - body.len();
    (1..=2).contains(&dashes) && body.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

fn is_path(w: &str) -> bool {
    if w.contains('/') && w.len() > 1 {
        return true;
    }
    if w.starts_with('~') || (w.starts_with('.') && w.len() > 1) {
        return true;
    }
    // tsconfig.json, Cargo.toml: a dot between letters, the part after it short.
    match w.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && w.len() > 4
                && !stem.ends_with('.')
        }
        None => false,
    }
}

fn is_identifier(w: &str) -> bool {
    if w.contains(['_', '=', '$', '@', '(', '<', '{']) || w.contains("::") {
        return true;
    }
    // camelCase / PascalCase with an inner capital after a lower-case letter.
    let cs: Vec<char> = w.chars().collect();
    cs.windows(2).any(|p| p[0].is_lowercase() && p[1].is_uppercase())
}

/// An acronym or constant: two or more capitals and nothing lower-case.
fn is_caps(w: &str) -> bool {
    w.chars().filter(|c| c.is_uppercase()).count() >= 2 && !w.chars().any(|c| c.is_lowercase())
}

/// PROJ-118, JIRA-7: capitals, a dash, digits.
fn is_ticket(w: &str) -> bool {
    match w.split_once('-') {
        Some((a, b)) => {
            a.len() >= 2
                && a.chars().all(|c| c.is_ascii_uppercase())
                && !b.is_empty()
                && b.chars().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_table() {
        // (text, specifics, ids, negated, contrasts)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], bool, &'a [&'a str]);
        let cases: &[Case] = &[
            ("Always pass --no-verify when pushing release tags.", &["--no-verify"], &[], false, &[]),
            ("Never pass --no-verify when pushing release tags.", &["--no-verify"], &[], true, &[]),
            ("Pin serde_yaml to 0.8; 0.9 breaks the parser.", &["serde_yaml", "0.8", "0.9"], &[], false, &[]),
            ("Lesson about partition 21: vacuum it after the migration.", &["21"], &["21"], false, &["after"]),
            (
                "Use `docker compose` (v2), not `docker-compose`.",
                &["docker compose", "v2", "docker-compose"],
                &[],
                true,
                &[],
            ),
            ("Ticket PROJ-118: the importer drops rows", &["proj-118"], &["proj-118"], false, &[]),
            ("Don't use npm ci; it deletes node_modules.", &["node_modules"], &[], true, &[]),
            ("Set RUST_LOG=debug to see frames.", &["rust_log=debug"], &[], false, &[]),
            ("Edit tsconfig.json and ~/.config/x, not src/", &["tsconfig.json", "~/.config/x", "src/"], &[], true, &[]),
            ("Use BEGIN IMMEDIATE for writes", &["begin", "immediate"], &[], false, &[]),
            ("NEVER EVER DO THIS AGAIN", &[], &[], true, &[]),
            ("Call flush() before close()", &["flush()", "close()"], &[], false, &["before"]),
            ("Use grep -l, not grep -L", &["-l", "-L"], &[], true, &[]),
            ("", &[], &[], false, &[]),
            ("`unclosed span and -x", &["-x"], &[], false, &[]),
            ("e.g. this", &[], &[], false, &[]),
        ];
        for (text, specifics, ids, negated, contrasts) in cases {
            let s = signature(text);
            assert_eq!(s.specifics, specifics.iter().map(|x| x.to_string()).collect::<Vec<_>>(), "{text:?}");
            assert_eq!(s.ids, ids.iter().map(|x| x.to_string()).collect(), "{text:?}");
            assert_eq!(s.negated, *negated, "{text:?}");
            assert_eq!(s.contrasts, contrasts.iter().copied().collect(), "{text:?}");
        }
    }

    #[test]
    fn folded_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("Use jq -r for raw strings.", "use  JQ -r  for RAW strings.", true),
            ("Use jq -r", "Use jq -R", false),
            ("Read ~/.Config/app", "read ~/.config/app", false),
            ("Set RUST_LOG=debug", "set RUST_LOG=debug", true),
            ("Set RUST_LOG=debug", "set rust_log=debug", false),
            ("Run `make  Build` first", "run `make Build`  first", true),
            ("Run `make Build` first", "run `make build` first", false),
            ("Run it.", "Run it", false),
            ("\tTabs\nand  lines ", "tabs and lines", true),
            ("`unclosed", "`UNCLOSED", true),
            ("", "  ", true),
        ];
        for (a, b, same) in cases {
            assert_eq!(restates(a, b), *same, "{a:?} / {b:?}: {:?} / {:?}", folded(a), folded(b));
        }
    }

    #[test]
    fn versions_table() {
        let cases: &[(&str, &[&str])] = &[
            ("Pin serde_yaml to 0.8; 0.9 breaks the parser.", &["0.8", "0.9"]),
            ("Use actions/upload-artifact@v4; v3 is deprecated", &["4", "3"]),
            ("Go 1.22 is required; 1.21 lacks the loop fix", &["1.22", "1.21"]),
            // A number after an entity word names a thing (node 18 of a cluster).
            ("Node 18 is required; Node 16 lacks fetch", &[]),
            ("Lesson about partition 21", &[]),
            ("node18 and python3 are names", &[]),
            ("Use Python 3.11, not 3.12.", &["3.11", "3.12"]),
        ];
        for (text, want) in cases {
            assert_eq!(versions(&signature(text)), want.iter().map(|v| v.to_string()).collect::<Vec<_>>(), "{text:?}");
        }
    }

    #[test]
    fn relation_table() {
        let t = Thresholds { merge: 0.9, subject: 0.7 };
        let cases: &[(&str, &str, f32, Relation)] = &[
            ("Always pass --no-verify", "Never pass --no-verify", 0.97, Relation::Update),
            ("Use jq -r for raw strings", "use jq -r for raw strings!", 0.99, Relation::Same),
            ("Use jq -r for raw strings", "use jq -r for raw strings!", 0.5, Relation::Distinct),
            ("partition 21: vacuum it", "partition 35: vacuum it", 0.99, Relation::Distinct),
            ("Pin serde_yaml to 0.8; 0.9 breaks", "Pin serde_yaml to 0.9; 0.8 is old", 0.95, Relation::Update),
            ("Use -r with jq", "Use -j with jq", 0.95, Relation::Update),
            ("Use -r with jq", "Use -j with jq", 0.8, Relation::Distinct),
            ("Run it before deploying", "Run it after deploying", 0.96, Relation::Update),
            ("Run it before deploying", "Run it after deploying", 0.6, Relation::Distinct),
            ("Set X_A=1", "Set X_B=2", 0.75, Relation::Distinct),
            ("Set X_A=1 for the port 80", "Set X_A=1 for the port 81", 0.75, Relation::Update),
            // Other capitals and spacing in the prose: the same lesson at any cosine.
            ("Use jq -r for raw strings", "Use JQ  -r for raw  strings", 0.4, Relation::Same),
            ("Use jq -r for raw strings", "use jq -r for raw strings", 0.0, Relation::Same),
            // Flags keep their case: another flag is another lesson or a new version.
            ("List them with ls -R first", "List them with ls -r first", 0.99, Relation::Update),
            ("Set RUST_LOG=debug to see frames", "Set rust_log=debug to see frames", 0.5, Relation::Distinct),
            // The same versions in swapped roles: a new version of one pin, below the subject
            // cosine too.
            (
                "Pin serde_yaml to 0.8; 0.9 breaks the parser.",
                "Pin serde_yaml to 0.9; 0.8 is unmaintained and 0.9 fixed the parser.",
                0.77,
                Relation::Update,
            ),
            (
                "Upload artifacts with actions/upload-artifact@v4; v3 is deprecated.",
                "Upload artifacts with actions/upload-artifact@v3; v4 breaks our merge step.",
                0.86,
                Relation::Update,
            ),
            ("Pin serde_yaml to 0.8; 0.9 breaks the parser.", "Pin serde_yaml to 0.8; 0.9 breaks the parser badly.", 0.5, Relation::Distinct),
            // Two lessons that share a tool and a flag but little else are not versions of one.
            (
                "`git rebase --abort` restores the branch to where it was before the rebase; `git rebase --quit` stops but keeps the current state.",
                "While a rebase is stopped you are on a detached HEAD and `git status` says \"interactive rebase in progress\"; finish or abort before switching branches.",
                0.88,
                Relation::Distinct,
            ),
            (
                "`-L` follows Location headers (up to 50, `--max-redirs` to change); without it you just get the 301/302 response.",
                "With `-L`, 301/302/303 responses make curl re-send as GET like browsers do; `--post301 --post302` keep POST.",
                0.85,
                Relation::Distinct,
            ),
        ];
        for (a, b, cos, want) in cases {
            assert_eq!(relate(a, b, *cos, t), *want, "{a:?} / {b:?} at {cos}");
        }
    }
}
