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
//!    number, a long number, an instance name), a count of rows or records, a date, a
//!    repository or a person;
//! 8. **narration**: routine progress: what the agent did ("Ran the tests, all passed"),
//!    what the task was, or what the user wanted, without a rule a later session can follow.
//!
//! "Near-duplicate" is word containment over stemmed content words (code included): at least
//! 75% of the lesson's words are in the other text's unit and at least 60% of that unit's
//! words are in the lesson. Both directions are asked, so a lesson that restates a sentence and
//! adds a new fact of its own (new words) passes.
//!
//! Pure text work: no disk, no database, and no input can make it panic (fuzzed in
//! `tests/fuzz/filter.rs`). The engine gathers the context (`Engine::historian_result`).

use std::collections::HashSet;

use crate::team::redact;
use crate::text::{is_stop, stem, words};

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
}

/// Why an observation is not a lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// What the credential looks like.
    Secret(&'static str),
    Empty,
    /// The specific words found (fewer than three).
    Vague(usize),
    /// Its length in characters.
    TooLong(usize),
    UnusedSkill,
    /// The note's id and how much of the lesson it covers.
    RestatesNote(i64),
    /// The sentence of SKILL.md it restates.
    RestatesSkill(String),
    /// What task-bound thing was found.
    TaskBound(String),
    /// What narration was found.
    Narration(String),
}

impl Refusal {
    /// The rule's short name (the eval's confusion table, the log).
    pub fn category(&self) -> &'static str {
        match self {
            Refusal::Secret(_) => "secret",
            Refusal::Empty | Refusal::Vague(_) => "vague",
            Refusal::TooLong(_) => "too-long",
            Refusal::UnusedSkill => "unused-skill",
            Refusal::RestatesNote(_) => "restates-note",
            Refusal::RestatesSkill(_) => "restates-skill",
            Refusal::TaskBound(_) => "task-bound",
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
    vague(skill, lesson)?;
    let n = lesson.chars().count();
    if n > MAX_LESSON_CHARS {
        return Err(Refusal::TooLong(n));
    }
    if let Some(used) = ctx.chunk_skills {
        if !used.iter().any(|s| s.eq_ignore_ascii_case(skill)) {
            return Err(Refusal::UnusedSkill);
        }
    }
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
    if let Some(what) = task_bound(lesson) {
        return Err(Refusal::TaskBound(what));
    }
    if let Some(what) = narration(lesson) {
        return Err(Refusal::Narration(what));
    }
    Ok(())
}

// ---- vague ---------------------------------------------------------------------------------

/// Words that say nothing specific about how to use a skill.
const GENERIC: &[&str] = &[
    "careful",
    "useful",
    "helpful",
    "important",
    "good",
    "great",
    "well",
    "work",
    "works",
    "worked",
    "working",
    "tool",
    "tools",
    "skill",
    "skills",
    "thing",
    "things",
    "stuff",
    "make",
    "sure",
    "always",
    "never",
    "remember",
    "check",
    "double",
    "output",
    "properly",
    "correctly",
    "really",
    "lot",
    "lots",
    "many",
    "much",
    "option",
    "options",
    "flag",
    "flags",
    "complex",
    "tricky",
    "confusing",
    "powerful",
    "kind",
    "task",
    "done",
    "fine",
    "nice",
    "easy",
    "hard",
    "may",
    "might",
    "must",
    "need",
    "needs",
    "also",
    "like",
    "way",
    "ways",
    "right",
    "wrong",
    "expected",
    "n",
    "na",
    "none",
    "nothing",
    "ok",
    "okay",
    "etc",
    "job",
    "try",
    "tried",
    "help",
    "helps",
    "lesson",
    "note",
    "notes",
    "learned",
    "problem",
    "problems",
    "issue",
    "issues",
    "handle",
    "handled",
    "very",
    "quite",
];

fn vague(skill: &str, lesson: &str) -> Result<(), Refusal> {
    let has_code = lesson.contains('`');
    let skill_l = skill.to_ascii_lowercase();
    let ws = words(lesson);
    let anchored = has_code
        || lesson
            .split_whitespace()
            .any(|w| w.len() > 1 && w.starts_with('-') && w[1..].starts_with(char::is_alphabetic))
        || ws.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()));
    let specific = ws
        .iter()
        .filter(|w| !is_stop(w) && !GENERIC.contains(&w.as_str()))
        .filter(|w| *w != &skill_l && stem(w) != skill_l.as_str())
        .filter(|w| w.chars().count() > 1)
        .count();
    if specific == 0 && !anchored {
        return Err(if ws.is_empty() { Refusal::Empty } else { Refusal::Vague(0) });
    }
    if specific < 3 && !anchored {
        return Err(Refusal::Vague(specific));
    }
    Ok(())
}

