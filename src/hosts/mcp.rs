//! `skillmem mcp`: a stdio MCP server for every MCP-capable agent (Claude Code, Codex,
//! Cursor, ...), on the same store as the sidecar: the note tools `skill_note`,
//! `skill_recall`, `skill_pin`, `skill_forget`, `skill_feedback`, and the session-skills operations
//! `skills_list`, `skills_install`, `skills_update`, `skills_remove`, `skills_resolve`,
//! `skills_seed`, `skills_audit`, `skills_verify`, `skills_lock`, `skills_install_locked` (the `skillmem/skills/*` methods, same params and results).
//!
//! Built on rmcp (the official Rust SDK). Every tool is a method of the protocol's table
//! (`protocol::for_each_method!`): its input schema is the method's generated params schema,
//! its structured result the method's result; this file adds the tool's name, description and
//! the text an agent reads. `skills_install` and `skills_update` send
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

use crate::engine::{
    Audited, Engine, Installed, Locked, LockedInstall, Recalled, Removed, Resolved, Seeded, Sources, Verified, Written,
};
use crate::engine::{FeedbackResult, OWN_SESSION_PREFIX};
use crate::error::Error;
use crate::memory::WriteStatus;
use crate::progress::Progress;
use crate::protocol::memory::{
    Feedback, FeedbackParams, Forget, ForgetParams, IdResult, Note, NoteParams, Pin, PinParams, Recall, RecallParams,
};
use crate::protocol::skills::{
    Audit, AuditParams, Install, InstallLocked, InstallLockedParams, InstallParams, List, ListParams, Lock, LockParams,
    Remove, RemoveParams, Resolve, ResolveParams, Seed, SeedParams, Update, UpdateParams, Verify, VerifyParams,
};
use crate::protocol::{self, Cx, Method};
use crate::skills::{Offered, SeedOp, SkillInfo};

/// What session skills are, said once for the skills_* descriptions.
const SESSION_SKILLS: &str = "Session skills are skills installed from git repositories into skillmem's store, pinned to a commit, and copied into one session's working folder by skills_seed (never installed globally, never committed by git).";

/// The four kinds, said once for every tool description that needs them.
const KINDS: &str = "Kinds: gotcha (a trap that cost time), discovery (a fact about the skill or its tools you had to find out), fix (an error message and what fixed it; quote the error), workflow (a step that must not be skipped, or an order that matters).";

/// The MCP server over one engine.
pub struct SkillMcp {
    engine: Arc<Engine>,
    /// The session notes and feedback are recorded under ([`session_of_process`]).
    session: String,
}

impl SkillMcp {
    pub fn new(engine: Engine) -> Self {
        Self { engine: Arc::new(engine), session: session_of_process(|k| std::env::var(k).ok()) }
    }
}

/// The session this MCP server serves: a host runs one server per session. The host's session
/// id where it exposes one to the server's environment (`SKILLMEM_SESSION_ID`, Codex's
/// `CODEX_THREAD_ID`), else one of this process's own (`mcp:<pid>-<start ms>`).
pub fn session_of_process(var: impl Fn(&str) -> Option<String>) -> String {
    for k in ["SKILLMEM_SESSION_ID", "CODEX_THREAD_ID"] {
        if let Some(v) = var(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            return v;
        }
    }
    format!("{OWN_SESSION_PREFIX}{}-{}", std::process::id(), crate::db::now_ms())
}

/// The name the guidance line gives the note tool, unless the configuration names one.
pub const NOTE_TOOL: &str = "skill_note";

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// An MCP tool: a method of the protocol's table under the name agents see, with its
/// description and the text the agent reads. Its input schema is the method's params schema
/// ([`input_schema`]); its structured result is the method's result.
trait McpTool: Method {
    const TOOL: &'static str;
    fn description() -> String;
    fn text(p: &Self::Params, r: &Self::Result) -> String;
}

