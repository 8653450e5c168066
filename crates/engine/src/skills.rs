//! Session skills (skills/): the same calls for the server, the MCP door and the CLI.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Engine;
use skillmem_error::Result;
use skillmem_skills::progress::Progress;
use skillmem_skills::{Choice, Offered, Refused, SeedAction, SkillInfo};

/// What an install or an update left in the store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The source's skills as now installed.
    pub skills: Vec<SkillInfo>,
    /// Skills the source no longer has, removed from the store.
    pub removed: Vec<String>,
    /// Skills of the repository not installed (a name offered twice, or installed from
    /// another source), each with the reason and the way out.
    #[serde(default)]
    pub refused: Vec<Refused>,
    /// With `list`: what the repository offers (nothing was installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<Vec<Offered>>,
}

/// The skills a removed source took with it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub removed: Vec<String>,
}

/// One installed source.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    pub source: String,
    /// The commit the source is pinned to.
    pub pinned_ref: String,
    /// The ref it was installed with (a branch moves on update), if any.
    #[serde(default)]
    pub requested_ref: Option<String>,
    /// The choices (`path`, `skills`, `as`) it was installed with; empty: every skill.
    #[serde(default)]
    pub choices: Vec<Choice>,
    pub skills: Vec<SkillInfo>,
}

/// Every installed source.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sources {
    pub sources: Vec<SourceInfo>,
}

/// The skills a session should get.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    /// Installed skills, in first-seen order.
    pub skills: Vec<String>,
    /// Names asked for that are not installed.
    pub dropped: Vec<String>,
}

/// What seeding a folder did (or would do, in a dry run).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Seeded {
    pub actions: Vec<SeedAction>,
    pub warnings: Vec<String>,
}

/// What `skills verify` found: every skill (in the store, or seeded under the folder given)
/// whose files differ from what was installed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// How many installed skills were checked.
    pub checked: usize,
    pub drift: Vec<skillmem_skills::verify::Drift>,
}

/// The audit of each folder asked for (`skills audit`), in the order asked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Audited {
    pub reports: Vec<skillmem_audit::Report>,
}

impl Engine {
    /// The `[skills.audit] allow` entries of the configuration.
    pub fn audit_allow(&self) -> Vec<skillmem_audit::Allow> {
        self.config
            .skills
            .audit_allow
            .iter()
            .map(|a| skillmem_audit::Allow { skill: a.skill.clone(), rule: a.rule.clone(), reason: a.reason.clone() })
            .collect()
    }

    /// Checks the store (and, with `cwd`, the copies seeded there) against the digests.
    pub fn skills_verify(&self, cwd: Option<&Path>, targets: &[String]) -> Result<Verified> {
        if let Some(c) = cwd {
            if !c.is_absolute() || !c.is_dir() {
                return Err(skillmem_error::Error::invalid(format!(
                    "cwd {} must be an absolute path of an existing folder",
                    c.display()
                )));
            }
        }
        let skills = self.skills();
        let checked = skills.list()?.iter().map(|(_, s)| s.len()).sum();
        Ok(Verified { checked, drift: skills.verify(cwd, targets)? })
    }

    /// Audits skill folders: each target is an absolute path (a folder, or a SKILL.md standing
    /// for its folder) or an installed skill's name; none means every installed skill.
    pub fn skills_audit(&self, targets: &[String]) -> Result<Audited> {
        let allow = self.audit_allow();
        let mut folders: Vec<(String, std::path::PathBuf)> = vec![];
        if targets.is_empty() {
            for (_, skills) in self.skills().list()? {
                for s in skills {
                    folders.push((s.name, s.path.into()));
                }
            }
        }
        for t in targets {
            let t = t.trim();
            let p = Path::new(t);
            if p.is_absolute() && p.exists() {
                let dir = if p.is_file() { p.parent().unwrap_or(p).to_path_buf() } else { p.to_path_buf() };
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                folders.push((name, dir));
            } else if let Some(dir) = self.skills().store_dir(t) {
                folders.push((t.to_string(), dir));
            } else {
                return Err(skillmem_error::Error::NotFound(format!(
                    "{t:?} is neither a folder nor an installed skill (a relative path must be made absolute)"
                )));
            }
        }
        let mut reports = vec![];
        for (name, dir) in folders {
            let files = skillmem_audit::read_dir(&dir)
                .map_err(|e| skillmem_error::Error::invalid(format!("cannot read {}: {e}", dir.display())))?;
            reports.push(skillmem_audit::audit(&dir.display().to_string(), &name, &files, &allow));
        }
        Ok(Audited { reports })
    }

    /// Session skills over this engine's data directory and connection.
    pub fn skills(&self) -> skillmem_skills::Skills<'_> {
        skillmem_skills::Skills {
            data_dir: &self.config.data_dir,
            conn: self.store.mutex(),
            home: dirs::home_dir(),
            audit_allow: self.audit_allow(),
            accept_risk: vec![],
        }
    }

    /// Installs the skills of a git repository `choice` picks (default every one), pinned to
    /// `rref` (default its HEAD); with `list`, only says what it offers. The audit reads each
    /// skill first: a blocked one is refused unless every rule it blocks on is in
    /// `accept_risk` (then the acceptance is recorded in its warnings).
    pub fn skills_install(
        &self,
        url: &str,
        rref: Option<&str>,
        choice: &Choice,
        list: bool,
        accept_risk: &[String],
        progress: &dyn Fn(Progress),
    ) -> Result<Installed> {
        if list {
            let offered = self.skills().offered(url, rref, choice, progress)?;
            return Ok(Installed { skills: vec![], removed: vec![], refused: vec![], offered: Some(offered) });
        }
        let mut skills = self.skills();
        skills.accept_risk = accept_risk
            .iter()
            .flat_map(|r| r.split(','))
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .collect();
        let o = skills.install(url, rref, choice, progress)?;
        Ok(Installed { skills: o.skills, removed: o.removed, refused: o.refused, offered: None })
    }

    /// Fetches an installed source again (or re-pins it to `rref`).
    pub fn skills_update(&self, source: &str, rref: Option<&str>, progress: &dyn Fn(Progress)) -> Result<Installed> {
        let o = self.skills().update(source, rref, progress)?;
        Ok(Installed { skills: o.skills, removed: o.removed, refused: o.refused, offered: None })
    }

    /// Removes an installed source and its skills.
    pub fn skills_remove(&self, source: &str) -> Result<Removed> {
        Ok(Removed { removed: self.skills().remove(source)? })
    }

    /// Every installed source and its skills.
    pub fn skills_list(&self) -> Result<Sources> {
        let sources = self
            .skills()
            .list()?
            .into_iter()
            .map(|(row, skills)| SourceInfo {
                source: row.source,
                pinned_ref: row.pinned_ref,
                requested_ref: row.requested_ref,
                choices: row.choices,
                skills,
            })
            .collect();
        Ok(Sources { sources })
    }

    /// The union of the global, list and task names that are installed, in first-seen order.
    pub fn skills_resolve(&self, global: &[String], list: &[String], task: &[String]) -> Result<Resolved> {
        let (skills, dropped) = self.skills().resolve(global, list, task)?;
        Ok(Resolved { skills, dropped })
    }

    /// Copies installed skills into `<cwd>/<target>/<name>/`.
    pub fn skills_seed(&self, cwd: &Path, skills: &[String], target: Option<&str>, dry_run: bool) -> Result<Seeded> {
        let (actions, warnings) = self.skills().seed(cwd, skills, target, dry_run)?;
        Ok(Seeded { actions, warnings })
    }
}
