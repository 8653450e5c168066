//! Features of one observation's lesson, for studying a learned judge of what the rules of
//! the historian's filter let through (`cargo xtask study historian-features`, which adds the
//! lesson's static-table vector). Pure text work like the filter: no disk, no panics.
//!
//! Each feature is a number with a stable name ([`NAMES`]), chosen for a kind of junk the rules
//! miss on the blind sets (docs/historian.md, "How well it works"):
//!
//! - restatements in other words: the best cosine ([`filter::Context::similarity`]) to a
//!   sentence, clause or pair of sentences of SKILL.md and to a note or one of its clauses, the
//!   best word containment both ways, the share of the lesson's words SKILL.md never writes;
//! - task facts without a marker: names in prose (capitalised words inside a sentence,
//!   hyphenated names), numbers in prose, words that point at this run (*this*, *here*,
//!   *our*, *now*);
//! - narration without a leading past tense: the share of past-tense words, a passive past
//!   (*was regenerated*), a start in *-ing* or *now*, a label and a colon ("Task complete:");
//! - what makes a line a rule: a code span, a flag, a version, a modal, a word of cause or
//!   condition, a negation, an imperative start, a present *is*/*are*/*does*.

use std::collections::HashSet;

use skillmem::historian::filter::{self, Context};

/// The names of [`features`]' values, in order.
pub const NAMES: &[&str] = &[
    "len_log",
    "words",
    "sentences",
    "code_span",
    "flag",
    "version",
    "number",
    "numbers_in_prose",
    "first_person",
    "past_ratio",
    "starts_past",
    "passive_past",
    "starts_imperative",
    "starts_ing",
    "starts_now",
    "label_colon",
    "modal",
    "rule_word",
    "negations",
    "present",
    "deictic",
    "caps_in_prose",
    "hyphen_names",
    "skill_named",
    "ends_period",
    "question",
    "cos_md",
    "cos_note",
    "contain_md",
    "contain_note",
    "novel_md",
];

/// Past forms that do not end in *-ed*.
const IRREGULAR_PAST: &[&str] = &[
    "was",
    "were",
    "had",
    "did",
    "ran",
    "made",
    "got",
    "went",
    "took",
    "gave",
    "found",
    "saw",
    "wrote",
    "built",
    "kept",
    "left",
    "became",
    "came",
    "began",
    "broke",
    "chose",
    "drew",
    "fell",
    "felt",
    "forgot",
    "held",
    "knew",
    "led",
    "lost",
    "meant",
    "paid",
    "rose",
    "said",
    "sent",
    "sold",
    "spent",
    "stood",
    "told",
    "thought",
    "threw",
    "understood",
    "won",
    "woke",
    "spun",
    "brought",
    "caught",
    "fought",
    "taught",
    "bought",
];

/// Words in *-ed* that are no past tense.
const NOT_PAST: &[&str] = &[
    "need",
    "speed",
    "seed",
    "feed",
    "embed",
    "bed",
    "red",
    "shed",
    "indeed",
    "proceed",
    "exceed",
    "succeed",
    "hundred",
    "bred",
    "shred",
    "ted",
    "med",
    "fixed-size",
];

/// Verbs a line of advice starts with, besides the filter's own list (`filter::IMPERATIVE`).
const MORE_IMPERATIVE: &[&str] = &[
    "don't", "do", "never", "always", "prefix", "export", "list", "include", "specify", "mount", "wait", "feed",
    "redirect", "create", "open", "close", "clear", "test", "verify", "pipe", "point", "match", "bind", "map", "sort",
];

const MODALS: &[&str] =
    &["can", "will", "should", "must", "may", "might", "could", "would", "won't", "can't", "cannot"];

const RULE_WORDS: &[&str] = &[
    "because",
    "unless",
    "if",
    "when",
    "whenever",
    "only",
    "instead",
    "otherwise",
    "rather",
    "until",
    "before",
    "after",
    "so",
    "since",
    "while",
    "without",
    "unlike",
    "except",
];

const NEGATING: &[&str] = &["not", "never", "no", "none", "nor", "cannot", "without", "unless", "only", "until"];

const PRESENT: &[&str] = &["is", "are", "isn't", "aren't", "does", "doesn't", "do", "don't", "has", "have"];

