//! `skillmem mcp`: a stdio MCP server for every MCP-capable agent (Claude Code, Codex,
//! Cursor, ...), on the same store as the sidecar: the note tools `skill_note`,
//! `skill_recall`, `skill_pin`, `skill_forget`, and the session-skills operations
//! `skills_list`, `skills_install`, `skills_update`, `skills_remove`, `skills_resolve`,
//! `skills_seed` (the `skillmem/skills/*` methods, same params and results).
//!
//! Built on rmcp (the official Rust SDK), tools declared by hand: fixed JSON Schemas are
//! clearer than a macro layer. `skills_install` and `skills_update` send
//! `notifications/progress` when the call carries a progress token. Tool failures are tool results with `isError` (the agent
//! reads the message and can correct itself); only an unknown tool is a protocol error.
//! Owns stdout for MCP frames; logs go to stderr.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use crate::engine::Engine;
use crate::error::Error;
use crate::memory::WriteStatus;
use crate::protocol::memory::{ForgetParams, NoteParams, PinParams, RecallParams};
use crate::protocol::skills::{
    InstallParams, ListResult, RemoveParams, ResolveParams, SeedOp, SeedParams, SeedResult, SkillInfo, UpdateParams,
};
use crate::skills::Progress;

/// Every tool name, for the unknown-tool error.
const TOOL_NAMES: &str = "skill_note, skill_recall, skill_pin, skill_forget, skills_list, skills_install, skills_update, skills_remove, skills_resolve, skills_seed";

/// What session skills are, said once for the skills_* descriptions.
const SESSION_SKILLS: &str = "Session skills are skills installed from git repositories into skillmem's store, pinned to a commit, and copied into one session's working folder by skills_seed (never installed globally, never committed by git).";

/// The four kinds, said once for every tool description that needs them.
const KINDS: &str = "Kinds: gotcha (a trap that cost time), discovery (a fact about the skill or its tools you had to find out), fix (an error message and what fixed it; quote the error), workflow (a step that must not be skipped, or an order that matters).";

/// The MCP server over one engine.
pub struct SkillMcp {
    engine: Arc<Engine>,
}

impl SkillMcp {
    pub fn new(engine: Engine) -> Self {
        Self { engine: Arc::new(engine) }
    }
}

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The tools, with their input schemas.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "skill_note",
            format!("Save a lesson about a skill to skill memory, so that the next load of that skill shows it. Write a note only when you hit a gotcha, made a discovery, fixed an error, or found a step that must not be skipped; never for routine progress. One lesson per note, one or two sentences, concrete enough to act on without this conversation. {KINDS} Notes are per project unless scope is \"global\"."),
            schema(json!({
                "type": "object",
                "properties": {
                    "skill": { "type": "string", "description": "The skill the lesson is about (its name, as loaded)" },
                    "kind": { "type": "string", "enum": ["gotcha", "discovery", "fix", "workflow"] },
                    "delta": { "type": "string", "description": "The lesson itself, in one or two sentences" },
                    "intent": { "type": "string", "description": "What you were doing when you learned it" },
                    "scope": { "type": "string", "enum": ["project", "global"], "description": "project (default): this project only; global: every project" },
                    "tags": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["skill", "kind", "delta"]
            })),
        ),
        Tool::new(
            "skill_recall",
            format!("Read skill memory: the lessons saved for a skill, most relevant first for the intent you give. {KINDS}"),
            schema(json!({
                "type": "object",
                "properties": {
                    "skill": { "type": "string", "description": "The skill whose lessons to read" },
                    "intent": { "type": "string", "description": "What you are about to do (ranks the lessons)" },
                    "maxTokens": { "type": "integer", "minimum": 1 },
                    "limit": { "type": "integer", "minimum": 1 }
                },
                "required": ["skill"]
            })),
        ),
        Tool::new(
            "skill_pin",
            "Pin a note so that every load of its skill shows it (or unpin it with pinned: false).",
            schema(json!({
                "type": "object",
                "properties": {
                    "id": { "type": "integer", "description": "The note's id, as shown in <note id=...>" },
                    "pinned": { "type": "boolean", "default": true }
                },
                "required": ["id"]
            })),
        ),
        Tool::new(
            "skill_forget",
            "Delete a note that is wrong or no longer true.",
            schema(json!({
                "type": "object",
                "properties": { "id": { "type": "integer", "description": "The note's id, as shown in <note id=...>" } },
                "required": ["id"]
            })),
        ),
        Tool::new(
            "skills_list",
            format!("List the session skills installed in skillmem's store, grouped by the git source they came from, with the commit each source is pinned to and any warnings. {SESSION_SKILLS}"),
            schema(json!({ "type": "object", "properties": {} })),
        ),
        Tool::new(
            "skills_install",
            format!("Install every skill of a git repository into skillmem's store, pinned to the commit `ref` names (default: the repository's HEAD). Installing a source again updates it. Writes nothing into any project; use skills_seed for that. The repository must hold skills/<name>/SKILL.md folders or a root SKILL.md; every skill is validated before anything is written. {SESSION_SKILLS}"),
            schema(json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "The git repository: an https, http, ssh, git or file:// URL, user@host:path, or an absolute local path" },
                    "ref": { "type": "string", "description": "Branch, tag or commit to pin to; default the repository's HEAD" }
                },
                "required": ["url"]
            })),
        ),
        Tool::new(
            "skills_update",
            "Fetch an installed source again at the ref it was installed with (a branch moves on, a tag or commit stays), or re-pin it to `ref`. Skills the source no longer has are removed from the store.",
            schema(json!({
                "type": "object",
                "properties": {
                    "source": { "type": "string", "description": "The source as skills_list shows it" },
                    "ref": { "type": "string", "description": "Re-pin to this branch, tag or commit instead" }
                },
                "required": ["source"]
            })),
        ),
        Tool::new(
            "skills_remove",
            "Remove an installed source and its skills from skillmem's store. Copies already seeded into projects are left where they are (a later seed of that folder removes them).",
            schema(json!({
                "type": "object",
                "properties": { "source": { "type": "string", "description": "The source as skills_list shows it" } },
                "required": ["source"]
            })),
        ),
        Tool::new(
            "skills_resolve",
            "Resolve the skills a session should get: the union of the global, list and task names in first-seen order without duplicates. Names that are not installed are dropped (reported in `dropped`), never an error.",
            schema(json!({
                "type": "object",
                "properties": {
                    "global": { "type": "array", "items": { "type": "string" }, "description": "Skills every session gets" },
                    "list": { "type": "array", "items": { "type": "string" }, "description": "Skills of the task list" },
                    "task": { "type": "array", "items": { "type": "string" }, "description": "Skills of this task" }
                }
            })),
        ),
        Tool::new(
            "skills_seed",
            "Copy installed skills into a session's working folder, <cwd>/<target>/<name>/, so that the agent started there finds them. Each copy gets a .gitignore of its own, so git never stages it, even with `git add -A`. Seeding the same folder again replaces our earlier copies and removes the ones no longer named; folders not seeded by skillmem, or tracked by git, are never touched (`skip`). Every name must be installed. Seed before the session starts: a host may read its skill folders only when it starts.",
            schema(json!({
                "type": "object",
                "properties": {
                    "cwd": { "type": "string", "description": "Absolute path of the session's working folder (must exist)" },
                    "skills": { "type": "array", "items": { "type": "string" }, "description": "The skill names to seed (skills_resolve gives them)" },
                    "target": { "type": "string", "description": "Folder under cwd, relative, without '..': .claude/skills (default), .opencode/skills, .agents/skills, ..." },
                    "dryRun": { "type": "boolean", "default": false, "description": "Report the actions without writing anything" }
                },
                "required": ["cwd", "skills"]
            })),
        ),
    ]
}