/// The tools, in the order listed: each a method of the protocol's table.
macro_rules! for_each_tool {
    ($callback:ident) => {
        $callback!(
            Note,
            Recall,
            Pin,
            Forget,
            Feedback,
            List,
            Install,
            Update,
            Remove,
            Resolve,
            Seed,
            Audit,
            Verify,
            Lock,
            InstallLocked
        )
    };
}

/// Params an agent has no use for: progress goes through MCP's own token, and the session
/// is the MCP connection's.
const HIDDEN: &[&str] = &["workDoneToken", "sessionId", "host"];

/// The JSON Schema of a method's params as an MCP tool's input schema: the generated schema
/// without the params an agent has no use for, their definitions, or the schema's title.
pub fn input_schema<M: Method>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(M::Params)).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        for k in ["$schema", "title", "description"] {
            o.remove(k);
        }
        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
            for h in HIDDEN {
                props.remove(*h);
            }
        }
        if let Some(req) = o.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| !r.as_str().is_some_and(|r| HIDDEN.contains(&r)));
        }
        let refs = serde_json::to_string(o.get("properties").unwrap_or(&Value::Null)).unwrap_or_default();
        if !refs.contains("$ref") {
            o.remove("$defs");
        }
        o.entry("properties").or_insert_with(|| json!({}));
    }
    v
}

macro_rules! tool_list {
    ($($t:ty),*) => {
        vec![$(Tool::new(<$t as McpTool>::TOOL, <$t as McpTool>::description(), schema(input_schema::<$t>()))),*]
    };
}

/// The tools, with their input schemas.
pub fn tools() -> Vec<Tool> {
    for_each_tool!(tool_list)
}

macro_rules! tool_names {
    ($($t:ty),*) => {
        &[$(<$t as McpTool>::TOOL),*]
    };
}

/// Every tool name, for the unknown-tool error.
const TOOL_NAMES: &[&str] = for_each_tool!(tool_names);

impl McpTool for Note {
    const TOOL: &'static str = "skill_note";
    fn description() -> String {
        format!("Save a lesson about a skill to skill memory, so that the next load of that skill shows it. Write a note only when you hit a gotcha, made a discovery, fixed an error, or found a step that must not be skipped; never for routine progress, and never a fix that weakens safety (a force push, --no-verify, rm -rf, reset --hard, disabled TLS checks, warnings or tests silenced). One lesson per note, one or two sentences, concrete enough to act on without this conversation. {KINDS} Notes are per project unless scope is \"global\". To correct a note that is wrong or outdated, pass its id as replaces: the new lesson takes its place.")
    }
    fn text(_: &NoteParams, r: &Written) -> String {
        let mut s = match (r.status, r.replaced) {
            (WriteStatus::Duplicate, _) => format!("Already known (note {}); its weight went up.", r.id),
            (WriteStatus::Replaced, Some(old)) => format!("Saved as note {}, in the place of note {old}.", r.id),
            _ => format!("Saved as note {}.", r.id),
        };
        if let Some(older) = r.conflicts_with {
            s.push_str(&format!(" Note {older} reads as an older version of it; both are kept and the new one leads. If note {older} no longer holds, replace or forget it."));
        }
        if !r.redacted.is_empty() {
            s.push_str(&format!(
                " Redacted before storing: {}; never put credentials in notes.",
                r.redacted.join(", ")
            ));
        }
        s
    }
}

impl McpTool for Recall {
    const TOOL: &'static str = "skill_recall";
    fn description() -> String {
        format!(
            "Read skill memory: the lessons saved for a skill, most relevant first for the intent you give. {KINDS}"
        )
    }
    fn text(p: &RecallParams, r: &Recalled) -> String {
        r.block.clone().unwrap_or_else(|| format!("No lessons saved for {} yet.", p.skill))
    }
}

