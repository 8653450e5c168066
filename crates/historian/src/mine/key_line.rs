//! The error's key line: the lines of a failed call's output that carry its message, scored
//! over progress, stack frames, ANSI colours and the host's own bookkeeping.

use skillmem_text::redact;

use super::{cut, MAX_ERROR_CHARS};

/// The lines of an output that carry the error's message, the key line first (at most
/// three, each redacted and trimmed to a lesson's length): not progress, not stack frames, not the
/// host's own bookkeeping.
pub fn error_lines(output: &str) -> Vec<String> {
    let lines: Vec<String> = output.lines().map(strip_ansi).collect();
    let mut scored: Vec<(u8, usize)> =
        lines.iter().enumerate().map(|(i, l)| (score(l), i)).filter(|(s, _)| *s > 0).collect();
    if scored.is_empty() {
        return lines
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !is_noise(l))
            .map(|l| vec![cut(&redact::redact(l).0, MAX_ERROR_CHARS)])
            .unwrap_or_default();
    }
    // The strongest first; of equals, the earliest.
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<String> = vec![];
    for (_, i) in scored {
        let l = cut(&redact::redact(clean_key(&lines[i])).0, MAX_ERROR_CHARS);
        if !out.contains(&l) {
            out.push(l);
        }
        if out.len() == 3 {
            break;
        }
    }
    out
}

/// The longest line [`key_output`] keeps, in bytes.
pub const KEY_OUTPUT_LINE_MAX: usize = 1024;

/// The lines of an output the miner reads its error from, as written (escape codes dropped),
/// in their order: what a session's log keeps of a failed call, so that mining the log at
/// the session's end reads the same error as mining the whole output would
/// (`error_lines(&key_output(o)) == error_lines(o)` for lines of at most
/// [`KEY_OUTPUT_LINE_MAX`] bytes). At most four lines: the three [`error_lines`] picks, or the
/// one line it falls back to.
pub fn key_output(output: &str) -> String {
    let lines: Vec<String> = output.lines().map(strip_ansi).collect();
    let mut scored: Vec<(u8, usize)> =
        lines.iter().enumerate().map(|(i, l)| (score(l), i)).filter(|(s, _)| *s > 0).collect();
    let mut kept: Vec<usize> = vec![];
    if scored.is_empty() {
        kept.extend(lines.iter().position(|l| !l.trim().is_empty() && !is_noise(l.trim())));
    } else {
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut seen: Vec<String> = vec![];
        for (_, i) in scored {
            let l = cut(&redact::redact(clean_key(&lines[i])).0, MAX_ERROR_CHARS);
            if !seen.contains(&l) {
                seen.push(l);
                kept.push(i);
            }
            if seen.len() == 3 {
                break;
            }
        }
        kept.sort_unstable();
    }
    let bounded = |l: &str| {
        let mut at = l.len().min(KEY_OUTPUT_LINE_MAX);
        while !l.is_char_boundary(at) {
            at -= 1;
        }
        l[..at].to_string()
    };
    kept.iter().map(|i| bounded(&lines[*i])).collect::<Vec<_>>().join("\n")
}

/// The key line of an output.
pub fn key_line(output: &str) -> String {
    error_lines(output).into_iter().next().unwrap_or_default()
}

/// A line without its tool's prefix (`npm ERR! `, `npm error `) and surrounding space.
fn clean_key(l: &str) -> &str {
    let t = l.trim().trim_start_matches(['│', '╷', '╵', '┃', '●', '•', '×', '✖', '✘', '›']).trim();
    for p in ["npm ERR!", "npm error", "npm warn", "ERR!"] {
        if let Some(r) = t.strip_prefix(p).filter(|r| r.is_empty() || r.starts_with(' ')) {
            return r.trim();
        }
    }
    t
}

