//! The historian (`transcriptChunk`, `historianResult`) and maintenance (`distill`).
//! docs/protocol.md, "Historian" and "Maintenance".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Cx, Method, ProgressToken};
use skillmem_engine::Engine;
use skillmem_error::{Error, Result};
use skillmem_historian::Format;
use skillmem_store::memory::Origin;

pub use skillmem_engine::{
    CorpusReport, Distilled as DistillResult, DuplicatePair, PromotedNote, Promotion as HistorianResultResult,
    RejectedObservation, RenderedChunk as TranscriptChunkResult,
};

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
    /// The transcript the chunk was read from (a path, or the host's id of it): recorded on
    /// the notes `historianResult` promotes for this session.
    #[serde(default)]
    pub transcript: Option<String>,
    /// Where in it (`bytes A-B`, ...); default: the records' own ids (`messages FIRST..LAST`).
    #[serde(default)]
    pub transcript_at: Option<String>,
}

/// Renders a transcript chunk for the historian, with `TC: skill(<name>)` markers.
pub struct TranscriptChunk;

impl Method for TranscriptChunk {
    const NAME: &'static str = "skillmem/transcriptChunk";
    const STEM: &'static str = "transcriptChunk";
    type Params = TranscriptChunkParams;
    type Result = TranscriptChunkResult;

    fn run(engine: &Engine, p: TranscriptChunkParams, _: &Cx<'_>) -> Result<TranscriptChunkResult> {
        let format = Format::parse(&p.format).ok_or_else(|| {
            Error::invalid(format!(
                "format {:?} is not a transcript format; use opencode, claude-code or text",
                p.format
            ))
        })?;
        let r = engine.transcript_chunk(format, p.messages.as_deref().unwrap_or_default(), p.text.as_deref())?;
        if let Some(s) = p.session_id.as_deref().filter(|s| !s.is_empty()) {
            engine.chunk_rendered(s, &r.skills, &r.rendered);
            let at = p.transcript_at.filter(|a| !a.trim().is_empty()).or_else(|| {
                skillmem_engine::chunk_span(format, p.messages.as_deref().unwrap_or_default(), p.text.as_deref())
            });
            let transcript = p.transcript.filter(|t| !t.trim().is_empty());
            engine.chunk_origin(s, Origin { host: None, transcript, transcript_at: at });
        }
        Ok(r)
    }
}

/// `skillmem/historianResult` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistorianResultParams {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The historian's whole output.
    pub output: String,
    /// The transcript the summarised part was read from (default: the one the session's last
    /// `transcriptChunk` named).
    #[serde(default)]
    pub transcript: Option<String>,
    /// Where in it (`bytes A-B`, `message ID`, `messages FIRST..LAST`).
    #[serde(default)]
    pub transcript_at: Option<String>,
}

/// Promotes a historian's `<skill_observations>` to notes.
pub struct HistorianResult;

impl Method for HistorianResult {
    const NAME: &'static str = "skillmem/historianResult";
    const STEM: &'static str = "historianResult";
    type Params = HistorianResultParams;
    type Result = HistorianResultResult;

    fn run(engine: &Engine, p: HistorianResultParams, _: &Cx<'_>) -> Result<HistorianResultResult> {
        let origin = Origin {
            host: None,
            transcript: p.transcript.filter(|t| !t.trim().is_empty()),
            transcript_at: p.transcript_at.filter(|a| !a.trim().is_empty()),
        };
        engine.historian_result_from(&p.output, p.session_id, origin)
    }
}

/// `skillmem/distill` params (all optional; may be omitted).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DistillParams {
    /// An LSP progress token: `$/progress` is reported under it while re-embedding.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
    /// Notes embedded per batch (default 64).
    #[serde(default)]
    pub batch_size: Option<usize>,
}

/// Re-embeds stale notes and reports on the corpus.
pub struct Distill;

impl Method for Distill {
    const NAME: &'static str = "skillmem/distill";
    const STEM: &'static str = "distill";
    type Params = DistillParams;
    type Result = DistillResult;

    fn no_params() -> Option<DistillParams> {
        Some(DistillParams::default())
    }

    fn progress(p: &DistillParams) -> Option<(ProgressToken, &'static str)> {
        p.work_done_token.clone().map(|t| (t, "skillmem: re-embedding notes"))
    }

    fn run(engine: &Engine, p: DistillParams, cx: &Cx<'_>) -> Result<DistillResult> {
        engine.distill(p.batch_size, &mut |pr| (cx.progress)(pr))
    }
}
