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
    /// What kinds of secret were redacted out of the calls and the failure's output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<&'static str>,
}

/// Why a failure followed by a working call of the same program is no lesson.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Reason {
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
    pub const ALL: [Reason; 5] =
        [Reason::Unchanged, Reason::PathOrId, Reason::OwnTestOrBuild, Reason::NoSkill, Reason::Secret];

    pub fn as_str(self) -> &'static str {
        match self {
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
    let mut out = Outcome::default();
    for (i, call) in calls.iter().enumerate() {
        if !call.failed {
            continue;
        }
        let Some(failed) = parsed[i].first() else { continue };
        // The next call of the same program and subcommand: when it failed too, that
        // failure is the one its fix answers.
        let next = (i + 1..calls.len().min(i + 1 + LOOKAHEAD))
            .find_map(|j| parsed[j].iter().find(|p| p.same_program(failed)).map(|p| (j, p)));
        let Some((j, fixed)) = next else { continue };
        if calls[j].failed {
            continue;
        }
        let between = &calls[i + 1..j];
        let step = between
            .iter()
            .zip(&parsed[i + 1..j])
            .rev()
            .find_map(|(c, p)| p.first().filter(|p| !c.failed && !p.read_only()).map(|p| (c, p.render())));
        let edited = between.iter().any(|c| is_edit_tool(&c.tool));
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
            program: failed.program.clone(),
            failed_call: call.command.clone(),
            fixed_call: calls[j].command.clone(),
            positions,
        };
        let (delta, step_text) = match change {
            Change::Meaningful => {
                if is_test_or_build(failed) && is_code_failure(&key) && (edited || failed.only_selection_changed(fixed))
                {
                    positions.push(calls[j].position.clone());
                    out.refused.push(refuse(Reason::OwnTestOrBuild, positions));
                    continue;
                }
                (format!("`{}` fails{}; `{}` works.", show(&failed.render()), with(&key), show(&fixed.render())), None)
            }
            Change::PathOrId => {
                positions.push(calls[j].position.clone());
                out.refused.push(refuse(Reason::PathOrId, positions));
                continue;
            }
            Change::StepOnLine(s) => (
                format!("`{}` fails{} until `{}` is run.", show(&failed.render()), with(&key), show(&s)),
                Some(s.clone()),
            ),
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
                    } else {
                        Reason::Unchanged
                    };
                    out.refused.push(refuse(reason, positions));
                    continue;
                }
            },
        };
        positions.push(calls[j].position.clone());
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
        out.mined.push(Mined { skill, program: failed.program.clone(), delta, evidence, redacted: what });
    }
    out
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
