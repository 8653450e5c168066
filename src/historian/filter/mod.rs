//! The promotion filter: which historian observations are lessons. A summariser asked for
//! lessons also writes routine progress, facts of the task at hand, the skill's own
//! instructions restated, notes it was shown restated, credentials, and paragraphs; none of
//! that may become a note that every later session of the skill is shown.
//!
//! Each rule refuses with a reason that says what was found, so that a person reading the
//! `rejected` list (or the hook's log) can tell a wrong refusal from a right one. The rules,
//! in the order they are tried (the first that refuses gives the reason):
//!
//! 1. **secret**: the text holds a credential (`team::redact`): refused outright, since a
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
//!     fast"), a warning with no content ("Watch out for…") or "X is a Y".
//!
//! Pure text work: no disk, no database, and no input can make it panic (fuzzed in
//! `tests/fuzz/filter.rs`). The engine gathers the context (`Engine::historian_result`).
//!
//! "Near-duplicate" (rules 5 and 6) is word containment over stemmed content words or, with
//! [`Context::similarity`], closeness in meaning that names nothing new: `restates.rs`.
//!
//! This file owns the order the rules are tried in ([`check`]), the context they read, the
//! refusals they give, and rules 1, 3 and 4, each a line of [`check`]. These rules live in
//! files of their own, with their word lists and their tables of cases:
//! - `text.rs`: the split of a text into lines, sentences and clauses, a SKILL.md's body,
//!   whole-word search, shared by the rules;
//! - `vague.rs`: rule 2;
//! - `restates.rs`: rules 5 and 6, by words and by meaning;
//! - `hypothesis.rs`: rule 8;
//! - `narration.rs`: rule 9;
//! - `truism.rs`: rule 10.

use std::collections::HashSet;

use crate::team::redact;
use crate::text::is_stop;

mod hypothesis;
mod narration;
mod restates;
mod text;
mod truism;
mod vague;

pub use hypothesis::hypothesis;
pub use narration::narration;
pub(crate) use narration::IMPERATIVE;
pub(crate) use restates::terms;
pub use restates::PARAPHRASE_COSINE;
pub(crate) use text::{body, pairs, sentence_count, units};

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
        }
    }
}

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
    truism::truism(skill, lesson)
}

// ---- task-bound ----------------------------------------------------------------------------

/// Path prefixes that are the same on every machine (not a workspace, not a home folder).
const SYSTEM_PATHS: &[&str] = &[
    "/etc/",
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/dev/",
    "/proc/",
    "/sys/",
    "/var/log/",
    "/var/run/",
    "/var/lib/",
    "/run/",
    "/opt/homebrew/",
];

/// Hyphenated standard names that look like ticket ids.
const STANDARDS: &[&str] = &["iso", "utf", "sha", "rfc", "pep", "ecma", "ieee", "cve", "x", "md", "crc", "aes", "rsa"];

/// Nouns that, after a number, count this task's data.
const COUNTED: &[&str] = &[
    "row",
    "rows",
    "record",
    "records",
    "file",
    "files",
    "test",
    "tests",
    "field",
    "fields",
    "page",
    "pages",
    "line",
    "lines",
    "item",
    "items",
    "entry",
    "entries",
    "resource",
    "resources",
    "user",
    "users",
    "account",
    "accounts",
    "error",
    "errors",
    "failure",
    "failures",
    "warning",
    "warnings",
    "commit",
    "commits",
    "replica",
    "replicas",
    "container",
    "containers",
    "pod",
    "pods",
    "document",
    "documents",
    "customer",
    "customers",
    "order",
    "orders",
    "invoice",
    "invoices",
    "row(s)",
    "object",
    "objects",
    "table",
    "tables",
    "issue",
    "issues",
    "ticket",
    "tickets",
    "minute",
    "minutes",
    "hour",
    "hours",
];

