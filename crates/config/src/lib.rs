//! Configuration: defaults ← `skillmem.toml` at the workspace root ← `initializationOptions`,
//! merged in one function, [`Config::resolve`].
//!
//! Both layers are read as JSON objects with camelCase keys (the TOML file's snake_case keys
//! are converted), deep-merged, and then read key by key so that an unknown key becomes a
//! warning and a value of the wrong type becomes an error that names the key.
//!
//! A leaf: the value types it resolves to are its own ([`Scope`], [`team::TeamConfig`],
//! [`EmbeddingConfig`]), so that every domain can read its settings from here without the
//! configuration reading any domain.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use skillmem_error::{Error, Result};

mod scope;
pub mod team;

pub use scope::Scope;

/// The name of the workspace configuration file.
pub const WORKSPACE_FILE: &str = "skillmem.toml";

/// Which embedder to use.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbeddingConfig {
    /// The static embedder compiled in (default): token vectors distilled from all-MiniLM-L6-v2.
    Static,
    /// The in-process hash embedder (words only).
    Hash,
    /// No vectors: recall uses the lexical rungs only.
    Off,
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Http { url: String, model: String, api_key_env: Option<String>, dim: Option<usize> },
    /// A local sentence-embedding model folder.
    Model { path: PathBuf },
}

/// Skill-memory settings (`memory`).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    pub max_tokens: usize,
    pub max_pinned_tokens: usize,
    pub dedup_threshold: f32,
    /// Cosine at or above which a new note that shares a specific with an existing one (or
    /// differs from it only in polarity) is read as a new version of it: both are kept and
    /// recorded as a conflicting pair (`memory.conflictThreshold`; see `memory::sameness`).
    pub conflict_threshold: f32,
    pub enabled_skills: Vec<String>,
    /// The host's name for the note tool, shown in the guidance line of every block
    /// (`memory.noteTool`). Each door sets its own default (see `Config::default_note_tool`).
    pub note_tool: Option<String>,
    /// The host's name for the feedback tool, named in the guidance line
    /// (`memory.feedbackTool`). Each door sets its own default (`Config::default_feedback_tool`).
    pub feedback_tool: Option<String>,
    /// The most of a block's budget unverified notes may take (`memory.unverifiedShare`, 0 to
    /// 1): 0 hides them, 1 lifts the cap.
    pub unverified_share: f32,
    /// A note with specifics shown in this many sessions and never used is retired
    /// (`memory.retireUnusedAfter`; 0 never retires).
    pub retire_unused_after: u32,
    /// A mined lesson is held (stored, listed in review, never in a block) until the same
    /// lesson was mined in this many distinct sessions, or a person accepts it
    /// (`memory.minedSupport`, at least 1; 1 shows a lesson from its first session).
    pub mined_support: u32,
    /// The chance that a load withholds one eligible unverified note from its block
    /// (`memory.holdout`, 0 to 1; 0 never): the sessions a note's lift is measured against.
    pub holdout: f32,
    /// The seed of the holdout's draws (`memory.holdoutSeed`): a draw is a function of the
    /// seed, the session and the skill, so a replay withholds the same notes.
    pub holdout_seed: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_tokens: 1500,
            max_pinned_tokens: 4000,
            dedup_threshold: 0.92,
            conflict_threshold: 0.8,
            enabled_skills: vec![],
            note_tool: None,
            feedback_tool: None,
            unverified_share: 0.25,
            retire_unused_after: 6,
            mined_support: 2,
            holdout: 0.1,
            holdout_seed: 0,
        }
    }
}

/// Historian settings (`historian`).
#[derive(Debug, Clone, PartialEq)]
pub struct HistorianConfig {
    pub promote_scope: Scope,
    /// `historian.review`: promoted observations wait for a person (`skillmem review`, the
    /// dashboard's review queue) before they are recalled. Off by default.
    pub review: bool,
}

impl Default for HistorianConfig {
    fn default() -> Self {
        Self { promote_scope: Scope::Global, review: false }
    }
}

/// One `[skills.audit] allow` entry: a finding of `rule` in skill `skill` is accepted, for
/// `reason` (the audit turns it into `info` and lists it with the reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditAllow {
    pub skill: String,
    pub rule: String,
    pub reason: String,
}

/// Session-skill settings (`skills`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillsConfig {
    /// `skills.audit.allow`: accepted audit findings.
    pub audit_allow: Vec<AuditAllow>,
}

