//! Skill memory: the tool events (`toolDefinition`, `toolBefore`, `toolAfter`), the session's
//! end (`sessionEnd`) and the note methods (`note`, `recall`, `pin`, `forget`, `edit`,
//! `stats`). docs/protocol.md, "Skill memory" and "Use and trust".

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Actor, Cx, Method, Notification};
use skillmem_engine::{Engine, FeedbackResult, SkillLoad, ToolCall, Verdict, INTENT_DESCRIPTION};
use skillmem_error::{Error, Result};
use skillmem_store::memory::calls;
use skillmem_store::memory::provenance::{self, is_skill_tool, skill_name_of};
use skillmem_store::memory::{Kind, NewNote, Scope, Source};

pub use skillmem_engine::{
    DayUses, EmbeddingStats, LoadRecall as ToolAfterResult, Recalled as RecallResult, RecalledNote, SkillStats,
    Stats as StatsResult, Written as NoteResult,
};

// ---- skillmem/toolDefinition --------------------------------------------------------------

/// `skillmem/toolDefinition` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinitionParams {
    /// The tool's name as the host registers it (`skill`, `Skill`, ...).
    pub tool: String,
    /// The tool's JSON Schema parameters object.
    pub parameters: Value,
}

/// `skillmem/toolDefinition` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinitionResult {
    /// The parameters to register: the skill tool's gain an optional `intent` string.
    pub parameters: Value,
}

/// Adds an optional `intent` string to the host's skill tool; other tools pass unchanged.
pub struct ToolDefinition;

impl Method for ToolDefinition {
    const NAME: &'static str = "skillmem/toolDefinition";
    const STEM: &'static str = "toolDefinition";
    type Params = ToolDefinitionParams;
    type Result = ToolDefinitionResult;

    fn run(_: &Engine, p: ToolDefinitionParams, _: &Cx<'_>) -> Result<ToolDefinitionResult> {
        let mut parameters = p.parameters;
        if is_skill_tool(&p.tool) {
            let obj =
                parameters.as_object_mut().ok_or_else(|| Error::invalid("parameters must be a JSON Schema object"))?;
            let props = obj.entry("properties").or_insert_with(|| Value::Object(Default::default()));
            if let Some(props) = props.as_object_mut() {
                props
                    .entry("intent")
                    .or_insert_with(|| serde_json::json!({ "type": "string", "description": INTENT_DESCRIPTION }));
            }
        }
        Ok(ToolDefinitionResult { parameters })
    }
}

// ---- skillmem/toolBefore ------------------------------------------------------------------

/// `skillmem/toolBefore` notification params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolBeforeParams {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    /// The call's arguments; `args.intent` is stashed for the matching `toolAfter`.
    #[serde(default)]
    pub args: Value,
}

/// Stashes the intent of a skill tool call until its `toolAfter`.
pub struct ToolBefore;

impl Notification for ToolBefore {
    const NAME: &'static str = "skillmem/toolBefore";
    const STEM: &'static str = "toolBefore";
    type Params = ToolBeforeParams;

    fn handle(engine: &Engine, p: ToolBeforeParams) {
        if is_skill_tool(&p.tool) {
            if let Some(intent) = p.args.get("intent").and_then(Value::as_str) {
                engine.stash_intent(&p.session_id, &p.call_id, intent);
            }
        }
    }
}

// ---- skillmem/toolAfter -------------------------------------------------------------------

