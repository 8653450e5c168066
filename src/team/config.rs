//! The `[team]` section: which PostgreSQL server and team this data directory shares its notes
//! with. Read by [`crate::config`] (one merge of defaults ← `skillmem.toml` ←
//! `initializationOptions`), checked here key by key.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// What a machine shares with its team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Global notes only (the default).
    Global,
    /// Global notes, and project notes with the machines whose project identity matches.
    GlobalAndProject,
}

impl Share {
    /// The configured spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Share::Global => "global",
            Share::GlobalAndProject => "global+project",
        }
    }
}

/// The resolved `[team]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamConfig {
    /// A PostgreSQL URL without a password (`postgres://user@host:5432/db?sslmode=require`).
    pub url: String,
    /// The environment variable that holds the password, if the server asks for one.
    pub password_env: Option<String>,
    /// The team's name: its notes are the rows of this team.
    pub team: String,
    pub share: Share,
}

impl TeamConfig {
    /// The password, read from the variable named by `passwordEnv` (never from the file).
    pub fn password(&self) -> Result<Option<String>> {
        let Some(var) = &self.password_env else { return Ok(None) };
        match std::env::var(var) {
            Ok(p) => Ok(Some(p)),
            Err(_) => Err(Error::invalid(format!(
                "team.passwordEnv names the variable {var}, which is not set; export {var}=<the password of the team's PostgreSQL role>"
            ))),
        }
    }

    /// What the local sync state belongs to: the server (URL) and the team. A different
    /// target starts the sync over (see docs/team.md).
    pub fn target(&self) -> String {
        format!("{} team={}", self.url, self.team)
    }
}

/// Reads `team` (camelCase keys); unknown keys become warnings.
pub fn from_value(v: &Value, warnings: &mut Vec<String>) -> Result<TeamConfig> {
    let obj: &Map<String, Value> =
        v.as_object().ok_or_else(|| Error::invalid("team must be an object with url and team"))?;
    let string = |k: &str| -> Result<Option<String>> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Error::invalid(format!("team.{k} must be a string, got {other}"))),
        }
    };
    for k in obj.keys() {
        if !["url", "passwordEnv", "team", "share"].contains(&k.as_str()) {
            warnings.push(format!("unknown configuration key team.{k} (ignored)"));
        }
    }
    let url = string("url")?.filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        Error::invalid("team.url is required: a PostgreSQL URL such as postgres://alice@db.example.com/skillmem")
    })?;
    check_url(&url)?;
    let team = string("team")?
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid("team.team is required: the name of the team whose notes this machine shares"))?;
    if team.len() > 200 || team.chars().any(char::is_control) {
        return Err(Error::invalid("team.team must be a short name without control characters"));
    }
    let password_env = string("passwordEnv")?.filter(|s| !s.trim().is_empty());
    let share = match string("share")?.as_deref() {
        None | Some("global") => Share::Global,
        Some("global+project") => Share::GlobalAndProject,
        Some(other) => {
            return Err(Error::invalid(format!("team.share must be \"global\" or \"global+project\", got {other:?}")))
        }
    };
    Ok(TeamConfig { url, password_env, team, share })
}

/// A PostgreSQL URL, with no password in it.
fn check_url(url: &str) -> Result<()> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
        .ok_or_else(|| Error::invali