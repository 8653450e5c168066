//! The wire types of PROTOCOL.md: serde + schemars, and nothing else.
//!
//! One module per method family. Every method name is a const here; [`METHODS`] is the table
//! the server registers and advertises, and [`all_schemas`] generates `schemas/*.json` (a test
//! fails when the committed files drift from the types).

pub mod historian;
pub mod memory;
pub mod skills;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The protocol version advertised in `capabilities.experimental.skillmem`.
pub const PROTOCOL_VERSION: u32 = 1;

pub const TOOL_DEFINITION: &str = "skillmem/toolDefinition";
pub const TOOL_BEFORE: &str = "skillmem/toolBefore";
pub const TOOL_AFTER: &str = "skillmem/toolAfter";
pub const NOTE: &str = "skillmem/note";
pub const RECALL: &str = "skillmem/recall";
pub const PIN: &str = "skillmem/pin";
pub const FORGET: &str = "skillmem/forget";
pub const EDIT: &str = "skillmem/edit";
pub const STATS: &str = "skillmem/stats";
pub const TRANSCRIPT_CHUNK: &str = "skillmem/transcriptChunk";
pub const HISTORIAN_RESULT: &str = "skillmem/historianResult";
pub const DISTILL: &str = "skillmem/distill";
pub const SKILLS_INSTALL: &str = "skillmem/skills/install";
pub const SKILLS_UPDATE: &str = "skillmem/skills/update";
pub const SKILLS_REMOVE: &str = "skillmem/skills/remove";
pub const SKILLS_LIST: &str = "skillmem/skills/list";
pub const SKILLS_RESOLVE: &str = "skillmem/skills/resolve";
pub const SKILLS_SEED: &str = "skillmem/skills/seed";

/// Every custom method the server answers, in the order advertised.
pub const METHODS: &[&str] = &[
    TOOL_DEFINITION,
    TOOL_BEFORE,
    TOOL_AFTER,
    NOTE,
    RECALL,
    PIN,
    FORGET,
    EDIT,
    STATS,
    TRANSCRIPT_CHUNK,
    HISTORIAN_RESULT,
    DISTILL,
    SKILLS_INSTALL,
    SKILLS_UPDATE,
    SKILLS_REMOVE,
    SKILLS_LIST,
    SKILLS_RESOLVE,
    SKILLS_SEED,
];

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// The JSON Schema of every request, result and notification, by file stem.
pub fn all_schemas() -> Vec<(&'static str, Value)> {
    use memory::*;
    vec![
        ("toolDefinition.params", schema::<ToolDefinitionParams>()),
        ("toolDefinition.result", schema::<ToolDefinitionResult>()),
        ("toolBefore.params", schema::<ToolBeforeParams>()),
        ("toolAfter.params", schema::<ToolAfterParams>()),
        ("toolAfter.result", schema::<ToolAfterResult>()),
        ("note.params", schema::<NoteParams>()),
        ("note.result", schema::<NoteResult>()),
        ("recall.params", schema::<RecallParams>()),
        ("recall.result", schema::<RecallResult>()),
        ("pin.params", schema::<PinParams>()),
        ("forget.params", schema::<ForgetParams>()),
        ("edit.params", schema::<EditParams>()),
        ("id.result", schema::<IdResult>()),
        ("stats.params", schema::<StatsParams>()),
        ("stats.result", schema::<StatsResult>()),
        ("initialize.skillmemCapability", schema::<SkillmemCapability>()),
        ("transcriptChunk.params", schema::<historian::TranscriptChunkParams>()),
        ("transcriptChunk.result", schema::<historian::TranscriptChunkResult>()),
        ("historianResult.params", schema::<historian::HistorianResultParams>()),
        ("historianResult.result", schema::<historian::HistorianResultResult>()),
        ("distill.params", schema::<historian::DistillParams>()),
        ("distill.result", schema::<historian::DistillResult>()),
        ("skills.install.params", schema::<skills::InstallParams>()),
        ("skills.install.result", schema::<skills::InstallResult>()),
        ("skills.update.params", schema::<skills::UpdateParams>()),
        ("skills.update.result", schema::<skills::UpdateResult>()),
        ("skills.remove.params", schema::<skills::RemoveParams>()),
        ("skills.remove.result", schema::<skills::RemoveResult>()),
        ("skills.list.params", schema::<skills::ListParams>()),
        ("skills.list.result", schema::<skills::ListResult>()),
        ("skills.resolve.params", schema::<skills::ResolveParams>()),
        ("skills.resolve.result", schema::<skills::ResolveResult>()),
        ("skills.seed.params", schema::<skills::SeedParams>()),
        ("skills.seed.result", schema::<skills::SeedResult>()),
    ]
}

/// `capabilities.experimental.skillmem` of the `initialize` result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillmemCapability {
    pub protocol_version: u32,
    pub methods: Vec<String>,
    pub project_id: String,
    pub data_dir: String,
    pub embedding_model: Option<String>,
}
