//! The error → fix miner: a session's tool calls in order, `fix` lessons out. A shell call
//! that failed, followed in the same session by a call of the same program (and subcommand)
//! that worked after a change — another flag or argument, an environment variable, a wrapper
//! such as `sudo`, or a step run between the two — becomes a lesson of the memory-enabled
//! skill in use at the failure: "`X` fails with `E`; `X --y` works", or "`X` fails with `E`
//! until `Z` is run", with its evidence (both calls, the error's key lines, their positions).
//!
//! Every pair it does not keep is refused with a reason ([`Reason`]): the call that worked is
//! the failed one unchanged with no step between (the task's own code changed); only a task
//! path or an id changed; the failure is the project's own test or build assertion; no
//! memory-enabled skill was in use; the lesson would be mostly a secret (a secret in a lesson
//! that still says something is redacted, as on every write path).
//!
//! Pure text work: no disk, no database, no panic on any input. The readers of the hosts'
//! transcripts ([`crate::transcript`] for Claude Code, `hosts::hooks::transcripts`
//! for the others) and the protocol's reported calls make the [`Call`]s; storing what is
//! mined (and the near-duplicate rule that merges a second session's find) is the engine's.

use skillmem_text::redact;

mod key_line;
mod shell;

pub use key_line::{error_lines, key_line, key_output, KEY_OUTPUT_LINE_MAX};
pub use shell::{is_path_or_id, parse, parse_all, redact_line, Parsed};
use shell::{program_family, Change};

/// Where a call is in what reported it: the record's index in the host's transcript, or the
/// `callId` a door reported it with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Position {
    RecordIndex(usize),
    CallId(String),
}

/// One tool call of a session, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub position: Position,
    /// The host's tool name (`Bash`, `exec_command`, `run_shell_command`, `bash`, `Edit`, …).
    pub tool: String,
    /// The shell line for a shell tool; the tool and its arguments rendered for another.
    pub command: String,
    /// The host's own error status or a non-zero exit code.
    pub failed: bool,
    pub output: String,
    /// The memory-enabled skill loaded and in effect at this call.
    pub skill_in_use: Option<String>,
}

/// What was mined and why it is a lesson.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub failed_call: String,
    pub error_lines: Vec<String>,
    pub fixed_call: String,
    /// The step run between them, when the call that worked was the failed one again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The failed call's, the step's (when there is one) and the working call's positions.
    pub positions: Vec<Position>,
}

/// A `fix` lesson of `skill`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mined {
    pub skill: String,
    pub program: String,
    /// The lesson, redacted.
    pub delta: String,
    pub evidence: Evidence,
    /// What makes two sessions' finds the same lesson: the program, the change from the failed
    /// call to the working one (or the step between), and the error's signature, with task
    /// paths and ids left out ([`lesson_key`]).
    pub key: String,
    /// What kinds of secret were redacted out of the calls and the failure's output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<&'static str>,
}

/// Why a failure followed by a working call of the same program is no lesson.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Reason {
    /// The failed line runs several commands: which one failed is not known.
    Compound,
    /// The failed call runs or reads a file the session itself created (a throwaway script,
    /// its own test): what it does is the session's, no lesson for another.
    SessionFile,
    /// A read or a search that found nothing (`grep` with no match, `ls` of a missing path):
    /// not a failure of how the program was called.
    Read,
    /// The call that worked is another call, not the failed one changed (another script,
    /// another inline program, another query), or the step between is no install or
    /// configure step (a read, an edit, the session's own files, `git checkout`).
    Unrelated,
    /// Only which tests or files run changed (`-k name`, another test path).
    Selection,
    /// The fix weakens safety (a force push, `rm -rf`, silenced warnings, TLS off:
    /// `skillmem_text::unsafe_fix`).
    Unsafe,
    /// The call that worked is the failed one unchanged, with no step between: the fix was
    /// in the task's own code (a test failing, then passing after an edit).
    Unchanged,
    /// The only change is a task path or an id (another file, pod, commit, URL).
    PathOrId,
    /// The failure is the project's own test or build assertion, fixed in the code.
    OwnTestOrBuild,
    /// No memory-enabled skill was in use at the failure.
    NoSkill,
    /// The lesson would be mostly a secret.
    Secret,
}

