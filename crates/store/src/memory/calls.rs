//! A session's calls: every tool call a host reports (`skillmem/toolAfter`), skill loads
//! included, as the evidence a note's use is judged by (see [`super::evidence`]).
//!
//! Owns the sessions open in this process and the order of their calls ([`Sessions`]: a
//! position is taken synchronously when a call arrives, before the handler yields, because
//! handlers run concurrently), and what of a call is kept ([`Call`]): its arguments rendered
//! as the command text a later judgement reads ([`args_text`]), whether it failed (the host's
//! `isError` or exit status, [`failed`]) and, when it did, its output's error lines
//! ([`error_lines`]), each bounded. Pure: no SQL (that is `store/calls.rs`), no redaction (the
//! engine redacts before anything is stored).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A session with no call for this long is over (its accounting runs).
pub const IDLE_END: Duration = Duration::from_secs(30 * 60);
/// At most this many bytes of a call's arguments are kept.
pub const ARGS_MAX: usize = 4096;
/// At most this many bytes of a failed call's error lines are kept.
pub const ERRORS_MAX: usize = 2048;
/// At most this many calls of one session are kept (later ones are dropped, skill loads
/// excepted).
pub const SESSION_CALLS_MAX: i64 = 2000;
/// Positions per millisecond: a session first seen by this process starts at its clock's
/// milliseconds times this, so that a session that goes on in a new process (a restarted
/// sidecar, one hook process per event) keeps counting upwards.
const POSITIONS_PER_MS: i64 = 1024;

/// The position of the `k`-th call made at `ms` (a transcript's own time of a call), in the
/// same order as [`Sessions::arrive`]'s positions.
pub fn position_at(ms: i64, k: i64) -> i64 {
    ms.max(0).saturating_mul(POSITIONS_PER_MS).saturating_add(k.rem_euclid(POSITIONS_PER_MS))
}

/// One call of a session, as it is kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Call {
    pub session: String,
    /// Its place among the session's calls (arrival order).
    pub position: i64,
    pub call_id: String,
    pub tool: String,
    /// For a skill load: the skill, and the notes its block showed, in block order.
    pub skill: Option<String>,
    pub shown: Vec<i64>,
    /// For a skill load: the note its block withheld (the holdout), if any.
    pub withheld: Vec<i64>,
    /// The arguments as text ([`args_text`]).
    pub args: String,
    /// The command as the host ran it, for the error → fix miner: a shell tool's line, else
    /// the tool and its arguments in one line (bounded, redacted); empty in logs written
    /// before it was kept.
    pub command: String,
    pub failed: bool,
    pub exit_code: Option<i64>,
    /// A failed call's error lines ([`error_lines`]); empty otherwise.
    pub errors: String,
    /// A failed call's lines the miner reads its error from (`historian::mine::key_output`,
    /// redacted); empty otherwise.
    pub key_lines: String,
    /// When it arrived (ms since the epoch).
    pub at: i64,
}

/// The sessions this process has seen calls of, and not ended yet.
#[derive(Debug, Default)]
pub struct Sessions {
    open: HashMap<String, Open>,
}

#[derive(Debug)]
struct Open {
    next: i64,
    last: Instant,
}

impl Sessions {
    /// A call of `session` arrived: its position. Synchronous and quick (a handler's prologue).
    pub fn arrive(&mut self, session: &str, now_ms: i64, now: Instant) -> i64 {
        let o = self
            .open
            .entry(session.to_string())
            .or_insert_with(|| Open { next: now_ms.max(0).saturating_mul(POSITIONS_PER_MS), last: now });
        o.last = now;
        o.next += 1;
        o.next
    }

    /// Forgets `session` (it ended); true when it was open.
    pub fn close(&mut self, session: &str) -> bool {
        self.open.remove(session).is_some()
    }

    /// Closes and returns the sessions with no call for `after`.
    pub fn idle(&mut self, now: Instant, after: Duration) -> Vec<String> {
        let gone: Vec<String> =
            self.open.iter().filter(|(_, o)| now.duration_since(o.last) >= after).map(|(s, _)| s.clone()).collect();
        for s in &gone {
            self.open.remove(s);
        }
        gone
    }

