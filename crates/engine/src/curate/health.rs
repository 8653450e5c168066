//! What `doctor` reads of the store, as facts: whether the data directory takes a write, the
//! schema's version, the history's and the provenance's health, whether the full-text index is
//! in step with the notes, the embedder's answer and the vectors it has, the notes holding a
//! secret; and the full-text rebuild `doctor --fix` runs. Judging them (ok, a warning, a
//! failure) and saying what to do is the door's (`src/doctor.rs` of the root package): the
//! engine knows no wording of a report.

use std::path::PathBuf;

use super::super::{Engine, SecretNote};
use skillmem_error::Result;
use skillmem_store::memory::store::{self, ProvenanceHealth};

/// The facts `doctor` judges.
#[derive(Debug)]
pub struct Health {
    pub data_dir: PathBuf,
    /// A probe file written and removed in the data directory, or the error.
    pub writable: std::io::Result<()>,
    /// The schema's version (`PRAGMA user_version`).
    pub schema: Result<i64>,
    /// The latest version this build knows.
    pub latest_schema: i64,
    /// (replaced notes whose successor is gone, notes replaced or retired).
    pub history: Result<(i64, i64)>,
    pub provenance: Result<ProvenanceHealth>,
    /// `None` when the full-text index is in step with the notes, else why not.
    pub fts: Result<Option<String>>,
    /// `None` when embedding is off.
    pub embedding: Option<EmbeddingHealth>,
    /// The notes (of every project) that hold a secret.
    pub secrets: Result<Vec<SecretNote>>,
}

/// The embedder's part of [`Health`].
#[derive(Debug)]
pub struct EmbeddingHealth {
    pub model_id: String,
    pub dim: usize,
    /// The length of the vector a probe text got, or why it got none.
    pub probe: std::result::Result<usize, String>,
    /// The notes with a stored vector of this model.
    pub stored: Result<Vec<i64>>,
    /// The vector index, when there is one.
    pub index: Option<IndexHealth>,
    /// Notes visible from this project with no vector of this model.
    pub stale: Result<i64>,
}

/// The vector index's part of [`EmbeddingHealth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexHealth {
    /// Still loading in the background.
    Warming,
    /// Loaded: how many of the stored vectors it lacks.
    Missing(usize),
}

impl Engine {
    /// Reads what `doctor` judges. (The hosts' wiring is `hosts::setup`'s check.)
    pub fn health(&self) -> Health {
        let data_dir = self.config().data_dir.clone();
        let probe = data_dir.join(".doctor-probe");
        let writable = std::fs::write(&probe, b"ok").and_then(|_| std::fs::remove_file(&probe));
        let schema = self.conn().pragma_query_value(None, "user_version", |r| r.get(0)).map_err(Into::into);
        let embedding = self.embedder().map(|e| {
            let probe = match e.embed_one("doctor check") {
                Ok(v) => Ok(v.len()),
                Err(why) => Err(why.to_string()),
            };
            let stored = store::ids_with_vectors(&self.conn(), e.model_id());
            let index = match (&stored, self.vector_index()) {
                (_, None) => None,
                (_, Some(ix)) if ix.warming() => Some(IndexHealth::Warming),
                (Ok(ids), Some(ix)) => Some(IndexHealth::Missing(ids.iter().filter(|id| !ix.contains(**id)).count())),
                (Err(_), Some(_)) => None,
            };
            let stale = store::stale_vectors(&self.conn(), self.project_id(), Some(e.model_id()));
            EmbeddingHealth { model_id: e.model_id().to_string(), dim: e.dim(), probe, stored, index, stale }
        });
        // One statement each: a connection guard lives to the end of its statement, and a
        // struct expression holding two would wait on itself.
        let history = store::history_health(&self.conn());
        let provenance = store::provenance_health(&self.conn());
        let fts = store::fts_integrity(&self.conn());
        let secrets = self.notes_with_secrets(true);
        Health {
            data_dir,
            writable,
            schema,
            latest_schema: skillmem_store::db::MIGRATIONS.len() as i64,
            history,
            provenance,
            fts,
            embedding,
            secrets,
        }
    }

    /// Rebuilds the full-text index (`doctor --fix`).
    pub fn rebuild_fts(&self) -> Result<()> {
        store::fts_rebuild(&mut self.conn())
    }
}