/// `name (description)` lines of installed skills, with their warnings.
fn skill_lines(skills: &[SkillInfo]) -> String {
    let mut t = String::new();
    for s in skills {
        t.push_str(&format!("\n- {}", s.name));
        if !s.description.is_empty() {
            t.push_str(&format!(": {}", s.description));
        }
        for w in &s.warnings {
            t.push_str(&format!("\n  warning: {w}"));
        }
    }
    t
}

/// The text of an install or update: what the source now has and what it dropped.
fn installed_text(verb: &str, skills: &[SkillInfo], removed: &[String]) -> String {
    let mut t = match skills.first() {
        Some(s) => format!(
            "{verb} {} skill(s) from {} at {}:",
            skills.len(),
            s.source,
            &s.pinned_ref[..s.pinned_ref.len().min(12)]
        ),
        None => format!("{verb}: the source has no skills."),
    };
    t.push_str(&skill_lines(skills));
    if !removed.is_empty() {
        t.push_str(&format!("\nRemoved (no longer in the source): {}", removed.join(", ")));
    }
    t
}

fn list_text(r: &ListResult) -> String {
    if r.sources.is_empty() {
        return "No session skills installed.".into();
    }
    let mut t = Vec::new();
    for s in &r.sources {
        let at = &s.pinned_ref[..s.pinned_ref.len().min(12)];
        let asked = s.requested_ref.as_deref().map(|r| format!(" (ref {r})")).unwrap_or_default();
        t.push(format!("{} at {at}{asked}:{}", s.source, skill_lines(&s.skills)));
    }
    t.join("\n")
}