/// The whole configuration of one sidecar.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub data_dir: PathBuf,
    pub project_id: Option<String>,
    pub embedding: EmbeddingConfig,
    pub memory: MemoryConfig,
    pub historian: HistorianConfig,
    pub skills: SkillsConfig,
    /// Team memory through PostgreSQL (`team`), when configured.
    pub team: Option<team::TeamConfig>,
    /// The host notes are recorded as written from (`host`; each door sets its own default,
    /// see [`Config::default_host`]).
    pub host: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: default_data_dir(),
            project_id: None,
            embedding: EmbeddingConfig::Static,
            memory: MemoryConfig::default(),
            historian: HistorianConfig::default(),
            skills: SkillsConfig::default(),
            team: None,
            host: None,
        }
    }
}

/// `$SKILLMEM_HOME`, else the platform data dir (`~/.local/share/skillmem`).
pub fn default_data_dir() -> PathBuf {
    if let Some(h) = std::env::var_os("SKILLMEM_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    dirs::data_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/share")))
        .unwrap_or_else(std::env::temp_dir)
        .join("skillmem")
}

/// A resolved configuration and the warnings met on the way (unknown keys).
#[derive(Debug)]
pub struct Resolved {
    pub config: Config,
    pub warnings: Vec<String>,
}

impl Config {
    /// Sets the door's own name for the note tool (`skill_note` for MCP, the MCP tool's full
    /// name for the Claude Code hook), unless the configuration names one.
    pub fn default_note_tool(&mut self, tool: &str) {
        self.memory.note_tool.get_or_insert_with(|| tool.to_string());
    }

    /// Sets the door's own name for the feedback tool, unless the configuration names one.
    pub fn default_feedback_tool(&mut self, tool: &str) {
        self.memory.feedback_tool.get_or_insert_with(|| tool.to_string());
    }

    /// Sets the door's own name for the host notes are written from (`claude-code`, `cli`,
    /// an LSP client's name, ...), unless the configuration names one.
    pub fn default_host(&mut self, host: &str) {
        if !host.trim().is_empty() {
            self.host.get_or_insert_with(|| host.trim().to_string());
        }
    }

