//! Curation: what a person (the dashboard, `skillmem notes|export|import|doctor`) and a host
//! (`skillmem/notes`, `skillmem/preview`, `skillmem/move`, `skillmem/merge`) do with the whole
//! memory: list notes with filters, search, sort and pages; move a note between project and
//! global scope; merge near-duplicate pairs; preview the block a load would append (without
//! counting a recall); export and import; check the data directory.
//!
//! Every statement over `notes` is in `memory/store/curate.rs`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::embed::embed_notes;
use crate::error::{Error, Result};
use crate::memory::evidence::Evidence;
use crate::memory::store::{self, ListOrder, ListQuery};
use crate::memory::{norm_hash, Kind, Note, Origin, RecallMode, Scope, Source, WriteStatus};

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
    /// Sessions shown it, that used it, that ignored it; when it was last used.
    #[serde(flatten)]
    pub evidence: Evidence,
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

/// One note of an export (a line of JSONL): its metadata, its content hash and the embedder
/// that made its vector; never the vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedNote {
    /// Its id in the exporting store (informational: an import assigns new ids).
    #[serde(default)]
    pub id: Option<i64>,
    pub skill: String,
    pub scope: Scope,
    /// The project a project note belongs to ('' for global).
    #[serde(default)]
    pub project_id: String,
    #[serde(default)]
    pub origin_project: String,
    pub source: Source,
    pub kind: Kind,
    #[serde(default)]
    pub intent: String,
    pub delta: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub hits: i64,
    #[serde(default)]
    pub recalls: i64,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub skill_hash: Option<String>,
    #[serde(default)]
    pub created_at: i64,
    #[serde(default)]
    pub updated_at: i64,
    /// The hash of the lesson's normalised text; checked on import when present.
    #[serde(default)]
    pub content_hash: Option<String>,
    /// The model id of the note's vector in the exporting store (null: none).
    #[serde(default)]
    pub embedder: Option<String>,
    /// When it left recall (replaced or retired), for a note of the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
    /// The `id` (of this export) of the note that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<i64>,
    /// Why it was replaced or retired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The host's session it was written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The host, and for the historian the transcript and where in it.
    #[serde(default, flatten)]
    pub origin: Origin,
    /// Who first wrote it, for a note that came to the exporting store by import or team pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_source: Option<Source>,
    /// Waiting for review in the exporting store: imported as waiting.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// Sessions shown it, that used it, that ignored it; when it was last used: an import
    /// that inserts the note keeps them.
    #[serde(default, flatten)]
    pub evidence: Evidence,
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExportFormat {
    /// One JSON note a line ([`ExportedNote`]); what `import` reads.
    #[default]
    Jsonl,
    /// Markdown, for reading.
    Md,
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    /// Notes in the file.
    pub read: usize,
    pub inserted: usize,
    /// Exact or near duplicates of a stored note (or of an earlier line): its hits bumped.
    pub duplicates: usize,
    /// Notes whose vector was made by another embedder than this one (or none), embedded anew.
    pub reembedded: usize,
    pub warnings: Vec<String>,
}

/// How a doctor check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckStatus {
    Ok,
    Warn,
    Fail,
}

/// One check of `doctor`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    pub detail: String,
    /// What to do about it, when it is not ok.
    #[serde(default)]
    pub fix: Option<String>,
}

/// What `doctor` found.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Doctor {
    pub checks: Vec<Check>,
}

