//! What a note's showing led to: the one rule that decides whether a note shown in a session
//! was **used** there, or **ignored** (docs/protocol.md, "Use and trust").
//!
//! A shown note is used when a call of the session after the load contains one of the note's
//! specifics that no call of the session before the load contained. A specific is what the
//! note adds: a flag, a path or file name, a version, an identifier, an environment variable
//! ([`super::sameness::signature`] finds them), and of a code span that is a command, what the
//! span adds to the command (`aws s3 sync --exact-timestamps`: `--exact-timestamps`), or the
//! whole command when it adds nothing else (`npx prisma generate`: a step). The program a
//! call runs and its subcommands (the first words of each command) are not a use by
//! themselves, nor is what the note says not to do or warns about (a clause's subject that
//! does harm, [`Subject`]). A call of a tool that only reads applies nothing unless the note
//! says to look at what it names. A shown note is ignored when an error text the note names (a
//! quoted message, a message a failure comes with, an error code, an exception name) comes
//! back in the errors of a failed call after the load, before any use.
//!
//! Pure text: the calls come in as text; which session, which load, and counting a session
//! once are the engine's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sameness;

/// A note's evidence, over the sessions that ended: how many were shown it, used it, ignored
/// it, and when it was last used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// Sessions whose tool results showed the note (a block appended to a skill load).
    #[serde(default)]
    pub shown: i64,
    /// Sessions that used it: a later call carried a specific the note adds.
    #[serde(default)]
    pub used: i64,
    /// Sessions where an error the note names came back before it was used.
    #[serde(default)]
    pub ignored: i64,
    /// When a call last used it (ms since the epoch; the call's arrival); absent when never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<i64>,
    /// A person wrote, edited, pinned, accepted or confirmed it (the dashboard, a CLI in a
    /// person's terminal, the review queue).
    #[serde(default, skip_serializing_if = "is_false")]
    pub vouched: bool,
    /// Sessions other than the one that wrote it that used it (every session, for a note
    /// whose writing session is not known).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub used_elsewhere: i64,
    /// Derived from the two above ([`Evidence::with_trust`]): trusted when either holds.
    #[serde(default)]
    pub trust: Trust,
}

/// Whether a note has earned trust: a person's act, or a use in another session than the
/// writer's. Everything else (the historian's, the miner's, the agent's own notes) is
/// unverified until then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    Trusted,
    #[default]
    Unverified,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Unverified => "unverified",
        }
    }

    pub fn parse(s: &str) -> Option<Trust> {
        match s.trim() {
            "trusted" => Some(Trust::Trusted),
            "unverified" => Some(Trust::Unverified),
            _ => None,
        }
    }
}

impl Evidence {
    /// The note's trust, from its acts and uses.
    pub fn derived_trust(&self) -> Trust {
        if self.vouched || self.used_elsewhere > 0 {
            Trust::Trusted
        } else {
            Trust::Unverified
        }
    }

    /// `self` with [`Evidence::trust`] derived.
    pub fn with_trust(mut self) -> Evidence {
        self.trust = self.derived_trust();
        self
    }

    /// What an import or a team pull keeps of evidence that came with a note: its counts and
    /// acts; a note that says it is trusted without saying why (an older export) keeps that as
    /// a person's act.
    pub fn carried(mut self) -> Evidence {
        if self.trust == Trust::Trusted && !self.vouched && self.used_elsewhere <= 0 {
            self.vouched = true;
        }
        self.with_trust()
    }
}

/// Why a note decays, if it does: it names specifics (so a use of it can be seen), it was
/// shown in at least `after` sessions (0: never decays) and used in none, and neither a pin
/// nor a person's act keeps it, and no error it names came back. Notes with no specifics stay unverified until feedback or a
/// person says more.
pub fn decay_reason(e: &Evidence, pinned: bool, delta: &str, after: u32) -> Option<String> {
    let due = after > 0 && e.shown >= i64::from(after) && e.used == 0;
    // An error the note names came back (ignored): the lesson bears on what happens here, even
    // though no session applied it yet; junk never meets its error.
    if !due || pinned || e.vouched || e.used_elsewhere > 0 || e.ignored > 0 || specifics(delta).is_empty() {
        return None;
    }
    Some(format!("unused: shown in {} sessions, never used", e.shown))
}

/// What recall's ranking and the block read of a note's evidence (the catalog keeps it per
/// note): the counts a use rate is made of, and its trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uses {
    pub shown: u32,
    pub used: u32,
    pub ignored: u32,
    pub trusted: bool,
}

/// The prior of [`Uses::rate`]: a note never shown counts as used in one of two sessions, so
/// a new note ranks as an even chance, neither buried nor lifted.
pub const PRIOR_USED: f32 = 1.0;
/// See [`PRIOR_USED`].
pub const PRIOR_SHOWN: f32 = 2.0;

impl Uses {
    pub fn of(e: &Evidence) -> Uses {
        let n = |x: i64| x.clamp(0, u32::MAX as i64) as u32;
        Uses { shown: n(e.shown), used: n(e.used), ignored: n(e.ignored), trusted: e.derived_trust() == Trust::Trusted }
    }

