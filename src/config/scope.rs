//! A note's scope, the one value of the memory's vocabulary the configuration reads
//! (`historian.promoteScope`). It lives here, below both, so that the configuration needs
//! nothing of `memory`; `memory::Scope` re-exports it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a note is visible: under its project identity only, or from every project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Project,
    Global,
}

impl Scope {
    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "project" => Some(Scope::Project),
            "global" => Some(Scope::Global),
            _ => None,
        }
    }
}