    /// Closes and returns every open session (shutdown, end of input).
    pub fn take_all(&mut self) -> Vec<String> {
        self.open.drain().map(|(s, _)| s).collect()
    }
}

/// Whether a call failed: the host's `isError`, else a non-zero exit status in its metadata
/// (`exit` as OpenCode's bash tool reports it, `exitCode`, `exit_code`, `exitStatus`), and
/// that status.
pub fn failed(is_error: Option<bool>, metadata: Option<&Value>) -> (bool, Option<i64>) {
    let code = metadata.and_then(|m| {
        ["exit", "exitCode", "exit_code", "exitStatus"].iter().find_map(|k| match m.get(*k)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
    });
    (is_error.unwrap_or(false) || code.is_some_and(|c| c != 0), code)
}

/// A call's arguments as the text a judgement reads: the command first (`command`, `cmd`,
/// `script`, as a string or an argument list), then every other string, number and list of
/// the arguments in order (paths, patterns, file contents), an `env` object as `NAME=value`
/// words; at most [`ARGS_MAX`] bytes.
pub fn args_text(args: &Value) -> String {
    let mut out = String::new();
    let mut used: Vec<&str> = vec![];
    if let Some(obj) = args.as_object() {
        for k in ["command", "cmd", "script", "argv"] {
            if let Some(v) = obj.get(k) {
                push_value(&mut out, v);
                used.push(k);
            }
        }
        for (k, v) in obj {
            if used.contains(&k.as_str()) {
                continue;
            }
            if k == "env" {
                if let Some(env) = v.as_object() {
                    for (name, value) in env {
                        let value = value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string());
                        push_line(&mut out, &format!("{name}={value}"));
                    }
                    continue;
                }
            }
            push_value(&mut out, v);
        }
    } else {
        push_value(&mut out, args);
    }
    bound(out, ARGS_MAX)
}

fn push_line(out: &mut String, s: &str) {
    if s.trim().is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(s);
}

