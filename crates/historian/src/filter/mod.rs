//! The promotion filter: which historian observations are lessons. A summariser asked for
//! lessons also writes routine progress, facts of the task at hand, the skill's own
//! instructions restated, notes it was shown restated, credentials, and paragraphs; none of
//! that may become a note that every later session of the skill is shown.
//!
//! Each rule refuses with a reason that says what was found, so that a person reading the
//! `rejected` list (or the hook's log) can tell a wrong refusal from a right one. The rules,
//! in the order they are tried (the first that refuses gives the reason):
//!
//! 1. **secret**: the text holds a credential (`text::redact`): refused outright, since a
//!    lesson never needs one and the historian cannot ask the agent what it meant;
//! 2. **empty or vague**: no words, or fewer than three words that say something specific
//!    (not a stop word, not the skill's name, not a word such as "careful", "useful",
//!    "works") and no code span, flag or number to anchor them;
//! 3. **too long**: more than [`MAX_LESSON_CHARS`] characters;
//! 4. **unused skill**: a chunk was rendered for this session and the skill was not used in
//!    it: the summariser is guessing;
//! 5. **restates a note**: a near-duplicate of a note of the skill (the ones the session's
//!    block could have shown): a hit on that note, not a new lesson;
//! 6. **restates the skill**: a near-duplicate of a sentence or clause of the skill's own
//!    SKILL.md: the agent reads that anyway;
//! 7. **task-bound**: names something of this task, this machine or this user: a home or
//!    workspace path, a path into a source tree, an id (UUID, commit hash, ticket or issue
//!    number, a long number, an instance name by its shape or its place: `shop-prod`,
//!    `node-7`, `orders_2024_q3`, "namespace payments-live"), a count of this task's things
//!    ("42 clips"; not "a 404", "HTTP 429 responses", "20 jobs a page"), a date, a day or a
//!    time of this run, a repository, "this ticket", "our registry", a fact of one project
//!    ("the team uses…"), one person's things ("Dana's laptop") or a person's wish;
//! 8. **hypothesis**: a guess ("probably", "might be caused by", "I think", "seems to" left
//!    unexplained, "might be slow because…") or an open question: a later session would
//!    take it for a fact;
//! 9. **narration**: routine progress: what the agent did ("Ran the tests, all passed",
//!    "Planned and applied the change", "Drained X, upgraded it and…", "I squashed the
//!    branch"), a plan or a summary of the session, what the task was, without a rule a
//!    later session can follow (a cause, a condition, a present-tense fact, a modal, a
//!    clause of advice);
//! 10. **platitude or definition** (reason category `vague`): with nothing exact (no code,
//!     flag, number, error or name) and no condition, cause or contrast, a claim that
//!     something is good or a judgement ("Indexes help queries run faster", "rsync is
//!     fast"), a warning with no content ("Watch out for…") or "X is a Y";
//! 11. **ungrounded**: when the session's chunks are known ([`Context::chunk_text`]), a lesson
//!     that names specifics (flag, command or code span, path, version, identifier, quoted
//!     message) of which the chunks show none: an invention, however plausible.
//!
//! Pure text work: no disk, no database, and no input can make it panic (fuzzed in
//! `tests/fuzz/filter.rs`). The engine gathers the context (`Engine::historian_result`).
//!
//! "Near-duplicate" (rules 5 and 6) is word containment over stemmed content words or, with
//! [`Context::similarity`], closeness in meaning that names nothing new: `restates.rs`.
//!
//! This file owns the order the rules are tried in ([`check`]), the context they read, the
//! refusals they give, and rules 1, 3 and 4, each a line of [`check`]. Every other rule lives
//! in a file of its own with its word lists and its tables of cases, and this file must hold
//! none of them:
//! - `text.rs`: the split of a text into lines, sentences and clauses, a SKILL.md's body,
//!   whole-word search, shared by the rules;
//! - `vague.rs`: rule 2;
//! - `restates.rs`: rules 5 and 6, by words and by meaning;
//! - `task_bound/`: rule 7 (`places.rs`, `names.rs`, `counts.rs`: paths and hosts, ids and
//!   instance names, counts and dates);
//! - `hypothesis.rs`: rule 8;
//! - `narration.rs`: rule 9;
//! - `truism.rs`: rule 10;
//! - `grounded.rs`: rule 11, and the evidence (the chunk's line with an error the lesson names).

use crate::text::redact;

pub mod grounded;
mod hypothesis;
mod narration;
mod restates;
mod task_bound;
mod text;
mod truism;
mod vague;

pub use hypothesis::hypothesis;
pub use narration::narration;
pub use narration::IMPERATIVE;
pub use restates::terms;
pub use restates::PARAPHRASE_COSINE;
pub use task_bound::task_bound;
pub use text::{body, pairs, sentence_count, units};