    /// The smoothed use rate in (0, 1): sessions that used the note over sessions shown it,
    /// with a session that ignored it (an error the note names came back) counted against it
    /// once more, and the prior [`PRIOR_USED`] / [`PRIOR_SHOWN`]. Never shown: 1/2; shown in
    /// six sessions and never used: 1/8; used in three of three: 4/5.
    pub fn rate(&self) -> f32 {
        (self.used as f32 + PRIOR_USED) / (self.shown as f32 + self.ignored as f32 + PRIOR_SHOWN)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A call of the session, as judged: its arguments as text, its error lines when it failed
/// (empty otherwise), and whether its tool only reads ([`super::calls::reads_only`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Later<'a> {
    pub args: &'a str,
    pub errors: &'a str,
    pub read_only: bool,
}

impl Later<'_> {
    /// Whether the call carries `s` as a use: a call that only reads applies nothing, unless
    /// the note says to look at what it names ("see `tests/schemas.rs`").
    fn carries(&self, s: &Specific) -> bool {
        (!self.read_only || s.look) && occurs(self.args, s)
    }
}

/// What a session's calls say of a note shown there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The first later call that used the note (its index among the calls after the load).
    pub used: Option<usize>,
    /// An error the note names came back before any use.
    pub ignored: bool,
}

/// One thing a note adds, as a call would carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specific {
    pub text: String,
    /// A command the note adds as a step: found where a program's name stands, too.
    pub step: bool,
    /// The note says to look at it (`see`, `read`, `check`, `open` right before it): reading
    /// it is applying the note.
    pub look: bool,
}

/// Judges a note (its lesson's text) shown in a session, by the session's calls before the
/// load and after it.
pub fn judge(note: &str, before: &[Later<'_>], after: &[Later<'_>]) -> Verdict {
    let new: Vec<Specific> = specifics(note).into_iter().filter(|s| !before.iter().any(|b| b.carries(s))).collect();
    let used = if new.is_empty() { None } else { after.iter().position(|c| new.iter().any(|s| c.carries(s))) };
    let errors = error_texts(note);
    let until = used.unwrap_or(after.len());
    let ignored = after[..until].iter().any(|c| !c.errors.is_empty() && errors.iter().any(|e| mentions(c.errors, e)));
    Verdict { used, ignored }
}

/// What a note adds (see the module docs), each once.
pub fn specifics(note: &str) -> Vec<Specific> {
    let sig = sameness::signature(note);
    let spans = code_spans(note);
    let errors: Vec<String> = error_texts(note).iter().map(|e| e.to_lowercase()).collect();
    // What the note says not to do: its only specific in a negated note, or a specific in a
    // negated clause.
    // A negation bears on what follows it in its clause: in "jq -r prints strings without
    // their quotes" or "pass `--arg`, never by splicing" the specific is what to do; in "never
    // pass --no-verify" it is what not to do.
    let lower = note.to_lowercase();
    let negated = |s: &str| {
        (sig.negated && sig.specifics.len() == 1 && negation_before(&lower, &s.to_lowercase()))
            || sig.roles.contains(&("not".to_string(), s.to_string()))
    };
    let mut out: Vec<Specific> = vec![];
    let mut push = |text: &str, step: bool, look: bool| {
        let text = text.trim();
        let plain_number = text.chars().all(|c| c.is_ascii_digit()) && text.len() <= 2;
        if text.chars().count() < 2 || plain_number || errors.contains(&text.to_lowercase()) {
            return;
        }
        if !out.iter().any(|s| s.text == text) {
            out.push(Specific { text: text.to_string(), step, look });
        }
    };
    for s in &sig.specifics {
        if negated(s) {
            continue;
        }
        let span = spans.iter().any(|span| span == s);
        let needle = if span { format!("`{}`", s.to_lowercase()) } else { s.to_lowercase() };
        let subject = subject_role(&lower, &needle);
        if subject == Some(Subject::Harm) {
            continue;
        }
        let look = looked_at(&lower, &needle);
        if span {
            // "Run `A` before `B`": B is where the step goes, not a step the note adds; nor is
            // the command a clause is about ("`aws s3 sync` needs `--exact-timestamps`").
            let anchor = anchored(&lower, &s.to_lowercase()) || subject == Some(Subject::Context);
            for (text, step) in span_specifics(s) {
                if !(step && anchor) {
                    push(&text, step, look);
                }
            }
        } else {
            push(s, false, look);
            // `--max-old-space-size=4096`, or `NODE_OPTIONS=--max-old-space-size=6144`: the
            // flag with another value is the note applied too.
            let flag = s.find("=-").map_or(s.as_str(), |i| &s[i + 1..]);
            if let Some((name, _)) = flag.split_once('=').filter(|(n, _)| n.starts_with('-') && n.len() > 2) {
                push(name, false, look);
            }
        }
    }
    out
}

/// What a specific is to the clause it begins (after [`SUBJECT_LEAD`] words at most).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    /// The clause says it does harm or is to be avoided (`` `-DskipTests` skips the unit tests
    /// as well ``, `` plain `uv sync` rewrites uv.lock ``, `` `-k` is against policy ``): what the
    /// note warns about, not what it adds.
    Harm,
    /// The clause says it needs another code span (`` `aws s3 sync` needs
    /// `--exact-timestamps` ``): the command is where the note's addition goes, not a step.
    Context,
}

