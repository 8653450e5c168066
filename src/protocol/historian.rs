//! Wire types of the historian and maintenance methods (PROTOCOL.md, "Historian" and
//! "Maintenance").

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::memory::{Scope, WriteStatus};

/// `skillmem/transcriptChunk` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptChunkParams {
    #[serde(default)]
    pub session_id: Option<String>,
    /// `opencode`, `claude-code` or `text`.
    pub format: String,
    /// OpenCode messages (`{ info, parts }`) or Claude Code records; a string is read as one
    /// JSONL line.
    #[serde(default)]
    pub messages: Option<Vec<Value>>,
    /// The chunk as text (format `text`), or raw JSONL for the other formats.
    #[serde(default)]
    pub text: Option<String>,
}

/// `skillmem/transcriptChunk` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptChunkResult {
    /// The chunk as compact text; every skill use is a line `TC: skill(<name>)`.
    pub rendered: String,
    /// The skills used in the chunk, in first-use order.
    pub skills: Vec<String>,
    /// Text to add to the historian's prompt; empty when no skill with memory enabled was used.
    pub instructions: String,
    /// What could not be rendered (unknown record types, truncated lines, cut texts).
    pub skipped: Vec<String>,
}

/// `skillmem/historianResult` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistorianResultParams {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The historian's whole output.
    pub output: String,
}

/// One promoted observation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotedNote {
    pub id: i64,
    pub skill: String,
    pub kind: String,
    pub delta: String,
    /// `inserted`, or `duplicate` when an exact or near-duplicate note already existed.
    pub status: WriteStatus,
    pub scope: Scope,
    /// The project the note was first written from.
    pub origin_project: String,
}

/// One rejected line.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RejectedObservation {
    pub line: String,
    pub reason: String,
}

/// `skillmem/historianResult` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistorianResultResult {
    pub promoted: Vec<PromotedNote>,
    pub rejected: Vec<RejectedObservation>,
}

/// `skillmem/distill` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DistillParams {
    /// An LSP progress token: `$/progress` is reported under it while re-embedding.
    #[serde(default)]
    pub work_done_token: Option<Value>,
    /// Notes embedded per batch (default 64).
    #[serde(default)]
    pub batch_size: Option<usize>,
}

/// A pair of notes of one skill whose vectors are closer than the duplicate threshold.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicatePair {
    pub skill: String,
    pub a: i64,
    pub b: i64,
    pub similarity: f32,
}

/// The corpus health summary of `skillmem/distill`, over the notes visible from the project.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorpusReport {
    pub project_id: String,
    pub notes: i64,
    pub by_skill: BTreeMap<String, i64>,
    pub by_scope: BTreeMap<String, i64>,
    pub by_source: BTreeMap<String, i64>,
    pub by_kind: BTreeMap<String, i64>,
    pub pinned: i64,
    pub never_recalled: i64,
    /// Notes written for an older version of their skill (when the skill is found).
    pub older_version: i64,
    /// Pairs above the duplicate threshold, most similar first (at most 100).
    pub duplicates: Vec<DuplicatePair>,
    pub duplicate_threshold: f32,
    /// Notes still without a vector of the current model.
    pub stale_vectors: i64,
    pub embedding_model: Option<String>,
    pub embedding_dim: Option<usize>,
    pub warnings: Vec<String>,
}

/// `skillmem/distill` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DistillResult {
    /// How many notes were re-embedded.
    pub reembedded: usize,
    pub report: CorpusReport,
}