impl Reason {
    pub const ALL: [Reason; 11] = [
        Reason::Compound,
        Reason::SessionFile,
        Reason::Read,
        Reason::Unrelated,
        Reason::Selection,
        Reason::Unsafe,
        Reason::Unchanged,
        Reason::PathOrId,
        Reason::OwnTestOrBuild,
        Reason::NoSkill,
        Reason::Secret,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Compound => "compound",
            Reason::SessionFile => "session-file",
            Reason::Read => "read",
            Reason::Unrelated => "unrelated",
            Reason::Selection => "selection",
            Reason::Unsafe => "unsafe",
            Reason::Unchanged => "unchanged",
            Reason::PathOrId => "path-or-id",
            Reason::OwnTestOrBuild => "own-test-or-build",
            Reason::NoSkill => "no-skill",
            Reason::Secret => "secret",
        }
    }

    /// The reason in words, for the log.
    pub fn words(self) -> &'static str {
        match self {
            Reason::Compound => "the failed line runs several commands, and which one failed is not known",
            Reason::SessionFile => "the failed call runs or reads a file the session itself created",
            Reason::Read => "a read or a search that found nothing is no failure of how it was called",
            Reason::Unrelated => {
                "the call that worked is another call, or the step between is no install or configure step"
            }
            Reason::Selection => "only which tests or files run changed",
            Reason::Unsafe => "the fix weakens safety (a force push, a forced delete, silenced checks, TLS off)",
            Reason::Unchanged => {
                "the call that worked is the failed one unchanged, with no step between: the fix was in the code"
            }
            Reason::PathOrId => "only a task path or an id changed",
            Reason::OwnTestOrBuild => "the project's own test or build failure, fixed in the code",
            Reason::NoSkill => "no memory-enabled skill was in use",
            Reason::Secret => "the lesson would be mostly a secret",
        }
    }
}

/// A pair that is no lesson.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refused {
    pub reason: Reason,
    /// The unsafe-fix rule the fix breaks ([`Reason::Unsafe`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    pub program: String,
    pub failed_call: String,
    pub fixed_call: String,
    pub positions: Vec<Position>,
}

/// What one session gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub mined: Vec<Mined>,
    pub refused: Vec<Refused>,
}

/// How many calls after a failure a working call of the same program is looked for.
const LOOKAHEAD: usize = 24;
/// The longest command and error line a lesson quotes.
const MAX_COMMAND_CHARS: usize = 90;
const MAX_ERROR_CHARS: usize = 140;

/// The tools that run a shell line, in the four hosts and the plugins.
const SHELL_TOOLS: &[&str] =
    &["bash", "exec_command", "shell", "local_shell", "run_shell_command", "powershell", "terminal"];
/// The tools that change a file.
const EDIT_TOOLS: &[&str] = &[
    "edit",
    "write",
    "multiedit",
    "notebookedit",
    "apply_patch",
    "write_file",
    "replace",
    "create",
    "str_replace_editor",
    "patch",
];

pub fn is_shell_tool(tool: &str) -> bool {
    SHELL_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(tool))
}

fn is_edit_tool(tool: &str) -> bool {
    EDIT_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(tool))
}