    /// Merges defaults ← `<workspace>/skillmem.toml` ← `init_options`.
    pub fn resolve(workspace: Option<&Path>, init_options: Option<&Value>) -> Result<Resolved> {
        let mut merged = Value::Object(Map::new());
        if let Some(ws) = workspace {
            let file = ws.join(WORKSPACE_FILE);
            if file.is_file() {
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| Error::invalid(format!("cannot read {}: {e}", file.display())))?;
                let table: toml::Value = toml::from_str(&text)
                    .map_err(|e| Error::invalid(format!("{} is not valid TOML: {e}", file.display())))?;
                let json = serde_json::to_value(table).map_err(|e| Error::invalid(e.to_string()))?;
                merge(&mut merged, camel_keys(json));
            }
        }
        if let Some(opts) = init_options {
            match opts {
                Value::Null => {}
                Value::Object(_) => merge(&mut merged, opts.clone()),
                _ => return Err(Error::invalid("initializationOptions must be an object")),
            }
        }
        Self::from_value(&merged)
    }

    /// Reads a merged camelCase object over the defaults.
    pub fn from_value(v: &Value) -> Result<Resolved> {
        let mut cfg = Config::default();
        let mut warnings = vec![];
        let Some(obj) = v.as_object() else { return Ok(Resolved { config: cfg, warnings }) };
        for (key, val) in obj {
            match key.as_str() {
                "dataDir" => cfg.data_dir = PathBuf::from(string(val, "dataDir")?),
                "projectId" => cfg.project_id = Some(string(val, "projectId")?),
                "host" => cfg.host = Some(string(val, "host")?).filter(|h| !h.trim().is_empty()),
                "embedding" => cfg.embedding = embedding(val, &mut warnings)?,
                "memory" => {
                    for (k, x) in object(val, "memory")? {
                        let name = format!("memory.{k}");
                        match k.as_str() {
                            "maxTokens" => cfg.memory.max_tokens = uint(x, &name)?,
                            "maxPinnedTokens" => cfg.memory.max_pinned_tokens = uint(x, &name)?,
                            "dedupThreshold" => {
                                let t = float(x, &name)?;
                                if !(0.0..=1.0).contains(&t) {
                                    return Err(Error::invalid(format!("{name} must be between 0 and 1, got {t}")));
                                }
                                cfg.memory.dedup_threshold = t as f32;
                            }
                            "conflictThreshold" => {
                                let t = float(x, &name)?;
                                if !(0.0..=1.0).contains(&t) {
                                    return Err(Error::invalid(format!("{name} must be between 0 and 1, got {t}")));
                                }
                                cfg.memory.conflict_threshold = t as f32;
                            }
                            "enabledSkills" => cfg.memory.enabled_skills = strings(x, &name)?,
                            "noteTool" => {
                                let tool = string(x, &name)?;
                                if tool.trim().is_empty() {
                                    return Err(Error::invalid(format!(
                                        "{name} must name the note tool, not be empty"
                                    )));
                                }
                                cfg.memory.note_tool = Some(tool);
                            }
                            "feedbackTool" => {
                                let tool = string(x, &name)?;
                                if tool.trim().is_empty() {
                                    return Err(Error::invalid(format!(
                                        "{name} must name the feedback tool, not be empty"
                                    )));
                                }
                                cfg.memory.feedback_tool = Some(tool);
                            }
                            "unverifiedShare" => {
                                let t = float(x, &name)?;
                                if !(0.0..=1.0).contains(&t) {
                                    return Err(Error::invalid(format!(
                                        "{name} must be between 0 (hide unverified notes) and 1 (no cap), got {t}"
                                    )));
                                }
                                cfg.memory.unverified_share = t as f32;
                            }
                            "minedSupport" => {
                                let n = uint(x, &name)?;
                                cfg.memory.mined_support = u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                                    Error::invalid(format!(
                                        "{name} must be a number of sessions, at least 1 (1 shows a mined lesson from its first session), got {n}"
                                    ))
                                })?;
                            }
                            "retireUnusedAfter" => {
                                let n = uint(x, &name)?;
                                cfg.memory.retire_unused_after = u32::try_from(n).map_err(|_| {
                                    Error::invalid(format!("{name} must be a number of sessions, got {n}"))
                                })?;
                            }
                            "holdout" => {
                                let t = float(x, &name)?;
                                if !(0.0..=1.0).contains(&t) {
                                    return Err(Error::invalid(format!(
                                        "{name} must be between 0 (never withhold) and 1 (a note at every load), got {t}"
                                    )));
                                }
                                cfg.memory.holdout = t as f32;
                            }
                            "holdoutSeed" => cfg.memory.holdout_seed = uint(x, &name)? as u64,
                            _ => warnings.push(format!("unknown configuration key {name} (ignored)")),
                        }
                    }
                }
                "historian" => {
                    for (k, x) in object(val, "historian")? {
                        let name = format!("historian.{k}");
                        match k.as_str() {
                            "promoteScope" => {
                                let s = string(x, &name)?;
                                cfg.historian.promote_scope =
                                    s.parse().map_err(|e| Error::invalid(format!("{name}: {e}")))?;
                            }
                            "review" => {
                                cfg.historian.review = x
                                    .as_bool()
                                    .ok_or_else(|| Error::invalid(format!("{name} must be true or false, got {x}")))?;
                            }
                            _ => warnings.push(format!("unknown configuration key {name} (ignored)")),
                        }
                    }
                }
                "team" => cfg.team = Some(team::from_value(val, &mut warnings)?),
                "skills" => {
                    for (k, x) in object(val, "skills")? {
                        match k.as_str() {
                            "audit" => {
                                for (k, x) in object(x, "skills.audit")? {
                                    let name = format!("skills.audit.{k}");
                                    match k.as_str() {
                                        "allow" => cfg.skills.audit_allow = audit_allow(x, &name)?,
                                        _ => warnings.push(format!("unknown configuration key {name} (ignored)")),
                                    }
                                }
                            }
                            _ => warnings.push(format!("unknown configuration key skills.{k} (ignored)")),
                        }
                    }
                }
                _ => warnings.push(format!("unknown configuration key {key} (ignored)")),
            }
        }
        Ok(Resolved { config: cfg, warnings })
    }
}

