//! `doctor`: the data directory, the schema, the full-text and vector indexes, the embedder
//! and the notes' secrets checked, each problem with what to do about it; and the full-text
//! rebuild `doctor --fix` runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::Engine;
use skillmem_error::Result;
use skillmem_store::memory::store;

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

impl Engine {
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
        let latest = skillmem_store::db::MIGRATIONS.len() as i64;
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
