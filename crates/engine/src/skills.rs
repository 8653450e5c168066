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
    /// An update's preview: what it would change (nothing was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<skillmem_skills::UpdatePlan>,
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
    /// The loads skillmem saw of each installed skill, across hosts and projects (skills
    /// never seen loaded are absent).
    #[serde(default)]
    pub usage: Vec<SkillUsage>,
}

/// How often an installed skill was loaded, by which hosts, and when last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillUsage {
    pub skill: String,
    pub loads: i64,
    /// Milliseconds since the epoch.
    pub last_used: i64,
    pub hosts: Vec<String>,
}

/// What `skills prune --unused DAYS` found, and what it removed (only when asked to).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// Installed skills neither loaded nor installed in the last DAYS days.
    pub candidates: Vec<String>,
    /// Sources removed (every skill of each was a candidate); empty without `yes`.
    pub removed_sources: Vec<String>,
    /// Skills removed with them.
    pub removed: Vec<String>,
    /// Sources kept because some of their skills are in use, with the unused ones.
    pub kept: Vec<String>,
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

/// The name of the lock file, in the workspace.
pub const LOCK_FILE: &str = "skillmem.lock";

/// One skill of a lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockedSkill {
    pub name: String,
    pub subpath: String,
    /// The store's content hash (path, executable bit, length and bytes of each file).
    pub content_hash: String,
    /// SHA-256 over the sorted relative paths and bytes (the Agent Skills proposal's digest).
    pub digest: String,
    /// The audit's verdict when locked: `block` (installed with --accept-risk), `warn`, `ok`.
    pub verdict: skillmem_audit::Verdict,
}

/// One source of a lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockedSource {
    pub source: String,
    /// The ref it was installed with, if any.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
    /// The commit every install of this lock pins.
    pub commit: String,
    /// The choices it was installed with (empty: every skill).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<skillmem_skills::Choice>,
    pub skills: Vec<LockedSkill>,
}

/// `skillmem.lock`: what is installed, exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockFile {
    pub version: u32,
    pub sources: Vec<LockedSource>,
}

/// What `skills lock` wrote.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Locked {
    /// The lock file's path.
    pub path: String,
    pub lock: LockFile,
}