// ---- near-duplicates -----------------------------------------------------------------------

/// The stemmed content words of a text, code included.
fn terms(text: &str) -> HashSet<String> {
    words(text).iter().filter(|w| !is_stop(w)).map(|w| stem(w).to_string()).collect()
}

/// True when `lesson` says what `unit` says: most of the lesson's words are the unit's, and
/// most of the unit's are the lesson's.
fn restates(lesson: &HashSet<String>, unit: &HashSet<String>) -> bool {
    if lesson.len() < 2 || unit.len() < 2 {
        return false;
    }
    let both = lesson.intersection(unit).count() as f32;
    both / lesson.len() as f32 >= 0.75 && both / unit.len() as f32 >= 0.6
}

/// A SKILL.md without its frontmatter.
fn body(md: &str) -> &str {
    let t = md.trim_start_matches('\u{feff}');
    if let Some(rest) = t.strip_prefix("---") {
        if let Some(end) = rest.find("\n---") {
            let after = &rest[end + 4..];
            return after.split_once('\n').map(|(_, b)| b).unwrap_or("");
        }
    }
    t
}

/// The units a text is compared by: each sentence (lines, and `. ` / `! ` / `? ` ends), and
/// each clause of a sentence (split at `;` and `:` followed by a space, and `, so`).
fn units(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(sentences).flat_map(|s| {
        let clauses: Vec<&str> = split_all(s, &["; ", ": ", ", so "]);
        let whole = if clauses.len() > 1 { Some(s) } else { None };
        whole.into_iter().chain(clauses)
    })
}

fn sentences(line: &str) -> Vec<&str> {
    split_all(line, &[". ", "! ", "? "])
}