/// `skillmem/toolAfter` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAfterParams {
    /// The host's session: every call of it is recorded in its log, in arrival order.
    #[serde(default, deserialize_with = "lenient_string")]
    pub session_id: String,
    #[serde(default, deserialize_with = "lenient_string")]
    pub call_id: String,
    /// The tool's name: a skill tool's call is a skill load; any other call is recorded as the
    /// session's activity and answered with nothing to append.
    pub tool: String,
    /// The call's arguments: `name` (OpenCode) or `skill` (Claude Code) names the skill;
    /// `intent`, when the host passes it. For other tools, what the call ran (`command`, paths).
    #[serde(default)]
    pub args: Value,
    /// The tool's output (a `Base directory for this skill: ...` line tells where it lives;
    /// a failed call's error lines are kept).
    #[serde(default, deserialize_with = "lenient_string")]
    pub output: String,
    /// The call failed (the host's own error status).
    #[serde(default, deserialize_with = "lenient_bool")]
    pub is_error: Option<bool>,
    /// Host metadata; `metadata.dir` is the skill's folder; a non-zero `metadata.exit`
    /// (OpenCode's bash), `exitCode` or `exit_code` says the call failed.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// The intent stashed by `toolBefore`, taken in the handler's prologue.
    #[serde(skip)]
    pub stashed_intent: Option<String>,
    /// The call's place in its session, taken in the handler's prologue.
    #[serde(skip)]
    pub position: Option<i64>,
}

/// A string, or anything else as its JSON text (`null`: empty): a host's odd value never
/// fails the call.
fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        v => v.to_string(),
    })
}

/// A boolean; anything else is taken as not said.
fn lenient_bool<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

/// The `<skill-memory>` block to append to a skill tool's result; any other tool's call joins
/// the session's log.
pub struct ToolAfter;

impl Method for ToolAfter {
    const NAME: &'static str = "skillmem/toolAfter";
    const STEM: &'static str = "toolAfter";
    type Params = ToolAfterParams;
    type Result = ToolAfterResult;

    /// The call's position in its session is taken here, and a call that is not a skill load
    /// is queued for the session's log here too (bounded work, no I/O): a `sessionEnd` sent
    /// after it always finds it.
    fn prologue(engine: &Engine, p: &mut ToolAfterParams) {
        p.stashed_intent = engine.take_stashed_intent(&p.session_id, &p.call_id);
        if !p.session_id.trim().is_empty() {
            p.position = Some(engine.call_arrived(&p.session_id));
        }
        if !is_skill_tool(&p.tool) {
            let (failed, exit_code) = calls::failed(p.is_error, p.metadata.as_ref());
            engine.tool_called(ToolCall {
                session: p.session_id.clone(),
                position: p.position,
                call_id: p.call_id.clone(),
                tool: p.tool.clone(),
                args: std::mem::take(&mut p.args),
                failed,
                exit_code,
                output: std::mem::take(&mut p.output),
            });
        }
    }

    fn run(engine: &Engine, p: ToolAfterParams, _: &Cx<'_>) -> Result<ToolAfterResult> {
        if !is_skill_tool(&p.tool) {
            return Ok(ToolAfterResult::nothing(None));
        }
        let Some(skill) = skill_name_of(&p.args) else {
            return Err(Error::invalid(
                "args.name (OpenCode) or args.skill (Claude Code) must name the skill that was loaded",
            ));
        };
        let intent = p
            .args
            .get("intent")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty())
            .or(p.stashed_intent);
        let dir = p
            .metadata
            .as_ref()
            .and_then(|m| m.get("dir"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .or_else(|| provenance::dir_from_output(&p.output));
        let session = Some(p.session_id).filter(|s| !s.trim().is_empty());
        engine.skill_loaded(SkillLoad { skill, dir, intent, session, position: p.position, call_id: Some(p.call_id) })
    }
}

// ---- skillmem/sessionEnd ------------------------------------------------------------------

/// `skillmem/sessionEnd` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEndParams {
    /// The host's session that is over.
    pub session_id: String,
}

/// `skillmem/sessionEnd` result: empty.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SessionEndResult {}

/// The session is over: each note its loads showed is judged by the session's calls (used,
/// ignored) and counted once for the session; done when the answer comes.
pub struct SessionEnd;

impl Method for SessionEnd {
    const NAME: &'static str = "skillmem/sessionEnd";
    const STEM: &'static str = "sessionEnd";
    type Params = SessionEndParams;
    type Result = SessionEndResult;