/// Words before a number that make it a limit or a rule, not a count of this task.
const LIMITS: &[&str] = &[
    "most", "least", "to", "max", "maximum", "limit", "per", "first", "last", "every", "than", "over", "under",
    "default", "only", "top", "each", "about", "within", "after", "beyond", "n",
];

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// Who can want things of a task (a tool only needs them).
const PEOPLE: &[&str] = &[
    "user",
    "users",
    "client",
    "customer",
    "team",
    "reviewer",
    "reviewers",
    "maintainer",
    "maintainers",
    "manager",
    "lead",
    "boss",
    "stakeholder",
    "stakeholders",
    "owner",
];

/// What "this …" names when it points at the task at hand, not at the skill.
const THIS_TASK: &[&str] = &[
    "project",
    "codebase",
    "cluster",
    "account",
    "session",
    "task",
    "ticket",
    "sprint",
    "machine",
    "laptop",
    "team",
    "company",
    "organisation",
    "organization",
    "org",
    "customer",
    "client",
    "app",
    "pr",
    "monorepo",
    "incident",
    "environment",
];

/// Plural nouns after a number that measure, not count this task's things.
const UNITS: &[&str] = &[
    "seconds",
    "secs",
    "minutes",
    "mins",
    "hours",
    "hrs",
    "days",
    "weeks",
    "months",
    "years",
    "ms",
    "bytes",
    "bits",
    "kilobytes",
    "megabytes",
    "gigabytes",
    "chars",
    "characters",
    "columns",
    "spaces",
    "tabs",
    "digits",
    "times",
    "levels",
    "frames",
    "pixels",
    "cores",
    "threads",
    "workers",
    "percent",
    "decimals",
    "args",
    "arguments",
    "retries",
    "attempts",
    "places",
    "dots",
    "dashes",
    "slashes",
    "backslashes",
    "quotes",
    "hex",
    "steps",
];

/// A number that names one thing rather than counting several: after "a"/"an" ("a 404
/// leaves no file", "a 3 GB file" is a size), or an HTTP status after the words that name
/// one ("status 503 means…", "HTTP 429 responses").
fn names_one(prev: &str, value: f64) -> bool {
    let status = (100.0..600.0).contains(&value) && value.fract() == 0.0;
    prev == "a"
        || prev == "an"
        || (status
            && ["http", "status", "code", "returns", "returned", "return", "got", "gives", "with"].contains(&prev))
}

/// "42 clips", "all 63 workspaces": a number of this task's things, in prose (any plural
/// noun: the list of [`COUNTED`] nouns cannot know them all). Not a limit ("up to 10
/// items", "at most 5 retries"), a default ("keeps 10 revisions by default"), a unit ("30
/// seconds") or a version ("Python 3 scripts").
fn count_of_this_run(prose: &str) -> Option<String> {
    let lower = prose.to_ascii_lowercase();
    if lower.contains("default") {
        return None;
    }
    let ws: Vec<&str> = prose.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    for i in 0..ws.len().saturating_sub(1) {
        let w = clean(ws[i]).replace(',', "");
        if w.is_empty() || !w.chars().all(|c| c.is_ascii_digit()) || w.parse::<u64>().map_or(true, |v| v < 2) {
            continue;
        }
        // "42." or "42," ends the phrase: the number is not before its noun.
        if ws[i].ends_with(['.', ',', ';', ':', ')']) {
            continue;
        }
        let prev_raw = if i > 0 { clean(ws[i - 1]) } else { String::new() };
        let prev = prev_raw.to_ascii_lowercase();
        // "all 312 .pb.go files": after "all" the noun counted may follow a word of its own.
        let is_plural = |n: &str| {
            n.len() >= 4
                && n.ends_with('s')
                && !n.ends_with("ss")
                && n.chars().all(|c| c.is_ascii_lowercase())
                && !UNITS.contains(&n)
        };
        let mut next = clean(ws[i + 1]).to_ascii_lowercase();
        if prev == "all" && !is_plural(&next) {
            if let Some(n) = ws.get(i + 2).map(|w| clean(w).to_ascii_lowercase()).filter(|n| is_plural(n)) {
                next = n;
            }
        }
        let plural = next.len() >= 4
            && next.ends_with('s')
            && !next.ends_with("ss")
            && next.chars().all(|c| c.is_ascii_lowercase())
            && !UNITS.contains(&next.as_str());
        // "Node 18 binaries" names a version; "Transcoded 317 lectures" counts them.
        let version = prev_raw.starts_with(char::is_uppercase) && prev != "all" && !prev.ends_with("ed");
        let value: f64 = w.parse().unwrap_or(0.0);
        // "20 jobs a page", "5 requests per second": a rate, which a tool sets, not a count.
        let rate =
            ws.get(i + 2).is_some_and(|r| ["a", "an", "per", "each"].contains(&clean(r).to_ascii_lowercase().as_str()));
        if rate {
            continue;
        }
        if plural && !LIMITS.contains(&prev.as_str()) && !version && !names_one(&prev, value) {
            return Some(format!("a count of this task's data ({} {next})", clean(ws[i])));
        }
    }
    None
}

