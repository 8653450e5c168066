//! The error texts a note names, and whether a failed call's errors mention one: what makes a
//! shown note **ignored** (the module docs of [`super`]).

use super::specifics::{code_spans, collapse};

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
        let marked = crate::memory::calls::ERROR_MARKS.iter().any(|m| lower.contains(m));
        if span.chars().count() >= 6 && (marked || failure_object(&lower_note, &lower)) {
            push(&span);
        } else if is_camel_code(&span) && follows_failing(&lower_note, &lower) {
            // A service's error code, one CamelCase word, is what the call fails with
            // (S3's `PermanentRedirect`, `NoSuchBucket`, `AccessDenied`).
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
    follows_failing(lower, span)
}

/// Whether `` `span` `` (lower-cased) comes right after "fails with" (or another of
/// [`FAILING`]) in `lower`.
fn follows_failing(lower: &str, span: &str) -> bool {
    let Some(at) = lower.find(&format!("`{span}`")) else { return false };
    let mut words = lower[..at].split_whitespace().rev();
    words.next() == Some("with")
        && words.next().is_some_and(|w| FAILING.contains(&w.trim_matches(|c: char| !c.is_alphanumeric())))
}

/// One CamelCase word of two parts at least (`PermanentRedirect`, `NoSuchKey`), no flag, path
/// or command.
fn is_camel_code(w: &str) -> bool {
    w.len() >= 6
        && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && w.chars().all(|c| c.is_ascii_alphanumeric())
        && w.chars().skip(1).any(|c| c.is_ascii_uppercase())
        && w.chars().any(|c| c.is_ascii_lowercase())
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
pub(super) fn mentions(errors: &str, e: &str) -> bool {
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
            // A service's error code after "fails with", one CamelCase word.
            ("`s3cmd sync` fails with `PermanentRedirect`; pass `--region=eu-central-1`.", &["PermanentRedirect"]),
            ("`aws s3 cp` errors with `NoSuchBucket` when the name has a typo.", &["NoSuchBucket"]),
            // Not after a failing verb: a name the note uses, not an error.
            ("Use `PermanentRedirect` handling from the SDK.", &[]),
            // A flag after "fails with" is the call that fails, not its message.
            ("pnpm install fails with `--frozen-lockfile` in CI.", &[]),
        ];
        for (note, want) in cases {
            assert_eq!(error_texts(note), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{note:?}");
        }
    }
}
