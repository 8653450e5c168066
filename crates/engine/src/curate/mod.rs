//! Curation: what a person (the dashboard, `skillmem notes|export|import|doctor`) and a host
//! (`skillmem/notes`, `skillmem/preview`, `skillmem/move`, `skillmem/merge`) do with the whole
//! memory: list notes with filters, search, sort and pages; move a note between project and
//! global scope; merge near-duplicate pairs; preview the block a load would append (without
//! counting a recall); export and import (`export.rs`: the notes; their file formats are the
//! door's); read what `doctor` judges (`health.rs`; the checks are the door's).
//!
//! Every statement over `notes` is in `memory/store/curate.rs`.

mod export;
mod health;

pub use export::{ExportedNote, Imported};
pub use health::{EmbeddingHealth, Health, IndexHealth};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use skillmem_error::{Error, Result};
use skillmem_store::memory::evidence::Evidence;
use skillmem_store::memory::store::{self, ListOrder, ListQuery};
use skillmem_store::memory::{Kind, Origin, RecallMode, Scope, Source};

/// Notes per page when the caller does not say.
pub const DEFAULT_PAGE: usize = 50;
/// At most this many notes per page.
pub const MAX_PAGE: usize = 1_000;

/// How a note list is ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NoteSort {
    /// Newest first (default).
    #[default]
    Recent,
    /// Most hits (duplicate writes) first.
    Hits,
    /// Most recalls first.
    Recalls,
    /// Most sessions that used it first.
    Used,
}

/// Which notes to list; every field is optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteFilter {
    /// One skill's notes (default: every skill's).
    #[serde(default)]
    pub skill: Option<String>,
    /// The notes visible from this project, its own and global (default: this engine's).
    #[serde(default)]
    pub project_id: Option<String>,
    /// Every project's notes instead.
    #[serde(default)]
    pub all_projects: bool,
    #[serde(default)]
    pub kind: Option<Kind>,
    #[serde(default)]
    pub scope: Option<Scope>,
    /// agent, historian, import or team.
    #[serde(default)]
    pub source: Option<Source>,
    /// Only pinned (true) or only unpinned (false) notes.
    #[serde(default)]
    pub pinned: Option<bool>,
    /// Full-text search over intent and lesson: every word must match, the last as a prefix.
    #[serde(default)]
    pub search: Option<String>,
    #[serde(default)]
    pub sort: NoteSort,
    #[serde(default)]
    pub offset: Option<usize>,
    /// Notes per page (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Also list the notes replaced or retired (their history), with `supersededBy`,
    /// `retiredAt` and `reason`; by default only current notes.
    #[serde(default)]
    pub include_superseded: bool,
    /// Only the notes waiting for review (`historian.review`); by default they are left out.
    #[serde(default)]
    pub pending: bool,
    /// Only the notes written in this host session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only trusted or only unverified notes.
    #[serde(default)]
    pub trust: Option<skillmem_store::memory::evidence::Trust>,
}

/// One listed note.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedNote {
    pub id: i64,
    pub skill: String,
    pub scope: Scope,
    /// The project a project note belongs to ('' for a global note).
    pub project_id: String,
    /// The project it was written from.
    pub origin_project: String,
    /// How it came to this store: agent, historian, import or team.
    pub source: String,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    pub tags: Vec<String>,
    pub hits: i64,
    pub recalls: i64,
    pub pinned: bool,
    pub skill_hash: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// It has a vector of the current embedder.
    pub current_vector: bool,
    /// When it left recall (replaced or retired; ms since the epoch); absent while current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
    /// The note that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<i64>,
    /// Why it was replaced or retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The host's session it was written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The host, and for the historian the transcript and where in it (absent when not known).
    #[serde(default, flatten)]
    pub origin: Origin,
    /// For a note that came by import or team pull: who first wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_source: Option<Source>,
    /// Waiting for review (`historian.review`): not recalled until accepted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// A pending correction: the note it takes the place of once accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_replaces: Option<i64>,
    /// A mined lesson held until it recurs (`memory.minedSupport`) or a person accepts it:
    /// pending, in review, in no block.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// A mined lesson's support: the distinct sessions that mined it (kept by export/import).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<i64>,
    /// Sessions shown it, that used it, that ignored it; when it was last used.
    #[serde(flatten)]
    pub evidence: Evidence,
    /// What backs the note (a mined lesson's failed call, error lines, the call that worked
    /// and their positions; a historian lesson's error line); absent when nothing does.
    #[serde(rename = "evidence", default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<skillmem_store::memory::Backing>,
}

/// A page of notes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotePage {
    /// Notes matching the filter in all.
    pub total: i64,
    pub offset: usize,
    pub limit: usize,
    pub notes: Vec<ListedNote>,
}