/// What in `lesson` binds it to this task, or `None`.
pub fn task_bound(lesson: &str) -> Option<String> {
    let prose = crate::text::prose(lesson);
    let lower = lesson.to_ascii_lowercase();
    let prose_lower = prose.to_ascii_lowercase();
    let toks: Vec<&str> =
        lesson.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c)).filter(|t| !t.is_empty()).collect();
    for t in &toks {
        let t = t.trim_end_matches(['.', ':', '!', '?']);
        if let Some(what) = path_like(t) {
            return Some(what);
        }
    }
    let in_prose: HashSet<&str> =
        prose.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;".contains(c)).filter(|t| !t.is_empty()).collect();
    for t in &toks {
        if let Some(what) = id_like(t, in_prose.contains(t)) {
            return Some(what);
        }
    }
    if let Some(what) = count_or_date(&lower) {
        return Some(what);
    }
    // People, repositories and this task's own places (outside code spans).
    for (needle, what) in
        [("github.com/", "a repository"), ("gitlab.com/", "a repository"), ("bitbucket.org/", "a repository")]
    {
        if prose_lower.contains(needle) {
            return Some(what.into());
        }
    }
    if let Some(what) = count_of_this_run(&prose) {
        return Some(what);
    }
    if let Some(what) = named_instance(&prose) {
        return Some(what);
    }
    let pw: Vec<&str> = prose.split_whitespace().collect();
    let low: Vec<String> =
        pw.iter().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase()).collect();
    for (i, w) in pw.iter().enumerate() {
        let wl = low[i].clone();
        let next = low.get(i + 1).cloned();
        let wish = |n: &Option<String>| {
            n.as_deref().is_some_and(|n| {
                ["wants", "wanted", "prefers", "preferred", "asked", "requested", "likes", "insists", "decided"]
                    .contains(&n)
            })
        };
        let wants = |n: &Option<String>| wish(n) || n.as_deref().is_some_and(|n| n == "needs" || n == "needed");
        // "the user wants", "the team prefers": a person's wish, not the skill's behaviour.
        if PEOPLE.contains(&wl.as_str()) && wants(&next) {
            return Some(format!("what the {wl} wanted"));
        }
        // "Jordan prefers" (not "Terraform needs": a tool needs things, only a person wishes).
        if w.starts_with(char::is_uppercase) && wl.len() > 2 && !is_stop(&wl) && wish(&next) && i == 0 {
            return Some(format!("what {w} wanted"));
        }
        // "this ticket", "this session", "this repo": the task at hand.
        if wl == "this" {
            if let Some(n) = next.as_deref().filter(|n| THIS_TASK.iter().any(|t| n == t || n.starts_with("repo"))) {
                return Some(format!("this task's own {n}"));
            }
        }
        // "our registry", "my laptop": one team's or one person's setup.
        if (wl == "our" || wl == "my") && next.as_deref().is_some_and(|n| !n.is_empty()) {
            return Some(format!("one team's own setup (\"{wl} {}\")", next.unwrap_or_default()));
        }
        // "the project uses pnpm", "the team pins Node 18": a fact of one project.
        if i > 0
            && (low[i - 1] == "the" || pw[i - 1].ends_with("'s") || pw[i - 1].ends_with("\u{2019}s"))
            && ["project", "codebase", "team", "monorepo", "company"].contains(&wl.as_str())
            && next.as_deref().is_some_and(|n| {
                ["uses", "has", "is", "runs", "pins", "relies", "deploys", "keeps", "stores", "prefers"].contains(&n)
            })
        {
            return Some(format!("a fact of one project (\"the {wl} {}\")", next.unwrap_or_default()));
        }
        // `@handle` (outside code: `@csv` in a code span is jq, `@pytest.mark` a decorator).
        if let Some(h) = w.strip_prefix('@') {
            let h = h.trim_end_matches(|c: char| !c.is_alphanumeric());
            if h.len() >= 2 && h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Some(format!("a person (@{h})"));
            }
        }
        // `owner/name repo`, `repository owner/name`.
        let slug = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '/');
        let near_repo = next.as_deref().is_some_and(|n| n.starts_with("repo"))
            || (i > 0 && pw[i - 1].to_ascii_lowercase().starts_with("repo"));
        if near_repo && slug.split('/').count() == 2 && slug.split('/').all(|p| !p.is_empty()) {
            return Some(format!("a repository ({slug})"));
        }
    }
    None
}