    fn run(engine: &Engine, p: SessionEndParams, _: &Cx<'_>) -> Result<SessionEndResult> {
        engine.end_session(&p.session_id)?;
        Ok(SessionEndResult {})
    }
}

// ---- skillmem/note ------------------------------------------------------------------------

/// `skillmem/note` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteParams {
    /// The host's session, kept with the note.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The host writing it, kept with the note (default: the configuration's `host`, else the
    /// LSP client's name): for a door that serves several clients.
    #[serde(default)]
    pub host: Option<String>,
    /// The skill the lesson is about (its name, as loaded).
    pub skill: String,
    /// gotcha (a trap that cost time), discovery (a fact you had to find out), fix (an error
    /// message and what fixed it), workflow (a step that must not be skipped).
    #[schemars(extend("enum" = ["gotcha", "discovery", "fix", "workflow"]))]
    pub kind: String,
    /// The lesson itself, in one or two sentences.
    pub delta: String,
    /// What the agent was doing when it learned it.
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// project (default): this project only; global: every project. With `replaces`, the
    /// replaced note's scope unless given.
    #[serde(default)]
    #[schemars(extend("enum" = ["project", "global", null]))]
    pub scope: Option<String>,
    /// The id of a note this lesson corrects (as shown in `<note id=...>`): the new note takes
    /// its place (its hits and pin carry over), the old one leaves recall and is kept as
    /// history. Must be a current note of the same skill, visible from this project.
    #[serde(default)]
    pub replaces: Option<i64>,
}

/// Writes a note. A note that says the same thing (same numbers, versions, code spans, flags,
/// paths, identifiers and polarity) takes the write as a hit instead; with `replaces`, the new
/// note takes the place of an old one.
pub struct Note;

impl Method for Note {
    const NAME: &'static str = "skillmem/note";
    const STEM: &'static str = "note";
    type Params = NoteParams;
    type Result = NoteResult;

    fn run(engine: &Engine, p: NoteParams, cx: &Cx<'_>) -> Result<NoteResult> {
        let kind: Kind = p.kind.parse()?;
        if p.delta.trim().is_empty() {
            return Err(Error::invalid("delta is empty; say the lesson in one or two sentences"));
        }
        let scope: Option<Scope> = p.scope.as_deref().map(str::parse).transpose()?;
        let new = NewNote {
            skill: p.skill,
            kind,
            intent: p.intent.unwrap_or_default(),
            delta: p.delta,
            tags: p.tags.unwrap_or_default(),
            scope: scope.unwrap_or(Scope::Project),
            source: Source::Agent,
            session_id: p.session_id,
            skill_hash: None,
            origin: skillmem_store::memory::Origin {
                host: p.host.filter(|h| !h.trim().is_empty()),
                ..Default::default()
            },
            pending: false,
        };
        let written = match p.replaces {
            Some(old) => engine.replace_note(new, old, scope)?,
            None => engine.write_note(new)?,
        };
        // A person's note, or a person's restatement of an existing one, is trusted.
        if cx.actor == Actor::Person {
            engine.vouch(&[written.id])?;
        }
        Ok(written)
    }
}

// ---- skillmem/recall ----------------------------------------------------------------------

/// `skillmem/recall` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallParams {
    /// The skill whose lessons to read.
    pub skill: String,
    /// What the agent is about to do (ranks the lessons).
    #[serde(default)]
    pub intent: Option<String>,
    /// The block's token budget (default `memory.maxTokens`).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// At most this many notes.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The block a load of the skill would append, with each note's score.
pub struct Recall;

impl Method for Recall {
    const NAME: &'static str = "skillmem/recall";
    const STEM: &'static str = "recall";
    type Params = RecallParams;
    type Result = RecallResult;

    fn run(engine: &Engine, p: RecallParams, _: &Cx<'_>) -> Result<RecallResult> {
        engine.recall(&p.skill, p.intent.as_deref(), p.max_tokens, p.limit)
    }
}

// ---- skillmem/pin, forget, edit -----------------------------------------------------------

/// The id of the note a method changed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdResult {
    pub id: i64,
}

