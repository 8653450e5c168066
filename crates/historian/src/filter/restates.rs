//! Rules 5 and 6, **restates a note** and **restates the skill**: a lesson that says again
//! what a note of the skill or a sentence of its SKILL.md says, in the same words or in
//! others.
//!
//! "Near-duplicate" is word containment over stemmed content words (code included): at least
//! 75% of the lesson's words are in the other text's unit and at least 60% of that unit's
//! words are in the lesson. Both directions are asked, so a lesson that restates a sentence
//! and adds a new fact of its own (new words) passes. Connectives ("since", "while") and
//! linking verbs ("means", "gives") are not counted, a few synonyms count as one word, and
//! the units are `text.rs`'s. With [`Context::similarity`], a restatement in other words is
//! one too: close by the static table to a sentence, a clause or a pair of adjacent
//! sentences of SKILL.md, or to a note or one of its clauses, naming no specific the source
//! does not write and negating no more often than it ([`PARAPHRASE_COSINE`], [`paraphrases`]).
//!
//! Owns the word lists of that comparison and [`terms`], which `features.rs` also counts by.
//! Must not embed anything itself: the only cosine it sees is the caller's, through
//! [`Context::similarity`].

use std::collections::HashSet;

use super::text::{body, has_word, pairs, units};
use super::{Context, Refusal, Similarity};
use crate::text::{is_stop, stem, words};

/// The cosine (static table) at or above which a lesson that names nothing its source does
/// not name is that source said again in other words. See [`paraphrases`]. Chosen on
/// `held-out-4.jsonl`, the first labelled set with restatements in other words that the word
/// test misses: 0.74 to 0.76 refuse no lesson of dev to held-out-4, and 0.72 refuses one of
/// dev and one of held-out-3 (docs/historian.md, "What gets in").
pub const PARAPHRASE_COSINE: f32 = 0.75;

/// Rules 5 and 6 by words: the first note with a unit the lesson [`restates`], then the first
/// such unit of SKILL.md.
pub(super) fn by_words(lesson: &str, ctx: &Context<'_>) -> Result<(), Refusal> {
    let mine = terms(lesson);
    for (id, note) in ctx.notes {
        if units(note).any(|u| restates(&mine, &terms(u))) {
            return Err(Refusal::RestatesNote(*id));
        }
    }
    if let Some(md) = ctx.skill_md {
        for u in units(body(md)) {
            if restates(&mine, &terms(u)) {
                return Err(Refusal::RestatesSkill(u.trim().to_string()));
            }
        }
    }
    Ok(())
}

/// Rules 5 and 6 in other words, when [`Context::similarity`] is known: the first note the
/// lesson [`paraphrases`] (whole or one of its units), then the first unit or pair of adjacent
/// sentences of SKILL.md.
pub(super) fn by_meaning(lesson: &str, ctx: &Context<'_>) -> Result<(), Refusal> {
    let Some(sim) = ctx.similarity else {
        return Ok(());
    };
    let mine = crate::memory::sameness::signature(lesson);
    for (id, note) in ctx.notes {
        if std::iter::once(note.as_str()).chain(units(note)).any(|u| paraphrases(sim, lesson, &mine, u)) {
            return Err(Refusal::RestatesNote(*id));
        }
    }
    if let Some(md) = ctx.skill_md {
        for u in units(body(md)).map(str::to_string).chain(pairs(body(md))) {
            if paraphrases(sim, lesson, &mine, &u) {
                return Err(Refusal::RestatesSkill(u.trim().to_string()));
            }
        }
    }
    Ok(())
}

/// Connectives and fillers that a restatement adds or drops without changing what is said
/// ("…, since the container just restarted" for "…; the container has just restarted").
const FILLER: &[&str] =
    &["since", "while", "whereas", "although", "though", "because", "also", "still", "none", "already", "even"];