/// A home, workspace or storage location, or a path into a source tree.
fn path_like(t: &str) -> Option<String> {
    let lt = t.to_ascii_lowercase();
    for (p, what) in [("s3://", "a bucket"), ("gs://", "a bucket"), ("az://", "a bucket")] {
        if let Some(i) = lt.find(p) {
            return Some(format!("{what} ({})", &t[i..]));
        }
    }
    if lt.contains("/home/") || lt.contains("/users/") || lt.contains("c:\\users\\") || lt.starts_with("/root/") {
        return Some(format!("a home folder ({t})"));
    }
    if let Some(rest) = t.strip_prefix("~/") {
        // `~/.aws/credentials` is where that file lives for everyone; `~/Downloads/x` is one person's.
        if !rest.starts_with('.') && !rest.is_empty() {
            return Some(format!("a home folder ({t})"));
        }
    }
    if let Some(what) = deployment_host(t) {
        return Some(what);
    }
    if t.contains("://") {
        return None;
    }
    if t.starts_with('/') && !SYSTEM_PATHS.iter().any(|p| t.starts_with(p)) && !api_path(t) {
        let segs = t.split('/').filter(|s| !s.is_empty()).count();
        if segs >= 3 {
            return Some(format!("a path on this machine ({t})"));
        }
    }
    // `src/billing/invoice.py`: a file of one source tree (not `.github/...`, not `path/to/...`).
    let segs: Vec<&str> = t.split('/').collect();
    if segs.len() >= 3 && !t.starts_with(['/', '.', '~', '$', '<']) && !lt.starts_with("path/to") {
        let last = segs.last().copied().unwrap_or("");
        let file = last.split("::").next().unwrap_or(last);
        let ext = file.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let code = [
            "py", "rs", "ts", "tsx", "js", "jsx", "go", "java", "rb", "php", "cs", "kt", "swift", "c", "cc", "cpp",
            "h", "tf", "sql", "json", "yaml", "yml", "toml", "pdf", "csv", "md", "txt",
        ];
        if code.contains(&ext) && segs.iter().all(|s| !s.is_empty()) {
            return Some(format!("a file of this project ({t})"));
        }
    }
    None
}

/// A URL path of an API, not a place on a disk: its first segment is `api`/`apis`/`graphql`
/// or some segment is a version (`v1`, `v2beta1`), as in `/api/v1/namespaces/default/pods`
/// or `/v2/repos/ORG/tags`. (An id in it is still found by the id rule.)
fn api_path(t: &str) -> bool {
    let segs: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
    let version =
        |s: &str| s.strip_prefix('v').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.len() <= 8);
    segs.first().is_some_and(|f| ["api", "apis", "graphql", "rest"].contains(f)) || segs.iter().any(|s| version(s))
}