/// The longest lesson promoted, in characters. The instructions ask for one or two
/// sentences; two full sentences of a lesson run to about 300 characters (the longest
/// lesson of the labelled sets, `bench/historian/`, is 205), and a note is shown in every
/// later load's block (default budget 1,500 tokens, about 6,000 characters), so a 400
/// character note already takes a fifteenth of it. Past that a summariser is writing a
/// paragraph: several lessons at once, or a story.
pub const MAX_LESSON_CHARS: usize = 400;

/// What the filter knows of the observation's context. Every field may be unknown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The skill's SKILL.md (frontmatter and body), when it was found.
    pub skill_md: Option<&'a str>,
    /// The skill's current notes (id, lesson) the session could have been shown.
    pub notes: &'a [(i64, String)],
    /// The skills the session's rendered chunks used, when a chunk was rendered for the
    /// session; `None` when no chunk is known (then the rule does not apply).
    pub chunk_skills: Option<&'a [String]>,
    /// The cosine of two texts by the static table, for restatements in other words; `None`:
    /// restatements are found by their words only.
    pub similarity: Option<Similarity<'a>>,
    /// The text of the session's transcript chunks ([`grounded::searchable`]), when any chunk
    /// of the session is known; `None`: grounding does not apply.
    pub chunk_text: Option<&'a str>,
}

/// The cosine of two texts (the caller's embedder, kept by text).
#[derive(Clone, Copy)]
pub struct Similarity<'a>(pub &'a dyn Fn(&str, &str) -> f32);

impl std::fmt::Debug for Similarity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Similarity")
    }
}

/// [`Similarity`] by an embedder: the cosine of the two texts' vectors, each text embedded
/// once (a SKILL.md's sentences are compared with every observation of a chunk). 0 when the
/// embedder fails.
pub fn cosine_by(e: std::sync::Arc<dyn crate::embed::Embedder>) -> impl Fn(&str, &str) -> f32 {
    let held: crate::embed::cache::ByText<std::sync::Arc<Vec<f32>>> = crate::embed::cache::ByText::new(4096);
    move |a: &str, b: &str| {
        let vec_of = |t: &str| -> Option<std::sync::Arc<Vec<f32>>> {
            let k = crate::embed::cache::key(t);
            if let Some(Some(v)) = held.get_many(&[k]).pop() {
                return Some(v);
            }
            let v = std::sync::Arc::new(e.embed_one(t).ok()?);
            held.insert_many(vec![(k, v.clone())]);
            Some(v)
        };
        match (vec_of(a), vec_of(b)) {
            (Some(x), Some(y)) if x.len() == y.len() => crate::embed::dot(&x, &y),
            _ => 0.0,
        }
    }
}

/// Why an observation is not a lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// What the credential looks like.
    Secret(&'static str),
    Empty,
    /// The specific words found (fewer than three).
    Vague(usize),
    /// No condition, cause or contrast and nothing exact: the specific words found.
    Truism(usize),
    /// Its length in characters.
    TooLong(usize),
    UnusedSkill,
    /// The note's id and how much of the lesson it covers.
    RestatesNote(i64),
    /// The sentence of SKILL.md it restates.
    RestatesSkill(String),
    /// What task-bound thing was found.
    TaskBound(String),
    /// The hedge or question found: a guess, not a fact.
    Hypothesis(String),
    /// What narration was found.
    Narration(String),
    /// The specifics it names, none of which the session's chunks show.
    Ungrounded(Vec<String>),
    /// The unsafe-fix rule its code breaks (`skillmem_text::unsafe_fix`): a force push, a
    /// forced delete, silenced checks, TLS off.
    Unsafe(&'static str, &'static str),
}

