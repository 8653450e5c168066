//! The error → fix miner (crates/historian/src/mine.rs) and its shell-line parser.
//!
//! Sessions of generated calls (shell lines of shell-ish words and operators, outputs of
//! error-ish lines, failures, skills, secrets planted in commands): nothing panics; every
//! lesson is of the skill in use at its failure, no longer than a lesson, and neither it nor
//! its evidence holds a secret; every position it names is one of the session's.

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use skillmem::historian::filter::MAX_LESSON_CHARS;
use skillmem::historian::mine::{self, Call, Position};
use skillmem_text::redact::find_secret;

use super::{ensure, gen, Target};

pub const TARGET: Target = Target {
    name: "mine",
    ci_cases: 300,
    run: |cases, seed| super::run(cases, seed, input(), property),
    replay: |t| super::replay(t, property),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub tool: u8,
    pub command: String,
    pub failed: bool,
    pub output: String,
    pub skill: Option<String>,
    /// A secret planted in the command.
    pub secret: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Input {
    pub steps: Vec<Step>,
}

const WORDS: &[&str] = &[
    "npm",
    "install",
    "pip",
    "docker",
    "git",
    "push",
    "sudo",
    "npx",
    "uvx",
    "python3",
    "-m",
    "pytest",
    "cargo",
    "test",
    "cd",
    "src/",
    "&&",
    "||",
    ";",
    "|",
    ">",
    "2>&1",
    "&>",
    "'",
    "\"",
    "\\",
    "=",
    "A=1",
    "export",
    "--flag",
    "-x",
    "--a=b",
    "docker-compose",
    "compose",
    "up",
    "uv",
    "run",
    "timeout",
    "5",
    "é",
    "💥",
    "\n",
    " ",
    "ls",
    "cat",
    "x.py",
    "abc1234f",
];

const LINES: &[&str] = &[
    "error: ",
    "Error: ",
    "npm ERR! ",
    "npm ERR!",
    "fatal: ",
    "E: ",
    "E   assert 1 == 2",
    "Traceback",
    "  File \"a\"",
    "at x",
    "ModuleNotFoundError: No module named 'x'",
    "not found",
    "denied",
    "│ ",
    "Exit code 1",
    "Process exited with code 2",
    "\u{1b}[31m",
    "%",
    "100%",
    "error[E0308]",
    "panicked at",
    "--- FAIL",
    "(none)",
    "`",
    "\n",
    " ",
    "é",
    "ld returned",
];

const TOOLS: &[&str] = &["Bash", "exec_command", "run_shell_command", "bash", "Edit", "apply_patch", "Read", "shell"];

fn step() -> impl Strategy<Value = Step> {
    (
        0..TOOLS.len() as u8,
        gen::soup(WORDS, 12),
        any::<bool>(),
        gen::soup(LINES, 10),
        proptest::option::of("[a-c]"),
        any::<bool>(),
    )
        .prop_map(|(tool, command, failed, output, skill, secret)| Step {
            tool,
            command,
            failed,
            output,
            skill,
            secret,
        })
}

pub fn input() -> impl Strategy<Value = Input> {
    proptest::collection::vec(step(), 0..12).prop_map(|steps| Input { steps })
}

fn property(i: &Input) -> Result<(), String> {
    let secret = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0123ab";
    let calls: Vec<Call> = i
        .steps
        .iter()
        .enumerate()
        .map(|(n, s)| Call {
            position: Position::RecordIndex(n),
            tool: TOOLS[s.tool as usize % TOOLS.len()].to_string(),
            command: if s.secret { format!("GH_TOKEN={secret} {}", s.command) } else { s.command.clone() },
            failed: s.failed,
            output: s.output.clone(),
            skill_in_use: s.skill.clone(),
        })
        .collect();
    for c in &calls {
        let _ = mine::parse_all(&c.command);
        let _ = mine::error_lines(&c.output);
    }
    let got = mine::mine(&calls);
    for m in &got.mined {
        ensure(m.delta.chars().count() <= MAX_LESSON_CHARS, || {
            format!("a lesson longer than a lesson: {:?}", m.delta)
        })?;
        let all = format!("{} {:?}", m.delta, m.evidence);
        ensure(find_secret(&all).is_none() && !all.contains(&secret[4..20]), || format!("a secret left in {all}"))?;
        let Some(Position::RecordIndex(first)) = m.evidence.positions.first() else {
            return Err(format!("no position of the failed call: {m:?}"));
        };
        ensure(calls[*first].failed && calls[*first].skill_in_use.as_deref() == Some(m.skill.as_str()), || {
            format!("{m:?} is not of a failed call's skill")
        })?;
    }
    // A session's log keeps only the lines an error is read from: mining it finds the same.
    if calls.iter().all(|c| c.output.lines().all(|l| l.len() <= mine::KEY_OUTPUT_LINE_MAX)) {
        let kept: Vec<Call> = calls.iter().map(|c| Call { output: mine::key_output(&c.output), ..c.clone() }).collect();
        let again = mine::mine(&kept);
        let lessons = |o: &mine::Outcome| -> Vec<String> {
            o.mined.iter().map(|m| format!("{} {:?}", m.delta, m.evidence)).collect()
        };
        ensure(lessons(&again) == lessons(&got) && again.refused == got.refused, || {
            format!("the log's lines mine otherwise: {:?} vs {:?}", lessons(&again), lessons(&got))
        })?;
    }
    for p in got.mined.iter().flat_map(|m| &m.evidence.positions).chain(got.refused.iter().flat_map(|r| &r.positions)) {
        ensure(matches!(p, Position::RecordIndex(n) if *n < calls.len()), || {
            format!("position {p:?} is not a call's")
        })?;
    }
    Ok(())
}
