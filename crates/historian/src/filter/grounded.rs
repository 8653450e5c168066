//! Rule 11, grounding: a summariser's lesson that names specifics (a flag, a command or code
//! span, a path, a version, an identifier, an error's text) must name at least one that the
//! session's transcript chunks show. A lesson whose every specific is absent from what the
//! session did is an invention, however plausible its words; one with no specifics is left
//! to the other rules. When no chunk of the session is known, the rule does not apply.
//!
//! Also finds the **evidence** of a grounded lesson: the chunk's line that holds an error the
//! lesson names (a quoted message, an error code, an exception name).
//!
//! Pure text: the engine keeps the chunks' text per session and hands it in
//! ([`super::Context::chunk_text`]); nothing here reads a file or a store.

use crate::memory::sameness;

/// The chunks' text as the rule searches it: lower case, each line's whitespace collapsed,
/// blank lines dropped.
pub fn searchable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut words = line.split_whitespace().peekable();
        if words.peek().is_none() {
            continue;
        }
        for (i, w) in words.enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&w.to_lowercase());
        }
        out.push('\n');
    }
    out
}

/// Words that mark a line of a transcript as an error's (the rendered chunks mark a failed
/// tool's output `E:`).
const ERROR_MARKS: &[&str] =
    &["error", "err!", "fatal", "exception", "failed", "denied", "not found", "cannot", "refused", "panicked"];

/// The words of a text, for matching runs of them.
fn word_list(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The first line of `chunks` that marks an error and shares a run of three words with
/// `lesson`: the error the lesson names in its own words ("when jq says Cannot iterate over
/// null").
fn named_error_line<'a>(lesson: &str, chunks: &'a str) -> Option<&'a str> {
    let mine = word_list(lesson);
    if mine.len() < 3 {
        return None;
    }
    let runs: std::collections::HashSet<&[String]> = mine.windows(3).collect();
    chunks.lines().find(|line| {
        let l = line.to_lowercase();
        (l.starts_with("e:") || ERROR_MARKS.iter().any(|m| l.contains(m)))
            && word_list(line).windows(3).any(|w| runs.contains(w))
    })
}

/// The specifics of `lesson` that grounding looks for, as written: the merge rule's specifics
/// (code spans, flags, paths, identifiers, versions; not bare counts and not two- or
/// three-letter acronyms, which any transcript holds) and quoted messages.
pub fn specifics(lesson: &str) -> Vec<String> {
    let mut out: Vec<String> = sameness::signature(lesson)
        .specifics
        .into_iter()
        .filter(|s| {
            let bare_number = s.chars().all(|c| c.is_ascii_digit());
            let short_word = s.len() <= 3 && s.chars().all(|c| c.is_ascii_alphabetic());
            !bare_number && !short_word
        })
        .collect();
    for q in quoted(lesson) {
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
}

/// Double-quoted passages of six characters or more: messages quoted from a tool's output.
fn quoted(lesson: &str) -> Vec<String> {
    let mut out = vec![];
    let normal = lesson.replace(['\u{201c}', '\u{201d}'], "\"");
    let parts: Vec<&str> = normal.split('"').collect();
    // Odd parts are inside quotes, when the quote is closed.
    for (i, p) in parts.iter().enumerate() {
        if i % 2 == 1 && i + 1 < parts.len() && p.trim().chars().count() >= 6 {
            out.push(p.trim().to_string());
        }
    }
    out
}

/// Whether `chunks` (from [`searchable`]) shows `specific`: each of its words (punctuation
/// around them trimmed, a leading `~` or `./` dropped) appears in the text. Placeholders
/// (`<name>`, `{id}`, `...`) stand for whatever the session used and are not looked for.
pub fn seen(specific: &str, chunks: &str) -> bool {
    let words: Vec<String> = specific
        .split_whitespace()
        .filter(|w| !(w.contains(['<', '>', '{', '}']) || w.contains("...") || w.contains('…')))
        .map(|w| {
            let w = w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | ';' | '.' | ':' | '(' | ')'));
            let w = w.trim_start_matches('~').trim_start_matches("./");
            w.to_lowercase()
        })
        .filter(|w| w.chars().count() >= 2)
        .collect();
    !words.is_empty() && words.iter().all(|w| chunks.contains(w.as_str()))
}

/// What grounding found of a lesson in the session's chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grounding {
    /// The lesson names nothing grounding can look for.
    NoSpecifics,
    /// At least one of its specifics is in the chunks.
    Grounded,
    /// None of them is: the specifics it names.
    Ungrounded(Vec<String>),
}

/// Judges `lesson` against `chunks` (from [`searchable`]).
pub fn ground(lesson: &str, chunks: &str) -> Grounding {
    let specifics = specifics(lesson);
    if specifics.is_empty() {
        return Grounding::NoSpecifics;
    }
    if specifics.iter().any(|s| seen(s, chunks)) || named_error_line(lesson, chunks).is_some() {
        Grounding::Grounded
    } else {
        Grounding::Ungrounded(specifics)
    }
}