/// Mines a session's calls.
pub fn mine(calls: &[Call]) -> Outcome {
    let parsed: Vec<Vec<Parsed>> =
        calls.iter().map(|c| if is_shell_tool(&c.tool) { parse_all(&c.command) } else { vec![] }).collect();
    let created = session_files(calls, &parsed);
    let mut out = Outcome::default();
    for (i, call) in calls.iter().enumerate() {
        if !call.failed {
            continue;
        }
        let Some(failed) = parsed[i].first() else { continue };
        // The next call of the same program and subcommand (a `--version` or `--help` probe
        // passed over): when it failed too, that failure is the one its fix answers.
        let next = (i + 1..calls.len().min(i + 1 + LOOKAHEAD))
            .find_map(|j| parsed[j].iter().find(|p| p.same_program(failed) && !p.is_probe()).map(|p| (j, p)));
        let Some((j, fixed)) = next else { continue };
        if calls[j].failed {
            continue;
        }
        let between = &calls[i + 1..j];
        // The step between: the last call that worked, when every command of it is an
        // install or configure step (a read, an edit or the session's own files is none).
        let last_worked = between.iter().zip(&parsed[i + 1..j]).rev().find(|(c, p)| !c.failed && !p.is_empty());
        let step = last_worked
            .filter(|(_, p)| p.iter().all(|p| is_setup_step(p, failed, &created)))
            .map(|(c, p)| (c, p.iter().map(Parsed::render).collect::<Vec<_>>().join(" && ")));
        let edited = between.iter().zip(&parsed[i + 1..j]).any(|(c, p)| is_edit_tool(&c.tool) || p.iter().any(edits));
        let change = failed.change_to(fixed);
        let errors = error_lines(&call.output);
        // Quoted in a code span, so without backticks of its own.
        let key = errors.first().map(|k| k.replace('`', "'")).unwrap_or_default();
        // An output with no line to quote: the lesson says that it fails, not with what.
        let with = |k: &str| if k.is_empty() { String::new() } else { format!(" with `{k}`") };
        let mut positions = vec![call.position.clone()];
        // Secrets are redacted before a command is cut, so that no part of one is left.
        let show = |s: &str| cut(&redact::redact(s).0, MAX_COMMAND_CHARS);
        let refuse = |reason: Reason, positions: Vec<Position>| Refused {
            reason,
            rule: None,
            program: failed.program.clone(),
            failed_call: call.command.clone(),
            fixed_call: calls[j].command.clone(),
            positions,
        };
        // What makes this no lesson before what changed is read.
        let early = if parsed[i].len() > 1 {
            Some(Reason::Compound)
        } else if names_session_file(failed, &created) && FILE_OPS.contains(&failed.program.as_str())
            || (!names_session_file(failed, &created) && names_session_file(fixed, &created))
        {
            Some(Reason::SessionFile)
        } else if (failed.read_only() || failed.searches()) && change != Change::PathOrId {
            Some(Reason::Read)
        } else {
            None
        };
        if let Some(reason) = early {
            positions.push(calls[j].position.clone());
            out.refused.push(refuse(reason, positions));
            continue;
        }
        let (delta, step_text) = match change {
            Change::Meaningful => {
                if is_test_or_build(failed) && is_code_failure(&key) && (edited || failed.only_selection_changed(fixed))
                {
                    positions.push(calls[j].position.clone());
                    out.refused.push(refuse(Reason::OwnTestOrBuild, positions));
                    continue;
                }
                let narrowed = failed.only_selection_changed(fixed)
                    && (failed.flags != fixed.flags || failed.selected() != fixed.selected());
                let reason = if is_test_or_build(failed) && narrowed {
                    Some(Reason::Selection)
                } else if !failed.changed_in_place(fixed, &call.output) {
                    Some(Reason::Unrelated)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    positions.push(calls[j].position.clone());
                    out.refused.push(refuse(reason, positions));
                    continue;
                }
                (format!("`{}` fails{}; `{}` works.", show(&failed.render()), with(&key), show(&fixed.render())), None)
            }
            Change::PathOrId => {
                positions.push(calls[j].position.clone());
                out.refused.push(refuse(Reason::PathOrId, positions));
                continue;
            }
            Change::StepOnLine(s) => {
                let on_line = parse_all(&s);
                if on_line.is_empty() || !on_line.iter().all(|p| is_setup_step(p, failed, &created)) {
                    positions.push(calls[j].position.clone());
                    out.refused.push(refuse(Reason::Unrelated, positions));
                    continue;
                }
                (
                    format!("`{}` fails{} until `{}` is run.", show(&failed.render()), with(&key), show(&s)),
                    Some(s.clone()),
                )
            }
            Change::None => match step {
                Some((c, s)) if !(is_test_or_build(failed) && is_code_failure(&key) && edited) => {
                    positions.push(c.position.clone());
                    (
                        format!("`{}` fails{} until `{}` is run.", show(&failed.render()), with(&key), show(&s)),
                        Some(c.command.clone()),
                    )
                }
                _ => {
                    positions.push(calls[j].position.clone());
                    let reason = if is_test_or_build(failed) && is_code_failure(&key) {
                        Reason::OwnTestOrBuild
                    } else if last_worked.is_some() && step.is_none() {
                        Reason::Unrelated
                    } else {
                        Reason::Unchanged
                    };
                    out.refused.push(refuse(reason, positions));
                    continue;
                }
            },
        };
        positions.push(calls[j].position.clone());
        // The fix: the working call, or the step between; what it adds must be safe.
        let fix_text = step_text.clone().unwrap_or_else(|| calls[j].command.clone());
        if let Some(rule) = skillmem_text::unsafe_fix::introduced(&call.command, &fix_text) {
            let mut r = refuse(Reason::Unsafe, positions);
            r.rule = Some(rule.name);
            out.refused.push(r);
            continue;
        }
        let Some(skill) = call.skill_in_use.clone() else {
            out.refused.push(refuse(Reason::NoSkill, positions));
            continue;
        };
        let Ok((delta, _)) = redact::redact_lesson(&delta) else {
            out.refused.push(refuse(Reason::Secret, positions));
            continue;
        };
        let mut what: Vec<&'static str> = vec![];
        let mut red = |s: &str| {
            let (r, w) = redact::redact(s);
            for k in w {
                if !what.contains(&k) {
                    what.push(k);
                }
            }
            r
        };
        red(&call.output);
        let evidence = Evidence {
            failed_call: red(&call.command),
            error_lines: errors,
            fixed_call: red(&calls[j].command),
            step: step_text.map(|s| red(&s)),
            positions,
        };
        let key = lesson_key(failed, fixed, evidence.step.as_deref(), &key);
        out.mined.push(Mined { skill, program: failed.program.clone(), delta, evidence, key, redacted: what });
    }
    out
}