/// A host of one deployment: a dotted name (in a URL or alone) with a label that says which
/// environment it is (`prod`, `staging`, `internal`…) or that numbers an instance (`db-3`).
fn deployment_host(t: &str) -> Option<String> {
    let lt = t.to_ascii_lowercase();
    let host = match lt.split_once("://") {
        Some((_, rest)) => rest.rsplit_once('@').map(|(_, h)| h).unwrap_or(rest),
        None => lt.as_str(),
    };
    let host = host.split(['/', ':', '?', '#']).next().unwrap_or("");
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2
        || labels.iter().any(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return None;
    }
    // A file name (`export.json`, `compose.yaml`) is not a host: the last label is a TLD-like word.
    let tld = labels[labels.len() - 1];
    if !tld.chars().all(|c| c.is_ascii_lowercase())
        || [
            "json", "yaml", "yml", "toml", "md", "txt", "py", "rs", "ts", "js", "sh", "sql", "csv", "pdf", "zip",
            "tar", "gz", "lock", "conf", "cfg", "ini", "log", "xml", "html", "env", "mp4", "mov", "mp3",
        ]
        .contains(&tld)
    {
        return None;
    }
    const ENV: &[&str] =
        &["prod", "production", "staging", "stage", "internal", "intranet", "corp", "lan", "local", "dev", "qa", "uat"];
    let env = labels.iter().any(|l| l.split('-').any(|p| ENV.contains(&p)));
    let numbered = labels[..labels.len() - 1].iter().any(|l| {
        l.rsplit('-').next().is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) && l.contains('-')
    });
    (env || numbered).then(|| format!("a host of one deployment ({host})"))
}

fn is_hex_id(run: &str) -> bool {
    run.len() >= 7
        && run.chars().all(|c| c.is_ascii_hexdigit())
        && run.chars().filter(|c| c.is_ascii_digit()).count() >= 2
        && run.chars().any(|c| c.is_ascii_alphabetic())
}

/// UUIDs, commit hashes, ticket and issue numbers, long numbers, instance names.
fn id_like(t: &str, in_prose: bool) -> Option<String> {
    let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '#');
    // UUID 8-4-4-4-12.
    let parts: Vec<&str> = t.split('-').collect();
    if parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Some(format!("an id ({t})"));
    }
    for run in t.split(|c: char| !c.is_ascii_alphanumeric()) {
        if is_hex_id(run) {
            return Some(format!("an id or commit ({t})"));
        }
        if run.len() >= 6 && run.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!("a number that names one thing ({t})"));
        }
    }
    // `#1234`: an issue or pull request.
    if let Some(n) = t.strip_prefix('#') {
        if n.len() >= 2 && n.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!("an issue or pull request ({t})"));
        }
    }
    // `INV-20931`, `JIRA-123`: a ticket (not `ISO-8601`, `SHA-256`).
    if let Some((a, b)) = t.split_once('-') {
        if a.len() >= 2
            && a.chars().all(|c| c.is_ascii_uppercase())
            && b.len() >= 2
            && b.chars().all(|c| c.is_ascii_digit())
            && !STANDARDS.contains(&a.to_ascii_lowercase().as_str())
        {
            return Some(format!("a ticket ({t})"));
        }
    }
    // `billing_worker_1`, `gke_acme-prod_europe-west1_main`: one instance's generated name.
    let seps = t.chars().filter(|c| *c == '_' || *c == '-').count();
    let lowerish = t.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if in_prose && lowerish && !t.starts_with('-') {
        let tail_number =
            t.rsplit(['_', '-']).next().is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if (seps >= 2 && tail_number) || seps >= 4 {
            return Some(format!("an instance name ({t})"));
        }
        let parts: Vec<&str> = t.split(['_', '-']).filter(|p| !p.is_empty()).collect();
        // `shop-prod`, `eks-prod-eu-central-1`, `billing_staging`: named for one environment
        // (not `non-prod`, `pre-production`: kinds of environment).
        // (not `production-ready`, `staging-only`: English compounds, nor `iso-2022-jp`.)
        let english = parts.iter().any(|p| {
            ["ready", "grade", "like", "only", "safe", "quality", "level", "scale", "worthy", "style", "wide"]
                .contains(p)
        }) || STANDARDS.contains(&parts.first().copied().unwrap_or(""));
        let env = parts.len() >= 2
            && !english
            && !["non", "pre", "post"].contains(&parts[0])
            && parts.iter().any(|p| ENVIRONMENTS.contains(p));
        // `node-7`, `worker-03`, `db-2`: one numbered machine of a fleet.
        let numbered = parts.len() == 2
            && INSTANCES.contains(&parts[0])
            && parts[1].len() <= 3
            && parts[1].chars().all(|c| c.is_ascii_digit());
        // `orders_2024_q3`, `logs-2023`: named for a year of one data set.
        let year = parts.len() >= 2
            && !english
            && parts.iter().any(|p| p.chars().any(|c| c.is_ascii_alphabetic()))
            && parts.iter().any(|p| {
                p.len() == 4 && (p.starts_with("19") || p.starts_with("20")) && p.chars().all(|c| c.is_ascii_digit())
            });
        if env || numbered || year {
            return Some(format!("an instance name ({t})"));
        }
    }
    None
}