const DEICTIC: &[&str] = &["this", "these", "here", "our", "ours", "now", "currently", "today", "us"];

const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'd", "we", "we're", "we've", "we'd", "my", "me"];

/// The words of a text as written, lower-cased, punctuation trimmed (`'` and `-` kept).
fn plain_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'').replace('\u{2019}', "'"))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

fn is_past(w: &str) -> bool {
    IRREGULAR_PAST.contains(&w)
        || (w.len() > 4 && w.ends_with("ed") && w.chars().all(|c| c.is_ascii_lowercase()) && !NOT_PAST.contains(&w))
}

fn flag(t: &str) -> bool {
    let t = t.trim_start_matches(['(', '`', '"', '\'']);
    let rest = t.strip_prefix("--").or_else(|| t.strip_prefix('-'));
    rest.and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_alphabetic())
}

fn version(t: &str) -> bool {
    let b = t.as_bytes();
    b.windows(3).any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
}

/// The best of `f` over the units a filter compares a lesson with, 0 when there are none.
fn best(units: impl Iterator<Item = String>, f: impl Fn(&str) -> f32) -> f32 {
    units.map(|u| f(&u)).fold(0.0, f32::max)
}

/// The share of `mine` found in `theirs`, taken the smaller way round (containment both ways).
fn containment(mine: &HashSet<String>, theirs: &HashSet<String>) -> f32 {
    if mine.is_empty() || theirs.is_empty() {
        return 0.0;
    }
    let both = mine.intersection(theirs).count() as f32;
    (both / mine.len() as f32).min(both / theirs.len() as f32)
}