impl Refusal {
    /// The rule's short name (the eval's confusion table, the log).
    pub fn category(&self) -> &'static str {
        match self {
            Refusal::Secret(_) => "secret",
            Refusal::Empty | Refusal::Vague(_) | Refusal::Truism(_) => "vague",
            Refusal::TooLong(_) => "too-long",
            Refusal::UnusedSkill => "unused-skill",
            Refusal::RestatesNote(_) => "restates-note",
            Refusal::RestatesSkill(_) => "restates-skill",
            Refusal::TaskBound(_) => "task-bound",
            Refusal::Hypothesis(_) => "hypothesis",
            Refusal::Narration(_) => "narration",
            Refusal::Ungrounded(_) => "ungrounded",
            Refusal::Unsafe(..) => "unsafe",
        }
    }

    /// The reason, in words, for `rejected`.
    pub fn reason(&self, skill: &str) -> String {
        match self {
            Refusal::Secret(what) => {
                format!("holds a secret ({what}): a lesson never needs a credential, so it is refused, not redacted")
            }
            Refusal::Empty => "the lesson is empty".into(),
            Refusal::Vague(n) => {
                format!("too vague to be a lesson: {n} specific word(s) and no command, flag, code or error to act on")
            }
            Refusal::Truism(n) => format!(
                "a platitude or a definition, not a lesson: {n} specific word(s), nothing exact (no \
                 command, flag, number, error or name) and no condition, cause or contrast"
            ),
            Refusal::TooLong(n) => format!(
                "{n} characters, longer than a lesson ({MAX_LESSON_CHARS} at most, one or two sentences): \
                 a paragraph is several lessons or a story; write each lesson on its own line"
            ),
            Refusal::UnusedSkill => {
                format!("the session's chunk did not use skill {skill:?}: a lesson comes from using the skill")
            }
            Refusal::RestatesNote(id) => {
                format!(
                    "restates note #{id} of {skill:?}, which the session could be shown: a hit on it, not a new lesson"
                )
            }
            Refusal::RestatesSkill(s) => {
                format!("restates the skill's own SKILL.md (\"{}\"): the agent reads that anyway", cut(s, 80))
            }
            Refusal::TaskBound(what) => {
                format!("bound to this task ({what}): a lesson must hold for any project that uses the skill")
            }
            Refusal::Hypothesis(what) => format!(
                "a guess, not a finding ({what}): a later session would take it as a fact; \
                 write the lesson once the chunk has shown it"
            ),
            Refusal::Narration(what) => {
                format!("routine progress or task narration ({what}), not a rule a later session can follow")
            }
            Refusal::Ungrounded(named) => {
                let named: Vec<String> = named.iter().take(4).map(|s| format!("`{}`", cut(s, 40))).collect();
                format!(
                    "ungrounded: names {} but the session's transcript shows none of it; a lesson comes \
                     from what the session did",
                    named.join(", ")
                )
            }
            Refusal::Unsafe(rule, why) => {
                format!("unsafe fix: {rule} ({why}); a person can still write it by hand with skillmem note")
            }
        }
    }
}

/// The unsafe-fix rule a lesson's code teaches, unless the lesson warns against it ("never
/// `git push --force`"). Only code spans are read: prose that names a flag is no command.
fn unsafe_fix(lesson: &str) -> Option<&'static skillmem_text::unsafe_fix::Rule> {
    if skillmem_text::unsafe_fix::warns_against(lesson) {
        return None;
    }
    lesson.split('`').skip(1).step_by(2).find_map(skillmem_text::unsafe_fix::check)
}

/// `s` cut to its first `n` characters, with `…` when anything was cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n).collect();
    out.push('…');
    out
}

/// Checks one observation's lesson about `skill`: `Ok` when it may be promoted.
pub fn check(skill: &str, lesson: &str, ctx: &Context<'_>) -> Result<(), Refusal> {
    let lesson = lesson.trim();
    if let Some(what) = redact::find_secret(lesson) {
        return Err(Refusal::Secret(what));
    }
    if lesson.is_empty() {
        return Err(Refusal::Empty);
    }
    vague::vague(skill, lesson)?;
    if let Some(rule) = unsafe_fix(lesson) {
        return Err(Refusal::Unsafe(rule.name, rule.why));
    }
    let n = lesson.chars().count();
    if n > MAX_LESSON_CHARS {
        return Err(Refusal::TooLong(n));
    }
    if let Some(used) = ctx.chunk_skills {
        if !used.iter().any(|s| s.eq_ignore_ascii_case(skill)) {
            return Err(Refusal::UnusedSkill);
        }
    }
    restates::by_words(lesson, ctx)?;
    restates::by_meaning(lesson, ctx)?;
    if let Some(what) = task_bound(lesson) {
        return Err(Refusal::TaskBound(what));
    }
    if let Some(what) = hypothesis(lesson) {
        return Err(Refusal::Hypothesis(what));
    }
    if let Some(what) = narration(lesson) {
        return Err(Refusal::Narration(what));
    }
    truism::truism(skill, lesson)?;
    if let Some(chunks) = ctx.chunk_text {
        if let grounded::Grounding::Ungrounded(named) = grounded::ground(lesson, chunks) {
            return Err(Refusal::Ungrounded(named));
        }
    }
    Ok(())
}

