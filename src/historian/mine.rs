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
//! transcripts ([`crate::historian::transcript`] for Claude Code, `hosts::agent_transcripts`
//! for the others) and the protocol's reported calls make the [`Call`]s; storing what is
//! mined (and the near-duplicate rule that merges a second session's find) is the engine's.

use skillmem_text::redact;

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

// ---- the shell line --------------------------------------------------------------------

/// A shell line with its secrets redacted as every write path redacts them, each marker kept
/// one word of the line (quoted where it stands outside quotes), so that the line parses into
/// the same commands as before: what a session's log keeps of a call's command, mined at the
/// session's end. (`GH_TOKEN=ghp_… gh pr list` → `GH_TOKEN='[redacted: a GitHub token]' gh
/// pr list`, which still runs `gh` with `GH_TOKEN` set.)
pub fn redact_line(line: &str) -> String {
    let spans = redact::spans(line);
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for s in &spans {
        out.push_str(&line[at..s.start]);
        let marker = redact::marker(s.what);
        if quoted_at(line, s.start) {
            out.push_str(&marker);
        } else {
            out.push('\'');
            out.push_str(&marker);
            out.push('\'');
        }
        at = s.end;
    }
    out.push_str(&line[at..]);
    out
}

/// Whether byte `at` of a shell line stands inside quotes.
fn quoted_at(line: &str, at: usize) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in line[..at].chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    single || double
}

/// One command of a shell line: what runs, under what.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// `NAME=value` assignments before it, and `export`s earlier on the line.
    pub env: Vec<(String, String)>,
    /// What it runs under (`sudo`, `npx`, `uvx`, `python -m`, `uv run`, …).
    pub wrappers: Vec<String>,
    pub program: String,
    /// The first bare word after the program (`git push`, `npm install`, `kubectl get`).
    pub subcommand: Option<String>,
    pub flags: Vec<String>,
    pub args: Vec<String>,
    /// The flags and arguments as written, in order (what a lesson quotes).
    pub rest: Vec<String>,
    /// The commands that ran before it on the line (`npm ci && npm test`), `cd` left out.
    pub before: Vec<String>,
}

/// What changed from a failed call to the one that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    None,
    PathOrId,
    Meaningful,
    /// The same call, with a step run before it on the line (`npm ci && npm test`).
    StepOnLine(String),
}

/// Wrappers that take no argument of their own before the program.
const WRAPPERS: &[&str] = &["sudo", "npx", "uvx", "bunx", "pnpx", "env", "time", "nohup", "exec", "command", "doas"];
/// Programs whose first bare word is a subcommand.
const NO_SUBCOMMAND: &[&str] = &[
    "python", "node", "bash", "sh", "gcc", "g++", "clang", "cc", "curl", "wget", "jq", "tsc", "pytest", "jest", "ls",
    "cat",
];

impl Parsed {
    fn same_program(&self, other: &Parsed) -> bool {
        let same =
            program_family(&self.program) == program_family(&other.program) && self.subcommand == other.subcommand;
        // `docker-compose up` and `docker compose up`: a plugin that became a subcommand.
        let joined = |a: &Parsed, b: &Parsed| {
            b.subcommand.as_ref().is_some_and(|s| a.program == format!("{}-{s}", b.program))
                && a.subcommand.is_some()
                && a.subcommand == b.args.first().cloned()
        };
        same || joined(self, other) || joined(other, self)
    }

    /// The command as a lesson quotes it: env, wrappers, program, subcommand, then its flags
    /// and arguments as written (without `cd`, redirections or what it was piped into).
    pub fn render(&self) -> String {
        let mut parts: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.extend(self.wrappers.iter().cloned());
        parts.push(self.program.clone());
        parts.extend(self.subcommand.iter().cloned());
        parts.extend(self.rest.iter().map(|w| if w.contains(' ') { format!("\"{w}\"") } else { w.clone() }));
        parts.join(" ")
    }