impl McpTool for Pin {
    const TOOL: &'static str = "skill_pin";
    fn description() -> String {
        "Pin a note so that every load of its skill shows it (or unpin it with pinned: false).".into()
    }
    fn text(p: &PinParams, r: &IdResult) -> String {
        format!("Note {} {}.", r.id, if p.pinned { "pinned" } else { "unpinned" })
    }
}

impl McpTool for Forget {
    const TOOL: &'static str = "skill_forget";
    fn description() -> String {
        "Retire a note that is wrong or no longer true (give the reason): it leaves recall and is kept as history, restorable. To correct it instead, use skill_note with replaces.".into()
    }
    fn text(_: &ForgetParams, r: &IdResult) -> String {
        format!("Note {} retired (kept as history; it can be restored).", r.id)
    }
}

impl McpTool for Feedback {
    const TOOL: &'static str = "skill_feedback";
    fn description() -> String {
        "Say whether a note from skill memory helped: verdict useful when you applied it and it worked (a note used in a later session than the one that wrote it is trusted), or wrong when it does not hold (it is retired with your reason, restorable). Notes marked trust=\"unverified\" are unproven until then.".into()
    }
    fn text(p: &FeedbackParams, r: &FeedbackResult) -> String {
        match (p.verdict, r.retired_at) {
            (_, Some(_)) => format!("Note {} retired as wrong (kept as history; it can be restored).", r.id),
            _ => format!("Noted: note {} helped (used in {} sessions; {}).", r.id, r.used, r.trust.as_str()),
        }
    }
}

impl McpTool for List {
    const TOOL: &'static str = "skills_list";
    fn description() -> String {
        format!("List the session skills installed in skillmem's store, grouped by the git source they came from, with the commit each source is pinned to and any warnings. {SESSION_SKILLS}")
    }
    fn text(_: &ListParams, r: &Sources) -> String {
        list_text(r)
    }
}

impl McpTool for Install {
    const TOOL: &'static str = "skills_install";
    fn description() -> String {
        format!("Install the skills of a git repository into skillmem's store, pinned to the commit `ref` names (default: the repository's HEAD). Installing a source again updates it. Writes nothing into any project; use skills_seed for that. Found: the plugins of a .claude-plugin/marketplace.json, skills/<name>/SKILL.md, else every folder holding a SKILL.md at any depth. With list: true, says what the repository offers (name, plugin, subpath, description) and installs nothing; path installs only the skills in that folder, skills only the named ones (a subpath picks one of two skills of one name), as renames the one chosen skill. A skill that fails its checks, or whose name is offered twice or installed from another source, is not installed (`refused`, with the way out); the rest is. Every skill is audited (skills_audit) before anything is written: a skill the audit blocks is refused with its findings in `refused`, unless acceptRisk names every rule it blocks on (then the acceptance is recorded in its warnings). {SESSION_SKILLS}")
    }
    fn text(_: &InstallParams, r: &Installed) -> String {
        if let Some(offered) = &r.offered {
            return offered_text(offered);
        }
        installed_text("Installed", r)
    }
}

impl McpTool for Update {
    const TOOL: &'static str = "skills_update";
    fn description() -> String {
        "Fetch an installed source again at the ref it was installed with (a branch moves on, a tag or commit stays), or re-pin it to `ref`. Skills the source no longer has are removed from the store. Pass preview: true to see first what would change (files, commits, the audit's verdict and new findings) without writing anything.".into()
    }
    fn text(_: &UpdateParams, r: &Installed) -> String {
        if let Some(p) = &r.plan {
            let short = |c: &str| c[..c.len().min(12)].to_string();
            let mut t =
                format!("Update of {} from {} to {} (nothing written):", p.source, short(&p.from), short(&p.to));
            for l in &p.log {
                t.push_str(&format!("\n  {l}"));
            }
            for k in &p.skills {
                let v = k.verdict.map(|v| format!(", audit {}", v.as_str())).unwrap_or_default();
                t.push_str(&format!(
                    "\n- {} {}{v}: {} changed, {} added, {} removed file(s), {} new finding(s)",
                    k.name,
                    k.status,
                    k.files.changed.len(),
                    k.files.added.len(),
                    k.files.removed.len(),
                    k.new_findings.len()
                ));
            }
            return t;
        }
        installed_text("Updated", r)
    }
}