fn push_value(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => push_line(out, s),
        Value::Number(n) => push_line(out, &n.to_string()),
        Value::Array(a) if a.iter().all(|x| x.is_string() || x.is_number()) => {
            let words: Vec<String> =
                a.iter().map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string())).collect();
            push_line(out, &words.join(" "));
        }
        Value::Array(a) => a.iter().for_each(|x| push_value(out, x)),
        Value::Object(o) => o.values().for_each(|x| push_value(out, x)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Words that mark a line of output as an error line.
pub const ERROR_MARKS: &[&str] = &[
    "error",
    "err!",
    "fatal",
    "failed",
    "failure",
    "exception",
    "traceback",
    "panicked",
    "denied",
    "not found",
    "no such",
    "cannot",
    "can't",
    "refused",
    "invalid",
    "unable",
    "timed out",
    "backoff",
    "undefined reference",
];

/// Tools that only read (files, listings, searches), in the hosts' own names: Claude Code's
/// `Read`, `Grep`, `Glob`, `LS`; OpenCode's and Pi's `read`, `grep`, `glob`, `list`, `ls`;
/// Gemini CLI's `read_file`, `read_many_files`, `list_directory`, `search_file_content`,
/// `glob`; Copilot CLI's `view`.
const READ_ONLY: &[&str] = &[
    "read",
    "grep",
    "glob",
    "ls",
    "list",
    "read_file",
    "read_many_files",
    "list_directory",
    "search_file_content",
    "view",
    "notebookread",
];

/// Whether a call of `tool` only reads: what it names is looked at, not applied.
pub fn reads_only(tool: &str) -> bool {
    READ_ONLY.contains(&tool.to_ascii_lowercase().as_str())
}

/// The error lines of a failed call's output: the lines that say error (see [`ERROR_MARKS`]),
/// else its last lines; at most [`ERRORS_MAX`] bytes, each line at most 300.
pub fn error_lines(output: &str) -> String {
    let lines: Vec<&str> = output.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let marked: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let lower = l.to_lowercase();
            ERROR_MARKS.iter().any(|m| lower.contains(m))
        })
        .collect();
    let chosen = if marked.is_empty() { &lines[lines.len().saturating_sub(5)..] } else { &marked[..] };
    let mut out = String::new();
    for l in chosen {
        let l = bound(l.to_string(), 300);
        if out.len() + l.len() + 1 > ERRORS_MAX {
            break;
        }
        push_line(&mut out, &l);
    }
    out
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub fn bound(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut at = max;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn positions_follow_arrival_and_grow_across_processes() {
        let t = Instant::now();
        let mut s = Sessions::default();
        let a = s.arrive("s", 1_000, t);
        let b = s.arrive("s", 1_000, t);
        let other = s.arrive("o", 1_000, t);
        assert!(b == a + 1 && other == a, "{a} {b} {other}");
        // The same session in a later process (or after it ended here) starts above.
        let mut later = Sessions::default();
        assert!(later.arrive("s", 1_001, t) > b);
        assert!(s.close("s") && !s.close("s"));
        assert!(s.arrive("s", 1_002, t) > b);
    }

    #[test]
    fn idle_sessions_end_and_busy_ones_stay() {
        let t = Instant::now();
        let mut s = Sessions::default();
        s.arrive("old", 1, t);
        s.arrive("new", 1, t + Duration::from_secs(20 * 60));
        assert_eq!(s.idle(t + Duration::from_secs(31 * 60), IDLE_END), vec!["old".to_string()]);
        assert!(s.idle(t + Duration::from_secs(31 * 60), IDLE_END).is_empty());
        assert_eq!(s.take_all(), vec!["new".to_string()]);
    }

    #[test]
    fn failed_table() {
        let cases: &[(Option<bool>, Value, bool, Option<i64>)] = &[
            (None, json!({ "exit": 0, "output": "ok" }), false, Some(0)),
            (None, json!({ "exit": 1 }), true, Some(1)),
            (None, json!({ "exitCode": 127 }), true, Some(127)),
            (None, json!({ "exit_code": "2" }), true, Some(2)),
            (Some(true), json!({}), true, None),
            (Some(false), json!({ "exit": null }), false, None),
            (None, json!("not an object"), false, None),
        ];
        for (is_error, meta, want, code) in cases {
            assert_eq!(failed(*is_error, Some(meta)), (*want, *code), "{is_error:?} {meta}");
        }
        assert_eq!(failed(None, None), (false, None));
    }

    #[test]
    fn args_text_table() {
        let cases: &[(Value, &str)] = &[
            (
                json!({ "command": "npm ci --prefer-offline", "description": "install" }),
                "npm ci --prefer-offline\ninstall",
            ),
            (json!({ "command": ["git", "push", "--force-with-lease"] }), "git push --force-with-lease"),
            (json!({ "filePath": "/r/tsconfig.json", "limit": 20 }), "/r/tsconfig.json\n20"),
            (json!({ "cmd": "make", "env": { "RUST_LOG": "debug" } }), "make\nRUST_LOG=debug"),
            (json!(null), ""),
            (json!("raw text"), "raw text"),
        ];
        for (args, want) in cases {
            assert_eq!(args_text(args), *want, "{args}");
        }
        let long = args_text(&json!({ "command": "é".repeat(5000) }));
        assert!(long.len() <= ARGS_MAX);
    }

    #[test]
    fn error_lines_keep_what_says_error() {
        let out = "collecting ...\nE   ModuleNotFoundError: No module named 'yaml'\n1 failed in 0.2s\n";
        assert_eq!(error_lines(out), "E   ModuleNotFoundError: No module named 'yaml'\n1 failed in 0.2s");
        assert_eq!(error_lines("a\nb\nc\nd\ne\nf\ng"), "c\nd\ne\nf\ng");
        // A linker's message says no "error" on its own line.
        let ld = "   Compiling api v0.3.1\n  = note: /usr/bin/ld: undefined reference to `SSL_CTX_new'\nerror: could not compile `api`";
        assert_eq!(
            error_lines(ld),
            "= note: /usr/bin/ld: undefined reference to `SSL_CTX_new'\nerror: could not compile `api`"
        );
        assert!(error_lines(&"error x\n".repeat(10_000)).len() <= ERRORS_MAX);
    }
}
