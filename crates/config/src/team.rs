//! The `[team]` section: which PostgreSQL server and team this data directory shares its notes
//! with. Read by [`crate::Config`] (one merge of defaults ← `skillmem.toml` ←
//! `initializationOptions`), checked here key by key; used by `team` to reach the server.

use serde_json::{Map, Value};

use skillmem_error::{Error, Result};

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

    /// What the local sync state belongs to: the server (URL), the team and what is shared.
    /// A different target starts the sync over (see docs/team.md).
    pub fn target(&self) -> String {
        format!("{} team={} share={}", self.url, self.team, self.share.as_str())
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
        .ok_or_else(|| Error::invalid(format!("team.url must start with postgres:// or postgresql://, got {url:?}")))?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        if userinfo.contains(':') {
            return Err(Error::invalid(
                "team.url holds a password; remove it and name the environment variable that holds it in team.passwordEnv",
            ));
        }
    }
    if url.contains("password=") {
        return Err(Error::invalid(
            "team.url holds a password parameter; remove it and name the environment variable that holds it in team.passwordEnv",
        ));
    }
    // The full parse is the client's (the team crate, at connect, with the same message); the
    // one mistake caught here beyond the above is a port that is not a number.
    for host in authority.rsplit('@').next().unwrap_or("").split(',') {
        let port = if host.starts_with('[') {
            host.rsplit_once("]:").map(|(_, p)| p)
        } else {
            host.rsplit_once(':').map(|(_, p)| p)
        };
        if port.is_some_and(|p| p.parse::<u16>().is_err()) {
            return Err(Error::invalid(format!(
                "team.url is not a PostgreSQL URL: invalid port {:?}",
                port.unwrap_or("")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_of_sections() {
        // (section, Ok(share) or Err(part of the message))
        let cases: Vec<(Value, std::result::Result<Share, &str>)> = vec![
            (json!({"url": "postgres://a@h/db", "team": "core"}), Ok(Share::Global)),
            (
                json!({"url": "postgresql://a@h:5433/db", "team": "core", "share": "global+project"}),
                Ok(Share::GlobalAndProject),
            ),
            (json!({"url": "postgres://a@h1:5432,h2:5433/db", "team": "core"}), Ok(Share::Global)),
            (json!({"url": "postgres://a@[::1]:5432/db", "team": "core"}), Ok(Share::Global)),
            (json!({"url": "postgres://a@h:port/db", "team": "core"}), Err("invalid port")),
            (json!({"url": "postgres://a:secret@h/db", "team": "core"}), Err("holds a password")),
            (json!({"url": "postgres://h/db?password=x", "team": "core"}), Err("password parameter")),
            (json!({"url": "mysql://h/db", "team": "core"}), Err("must start with postgres://")),
            (json!({"team": "core"}), Err("team.url is required")),
            (json!({"url": "postgres://h/db"}), Err("team.team is required")),
            (json!({"url": "postgres://h/db", "team": "  "}), Err("team.team is required")),
            (json!({"url": "postgres://h/db", "team": "x", "share": "all"}), Err("team.share")),
            (json!({"url": 5, "team": "x"}), Err("team.url must be a string")),
            (json!("postgres://h/db"), Err("team must be an object")),
        ];
        for (v, want) in cases {
            let mut w = vec![];
            match (from_value(&v, &mut w), want) {
                (Ok(c), Ok(share)) => assert_eq!(c.share, share, "{v}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{v}: {e}"),
                (got, want) => panic!("{v}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn unknown_keys_warn_and_password_comes_from_the_environment() {
        let mut w = vec![];
        let c = from_value(
            &json!({"url": "postgres://a@h/db", "team": "t", "pasword": "x", "passwordEnv": "SKILLMEM_TEST_UNSET_PW"}),
            &mut w,
        )
        .unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        let err = c.password().unwrap_err().to_string();
        assert!(err.contains("SKILLMEM_TEST_UNSET_PW"), "{err}");
    }
}