/// A note of a preview: what the block shows, with its score and the rung that found it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewNote {
    pub id: i64,
    pub kind: String,
    pub intent: String,
    pub delta: String,
    pub scope: Scope,
    pub pinned: bool,
    pub hits: i64,
    pub recalls: i64,
    pub score: f32,
    /// vector or fts: the rung that found it for the intent; recent: ranked by recency and
    /// hits (no rung found it, or no intent).
    pub rung: RecallMode,
}

/// The block a load would append, and why each note is in it. Not a recall: no count changes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub block: Option<String>,
    pub mode: RecallMode,
    /// The block's estimated tokens.
    pub tokens: usize,
    pub notes: Vec<PreviewNote>,
}

/// What a scope move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MoveStatus {
    /// The note changed scope.
    Moved,
    /// The target scope already held the same lesson: the note was merged into it.
    Merged,
    /// It already had that scope.
    Unchanged,
}

/// The note that holds the lesson after a move.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoveResult {
    pub id: i64,
    pub status: MoveStatus,
}

/// One day of the overview's chart.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayActivity {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub written: i64,
    /// Notes last used (recalled, or hit by a duplicate write) that day.
    pub used: i64,
}

fn listed(l: store::Listed) -> ListedNote {
    let n = l.note;
    ListedNote {
        id: n.id,
        skill: n.skill,
        scope: n.scope,
        project_id: l.project_id,
        origin_project: n.origin_project,
        source: n.source.as_str().to_string(),
        kind: n.kind.as_str().to_string(),
        intent: n.intent,
        delta: n.delta,
        tags: n.tags,
        hits: n.hits,
        recalls: n.recalls,
        pinned: n.pinned,
        skill_hash: n.skill_hash,
        created_at: n.created_at,
        updated_at: n.updated_at,
        current_vector: l.current_vector,
        retired_at: n.retired_at,
        superseded_by: n.superseded_by,
        reason: n.reason,
        session_id: n.session_id,
        origin: n.origin,
        origin_source: n.origin_source,
        pending: n.pending,
        held: false,
        support: None,
        review_replaces: n.review_replaces,
        evidence: Evidence::default(),
        backing: None,
    }
}

impl Engine {
    fn model_id(&self) -> Option<String> {
        self.embedder().map(|e| e.model_id().to_string())
    }

    /// A page of notes: filtered, searched, sorted.
    pub fn list_notes(&self, f: &NoteFilter) -> Result<NotePage> {
        let limit = f.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
        let offset = f.offset.unwrap_or(0);
        self.list_notes_raw(f, Some(limit), offset)
    }

    /// Every note the filter selects, unpaged (`skillmem notes`).
    pub fn all_notes(&self, f: &NoteFilter) -> Result<NotePage> {
        self.list_notes_raw(f, None, 0)
    }

    fn list_notes_raw(&self, f: &NoteFilter, limit: Option<usize>, offset: usize) -> Result<NotePage> {
        let project = f.project_id.clone().unwrap_or_else(|| self.project_id().to_string());
        let model = self.model_id();
        let q = ListQuery {
            skill: f.skill.as_deref().filter(|s| !s.is_empty()),
            project: (!f.all_projects).then_some(project.as_str()),
            kind: f.kind.map(Kind::as_str),
            scope: f.scope,
            source: f.source.map(Source::as_str),
            pinned: f.pinned,
            search: f.search.as_deref().filter(|s| !s.trim().is_empty()),
            order: match f.sort {
                NoteSort::Recent => ListOrder::Recent,
                NoteSort::Hits => ListOrder::Hits,
                NoteSort::Recalls => ListOrder::Recalls,
                NoteSort::Used => ListOrder::Used,
            },
            offset,
            limit,
            model: model.as_deref(),
            include_history: f.include_superseded,
            pending: f.pending,
            session: f.session_id.as_deref().filter(|s| !s.is_empty()),
            trusted: f.trust.map(|t| t == skillmem_store::memory::evidence::Trust::Trusted),
        };
        let conn = self.conn();
        let (total, rows) = store::list(&conn, &q)?;
        let ids: Vec<i64> = rows.iter().map(|r| r.note.id).collect();
        let evidence = store::evidence_of(&conn, &ids)?;
        let mut backing = super::historian::backing_of(&conn, &ids)?;
        drop(conn);
        let notes: Vec<ListedNote> = rows
            .into_iter()
            .map(listed)
            .map(|mut n| {
                n.evidence = evidence.get(&n.id).copied().unwrap_or_default();
                n.backing = backing.remove(&n.id);
                let mined = n.backing.as_ref().filter(|b| b.key.is_some());
                n.support = mined.and_then(|b| b.sessions);
                n.held = n.pending && n.retired_at.is_none() && mined.is_some();
                n
            })
            .collect();
        Ok(NotePage { total, offset, limit: limit.unwrap_or(notes.len()), notes })
    }