impl Doctor {
    /// Whether any check failed.
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.status == CheckStatus::Fail)
    }
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
        review_replaces: n.review_replaces,
        evidence: Evidence::default(),
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
            },
            offset,
            limit,
            model: model.as_deref(),
            include_history: f.include_superseded,
            pending: f.pending,
            session: f.session_id.as_deref().filter(|s| !s.is_empty()),
        };
        let conn = self.conn();
        let (total, rows) = store::list(&conn, &q)?;
        let ids: Vec<i64> = rows.iter().map(|r| r.note.id).collect();
        let evidence = store::evidence_of(&conn, &ids)?;
        drop(conn);
        let notes: Vec<ListedNote> = rows
            .into_iter()
            .map(listed)
            .map(|mut n| {
                n.evidence = evidence.get(&n.id).copied().unwrap_or_default();
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
        let before = self.catalog.before_write(&conn);
        let moved = store::move_scope(&mut conn, id, scope, &project, self.vector_index().map(|v| v.as_ref()))?;
        let (out, touched) = match moved {
            store::Moved::Moved(i) => (MoveResult { id: i, status: MoveStatus::Moved }, vec![i]),
            store::Moved::MergedInto(k) => (MoveResult { id: k, status: MoveStatus::Merged }, vec![k, id]),
            store::Moved::Unchanged(i) => (MoveResult { id: i, status: MoveStatus::Unchanged }, vec![]),
        };
        // A scope change moves a note between the catalog's partitions: reload it.
        self.catalog.after_write(&conn, before, &touched);
        if moved != store::Moved::Unchanged(id) {
            self.catalog.invalidate();
        }
        Ok(out)
    }

    /// Merges note `drop` into note `keep` (one skill): `keep` takes its hits, recalls and
    /// pin; `drop` is deleted.
    pub fn merge_notes(&self, keep: i64, drop: i64) -> Result<()> {
        let mut conn = self.conn();
        let before = self.catalog.before_write(&conn);
        store::merge(&mut conn, keep, drop, self.vector_index().map(|v| v.as_ref()))?;
        self.catalog.after_write(&conn, before, &[keep, drop]);
        Ok(())
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

    // ---- export / import ---------------------------------------------------------------

    /// Every note (of one skill, of one scope), oldest first, as an export writes it.
    pub fn export_notes(&self, skill: Option<&str>, scope: Option<Scope>) -> Result<Vec<ExportedNote>> {
        let (rows, evidence) = {
            let conn = self.conn();
            let rows = store::export_rows(&conn, skill, scope)?;
            let ids: Vec<i64> = rows.iter().map(|r| r.note.id).collect();
            let evidence = store::evidence_of(&conn, &ids)?;
            (rows, evidence)
        };
        rows.into_iter()
            .map(|r| {
                let n = r.note;
                Ok(ExportedNote {
                    evidence: evidence.get(&n.id).copied().unwrap_or_default(),
                    id: Some(n.id),
                    skill: n.skill,
                    scope: n.scope,
                    project_id: r.project_id,
                    origin_project: n.origin_project,
                    source: n.source,
                    kind: n.kind,
                    intent: n.intent,
                    delta: n.delta,
                    tags: n.tags,
                    hits: n.hits,
                    recalls: n.recalls,
                    pinned: n.pinned,
                    skill_hash: n.skill_hash,
                    created_at: n.created_at,
                    updated_at: n.updated_at,
                    content_hash: Some(r.norm_hash),
                    embedder: r.vector_model,
                    retired_at: n.retired_at,
                    superseded_by: n.superseded_by,
                    reason: n.reason,
                    session_id: n.session_id,
                    origin: n.origin,
                    origin_source: n.origin_source,
                    pending: n.pending,
                })
            })
            .collect()
    }

    /// Reads an export (JSONL) and writes its notes in one transaction. Every line is checked
    /// first: a malformed line aborts the import with its line number, and nothing is written.
    pub fn import_notes(&self, text: &str) -> Result<Imported> {
        let mut notes = parse_export(text)?;
        let mut out = Imported { read: notes.len(), ..Default::default() };
        // Secrets are redacted before anything is embedded or stored; a note that would be
        // left with nothing but a marker is not imported, and the warnings say which.
        let mut redacted = 0;
        notes.retain_mut(|n| {
            n.intent = crate::text::redact::redact(&n.intent).0;
            match crate::text::redact::redact_lesson(&n.delta) {
                Ok((d, what)) => {
                    redacted += usize::from(!what.is_empty());
                    n.delta = d;
                    true
                }
                Err(why) => {
                    out.warnings.push(format!("a note of {} was not imported: {why}", n.skill));
                    false
                }
            }
        });
        if redacted > 0 {
            out.warnings.push(format!("{redacted} note(s) held secrets and were imported with them redacted"));
        }
        let model = self.model_id();
        // Vectors are never exported: every note is embedded by this embedder.
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; notes.len()];
        if let Some(e) = self.embedder() {
            for (chunk_i, chunk) in notes.chunks(64).enumerate() {
                let pairs: Vec<(&str, &str)> = chunk.iter().map(|n| (n.intent.as_str(), n.delta.as_str())).collect();
                match embed_notes(e.as_ref(), &pairs) {
                    Ok(vs) if vs.len() == chunk.len() && vs.iter().all(|v| v.len() == e.dim()) => {
                        for (i, v) in vs.into_iter().enumerate() {
                            vectors[chunk_i * 64 + i] = Some(v);
                        }
                    }
                    Ok(_) => out.warnings.push("the embedder returned vectors of the wrong size; some notes were stored without a vector (run skillmem distill)".into()),
                    Err(why) => out.warnings.push(format!(
                        "{why}; some notes were stored without a vector (found by their words; run skillmem distill later)"
                    )),
                }
            }
            out.reembedded = notes
                .iter()
                .zip(&vectors)
                .filter(|(n, v)| v.is_some() && n.embedder.as_deref() != model.as_deref())
                .count();
        }
        let evidence: Vec<Evidence> = notes.iter().map(|n| n.evidence).collect();
        let rows: Vec<store::ImportRow> = notes
            .into_iter()
            .zip(vectors)
            .map(|(n, vector)| store::ImportRow {
                // A project note without its projectId (written by hand) belongs to the
                // project it was written from.
                project_id: if n.project_id.is_empty() { n.origin_project.clone() } else { n.project_id.clone() },
                note: Note {
                    // The export's id: history rows name their successor by it.
                    id: n.id.unwrap_or(0),
                    skill: n.skill,
                    scope: n.scope,
                    origin_project: if n.origin_project.is_empty() { n.project_id } else { n.origin_project },
                    // An imported note came by import; who first wrote it is kept beside.
                    source: Source::Import,
                    origin_source: match n.source {
                        Source::Agent | Source::Historian | Source::Transcript => Some(n.source),
                        Source::Import | Source::Team => n.origin_source,
                    },
                    session_id: n.session_id,
                    origin: n.origin,
                    pending: n.pending,
                    review_replaces: None,
                    kind: n.kind,
                    intent: n.intent,
                    delta: n.delta.trim().to_string(),
                    tags: n.tags,
                    hits: n.hits.max(0),
                    recalls: n.recalls.max(0),
                    pinned: n.pinned,
                    skill_hash: n.skill_hash,
                    created_at: n.created_at,
                    updated_at: n.updated_at.max(n.created_at),
                    retired_at: n.retired_at,
                    superseded_by: n.superseded_by,
                    reason: n.reason,
                },
                vector,
            })
            .collect();
        let threshold = crate::memory::sameness::Thresholds {
            merge: self.config().memory.dedup_threshold,
            subject: self.config().memory.conflict_threshold,
        };
        let written = {
            let mut conn = self.conn();
            let w = store::import_rows(&mut conn, &rows, model.as_deref(), threshold)?;
            let kept: Vec<(i64, Evidence)> = w
                .iter()
                .zip(&evidence)
                .filter(|((_, s), e)| *s == WriteStatus::Inserted && **e != Evidence::default())
                .map(|((id, _), e)| (*id, *e))
                .collect();
            store::add_evidence(&mut conn, &kept)?;
            self.pieces_missing();
            self.catalog.invalidate();
            w
        };
        if let Some(ix) = self.vector_index() {
            for ((id, status), row) in written.iter().zip(&rows) {
                if let (WriteStatus::Inserted, Some(v)) = (status, &row.vector) {
                    ix.insert(*id, v);
                }
            }
        }
        out.inserted = written.iter().filter(|(_, s)| *s == WriteStatus::Inserted).count();
        out.duplicates = written.len() - out.inserted;
        Ok(out)
    }

    // ---- doctor ------------------------------------------------------------------------

    /// Checks the data directory, the schema, the full-text and vector indexes, the embedder,
    /// says what to do about each problem. (The hosts' wiring is `hosts::setup`'s check.)
    pub fn doctor(&self) -> Doctor {
        let mut checks = vec![];
        let mut add = |name: &str, status: CheckStatus, detail: String, fix: Option<String>| {
            checks.push(Check { name: name.into(), status, detail, fix });
        };
        let data = &self.config().data_dir;
        let probe = data.join(".doctor-probe");
        match std::fs::write(&probe, b"ok").and_then(|_| std::fs::remove_file(&probe)) {
            Ok(()) => add("data directory", CheckStatus::Ok, format!("{} is writable", data.display()), None),
            Err(e) => add(
                "data directory",
                CheckStatus::Fail,
                format!("{} is not writable: {e}", data.display()),
                Some(format!(
                    "fix the permissions of {} or point --data-dir / SKILLMEM_HOME elsewhere",
                    data.display()
                )),
            ),
        }
        let latest = crate::db::MIGRATIONS.len() as i64;
        let version: Result<i64> =
            self.conn().pragma_query_value(None, "user_version", |r| r.get(0)).map_err(Into::into);
        match version {
            Ok(v) if v == latest => add("schema", CheckStatus::Ok, format!("version {v} (the latest)"), None),
            Ok(v) => add(
                "schema",
                CheckStatus::Fail,
                format!("version {v}, this skillmem knows {latest}"),
                Some("a newer skillmem wrote this store: upgrade skillmem".into()),
            ),
            Err(e) => add(
                "schema",
                CheckStatus::Fail,
                e.to_string(),
                Some("the database cannot be read; restore it from a backup or an export".into()),
            ),
        }
        match store::history_health(&self.conn()) {
            Ok((0, history)) => add(
                "history",
                CheckStatus::Ok,
                format!("{history} note(s) replaced or retired, each restorable (skillmem notes --all-versions)"),
                None,
            ),
            Ok((dangling, _)) => add(
                "history",
                CheckStatus::Warn,
                format!("{dangling} replaced note(s) name a successor that is gone"),
                Some("they stay restorable: skillmem notes --all-versions lists them, skillmem restore ID brings one back".into()),
            ),
            Err(e) => add("history", CheckStatus::Fail, e.to_string(), None),
        }
        match store::provenance_health(&self.conn()) {
            Ok(h) if !h.missing.is_empty() => add(
                "provenance",
                CheckStatus::Fail,
                format!("the notes table lacks {} (migration 0011 did not apply)", h.missing.join(", ")),
                Some("restore the store from a backup or an export; a skillmem older than this store may have written it".into()),
            ),
            Ok(h) => {
                let sources: Vec<String> = h.by_source.iter().map(|(s, n)| format!("{s} {n}")).collect();
                let mut detail = if sources.is_empty() { "no notes".to_string() } else { sources.join(", ") };
                if h.unknown > 0 {
                    detail.push_str(&format!(
                        "; {} written before provenance was kept (no host, no session)",
                        h.unknown
                    ));
                }
                if h.historian_without_transcript > 0 {
                    detail.push_str(&format!("; {} historian notes name no transcript", h.historian_without_transcript));
                }
                if h.pending > 0 {
                    detail.push_str(&format!("; {} wait for review (skillmem review)", h.pending));
                }
                add("provenance", CheckStatus::Ok, detail, None)
            }
            Err(e) => add("provenance", CheckStatus::Fail, e.to_string(), None),
        }
        match store::fts_integrity(&self.conn()) {
            Ok(None) => add("full-text index", CheckStatus::Ok, "consistent with the notes".into(), None),
            Ok(Some(why)) => add(
                "full-text index",
                CheckStatus::Fail,
                format!("out of step with the notes: {why}"),
                Some("run skillmem doctor --fix to rebuild it from the notes".into()),
            ),
            Err(e) => {
                add("full-text index", CheckStatus::Fail, e.to_string(), Some("run skillmem doctor --fix".into()))
            }
        }
        match (self.embedder(), self.vector_index()) {
            (None, _) => add(
                "embedder",
                CheckStatus::Warn,
                "embedding is off: notes are recalled by their words only".into(),
                Some("set embedding.provider (skillmem.toml) to static, the default, to recall by meaning".into()),
            ),
            (Some(e), ix) => {
                match e.embed_one("doctor check") {
                    Ok(v) if v.len() == e.dim() => {
                        add("embedder", CheckStatus::Ok, format!("{} (dim {}) embeds", e.model_id(), e.dim()), None)
                    }
                    Ok(v) => add(
                        "embedder",
                        CheckStatus::Fail,
                        format!("{} returned {} numbers, not {}", e.model_id(), v.len(), e.dim()),
                        Some("check embedding.dim against the model".into()),
                    ),
                    Err(why) => add(
                        "embedder",
                        CheckStatus::Fail,
                        format!("{} fails: {why}", e.model_id()),
                        Some("fix the embedding endpoint or model (skillmem model status)".into()),
                    ),
                }
                let stored = store::ids_with_vectors(&self.conn(), e.model_id());
                let stale = store::stale_vectors(&self.conn(), self.project_id(), Some(e.model_id()));
                match (stored, ix) {
                    (Ok(ids), Some(ix)) if ix.warming() => add(
                        "vector index",
                        CheckStatus::Ok,
                        format!("still loading {} stored vectors of {} (in the background)", ids.len(), e.model_id()),
                        None,
                    ),
                    (Ok(ids), Some(ix)) => {
                        let missing = ids.iter().filter(|id| !ix.contains(**id)).count();
                        if missing == 0 {
                            add(
                                "vector index",
                                CheckStatus::Ok,
                                format!("holds all {} stored vectors of {}", ids.len(), e.model_id()),
                                None,
                            )
                        } else {
                            add(
                                "vector index",
                                CheckStatus::Warn,
                                format!("{missing} of {} stored vectors are not in the index yet", ids.len()),
                                Some("nothing to do: they are loaded on the next recall of their skill (or delete the index folder under the data directory to rebuild it)".into()),
                            )
                        }
                    }
                    (Ok(_), None) => {}
                    (Err(err), _) => add("vector index", CheckStatus::Fail, err.to_string(), None),
                }
                if let Ok(n) = stale {
                    if n > 0 {
                        add(
                            "vectors",
                            CheckStatus::Warn,
                            format!("{n} notes visible from this project have no vector of {}", e.model_id()),
                            Some("run skillmem distill to embed them".into()),
                        );
                    } else {
                        add("vectors", CheckStatus::Ok, "every visible note has a current vector".into(), None);
                    }
                }
            }
        }
        match self.notes_with_secrets(true) {
            Ok(found) if found.is_empty() => {
                checks.push(Check {
                    name: "secrets".into(),
                    status: CheckStatus::Ok,
                    detail: "no note holds a secret".into(),
                    fix: None,
                });
            }
            Ok(found) => {
                let list: Vec<String> =
                    found.iter().take(20).map(|s| format!("#{} ({}: {})", s.id, s.skill, s.what.join(", "))).collect();
                checks.push(Check {
                    name: "secrets".into(),
                    status: CheckStatus::Fail,
                    detail: format!("{} note(s) hold a secret: {}", found.len(), list.join("; ")),
                    fix: Some("run skillmem doctor --fix to redact them (and rotate the credentials)".into()),
                });
            }
            Err(e) => checks.push(Check {
                name: "secrets".into(),
                status: CheckStatus::Fail,
                detail: e.to_string(),
                fix: None,
            }),
        }
        Doctor { checks }
    }

    /// Rebuilds the full-text index (`doctor --fix`).
    pub fn rebuild_fts(&self) -> Result<()> {
        store::fts_rebuild(&mut self.conn())
    }
}