fn embedding(v: &Value, warnings: &mut Vec<String>) -> Result<EmbeddingConfig> {
    let obj = object(v, "embedding")?;
    let provider =
        obj.get("provider").map(|p| string(p, "embedding.provider")).transpose()?.unwrap_or_else(|| "static".into());
    let allowed: &[&str] = match provider.as_str() {
        "static" | "hash" | "off" => &["provider"],
        "http" => &["provider", "url", "model", "apiKeyEnv", "dim"],
        "model" => &["provider", "path"],
        other => {
            return Err(Error::invalid(format!(
                "embedding.provider must be one of \"static\", \"hash\", \"http\", \"model\", \"off\"; got {other:?}"
            )))
        }
    };
    for k in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        warnings.push(format!("unknown configuration key embedding.{k} for provider {provider} (ignored)"));
    }
    let need = |k: &str| -> Result<String> {
        obj.get(k)
            .map(|x| string(x, &format!("embedding.{k}")))
            .transpose()?
            .ok_or_else(|| Error::invalid(format!("embedding.{k} is required for provider {provider:?}")))
    };
    Ok(match provider.as_str() {
        "static" => EmbeddingConfig::Static,
        "hash" => EmbeddingConfig::Hash,
        "off" => EmbeddingConfig::Off,
        "http" => EmbeddingConfig::Http {
            url: need("url")?,
            model: need("model")?,
            api_key_env: obj.get("apiKeyEnv").map(|x| string(x, "embedding.apiKeyEnv")).transpose()?,
            dim: obj.get("dim").map(|x| uint(x, "embedding.dim")).transpose()?,
        },
        _ => EmbeddingConfig::Model { path: PathBuf::from(need("path")?) },
    })
}

fn object<'a>(v: &'a Value, key: &str) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| Error::invalid(format!("{key} must be an object, got {}", type_name(v))))
}

fn string(v: &Value, key: &str) -> Result<String> {
    v.as_str().map(str::to_owned).ok_or_else(|| Error::invalid(format!("{key} must be a string, got {}", type_name(v))))
}

fn uint(v: &Value, key: &str) -> Result<usize> {
    v.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| Error::invalid(format!("{key} must be a non-negative whole number, got {v}")))
}

fn float(v: &Value, key: &str) -> Result<f64> {
    v.as_f64().ok_or_else(|| Error::invalid(format!("{key} must be a number, got {}", type_name(v))))
}

fn strings(v: &Value, key: &str) -> Result<Vec<String>> {
    let arr =
        v.as_array().ok_or_else(|| Error::invalid(format!("{key} must be a list of strings, got {}", type_name(v))))?;
    arr.iter().map(|x| string(x, key)).collect()
}

/// `skills.audit.allow`: a list of `{ skill, rule, reason }`, each a non-empty string (an
/// acceptance without a reason is what the reason is there to prevent).
fn audit_allow(v: &Value, key: &str) -> Result<Vec<AuditAllow>> {
    let arr = v.as_array().ok_or_else(|| {
        Error::invalid(format!("{key} must be a list of {{ skill, rule, reason }}, got {}", type_name(v)))
    })?;
    let mut out = vec![];
    for (i, e) in arr.iter().enumerate() {
        let name = format!("{key}[{i}]");
        let obj = object(e, &name)?;
        let field = |f: &str| -> Result<String> {
            let s = obj.get(f).map(|x| string(x, &format!("{name}.{f}"))).transpose()?.unwrap_or_default();
            if s.trim().is_empty() {
                return Err(Error::invalid(format!("{name} needs a non-empty {f}")));
            }
            Ok(s.trim().to_string())
        };
        if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "skill" | "rule" | "reason")) {
            return Err(Error::invalid(format!("{name} has an unknown key {k}; it takes skill, rule and reason")));
        }
        out.push(AuditAllow { skill: field("skill")?, rule: field("rule")?, reason: field("reason")? });
    }
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Deep-merges `over` into `base` (objects merge key by key; anything else replaces).
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Converts every object key from snake_case to camelCase, recursively.
fn camel_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (camel(&k), camel_keys(v))).collect()),
        Value::Array(a) => Value::Array(a.into_iter().map(camel_keys).collect()),
        other => other,
    }
}