fn seed_text(r: &SeedResult, dry_run: bool) -> String {
    let mut t: Vec<String> = r
        .actions
        .iter()
        .map(|x| {
            let op = match x.op {
                SeedOp::Copy => "copy",
                SeedOp::Ignore => "ignore",
                SeedOp::Remove => "remove",
                SeedOp::Skip => "skip",
            };
            match &x.reason {
                Some(why) => format!("{op} {} {} ({why})", x.skill, x.path),
                None => format!("{op} {} {}", x.skill, x.path),
            }
        })
        .collect();
    if t.is_empty() {
        t.push("Nothing to seed.".into());
    }
    t.extend(r.warnings.iter().map(|w| format!("warning: {w}")));
    if dry_run {
        t.push("(dry run: nothing written)".into());
    }
    t.join("\n")
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> crate::Result<T> {
    serde_json::from_value(args).map_err(|e| Error::invalid(format!("{tool}: invalid arguments: {e}")))
}

/// Runs one tool on the engine: `(text for the agent, structured result)`. `progress` hears
/// the progress of `skills_install` and `skills_update`.
pub fn call(
    engine: &Engine,
    tool: &str,
    args: Value,
    progress: &dyn Fn(Progress),
) -> Option<crate::Result<(String, Value)>> {
    let r = match tool {
        "skill_note" => parse::<NoteParams>(tool, args).and_then(|p| engine.note(p)).map(|r| {
            let text = match r.status {
                WriteStatus::Duplicate => format!("Already known (note {}); its weight went up.", r.id),
                _ => format!("Saved as note {}.", r.id),
            };
            (text, json!(r))
        }),
        "skill_recall" => parse::<RecallParams>(tool, args).and_then(|p| {
            let skill = p.skill.clone();
            engine.recall(p).map(|r| {
                let text = r.block.clone().unwrap_or_else(|| format!("No lessons saved for {skill} yet."));
                (text, json!(r))
            })
        }),
        "skill_pin" => {
            let mut args = args;
            if let Some(o) = args.as_object_mut() {
                o.entry("pinned").or_insert(json!(true));
            }
            parse::<PinParams>(tool, args).and_then(|p| {
                let pinned = p.pinned;
                engine
                    .pin(p)
                    .map(|r| (format!("Note {} {}.", r.id, if pinned { "pinned" } else { "unpinned" }), json!(r)))
            })
        }
        "skill_forget" => parse::<ForgetParams>(tool, args)
            .and_then(|p| engine.forget(p))
            .map(|r| (format!("Note {} forgotten.", r.id), json!(r))),
        "skills_list" => engine.skills_list().map(|r| (list_text(&r), json!(r))),
        "skills_install" => parse::<InstallParams>(tool, args)
            .and_then(|p| engine.skills_install(p, progress))
            .map(|r| (installed_text("Installed", &r.skills, &r.removed), json!(r))),
        "skills_update" => parse::<UpdateParams>(tool, args)
            .and_then(|p| engine.skills_update(p, progress))
            .map(|r| (installed_text("Updated", &r.skills, &r.removed), json!(r))),
        "skills_remove" => parse::<RemoveParams>(tool, args).and_then(|p| engine.skills_remove(p)).map(|r| {
            let text = if r.removed.is_empty() {
                "Removed the source; it had no skills.".to_string()
            } else {
                format!("Removed: {}.", r.removed.join(", "))
            };
            (text, json!(r))
        }),
        "skills_resolve" => parse::<ResolveParams>(tool, args).and_then(|p| engine.skills_resolve(p)).map(|r| {
            let mut text =
                if r.skills.is_empty() { "No installed skill resolved.".to_string() } else { r.skills.join("\n") };
            if !r.dropped.is_empty() {
                text.push_str(&format!("\n(dropped, not installed: {})", r.dropped.join(", ")));
            }
            (text, json!(r))
        }),
        "skills_seed" => parse::<SeedParams>(tool, args).and_then(|p| {
            let dry_run = p.dry_run;
            engine.skills_seed(p).map(|r| (seed_text(&r, dry_run), json!(r)))
        }),
        _ => return None,
    };
    Some(r)
}

impl ServerHandler for SkillMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("skillmem", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skill memory: lessons agents saved about skills. When a skill taught you a gotcha, a discovery, an error fix or a must-not-skip step, save it with skill_note; read them with skill_recall. Session skills: skills_install pins skills from a git repository, skills_seed copies them into a session's working folder (before that session starts).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let engine = self.engine.clone();
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let n = name.clone();
        // Progress of a long call (a clone) goes out as notifications/progress, strictly
        // increasing as MCP asks, all of it before the result.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
        let pump = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                let mut last = -1.0_f64;
                while let Some(p) = rx.recv().await {
                    let Some(pct) = p.percent.map(f64::from).filter(|&pct| pct > last) else { continue };
                    last = pct;
                    let note =
                        ProgressNotificationParam::new(token.clone(), pct).with_total(100.0).with_message(p.message);
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            })
        });
        let out = tokio::task::spawn_blocking(move || call(&engine, &n, args, &|p| drop(tx.send(p))))
            .await
            .map_err(|e| McpError::internal_error(format!("internal error (a bug in skillmem): {e}"), None))?;
        if let Some(pump) = pump {
            let _ = pump.await;
        }
        match out {
            None => Err(McpError::invalid_params(format!("unknown tool {name:?}; the tools are {TOOL_NAMES}"), None)),
            Some(Ok((text, structured))) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(structured);
                Ok(r.into())
            }
            Some(Err(e)) => {
                let mut r = CallToolResult::error(vec![ContentBlock::text(e.to_string())]);
                r.structured_content = Some(json!({ "error": { "kind": e.kind(), "message": e.to_string() } }));
                Ok(r.into())
            }
        }
    }
}

/// Serves MCP on stdin/stdout until the client disconnects.
pub async fn serve(engine: Engine) -> anyhow::Result<()> {
    let running = SkillMcp::new(engine).serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