fn yes() -> bool {
    true
}

/// `skillmem/pin` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinParams {
    /// The note's id, as shown in `<note id=...>`.
    pub id: i64,
    /// false unpins.
    #[serde(default = "yes")]
    pub pinned: bool,
}

/// Pins a note, so that every load of its skill shows it (or unpins it).
pub struct Pin;

impl Method for Pin {
    const NAME: &'static str = "skillmem/pin";
    const STEM: &'static str = "pin";
    type Params = PinParams;
    type Result = IdResult;

    fn run(engine: &Engine, p: PinParams, cx: &Cx<'_>) -> Result<IdResult> {
        engine.pin(p.id, p.pinned)?;
        if p.pinned && cx.actor == Actor::Person {
            engine.vouch(&[p.id])?;
        }
        Ok(IdResult { id: p.id })
    }
}

/// `skillmem/forget` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetParams {
    /// The note's id, as shown in `<note id=...>`.
    pub id: i64,
    /// Why the note no longer holds (kept with it).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Retires a note: out of recall and the default listings, kept as history, restorable with
/// `skillmem/restore`. (`skillmem/purge` deletes for good.)
pub struct Forget;

impl Method for Forget {
    const NAME: &'static str = "skillmem/forget";
    const STEM: &'static str = "forget";
    type Params = ForgetParams;
    type Result = IdResult;

    fn run(engine: &Engine, p: ForgetParams, _: &Cx<'_>) -> Result<IdResult> {
        engine.forget(p.id, p.reason.as_deref())?;
        Ok(IdResult { id: p.id })
    }
}

/// `skillmem/restore` and `skillmem/purge` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdParams {
    /// The note's id (`skillmem/notes` with `includeSuperseded` lists retired and replaced notes).
    pub id: i64,
}

/// Brings a retired or replaced note back into recall. A note restored beside the note that
/// replaced it forms a conflicting pair with it (the newer still leads).
pub struct Restore;

impl Method for Restore {
    const NAME: &'static str = "skillmem/restore";
    const STEM: &'static str = "restore";
    type Params = IdParams;
    type Result = IdResult;

    fn run(engine: &Engine, p: IdParams, _: &Cx<'_>) -> Result<IdResult> {
        engine.restore(p.id)?;
        Ok(IdResult { id: p.id })
    }
}

/// What `skillmem/purge` removed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Purged {
    pub id: i64,
    /// Every note removed: the note and the older versions it replaced.
    pub purged: Vec<i64>,
}

/// Deletes a note and its history (the older versions it replaced) for good: for text that
/// must not stay, such as a secret. Not undoable.
pub struct Purge;

impl Method for Purge {
    const NAME: &'static str = "skillmem/purge";
    const STEM: &'static str = "purge";
    type Params = IdParams;
    type Result = Purged;

    fn run(engine: &Engine, p: IdParams, _: &Cx<'_>) -> Result<Purged> {
        let purged = engine.purge(p.id)?;
        Ok(Purged { id: p.id, purged })
    }
}

/// One version of a note, as `skillmem/versions` lists it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub id: i64,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    /// agent or historian.
    pub source: String,
    pub pinned: bool,
    pub hits: i64,
    /// When it was written (ms since the epoch).
    pub created_at: i64,
    /// When it left recall; absent while it is current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
    /// The note that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<i64>,
    /// Why it was replaced or retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What backs it (as in `skillmem/notes`); absent when nothing does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<skillmem_store::memory::Backing>,
}

/// What `skillmem/versions` answers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    pub id: i64,
    /// The note's skill.
    pub skill: String,
    /// The older versions it replaced (oldest first), the note itself, then the notes that
    /// replaced it, in order.
    pub versions: Vec<Version>,
}

/// A note's versions: what it replaced and what replaced it (the note must be visible from
/// this project).
pub struct VersionsOf;

impl Method for VersionsOf {
    const NAME: &'static str = "skillmem/versions";
    const STEM: &'static str = "versions";
    type Params = IdParams;
    type Result = Versions;

