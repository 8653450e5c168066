//! What a note adds, as a call would carry it: its specifics, and which of them are a step,
//! what to look at, or what the note warns about (the module docs of [`super`]).

use super::errors::error_texts;
use crate::memory::sameness;

/// One thing a note adds, as a call would carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specific {
    pub text: String,
    /// A command the note adds as a step: found where a program's name stands, too.
    pub step: bool,
    /// The note says to look at it (`see`, `read`, `check`, `open` right before it): reading
    /// it is applying the note.
    pub look: bool,
    /// The program of the note's command it comes from (`` `nl -ba file` ``: `-ba` of `nl`),
    /// by [`program_name`]: only a call of that program carries it. None for what the note's
    /// prose names, a step and a single word.
    pub program: Option<String>,
}

/// What a note adds (see the module docs), each once.
pub fn specifics(note: &str) -> Vec<Specific> {
    let sig = sameness::signature(note);
    let spans = code_spans(note);
    let errors: Vec<String> = error_texts(note).iter().map(|e| collapse(&e.to_lowercase())).collect();
    // The error texts that are no command (`` read the crash with `kubectl logs …` `` reads as
    // what a failure comes with): what their words say failed.
    let messages: Vec<&String> = errors
        .iter()
        .filter(|e| !spans.iter().any(|s| collapse(&s.to_lowercase()) == **e && span_program(s).is_some()))
        .collect();
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
    let mut push = |text: &str, step: bool, look: bool, program: Option<String>| {
        let text = text.trim();
        let plain_number = text.chars().all(|c| c.is_ascii_digit()) && text.len() <= 2;
        // What an error the note names says is what failed, not what the note adds (`NameError:
        // name 'old_index_name' is not defined`: no `old_index_name`).
        let lower = collapse(&text.to_lowercase());
        if text.chars().count() < 2
            || plain_number
            || errors.contains(&lower)
            || messages.iter().any(|e| contains_word(e, &lower))
        {
            return;
        }
        if !out.iter().any(|s| s.text == text) {
            out.push(Specific { text: text.to_string(), step, look, program });
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
            let program = span_program(s);
            // What runs the program is no addition (`-m` of `python3 -m pytest`).
            let words: Vec<&str> = s.split_whitespace().collect();
            let runner: Vec<&str> = match program_of(&words) {
                Some((_, at)) if program.is_some() => {
                    words[..at.saturating_sub(1)].iter().copied().filter(|w| !is_assignment(w)).collect()
                }
                _ => vec![],
            };
            let adds: Vec<(String, bool)> =
                span_specifics(s).into_iter().filter(|(text, _)| !runner.contains(&text.as_str())).collect();
            if adds.is_empty() && !runner.is_empty() && !anchor {
                // Only what runs the program: the whole command is the step (`python -m build`).
                push(s, true, look, None);
            }
            // What a reading command reads is where it looks, not what the note adds (its
            // flags still are), unless the note says to look there ("check `tail -n 50 x.log`").
            // Only a plain read: `cat > ~/.pypirc` writes the file, and a pipeline
            // (`grep -l x -r src | xargs sed -i …`) goes on to change what it found.
            let reader = program.as_deref().is_some_and(reads_files) && !s.contains(['>', '|']);
            for (text, step) in adds {
                if reader && !step && !look && !text.starts_with('-') {
                    continue;
                }
                if !(step && anchor) {
                    push(&text, step, look, if step { None } else { program.clone() });
                }
            }
        } else {
            push(s, false, look, None);
            // `--max-old-space-size=4096`, or `NODE_OPTIONS=--max-old-space-size=6144`: the
            // flag with another value is the note applied too.
            let flag = s.find("=-").map_or(s.as_str(), |i| &s[i + 1..]);
            if let Some((name, _)) = flag.split_once('=').filter(|(n, _)| n.starts_with('-') && n.len() > 2) {
                push(name, false, look, None);
            }
        }
    }
    let shared = shared_targets(&spans);
    out.retain(|s| !shared.contains(&s.text));
    out
}

/// Programs that only read or list files: what a note's command of theirs names is where it
/// looks (`grep -n "def uniq" sympy/utilities/iterables.py`), a file the session's own task
/// leads any agent to, not something the note adds (`sed` and `awk` also write, so are not).
const FILE_READERS: &[&str] =
    &["cat", "nl", "head", "tail", "grep", "egrep", "fgrep", "rg", "less", "more", "ls", "find", "wc"];

/// Whether `program` ([`program_name`]) is one of [`FILE_READERS`].
fn reads_files(program: &str) -> bool {
    FILE_READERS.contains(&program)
}