    fn read_only(&self) -> bool {
        const READ: &[&str] = &[
            "cat", "ls", "head", "tail", "grep", "rg", "find", "echo", "pwd", "which", "type", "less", "wc", "sed",
            "awk", "stat", "file", "tree", "printenv", "whoami", "true", "diff", "sleep",
        ];
        const GIT_READ: &[&str] = &["status", "diff", "log", "show"];
        // `git branch` and `git remote` list when given nothing, and change things otherwise.
        const GIT_LIST: &[&str] = &["branch", "remote"];
        let sub = self.subcommand.as_deref().unwrap_or("");
        READ.contains(&self.program.as_str())
            || (self.program == "git"
                && (GIT_READ.contains(&sub)
                    || (GIT_LIST.contains(&sub)
                        && self.args.is_empty()
                        && self
                            .flags
                            .iter()
                            .all(|f| ["-a", "-r", "-v", "-vv", "--list", "--show-current"].contains(&f.as_str())))))
            || self.flags.iter().any(|f| f == "--help" || f == "--version" || f == "-h")
    }

    fn change_to(&self, fixed: &Parsed) -> Change {
        let core = self.change_of_call(fixed);
        if core == Change::Meaningful {
            return core;
        }
        let had = before_steps(&self.before);
        let new = before_steps(&fixed.before);
        match fixed.before.iter().zip(&new).rev().find(|(_, n)| !had.contains(n)) {
            Some((step, _)) => Change::StepOnLine(step.clone()),
            None => core,
        }
    }

    fn change_of_call(&self, fixed: &Parsed) -> Change {
        let meaningful = self.env != fixed.env
            || self.wrappers != fixed.wrappers
            || self.program != fixed.program
            || flag_names(&self.flags) != flag_names(&fixed.flags);
        if meaningful {
            return Change::Meaningful;
        }
        let mut task_bound = false;
        // Flags of the same names whose values differ, and the positional arguments.
        for (a, b) in self.flags.iter().zip(&fixed.flags) {
            if a != b {
                let (va, vb) = (a.split_once('=').map_or("", |x| x.1), b.split_once('=').map_or("", |x| x.1));
                if is_path_or_id(va) && is_path_or_id(vb) {
                    task_bound = true;
                } else {
                    return Change::Meaningful;
                }
            }
        }
        if self.args != fixed.args && self.read_only() {
            return Change::PathOrId;
        }
        if self.args != fixed.args {
            let gone: Vec<&String> = self.args.iter().filter(|a| !fixed.args.contains(a)).collect();
            let new: Vec<&String> = fixed.args.iter().filter(|a| !self.args.contains(a)).collect();
            if !gone.iter().chain(&new).all(|a| is_path_or_id(a)) {
                return Change::Meaningful;
            }
            task_bound = true;
        }
        if task_bound {
            Change::PathOrId
        } else {
            Change::None
        }
    }

    /// The change only narrows which tests or files run (a path, `-k name`, `--lib`).
    fn only_selection_changed(&self, fixed: &Parsed) -> bool {
        const SELECT: &[&str] =
            &["-k", "-t", "--lib", "--test", "--testNamePattern", "--", "-p", "--package", "--run", "-x", "--bail"];
        if self.env != fixed.env || self.wrappers != fixed.wrappers || self.program != fixed.program {
            return false;
        }
        let extra: Vec<&String> = fixed.flags.iter().filter(|f| !self.flags.contains(f)).collect();
        extra.iter().all(|f| SELECT.contains(&f.split('=').next().unwrap_or(f)))
    }
}

fn flag_names(flags: &[String]) -> Vec<&str> {
    flags.iter().map(|f| f.split('=').next().unwrap_or(f)).collect()
}

/// The commands before on the line, with their paths and ids left out.
fn before_steps(before: &[String]) -> Vec<String> {
    before.iter().map(|b| b.split_whitespace().filter(|w| !is_path_or_id(w)).collect::<Vec<_>>().join(" ")).collect()
}