/// Words that may stand before a clause's subject.
const SUBJECT_LEAD: &[&str] = &[
    "a", "an", "the", "plain", "bare", "unquoted", "default", "old", "older", "stock", "but", "and", "while",
    "whereas", "even", "only", "so",
];
/// Verbs that say a clause's subject does harm.
const HARM: &[&str] = &[
    "deletes",
    "removes",
    "wipes",
    "drops",
    "skips",
    "rewrites",
    "overwrites",
    "truncates",
    "flattens",
    "breaks",
    "fails",
    "hangs",
    "mangles",
    "loses",
    "ignores",
    "misses",
    "leaks",
    "corrupts",
    "clobbers",
    "resets",
    "crashes",
    "dies",
    "races",
    "stalls",
    "hides",
    "swallows",
    "nests",
];
/// What a clause's subject is said to be (`is …`) when it is to be avoided.
const BAD: &[&str] = &[
    "deprecated",
    "against",
    "not",
    "too",
    "unsafe",
    "broken",
    "slow",
    "wrong",
    "banned",
    "forbidden",
    "removed",
    "insecure",
    "flaky",
    "disallowed",
    "blocked",
    "dangerous",
    "obsolete",
    "outdated",
    "stale",
    "buggy",
    "unsupported",
];
/// Verbs by which a clause's subject needs what follows.
const NEED: &[&str] = &["needs", "need", "requires", "require", "wants", "expects"];

/// Where the clause holding byte `at` of `lower` starts: after the last `;`, `:`, `!`, `?`,
/// `—` or sentence's `.` before it.
fn clause_start(lower: &str, at: usize) -> usize {
    let head = &lower[..at];
    let mark = head.rfind([';', ':', '!', '?', '—']).map(|i| i + head[i..].chars().next().map_or(1, char::len_utf8));
    let stop = head.rfind(". ").map(|i| i + 1);
    mark.max(stop).unwrap_or(0)
}

/// What the specific written as `needle` in `lower` (the note, lower-cased) is to the clause
/// it begins, if it begins one: its subject, followed within six words (before any other code
/// span) by a verb of [`HARM`], `is`/`are` and a word of [`BAD`], or a verb of [`NEED`] and
/// another code span.
fn subject_role(lower: &str, needle: &str) -> Option<Subject> {
    let at = lower.find(needle)?;
    let word = |w: &str| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '-')).to_string();
    if !lower[clause_start(lower, at)..at].split_whitespace().all(|w| SUBJECT_LEAD.contains(&word(w).as_str())) {
        return None;
    }
    let rest = &lower[at + needle.len()..];
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, ';' | ':' | '!' | '?' | '—')
                || (c == '.' && rest[i + 1..].chars().next().is_none_or(char::is_whitespace))
        })
        .map_or(rest.len(), |(i, _)| i);
    let clause = &rest[..end];
    let (text, another_span) = clause.find('`').map_or((clause, false), |i| (&clause[..i], true));
    let words: Vec<String> = text.split_whitespace().map(word).take(6).collect();
    for (i, w) in words.iter().enumerate() {
        if HARM.contains(&w.as_str())
            || (matches!(w.as_str(), "is" | "are") && words.get(i + 1).is_some_and(|n| BAD.contains(&n.as_str())))
        {
            return Some(Subject::Harm);
        }
        if NEED.contains(&w.as_str()) && another_span {
            return Some(Subject::Context);
        }
    }
    None
}

/// Words right before a specific that tell the reader to look at it.
const LOOK: &[&str] = &["see", "read", "check", "open", "consult", "inspect"];

/// Whether the word right before the specific written as `needle` in `lower` is one of
/// [`LOOK`].
fn looked_at(lower: &str, needle: &str) -> bool {
    let Some(at) = lower.find(needle) else { return false };
    let word = lower[..at].split_whitespace().next_back().unwrap_or("");
    LOOK.contains(&word.trim_matches(|c: char| !c.is_alphanumeric()))
}

/// Words after which a command in a note is where its step goes, not the step.
const ANCHORS: &[&str] = &["before", "after", "until", "than", "unlike"];

/// Whether the code span `span` (lower-cased) stands right after one of [`ANCHORS`] in
/// `lower` (the note, lower-cased).
fn anchored(lower: &str, span: &str) -> bool {
    let Some(at) = lower.find(&format!("`{span}`")) else { return false };
    let word = lower[..at].split_whitespace().next_back().unwrap_or("");
    ANCHORS.contains(&word.trim_matches(|c: char| !c.is_alphanumeric()))
}

/// Words that negate what follows them.
const NEGATING: &[&str] = &["not", "never", "no", "without", "avoid", "don't", "doesn't", "isn't", "cannot"];

/// Whether a negation stands before the first place `specific` is written in `lower` (a
/// note, lower-cased), within its clause (after the last `.`, `;`, `:`, `!` or `?` before
/// it); `specific` not found: true (the old rule, the note's only specific is negated).
fn negation_before(lower: &str, specific: &str) -> bool {
    let Some(at) = lower.find(specific) else { return true };
    let start = lower[..at].rfind(['.', ';', ':', '!', '?']).map_or(0, |i| i + 1);
    lower[start..at]
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .any(|w| NEGATING.contains(&w) || (w.ends_with("n't") && w.len() > 3))
}

