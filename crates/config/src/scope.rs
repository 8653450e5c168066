//! A note's scope, the one value of the memory's vocabulary the configuration reads
//! (`historian.promoteScope`). It lives here, below both, so that the configuration needs
//! nothing of `memory`; `memory::Scope` re-exports it.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use skillmem_error::Error;

/// Where a note is visible: under its project identity only, or from every project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Project,
    Global,
}

impl Scope {
    /// Both scopes, in their documented order.
    pub const ALL: [Scope; 2] = [Scope::Project, Scope::Global];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }
}

/// The one parse of a scope, from text (the CLI, the protocol, the configuration, a stored
/// row) and from JSON (through `Deserialize`); its error lists the scopes.
impl FromStr for Scope {
    type Err = Error;

    /// The stored and wire spelling, exactly.
    fn from_str(s: &str) -> Result<Scope, Error> {
        Scope::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| Error::invalid(format!("scope {s:?} is not a note scope; use one of project, global")))
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, the scope; or the error)
    #[test]
    fn scopes_parse() {
        let cases: &[(&str, Result<Scope, &str>)] = &[
            ("project", Ok(Scope::Project)),
            ("global", Ok(Scope::Global)),
            ("Global", Err("scope \"Global\" is not a note scope; use one of project, global")),
            ("team", Err("scope \"team\" is not a note scope; use one of project, global")),
            ("", Err("scope \"\" is not a note scope; use one of project, global")),
        ];
        for (text, want) in cases {
            match (text.parse::<Scope>(), want) {
                (Ok(s), Ok(w)) => assert_eq!(s, *w, "{text:?}"),
                (Err(e), Err(w)) => assert_eq!(e.to_string(), *w, "{text:?}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
        let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["project", "global"], "the error's list");
        for s in Scope::ALL {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
            assert_eq!(serde_json::from_value::<Scope>(json).unwrap(), s);
        }
        let e = serde_json::from_value::<Scope>(serde_json::json!("team")).unwrap_err().to_string();
        assert!(e.contains("use one of project, global"), "{e}");
    }
}