/// `python3` and `python`, `pip3` and `pip`, `g++-12` and `g++` are one program.
fn program_family(p: &str) -> &str {
    let base = p.rsplit('/').next().unwrap_or(p);
    base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

fn is_trivial(p: &Parsed) -> bool {
    matches!(p.program.as_str(), "cd" | "export" | "source" | "." | "set" | "pushd" | "popd" | "unset" | "")
}

/// A path, URL, file name, number, hash, uuid or name with a generated suffix: what a task
/// names and another task would not.
pub fn is_path_or_id(word: &str) -> bool {
    let w = word.trim_matches(|c| c == '\'' || c == '"');
    if w.is_empty() {
        return false;
    }
    let path = w.contains('/') || w.starts_with('.') || w.starts_with('~') || w.contains("://") || has_extension(w);
    let digits = w.chars().filter(char::is_ascii_digit).count();
    let number = digits == w.len();
    let hex = w.len() >= 7 && digits > 0 && w.chars().all(|c| c.is_ascii_hexdigit());
    let suffixed = w.rsplit(['-', '_']).next().is_some_and(|tail| {
        tail.len() >= 4 && tail.chars().any(|c| c.is_ascii_digit()) && tail.chars().all(|c| c.is_ascii_alphanumeric())
    }) && w.contains(['-', '_']);
    path || number || hex || suffixed
}

fn has_extension(w: &str) -> bool {
    w.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
            && !stem.chars().all(|c| c.is_ascii_digit() || c == '.')
    })
}

/// Splits a shell line into words and operators: quotes and backslashes kept out of the
/// words, `&&`, `||`, `;`, `|` and newlines as operators, redirections dropped.
fn words(line: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = vec![];
    let mut cur = String::new();
    let mut has = false;
    let mut chars = line.chars().peekable();
    let flush = |cur: &mut String, has: &mut bool, out: &mut Vec<(String, bool)>| {
        if *has {
            out.push((std::mem::take(cur), false));
            *has = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                has = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                cur.push(e);
                            }
                        }
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    if e != '\n' {
                        cur.push(e);
                        has = true;
                    }
                }
            }
            '&' | '|' | ';' | '\n' => {
                flush(&mut cur, &mut has, &mut out);
                let mut op = c.to_string();
                if (c == '&' || c == '|') && chars.peek() == Some(&c) {
                    chars.next();
                    op.push(c);
                }
                if op == "&" && chars.peek() == Some(&'>') {
                    // `&>file`
                    chars.next();
                    out.push((">".into(), true));
                    continue;
                }
                out.push((if op == "\n" { ";".into() } else { op }, true));
            }
            '>' | '<' => {
                // `2>&1`, `>file`, `2>/dev/null`: the redirection and its target are dropped.
                if has && cur.chars().all(|d| d.is_ascii_digit()) {
                    cur.clear();
                    has = false;
                }
                flush(&mut cur, &mut has, &mut out);
                while chars.peek().is_some_and(|&d| d == '>' || d == '<' || d == '&') {
                    chars.next();
                }
                out.push((">".into(), true));
            }
            c if c.is_whitespace() => flush(&mut cur, &mut has, &mut out),
            c => {
                cur.push(c);
                has = true;
            }
        }
    }
    flush(&mut cur, &mut has, &mut out);
    out
}

/// The command of a shell line that a failure is about: the first that is not `cd`,
/// `export` or an assignment, the first of its pipeline; `None` for an empty line.
pub fn parse(line: &str) -> Option<Parsed> {
    parse_all(line).into_iter().next()
}