/// The features of `lesson` about `skill`, in the order of [`NAMES`]. Cosines are 0 without
/// [`Context::similarity`], and SKILL.md's and the notes' features 0 when they are unknown.
pub fn features(skill: &str, lesson: &str, ctx: &Context<'_>) -> Vec<f32> {
    let lesson = lesson.trim();
    let prose = skillmem::text::prose(lesson);
    let ws = plain_words(lesson);
    let pws = plain_words(&prose);
    let n = ws.len().max(1) as f32;
    let first = pws.first().map(String::as_str).unwrap_or("");
    let b = |x: bool| if x { 1.0 } else { 0.0 };
    let count = |list: &[&str], ws: &[String]| ws.iter().filter(|w| list.contains(&w.as_str())).count() as f32;
    let sentences = filter::sentence_count(lesson) as f32;
    // Capitalised words of the prose that do not start a sentence: names of things.
    let raw: Vec<&str> = prose.split_whitespace().collect();
    let caps = raw
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let starts = *i == 0 || raw[i - 1].ends_with(['.', ':', '!', '?']);
            !starts && w.chars().next().is_some_and(char::is_uppercase)
        })
        .count() as f32;
    let hyphen_names = pws
        .iter()
        .filter(|w| {
            let parts: Vec<&str> = w.split('-').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric()))
        })
        .count() as f32;
    let past = ws.iter().filter(|w| is_past(w)).count() as f32;
    let passive = ws.windows(2).any(|p| ["was", "were", "been", "got"].contains(&p[0].as_str()) && is_past(&p[1]));
    let label_colon = lesson.split_whitespace().take(3).any(|w| w.ends_with(':') && !w.starts_with('`'));

    let mine = filter::terms(lesson);
    let (cos_md, cos_note) = match ctx.similarity {
        Some(sim) => {
            let md = ctx.skill_md.map(|md| {
                let body = filter::body(md);
                best(filter::units(body).map(str::to_string).chain(filter::pairs(body)), |u| (sim.0)(lesson, u))
            });
            let notes = best(
                ctx.notes
                    .iter()
                    .flat_map(|(_, note)| std::iter::once(note.as_str()).chain(filter::units(note)))
                    .map(str::to_string),
                |u| (sim.0)(lesson, u),
            );
            (md.unwrap_or(0.0), notes)
        }
        None => (0.0, 0.0),
    };
    let (contain_md, novel_md) = match ctx.skill_md {
        Some(md) => {
            let body = filter::body(md);
            let all = filter::terms(body);
            let novel = if mine.is_empty() { 0.0 } else { mine.difference(&all).count() as f32 / mine.len() as f32 };
            (best(filter::units(body).map(str::to_string), |u| containment(&mine, &filter::terms(u))), novel)
        }
        None => (0.0, 1.0),
    };
    let contain_note = best(
        ctx.notes
            .iter()
            .flat_map(|(_, note)| std::iter::once(note.as_str()).chain(filter::units(note)))
            .map(str::to_string),
        |u| containment(&mine, &filter::terms(u)),
    );
    let skill_lower = skill.to_lowercase();
    vec![
        (1.0 + lesson.chars().count() as f32).ln(),
        ws.len() as f32,
        sentences,
        b(lesson.contains('`')),
        b(lesson.split_whitespace().any(flag)),
        b(version(lesson)),
        b(lesson.chars().any(|c| c.is_ascii_digit())),
        prose.split_whitespace().filter(|w| w.chars().any(|c| c.is_ascii_digit())).count() as f32,
        b(count(FIRST_PERSON, &pws) > 0.0),
        past / n,
        b(is_past(first)),
        b(passive),
        b(filter::IMPERATIVE.contains(&first) || MORE_IMPERATIVE.contains(&first)),
        b(first.len() > 4 && first.ends_with("ing")),
        b(first == "now"),
        b(label_colon),
        count(MODALS, &pws),
        count(RULE_WORDS, &pws),
        count(NEGATING, &pws) + pws.iter().filter(|w| w.ends_with("n't")).count() as f32,
        count(PRESENT, &pws),
        count(DEICTIC, &pws),
        caps,
        hyphen_names,
        b(!skill_lower.is_empty() && ws.contains(&skill_lower)),
        b(lesson.ends_with('.')),
        b(lesson.ends_with('?')),
        cos_md,
        cos_note,
        contain_md,
        contain_note,
        novel_md,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str, v: &[f32]) -> f32 {
        v[NAMES.iter().position(|n| *n == name).unwrap()]
    }

    #[test]
    fn one_value_a_name_and_shapes_read_as_meant() {
        let ctx = Context::default();
        let v = features("uv", "The lockfile was regenerated and committed.", &ctx);
        assert_eq!(v.len(), NAMES.len());
        assert_eq!(get("passive_past", &v), 1.0);
        assert!(get("past_ratio", &v) > 0.3);
        let v = features("uv", "Use `uv run --frozen` in CI; it never touches uv.lock.", &ctx);
        assert_eq!((get("code_span", &v), get("flag", &v), get("starts_imperative", &v)), (1.0, 1.0, 1.0));
        assert_eq!((get("skill_named", &v), get("negations", &v), get("sentences", &v)), (1.0, 1.0, 1.0));
        let v = features("podman", "Now running the deploy from the Payments repo.", &ctx);
        assert_eq!((get("starts_now", &v), get("caps_in_prose", &v), get("deictic", &v)), (1.0, 1.0, 1.0));
        let v = features("x", "Task complete: all done", &ctx);
        assert_eq!(get("label_colon", &v), 1.0);
    }

    #[test]
    fn restatement_features_read_the_skill_and_its_notes() {
        let md = "---\nname: uv\n---\n# uv\n\nRun `uv sync` before the tests. Never edit uv.lock by hand.\n";
        let notes = vec![(1, "uv caches wheels in ~/.cache/uv.".to_string())];
        let ctx = Context { skill_md: Some(md), notes: &notes, ..Default::default() };
        let v = features("uv", "Never edit uv.lock by hand.", &ctx);
        assert_eq!(get("contain_md", &v), 1.0);
        assert_eq!(get("novel_md", &v), 0.0);
        assert!(get("contain_note", &v) < 0.5);
        assert_eq!(get("cos_md", &v), 0.0, "no similarity given");
        let same = |a: &str, b: &str| if a == b { 1.0 } else { 0.5 };
        let ctx = Context { similarity: Some(filter::Similarity(&same)), ..ctx };
        let v = features("uv", "uv caches wheels in ~/.cache/uv.", &ctx);
        assert_eq!((get("cos_note", &v), get("cos_md", &v)), (1.0, 0.5));
    }

    #[test]
    fn no_input_panics() {
        for s in ["", " ", "`", "--", "é-", "ed", "a.1", "`a` `", "X: Y: Z:", "\u{2019}ed"] {
            assert_eq!(features("", s, &Context::default()).len(), NAMES.len());
        }
    }
}