/// Parses an export: one [`ExportedNote`] a line (blank lines skipped). The first bad line is
/// an error naming it.
pub fn parse_export(text: &str) -> Result<Vec<ExportedNote>> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| Error::invalid(format!("line {n}: {why}; nothing was imported"));
        let note: ExportedNote = serde_json::from_str(line).map_err(|e| bad(format!("not a note: {e}")))?;
        if note.skill.trim().is_empty() {
            return Err(bad("skill is empty".into()));
        }
        if note.delta.trim().is_empty() {
            return Err(bad("delta is empty".into()));
        }
        if note.scope == Scope::Project && note.project_id.is_empty() && note.origin_project.is_empty() {
            return Err(bad("a project note needs its projectId".into()));
        }
        if let Some(h) = &note.content_hash {
            if *h != norm_hash(&note.delta) {
                return Err(bad(format!(
                    "contentHash {h} does not match the lesson (edited by hand? drop the contentHash field of that line)"
                )));
            }
        }
        out.push(note);
    }
    Ok(out)
}

/// Writes notes as JSONL (one [`ExportedNote`] a line).
pub fn to_jsonl(notes: &[ExportedNote]) -> String {
    let mut s = String::new();
    for n in notes {
        s.push_str(&serde_json::to_string(n).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// Writes notes as Markdown: a section per skill, a bullet per note with its metadata.
pub fn to_markdown(notes: &[ExportedNote]) -> String {
    let mut by_skill: BTreeMap<&str, Vec<&ExportedNote>> = BTreeMap::new();
    for n in notes {
        by_skill.entry(&n.skill).or_default().push(n);
    }
    let mut s = String::from("# skillmem notes\n");
    for (skill, ns) in by_skill {
        s.push_str(&format!("\n## {skill}\n\n"));
        for n in ns {
            let one_line = n.delta.replace('\n', " ");
            s.push_str(&format!(
                "- **{}** {}{}: {}\n",
                n.kind.as_str(),
                n.scope.as_str(),
                if n.pinned { ", pinned" } else { "" },
                one_line
            ));
            let mut meta = vec![
                format!("source {}", n.source.as_str()),
                format!("hits {}", n.hits),
                format!("recalls {}", n.recalls),
            ];
            if !n.intent.is_empty() {
                meta.insert(0, format!("intent: {}", n.intent.replace('\n', " ")));
            }
            if let Some(h) = &n.content_hash {
                meta.push(format!("content hash {h}"));
            }
            if let Some(e) = &n.embedder {
                meta.push(format!("embedder {e}"));
            }
            if !n.project_id.is_empty() {
                meta.push(format!("project {}", n.project_id));
            }
            if let Some(o) = n.origin_source {
                meta.push(format!("first written by the {}", o.as_str()));
            }
            if let Some(h) = &n.origin.host {
                meta.push(format!("host {h}"));
            }
            if let Some(s) = &n.session_id {
                meta.push(format!("session {s}"));
            }
            if let Some(t) = &n.origin.transcript {
                let at = n.origin.transcript_at.as_deref().map(|a| format!(" ({a})")).unwrap_or_default();
                meta.push(format!("transcript {t}{at}"));
            }
            if n.pending {
                meta.push("waiting for review".into());
            }
            s.push_str(&format!("  - {}\n", meta.join(" · ")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_lines_table() {
        let good = r#"{"skill":"jq","scope":"global","source":"agent","kind":"gotcha","delta":"use -r"}"#;
        let cases: &[(&str, Result<usize, &str>)] = &[
            ("", Ok(0)),
            (good, Ok(1)),
            (&format!("{good}\n\n{good}\n"), Ok(2)),
            (&format!("{good}\n{{not json\n"), Err("line 2: not a note")),
            (r#"{"skill":"jq","scope":"global","source":"agent","kind":"tip","delta":"x"}"#, Err("line 1: not a note")),
            (
                r#"{"skill":"","scope":"global","source":"agent","kind":"fix","delta":"x"}"#,
                Err("line 1: skill is empty"),
            ),
            (
                r#"{"skill":"jq","scope":"global","source":"agent","kind":"fix","delta":"  "}"#,
                Err("line 1: delta is empty"),
            ),
            (
                r#"{"skill":"jq","scope":"project","source":"agent","kind":"fix","delta":"x"}"#,
                Err("needs its projectId"),
            ),
            (
                r#"{"skill":"jq","scope":"global","source":"agent","kind":"fix","delta":"x","contentHash":"00"}"#,
                Err("contentHash 00 does not match"),
            ),
        ];
        for (text, want) in cases {
            match (parse_export(text), want) {
                (Ok(v), Ok(n)) => assert_eq!(v.len(), *n, "{text:?}"),
                (Err(e), Err(w)) => {
                    let e = e.to_string();
                    assert!(e.contains(w) && e.contains("nothing was imported"), "{text:?}: {e}");
                }
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }

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
