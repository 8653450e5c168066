//! Wire types of the session-skill methods (PROTOCOL.md, "Session skills").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::skills::{SeedAction, SeedOp, SkillInfo};

/// An LSP progress token (`workDoneToken`): a number or a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProgressToken {
    Number(i32),
    String(String),
}

/// `skillmem/skills/install` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallParams {
    /// https, ssh, `file://` URL or absolute local path of a git repository.
    pub url: String,
    /// Branch, tag or commit; default HEAD.
    #[serde(default, rename = "ref")]
    pub r#ref: Option<String>,
    /// When given, the install reports `$/progress` under this token.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// `skillmem/skills/install` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallResult {
    pub skills: Vec<SkillInfo>,
    /// Names the source no longer provides (a reinstall that dropped them); removed.
    pub removed: Vec<String>,
}

/// `skillmem/skills/update` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    pub source: String,
    /// Re-pin to this ref instead of the one the source was installed with.
    #[serde(default, rename = "ref")]
    pub r#ref: Option<String>,
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// `skillmem/skills/update` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateResult {
    pub skills: Vec<SkillInfo>,
    pub removed: Vec<String>,
}

/// `skillmem/skills/remove` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveParams {
    pub source: String,
}

/// `skillmem/skills/remove` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveResult {
    pub removed: Vec<String>,
}

/// `skillmem/skills/list` params (none).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {}

/// One source of `skillmem/skills/list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    pub source: String,
    pub pinned_ref: String,
    /// The ref asked for at install (branch, tag or commit), if any.
    #[serde(default)]
    pub requested_ref: Option<String>,
    pub skills: Vec<SkillInfo>,
}

/// `skillmem/skills/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    pub sources: Vec<SourceInfo>,
}

/// `skillmem/skills/resolve` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveParams {
    #[serde(default)]
    pub global: Vec<String>,
    #[serde(default)]
    pub list: Vec<String>,
    #[serde(default)]
    pub task: Vec<String>,
}

/// `skillmem/skills/resolve` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveResult {
    pub skills: Vec<String>,
    pub dropped: Vec<String>,
}

/// `skillmem/skills/seed` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedParams {
    /// Absolute path of the session's working folder.
    pub cwd: String,
    pub skills: Vec<String>,
    /// Relative folder under cwd; default `.claude/skills`.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
}

/// `skillmem/skills/seed` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedResult {
    pub actions: Vec<SeedAction>,
    pub warnings: Vec<String>,
}