    /// The block a load of `skill` would append for `intent`, with each note's score and the
    /// rung that found it. Not a recall: no note's recall count changes.
    pub fn preview(
        &self,
        skill: &str,
        intent: Option<&str>,
        max_tokens: Option<usize>,
        limit: Option<usize>,
    ) -> Result<Preview> {
        let ctx = self.require_enabled(skill)?;
        let intent = intent.filter(|s| !s.trim().is_empty());
        let (b, mode, ranked, found_by) = self.recall_block(&ctx, intent, max_tokens, limit, false)?;
        let Some(b) = b else { return Ok(Preview { block: None, mode: RecallMode::None, tokens: 0, notes: vec![] }) };
        let notes = b
            .note_ids
            .iter()
            .filter_map(|id| ranked.iter().find(|r| r.note.id == *id))
            .map(|r| PreviewNote {
                id: r.note.id,
                kind: r.note.kind.as_str().to_string(),
                intent: r.note.intent.clone(),
                delta: r.note.delta.clone(),
                scope: r.note.scope,
                pinned: r.note.pinned,
                hits: r.note.hits,
                recalls: r.note.recalls,
                score: r.score,
                rung: found_by.get(&r.note.id).copied().unwrap_or(RecallMode::Recent),
            })
            .collect();
        Ok(Preview { block: Some(b.text), mode, tokens: b.tokens, notes })
    }

    /// Moves a note to `scope`: global (every project sees it) or project (this engine's
    /// project, or the project it was written from when `to_origin`).
    pub fn move_note(&self, id: i64, scope: Scope) -> Result<MoveResult> {
        let mut conn = self.conn();
        let project = match scope {
            Scope::Global => String::new(),
            Scope::Project => {
                // Back to the project it was written from (the project a person sees it from
                // is this engine's, which is the same for a note written here).
                let n = store::get(&conn, id)?.ok_or_else(|| Error::unknown_note(id))?;
                if n.origin_project.is_empty() {
                    self.project_id().to_string()
                } else {
                    n.origin_project
                }
            }
        };
        let index = self.vector_index().map(|v| v.as_ref());
        let touched = |moved: &store::Moved| match *moved {
            store::Moved::Moved(i) => vec![i],
            store::Moved::MergedInto(k) => vec![k, id],
            store::Moved::Unchanged(_) => vec![],
        };
        let moved =
            self.store.catalog.write(&mut conn, |c| store::move_scope(c, id, scope, &project, index), touched)?;
        let out = match moved {
            store::Moved::Moved(i) => MoveResult { id: i, status: MoveStatus::Moved },
            store::Moved::MergedInto(k) => MoveResult { id: k, status: MoveStatus::Merged },
            store::Moved::Unchanged(i) => MoveResult { id: i, status: MoveStatus::Unchanged },
        };
        // A scope change moves a note between the catalog's partitions: reload it.
        if moved != store::Moved::Unchanged(id) {
            self.store.catalog.invalidate();
        }
        Ok(out)
    }

    /// Merges note `drop` into note `keep` (one skill): `keep` takes its hits, recalls and
    /// pin; `drop` is deleted.
    pub fn merge_notes(&self, keep: i64, drop: i64) -> Result<()> {
        let mut conn = self.conn();
        let index = self.vector_index().map(|v| v.as_ref());
        self.store.catalog.write(&mut conn, |c| store::merge(c, keep, drop, index), |_| vec![keep, drop])
    }

    /// Near-duplicate pairs of one skill's notes visible from this project (as `distill`
    /// reports them), most similar first.
    pub fn duplicates_of(&self, skill: &str) -> Result<(Vec<super::DuplicatePair>, Vec<String>)> {
        let Some(model) = self.model_id() else { return Ok((vec![], vec![])) };
        let mut warnings = vec![];
        let threshold = self.config().memory.dedup_threshold;
        let skills = [skill.to_string()];
        let pairs = self.duplicate_pairs(self.project_id(), &model, threshold, skills.iter(), &mut warnings)?;
        Ok((pairs, warnings))
    }

    /// Notes written and used per day over the last `days`, visible from this project.
    pub fn activity(&self, days: u32) -> Result<Vec<DayActivity>> {
        let rows = store::activity_by_day(&self.conn(), self.project_id(), i64::from(days.min(366)))?;
        Ok(rows.into_iter().map(|(day, written, used)| DayActivity { day, written, used }).collect())
    }

    /// Every project notes were written from, with its count.
    pub fn projects_seen(&self) -> Result<Vec<(String, i64)>> {
        store::projects(&self.conn())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_queries_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", None),
            ("jq", Some("\"jq\"*")),
            ("raw out", Some("\"raw\" AND \"out\"*")),
            ("AND \"x\" col:y*", Some("\"and\" AND \"x\" AND \"col\" AND \"y\"*")),
        ];
        for (text, want) in cases {
            assert_eq!(store::search_query(text).as_deref(), *want, "{text:?}");
        }
    }
}