/// Name parts that say which deployment a thing belongs to.
const ENVIRONMENTS: &[&str] = &["prod", "production", "staging", "stg", "uat", "preprod"];

/// Things a fleet numbers (`node-7`, `runner-2`).
const INSTANCES: &[&str] = &[
    "node", "worker", "runner", "server", "srv", "host", "db", "replica", "shard", "web", "app", "broker", "nas", "vm",
    "box", "agent", "instance", "machine", "master", "minion", "ci",
];

/// Things of one deployment that are named: a name right after one ("namespace shop-prod",
/// "cluster eks-main") is that deployment's own.
const RESOURCES: &[&str] = &[
    "namespace",
    "cluster",
    "node",
    "bucket",
    "database",
    "db",
    "schema",
    "table",
    "partition",
    "host",
    "server",
    "deployment",
    "container",
    "volume",
    "queue",
    "topic",
    "instance",
    "pod",
    "stack",
    "environment",
    "vpc",
    "account",
    "project",
    "workspace",
    "index",
];

/// Namespaces every cluster has.
const BUILTIN_NAMES: &[&str] = &["kube-system", "kube-public", "kube-node-lease"];

/// Things of one person: "Dana's laptop".
const PERSONAL: &[&str] = &[
    "laptop",
    "machine",
    "computer",
    "desktop",
    "workstation",
    "mac",
    "pc",
    "box",
    "fork",
    "account",
    "home",
    "dotfiles",
];

/// A name of one instance, told by its place in the prose: after the noun it names
/// ("namespace shop-prod"), or an identifier with `_` before one ("the `orders_q3`
/// partition" written without backticks); "Dana's laptop", "the client's camera".
fn named_instance(prose: &str) -> Option<String> {
    let pw: Vec<&str> = prose.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_').to_string();
    let ident = |w: &str| {
        w.len() >= 3
            && !w.starts_with('-')
            && w.contains(['-', '_'])
            && w.chars().any(|c| c.is_ascii_alphabetic())
            && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && !BUILTIN_NAMES.contains(&w)
    };
    for (i, w) in pw.iter().enumerate() {
        let wl = clean(w).to_ascii_lowercase();
        let next = pw.get(i + 1).map(|n| clean(n)).unwrap_or_default();
        // the noun must not end its phrase ("…in the namespace, read-only…")
        if RESOURCES.contains(&wl.as_str()) && !w.ends_with([',', '.', ';', ':']) && ident(&next) {
            return Some(format!("an instance name ({wl} {next})"));
        }
        if ident(&wl) && wl.contains('_') && RESOURCES.contains(&next.to_ascii_lowercase().as_str()) {
            return Some(format!("an instance name ({wl} {next})"));
        }
        let possessor = w.strip_suffix("'s").or_else(|| w.strip_suffix("\u{2019}s"));
        if let Some(who) = possessor.map(|p| p.trim_start_matches(|c: char| !c.is_alphanumeric())) {
            let whol = who.to_ascii_lowercase();
            let person = who.starts_with(char::is_uppercase) && PERSONAL.contains(&next.to_ascii_lowercase().as_str());
            let client = ["customer", "colleague", "manager", "boss"].contains(&whol.as_str());
            if person || client {
                return Some(format!("one person's own things (\"{who}'s {next}\")"));
            }
        }
    }
    None
}