// ---- what a session made, and what counts as a step -------------------------------------

/// The tools that create a file (its path among their arguments).
const CREATE_TOOLS: &[&str] = &["write", "create", "write_file"];

/// The names of the files and folders the session itself created, anywhere in it: what its
/// redirections and here-documents wrote, what `touch`, `mkdir`, `cp`, `mv` made, what a
/// create tool wrote. Base names: a script run as `python repro.py` or `./repro.py` is one.
fn session_files(calls: &[Call], parsed: &[Vec<Parsed>]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let mut add = |w: &str| {
        let w = w.trim_matches(|c| c == '\'' || c == '"').trim_end_matches('/');
        let base = w.rsplit('/').next().unwrap_or(w);
        if !base.is_empty() && base != "." && base != ".." && !base.starts_with('-') {
            out.insert(base.to_string());
        }
    };
    for (c, ps) in calls.iter().zip(parsed) {
        for p in ps {
            p.writes.iter().for_each(|w| add(w));
            match p.program.as_str() {
                "touch" | "mkdir" => p.args.iter().for_each(|a| add(a)),
                "cp" | "mv" => p.args.last().iter().for_each(|a| add(a)),
                _ => {}
            }
        }
        if CREATE_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(&c.tool)) {
            c.command.split_whitespace().skip(1).filter(|w| w.contains('/') || w.contains('.')).for_each(&mut add);
        }
    }
    out
}

/// Whether a command runs or names a file the session created (its program, or an argument).
fn names_session_file(p: &Parsed, created: &std::collections::HashSet<String>) -> bool {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    created.contains(&base(&p.program)) || p.args.iter().any(|a| created.contains(&base(a)))
}