/// Verbs that only link a cause to its effect ("a lower CRF *means* / *gives* / *makes* a
/// higher quality"): a paraphrase swaps one for another, so none is counted.
const LINKING: &[&str] = &[
    "mean", "means", "meant", "give", "gives", "gave", "given", "make", "makes", "made", "produce", "produces",
    "yield", "yields", "result", "results", "lead", "leads", "cause", "causes",
];

/// Words a paraphrase swaps for a synonym, and the one word they are counted as.
const SYNONYMS: &[(&str, &str)] = &[
    ("big", "large"),
    ("bigger", "larger"),
    ("biggest", "largest"),
    ("little", "small"),
    ("tiny", "small"),
    ("quick", "fast"),
    ("quicker", "faster"),
    ("begin", "start"),
    ("begins", "start"),
    ("starts", "start"),
    ("remain", "stay"),
    ("remains", "stay"),
    ("stays", "stay"),
    ("erase", "delete"),
    ("erases", "delete"),
    ("deletes", "delete"),
    ("remove", "delete"),
    ("removes", "delete"),
    ("display", "show"),
    ("displays", "show"),
    ("shows", "show"),
    ("print", "show"),
    ("prints", "show"),
];

/// The stemmed content words of a text, code included, synonyms counted as one word.
pub fn terms(text: &str) -> HashSet<String> {
    words(text)
        .iter()
        .filter(|w| !is_stop(w) && !FILLER.contains(&w.as_str()) && !LINKING.contains(&w.as_str()))
        .map(|w| {
            let w = SYNONYMS.iter().find(|(a, _)| a == w).map(|(_, b)| *b).unwrap_or(w);
            stem(w).to_string()
        })
        .collect()
}

/// True when `lesson` says what `unit` says: most of the lesson's words are the unit's, and
/// most of the unit's are the lesson's.
pub(super) fn restates(lesson: &HashSet<String>, unit: &HashSet<String>) -> bool {
    if lesson.len() < 2 || unit.len() < 2 {
        return false;
    }
    let both = lesson.intersection(unit).count() as f32;
    both / lesson.len() as f32 >= 0.75 && both / unit.len() as f32 >= 0.6
}

/// True when `lesson` (its signature `mine`) says `source` again in other words: close in
/// meaning by the static table ([`PARAPHRASE_COSINE`]), every specific of the lesson named by
/// the source ([`names`]), and no more negations or limits in the lesson than in the source
/// ([`negations`]; counted, so that a pair of sentences with one "only" does not cover a lesson
/// with three): "`systemctl enable` only creates the boot links; the unit does not start
/// now" is close to "Start now and at boot with `systemctl enable --now`" and says what it
/// does not.
pub(super) fn paraphrases(
    sim: Similarity<'_>,
    lesson: &str,
    mine: &crate::memory::sameness::Signature,
    source: &str,
) -> bool {
    let theirs = crate::memory::sameness::signature(source);
    if theirs.words.len() < 2 {
        return false;
    }
    let text = source.replace('`', "").to_lowercase();
    if !mine.specifics.iter().all(|x| theirs.specifics.contains(x) || names(&text, x)) {
        return false;
    }
    if negations(lesson) > negations(source) {
        return false;
    }
    (sim.0)(lesson, source) >= PARAPHRASE_COSINE
}

/// True when `text` (lower-cased, code spans' backticks dropped) names the specific `x`: as a
/// whole, or word by word where the lesson quotes one command as its own code span and the
/// source writes it inside a longer one (`state mv` in `terraform state mv`; `--scan` in
/// `redis-cli --scan --pattern 'user:*'`). A placeholder (`<id>`, `...`) stands for whatever
/// the source wrote there (`gh run rerun <id> --failed` for `gh run rerun RUN_ID --failed`).
/// A number, flag or word the source does not write is still new.
fn names(text: &str, x: &str) -> bool {
    let x = x.trim().to_lowercase();
    if x.is_empty() || has_word(text, &x) {
        return true;
    }
    x.split_whitespace()
        .map(|w| w.trim_matches(|c: char| ".,;:()'\"".contains(c)))
        .filter(|w| {
            let placeholder = (w.starts_with('<') && w.ends_with('>')) || *w == "..." || *w == "…";
            !w.is_empty() && !placeholder
        })
        .all(|w| has_word(text, w))
}

