//! Session skills: `skillmem/skills/{install,update,remove,list,resolve,seed,audit,verify,lock,installLocked}`.
//! docs/protocol.md, "Session skills".

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Cx, Method, ProgressToken};
use skillmem_engine::Engine;
use skillmem_error::Result;

pub use skillmem_engine::{
    Audited as AuditResult, Installed as InstallResult, Installed as UpdateResult, Locked as LockResult,
    LockedInstall as InstallLockedResult, Removed as RemoveResult, Resolved as ResolveResult, Seeded as SeedResult,
    SourceInfo, Sources as ListResult, Verified as VerifyResult,
};
pub use skillmem_skills::{Choice, Offered, Refused, SeedAction, SeedOp, SkillInfo};

/// `skillmem/skills/install` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallParams {
    /// The git repository: an https, http, ssh, git or file:// URL, user@host:path, or an
    /// absolute local path.
    pub url: String,
    /// Branch, tag or commit to pin to; default the repository's HEAD.
    #[serde(default, rename = "ref")]
    pub r#ref: Option<String>,
    /// Only the skills in this folder of the repository (relative, without `..`).
    #[serde(default)]
    pub path: Option<String>,
    /// Only these skills: names, or a subpath (`plugins/p/skills/x`) to pick one of two
    /// skills of one name.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Install the one chosen skill under this name.
    #[serde(default, rename = "as")]
    pub r#as: Option<String>,
    /// Say what the repository offers (`offered`) and install nothing.
    #[serde(default)]
    pub list: bool,
    /// Audit rules a skill may block on and still install; each acceptance is recorded in
    /// the skill's warnings.
    #[serde(default)]
    pub accept_risk: Vec<String>,
    /// An LSP progress token: `$/progress` is reported under it while cloning.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// Installs the skills of a git repository into the store, pinned to a commit (or lists them).
pub struct Install;

impl Method for Install {
    const NAME: &'static str = "skillmem/skills/install";
    const STEM: &'static str = "skills.install";
    type Params = InstallParams;
    type Result = InstallResult;

    fn progress(p: &InstallParams) -> Option<(ProgressToken, &'static str)> {
        p.work_done_token.clone().map(|t| (t, "Installing skills"))
    }

    fn run(engine: &Engine, p: InstallParams, cx: &Cx<'_>) -> Result<InstallResult> {
        let choice = Choice { path: p.path, skills: p.skills, rename: p.r#as };
        engine.skills_install(&p.url, p.r#ref.as_deref(), &choice, p.list, &p.accept_risk, cx.progress)
    }
}

/// `skillmem/skills/update` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateParams {
    /// The source as `skills/list` shows it.
    pub source: String,
    /// Re-pin to this branch, tag or commit instead of the ref it was installed with.
    #[serde(default, rename = "ref")]
    pub r#ref: Option<String>,
    /// Only say what the update would change (`plan`: files, commit log, the audit's new
    /// findings) and write nothing.
    #[serde(default)]
    pub preview: bool,
    /// An LSP progress token: `$/progress` is reported under it while fetching.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// Fetches an installed source again, or re-pins it.
pub struct Update;

impl Method for Update {
    const NAME: &'static str = "skillmem/skills/update";
    const STEM: &'static str = "skills.update";
    type Params = UpdateParams;
    type Result = UpdateResult;

    fn progress(p: &UpdateParams) -> Option<(ProgressToken, &'static str)> {
        p.work_done_token.clone().map(|t| (t, "Updating skills"))
    }

    fn run(engine: &Engine, p: UpdateParams, cx: &Cx<'_>) -> Result<UpdateResult> {
        if p.preview {
            return engine.skills_update_preview(&p.source, p.r#ref.as_deref(), cx.progress);
        }
        engine.skills_update(&p.source, p.r#ref.as_deref(), cx.progress)
    }
}

/// `skillmem/skills/remove` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveParams {
    /// The source as `skills/list` shows it.
    pub source: String,
}

/// Removes an installed source and its skills from the store.
pub struct Remove;

impl Method for Remove {
    const NAME: &'static str = "skillmem/skills/remove";
    const STEM: &'static str = "skills.remove";
    type Params = RemoveParams;
    type Result = RemoveResult;

    fn run(engine: &Engine, p: RemoveParams, _: &Cx<'_>) -> Result<RemoveResult> {
        engine.skills_remove(&p.source)
    }
}

/// `skillmem/skills/list` params: none (an empty object or omitted).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {}

/// Every installed source and its skills.
pub struct List;

impl Method for List {
    const NAME: &'static str = "skillmem/skills/list";
    const STEM: &'static str = "skills.list";
    type Params = ListParams;
    type Result = ListResult;

    fn no_params() -> Option<ListParams> {
        Some(ListParams {})
    }

    fn run(engine: &Engine, _: ListParams, _: &Cx<'_>) -> Result<ListResult> {
        engine.skills_list()
    }
}

/// `skillmem/skills/resolve` params (all optional; may be omitted).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveParams {
    /// Skills every session gets.
    #[serde(default)]
    pub global: Vec<String>,
    /// Skills of the task list.
    #[serde(default)]
    pub list: Vec<String>,
    /// Skills of this task.
    #[serde(default)]
    pub task: Vec<String>,
}

/// The skills a session should get: global ∪ list ∪ task, installed ones only.
pub struct Resolve;

impl Method for Resolve {
    const NAME: &'static str = "skillmem/skills/resolve";
    const STEM: &'static str = "skills.resolve";
    type Params = ResolveParams;
    type Result = ResolveResult;

    fn no_params() -> Option<ResolveParams> {
        Some(ResolveParams::default())
    }

    fn run(engine: &Engine, p: ResolveParams, _: &Cx<'_>) -> Result<ResolveResult> {
        engine.skills_resolve(&p.global, &p.list, &p.task)
    }
}

/// `skillmem/skills/seed` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedParams {
    /// Absolute path of the session's working folder (must exist).
    pub cwd: String,
    /// The skill names to seed (`skills/resolve` gives them).
    pub skills: Vec<String>,
    /// Folder under cwd, relative, without `..`: `.claude/skills` (default),
    /// `.opencode/skills`, `.agents/skills` (Codex), `.gemini/skills`, `.github/skills`
    /// (Copilot), `.pi/skills`, ...
    #[serde(default)]
    pub target: Option<String>,
    /// Report the actions without writing anything.
    #[serde(default)]
    pub dry_run: bool,
}

/// Copies installed skills into a session's working folder, git-ignored.
pub struct Seed;

impl Method for Seed {
    const NAME: &'static str = "skillmem/skills/seed";
    const STEM: &'static str = "skills.seed";
    type Params = SeedParams;
    type Result = SeedResult;

