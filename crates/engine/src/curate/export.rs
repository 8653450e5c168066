//! Export and import: every note with its metadata, content hash and embedder id
//! ([`ExportedNote`]), and an import in one transaction, each note checked, redacted and
//! embedded by this store's embedder. The file formats (JSONL, Markdown) are the door's:
//! `src/export.rs` of the root package.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::Engine;
use skillmem_embed::embed_notes;
use skillmem_error::{Error, Result};
use skillmem_store::memory::evidence::Evidence;
use skillmem_store::memory::store;
use skillmem_store::memory::{norm_hash, Kind, Note, Origin, Scope, Source, WriteStatus};

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
    /// What backs the note (a mined lesson's failed call, error lines, the call that worked
    /// and their positions; a historian lesson's error line); absent when nothing does. An import keeps it
    /// (redacted).
    #[serde(rename = "evidence", default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<skillmem_store::memory::Backing>,
    /// A mined lesson's sessions, each named by the SHA-256 (hex) of its host's session id:
    /// the exporting store's own and those its imports counted (not its team's, which travel
    /// by sync). An import counts each session once, however many files name it, and none of
    /// its own; a file without them counts `evidence.sessions` as sessions of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mined_sessions: Vec<String>,
}

impl ExportedNote {
    /// What makes a note of an export one that can be imported, or why not: a skill and a
    /// lesson, a project note's project, a content hash (when given) that is the lesson's.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.skill.trim().is_empty() {
            return Err("skill is empty".into());
        }
        if self.delta.trim().is_empty() {
            return Err("delta is empty".into());
        }
        if self.scope == Scope::Project && self.project_id.is_empty() && self.origin_project.is_empty() {
            return Err("a project note needs its projectId".into());
        }
        if let Some(h) = &self.content_hash {
            if *h != norm_hash(&self.delta) {
                return Err(format!(
                    "contentHash {h} does not match the lesson (edited by hand? drop the contentHash field of that line)"
                ));
            }
        }
        Ok(())
    }
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

impl Engine {
    /// Every note (of one skill, of one scope), oldest first, as an export writes it.
    pub fn export_notes(&self, skill: Option<&str>, scope: Option<Scope>) -> Result<Vec<ExportedNote>> {
        let (rows, evidence, mut backing, mut sessions) = {
            let conn = self.conn();
            let rows = store::export_rows(&conn, skill, scope)?;
            let ids: Vec<i64> = rows.iter().map(|r| r.note.id).collect();
            let evidence = store::evidence_of(&conn, &ids)?;
            let backing = super::super::historian::backing_of(&conn, &ids)?;
            let mut sessions = std::collections::HashMap::new();
            for r in &rows {
                if let Some(key) = backing.get(&r.note.id).and_then(|b| b.key.as_deref()) {
                    sessions.insert(r.note.id, store::lesson_sessions(&conn, &r.note.skill, key)?);
                }
            }
            (rows, evidence, backing, sessions)
        };
        rows.into_iter()
            .map(|r| {
                let n = r.note;
                Ok(ExportedNote {
                    evidence: evidence.get(&n.id).copied().unwrap_or_default(),
                    backing: backing.remove(&n.id),
                    mined_sessions: sessions.remove(&n.id).unwrap_or_default(),
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

    /// Writes the notes of an export (read by the door that owns the file format,
    /// `skillmem::export`) in one transaction. Every note is checked first
    /// ([`ExportedNote::check`]): one that cannot be imported aborts the import, and nothing is
    /// written.
    pub fn import_notes(&self, mut notes: Vec<ExportedNote>) -> Result<Imported> {
        for (i, n) in notes.iter().enumerate() {
            n.check().map_err(|why| Error::invalid(format!("note {}: {why}; nothing was imported", i + 1)))?;
        }
        let mut out = Imported { read: notes.len(), ..Default::default() };
        // Secrets are redacted before anything is embedded or stored; a note that would be
        // left with nothing but a marker is not imported, and the warnings say which.
        let mut redacted = 0;
        notes.retain_mut(|n| {
            n.intent = skillmem_text::redact::redact(&n.intent).0;
            match skillmem_text::redact::redact_lesson(&n.delta) {
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
        let mined_sessions: Vec<Vec<String>> =
            notes.iter_mut().map(|n| std::mem::take(&mut n.mined_sessions)).collect();
        let backing: Vec<Option<skillmem_store::memory::Backing>> =
            notes.iter_mut().map(|n| n.backing.take().map(skillmem_store::memory::Backing::redacted)).collect();
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
                    match_pieces: None,
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
        let threshold = skillmem_store::memory::sameness::Thresholds {
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
            // What backs a note comes with it (a note met again keeps the record it has). A
            // mined lesson's support comes too: the sessions the export names, each counted
            // once however often it is imported and not at all when it is one of this
            // machine's own (`store::lesson_support`), so that a held lesson is released by
            // sessions that are distinct, here or on other machines, never by importing again.
            let needed = i64::from(self.config().memory.mined_support.max(1));
            let mut released = vec![];
            for ((((id, _), b), row), named) in w.iter().zip(&backing).zip(&rows).zip(&mined_sessions) {
                if let Some(b) = b {
                    store::set_evidence(&mut conn, *id, &serde_json::to_string(b).unwrap_or_default())?;
                    let Some(key) = &b.key else { continue };
                    let sessions: Vec<String> = if named.is_empty() {
                        // An export that names no session (written before they were named):
                        // its count, as sessions of its own.
                        (0..b.sessions.unwrap_or(0).clamp(0, 1000)).map(|i| format!("imported:{i}")).collect()
                    } else {
                        let tokens: Vec<String> = named
                            .iter()
                            .map(|t| t.trim().to_ascii_lowercase())
                            .filter(|t| store::is_session_token(t))
                            .take(1000)
                            .map(|t| format!("imported:{t}"))
                            .collect();
                        if tokens.len() < named.len().min(1000) {
                            out.warnings.push(format!(
                                "a mined lesson of {} named sessions that are no SHA-256: they were not counted",
                                row.note.skill
                            ));
                        }
                        tokens
                    };
                    let mut support = 0;
                    for session in &sessions {
                        support = store::record_support(&mut conn, &row.note.skill, key, session, *id)?;
                    }
                    if support >= needed && store::release(&mut conn, *id)? {
                        released.push(*id);
                    }
                }
            }
            if !released.is_empty() {
                out.warnings.push(format!(
                    "{} held mined lesson(s) released into recall: their support reached memory.minedSupport ({needed})",
                    released.len()
                ));
            }
            self.pieces_missing();
            self.store.catalog.invalidate();
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
}