fn strip_ansi(l: &str) -> String {
    let mut out = String::with_capacity(l.len());
    let mut chars = l.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// Lines no error is read from: stack frames, progress, the hosts' wrappers.
fn is_noise(l: &str) -> bool {
    let t = l.trim();
    let lower = t.to_ascii_lowercase();
    t.is_empty()
        || clean_key(t).is_empty()
        || t.starts_with("at ")
        || t.starts_with("File \"")
        || t.starts_with("Traceback")
        || t.starts_with("^")
        || t.starts_with("~")
        || t.starts_with('|')
        || t.starts_with("-->")
        || t.starts_with("= note")
        || t.starts_with("= help")
        || t.starts_with("note:")
        || t.starts_with("hint:")
        || t.starts_with("Chunk ID:")
        || t.starts_with("Wall time:")
        || t.starts_with("Original token count:")
        || t == "Output:"
        || t.ends_with("(none)")
        || lower.starts_with("process exited with code")
        || lower.starts_with("exit code")
        || lower.starts_with("command exited with")
        || lower.starts_with("downloading")
        || lower.starts_with("collecting")
        || lower.starts_with("installing")
        || lower.starts_with("compiling")
        || lower.starts_with("running")
        || lower.starts_with("using cached")
        || lower.contains("a complete log of this run")
        || lower.contains("for a full report see")
        || lower.contains("to see the full")
        || lower.contains("--verbose")
        || lower.contains("re-run with")
        || is_progress(t) && !lower.contains("error")
        || t.chars().all(|c| !c.is_alphanumeric())
}

/// A progress line: a percentage (`45%`, `12.5 %`), not a `%` of an escaped URL (`%2F`).
fn is_progress(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'%' && {
            let before = t[..i].trim_end();
            before.ends_with(|d: char| d.is_ascii_digit())
        }
    })
}

/// How surely a line carries the error's message: 0 none, 1 a summary, up to 5 an
/// exception's name and message.
fn score(l: &str) -> u8 {
    if is_noise(l) {
        return 0;
    }
    let t = clean_key(l);
    let raw = l.trim();
    let lower = t.to_ascii_lowercase();
    // npm's code line and the summaries that only say that something failed.
    if raw.starts_with("npm ERR! code")
        || raw.starts_with("npm error code")
        || raw.starts_with("npm ERR! errno")
        || raw.starts_with("npm error errno")
        || lower.starts_with("error: could not compile")
        || lower.contains("command failed with exit code")
        || lower.starts_with("error: process completed with exit code")
        || lower.starts_with("error: recipe for target")
        || lower.starts_with("make: ***")
        || lower.starts_with("error: script")
        || lower.starts_with("elifecycle")
        || lower.contains("errors occurred")
        || lower.starts_with("error: aborting")
        || lower.contains("ld returned")
    {
        return 1;
    }
    let head = t.split(':').next().unwrap_or("");
    if !head.contains(' ') && (head.ends_with("Error") || head.ends_with("Exception")) && t.contains(':') {
        return 5;
    }
    if lower.starts_with("error")
        || lower.starts_with("fatal")
        || t.starts_with("E: ")
        || t.starts_with("E   ")
        || raw.contains("ERR!")
        || lower.starts_with("failed")
        || lower.starts_with("panic")
        || lower.contains("panicked at")
        || t.starts_with("--- FAIL")
        || lower.contains(": error")
        || lower.contains(" error ts")
        || lower.starts_with("an error occurred")
    {
        return 4;
    }
    if lower.contains("error:") || lower.contains("exception") || lower.contains("error ") {
        return 3;
    }
    const WORDS: &[&str] = &[
        "not found",
        "no such",
        "denied",
        "permission",
        "unknown option",
        "unrecognized",
        "unrecognised",
        "invalid",
        "cannot",
        "can't",
        "could not",
        "couldn't",
        "unable to",
        "refused",
        "not recognized",
        "missing",
        "conflict",
        "unauthorized",
        "forbidden",
        "timed out",
        "does not exist",
        "doesn't exist",
        "is required",
        "requires",
        "not allowed",
        "undefined reference",
        "expected",
    ];
    if WORDS.iter().any(|w| lower.contains(w)) {
        return 2;
    }
    0
}