/// `s` split at every occurrence of any of `seps` (kept out), without empty parts.
fn split_all<'a>(s: &'a str, seps: &[&str]) -> Vec<&'a str> {
    let mut out = vec![];
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        if let Some(sep) = seps.iter().find(|sep| s[i..].starts_with(**sep)) {
            out.push(&s[start..i]);
            i += sep.len();
            start = i;
            continue;
        }
        i += s[i..].chars().next().map(char::len_utf8).unwrap_or(1);
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
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
    for (needle, what) in [
        ("github.com/", "a repository"),
        ("gitlab.com/", "a repository"),
        ("bitbucket.org/", "a repository"),
        ("this repo", "this repository"),
        ("this project", "this project"),
        ("this codebase", "this codebase"),
        ("this cluster", "this cluster"),
        ("this account", "this account"),
        ("our repo", "this repository"),
        ("our project", "this project"),
        ("our codebase", "this codebase"),
        ("in our ", "this team's setup"),
    ] {
        if prose_lower.contains(needle) {
            return Some(what.into());
        }
    }
    let pw: Vec<&str> = prose.split_whitespace().collect();
    for (i, w) in pw.iter().enumerate() {
        let wl = w.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase();
        let next = pw.get(i + 1).map(|n| n.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase());
        let wants = |n: &Option<String>| {
            n.as_deref().is_some_and(|n| {
                ["wants", "wanted", "needs", "needed", "prefers", "preferred", "asked", "requested", "likes"]
                    .contains(&n)
            })
        };
        // "the user wants", "Jordan prefers": a person's wish, not the skill's behaviour.
        if (wl == "user" || wl == "users" || wl == "client" || wl == "customer") && wants(&next) {
            return Some("what the user wanted".into());
        }
        if w.starts_with(char::is_uppercase) && wl.len() > 2 && !is_stop(&wl) && wants(&next) && i == 0 {
            return Some(format!("what {w} wanted"));
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
    if t.starts_with('/') && !SYSTEM_PATHS.iter().any(|p| t.starts_with(p)) {
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
            if COUNTED.contains(&next) && !LIMITS.contains(&prev.as_str()) && value >= 2.0 {
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
    for p in ["yesterday", "this morning", "last week", "last night", "earlier today", "tomorrow"] {
        if lower.contains(p) {
            return Some(format!("a date ({p})"));
        }
    }
    None
}

// ---- narration -----------------------------------------------------------------------------

/// Past-tense verbs a progress report starts with.
const DID: &[&str] = &[
    "ran",
    "reran",
    "re-ran",
    "used",
    "loaded",
    "created",
    "generated",
    "completed",
    "finished",
    "updated",
    "installed",
    "applied",
    "added",
    "wrote",
    "opened",
    "converted",
    "merged",
    "extracted",
    "compressed",
    "checked",
    "restarted",
    "scaled",
    "brought",
    "fixed",
    "worked",
    "deployed",
    "built",
    "downloaded",
    "tested",
    "verified",
    "confirmed",
    "implemented",
    "refactored",
    "removed",
    "deleted",
    "moved",
    "renamed",
    "reviewed",
    "filtered",
    "saved",
    "processed",
    "analyzed",
    "analysed",
    "summarized",
    "summarised",
    "called",
    "executed",
    "tried",
    "started",
    "stopped",
    "edited",
    "changed",
    "wired",
    "configured",
    "migrated",
    "exported",
    "imported",
    "cleaned",
    "launched",
    "investigated",
    "debugged",
    "resolved",
    "handled",
    "managed",
    "produced",
    "looked",
    "went",
    "spent",
    "succeeded",
    "proceeded",
    "continued",
    "performed",
    "followed",
];

/// Phrases of a progress report, anywhere in the text.
const PROGRESS: &[&str] = &[
    "all tests passed",
    "all tests pass",
    "tests passed",
    "everything was green",
    "everything is green",
    "the build passed",
    "build is green",
    "as expected",
    "successfully",
    "the task was",
    "the task is",
    "the goal was",
    "as the user requested",
    "as requested",
    "for the user",
    "the user asked",
    "without errors",
    "without any errors",
    "it works",
    "it worked",
    "is now working",
    "now works",
    "was completed",
    "is complete",
    "done.",
];

/// Words that turn a report into a rule: a cause, a condition, an instead, a must.
const RULE: &[&str] = &[
    "because",
    "unless",
    "instead",
    "otherwise",
    "must",
    "needs",
    "need",
    "only",
    "means",
    "never",
    "always",
    "cannot",
    "can't",
    "doesn't",
    "does",
    "requires",
    "found",
    "turns",
    "so that",
    "which",
    "rather",
];

/// What in `lesson` is routine progress, or `None`.
pub fn narration(lesson: &str) -> Option<String> {
    let lower = lesson.to_ascii_lowercase();
    let ws: Vec<String> = lower
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-').to_string())
        .filter(|w| !w.is_empty())
        .collect();
    let has_rule = RULE.iter().any(|r| if r.contains(' ') { lower.contains(r) } else { ws.iter().any(|w| w == r) })
        || lower.contains("n't ");
    // A progress phrase in a sentence that gives a cause or a rule is the story of a fix
    // ("passed locally but timed out in CI because…"), not a report.
    for p in PROGRESS {
        if lower.contains(p) && !has_rule {
            return Some(format!("\"{p}\""));
        }
    }
    // "Ran X", "The agent ran X", "I used X", "Then merged X": a report of an action.
    let mut i = 0;
    while i < ws.len()
        && ["the", "agent", "i", "we", "then", "first", "finally", "next", "also"].contains(&ws[i].as_str())
    {
        i += 1;
    }
    // A verb of the list, or any word in -ed followed by a determiner ("Rebased the branch",
    // "Queried the orders table"): an action done to one thing of this task.
    let determiner = |w: Option<&String>| {
        w.is_some_and(|w| {
            ["the", "a", "an", "all", "this", "that", "these", "those", "our", "its", "their", "every", "both"]
                .contains(&w.as_str())
        })
    };
    let first_did = ws
        .get(i)
        .is_some_and(|w| DID.contains(&w.as_str()) || (w.len() > 4 && w.ends_with("ed") && determiner(ws.get(i + 1))));
    let agent_did =
        ws.windows(2).any(|p| (p[0] == "agent" || p[0] == "i" || p[0] == "we") && DID.contains(&p[1].as_str()));
    if (first_did || agent_did) && !has_rule {
        let verb = if first_did { ws[i].clone() } else { "the agent did".into() };
        return Some(format!("a report of what was done (\"{verb} …\")"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "---\nname: jq\ndescription: JSON\n---\n# jq\n\n- Use `-r` to print raw strings without JSON quotes.\n- Encode with `-crf 23`; a lower CRF means higher quality and a larger file.\n";

    fn ctx<'a>(notes: &'a [(i64, String)], used: Option<&'a [String]>) -> Context<'a> {
        Context { skill_md: Some(MD), notes, chunk_skills: used }
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
    fn units_and_body() {
        assert_eq!(body("---\nname: x\n---\nbody\n"), "body\n");
        assert_eq!(body("no frontmatter"), "no frontmatter");
        assert_eq!(body("---\nunclosed"), "---\nunclosed");
        let u: Vec<&str> = units("One. Two; three: four, so five").collect();
        assert_eq!(u, vec!["One", "Two; three: four, so five", "Two", "three", "four", "five"]);
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