/// A count of this task's data (`48,213 rows`) or a date.
fn count_or_date(lower: &str) -> Option<String> {
    let ws: Vec<&str> = lower.split_whitespace().collect();
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric() && c != ',' && c != '.').to_string();
    for (i, w) in ws.iter().enumerate() {
        let w = clean(w);
        let w = w.trim_end_matches([',', '.']);
        if !w.is_empty()
            && w.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.')
            && w.starts_with(|c: char| c.is_ascii_digit())
        {
            let next = ws.get(i + 1).map(|n| clean(n)).unwrap_or_default();
            let next = next.trim_end_matches([',', '.']);
            let prev = if i > 0 { clean(ws[i - 1]) } else { String::new() };
            let value: f64 = w.replace(',', "").parse().unwrap_or(0.0);
            if COUNTED.contains(&next) && !LIMITS.contains(&prev.as_str()) && value >= 2.0 && !names_one(&prev, value) {
                return Some(format!("a count of this task's data ({w} {next})"));
            }
            if MONTHS.contains(&prev.as_str()) && (1.0..=31.0).contains(&value) {
                return Some(format!("a date ({} {w})", ws[i - 1]));
            }
        }
        // 2026-11-28
        let b = w.as_bytes();
        if b.len() >= 10 {
            for s in 0..=b.len() - 10 {
                let d = &b[s..s + 10];
                if d[4] == b'-'
                    && d[7] == b'-'
                    && d.iter().enumerate().all(|(k, c)| k == 4 || k == 7 || c.is_ascii_digit())
                {
                    return Some(format!("a date ({})", &w[s..s + 10]));
                }
            }
        }
    }
    for p in [
        "yesterday",
        "this morning",
        "this afternoon",
        "this evening",
        "last week",
        "last night",
        "earlier today",
        "tomorrow",
        "this week",
        "next week",
        "this sprint",
        "next sprint",
        "end of day",
    ] {
        if lower.contains(p) {
            return Some(format!("a date ({p})"));
        }
    }
    const DAYS: &[&str] =
        &["today", "tonight", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
    for (i, w) in ws.iter().enumerate() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != ':');
        if DAYS.contains(&w) || DAYS.contains(&w.strip_suffix('s').unwrap_or("")) {
            return Some(format!("a date ({w})"));
        }
        // "14:32 UTC", "3pm", "10:15am": a time of this run.
        let zone = |z: &str| ["am", "pm", "utc", "gmt", "cet", "cest", "pst", "pdt", "est", "edt"].contains(&z);
        let (num, suffix) = w.split_at(w.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(w.len()));
        let clock = !num.is_empty()
            && num.split(':').all(|p| !p.is_empty() && p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit()));
        let next = ws.get(i + 1).map(|n| n.trim_matches(|c: char| !c.is_alphanumeric())).unwrap_or("");
        if clock && ((num.contains(':') && zone(next)) || zone(suffix)) {
            return Some(format!("a time of this run ({w})"));
        }
    }
    None
}