/// A command that changes a file by hand: an editor, `sed -i`, a patch, a redirection into a
/// file.
fn edits(p: &Parsed) -> bool {
    const EDITORS: &[&str] = &["vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "tee", "patch"];
    let in_place = |f: &String| f == "-i" || f.starts_with("-i.") || f == "--in-place" || f == "-pi";
    !p.writes.is_empty()
        || !p.appends.is_empty()
        || EDITORS.contains(&p.program.as_str())
        || (matches!(p.program.as_str(), "sed" | "perl" | "gawk") && p.flags.iter().any(in_place))
        || (p.program == "git" && matches!(p.subcommand.as_deref(), Some("apply" | "am")))
}

/// Whether a command run between a failure and the same call working is an install or
/// configure step, the kind of thing a lesson can name: not a read, not the failing program
/// again, not an edit, not a file moved, made or deleted, not `git checkout` of the session's
/// own changes, not a run of a file the session created.
/// Programs that make, move or delete files, or only print.
const FILE_OPS: &[&str] = &["rm", "rmdir", "mv", "cp", "touch", "mkdir", "ln", "echo", "printf", "true", "cd"];

fn is_setup_step(p: &Parsed, failed: &Parsed, created: &std::collections::HashSet<String>) -> bool {
    const GIT_UNDO: &[&str] = &["checkout", "restore", "stash", "reset", "clean", "rm", "add", "diff", "show"];
    let undo = p.program == "git" && p.subcommand.as_deref().is_some_and(|s| GIT_UNDO.contains(&s));
    let no_step = p.read_only()
        || p.searches()
        || p.same_program(failed)
        || edits(p)
        || FILE_OPS.contains(&p.program.as_str())
        || undo
        || names_session_file(p, created);
    !no_step
}

/// What makes two finds the same lesson: the program (and subcommand), what changed from the
/// failed call to the working one — environment, wrappers, the program itself, flag names,
/// arguments that are no task path or id — or the step run between, and the error's
/// signature ([`error_signature`]). Two sessions that fixed the same failure the same way on
/// other files give the same key.
pub fn lesson_key(failed: &Parsed, fixed: &Parsed, step: Option<&str>, error: &str) -> String {
    let mut parts: Vec<String> = vec![];
    let fam = |w: &str| w.split_whitespace().map(|x| program_family(x).to_string()).collect::<Vec<_>>().join(" ");
    match step {
        Some(s) => {
            let words: Vec<String> = parse_all(s)
                .iter()
                .map(|p| {
                    let mut w = vec![program_family(&p.program).to_string()];
                    w.extend(p.subcommand.iter().cloned());
                    w.extend(p.rest.iter().filter(|a| !is_path_or_id(a)).cloned());
                    w.join(" ")
                })
                .collect();
            parts.push(format!("step:{}", words.join(" && ")));
        }
        None => {
            for (k, v) in &fixed.env {
                if !failed.env.iter().any(|(k2, v2)| k2 == k && v2 == v) {
                    parts.push(format!("+env:{k}={}", if is_path_or_id(v) { "…" } else { v }));
                }
            }
            for (k, _) in &failed.env {
                if !fixed.env.iter().any(|(k2, _)| k2 == k) {
                    parts.push(format!("-env:{k}"));
                }
            }
            let (wf, wx): (Vec<String>, Vec<String>) =
                (failed.wrappers.iter().map(|w| fam(w)).collect(), fixed.wrappers.iter().map(|w| fam(w)).collect());
            parts.extend(wx.iter().filter(|w| !wf.contains(w)).map(|w| format!("+wrap:{w}")));
            parts.extend(wf.iter().filter(|w| !wx.contains(w)).map(|w| format!("-wrap:{w}")));
            // The same wrapper run from another place (`/usr/bin/python3 -m` → `python3 -m`).
            if wf == wx && failed.wrappers != fixed.wrappers {
                parts.push(format!("~wrap:{}>{}", failed.wrappers.join(" "), fixed.wrappers.join(" ")));
            }
            if failed.program != fixed.program {
                parts.push(format!("prog:{}>{}", failed.program, fixed.program));
            }
            let names = |p: &Parsed| -> Vec<String> {
                p.flags.iter().map(|f| f.split('=').next().unwrap_or(f).to_string()).collect()
            };
            let (ff, fx) = (names(failed), names(fixed));
            parts.extend(fx.iter().filter(|f| !ff.contains(f)).map(|f| format!("+flag:{f}")));
            parts.extend(ff.iter().filter(|f| !fx.contains(f)).map(|f| format!("-flag:{f}")));
            let args = |p: &Parsed| -> Vec<String> { p.args.iter().filter(|a| !is_path_or_id(a)).cloned().collect() };
            let (af, ax) = (args(failed), args(fixed));
            parts.extend(ax.iter().filter(|a| !af.contains(a)).map(|a| format!("+arg:{a}")));
            parts.extend(af.iter().filter(|a| !ax.contains(a)).map(|a| format!("-arg:{a}")));
        }
    }
    parts.sort();
    parts.dedup();
    let mut program = program_family(&failed.program).to_string();
    if let Some(s) = &failed.subcommand {
        program.push(' ');
        program.push_str(s);
    }
    format!("{program} | {} | {}", parts.join(" "), error_signature(error))
}

/// An error line with what varies between sessions left out: the exception's name and the
/// first words after it, or the first words of the message, lower-cased, without paths,
/// numbers or quoted names of the task's own.
pub fn error_signature(line: &str) -> String {
    let words: Vec<String> = line
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',' || c == '(' || c == ')')
        .filter(|w| !w.is_empty() && !is_path_or_id(w) && !w.starts_with(['\'', '"', '<', '[', '{']))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_alphabetic() || c == '\'' || c == '_'))
        .collect();
    let at = words.iter().position(|w| w.ends_with("error") || w.ends_with("exception")).unwrap_or(0);
    let take = if at > 0 || words.first().is_some_and(|w| w.ends_with("error")) { 4 } else { 5 };
    words.iter().skip(at).take(take).cloned().collect::<Vec<_>>().join(" ")
}