/// The contents of the note's code spans, trimmed.
fn code_spans(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        let after = &rest[a + 1..];
        let Some(b) = after.find('`') else { break };
        out.push(after[..b].trim().to_string());
        rest = &after[b + 1..];
    }
    out
}

/// A word a program's name could be: lower-case letters, digits, `_` and `-`, starting with a
/// letter.
fn is_plain(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// An environment assignment before a command (`RUST_LOG=debug cargo run`).
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !n.starts_with('-')
    })
}

/// How many words of a command are its program and subcommands: up to three plain words,
/// after any environment assignments and `sudo`.
fn head_len(words: &[&str]) -> (usize, usize) {
    let mut start = 0;
    while start < words.len() && (is_assignment(words[start]) || words[start] == "sudo") {
        start += 1;
    }
    let n = words[start..].iter().take(3).take_while(|w| is_plain(w)).count();
    (start, n)
}

/// What a code span adds: a single word that is more than a program's name; of a command,
/// the specifics after its program and subcommands, else the whole command as a step.
fn span_specifics(span: &str) -> Vec<(String, bool)> {
    let words: Vec<&str> = span.split_whitespace().collect();
    if words.len() <= 1 {
        let specific = !is_plain(span) || span.chars().any(|c| c.is_ascii_digit()) || span.contains(['_', '-']);
        return if specific { vec![(span.to_string(), false)] } else { vec![] };
    }
    let (start, n) = head_len(&words);
    let mut out: Vec<(String, bool)> = words[..start].iter().map(|w| (w.to_string(), false)).collect();
    let tail = words[start + n..].join(" ");
    let inner = sameness::signature(&tail).specifics;
    if inner.is_empty() {
        if n >= 2 || !tail.is_empty() {
            out.push((words[start..].join(" "), true));
        }
    } else {
        out.extend(inner.into_iter().map(|s| (s, false)));
    }
    out
}

/// Whether `s` occurs in a call's text: as a whole word (a version is not part of a longer
/// one, a flag not of a longer flag, a name not of a URL), case-insensitively except for flags
/// (`-l` is not `-L`); not where a command's program and subcommands stand, unless it is a
/// step.
pub fn occurs(call: &str, s: &Specific) -> bool {
    let flag = s.text.starts_with('-');
    let (hay, needle) =
        if flag { (call.to_string(), s.text.clone()) } else { (call.to_lowercase(), s.text.to_lowercase()) };
    let hay = collapse(&hay);
    let needle = collapse(&needle);
    if needle.is_empty() {
        return false;
    }
    let heads = if s.step || flag { vec![] } else { head_ranges(&hay) };
    let mut from = 0;
    while let Some(i) = hay[from..].find(&needle) {
        let at = from + i;
        let end = at + needle.len();
        let before = hay[..at].chars().next_back();
        let after = hay[end..].chars().next();
        let open = matches!(needle.chars().next(), Some('/' | '~' | '.'))
            || before.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
        let close = needle.ends_with('/')
            || after.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '@')));
        if open && close && !heads.iter().any(|(a, b)| at >= *a && end <= *b) {
            return true;
        }
        from = at + needle.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Runs of spaces and tabs as one space.
fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

/// The byte ranges of each command's program and subcommands in a call's text (commands are
/// separated by new lines, `;`, `|`, `&` and brackets).
fn head_ranges(hay: &str) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut start = 0;
    for (i, c) in hay.char_indices().chain(std::iter::once((hay.len(), '\n'))) {
        if matches!(c, '\n' | ';' | '|' | '&' | '(' | ')') {
            let seg = &hay[start..i];
            let words: Vec<(usize, &str)> = seg
                .split(' ')
                .scan(0usize, |pos, w| {
                    let at = *pos;
                    *pos += w.len() + 1;
                    Some((at, w))
                })
                .filter(|(_, w)| !w.is_empty())
                .collect();
            let plain: Vec<&str> = words.iter().map(|(_, w)| *w).collect();
            let (skip, n) = head_len(&plain);
            if n > 0 {
                let (a, _) = words[skip];
                let (b, last) = words[skip + n - 1];
                out.push((start + a, start + b + last.len()));
            }
            start = i + c.len_utf8();
        }
    }
    out
}

/// The error texts a note names: quoted messages, code spans that read as an error, error
/// codes (`ENOENT`, `ERR_PNPM_OUTDATED_LOCKFILE`, `E0502`, `TS2307`, `SQLITE_BUSY`) and
/// exception or failure names (`ModuleNotFoundError`, `CrashLoopBackOff`, `OOMKilled`).
pub fn error_texts(note: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for (open, close) in [('"', '"'), ('\u{201c}', '\u{201d}')] {
        let mut rest = note;
        while let Some(a) = rest.find(open) {
            let after = &rest[a + open.len_utf8()..];
            let Some(b) = after.find(close) else { break };
            let q = after[..b].trim();
            if (6..=200).contains(&q.chars().count()) {
                push(q);
            }
            rest = &after[b + close.len_utf8()..];
        }
    }
    let lower_note = note.to_lowercase();
    for span in code_spans(note) {
        let lower = span.to_lowercase();
        let marked = super::calls::ERROR_MARKS.iter().any(|m| lower.contains(m));
        if span.chars().count() >= 6 && (marked || failure_object(&lower_note, &lower)) {
            push(&span);
        }
    }
    for w in note.split_whitespace() {
        let w = w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        let w = w.rsplit('.').next().unwrap_or(w);
        if is_error_code(w) || is_failure_name(w) {
            push(w);
        }
    }
    out
}