impl McpTool for Remove {
    const TOOL: &'static str = "skills_remove";
    fn description() -> String {
        "Remove an installed source and its skills from skillmem's store. Copies already seeded into projects are left where they are (a later seed of that folder removes them).".into()
    }
    fn text(_: &RemoveParams, r: &Removed) -> String {
        if r.removed.is_empty() {
            "Removed the source; it had no skills.".to_string()
        } else {
            format!("Removed: {}.", r.removed.join(", "))
        }
    }
}

impl McpTool for Resolve {
    const TOOL: &'static str = "skills_resolve";
    fn description() -> String {
        "Resolve the skills a session should get: the union of the global, list and task names in first-seen order without duplicates. Names that are not installed are dropped (reported in `dropped`), never an error.".into()
    }
    fn text(_: &ResolveParams, r: &Resolved) -> String {
        let mut text =
            if r.skills.is_empty() { "No installed skill resolved.".to_string() } else { r.skills.join("\n") };
        if !r.dropped.is_empty() {
            text.push_str(&format!("\n(dropped, not installed: {})", r.dropped.join(", ")));
        }
        text
    }
}

impl McpTool for Seed {
    const TOOL: &'static str = "skills_seed";
    fn description() -> String {
        "Copy installed skills into a session's working folder, <cwd>/<target>/<name>/, so that the agent started there finds them. Each copy gets a .gitignore of its own, so git never stages it, even with `git add -A`. Seeding the same folder again replaces our earlier copies and removes the ones no longer named; folders not seeded by skillmem, or tracked by git, are never touched (`skip`). Every name must be installed. Seed before the session starts: a host may read its skill folders only when it starts.".into()
    }
    fn text(p: &SeedParams, r: &Seeded) -> String {
        seed_text(r, p.dry_run)
    }
}

impl McpTool for Audit {
    const TOOL: &'static str = "skills_audit";
    fn description() -> String {
        "Audit skill folders without running anything: hidden text, instructions that hide from or override the user, fetch-and-run, credential access with network egress, exfiltration endpoints, persistence, obfuscation, binaries, destructive commands, broad allowed-tools. `targets` are installed skill names or absolute folder paths (none: every installed skill). Each folder gets a verdict: block (a critical or high finding), warn (medium) or ok, with each finding's rule, file, line, excerpt (secrets redacted) and why.".into()
    }
    fn text(_: &AuditParams, r: &Audited) -> String {
        let mut t = String::new();
        for rep in &r.reports {
            t.push_str(&format!("{}: {} ({} finding(s))\n", rep.skill, rep.verdict.as_str(), rep.findings.len()));
            for f in &rep.findings {
                let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
                t.push_str(&format!("- {} {} at {at}: {}\n", f.severity.as_str(), f.rule, f.why));
            }
        }
        if r.reports.is_empty() {
            t.push_str("Nothing to audit: no skill is installed.");
        }
        t.trim_end().to_string()
    }
}

impl McpTool for Verify {
    const TOOL: &'static str = "skills_verify";
    fn description() -> String {
        "Check that the installed skills' stored files still match the digests they were installed with, and, with cwd, that the copies seeded under cwd still match the store. Returns each skill and file that differs (changed, added, removed) and what to do.".into()
    }
    fn text(_: &VerifyParams, r: &Verified) -> String {
        if r.drift.is_empty() {
            return format!("All {} installed skill(s) match their digests.", r.checked);
        }
        r.drift.iter().map(|d| format!("- {} ({}): {}", d.skill, d.place, d.message)).collect::<Vec<_>>().join("\n")
    }
}

