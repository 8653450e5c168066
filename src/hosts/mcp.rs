//! `skillmem mcp`: a stdio MCP server with the note tools, for every MCP-capable agent
//! (Claude Code, Codex, Cursor, ...): `skill_note`, `skill_recall`, `skill_pin`,
//! `skill_forget`, on the same store as the sidecar.
//!
//! Built on rmcp (the official Rust SDK), tools declared by hand: four fixed JSON Schemas
//! are clearer than a macro layer. Tool failures are tool results with `isError` (the agent
//! reads the message and can correct itself); only an unknown tool is a protocol error.
//! Owns stdout for MCP frames; logs go to stderr.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use crate::engine::Engine;
use crate::error::Error;
use crate::memory::WriteStatus;
use crate::protocol::memory::{ForgetParams, NoteParams, PinParams, RecallParams};

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
    ]
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> crate::Result<T> {
    serde_json::from_value(args).map_err(|e| Error::invalid(format!("{tool}: invalid arguments: {e}")))
}

/// Runs one tool on the engine: `(text for the agent, structured result)`.
pub fn call(engine: &Engine, tool: &str, args: Value) -> Option<crate::Result<(String, Value)>> {
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
        _ => return None,
    };
    Some(r)
}

impl ServerHandler for SkillMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("skillmem", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skill memory: lessons agents saved about skills. When a skill taught you a gotcha, a discovery, an error fix or a must-not-skip step, save it with skill_note; read them with skill_recall.",
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let engine = self.engine.clone();
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let n = name.clone();
        let out = tokio::task::spawn_blocking(move || call(&engine, &n, args))
            .await
            .map_err(|e| McpError::internal_error(format!("internal error (a bug in skillmem): {e}"), None))?;
        match out {
            None => Err(McpError::invalid_params(
                format!("unknown tool {name:?}; the tools are skill_note, skill_recall, skill_pin, skill_forget"),
                None,
            )),
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