    fn run(engine: &Engine, p: IdParams, _: &Cx<'_>) -> Result<Versions> {
        let notes = engine.versions(p.id)?;
        let skill = notes.iter().find(|n| n.id == p.id).map(|n| n.skill.clone()).unwrap_or_default();
        let ids: Vec<i64> = notes.iter().map(|n| n.id).collect();
        let mut backing = engine.backing(&ids)?;
        let versions = notes
            .into_iter()
            .map(|n| Version {
                id: n.id,
                kind: n.kind.as_str().to_string(),
                intent: n.intent,
                delta: n.delta,
                source: n.source.as_str().to_string(),
                pinned: n.pinned,
                hits: n.hits,
                created_at: n.created_at,
                retired_at: n.retired_at,
                superseded_by: n.superseded_by,
                evidence: backing.remove(&n.id),
                reason: n.reason,
            })
            .collect();
        Ok(Versions { id: p.id, skill, versions })
    }
}

/// `skillmem/edit` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditParams {
    /// The note's id, as shown in `<note id=...>`.
    pub id: i64,
    /// The new lesson (the note is re-embedded).
    pub delta: String,
}

/// Replaces a note's lesson in place (same id); the old text is kept as a version of it.
pub struct Edit;

impl Method for Edit {
    const NAME: &'static str = "skillmem/edit";
    const STEM: &'static str = "edit";
    type Params = EditParams;
    type Result = IdResult;

    fn run(engine: &Engine, p: EditParams, cx: &Cx<'_>) -> Result<IdResult> {
        engine.edit(p.id, &p.delta)?;
        if cx.actor == Actor::Person {
            engine.vouch(&[p.id])?;
        }
        Ok(IdResult { id: p.id })
    }
}

// ---- skillmem/feedback --------------------------------------------------------------------

/// `skillmem/feedback` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackParams {
    /// The session the note helped in (required from an agent: a use counts once per session).
    #[serde(default)]
    pub session_id: Option<String>,
    /// The note's id, as shown in `<note id=...>`.
    pub id: i64,
    /// useful: you applied the note and it helped (a use in this session); wrong: it does not
    /// hold (retired with the reason, restorable).
    pub verdict: Verdict,
    /// Why (kept with a retired note).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Says whether a note helped: `useful` counts as a use of it in the session (a note used in
/// another session than the one that wrote it is trusted); `wrong` retires it with the reason
/// (`skillmem/restore` brings it back).
pub struct Feedback;

impl Method for Feedback {
    const NAME: &'static str = "skillmem/feedback";
    const STEM: &'static str = "feedback";
    type Params = FeedbackParams;
    type Result = FeedbackResult;

    fn run(engine: &Engine, p: FeedbackParams, cx: &Cx<'_>) -> Result<FeedbackResult> {
        engine.feedback(skillmem_engine::Feedback {
            id: p.id,
            verdict: p.verdict,
            session: p.session_id.as_deref(),
            reason: p.reason.as_deref(),
            person: cx.actor == Actor::Person,
        })
    }
}

// ---- skillmem/stats -----------------------------------------------------------------------

/// `skillmem/stats` params (all optional; may be omitted).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsParams {
    /// Another project's id (default: this sidecar's project).
    #[serde(default)]
    pub project_id: Option<String>,
    /// Days of per-day use to report (default 14, at most 366; 0 for none).
    #[serde(default)]
    pub days: Option<u32>,
}

/// Counts per skill, the embedder, and skills used per day.
pub struct Stats;

impl Method for Stats {
    const NAME: &'static str = "skillmem/stats";
    const STEM: &'static str = "stats";
    type Params = StatsParams;
    type Result = StatsResult;

    fn no_params() -> Option<StatsParams> {
        Some(StatsParams::default())
    }

    fn run(engine: &Engine, p: StatsParams, _: &Cx<'_>) -> Result<StatsResult> {
        engine.stats(p.project_id, p.days)
    }
}