#[cfg(test)]
/// Checks each (skill, lesson, rule or "") with no SKILL.md, notes or chunk known: the
/// rules' tables of cases, each in its rule's file.
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
        Context { skill_md: Some(MD), notes, chunk_skills: used, similarity: None }
    }

    #[test]
    fn table() {
        let notes = vec![(7, "When jq says Cannot iterate over null, guard the array with `.items[]?`.".to_string())];
        let used = vec!["jq".to_string()];
        let c = ctx(&notes, Some(&used));
        // (lesson, the rule that refuses it, or "" for promoted)
        let cases: &[(&str, &str)] = &[
            ("`--arg` always passes a string; use `--argjson` for numbers.", ""),
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

    #[test]
    fn things_of_this_task_are_task_bound() {
        table_of(&[
            ("ffmpeg", "Transcoded 317 lectures to 720p for the archive.", "task-bound"),
            ("kubectl", "All 12 deployments in staging point at the old config map.", "task-bound"),
            ("npm", "Our CI caches node_modules, so `npm ci` is slow there.", "task-bound"),
            ("git", "This ticket needs the fix backported to the 2.x branch.", "task-bound"),
            ("docker-compose", "The team prefers one compose file per service.", "task-bound"),
            ("terraform", "The project uses Terraform 1.5 with a remote backend.", "task-bound"),
            ("psql", "The nightly load failed at 03:10 UTC on the reporting schema.", "task-bound"),
            ("pytest", "The suite must be green by Thursday for the release.", "task-bound"),
            ("rsync", "The sync copies all 317 raw clips again every night.", "task-bound"),
            // numbers that are limits, defaults, units or versions, and tools that need things
            ("kubectl", "`kubectl logs --tail` shows the last 10 lines by default; `--tail=-1` shows all of them.", ""),
            ("git", "Git keeps reflog entries 90 days by default before `gc` prunes them.", ""),
            ("ffmpeg", "Two-pass encoding takes about twice the time of one pass at the same bitrate.", ""),
            ("npm", "Node 18 binaries built with node-gyp crash on Node 20; rebuild them.", ""),
            (
                "playwright",
                "Playwright needs its browsers installed with `npx playwright install` after every upgrade.",
                "",
            ),
            ("psql", "`pg_restore -j 4` restores with 4 parallel jobs, but only from a custom-format dump.", ""),
        ]);
    }

    #[test]
    fn names_of_one_deployment_are_task_bound() {
        table_of(&[
            ("kubectl", "The api-gateway service in namespace payments-live has no readiness probe.", "task-bound"),
            ("kubectl", "Pods on node-12 keep getting evicted for disk pressure.", "task-bound"),
            ("psql", "Vacuum never finishes on the events_2023_h2 table.", "task-bound"),
            ("docker-compose", "The ledger-staging stack needs the VPN to reach its broker.", "task-bound"),
            ("ffmpeg", "The customer's scanner writes interlaced video that needs `yadif`.", "task-bound"),
            ("git", "On Marek's laptop the hooks path points at an old folder.", "task-bound"),
            // kinds of things, built-in names and code spans are not one deployment's
            ("kubectl", "Pods in the kube-system namespace are skipped by `kubectl get pods` without `-A`.", ""),
            (
                "kubectl",
                "A read-only replica rejects writes with `ERROR: cannot execute in a read-only transaction`.",
                "",
            ),
            (
                "docker-compose",
                "Non-prod stacks can share one `.env` file, but `docker compose --env-file` picks another.",
                "",
            ),
            ("psql", "`pg_dump -t 'logs_*'` dumps every table whose name matches the pattern.", ""),
            ("docker-compose", "A production-ready stack sets `restart: unless-stopped` on every service.", ""),
            (
                "psql",
                "Japanese mail in iso-2022-jp needs `convert_from(data, 'ISO_2022_JP')` before it is searchable.",
                "",
            ),
            ("git", "Git's index keeps the staged content, so `git diff --cached` shows it.", ""),
            ("npm", "Node 20's fetch ignores `HTTPS_PROXY`; pass an agent or use `undici`'s `ProxyAgent`.", ""),
        ]);
    }

    #[test]
    fn numbers_and_paths_that_are_not_this_task() {
        table_of(&[
            // a status or one thing after "a", not a count
            ("curl", "With `-f` a 500 leaves the exit code at 22, so scripts can branch on it.", ""),
            ("curl", "A 429 carries `Retry-After`; `--retry` honours it since 7.66.", ""),
            ("kubectl", "A 3 GB image pull counts against the startup probe's time, so widen `failureThreshold`.", ""),
            // an API's URL path is not a path on this machine
            ("kubectl", "`kubectl get --raw /apis/apps/v1/deployments` lists every deployment as JSON.", ""),
            ("curl", "GitLab answers `/api/v4/projects/:id/jobs` with 20 jobs a page unless `per_page` is given.", ""),
            // while a machine's path and a count still are
            ("rsync", "The copy into /srv/media/clips/raw took all night.", "task-bound"),
            ("psql", "The import loaded 52 invoices twice.", "task-bound"),
        ]);
    }
}