/// Verbs of failing that a message follows with `with` ("fails with `…`").
const FAILING: &[&str] = &[
    "fail", "fails", "failed", "failing", "die", "dies", "died", "crash", "crashes", "crashed", "abort", "aborts",
    "aborted", "error", "errors", "errored", "exit", "exits", "exited", "stop", "stops", "stopped", "reject",
    "rejects", "rejected", "refuse", "refuses", "refused",
];

/// Whether the code span `span` (lower-cased) is what a failure comes with in `lower` (the
/// note, lower-cased): right after "fails with" (or another of [`FAILING`]), a message of
/// several words that is no flag (`` or it fails with `NOAUTH Authentication required` ``).
fn failure_object(lower: &str, span: &str) -> bool {
    if !span.contains(' ') || span.starts_with(['-', '$']) {
        return false;
    }
    let Some(at) = lower.find(&format!("`{span}`")) else { return false };
    let mut words = lower[..at].split_whitespace().rev();
    words.next() == Some("with")
        && words.next().is_some_and(|w| FAILING.contains(&w.trim_matches(|c: char| !c.is_alphanumeric())))
}

/// `ENOENT`, `ERR_REQUIRE_ESM`, `E0502`, `TS2307`, `SQLITE_BUSY`.
fn is_error_code(w: &str) -> bool {
    const WORDS: &[&str] =
        &["ERROR", "EVERY", "EACH", "ELSE", "EXIT", "EVEN", "EMPTY", "ENABLE", "END", "ENTER", "EXACT"];
    let caps = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase());
    let digits = |s: &str| s.len() >= 3 && s.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = w.strip_prefix('E') {
        if (rest.len() >= 3 && caps(rest) && !WORDS.contains(&w)) || (digits(rest) && rest.len() <= 5) {
            return true;
        }
    }
    if let Some(rest) = w.strip_prefix("TS") {
        if digits(rest) {
            return true;
        }
    }
    let constant = w.contains('_') && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    constant
        && ["ERR", "BUSY", "LOCKED", "FAIL", "DENIED", "INVALID", "TIMEOUT", "NOT_FOUND", "CONFLICT"]
            .iter()
            .any(|m| w.contains(m))
}

/// `TypeError`, `ModuleNotFoundError`, `NullPointerException`, `CrashLoopBackOff`, `OOMKilled`.
fn is_failure_name(w: &str) -> bool {
    const ENDS: &[&str] = &["Error", "Exception", "BackOff", "Killed", "Failure", "Fault", "Timeout"];
    w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && w.chars().all(|c| c.is_ascii_alphanumeric())
        && ENDS.iter().any(|e| w.len() > e.len() && w.ends_with(e))
}