    fn run(engine: &Engine, p: SeedParams, _: &Cx<'_>) -> Result<SeedResult> {
        engine.skills_seed(Path::new(&p.cwd), &p.skills, p.target.as_deref(), p.dry_run)
    }
}

/// `skillmem/skills/audit` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditParams {
    /// Installed skill names or absolute paths of skill folders (a SKILL.md stands for its
    /// folder); empty or omitted: every installed skill.
    #[serde(default)]
    pub targets: Vec<String>,
}

/// A static, offline audit of skill folders: findings and a verdict per folder.
pub struct Audit;

impl Method for Audit {
    const NAME: &'static str = "skillmem/skills/audit";
    const STEM: &'static str = "skills.audit";
    type Params = AuditParams;
    type Result = AuditResult;

    fn no_params() -> Option<AuditParams> {
        Some(AuditParams::default())
    }

    fn run(engine: &Engine, p: AuditParams, _: &Cx<'_>) -> Result<AuditResult> {
        engine.skills_audit(&p.targets)
    }
}

/// `skillmem/skills/verify` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyParams {
    /// Also check the copies seeded under this absolute folder.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The seed targets under `cwd` to look in; default every known one (`.claude/skills`,
    /// `.opencode/skills`, `.agents/skills`, `.gemini/skills`, `.github/skills`, `.pi/skills`).
    #[serde(default)]
    pub targets: Vec<String>,
}

/// Checks the stored skills against their digests, and the seeded copies against the store.
pub struct Verify;

impl Method for Verify {
    const NAME: &'static str = "skillmem/skills/verify";
    const STEM: &'static str = "skills.verify";
    type Params = VerifyParams;
    type Result = VerifyResult;

    fn no_params() -> Option<VerifyParams> {
        Some(VerifyParams::default())
    }

    fn run(engine: &Engine, p: VerifyParams, _: &Cx<'_>) -> Result<VerifyResult> {
        engine.skills_verify(p.cwd.as_deref().map(Path::new), &p.targets)
    }
}

/// `skillmem/skills/lock` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockParams {
    /// The absolute folder to write `skillmem.lock` in; default the workspace.
    #[serde(default)]
    pub dir: Option<String>,
}

/// Writes `skillmem.lock`: every installed source at its commit, per skill its digests and
/// audit verdict.
pub struct Lock;

impl Method for Lock {
    const NAME: &'static str = "skillmem/skills/lock";
    const STEM: &'static str = "skills.lock";
    type Params = LockParams;
    type Result = LockResult;

    fn no_params() -> Option<LockParams> {
        Some(LockParams::default())
    }

    fn run(engine: &Engine, p: LockParams, _: &Cx<'_>) -> Result<LockResult> {
        engine.skills_lock(p.dir.as_deref().map(Path::new))
    }
}

/// `skillmem/skills/installLocked` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallLockedParams {
    /// The absolute folder holding `skillmem.lock`; default the workspace.
    #[serde(default)]
    pub dir: Option<String>,
    /// An LSP progress token: `$/progress` is reported under it while cloning.
    #[serde(default)]
    pub work_done_token: Option<ProgressToken>,
}

/// Installs exactly what `skillmem.lock` says and reports every mismatch.
pub struct InstallLocked;

impl Method for InstallLocked {
    const NAME: &'static str = "skillmem/skills/installLocked";
    const STEM: &'static str = "skills.installLocked";
    type Params = InstallLockedParams;
    type Result = InstallLockedResult;

    fn no_params() -> Option<InstallLockedParams> {
        Some(InstallLockedParams::default())
    }

    fn progress(p: &InstallLockedParams) -> Option<(ProgressToken, &'static str)> {
        p.work_done_token.clone().map(|t| (t, "Installing locked skills"))
    }

    fn run(engine: &Engine, p: InstallLockedParams, cx: &Cx<'_>) -> Result<InstallLockedResult> {
        engine.skills_install_locked(p.dir.as_deref().map(Path::new), cx.progress)
    }
}
