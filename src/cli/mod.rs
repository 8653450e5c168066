//! The command line: the same operations as the protocol, on the same data directory.
//!
//! Every command takes `--json` (machine-readable output) and `--data-dir`. Output goes to
//! stdout through [`out`]; errors go to stderr with a non-zero exit code.

mod curate;
mod datadir;
mod demo;
mod eval;
mod eval_merge;
mod eval_mine;
mod eval_replay;
mod eval_use;
mod help;
mod historian;
mod model;
mod review;
mod setup;
mod skills;
mod team;
mod values;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use serde_json::Value;

use skillmem::config::Config;
use skillmem::engine::Engine;
use skillmem::protocol::memory::*;
use skillmem::protocol::{Cx, Method};

pub use help::GETTING_STARTED;

/// Skill memory and session skills for AI coding agents.
#[derive(Debug, Parser)]
#[command(name = "skillmem", version, about, after_help = help::GETTING_STARTED)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Print machine-readable JSON.
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// The data directory (default: $SKILLMEM_HOME, else ~/.local/share/skillmem).
    #[arg(long, global = true, help_heading = "Global options", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The workspace whose project identity and skill folders apply (default: the current folder).
    #[arg(long, global = true, help_heading = "Global options", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the stdio sidecar (LSP-framed JSON-RPC on stdin/stdout).
    #[command(after_help = help::SERVE)]
    Serve {
        /// Accepted for LSP clients that pass it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Write a note for a skill (an exact or near duplicate bumps the existing note's hits).
    #[command(after_help = help::NOTE)]
    Note {
        /// The skill's name, as in its SKILL.md (its memory must be enabled).
        skill: String,
        /// What kind of lesson it is.
        #[arg(long, value_parser = values::wire::<values::Kind>(), ignore_case = true)]
        kind: String,
        /// The lesson itself, in a sentence or two.
        #[arg(long, value_name = "TEXT")]
        delta: String,
        /// What the agent was about to do when it learned this (recall matches on it).
        #[arg(long, value_name = "TEXT")]
        intent: Option<String>,
        /// Who sees the note (default: project).
        #[arg(long, value_parser = values::wire::<values::Scope>())]
        scope: Option<String>,
        /// A tag to attach (repeat for several).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// The id of a note this lesson corrects: the new note takes its place (hits and pin
        /// carry over) and the old one is kept as history.
        #[arg(long, value_name = "ID")]
        replaces: Option<i64>,
    },
    /// Recall a skill's notes as a skill load would (the block, ranked by the intent).
    #[command(after_help = help::RECALL)]
    Recall {
        /// The skill's name.
        skill: String,
        /// What the agent is about to do: notes are ranked by it (default: by recency × use).
        #[arg(long, value_name = "TEXT")]
        intent: Option<String>,
        /// Token budget of the block (default: memory.maxTokens, 1500).
        #[arg(long, value_name = "N")]
        max_tokens: Option<usize>,
        /// At most this many notes.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Pin or unpin a note (pinned notes come first in every block).
    #[command(after_help = help::PIN)]
    Pin {
        /// The note's id (`skillmem notes SKILL` lists them).
        id: i64,
        /// Unpin instead.
        #[arg(long)]
        off: bool,
    },
    /// Retire a note: out of recall, kept as history, undone by `skillmem restore ID`.
    #[command(after_help = help::FORGET)]
    Forget {
        /// The note's id (`skillmem notes SKILL` lists them).
        id: i64,
        /// Why the note no longer holds (kept with it).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Say whether a note helped: useful (a use; from your terminal, trusted) or wrong (retired, restorable).
    #[command(after_help = help::FEEDBACK)]
    Feedback {
        /// The note's id (`skillmem notes SKILL` lists them).
        id: i64,
        /// useful or wrong.
        #[arg(value_parser = ["useful", "wrong"])]
        verdict: String,
        /// Why (kept with a note retired as wrong).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// The agent's session the note helped in (needed from an agent's shell).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// Bring a retired or replaced note back into recall.
    #[command(after_help = help::RESTORE)]
    Restore {
        /// The note's id (`skillmem notes --all-versions` lists retired and replaced notes).
        id: i64,
    },
    /// Delete a note and the older versions it replaced, for good (text that must not stay, such as a secret).
    #[command(after_help = help::PURGE)]
    Purge {
        /// The note's id.
        id: i64,
    },
    /// A note's versions: what it replaced, what replaced it.
    #[command(after_help = help::VERSIONS)]
    Versions {
        /// The note's id.
        id: i64,
    },
    /// Replace a note's lesson (and re-embed it).
    #[command(after_help = help::EDIT)]
    Edit {
        /// The note's id (`skillmem notes SKILL` lists them).
        id: i64,
        /// The new lesson.
        #[arg(long, value_name = "TEXT")]
        delta: String,
    },
    /// Counts of the notes visible to this project, and the skills used per session and day.
    #[command(after_help = help::STATS)]
    Stats {
        /// Count for this project identity instead of the workspace's.
        #[arg(long, value_name = "ID")]
        project_id: Option<String>,
        /// How many days of skill uses to list per day (default 14; 0: none).
        #[arg(long)]
        days: Option<u32>,
    },
    /// List every note (of one skill), with filters, search and sort; shows the notes' ids.
    #[command(after_help = help::NOTES)]
    Notes(curate::NotesArgs),
    /// The historian's promoted observations waiting for a person (historian.review): list, accept, reject.
    #[command(after_help = help::REVIEW)]
    Review {
        #[command(subcommand)]
        what: Option<review::ReviewCommand>,
    },
    /// Write notes with their metadata, content hash and embedder id (no vectors).
    #[command(after_help = help::EXPORT)]
    Export {
        /// Only this skill's notes.
        #[arg(long)]
        skill: Option<String>,
        /// Only the notes of this scope.
        #[arg(long, value_parser = values::wire::<values::Scope>())]
        scope: Option<String>,
        /// The output format.
        #[arg(long, default_value = "jsonl", value_parser = values::wire::<values::ExportFormat>())]
        format: String,
        /// Write to this file instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Read an export (JSONL, `-` for stdin) in one transaction.
    ///
    /// Duplicates bump hits; a malformed line aborts the whole import.
    #[command(after_help = help::IMPORT)]
    Import {
        /// The export to read (`-` for stdin).
        file: PathBuf,
    },
    /// Check the data directory, schema, indexes, embedder and host wiring; say what to do.
    #[command(after_help = help::DOCTOR)]
    Doctor {
        /// Repair what can be repaired (rebuild the full-text index).
        #[arg(long)]
        fix: bool,
    },
    /// A local web dashboard: read, search, curate and preview the memory, manage session skills.
    ///
    /// Serves on 127.0.0.1 only and prints its URL with a random token.
    #[command(after_help = help::UI)]
    Ui {
        /// The port (default: a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Do not open a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Play a short host session against a child `skillmem serve`, printing each exchange.
    #[command(after_help = help::DEMO)]
    Demo,
    /// Measure quality on labelled sets.
    Eval {
        #[command(subcommand)]
        what: EvalCommand,
    },
    /// Render a transcript chunk (TC: skill markers) and the historian's instructions.
    #[command(after_help = help::CHUNK)]
    Chunk {
        /// The transcript's format.
        #[arg(long, value_parser = values::wire::<values::TranscriptFormat>())]
        format: String,
        /// The transcript (`-` for stdin); a `.jsonl` file is read as one record a line.
        file: PathBuf,
    },
    /// Promote the observations of a historian output (`-` for stdin).
    #[command(after_help = help::OBSERVE)]
    Observe {
        /// The historian's output (`-` for stdin).
        file: PathBuf,
        /// The session the output summarises.
        #[arg(long)]
        session: Option<String>,
        /// The transcript the summarised part was read from (kept with the notes).
        #[arg(long, value_name = "PATH")]
        transcript: Option<String>,
        /// Where in the transcript (e.g. `bytes 0-48213`, `messages u1..u9`).
        #[arg(long, value_name = "WHERE")]
        transcript_at: Option<String>,
    },
    /// Re-embed notes whose vector is missing or stale, and report on the corpus.
    Distill {
        /// Notes embedded per batch.
        #[arg(long)]
        batch_size: Option<usize>,
    },
    /// Answer one hook event of an agent host (JSON on stdin, the hook's JSON on stdout).
    Hook {
        #[command(subcommand)]
        host: HookHost,
    },
    /// Serve the note tools and the session-skills tools over MCP on stdio.
    ///
    /// The note tools: skill_note, skill_recall, skill_pin, skill_forget. The session-skills
    /// tools: skills_list, skills_install, skills_update, skills_remove, skills_resolve,
    /// skills_seed.
    #[command(after_help = help::MCP)]
    Mcp,
    /// Install, update, remove, list and resolve session skills from git.
    #[command(after_help = help::SKILLS)]
    Skills {
        #[command(subcommand)]
        what: skills::SkillsCommand,
    },
    /// Copy installed skills into a session's working folder, hidden from git.
    #[command(after_help = help::SEED)]
    Seed(skills::SeedArgs),
    /// Wire skillmem into an agent host's configuration (hooks, MCP server, trust); --undo takes it out.
    #[command(after_help = help::SETUP)]
    Setup(setup::SetupArgs),
    /// The embedding model: fetch it, see what is in use, distill the static table.
    #[command(after_help = help::MODEL)]
    Model {
        #[command(subcommand)]
        what: model::ModelCommand,
    },
    /// Sync once with the team server (push local changes, pull the team's); `sync status`.
    #[command(after_help = help::SYNC)]
    Sync {
        #[command(subcommand)]
        what: Option<team::SyncCommand>,
    },
}

#[derive(Debug, Subcommand)]
pub enum HookHost {
    /// A Claude Code hook: PostToolUse (Skill), UserPromptExpansion, Stop, SessionEnd, PostCompact.
    /// Always exits 0; failures go to <data dir>/logs/claude-code-hook.log.
    ClaudeCode {
        /// The note tool's name in this Claude Code, for the guidance line (default: the
        /// plugin's, mcp__plugin_skillmem_skillmem__skill_note).
        #[arg(long, value_name = "NAME")]
        note_tool: Option<String>,
    },
    /// A Gemini CLI hook: AfterTool of activate_skill, SessionEnd. Always exits 0; failures go
    /// to <data dir>/logs/gemini-cli-hook.log.
    GeminiCli,
    /// A Codex CLI hook: PostToolUse of Bash reading a SKILL.md, UserPromptSubmit, Stop,
    /// PostCompact, SessionStart. Always exits 0; failures go to <data dir>/logs/codex-hook.log.
    Codex,
    /// A GitHub Copilot CLI hook: postToolUse of skill, sessionEnd. Always exits 0; failures go
    /// to <data dir>/logs/copilot-hook.log.
    Copilot,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// MRR@10 and recall@5 of the full cascade, of the bm25 rung alone and of a plain bm25 baseline.
    #[command(after_help = help::EVAL)]
    Recall {
        /// Labelled recall sets (the format of shared/bench/recall-dev.json); with several, a
        /// line per set and their mean at the end.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The embedder: static (default), static:TABLE, hash, off, model:PATH (local-model feature)
        /// or http:URL#MODEL.
        #[arg(long)]
        embedding: Option<String>,
    },
    /// Precision and recall of the merge rule (and of conflicting pairs) on labelled pairs of notes.
    #[command(after_help = help::EVAL_MERGE)]
    Merge {
        /// Labelled pairs, one JSON object a line: {"a": OLD, "b": NEW, "label": "same"|"update"|"distinct"}.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The embedder, as for `eval recall`: static (default), static:TABLE, hash, model:PATH or http:URL#MODEL.
        #[arg(long)]
        embedding: Option<String>,
        /// Also list every pair judged otherwise than labelled, with its cosine.
        #[arg(long)]
        verbose: bool,
    },
    /// Precision and recall of the error → fix miner on labelled transcripts of the four hosts.
    #[command(after_help = help::EVAL_MINE)]
    Mine {
        /// Labels files, one JSON object a line: {"transcript": PATH, "host", "enabled": [SKILL], "lessons": [{"failed", "fixed", "label"?}]}.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// memory.minedSupport for what a load shows: the sessions a mined lesson must recur in (default: the configuration's, 2).
        #[arg(long)]
        support: Option<u32>,
        /// Also list every labelled lesson missed, every false find, every refusal, every lesson mined and every one shown.
        #[arg(long)]
        verbose: bool,
    },
    /// Precision and recall of the use detector (used, ignored) on labelled sessions of the hosts, by the host's path.
    #[command(after_help = help::EVAL_USE)]
    Use {
        /// Labels files, one JSON object a line: {"transcript": PATH, "host", "notes": [{"id", "skill", "delta", "used", "ignored"}]}.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Also list every note judged otherwise than labelled, with the specifics and errors the rule looks for.
        #[arg(long)]
        verbose: bool,
    },
    /// Simulated sessions over a store of useful and junk lessons: the junk share of the trusted notes and of the block.
    #[command(after_help = help::EVAL_REPLAY)]
    Replay {
        /// How many sessions to replay (figures after 3, 6, 10 and the last).
        #[arg(long, default_value_t = 10)]
        sessions: usize,
        /// The generator's seed (the store and the sessions are a function of it).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The "anyway" agent: in each session that loads a skill, it runs each junk lesson's
        /// step with this probability whether the lesson was shown or not (0: never).
        #[arg(long, default_value_t = 0.0)]
        anyway: f64,
        /// Also list each session's block (useful and junk notes shown, used).
        #[arg(long)]
        verbose: bool,
    },
    /// Precision and recall of the historian's promotion filter, by category, on labelled sets.
    #[command(after_help = help::EVAL_HISTORIAN)]
    Historian {
        /// Labelled historian sets (JSONL: skill, chunk and observation records; bench/historian/).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Writes to stdout (the CLI's own output; the sidecar never calls this).
pub fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{s}");
}

pub(crate) fn emit<T: Serialize>(g: &Global, value: &T, human: impl FnOnce(&T) -> String) -> Result<()> {
    if g.json {
        out(&serde_json::to_string_pretty(value)?);
    } else {
        out(&human(value));
    }
    Ok(())
}

/// Runs a protocol method the way the server does (same params, same checks), without
/// progress.
pub(crate) fn call<M: Method>(engine: &Engine, p: M::Params) -> Result<M::Result> {
    let actor = skillmem::protocol::Actor::of_shell(|k| std::env::var(k).ok());
    Ok(M::run(engine, p, &Cx::quiet_as(actor))?)
}

pub(crate) fn engine(g: &Global) -> Result<Engine> {
    engine_for(g, None)
}

/// [`engine`] for a door of its own: notes it writes are recorded as written from `host`.
pub(crate) fn engine_as(g: &Global, host: &str) -> Result<Engine> {
    engine_with(g, None, host)
}

/// The engine of the data directory and workspace `g` names; `note_tool` is the door's name
/// for the note tool when the configuration names none.
pub(crate) fn engine_for(g: &Global, note_tool: Option<&str>) -> Result<Engine> {
    engine_with(g, note_tool, "cli")
}

fn engine_with(g: &Global, note_tool: Option<&str>, host: &str) -> Result<Engine> {
    let workspace = match &g.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let mut opts = serde_json::Map::new();
    if let Some(d) = &g.data_dir {
        opts.insert("dataDir".into(), Value::String(d.display().to_string()));
    }
    let mut resolved = Config::resolve(Some(&workspace), Some(&Value::Object(opts)))?;
    for w in &resolved.warnings {
        eprintln!("skillmem: warning: {w}");
    }
    if let Some(tool) = note_tool {
        resolved.config.default_note_tool(tool);
    }
    resolved.config.default_host(host);
    Ok(Engine::open(resolved.config, Some(workspace))?)
}

/// Runs a command; returns the process exit code.
pub fn run(cli: Cli) -> Result<u8> {
    let g = &cli.global;
    if datadir::needs_store(&cli.command) {
        datadir::require_store(g)?;
    }
    match cli.command {
        Command::Serve { .. } => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let code = rt.block_on(skillmem::server::serve());
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
            return Ok(code as u8);
        }
        Command::Note { skill, kind, delta, intent, scope, tags, replaces } => {
            let r = call::<Note>(
                &engine(g)?,
                NoteParams {
                    session_id: None,
                    host: None,
                    skill,
                    kind,
                    delta,
                    intent,
                    tags: Some(tags),
                    scope,
                    replaces,
                },
            )?;
            emit(g, &r, |r| {
                let status = serde_json::to_value(r.status).unwrap_or_default();
                let mut s = format!("note {} {}", r.id, status.as_str().unwrap_or(""));
                if !r.redacted.is_empty() {
                    s.push_str(&format!(" (redacted before storing: {})", r.redacted.join(", ")));
                }
                if let Some(old) = r.replaced {
                    s.push_str(&format!(" (note {old} is kept as history; skillmem restore {old} undoes it)"));
                }
                if let Some(older) = r.conflicts_with {
                    s.push_str(&format!(
                        "\nnote {older} reads as an older version of it: both are kept and this one leads; if note {older} no longer holds, run skillmem forget {older}"
                    ));
                }
                s
            })?;
        }
        Command::Recall { skill, intent, max_tokens, limit } => {
            let r = call::<Recall>(&engine(g)?, RecallParams { skill, intent, max_tokens, limit })?;
            emit(g, &r, |r| r.block.clone().unwrap_or_else(|| "(nothing to recall)".into()))?;
        }
        Command::Pin { id, off } => {
            let r = call::<Pin>(&engine(g)?, PinParams { id, pinned: !off })?;
            emit(g, &r, |r| format!("note {} {}", r.id, if off { "unpinned" } else { "pinned" }))?;
        }
        Command::Forget { id, reason } => {
            let r = call::<Forget>(&engine(g)?, ForgetParams { id, reason })?;
            emit(g, &r, |r| format!("note {} retired (skillmem restore {} brings it back)", r.id, r.id))?;
        }
        Command::Feedback { id, verdict, reason, session } => {
            let verdict = skillmem::engine::Verdict::parse(&verdict)
                .ok_or_else(|| anyhow::anyhow!("verdict {verdict:?}: say useful or wrong"))?;
            let r = call::<skillmem::protocol::memory::Feedback>(
                &engine(g)?,
                FeedbackParams { session_id: session, id, verdict, reason },
            )?;
            emit(g, &r, |r| match r.retired_at {
                Some(_) => format!("note {} retired as wrong (skillmem restore {} brings it back)", r.id, r.id),
                None => format!("note {}: used in {} sessions, {}", r.id, r.used, r.trust.as_str()),
            })?;
        }
        Command::Restore { id } => {
            let r = call::<Restore>(&engine(g)?, IdParams { id })?;
            emit(g, &r, |r| format!("note {} restored", r.id))?;
        }
        Command::Purge { id } => {
            let r = call::<Purge>(&engine(g)?, IdParams { id })?;
            emit(g, &r, |r| {
                let ids: Vec<String> = r.purged.iter().map(i64::to_string).collect();
                format!("purged for good: note {}", ids.join(", "))
            })?;
        }
        Command::Versions { id } => curate::versions(g, &engine(g)?, id)?,
        Command::Edit { id, delta } => {
            let r = call::<Edit>(&engine(g)?, EditParams { id, delta })?;
            emit(g, &r, |r| format!("note {} edited", r.id))?;
        }
        Command::Stats { project_id, days } => {
            let r = call::<Stats>(&engine(g)?, StatsParams { project_id, days })?;
            emit(g, &r, human_stats)?;
        }
        Command::Notes(a) => curate::notes(g, &engine(g)?, a)?,
        Command::Review { what } => review::run(g, &engine(g)?, what)?,
        Command::Export { skill, scope, format, output } => {
            let format = match format.as_str() {
                "jsonl" => skillmem::export::ExportFormat::Jsonl,
                "md" => skillmem::export::ExportFormat::Md,
                f => anyhow::bail!("format {f:?}: use jsonl or md"),
            };
            curate::export(g, &engine(g)?, skill, scope, format, output)?
        }
        Command::Import { file } => curate::import(g, &engine(g)?, &file)?,
        Command::Doctor { fix } => return curate::doctor(g, &engine(g)?, fix),
        Command::Ui { port, no_open } => curate::ui(g, port, no_open)?,
        Command::Demo => demo::run()?,
        Command::Eval { what: EvalCommand::Recall { files, embedding } } => eval::run(g, &files, embedding.as_deref())?,
        Command::Eval { what: EvalCommand::Merge { files, embedding, verbose } } => {
            eval_merge::run(g, &files, embedding.as_deref(), verbose)?
        }
        Command::Eval { what: EvalCommand::Mine { files, support, verbose } } => {
            eval_mine::run(g, &files, support, verbose)?
        }
        Command::Eval { what: EvalCommand::Use { files, verbose } } => eval_use::run(g, &files, verbose)?,
        Command::Eval { what: EvalCommand::Replay { sessions, seed, anyway, verbose } } => {
            eval_replay::run(g, sessions, seed, anyway, verbose)?
        }
        Command::Eval { what: EvalCommand::Historian { files } } => eval::historian(g, &files)?,
        Command::Chunk { format, file } => historian::chunk(g, &engine(g)?, &format, &file)?,
        Command::Observe { file, session, transcript, transcript_at } => {
            let origin = skillmem::memory::Origin { host: None, transcript, transcript_at };
            historian::observe(g, &engine(g)?, &file, session, origin)?
        }
        Command::Distill { batch_size } => historian::distill(g, &engine(g)?, batch_size)?,
        Command::Hook { host } => {
            use skillmem::hosts::hooks::{agents, claude_code, HookOptions};
            use skillmem::hosts::log_line;
            use std::io::Read;
            let mut input = String::new();
            let read = std::io::stdin().take(16 << 20).read_to_string(&mut input);
            let (agent, note_tool) = match host {
                HookHost::ClaudeCode { note_tool } => (None, note_tool),
                HookHost::GeminiCli => (Some(agents::GEMINI), None),
                HookHost::Codex => (Some(agents::CODEX), None),
                HookHost::Copilot => (Some(agents::COPILOT), None),
            };
            let opts =
                HookOptions { data_dir: g.data_dir.clone(), workspace: g.workspace.clone(), note_tool, host: None };
            let (input, failed) = match read {
                Ok(_) => (input, None),
                Err(e) => (String::new(), Some(format!("cannot read stdin: {e}"))),
            };
            let (answer, log_name) = match agent {
                None => (claude_code::answer(&input, &opts), claude_code::LOG_NAME),
                Some(a) => (agents::answer(a, &input, &opts), a.log),
            };
            let answer = match failed {
                Some(line) => answer.with_log(line),
                None => answer,
            };
            for line in &answer.log {
                log_line(&answer.data_dir, log_name, line);
            }
            if let Some(s) = &answer.stdout {
                out(s);
            }
        }
        Command::Mcp => {
            let engine = engine_with(g, Some(skillmem::hosts::mcp::NOTE_TOOL), "mcp")?;
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            rt.block_on(skillmem::hosts::mcp::serve(engine))?;
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
        }
        Command::Skills { what } => return skills::run(g, what),
        Command::Sync { what } => team::run(g, what)?,
        Command::Model { what } => model::run(g, what)?,
        Command::Seed(args) => skills::seed(g, args)?,
        Command::Setup(args) => setup::run(g, args)?,
    }
    Ok(0)
}

/// `YYYY-MM-DD` (UTC) of a time in ms since the epoch.
fn day_of(ms: i64) -> String {
    skillmem::db::day_of(ms)
}

fn human_stats(s: &StatsResult) -> String {
    let mut t = format!("project {}\n{} notes, {} pinned\n", s.project_id, s.notes, s.pinned);
    for k in &s.skills {
        let used = match k.last_used {
            Some(ms) => format!("{:>4} sessions, last {}", k.sessions, day_of(ms)),
            None => "never used".to_string(),
        };
        t.push_str(&format!(
            "  {:<24} {:>6} notes {:>4} pinned {:>6} recalls   {used}\n",
            k.skill, k.notes, k.pinned, k.recalls
        ));
    }
    if !s.uses_by_day.is_empty() {
        t.push_str("skills used per day (sessions):\n");
        let mut days: Vec<(&str, Vec<String>)> = vec![];
        for u in &s.uses_by_day {
            let item = format!("{} ({})", u.skill, u.sessions);
            match days.last_mut() {
                Some((d, items)) if *d == u.day => items.push(item),
                _ => days.push((&u.day, vec![item])),
            }
        }
        for (d, items) in days {
            t.push_str(&format!("  {d}  {}\n", items.join(", ")));
        }
    }
    t.push_str(&format!(
        "embedding {} (dim {}), {} notes without a current vector",
        s.embedding.model.as_deref().unwrap_or("off"),
        s.embedding.dim.map(|d| d.to_string()).unwrap_or_else(|| "-".into()),
        s.embedding.stale
    ));
    t
}

#[cfg(test)]
mod tests {
    #[test]
    fn days_of_times() {
        // (ms since the epoch, UTC day)
        let cases = [
            (0, "1970-01-01"),
            (86_399_999, "1970-01-01"),
            (86_400_000, "1970-01-02"),
            (951_782_400_000, "2000-02-29"),
            (1_796_044_589_993, "2026-11-30"),
            (-1, "1969-12-31"),
        ];
        for (ms, day) in cases {
            assert_eq!(super::day_of(ms), day, "{ms}");
        }
    }
}
