//! `doctor`'s checks, a door's business: the facts the engine reads of the store
//! ([`Engine::health`]) judged ok, a warning or a failure, each problem with what to do about
//! it, in a person's words. `skillmem doctor` prints them with the hosts' wiring
//! (`hosts::setup::check`), which judges into the same [`Check`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::{Engine, Health, IndexHealth};

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

/// Checks the data directory, the schema, the history, the provenance, the full-text and
/// vector indexes, the embedder and the notes' secrets.
pub fn doctor(engine: &Engine) -> Doctor {
    judge(engine.health())
}

/// The checks of what the engine read.
pub fn judge(h: Health) -> Doctor {
    let mut checks = vec![];
    let mut add = |name: &str, status: CheckStatus, detail: String, fix: Option<String>| {
        checks.push(Check { name: name.into(), status, detail, fix });
    };
    let data = h.data_dir.display();
    match h.writable {
        Ok(()) => add("data directory", CheckStatus::Ok, format!("{data} is writable"), None),
        Err(e) => add(
            "data directory",
            CheckStatus::Fail,
            format!("{data} is not writable: {e}"),
            Some(format!("fix the permissions of {data} or point --data-dir / SKILLMEM_HOME elsewhere")),
        ),
    }
    let latest = h.latest_schema;
    match h.schema {
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
    match h.history {
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
            Some(
                "they stay restorable: skillmem notes --all-versions lists them, skillmem restore ID brings one back"
                    .into(),
            ),
        ),
        Err(e) => add("history", CheckStatus::Fail, e.to_string(), None),
    }
    match h.provenance {
        Ok(p) if !p.missing.is_empty() => add(
            "provenance",
            CheckStatus::Fail,
            format!("the notes table lacks {} (migration 0011 did not apply)", p.missing.join(", ")),
            Some(
                "restore the store from a backup or an export; a skillmem older than this store may have written it"
                    .into(),
            ),
        ),
        Ok(p) => {
            let sources: Vec<String> = p.by_source.iter().map(|(s, n)| format!("{s} {n}")).collect();
            let mut detail = if sources.is_empty() { "no notes".to_string() } else { sources.join(", ") };
            if p.unknown > 0 {
                detail.push_str(&format!("; {} written before provenance was kept (no host, no session)", p.unknown));
            }
            if p.historian_without_transcript > 0 {
                detail.push_str(&format!("; {} historian notes name no transcript", p.historian_without_transcript));
            }
            if p.pending > 0 {
                detail.push_str(&format!("; {} wait for review (skillmem review)", p.pending));
            }
            add("provenance", CheckStatus::Ok, detail, None)
        }
        Err(e) => add("provenance", CheckStatus::Fail, e.to_string(), None),
    }
    match h.fts {
        Ok(None) => add("full-text index", CheckStatus::Ok, "consistent with the notes".into(), None),
        Ok(Some(why)) => add(
            "full-text index",
            CheckStatus::Fail,
            format!("out of step with the notes: {why}"),
            Some("run skillmem doctor --fix to rebuild it from the notes".into()),
        ),
        Err(e) => add("full-text index", CheckStatus::Fail, e.to_string(), Some("run skillmem doctor --fix".into())),
    }
    match h.embedding {
        None => add(
            "embedder",
            CheckStatus::Warn,
            "embedding is off: notes are recalled by their words only".into(),
            Some("set embedding.provider (skillmem.toml) to static, the default, to recall by meaning".into()),
        ),
        Some(e) => {
            let model = &e.model_id;
            match e.probe {
                Ok(n) if n == e.dim => add("embedder", CheckStatus::Ok, format!("{model} (dim {n}) embeds"), None),
                Ok(n) => add(
                    "embedder",
                    CheckStatus::Fail,
                    format!("{model} returned {n} numbers, not {}", e.dim),
                    Some("check embedding.dim against the model".into()),
                ),
                Err(why) => add(
                    "embedder",
                    CheckStatus::Fail,
                    format!("{model} fails: {why}"),
                    Some("fix the embedding endpoint or model (skillmem model status)".into()),
                ),
            }
            match (e.stored, e.index) {
                (Ok(ids), Some(IndexHealth::Warming)) => add(
                    "vector index",
                    CheckStatus::Ok,
                    format!("still loading {} stored vectors of {model} (in the background)", ids.len()),
                    None,
                ),
                (Ok(ids), Some(IndexHealth::Missing(0))) => add(
                    "vector index",
                    CheckStatus::Ok,
                    format!("holds all {} stored vectors of {model}", ids.len()),
                    None,
                ),
                (Ok(ids), Some(IndexHealth::Missing(missing))) => add(
                    "vector index",
                    CheckStatus::Warn,
                    format!("{missing} of {} stored vectors are not in the index yet", ids.len()),
                    Some("nothing to do: they are loaded on the next recall of their skill (or delete the index folder under the data directory to rebuild it)".into()),
                ),
                (Ok(_), None) => {}
                (Err(err), _) => add("vector index", CheckStatus::Fail, err.to_string(), None),
            }
            match e.stale {
                Ok(0) => add("vectors", CheckStatus::Ok, "every visible note has a current vector".into(), None),
                Ok(n) => add(
                    "vectors",
                    CheckStatus::Warn,
                    format!("{n} notes visible from this project have no vector of {model}"),
                    Some("run skillmem distill to embed them".into()),
                ),
                Err(_) => {}
            }
        }
    }
    match h.secrets {
        Ok(found) if found.is_empty() => add("secrets", CheckStatus::Ok, "no note holds a secret".into(), None),
        Ok(found) => {
            let list: Vec<String> =
                found.iter().take(20).map(|s| format!("#{} ({}: {})", s.id, s.skill, s.what.join(", "))).collect();
            add(
                "secrets",
                CheckStatus::Fail,
                format!("{} note(s) hold a secret: {}", found.len(), list.join("; ")),
                Some("run skillmem doctor --fix to redact them (and rotate the credentials)".into()),
            )
        }
        Err(e) => add("secrets", CheckStatus::Fail, e.to_string(), None),
    }
    Doctor { checks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EmbeddingHealth, SecretNote};
    use crate::memory::store::ProvenanceHealth;

    fn healthy() -> Health {
        Health {
            data_dir: "/data".into(),
            writable: Ok(()),
            schema: Ok(18),
            latest_schema: 18,
            history: Ok((0, 2)),
            provenance: Ok(ProvenanceHealth::default()),
            fts: Ok(None),
            embedding: Some(EmbeddingHealth {
                model_id: "static".into(),
                dim: 4,
                probe: Ok(4),
                stored: Ok(vec![1, 2, 3]),
                index: Some(IndexHealth::Missing(0)),
                stale: Ok(0),
            }),
            secrets: Ok(vec![]),
        }
    }

    /// (what differs from a healthy store, the check it shows in, its status, part of its words)
    #[test]
    fn each_fact_judged() {
        type Change = fn(&mut Health);
        let cases: &[(&str, Change, &str, CheckStatus, &str)] = &[
            ("healthy", |_| {}, "schema", CheckStatus::Ok, "version 18 (the latest)"),
            ("newer schema", |h| h.schema = Ok(19), "schema", CheckStatus::Fail, "upgrade skillmem"),
            (
                "read-only",
                |h| h.writable = Err(std::io::Error::other("denied")),
                "data directory",
                CheckStatus::Fail,
                "not writable: denied",
            ),
            ("dangling history", |h| h.history = Ok((2, 5)), "history", CheckStatus::Warn, "2 replaced note(s)"),
            (
                "fts out of step",
                |h| h.fts = Ok(Some("3 rows".into())),
                "full-text index",
                CheckStatus::Fail,
                "doctor --fix",
            ),
            ("embedding off", |h| h.embedding = None, "embedder", CheckStatus::Warn, "by their words only"),
            (
                "wrong dim",
                |h| h.embedding.as_mut().unwrap().probe = Ok(3),
                "embedder",
                CheckStatus::Fail,
                "returned 3 numbers, not 4",
            ),
            (
                "index warming",
                |h| h.embedding.as_mut().unwrap().index = Some(IndexHealth::Warming),
                "vector index",
                CheckStatus::Ok,
                "still loading 3",
            ),
            (
                "index behind",
                |h| h.embedding.as_mut().unwrap().index = Some(IndexHealth::Missing(2)),
                "vector index",
                CheckStatus::Warn,
                "2 of 3 stored vectors",
            ),
            (
                "stale vectors",
                |h| h.embedding.as_mut().unwrap().stale = Ok(5),
                "vectors",
                CheckStatus::Warn,
                "skillmem distill",
            ),
            (
                "a secret",
                |h| h.secrets = Ok(vec![SecretNote { id: 7, skill: "aws".into(), what: vec!["an AWS key".into()] }]),
                "secrets",
                CheckStatus::Fail,
                "#7 (aws: an AWS key)",
            ),
        ];
        for (what, change, name, status, words) in cases {
            let mut h = healthy();
            change(&mut h);
            let d = judge(h);
            let c = d.checks.iter().find(|c| c.name == *name).unwrap_or_else(|| panic!("{what}: no {name} check"));
            let text = format!("{} {}", c.detail, c.fix.clone().unwrap_or_default());
            assert_eq!(c.status, *status, "{what}: {text}");
            assert!(text.contains(words), "{what}: {text}");
            assert_eq!(d.failed(), d.checks.iter().any(|c| c.status == CheckStatus::Fail), "{what}");
        }
        assert!(!judge(healthy()).failed());
    }
}
