//! Wire types of the skill-memory methods (PROTOCOL.md, "Skill memory: tool events").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::memory::{RecallMode, Scope, WriteStatus};

/// `skillmem/toolDefinition` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinitionParams {
    pub tool: String,
    /// The tool's JSON Schema parameters object.
    pub parameters: Value,
}

/// `skillmem/toolDefinition` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinitionResult {
    pub parameters: Value,
}

/// `skillmem/toolBefore` notification params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolBeforeParams {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    #[serde(default)]
    pub args: Value,
}

/// `skillmem/toolAfter` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAfterParams {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    #[serde(default)]
    pub args: Value,
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// `skillmem/toolAfter` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAfterResult {
    /// Text to append verbatim to the tool result (it starts with a blank line), or null.
    pub append: Option<String>,
    pub skill: Option<String>,
    pub mode: RecallMode,
    pub note_ids: Vec<i64>,
}

/// `skillmem/note` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteParams {
    #[serde(default)]
    pub session_id: Option<String>,
    pub skill: String,
    /// `gotcha`, `discovery`, `fix` or `workflow`.
    pub kind: String,
    pub delta: String,
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// `project` (default) or `global`.
    #[serde(default)]
    pub scope: Option<String>,
}

/// `skillmem/note` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteResult {
    pub id: i64,
    pub status: WriteStatus,
}

/// `skillmem/recall` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallParams {
    pub skill: String,
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<usize>,
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One note of a recall result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecalledNote {
    pub id: i64,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    pub scope: Scope,
    pub pinned: bool,
    pub hits: i64,
    pub score: f32,
    pub created_at: i64,
}

/// `skillmem/recall` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallResult {
    pub block: Option<String>,
    pub mode: RecallMode,
    pub notes: Vec<RecalledNote>,
}

/// `skillmem/pin` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinParams {
    pub id: i64,
    pub pinned: bool,
}

/// `skillmem/forget` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetParams {
    pub id: i64,
}

/// `skillmem/edit` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditParams {
    pub id: i64,
    pub delta: String,
}

/// The result of pin, forget and edit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdResult {
    pub id: i64,
}

/// `skillmem/stats` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsParams {
    #[serde(default)]
    pub project_id: Option<String>,
    /// How many days back `usesByDay` goes (default 14, at most 366; 0 leaves it empty).
    #[serde(default)]
    pub days: Option<u32>,
}

/// Per-skill figures of `skillmem/stats`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillStats {
    pub skill: String,
    pub notes: i64,
    pub pinned: i64,
    pub recalls: i64,
    /// Sessions of this project that used the skill, as hosts recorded them (`skill_uses`,
    /// written by the Claude Code `Stop`/`SessionEnd` hook), all time.
    #[serde(default)]
    pub sessions: i64,
    /// When a session of this project last used the skill (ms since the epoch), if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<i64>,
}

/// One day of `skillmem/stats`'s `usesByDay`: a skill and how many sessions used it that day.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayUses {
    /// The day, `YYYY-MM-DD` in UTC.
    pub day: String,
    pub skill: String,
    /// Distinct sessions that used the skill that day.
    pub sessions: i64,
}

/// The embedder part of `skillmem/stats`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingStats {
    pub model: Option<String>,
    pub dim: Option<usize>,
    /// Visible notes without a vector of the current model.
    pub stale: i64,
}

/// `skillmem/stats` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsResult {
    pub project_id: String,
    pub notes: i64,
    pub pinned: i64,
    pub skills: Vec<SkillStats>,
    pub embedding: EmbeddingStats,
    /// Skills used per day over the last `days` days, newest day first, then by skill.
    #[serde(default)]
    pub uses_by_day: Vec<DayUses>,
}