/// Every command of a shell line, in order, each with the commands before it on the line
/// (`cd`, `export` and assignments are no commands; a pipeline is its producer).
pub fn parse_all(line: &str) -> Vec<Parsed> {
    let toks = words(line);
    let mut segments: Vec<Vec<String>> = vec![vec![]];
    let mut piped = false;
    let mut skip_next = false;
    for (w, op) in toks {
        if skip_next {
            skip_next = false;
            if !op {
                continue;
            }
        }
        if op {
            match w.as_str() {
                ">" => skip_next = true,
                "|" => piped = true,
                _ => {
                    piped = false;
                    segments.push(vec![]);
                }
            }
            continue;
        }
        if !piped {
            if let Some(s) = segments.last_mut() {
                s.push(w);
            }
        }
    }
    let mut env: Vec<(String, String)> = vec![];
    let mut out: Vec<Parsed> = vec![];
    for seg in segments.into_iter().filter(|s| !s.is_empty()) {
        if seg[0] == "export" {
            env.extend(seg[1..].iter().filter_map(|w| assignment(w)));
            continue;
        }
        let mut p = parse_segment(&seg, env.clone());
        if is_trivial(&p) {
            continue;
        }
        p.before = out.iter().map(Parsed::render).collect();
        out.push(p);
    }
    out
}

fn assignment(w: &str) -> Option<(String, String)> {
    let (k, v) = w.split_once('=')?;
    let ok = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with(|c: char| c.is_ascii_digit());
    ok.then(|| (k.to_string(), v.to_string()))
}

fn parse_segment(seg: &[String], mut env: Vec<(String, String)>) -> Parsed {
    let mut i = 0;
    let mut wrappers = vec![];
    while i < seg.len() {
        if let Some(a) = assignment(&seg[i]) {
            env.push(a);
            i += 1;
            continue;
        }
        let w = seg[i].as_str();
        let base = w.rsplit('/').next().unwrap_or(w);
        if WRAPPERS.contains(&base) {
            wrappers.push(base.to_string());
            i += 1;
            // `sudo -E`, `env -i`, `npx -y`: the wrapper's own flags.
            while i < seg.len() && seg[i].starts_with('-') {
                wrappers.push(seg[i].clone());
                i += 1;
            }
            continue;
        }
        if base == "timeout" {
            wrappers.push(base.to_string());
            i += 1;
            if i < seg.len() && seg[i].chars().next().is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            continue;
        }
        // `python -m pytest`, `python3 -m pip`: the module is the program.
        if program_family(base) == "python" && seg.get(i + 1).is_some_and(|m| m == "-m") && i + 2 < seg.len() {
            wrappers.push(format!("{base} -m"));
            i += 2;
            continue;
        }
        // `uv run X`, `poetry run X`, `pnpm dlx X`, `bundle exec X`, `pipenv run X`.
        let runner = matches!(
            (base, seg.get(i + 1).map(String::as_str)),
            ("uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye", Some("run"))
                | ("pnpm" | "yarn", Some("dlx"))
                | ("bundle", Some("exec"))
                | ("npm", Some("exec"))
        );
        if runner && i + 2 < seg.len() {
            wrappers.push(format!("{base} {}", seg[i + 1]));
            i += 2;
            while i < seg.len() && seg[i].starts_with('-') {
                wrappers.push(seg[i].clone());
                i += 1;
            }
            continue;
        }
        break;
    }
    let Some(program) = seg.get(i) else {
        return Parsed { env, wrappers, ..Parsed::default() };
    };
    let program = program.rsplit('/').next().unwrap_or(program).to_string();
    let mut p = Parsed { env, wrappers, program, ..Parsed::default() };
    let takes_sub = !NO_SUBCOMMAND.contains(&program_family(&p.program));
    for w in &seg[i + 1..] {
        let sub = p.subcommand.is_none();
        if w.starts_with('-') && w.len() > 1 {
            p.flags.push(w.clone());
        } else if takes_sub
            && p.subcommand.is_none()
            && p.flags.is_empty()
            && p.args.is_empty()
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '_')
            && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        {
            p.subcommand = Some(w.clone());
        } else {
            p.args.push(w.clone());
        }
        if !(sub && p.subcommand.is_some()) {
            p.rest.push(w.clone());
        }
    }
    p
}

// ---- the error's key line --------------------------------------------------------------

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