impl McpTool for Lock {
    const TOOL: &'static str = "skills_lock";
    fn description() -> String {
        "Write skillmem.lock in the workspace (or `dir`): every installed source with its ref, commit and choices, and per skill its content hash, its digest (SHA-256 over sorted relative paths and bytes) and the audit's verdict. skills_install_locked installs exactly that elsewhere.".into()
    }
    fn text(_: &LockParams, r: &Locked) -> String {
        let n: usize = r.lock.sources.iter().map(|s| s.skills.len()).sum();
        format!("Wrote {}: {} source(s), {n} skill(s).", r.path, r.lock.sources.len())
    }
}

impl McpTool for InstallLocked {
    const TOOL: &'static str = "skills_install_locked";
    fn description() -> String {
        "Install exactly what skillmem.lock in the workspace (or `dir`) says: each source at its locked commit with its choices, audited as any install; returns every mismatch with the lock (a skill missing, extra, or with other content).".into()
    }
    fn text(_: &InstallLockedParams, r: &LockedInstall) -> String {
        let mut t = format!("Installed {} skill(s) from {}.", r.skills.len(), r.path);
        for m in &r.mismatches {
            t.push_str(&format!("\nmismatch: {m}"));
        }
        t
    }
}

/// `name (description)` lines of installed skills, with their warnings.
fn skill_lines(skills: &[SkillInfo]) -> String {
    let mut t = String::new();
    for s in skills {
        t.push_str(&format!("\n- {}", s.name));
        if let Some(p) = &s.plugin {
            t.push_str(&format!(" (plugin {p})"));
        }
        if !s.description.is_empty() {
            t.push_str(&format!(": {}", s.description));
        }
        for w in &s.warnings {
            t.push_str(&format!("\n  warning: {w}"));
        }
    }
    t
}

/// What a repository offers (`list`).
fn offered_text(offered: &[Offered]) -> String {
    if offered.is_empty() {
        return "The repository offers no skills.".into();
    }
    let mut t = format!("The repository offers {} skill(s) (nothing installed):", offered.len());
    for o in offered {
        t.push_str(&format!("\n- {} ({}", o.name, o.subpath));
        if let Some(p) = &o.plugin {
            t.push_str(&format!(", plugin {p}"));
        }
        t.push(')');
        if !o.description.is_empty() {
            t.push_str(&format!(": {}", o.description));
        }
        if let Some(p) = &o.problem {
            t.push_str(&format!("\n  problem: {p}"));
        }
    }
    t
}

/// The text of an install or update: what the source now has, what it dropped and what it
/// refused.
fn installed_text(verb: &str, r: &Installed) -> String {
    let (skills, removed) = (&r.skills, &r.removed);
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
    if !r.refused.is_empty() {
        t.push_str(&format!("\nNot installed ({}):", r.refused.len()));
        for x in &r.refused {
            t.push_str(&format!("\n- {} ({}): {}", x.name, x.subpath, x.reason));
        }
    }
    t
}

fn list_text(r: &Sources) -> String {
    if r.sources.is_empty() {
        return "No session skills installed.".into();
    }
    let mut t = Vec::new();
    for s in &r.sources {
        let at = &s.pinned_ref[..s.pinned_ref.len().min(12)];
        let mut asked = s.requested_ref.as_deref().map(|r| format!(" (ref {r})")).unwrap_or_default();
        if !s.choices.is_empty() {
            let c: Vec<String> = s
                .choices
                .iter()
                .map(|c| if c.is_all() { "every skill".into() } else { serde_json::to_string(c).unwrap_or_default() })
                .collect();
            asked.push_str(&format!(" (chosen: {})", c.join(", ")));
        }
        t.push(format!("{} at {at}{asked}:{}", s.source, skill_lines(&s.skills)));
    }
    let mut text = t.join("\n");
    if !r.usage.is_empty() {
        text.push_str("\nLoads seen:");
        for u in &r.usage {
            text.push_str(&format!("\n- {}: {} (by {})", u.skill, u.loads, u.hosts.join(", ")));
        }
    }
    text
}