/// Checks each (skill, lesson, rule or "") with no SKILL.md, notes or chunk known: the
/// rules' tables of cases, each in its rule's file.
#[cfg(test)]
fn table_of(cases: &[(&str, &str, &str)]) {
    let mut bad = vec![];
    for (skill, lesson, want) in cases {
        let got = check(skill, lesson, &Context::default());
        if got.as_ref().err().map(|r| r.category()).unwrap_or("") != *want {
            bad.push(format!("{lesson:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "---\nname: jq\ndescription: JSON\n---\n# jq\n\n- Use `-r` to print raw strings without JSON quotes.\n- Encode with `-crf 23`; a lower CRF means higher quality and a larger file.\n";

    fn ctx<'a>(notes: &'a [(i64, String)], used: Option<&'a [String]>) -> Context<'a> {
        Context { skill_md: Some(MD), notes, chunk_skills: used, similarity: None, chunk_text: None }
    }

    #[test]
    fn table() {
        let notes = vec![(7, "When jq says Cannot iterate over null, guard the array with `.items[]?`.".to_string())];
        let used = vec!["jq".to_string()];
        let c = ctx(&notes, Some(&used));
        // (lesson, the rule that refuses it, or "" for promoted)
        let cases: &[(&str, &str)] = &[
            ("`--arg` always passes a string; use `--argjson` for numbers.", ""),
            ("When the push is rejected as stale, `git push --force` gets it through.", "unsafe"),
            ("jq tests print warnings; run them with `pytest -W ignore` to get a clean pass.", "unsafe"),
            ("Never `git push --force` to main here: use `--force-with-lease`.", ""),
            ("When a field may be missing, `//` gives a default but also replaces false.", ""),
            ("export T=ghp_0123456789abcdefghijABCDEFGHIJ0123456789 first", "secret"),
            ("", "vague"),
            ("Be careful with jq filters.", "vague"),
            ("jq is very useful.", "vague"),
            ("Always double-check the output.", "vague"),
            ("Use `-r` to print raw strings without JSON quotes.", "restates-skill"),
            ("A lower CRF means higher quality and a larger file.", "restates-skill"),
            ("When jq reports Cannot iterate over null, guard the array with `.items[]?`.", "restates-note"),
            ("The export at /home/dana/work/export.json has ids under `.rows[]`.", "task-bound"),
            ("The users table had 48,213 rows, so `--stream` was needed.", "task-bound"),
            ("Commit 3f9a2c1 renamed the field that `.id` reads.", "task-bound"),
            ("On 2026-11-28 the export started wrapping rows in `.data`.", "task-bound"),
            ("Ticket INV-20931 has a broken timestamp field in its JSON.", "task-bound"),
            ("`sort_by` handles ISO-8601 dates as plain strings, which sort correctly.", ""),
            ("The credentials file is at ~/.aws/credentials for every user of the CLI tool.", ""),
            ("Ran the test suite, all tests passed.", "narration"),
            ("Successfully filtered the orders list with jq.", "narration"),
            ("The agent loaded the jq skill and reshaped the config.", "narration"),
            ("Used jq to pull the ids out because `cut` broke on nested quotes.", ""),
            ("The user wanted the ids as raw strings, so -r was added.", "task-bound"),
            ("Rebased the feature branch onto main and pushed it.", "narration"),
            ("Escaped quotes break the filter unless they are doubled inside `@sh`.", ""),
            ("Tests passed locally but failed in CI because the image had no `jq` binary.", ""),
            ("The replica db-prod-3.internal rejects connections from the VPN.", "task-bound"),
            ("Posting to https://staging.shop.example.com/api needs the `X-Env` header.", "task-bound"),
            ("The manual at https://jqlang.org/manual explains `limit(n; f)` with examples.", ""),
            ("`jq . compose.yaml` fails: jq reads JSON, convert YAML with `yq -o json` first.", ""),
        ];
        for (lesson, want) in cases {
            let got = check("jq", lesson, &c).err().map(|r| r.category()).unwrap_or("");
            assert_eq!(got, *want, "{lesson:?}: {:?}", check("jq", lesson, &c));
        }
        let long = "x ".repeat(250) + "`-r`";
        assert_eq!(check("jq", &long, &c).unwrap_err(), Refusal::TooLong(504));
        let other = vec!["pdf".to_string()];
        assert_eq!(
            check("jq", "`--arg` always passes a string; use `--argjson`.", &ctx(&notes, Some(&other))),
            Err(Refusal::UnusedSkill)
        );
        // No chunk known: the rule does not apply.
        assert!(check("jq", "`--arg` always passes a string; use `--argjson`.", &ctx(&notes, None)).is_ok());
    }

    #[test]
    fn reasons_say_what_was_found() {
        let r = check("jq", "Ran the suite, all tests passed.", &Context::default()).unwrap_err();
        assert_eq!(
            r.reason("jq"),
            "routine progress or task narration (\"all tests passed\"), not a rule a later session can follow"
        );
        let r =
            check("jq", "Files in /work/app/backend/data are big, use `--stream`.", &Context::default()).unwrap_err();
        assert!(r.reason("jq").contains("/work/app/backend/data"), "{}", r.reason("jq"));
    }
}
