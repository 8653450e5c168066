//! Curation: `skillmem/notes` (list), `skillmem/preview`, `skillmem/move`, `skillmem/merge`,
//! the review queue (`skillmem/review`, `skillmem/reviewDecide`).
//! docs/protocol.md, "Curation". The dashboard (`skillmem ui`) and the CLI call the same `run`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::memory::IdResult;
use super::{Cx, Method};
use skillmem_engine::Engine;
use skillmem_error::Result;
use skillmem_store::memory::Scope;

pub use skillmem_engine::{
    Decided, Decision, ListedNote, MoveResult, MoveStatus, NoteFilter as NotesParams, NotePage as NotesResult,
    NoteSort, Preview as PreviewResult, PreviewNote,
};

// ---- skillmem/notes -----------------------------------------------------------------------

/// Lists notes: filtered (skill, kind, scope, source, pinned), searched, sorted, paged.
pub struct Notes;

impl Method for Notes {
    const NAME: &'static str = "skillmem/notes";
    const STEM: &'static str = "notes";
    type Params = NotesParams;
    type Result = NotesResult;

    fn no_params() -> Option<NotesParams> {
        Some(NotesParams::default())
    }

    fn run(engine: &Engine, p: NotesParams, _: &Cx<'_>) -> Result<NotesResult> {
        engine.list_notes(&p)
    }
}

// ---- skillmem/preview ---------------------------------------------------------------------

/// `skillmem/preview` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewParams {
    /// The skill whose block to preview.
    pub skill: String,
    /// What the agent would be about to do.
    #[serde(default)]
    pub intent: Option<String>,
    /// The block's token budget (default `memory.maxTokens`).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// At most this many notes.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The exact block a load would append, each note's score and the rung that found it. Unlike
/// `skillmem/recall`, it does not count as a recall.
pub struct Preview;

impl Method for Preview {
    const NAME: &'static str = "skillmem/preview";
    const STEM: &'static str = "preview";
    type Params = PreviewParams;
    type Result = PreviewResult;

    fn run(engine: &Engine, p: PreviewParams, _: &Cx<'_>) -> Result<PreviewResult> {
        engine.preview(&p.skill, p.intent.as_deref(), p.max_tokens, p.limit)
    }
}

// ---- skillmem/move ------------------------------------------------------------------------

/// `skillmem/move` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoveParams {
    /// The note's id.
    pub id: i64,
    /// global: every project sees it; project: back to the project it was written from.
    pub scope: Scope,
}

/// Moves a note between project and global scope (an identical note already there absorbs it).
pub struct Move;

impl Method for Move {
    const NAME: &'static str = "skillmem/move";
    const STEM: &'static str = "move";
    type Params = MoveParams;
    type Result = MoveResult;

    fn run(engine: &Engine, p: MoveParams, _: &Cx<'_>) -> Result<MoveResult> {
        engine.move_note(p.id, p.scope)
    }
}

// ---- skillmem/merge -----------------------------------------------------------------------

/// `skillmem/merge` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeParams {
    /// The note that stays.
    pub keep: i64,
    /// The note merged into it and deleted (same skill).
    pub drop: i64,
}

/// Merges two notes of one skill (a near-duplicate pair): the kept one takes the other's
/// hits, recalls and pin; the other is deleted.
pub struct Merge;

impl Method for Merge {
    const NAME: &'static str = "skillmem/merge";
    const STEM: &'static str = "merge";
    type Params = MergeParams;
    type Result = IdResult;

    fn run(engine: &Engine, p: MergeParams, _: &Cx<'_>) -> Result<IdResult> {
        engine.merge_notes(p.keep, p.drop)?;
        Ok(IdResult { id: p.keep })
    }
}

// ---- skillmem/review, skillmem/reviewDecide -----------------------------------------------

/// `skillmem/review` params (all optional; may be omitted).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewParams {
    /// One skill's queue (default: every skill's).
    #[serde(default)]
    pub skill: Option<String>,
    /// The queue of the notes visible from this project (default: this sidecar's).
    #[serde(default)]
    pub project_id: Option<String>,
    /// Every project's queue instead.
    #[serde(default)]
    pub all_projects: bool,
    #[serde(default)]
    pub offset: Option<usize>,
    /// Notes per page (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Also the notes rejected in review (retired, with the reason; restorable into the queue).
    #[serde(default)]
    pub include_rejected: bool,
}

/// The review queue (`historian.review`): promoted observations waiting for a person, newest
/// first, with their provenance. For people and their tools (the dashboard, `skillmem
/// review`), not for agents: the MCP door does not offer it.
pub struct Review;

impl Method for Review {
    const NAME: &'static str = "skillmem/review";
    const STEM: &'static str = "review";
    type Params = ReviewParams;
    type Result = NotesResult;

    fn no_params() -> Option<ReviewParams> {
        Some(ReviewParams::default())
    }

    fn run(engine: &Engine, p: ReviewParams, _: &Cx<'_>) -> Result<NotesResult> {
        engine.review_queue(&NotesParams {
            skill: p.skill,
            project_id: p.project_id,
            all_projects: p.all_projects,
            offset: p.offset,
            limit: p.limit,
            include_superseded: p.include_rejected,
            ..Default::default()
        })
    }
}

/// `skillmem/reviewDecide` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewDecideParams {
    /// The note waiting for review.
    pub id: i64,
    /// accept: into recall; reject: out of the queue, kept as a retired note with the reason.
    pub decision: Decision,
    /// With accept: the lesson as it should read (edit then accept; the historian's text is
    /// kept as an older version).
    #[serde(default)]
    pub delta: Option<String>,
    /// With reject: why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A person's decision on a note waiting for review.
pub struct ReviewDecide;

impl Method for ReviewDecide {
    const NAME: &'static str = "skillmem/reviewDecide";
    const STEM: &'static str = "reviewDecide";
    type Params = ReviewDecideParams;
    type Result = Decided;

    fn run(engine: &Engine, p: ReviewDecideParams, cx: &Cx<'_>) -> Result<Decided> {
        let d = engine.review_decide(p.id, p.decision, p.delta.as_deref(), p.reason.as_deref())?;
        // An accepted note is a person's (the review queue is theirs; an agent's shell is not).
        if p.decision == Decision::Accept && cx.actor == crate::Actor::Person {
            engine.vouch(&[p.id])?;
        }
        Ok(d)
    }
}