/// What `skills install --locked` did: each source installed at its locked commit, and every
/// difference from the lock (empty when the install matches it).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LockedInstall {
    pub path: String,
    pub skills: Vec<SkillInfo>,
    pub mismatches: Vec<String>,
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

    fn lock_path(&self, dir: Option<&Path>) -> Result<std::path::PathBuf> {
        let dir = dir.map(Path::to_path_buf).or_else(|| self.workspace().map(Path::to_path_buf)).ok_or_else(|| {
            skillmem_error::Error::invalid("no workspace: give the folder of skillmem.lock (--workspace)")
        })?;
        Ok(dir.join(LOCK_FILE))
    }

    /// Writes `skillmem.lock` in `dir` (default the workspace): every installed source, its
    /// ref, commit and choices, and per skill its content hash, digest and audit verdict.
    pub fn skills_lock(&self, dir: Option<&Path>) -> Result<Locked> {
        let path = self.lock_path(dir)?;
        let allow = self.audit_allow();
        let mut sources = vec![];
        for (row, skills) in self.skills().list()? {
            let mut locked = vec![];
            for s in skills {
                let files = skillmem_audit::read_dir(Path::new(&s.path)).map_err(|e| {
                    skillmem_error::Error::storage(format!("cannot read the stored copy of {}: {e}", s.name))
                })?;
                let verdict = skillmem_audit::audit(&s.path, &s.name, &files, &allow).verdict;
                locked.push(LockedSkill {
                    name: s.name,
                    subpath: s.subpath,
                    content_hash: s.content_hash,
                    digest: skillmem_audit::digest(&files),
                    verdict,
                });
            }
            sources.push(LockedSource {
                source: row.source,
                r#ref: row.requested_ref,
                commit: row.pinned_ref,
                choices: row.choices,
                skills: locked,
            });
        }
        let lock = LockFile { version: 1, sources };
        let text =
            serde_json::to_string_pretty(&lock).map_err(|e| skillmem_error::Error::storage(e.to_string()))? + "\n";
        let tmp = path.with_extension("lock.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
        Ok(Locked { path: path.display().to_string(), lock })
    }

    /// Installs exactly what `skillmem.lock` in `dir` (default the workspace) says: each
    /// source at its commit with its choices; then compares what was installed with the lock.
    pub fn skills_install_locked(&self, dir: Option<&Path>, progress: &dyn Fn(Progress)) -> Result<LockedInstall> {
        let path = self.lock_path(dir)?;
        let text = std::fs::read_to_string(&path).map_err(|e| {
            skillmem_error::Error::NotFound(format!("{}: {e}; write one with `skillmem skills lock`", path.display()))
        })?;
        let lock: LockFile = serde_json::from_str(&text).map_err(|e| {
            skillmem_error::Error::invalid(format!("{} is not a skillmem lock file: {e}", path.display()))
        })?;
        let mut skills = vec![];
        let mut mismatches = vec![];
        for src in &lock.sources {
            let mut s = self.skills();
            // A skill locked after its risk was accepted installs again as it was locked.
            s.accept_risk = vec![];
            if src.skills.iter().any(|k| k.verdict == skillmem_audit::Verdict::Block) {
                s.accept_risk = skillmem_audit::rules::ids().iter().map(|r| r.to_string()).collect();
            }
            let o = s.install_exact(&src.source, &src.commit, &src.choices, progress)?;
            for want in &src.skills {
                match o.skills.iter().find(|k| k.name == want.name) {
                    None => mismatches.push(format!("{} ({}): locked but not installed", want.name, src.source)),
                    Some(got) if got.content_hash != want.content_hash => mismatches.push(format!(
                        "{} ({}): content {} differs from the locked {}",
                        want.name,
                        src.source,
                        &got.content_hash[..12],
                        &want.content_hash[..want.content_hash.len().min(12)]
                    )),
                    Some(got) if got.pinned_ref != src.commit => mismatches.push(format!(
                        "{} ({}): pinned to {} instead of the locked {}",
                        want.name, src.source, got.pinned_ref, src.commit
                    )),
                    Some(_) => {}
                }
            }
            for got in &o.skills {
                if !src.skills.iter().any(|k| k.name == got.name) {
                    mismatches.push(format!("{} ({}): installed but not in the lock", got.name, src.source));
                }
            }
            skills.extend(o.skills);
        }
        Ok(LockedInstall { path: path.display().to_string(), skills, mismatches })
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
            return Ok(Installed {
                skills: vec![],
                removed: vec![],
                refused: vec![],
                offered: Some(offered),
                plan: None,
            });
        }
        let mut skills = self.skills();
        skills.accept_risk = accept_risk
            .iter()
            .flat_map(|r| r.split(','))
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .collect();
        let o = skills.install(url, rref, choice, progress)?;
        Ok(Installed { skills: o.skills, removed: o.removed, refused: o.refused, offered: None, plan: None })
    }

    /// Fetches an installed source again (or re-pins it to `rref`).
    pub fn skills_update(&self, source: &str, rref: Option<&str>, progress: &dyn Fn(Progress)) -> Result<Installed> {
        let o = self.skills().update(source, rref, progress)?;
        Ok(Installed { skills: o.skills, removed: o.removed, refused: o.refused, offered: None, plan: None })
    }

    /// What updating `source` would change: files, commit log and the audit's new findings;
    /// nothing is written.
    pub fn skills_update_preview(
        &self,
        source: &str,
        rref: Option<&str>,
        progress: &dyn Fn(Progress),
    ) -> Result<Installed> {
        let plan = self.skills().preview_update(source, rref, progress)?;
        Ok(Installed { skills: vec![], removed: vec![], refused: vec![], offered: None, plan: Some(plan) })
    }

    /// Removes an installed source and its skills.
    pub fn skills_remove(&self, source: &str) -> Result<Removed> {
        Ok(Removed { removed: self.skills().remove(source)? })
    }

    /// Every installed source and its skills.
    pub fn skills_list(&self) -> Result<Sources> {
        let sources: Vec<SourceInfo> = self
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
        let installed: std::collections::HashSet<String> =
            sources.iter().flat_map(|s: &SourceInfo| s.skills.iter().map(|k| k.name.clone())).collect();
        let usage = skillmem_store::memory::usage::totals(&self.conn())?
            .into_iter()
            .filter(|l| installed.contains(&l.skill))
            .map(|l| SkillUsage { skill: l.skill, loads: l.loads, last_used: l.last_used, hosts: l.hosts })
            .collect();
        Ok(Sources { sources, usage })
    }

    /// Installed skills neither loaded nor installed in the last `days` days; with `yes`,
    /// removes each source whose every skill is such a candidate (a source is installed and
    /// removed whole).
    pub fn skills_prune(&self, days: u32, yes: bool) -> Result<Pruned> {
        let list = self.skills_list()?;
        let since = skillmem_store::db::now_ms() - i64::from(days) * 86_400_000;
        let last: std::collections::HashMap<&str, i64> =
            list.usage.iter().map(|u| (u.skill.as_str(), u.last_used)).collect();
        let unused = |k: &SkillInfo| k.installed_at < since && last.get(k.name.as_str()).is_none_or(|t| *t < since);
        let mut out = Pruned { candidates: vec![], removed_sources: vec![], removed: vec![], kept: vec![] };
        for s in &list.sources {
            let c: Vec<&SkillInfo> = s.skills.iter().filter(|k| unused(k)).collect();
            out.candidates.extend(c.iter().map(|k| k.name.clone()));
            if c.is_empty() {
                continue;
            }
            if c.len() < s.skills.len() {
                out.kept.push(format!(
                    "{} (in use; unused: {})",
                    s.source,
                    c.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
                ));
            } else if yes {
                out.removed.extend(self.skills().remove(&s.source)?);
                out.removed_sources.push(s.source.clone());
            }
        }
        Ok(out)
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