/// Whether a failed call's errors carry an error text: a message as a substring (case, quotes
/// and runs of spaces aside: psql's `FATAL:  no pg_hba.conf entry`, ld's
/// ``undefined reference to `SSL_CTX_new'``),
/// a code or name as a whole word.
fn mentions(errors: &str, e: &str) -> bool {
    let plain = |s: &str| collapse(&s.to_lowercase().replace(['`', '\'', '"', '\u{2018}', '\u{2019}'], ""));
    let (hay, needle) = (plain(errors), plain(e));
    if e.contains(' ') {
        return hay.contains(&needle);
    }
    let mut from = 0;
    while let Some(i) = hay[from..].find(&needle) {
        let at = from + i;
        let end = at + needle.len();
        let before = hay[..at].chars().next_back();
        let after = hay[end..].chars().next();
        let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if word(before) && word(after) {
            return true;
        }
        from = end;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (what it shows, note, calls before the load, calls after it as (args, errors), used at,
    /// ignored)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a [(&'a str, &'a str)], Option<usize>, bool);

    /// A note decays when it names specifics, was shown in `after` sessions or more and never
    /// used, and no pin or person keeps it.
    #[test]
    fn decay_table() {
        let ev = |shown, used, vouched, used_elsewhere| Evidence {
            shown,
            used,
            vouched,
            used_elsewhere,
            ..Default::default()
        };
        let flag = "aws s3 sync skips same-size files; pass `--exact-timestamps`.";
        let prose = "Ask before deleting anything in the shared bucket.";
        // (evidence, pinned, delta, after, decays)
        let cases = [
            (ev(6, 0, false, 0), false, flag, 6, true),
            (ev(9, 0, false, 0), false, flag, 6, true),
            (ev(5, 0, false, 0), false, flag, 6, false),
            (ev(6, 1, false, 0), false, flag, 6, false),
            (ev(6, 0, true, 0), false, flag, 6, false),
            (ev(6, 0, false, 0), true, flag, 6, false),
            (ev(6, 0, false, 0), false, prose, 6, false),
            (ev(6, 0, false, 0), false, flag, 0, false),
            (ev(2, 0, false, 0), false, flag, 2, true),
            (Evidence { shown: 6, ignored: 1, ..Default::default() }, false, flag, 6, false),
        ];
        for (e, pinned, delta, after, want) in cases {
            let got = decay_reason(&e, pinned, delta, after);
            assert_eq!(got.is_some(), want, "{e:?} pinned {pinned} {delta:?} after {after}");
            if let Some(r) = got {
                assert_eq!(r, format!("unused: shown in {} sessions, never used", e.shown));
            }
        }
    }

    /// The smoothed use rate and trust of a note's counts.
    #[test]
    fn uses_table() {
        // (shown, used, ignored, vouched, used elsewhere) → (rate, trusted)
        for (e, rate, trusted) in [
            ((0, 0, 0, false, 0), 0.5, false),
            ((6, 0, 0, false, 0), 0.125, false),
            ((3, 3, 0, false, 0), 0.8, false),
            ((3, 3, 0, false, 1), 0.8, true),
            ((2, 0, 2, false, 0), 1.0 / 6.0, false),
            ((0, 0, 0, true, 0), 0.5, true),
        ] {
            let ev = Evidence {
                shown: e.0,
                used: e.1,
                ignored: e.2,
                vouched: e.3,
                used_elsewhere: e.4,
                ..Default::default()
            };
            let u = Uses::of(&ev);
            assert!((u.rate() - rate).abs() < 1e-6, "{e:?}: {}", u.rate());
            assert_eq!(u.trusted, trusted, "{e:?}");
            assert_eq!(ev.with_trust().trust == Trust::Trusted, trusted, "{e:?}");
        }
        // A never-used note shown in many sessions ranks below one used in several.
        let never = Uses { shown: 10, ..Default::default() };
        let used = Uses { shown: 4, used: 3, ..Default::default() };
        assert!(used.rate() > never.rate());
        // An older export that says trusted without why keeps it as a person's act.
        let e = Evidence { trust: Trust::Trusted, ..Default::default() }.carried();
        assert!(e.vouched && e.trust == Trust::Trusted);
        let e = Evidence { trust: Trust::Unverified, ..Default::default() }.carried();
        assert!(!e.vouched && e.trust == Trust::Unverified);
    }

    #[test]
    fn judge_table() {
        let cases: &[Case] = &[
            (
                "aws: the flag the note adds is a use",
                "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.",
                &["ls dist"],
                &[("aws s3 sync dist s3://site --exact-timestamps", "")],
                Some(0),
                false,
            ),
            (
                "aws: the bare program is not",
                "aws s3 sync skips files whose size did not change; pass `--exact-timestamps` after a rebuild.",
                &[],
                &[("aws s3 sync dist s3://site", ""), ("aws s3 ls s3://site", "")],
                None,
                false,
            ),
            (
                "aws: a command span's program is not a use either",
                "Use `aws s3 sync --exact-timestamps` for rebuilt sites.",
                &[],
                &[("aws s3 sync dist s3://site --delete", "")],
                None,
                false,
            ),
            (
                "aws: the span's flag is",
                "Use `aws s3 sync --exact-timestamps` for rebuilt sites.",
                &[],
                &[("aws s3 ls", ""), ("aws s3 sync dist s3://site --exact-timestamps --delete", "")],
                Some(1),
                false,
            ),
            (
                "npm: the flag was there before the load",
                "Run `npm ci --legacy-peer-deps`: the lockfile has peer conflicts.",
                &["npm ci --legacy-peer-deps"],
                &[("npm ci --legacy-peer-deps", "")],
                None,
                false,
            ),
            (
                "npm: the named error came back, the note unapplied",
                "npm ci fails with ERESOLVE on the peer deps; run `npm ci --legacy-peer-deps`.",
                &[],
                &[("npm ci", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree")],
                None,
                true,
            ),
            (
                "npm: the error, then the note applied",
                "npm ci fails with ERESOLVE on the peer deps; run `npm ci --legacy-peer-deps`.",
                &[],
                &[("npm ci", "npm ERR! code ERESOLVE"), ("npm ci --legacy-peer-deps", "")],
                Some(1),
                true,
            ),
            (
                "pnpm: an error code outside a failure is no ignore",
                "In CI pnpm stops with ERR_PNPM_OUTDATED_LOCKFILE; use `pnpm install --no-frozen-lockfile` locally.",
                &["git status"],
                &[("pnpm install --no-frozen-lockfile", "")],
                Some(0),
                false,
            ),
            (
                "docker: a step the note adds",
                "After changing the Dockerfile run `docker compose build api` before `docker compose up`.",
                &["docker compose up"],
                &[("docker compose build api", "")],
                Some(0),
                false,
            ),
            (
                "docker: the step already run before the load",
                "After changing the Dockerfile run `docker compose build api` before `docker compose up`.",
                &["docker compose build api && docker compose up"],
                &[("docker compose build api", "")],
                None,
                false,
            ),
            (
                "git: a flag, case kept",
                "Push release branches with `git push --force-with-lease`, never --force.",
                &["git fetch origin"],
                &[("git push --force-with-lease origin release", "")],
                Some(0),
                false,
            ),
            (
                "git: what the note forbids is no use",
                "Never pass --no-verify to git commit here: the hooks build the schemas.",
                &[],
                &[("git commit --no-verify -m wip", "")],
                None,
                false,
            ),
            (
                "kubectl: a resource path and the failure it names",
                "If the api pod is in CrashLoopBackOff, check `kubectl logs deploy/api --previous`.",
                &["kubectl get pods"],
                &[("kubectl get pods", "api-7f9 0/1 CrashLoopBackOff 4 2m")],
                None,
                true,
            ),
            (
                "kubectl: used",
                "If the api pod is in CrashLoopBackOff, check `kubectl logs deploy/api --previous`.",
                &["kubectl get pods"],
                &[("kubectl logs deploy/api --previous", "")],
                Some(0),
                false,
            ),
            (
                "pytest: an env var and an exception",
                "Tests need PYTHONPATH=src or pytest stops with ModuleNotFoundError.",
                &["pytest -q"],
                &[("pytest -q", "E   ModuleNotFoundError: No module named 'app'"), ("PYTHONPATH=src pytest -q", "")],
                Some(1),
                true,
            ),
            (
                "pytest: the program only",
                "Run `pytest` from the repository root, not from tests/.",
                &[],
                &[("pytest -q", "")],
                None,
                false,
            ),
            (
                "cargo: a flag and a file name, in a read tool's args",
                "The schema test rewrites schemas with UPDATE_SCHEMAS=1; see tests/schemas.rs.",
                &["cargo test"],
                &[("/work/r/tests/schemas.rs\n200", "")],
                Some(0),
                false,
            ),
            (
                "cargo: a version is not part of a longer one",
                "Pin clap to 4.5 in Cargo.toml.",
                &["cat Cargo.toml"],
                &[("cargo add clap@4.5.1", ""), ("cargo add clap@4.5", "")],
                Some(1),
                false,
            ),
            (
                "a quoted message comes back",
                "\"database is locked\" means another sidecar holds the write lock; wait and retry.",
                &[],
                &[("sqlite3 x.db 'insert ...'", "Error: database is locked")],
                None,
                true,
            ),
            (
                "a clause's subject that does harm is what the note warns about",
                "Skip the slow integration tests with `-DskipITs`; `-DskipTests` skips the unit tests as well.",
                &[],
                &[("mvn -q verify -DskipTests", ""), ("mvn -q verify -DskipITs", "")],
                Some(1),
                false,
            ),
            (
                "a plain command that does harm",
                "Use `uv sync --frozen` in CI; plain `uv sync` rewrites uv.lock.",
                &[],
                &[("uv sync", "")],
                None,
                false,
            ),
            (
                "a subject said to be against policy",
                "Calls to the internal API need `--cacert /etc/corp/ca.pem`; `-k` is against policy.",
                &[],
                &[
                    ("curl -k https://internal.api/health", ""),
                    ("curl --cacert /etc/corp/ca.pem https://internal.api", ""),
                ],
                Some(1),
                false,
            ),
            (
                "a command that needs a flag is where the flag goes, not a step",
                "`aws s3 sync` of the static site needs `--exact-timestamps`; size-only misses edits.",
                &[],
                &[("aws s3 sync dist/ s3://site --delete", "")],
                None,
                false,
            ),
            (
                "a command that does something good is still a step",
                "`pdftotext -layout` keeps the two columns apart.",
                &[],
                &[("pdftotext -layout report.pdf -", "")],
                Some(0),
                false,
            ),
            (
                "a version that breaks is no use of the pin",
                "Pin yamlparse to 0.8; 0.9 breaks the loader.",
                &["pip list"],
                &[("pip install yamlparse==0.9", ""), ("pip install yamlparse==0.8", "")],
                Some(1),
                false,
            ),
            (
                "a message a failure comes with, and runs of spaces",
                "psql against the replica needs `sslmode=require`, or it fails with `FATAL: no pg_hba.conf entry`.",
                &[],
                &[
                    ("psql postgres://ro@replica/app", "FATAL:  no pg_hba.conf entry for host"),
                    ("psql 'postgres://ro@replica/app?sslmode=require'", ""),
                ],
                Some(1),
                true,
            ),
            (
                "a message the tool quotes otherwise",
                "The musl build fails with `undefined reference to SSL_CTX_new` without the feature.",
                &[],
                &[("cargo build --release", "  = note: /usr/bin/ld: undefined reference to `SSL_CTX_new'")],
                None,
                true,
            ),
            (
                "a message without an error word, after fails with",
                "Connect with `--user app`, or commands fail with `NOAUTH Authentication required`.",
                &[],
                &[("redis-cli info", "NOAUTH Authentication required.")],
                None,
                true,
            ),
            ("no calls after the load", "Pass `--exact-timestamps`.", &[], &[], None, false),
            (
                "a note without specifics is never used",
                "Be careful with the sync.",
                &[],
                &[("aws s3 sync a b", "")],
                None,
                false,
            ),
        ];
        for (what, note, before, after, used, ignored) in cases {
            let before: Vec<Later> = before.iter().map(|args| Later { args, ..Default::default() }).collect();
            let later: Vec<Later> =
                after.iter().map(|(args, errors)| Later { args, errors, read_only: false }).collect();
            let v = judge(note, &before, &later);
            assert_eq!(
                v,
                Verdict { used: *used, ignored: *ignored },
                "{what}: {note:?} specifics {:?}",
                specifics(note)
            );
        }
    }

    /// A call that only reads applies nothing, unless the note says to look at what it names;
    /// nor does a read before the load make a specific old.
    #[test]
    fn reads_table() {
        let read = |args| Later { args, errors: "", read_only: true };
        let run = |args| Later { args, errors: "", read_only: false };
        let strip = "Set `strip = true` under `[profile.release]` in Cargo.toml to shrink the binary.";
        let see = "The schema test rewrites schemas with UPDATE_SCHEMAS=1; see tests/schemas.rs.";
        // (what, note, before, after, used at)
        type ReadCase<'a> = (&'a str, &'a str, Vec<Later<'a>>, Vec<Later<'a>>, Option<usize>);
        let cases: &[ReadCase] = &[
            ("a file the note names only read", strip, vec![], vec![read("/w/Cargo.toml")], None),
            (
                "the file then edited",
                strip,
                vec![],
                vec![read("/w/Cargo.toml"), run("/w/Cargo.toml\nstrip = true")],
                Some(1),
            ),
            (
                "read before the load, edited after",
                strip,
                vec![read("/w/Cargo.toml")],
                vec![run("/w/Cargo.toml")],
                Some(0),
            ),
            ("a file the note says to see, read", see, vec![], vec![read("/w/tests/schemas.rs")], Some(0)),
            ("a shell read is a call like any other", strip, vec![], vec![run("cat Cargo.toml")], Some(0)),
        ];
        for (what, note, before, after, used) in cases {
            assert_eq!(judge(note, before, after).used, *used, "{what}: {:?}", specifics(note));
        }
        assert!(calls_reads_only("Read") && calls_reads_only("read_file") && calls_reads_only("view"));
        assert!(!calls_reads_only("Bash") && !calls_reads_only("edit") && !calls_reads_only("write"));
    }

    fn calls_reads_only(tool: &str) -> bool {
        super::super::calls::reads_only(tool)
    }

    #[test]
    fn specifics_table() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            ("Use `aws s3 sync --exact-timestamps`.", &[("--exact-timestamps", false)]),
            ("Run `npx prisma generate` first.", &[("npx prisma generate", true)]),
            ("Run `pytest` from the root.", &[]),
            ("`kubectl rollout status` hangs when paused; add `--timeout=120s`.", &[("--timeout=120s", false)]),
            (
                "`go mod tidy` drops the imports unless tools.go has `//go:build tools`.",
                &[("tools.go", false), ("//go:build", false)],
            ),
            (
                "Free disk with `docker builder prune`; `docker system prune -a` also deletes the base images.",
                &[("docker builder prune", true)],
            ),
            ("`aws s3 sync` needs `--exact-timestamps`.", &[("--exact-timestamps", false)]),
            ("Set RUST_LOG=debug to see frames.", &[("rust_log=debug", false)]),
            (
                "Use node --max-old-space-size=4096.",
                &[("--max-old-space-size=4096", false), ("--max-old-space-size", false)],
            ),
            ("Pin serde_yaml to 0.8 in Cargo.toml.", &[("serde_yaml", false), ("0.8", false), ("cargo.toml", false)]),
            ("Wait 30 seconds.", &[]),
            // "without" bears on what follows it; other negations on the specific.
            ("jq -r prints strings without their quotes; use it for shell loops.", &[("-r", false)]),
            ("Never pass --no-verify when pushing release tags.", &[]),
            ("Do not run it without --dry-run first.", &[("--dry-run", false)]),
            ("Run the build without --watch in CI.", &[]),
            ("Pass values with `jq --arg`, never by splicing them into the filter.", &[("--arg", false)]),
            ("Never apply to prod by accident: pass `--context staging` on every apply.", &[("--context", false)]),
            ("Don't use `--force` on the shared branch.", &[]),
            ("Run `npm run prebuild` before `npm run build`.", &[("npm run prebuild", true)]),
            ("After pulling, run `npm ci` again.", &[("npm ci", true)]),
            (
                "Raise the heap with NODE_OPTIONS=--max-old-space-size=6144.",
                &[("node_options=--max-old-space-size=6144", false), ("--max-old-space-size", false)],
            ),
        ];
        for (note, want) in cases {
            let got: Vec<(String, bool)> = specifics(note).into_iter().map(|s| (s.text, s.step)).collect();
            let want: Vec<(String, bool)> = want.iter().map(|(t, s)| (t.to_string(), *s)).collect();
            assert_eq!(got, want, "{note:?}");
        }
    }

    #[test]
    fn error_texts_table() {
        let cases: &[(&str, &[&str])] = &[
            ("npm ci fails with ERESOLVE.", &["ERESOLVE"]),
            ("\"database is locked\": retry.", &["database is locked"]),
            ("java.lang.NullPointerException on start", &["NullPointerException"]),
            ("rustc says E0502 here; TS2307 in the web part", &["E0502", "TS2307"]),
            ("`EACCES: permission denied` on ~/.npm", &["EACCES: permission denied", "EACCES"]),
            ("EVERY run is slow; ERROR is a word", &[]),
            (
                "The musl build fails with `undefined reference to SSL_CTX_new` without the feature.",
                &["undefined reference to SSL_CTX_new"],
            ),
            ("It dies with `exec format error` on arm.", &["exec format error"]),
            // A flag after "fails with" is the call that fails, not its message.
            ("pnpm install fails with `--frozen-lockfile` in CI.", &[]),
        ];
        for (note, want) in cases {
            assert_eq!(error_texts(note), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{note:?}");
        }
    }
}