fn seed_text(r: &Seeded, dry_run: bool) -> String {
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

/// Runs one tool's method: `(text for the agent, structured result)`.
fn call_one<T: McpTool>(
    engine: &Engine,
    args: Value,
    progress: &(dyn Fn(Progress) + Sync),
) -> crate::Result<(String, Value)> {
    let p = protocol::parse::<T>(T::TOOL, args)?;
    let r = T::run(engine, p.clone(), &Cx { progress, actor: crate::protocol::Actor::Agent })?;
    let structured = serde_json::to_value(&r).map_err(|e| Error::storage(format!("cannot encode the result: {e}")))?;
    Ok((T::text(&p, &r), structured))
}

macro_rules! dispatch {
    ($($t:ty),*) => {
        |engine: &Engine, tool: &str, args: Value, progress: &(dyn Fn(Progress) + Sync)| -> Option<crate::Result<(String, Value)>> {
            $(if tool == <$t as McpTool>::TOOL {
                return Some(call_one::<$t>(engine, args, progress));
            })*
            None
        }
    };
}

/// Runs one tool on the engine: `(text for the agent, structured result)`, or `None` for an
/// unknown tool. `progress` hears the progress of `skills_install` and `skills_update`.
pub fn call(
    engine: &Engine,
    tool: &str,
    args: Value,
    progress: &(dyn Fn(Progress) + Sync),
) -> Option<crate::Result<(String, Value)>> {
    let run = for_each_tool!(dispatch);
    run(engine, tool, args, progress)
}

impl ServerHandler for SkillMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("skillmem", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skill memory: lessons agents saved about skills. When a skill taught you a gotcha, a discovery, an error fix or a must-not-skip step, save it with skill_note; read them with skill_recall; when a note helped (or is wrong), say so with skill_feedback. Session skills: skills_install pins skills from a git repository, skills_seed copies them into a session's working folder (before that session starts).",
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
        let mut args = Value::Object(request.arguments.unwrap_or_default());
        // A note is recorded as written from this MCP client (`mcp:<its name>`), not from
        // whatever the agent might pass.
        // Notes and feedback are this server's session's (the agent never names one).
        if let (Some(o), true) = (args.as_object_mut(), name == NOTE_TOOL || name == <Feedback as McpTool>::TOOL) {
            o.insert("sessionId".into(), Value::String(self.session.clone()));
        }
        if let (Some(o), true) = (args.as_object_mut(), name == NOTE_TOOL) {
            o.remove("host");
            if let Some(info) = context.peer.peer_info() {
                let client = info.client_info.name.trim();
                if !client.is_empty() {
                    o.insert("host".into(), Value::String(format!("mcp:{client}")));
                }
            }
        }
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
        // Counts and bm25 indexes recalls left, off the answer's path.
        crate::server::after_answer(&self.engine);
        match out {
            None => Err(McpError::invalid_params(
                format!("unknown tool {name:?}; the tools are {}", TOOL_NAMES.join(", ")),
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

#[cfg(test)]
mod session_tests {
    use super::*;

    #[test]
    fn session_of_process_table() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(session_of_process(env(&[("SKILLMEM_SESSION_ID", "s1"), ("CODEX_THREAD_ID", "t1")])), "s1");
        assert_eq!(session_of_process(env(&[("CODEX_THREAD_ID", "t1")])), "t1");
        assert_eq!(session_of_process(env(&[("SKILLMEM_SESSION_ID", " ")])).split('-').count(), 2);
        let own = session_of_process(env(&[]));
        assert!(own.starts_with(&format!("{OWN_SESSION_PREFIX}{}-", std::process::id())), "{own}");
    }
}