/// The error a lesson names, as the chunks show it: the first line of `text` (the chunks as
/// sent) that holds a quoted message, an error code (`EACCES`, `SQLITE_BUSY`, `E0502`) or an
/// exception name (`ModuleNotFoundError`) the lesson names. At most 300 characters.
pub fn evidence(lesson: &str, text: &str) -> Option<String> {
    let mut errors = quoted(lesson);
    for w in lesson.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if is_error_name(w) && !errors.iter().any(|e| e == w) {
            errors.push(w.to_string());
        }
    }
    let wanted: Vec<String> = errors.iter().map(|e| searchable(e).trim().to_string()).collect();
    let line = text
        .lines()
        .find(|line| {
            let l = searchable(line);
            wanted.iter().any(|e| !e.is_empty() && l.contains(e.as_str()))
        })
        .or_else(|| named_error_line(lesson, text))?;
    let line = line.trim();
    Some(if line.chars().count() > 300 { line.chars().take(300).collect::<String>() + "…" } else { line.to_string() })
}

/// An error code or exception name: `EACCES`, `ENOENT`, `SQLITE_BUSY`, `E0502`, `TS2307`,
/// `ModuleNotFoundError`, `NullPointerException`.
fn is_error_name(w: &str) -> bool {
    let upper = w.len() >= 4 && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let code = upper
        && ((w.starts_with('E') && w[1..].chars().all(|c| c.is_ascii_uppercase()) && w.len() >= 5)
            || w.contains('_')
            || (w.chars().any(|c| c.is_ascii_digit()) && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())));
    let exception = (w.ends_with("Error") || w.ends_with("Exception"))
        && w.len() > 8
        && w.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    code || exception
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: &str = "TC: skill(npm)\n$ npm install -g typescript\nnpm ERR! code EACCES\nnpm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'\n$ npm config set prefix ~/.npm-global\n$ npm install -g typescript\nadded 1 package in 2s\n";

    #[test]
    fn ground_table() {
        let chunks = searchable(CHUNK);
        // (lesson, grounded?) — None: no specifics to look for.
        let cases: &[(&str, Option<bool>)] = &[
            ("`npm install -g` fails with EACCES; set `npm config set prefix ~/.npm-global` first.", Some(true)),
            ("A global install needs the prefix moved to ~/.npm-global.", Some(true)),
            ("Pass `--unsafe-perm` to `npm rebuild` when node-gyp fails as root.", Some(false)),
            ("Use `corepack enable` before `pnpm install` on Node 20.", Some(false)),
            ("Global installs fail when the prefix belongs to root; move the prefix.", None),
            ("Set NPM_CONFIG_CACHE=/tmp/cache in CI.", Some(false)),
            ("\"permission denied, mkdir\" means the prefix is not writable.", Some(true)),
            ("\"cannot find module typescript\" means the install did not finish.", Some(false)),
            // Bare counts and short acronyms are not specifics to look for.
            ("In CI, retry 3 times.", None),
            // A placeholder is not looked for; the rest of the span is.
            ("Run `npm install -g <package>` after moving the prefix.", Some(true)),
            ("Run `npm audit fix <package>` after moving the prefix.", Some(false)),
            // An error named in the lesson's own words, as the chunk shows it.
            (
                "When the install says permission denied, mkdir under the prefix, move `prefix` to a home folder.",
                Some(true),
            ),
            ("When `tsc` says cannot find module, add `@types/node`.", Some(false)),
        ];
        for (lesson, want) in cases {
            let got = match ground(lesson, &chunks) {
                Grounding::NoSpecifics => None,
                Grounding::Grounded => Some(true),
                Grounding::Ungrounded(_) => Some(false),
            };
            assert_eq!(got, *want, "{lesson:?}: specifics {:?}", specifics(lesson));
        }
    }

    #[test]
    fn evidence_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("`npm install -g` fails with EACCES; move the prefix.", Some("npm ERR! code EACCES")),
            (
                "\"permission denied, mkdir\" means the prefix is not writable.",
                Some("npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'"),
            ),
            ("Move the npm prefix to ~/.npm-global.", None),
            ("ENOENT means the folder is missing.", None),
            (
                "When npm says permission denied, mkdir for a global install, move the prefix.",
                Some("npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/typescript'"),
            ),
        ];
        for (lesson, want) in cases {
            assert_eq!(evidence(lesson, CHUNK).as_deref(), *want, "{lesson:?}");
        }
    }

    #[test]
    fn error_names() {
        for (w, want) in [
            ("EACCES", true),
            ("ENOENT", true),
            ("SQLITE_BUSY", true),
            ("E0502", true),
            ("TS2307", true),
            ("ModuleNotFoundError", true),
            ("NullPointerException", true),
            ("Error", false),
            ("JSON", false),
            ("HTTP", false),
            ("EOF", false),
        ] {
            assert_eq!(is_error_name(w), want, "{w}");
        }
    }
}