/// Words that negate or limit what a sentence says.
const NEGATING: &[&str] =
    &["not", "never", "no", "none", "nor", "neither", "cannot", "without", "unless", "only", "until"];

/// How many times `text` negates or limits something ("not", "only", "without", "doesn't"); a
/// hyphenated compound ("development-only") is one word and does not.
fn negations(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}').to_lowercase();
            let w = w.replace('\u{2019}', "'");
            NEGATING.contains(&w.as_str()) || w.ends_with("n't")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::check;

    #[test]
    fn restatements_that_reword_a_note() {
        let notes = vec![(
            3,
            "`git stash` leaves untracked files behind unless given `-u`; they stay in the working tree.".to_string(),
        )];
        let c = Context { notes: &notes, ..Context::default() };
        for (lesson, want) in [
            // connectives added or dropped, clauses joined with "since"/"while"
            (
                "Untracked files stay in the working tree since `git stash` leaves them behind unless given `-u`.",
                "restates-note",
            ),
            (
                "`git stash` leaves untracked files behind unless given `-u`, while tracked changes are stashed.",
                "restates-note",
            ),
            // a new fact of its own
            ("`git stash -u` also stashes untracked files but not ignored ones; those need `-a`.", ""),
        ] {
            assert_eq!(check("git", lesson, &c).err().map(|r| r.category()).unwrap_or(""), want, "{lesson}");
        }
        // A note whose sentence holds an ellipsis is one sentence.
        let notes =
            vec![(4, "`INSERT ... ON CONFLICT` needs a unique index on the conflict columns or it fails.".to_string())];
        let c = Context { notes: &notes, ..Context::default() };
        let r = check("psql", "`INSERT ... ON CONFLICT` fails unless a unique index covers the conflict columns.", &c);
        assert_eq!(r, Err(Refusal::RestatesNote(4)));
    }

    #[test]
    fn paraphrases_of_the_skill_are_found() {
        let md = "---\nname: x\n---\n- A higher `-q` value means a smaller file and a lower quality.\n- Big uploads start faster with `--fast-list`.\n";
        let c = Context { skill_md: Some(md), ..Context::default() };
        for (lesson, want) in [
            ("A higher `-q` value gives a lower quality and a tinier file.", "restates-skill"),
            ("Large uploads begin quicker with `--fast-list`.", "restates-skill"),
            // the same words with a new fact
            ("A higher `-q` value gives a smaller file, but `-q 0` turns quality scaling off entirely.", ""),
        ] {
            assert_eq!(check("x", lesson, &c).err().map(|r| r.category()).unwrap_or(""), want, "{lesson}");
        }
    }

    /// A restatement in other words: close by the embedder and naming nothing new. A lesson
    /// that adds a number, flag, code span or path is not one, however close.
    #[test]
    fn restatements_in_other_words_name_nothing_new() {
        let md = "---\nname: tar\n---\nExtract an archive with `tar -xf FILE`.\nList it first with `tar -tf FILE`.\n";
        let cases: &[(&str, f32, bool)] = &[
            // The same step in other words, the same code span.
            ("Pull everything out via `tar -xf FILE`.", 0.9, true),
            // Close, but it adds a flag the sentence does not name.
            ("Pull everything out via `tar -xf FILE` and add --no-same-owner when root.", 0.9, false),
            // It names a number the sentence does not.
            ("Listing with `tar -tf FILE` takes 2 passes over a gzip stream.", 0.95, false),
            // Not close enough.
            ("Pull everything out via `tar -xf FILE`.", 0.6, false),
        ];
        for (lesson, cos, refused) in cases {
            let f = |_: &str, _: &str| *cos;
            let ctx = Context { skill_md: Some(md), similarity: Some(Similarity(&f)), ..Default::default() };
            let got = check("tar", lesson, &ctx);
            assert_eq!(matches!(got, Err(Refusal::RestatesSkill(_))), *refused, "{lesson} at {cos}: {got:?}");
        }
        // The same with a note.
        let notes = vec![(7, "Give gzip archives -z only on old tar; new ones detect it.".to_string())];
        let f = |_: &str, _: &str| 0.9;
        let ctx = Context { notes: &notes, similarity: Some(Similarity(&f)), ..Default::default() };
        assert_eq!(
            check("tar", "Old tar wants -z for gzip archives; newer versions detect it.", &ctx),
            Err(Refusal::RestatesNote(7))
        );
    }

    /// Restatements in other words by the built-in static table (what the engine and the eval
    /// use): the same instruction with the source's commands quoted shorter, a placeholder of
    /// another spelling, two adjacent sentences merged; and lessons as close that add a
    /// negation, a limit, a number or a flag, which are new.
    #[test]
    fn restatements_by_meaning_with_the_builtin_table() {
        let md = "---\nname: x\n---\n# x\n\n\
            - Never run `KEYS *` on a production server; iterate with `redis-cli --scan --pattern 'user:*'`.\n\
            - Re-run only the failed jobs with `gh run rerun RUN_ID --failed`.\n\
            - Start now and at every boot with `sudo systemctl enable --now UNIT`.\n\
            - See how long a key has left with `TTL key` (-1: no expiry, -2: no such key).\n\
            - Never edit the state file by hand; use `terraform state mv` and `terraform state rm`.\n";
        let table = crate::embed::static_table::StaticEmbedder::builtin().unwrap();
        let cos = crate::filter::cosine_by(table);
        let ctx = Context { skill_md: Some(md), similarity: Some(Similarity(&cos)), ..Default::default() };
        let cases: &[(&str, bool)] = &[
            // a shorter quote of the source's command
            ("Don't run KEYS * on a production server; iterate with --scan and a pattern.", true),
            // a placeholder spelled another way
            ("`gh run rerun <id> --failed` re-runs only the jobs that failed.", true),
            ("Never hand-edit the state file; use `state mv` and `state rm` instead.", true),
            // close, but a negation and a limit the source does not state
            (
                "`systemctl enable` only creates the boot links; the unit does not start now unless `--now` is given.",
                false,
            ),
            // close, but a number or a flag the source does not name
            ("`TTL key` answers -1 for no expiry and -2 for no such key, and -3 on a replica.", false),
            ("`gh run rerun <id> --failed` re-runs the failed jobs; add `--debug` for runner diagnostic logs.", false),
        ];
        for (lesson, refused) in cases {
            let got = check("x", lesson, &ctx);
            assert_eq!(matches!(got, Err(Refusal::RestatesSkill(_))), *refused, "{lesson}: {got:?}");
        }
    }

    #[test]
    fn a_source_names_a_specific_word_by_word_and_placeholders_stand_for_anything_and_negations_are_counted() {
        let text = "never run keys * on a server; iterate with redis-cli --scan --pattern 'user:*' (-1: no expiry). poetry 2.0";
        for (x, named) in [
            ("--scan", true),
            ("KEYS *", true),
            ("redis-cli --scan <pattern>", true),
            ("-1", true),
            ("2", true),
            ("--scan --count 100", false),
            ("-2", false),
            ("scan", false),
            ("run ...", true),
            ("rerun", false),
        ] {
            assert_eq!(names(text, x), named, "{x}");
        }
        for (t, n) in [
            ("Never edit it by hand.", 1),
            ("It doesn\u{2019}t start unless asked.", 2),
            ("Works only on Linux, not on macOS.", 2),
            ("Development-only dependencies go in a group.", 0),
            ("Stage hunks with `git add -p`.", 0),
        ] {
            assert_eq!(negations(t), n, "{t}");
        }
    }
}