/// Whether `word` stands in `text` as a whole word (both lower-cased).
fn contains_word(text: &str, word: &str) -> bool {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let end = at + word.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if edge(before) && edge(after) {
            return true;
        }
        from = at + word.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The program a code span runs, when it is a command of two words or more whose program is a
/// plain word (`` `python3 -m pytest -x` ``: `pytest`), by [`program_of`].
fn span_program(span: &str) -> Option<String> {
    let words: Vec<&str> = span.split_whitespace().collect();
    let (start, n) = head_len(&words);
    if n == 0 || words.len() < start + 2 || words.get(start + 1).is_some_and(|w| w.starts_with('=')) {
        return None;
    }
    program_of(&words).map(|(p, _)| p)
}

/// A program's name as calls of it are compared: without its folder, version digits and case
/// (`/usr/bin/python3.11`, `python3`, `python`: `python`; `pip3`: `pip`).
pub fn program_name(word: &str) -> String {
    let base = word.rsplit('/').next().unwrap_or(word);
    let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let name = if trimmed.is_empty() { base } else { trimmed };
    name.to_lowercase()
}

/// Words that run the command after them (`sudo`, `env`, `time`, …).
const PREFIXES: &[&str] = &["sudo", "env", "time", "nohup", "exec", "command", "xargs"];
/// Programs that run the program named after them (`npx prisma`, `uv run pytest`: `prisma`,
/// `pytest`), with the subcommand that does so, if any.
const RUNNERS: &[(&str, &str)] = &[
    ("npx", ""),
    ("bunx", ""),
    ("pnpx", ""),
    ("uvx", ""),
    ("uv", "run"),
    ("poetry", "run"),
    ("pipx", "run"),
    ("pdm", "run"),
    ("bundle", "exec"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "dlx"),
];

/// The program of a command's words and where its arguments start: after environment
/// assignments and [`PREFIXES`], the program a [`RUNNERS`] runs, a Python module run with
/// `-m` (`python3 -m pytest`: `pytest`), by [`program_name`].
fn program_of(words: &[&str]) -> Option<(String, usize)> {
    let mut i = 0;
    while i < words.len() && (is_assignment(words[i]) || PREFIXES.contains(&words[i])) {
        i += 1;
    }
    let mut program = program_name(words.get(i)?);
    i += 1;
    if program == "python" && words.get(i) == Some(&"-m") {
        if let Some(m) = words.get(i + 1) {
            program = program_name(m.split('.').next().unwrap_or(m));
            i += 2;
        }
    } else if let Some((_, sub)) = RUNNERS.iter().find(|(r, _)| *r == program) {
        let at = if sub.is_empty() { i } else { i + 1 };
        if (sub.is_empty() || words.get(i) == Some(sub)) && words.get(at).is_some_and(|w| !w.starts_with('-')) {
            program = program_name(words[at]);
            i = at + 1;
        }
    }
    Some((program, i))
}

/// Splits a call's text into its commands at new lines, `;`, `|`, `&` and brackets outside
/// quotes.
fn split_commands(call: &str) -> Vec<&str> {
    let mut out = vec![];
    let (mut start, mut quote) = (0, None::<char>);
    for (i, c) in call.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '\n' | ';' | '|' | '&' | '(' | ')') => {
                out.push(&call[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&call[start..]);
    out
}

/// The program of each command in a call's text ([`split_commands`], [`program_of`]), with
/// the command; a shell run with `-c` (`bash -lc '…'`) gives the commands of its script.
pub(super) fn commands(call: &str) -> Vec<(String, &str)> {
    let mut out = vec![];
    for seg in split_commands(call) {
        let words: Vec<&str> = seg.split_whitespace().collect();
        let Some((program, at)) = program_of(&words) else { continue };
        let shell = matches!(program.as_str(), "bash" | "sh" | "zsh" | "dash");
        if shell && words.get(at).is_some_and(|w| w.starts_with('-') && w.ends_with('c')) {
            let flag = words[at];
            if let Some(i) = seg.find(flag) {
                let script = seg[i + flag.len()..].trim().trim_matches(|c| c == '\'' || c == '"');
                out.extend(commands(script));
                continue;
            }
        }
        out.push((program, seg));
    }
    out
}

/// What two commands of one program in a note both name that is no flag: the target both
/// work on (`src/` in `` CI runs `mypy --strict src/`; a local `mypy src/` passes ``), which
/// the agent names whichever of them it runs. What the note adds is where the commands differ;
/// a flag both carry stays (`` `cargo build --release`, then `cargo test --release` ``).
fn shared_targets(spans: &[String]) -> Vec<String> {
    let commands: Vec<(&str, Vec<String>)> = spans
        .iter()
        .filter(|s| s.split_whitespace().count() >= 2)
        .map(|s| {
            let program = s.split_whitespace().next().unwrap_or_default();
            let targets = span_specifics(s)
                .into_iter()
                .filter(|(t, step)| !step && !t.starts_with('-') && !t.contains("=-") && t != program)
                .map(|(t, _)| t)
                .collect();
            (program, targets)
        })
        .collect();
    let mut shared: Vec<String> = vec![];
    for (i, (program, targets)) in commands.iter().enumerate() {
        for (other, theirs) in &commands[i + 1..] {
            if other == program {
                for t in targets.iter().filter(|t| theirs.contains(t)) {
                    if !shared.contains(t) {
                        shared.push(t.clone());
                    }
                }
            }
        }
    }
    shared
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
pub(super) fn code_spans(text: &str) -> Vec<String> {
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
    match &s.program {
        Some(p) => commands(call).into_iter().any(|(program, command)| &program == p && occurs_anywhere(command, s)),
        None => occurs_anywhere(call, s),
    }
}

/// [`occurs`] in any command of the call.
fn occurs_anywhere(call: &str, s: &Specific) -> bool {
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
pub(super) fn collapse(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            // Two commands of one program: the target both name is no addition, a shared flag is.
            (
                "CI runs `mypy --strict src/`; a local `mypy src/` passes code CI rejects.",
                &[("ci", false), ("--strict", false)],
            ),
            ("Run `cargo build --release`, then `cargo test --release`.", &[("--release", false)]),
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

    /// A specific of a note's command counts only in a call of that program; what the note's
    /// prose names, anywhere.
    #[test]
    fn program_table() {
        // (note, call, carries its first specific)
        let cases: &[(&str, &str, bool)] = &[
            ("Read the code with `nl -ba file.py`.", "nl -ba django/db/models.py", true),
            ("Read the code with `nl -ba file.py`.", "ls -ba", false),
            ("Read the code with `nl -ba file.py`.", "cd /testbed && nl -ba x.py | head", true),
            ("Run the suite with `pytest -n auto`.", "python -m pytest -n 4 tests/unit", true),
            ("Run the suite with `pytest -n auto`.", "grep -n auto setup.cfg", false),
            ("Run `python3 -m pytest -p no:cacheprovider`.", "pytest -p no:cacheprovider", true),
            ("Use `npx prisma migrate dev --name init`.", "prisma migrate dev --name x", true),
            ("Use `npx prisma migrate dev --name init`.", "git commit --name x", false),
            ("Sort with `jq 'sort_by(.amount)'`.", "jq '[.rows[]] | sort_by(.amount) | reverse' r.json", true),
            ("Sort with `jq 'sort_by(.amount)'`.", "echo 'sort_by(.amount)'", false),
            (
                "Read the logs with `kubectl logs deploy/api --previous`.",
                "/bin/bash -lc kubectl logs deploy/api --previous",
                true,
            ),
            (
                "Read the logs with `kubectl logs deploy/api --previous`.",
                "bash -c 'cd x && kubectl logs deploy/api --previous'",
                true,
            ),
            ("Use `python3 -X utf8 x.py`.", "/usr/bin/python -X utf8 y.py", true),
            ("Set PYTHONIOENCODING=utf-8 before the tests.", "export PYTHONIOENCODING=utf-8", true),
            ("Build wheels with `python -m build`.", "python -m build --wheel", true),
            ("Build wheels with `python -m build`.", "python3 -m pytest", false),
        ];
        for (note, call, want) in cases {
            let s = &specifics(note)[0];
            assert_eq!(occurs(call, s), *want, "{note:?} in {call:?}: {s:?}");
        }
        for (word, want) in [
            ("python3", "python"),
            ("/usr/bin/python3.11", "python"),
            ("pip3", "pip"),
            ("Make", "make"),
            ("2to3", "2to"),
        ] {
            assert_eq!(program_name(word), want);
        }
    }

    /// What an error the note names says is what failed, not what the note adds; a command the
    /// error rule reads as one keeps its specifics.
    #[test]
    fn error_words_table() {
        let cases: &[(&str, &[&str])] = &[
            (
                "`python reproduce_issue.py` fails with `NameError: name 'old_index_name' is not defined` until `nl -ba django/x.py` is run.",
                &["-ba"],
            ),
            ("If the api pod is in CrashLoopBackOff, read the crash with `kubectl logs deploy/api --previous`.", &["deploy/api", "--previous"]),
            (
                "`pip install foo` fails with `ERROR: No matching distribution found for foo==2.0`; pin `foo==1.9`.",
                &["foo==1.9"],
            ),
        ];
        for (note, want) in cases {
            let got: Vec<String> = specifics(note).into_iter().map(|s| s.text).collect();
            assert_eq!(got, want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{note:?}");
        }
    }
}