fn camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn layers_merge_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(WORKSPACE_FILE),
            "[memory]\nmax_tokens = 900\ndedup_threshold = 0.5\nenabled_skills = [\"git-*\"]\n",
        )
        .unwrap();
        let r = Config::resolve(Some(dir.path()), Some(&json!({"memory": {"maxTokens": 700}}))).unwrap();
        assert_eq!(r.config.memory.max_tokens, 700);
        assert_eq!(r.config.memory.dedup_threshold, 0.5);
        assert_eq!(r.config.memory.enabled_skills, vec!["git-*".to_string()]);
        assert_eq!(r.config.memory.max_pinned_tokens, 4000);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn audit_allow_entries_are_read_from_the_toml_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(WORKSPACE_FILE),
            "[skills.audit]\nallow = [{ skill = \"deploy\", rule = \"fetch-pipe-shell\", reason = \"our own installer\" }]\n",
        )
        .unwrap();
        let r = Config::resolve(Some(dir.path()), None).unwrap();
        assert_eq!(
            r.config.skills.audit_allow,
            vec![AuditAllow {
                skill: "deploy".into(),
                rule: "fetch-pipe-shell".into(),
                reason: "our own installer".into()
            }]
        );
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn table_of_bad_values() {
        let cases = [
            (json!({"memory": {"maxTokens": "lots"}}), "memory.maxTokens"),
            (json!({"memory": 3}), "memory must be an object"),
            (json!({"embedding": {"provider": "magic"}}), "embedding.provider"),
            (json!({"embedding": {"provider": "http"}}), "embedding.url is required"),
            (json!({"historian": {"promoteScope": "team"}}), "historian.promoteScope"),
            (json!({"memory": {"dedupThreshold": 3}}), "between 0 and 1"),
            (json!({"dataDir": 5}), "dataDir must be a string"),
            (
                json!({"skills": {"audit": {"allow": [{"skill": "a", "rule": "r"}]}}}),
                "skills.audit.allow[0] needs a non-empty reason",
            ),
            (json!({"skills": {"audit": {"allow": {"skill": "a"}}}}), "skills.audit.allow must be a list"),
            (json!({"team": {"url": "postgres://a:pw@h/db", "team": "t"}}), "team.passwordEnv"),
        ];
        for (v, want) in cases {
            let err = Config::from_value(&v).unwrap_err().to_string();
            assert!(err.contains(want), "{v}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_warnings() {
        let r = Config::from_value(&json!({"colour": 1, "memory": {"maxTokenz": 3}})).unwrap();
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    }

    #[test]
    fn use_and_trust_keys() {
        let r = Config::from_value(
            &json!({"memory": {"feedbackTool": "fb", "unverifiedShare": 0.5, "retireUnusedAfter": 3, "minedSupport": 3}}),
        )
        .unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let m = &r.config.memory;
        assert_eq!(
            (m.feedback_tool.as_deref(), m.unverified_share, m.retire_unused_after, m.mined_support),
            (Some("fb"), 0.5, 3, 3)
        );
        let d = MemoryConfig::default();
        assert_eq!((d.unverified_share, d.retire_unused_after, d.mined_support), (0.25, 6, 2));
        for bad in [
            json!({"memory": {"unverifiedShare": 1.5}}),
            json!({"memory": {"unverifiedShare": -0.1}}),
            json!({"memory": {"retireUnusedAfter": -1}}),
            json!({"memory": {"retireUnusedAfter": "six"}}),
            json!({"memory": {"feedbackTool": ""}}),
            json!({"memory": {"minedSupport": 0}}),
            json!({"memory": {"minedSupport": "two"}}),
        ] {
            let e = Config::from_value(&bad).unwrap_err().to_string();
            assert!(e.contains("memory."), "{bad}: {e}");
        }
    }

    #[test]
    fn note_tool_is_a_known_key() {
        let r = Config::from_value(&json!({"memory": {"noteTool": "ctx_skill_note"}})).unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.config.memory.note_tool.as_deref(), Some("ctx_skill_note"));
        let mut cfg = r.config.clone();
        cfg.default_note_tool("skill_note");
        assert_eq!(cfg.memory.note_tool.as_deref(), Some("ctx_skill_note"), "the configured name wins");
        let mut cfg = Config::default();
        cfg.default_note_tool("skill_note");
        assert_eq!(cfg.memory.note_tool.as_deref(), Some("skill_note"));
        assert!(Config::from_value(&json!({"memory": {"noteTool": " "}})).is_err());
        assert!(Config::from_value(&json!({"memory": {"noteTool": 3}})).is_err());
    }

    #[test]
    fn snake_to_camel() {
        for (a, b) in [("max_tokens", "maxTokens"), ("data_dir", "dataDir"), ("x", "x"), ("api_key_env", "apiKeyEnv")] {
            assert_eq!(camel(a), b);
        }
    }
}