// ---- tests and builds of the project's own code ----------------------------------------

fn is_test_or_build(p: &Parsed) -> bool {
    const RUNNERS: &[&str] = &[
        "pytest", "jest", "vitest", "mocha", "tsc", "gcc", "g++", "clang", "cc", "make", "mvn", "gradle", "javac",
        "rspec", "go", "cargo", "dotnet",
    ];
    const PM_SCRIPTS: &[&str] = &["test", "build", "run", "t"];
    let fam = program_family(&p.program);
    if matches!(fam, "cargo" | "go" | "dotnet") {
        return p
            .subcommand
            .as_deref()
            .is_some_and(|s| matches!(s, "test" | "build" | "check" | "run" | "vet" | "clippy"));
    }
    RUNNERS.contains(&fam)
        || (matches!(fam, "npm" | "pnpm" | "yarn" | "bun")
            && p.subcommand.as_deref().is_some_and(|s| PM_SCRIPTS.contains(&s)))
}

/// An assertion or a compiler's complaint about the code, not about how it was called.
fn is_code_failure(key: &str) -> bool {
    let l = key.to_ascii_lowercase();
    const USAGE: &[&str] = &[
        "unknown option",
        "unrecognized",
        "unrecognised",
        "unknown compiler option",
        "error ts5",
        "error ts6",
        "no such option",
        "plugin",
        "config",
        "not found",
        "no module named",
        "cannot find module",
        "undefined reference",
        "linker",
        "command not found",
        "permission denied",
        "no such file",
        "usage:",
        "missing script",
        "invalid value",
    ];
    if USAGE.iter().any(|u| l.contains(u)) {
        return false;
    }
    const CODE: &[&str] = &[
        "assert",
        "expected",
        "received",
        "test failed",
        "tests failed",
        "failures:",
        "panicked",
        "--- fail",
        "error[e",
        "error ts",
        "mismatched types",
        "is not assignable",
        "typeerror",
        "referenceerror",
        "syntaxerror",
        "nameerror",
        "attributeerror",
        "valueerror",
        "keyerror",
        "cannot find value",
        "undeclared",
        "was not declared",
        "expected ';'",
        "tests failed",
        "test result: failed",
    ];
    CODE.iter().any(|c| l.contains(c))
}

fn cut(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests;
