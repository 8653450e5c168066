//! Session skills: install, pin, update, remove, list, resolve and seed skills from git.
//!
//! Owns the registry tables, the store under `<dataDir>/store`, git fetching (git2) and
//! seeding into a session's working folder. Knows nothing of JSON-RPC: [`Skills`] takes and
//! returns plain types, and both the server and the CLI reach it through the engine.
//!
//! Order of an install: fetch (no lock held); discover the skill folders (`layout`); choose
//! (`--path`, `--skill`, `--as`); prepare: read and validate every chosen skill before
//! anything is written (a skill failing its checks, or whose name the repository offers
//! twice, is refused alone; the rest goes on); then, under the
//! install lock, refuse names another source has, write each skill's store folder (staged,
//! then renamed), record the source in one transaction, and drop the store folders nothing
//! refers to any more.

pub mod progress;
pub mod project;

// The crates below, under the module names the code has always used (`crate::memory::…`).
use skillmem_error as error;
use skillmem_skillmd as skillmd;
use skillmem_store::db;

pub mod fetch;
pub mod layout;
pub mod lock;
pub mod registry;
pub mod seed;
pub mod store;
pub mod verify;

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::skillmd::{frontmatter, name as skill_name, warnings};

pub use seed::{SeedAction, SeedOp};

/// One installed skill (docs/protocol.md, `SkillInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    /// The source it was installed from (normalised URL or absolute path).
    pub source: String,
    /// The full 40-hex commit it is pinned to.
    pub pinned_ref: String,
    /// Its folder in the repository (`skills/<name>`, `plugins/p/skills/<name>`, or empty for
    /// a root SKILL.md).
    pub subpath: String,
    /// The marketplace plugin it belongs to (`.claude-plugin/marketplace.json`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// SHA-256 of its files (relative path, executable bit, bytes).
    pub content_hash: String,
    /// Its immutable folder in the store.
    pub path: String,
    pub installed_at: i64,
    pub warnings: Vec<String>,
}

/// Which skills of a repository to install; the default is every skill it offers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    /// Only the skills in this folder of the repository (`--path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only these skills (`--skill`): names, or subpaths to pick one of two skills of one name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Install the one chosen skill under this name (`--as`).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
}

impl Choice {
    /// Every skill: no path, no names, no new name.
    pub fn is_all(&self) -> bool {
        self.path.as_deref().is_none_or(|p| p.trim().is_empty()) && self.skills.is_empty() && self.rename.is_none()
    }

    /// The same choice without blanks (`skills` split on commas, trimmed).
    fn tidy(&self) -> Choice {
        Choice {
            path: self.path.as_deref().map(str::trim).filter(|p| !p.is_empty()).map(str::to_string),
            skills: self
                .skills
                .iter()
                .flat_map(|s| s.split(','))
                .map(|s| s.trim().trim_end_matches('/').to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            rename: self.rename.as_deref().map(str::trim).filter(|r| !r.is_empty()).map(str::to_string),
        }
    }
}

/// A skill of the repository that was not installed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refused {
    pub name: String,
    /// Its folder in the repository.
    pub subpath: String,
    /// Why, and the way out.
    pub reason: String,
    /// The audit's findings when the audit blocked it (critical and high ones first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<skillmem_audit::Finding>,
}

/// A skill a repository offers (`install --list`): nothing is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Offered {
    /// The name it would be installed under.
    pub name: String,
    /// The marketplace plugin it belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// Its folder in the repository.
    pub subpath: String,
    pub description: String,
    /// Why it would not install as it is (a bad name, frontmatter, or a name offered twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What an install did: the source's skills now, the names it dropped, and the skills of
/// the repository it refused.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub skills: Vec<SkillInfo>,
    pub removed: Vec<String>,
    pub refused: Vec<Refused>,
}

/// What an update would change in one skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillChange {
    pub name: String,
    /// `added`, `changed`, `removed` or `unchanged`.
    pub status: String,
    /// The files added, changed and removed since the pinned commit.
    #[serde(flatten)]
    pub files: verify::FileDiff,
    /// The audit's verdict on the new version (none for a removed skill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<skillmem_audit::Verdict>,
    /// Findings of the new version the pinned one did not have (same rule and file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_findings: Vec<skillmem_audit::Finding>,
    /// Why the new version would not install (a failed check), if it would not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What `skills update` would do, shown before it re-pins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePlan {
    pub source: String,
    /// The commit pinned now.
    pub from: String,
    /// The commit the update would pin.
    pub to: String,
    /// `short-hash subject` of each commit between them, newest first (at most 50).
    pub log: Vec<String>,
    /// Why the log is empty when the commits differ (a shallow fetch has no history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_note: Option<String>,
    pub skills: Vec<SkillChange>,
}

/// Most skills one source may install (the largest collection measured offers 864).
pub const MAX_SKILLS_PER_SOURCE: usize = 2_000;
/// Most bytes one source may store, all its skills together.
pub const MAX_BYTES_PER_SOURCE: u64 = 512 * 1024 * 1024;

pub use crate::progress::Progress;

/// How often a seed looks again when a concurrent install swapped a skill's stored copy while
/// it copied (each look reads the registry afresh; a busy machine with installs flipping
/// versions back to back needed more than three).
const SEED_ATTEMPTS: u32 = 12;

/// Session skills over one data directory and its database connection.
pub struct Skills<'a> {
    pub data_dir: &'a Path,
    pub conn: &'a Mutex<Connection>,
    pub home: Option<PathBuf>,
    /// `[skills.audit] allow`: findings accepted with a reason (they turn into `info`).
    pub audit_allow: Vec<skillmem_audit::Allow>,
    /// Rules a blocked skill may have and still install (`--accept-risk`); each acceptance
    /// is recorded in the skill's warnings.
    pub accept_risk: Vec<String>,
}

/// A git2 error as the library's `git` error: this folder owns git2, so the mapping lives here.
pub(crate) fn git(e: git2::Error) -> Error {
    Error::git(e.message())
}

fn lock(m: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A skill read from a commit and checked, not yet stored.
struct Prepared {
    info: SkillInfo,
    files: Vec<store::FileEntry>,
}

/// A skill folder chosen for install, with the name it will have.
struct Chosen {
    candidate: layout::Candidate,
    name: String,
}

/// The label of a subpath in messages.
fn label(subpath: &str) -> &str {
    if subpath.is_empty() {
        "the repository root"
    } else {
        subpath
    }
}

impl Skills<'_> {
    /// Installs (or reinstalls, which updates) the skills of `url` at `rref` that `choice`
    /// picks. A choice is added to the ones the source was installed with (`update` replays
    /// them; a source installed whole stays whole, the choice on top, e.g. a rename); no
    /// choice installs every skill and forgets earlier choices.
    ///
    /// The flow: fetch, discover ([`layout::detect`]), choose, prepare (read and check each
    /// skill, nothing written), then store and record under the install lock.
    pub fn install(
        &self,
        url: &str,
        rref: Option<&str>,
        choice: &Choice,
        progress: &dyn Fn(Progress),
    ) -> Result<Outcome> {
        let source = fetch::normalize(url)?;
        let choice = choice.tidy();
        let choices = if choice.is_all() {
            vec![]
        } else {
            // Installed whole, a source stays whole: the new choice comes on top (an empty
            // choice in the list stands for every skill).
            let mut old = match registry::source(&lock(self.conn), &source)? {
                Some(row) if row.choices.is_empty() => vec![Choice::default()],
                Some(row) => row.choices,
                None => vec![],
            };
            if !old.contains(&choice) {
                old.push(choice.clone());
            }
            old
        };
        self.install_choices(&source, rref, &choices, Some(&choice), progress)
    }

    /// Installs `choices` of `source` (empty: every skill). `fresh` is the choice the user
    /// just gave: a name of it the repository lacks is an error; one of a stored choice is
    /// a warning.
    fn install_choices(
        &self,
        source: &str,
        rref: Option<&str>,
        choices: &[Choice],
        fresh: Option<&Choice>,
        progress: &dyn Fn(Progress),
    ) -> Result<Outcome> {
        let rref = rref.map(str::trim).filter(|r| !r.is_empty());
        store::sweep_staging(self.data_dir);
        progress(Progress { message: format!("cloning {source}"), percent: Some(0) });
        let started = std::time::Instant::now();
        let fetched = fetch::fetch(source, rref, &self.data_dir.join("tmp"), progress)?;
        let fetched_ms = started.elapsed().as_millis();
        let repo = &fetched.repo;
        let commit = repo.find_commit(fetched.commit).map_err(git)?;
        let pinned = commit.id().to_string();
        let root = commit.tree().map_err(git)?;
        let (chosen, mut notes) = self.choose(repo, &root, source, choices, fresh)?;
        // Accepting a risk is a reason to look again at the skills the audit refused before.
        let unchanged =
            if self.accept_risk.is_empty() { self.unchanged(source, rref, &pinned, choices, &chosen)? } else { None };
        if let Some(skills) = unchanged {
            progress(Progress { message: format!("{source} is already at {}", &pinned[..12]), percent: Some(100) });
            return Ok(Outcome { skills, ..Default::default() });
        }
        for w in &notes {
            tracing::warn!(source = %source, "{w}");
        }
        if chosen.len() > MAX_SKILLS_PER_SOURCE {
            return Err(Error::InvalidSkillRepo(format!(
                "{source} offers {} skills, more than the {MAX_SKILLS_PER_SOURCE} one source may install; choose some with --path or --skill",
                chosen.len()
            )));
        }
        progress(Progress {
            message: format!("checking {} skill(s) at {}", chosen.len(), &pinned[..12]),
            percent: Some(55),
        });
        let now = db::now_ms();
        let mut prepared = vec![];
        let mut invalid = vec![];
        let mut bytes = 0u64;
        for c in &chosen {
            // A skill that fails its checks is refused alone (one bad folder of a collection
            // of hundreds must not keep the others out); nothing of it is written.
            let p = match self.prepare(repo, source, &pinned, c, now) {
                Ok(p) => p,
                Err(Error::InvalidSkillRepo(why)) => {
                    invalid.push(Refused {
                        name: c.name.clone(),
                        subpath: c.candidate.subpath.clone(),
                        reason: why,
                        findings: vec![],
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            bytes += p.files.iter().map(|f| f.size).sum::<u64>();
            if bytes > MAX_BYTES_PER_SOURCE {
                return Err(Error::InvalidSkillRepo(format!(
                    "the skills of {source} are over {} MB together; refused (choose some with --path or --skill)",
                    MAX_BYTES_PER_SOURCE / (1024 * 1024)
                )));
            }
            prepared.push(p);
        }
        if prepared.is_empty() && invalid.len() == 1 && chosen.len() == 1 {
            return Err(Error::InvalidSkillRepo(invalid.remove(0).reason));
        }
        let prepared_ms = started.elapsed().as_millis();
        let (prepared, mut refused) = refuse_twins(prepared);
        refused.extend(invalid);
        // The audit reads every skill before anything is written: a blocked skill is refused
        // alone, with its findings, unless each rule it blocks on is accepted.
        let mut prepared = self.audit_prepared(repo, prepared, &mut refused)?;
        // Store, record and clean up under one data-dir-wide lock: a concurrent install's
        // cleanup must not drop a folder this one has stored but not yet recorded.
        let _guard = lock::exclusive(self.data_dir, "install")?;
        let owners = registry::owners(&lock(self.conn), source, prepared.iter().map(|p| p.info.name.as_str()))?;
        let mut clashed = false;
        prepared.retain(|p| match owners.get(&p.info.name) {
            Some((owner, at)) => {
                clashed = true;
                refused.push(Refused {
                    name: p.info.name.clone(),
                    subpath: p.info.subpath.clone(),
                    reason: format!(
                        "{:?} ({}) is already installed from {owner} ({}); remove that source (skillmem skills remove SOURCE), or install this one under another name: --skill {} --as NEW-NAME",
                        p.info.name,
                        label(&p.info.subpath),
                        label(at),
                        if p.info.subpath.is_empty() { p.info.name.as_str() } else { p.info.subpath.as_str() },
                    ),
                    findings: vec![],
                });
                false
            }
            None => true,
        });
        refused.sort_by(|a, b| a.subpath.cmp(&b.subpath));
        if prepared.is_empty() {
            let why = refused.iter().map(|r| r.reason.as_str()).collect::<Vec<_>>().join("; ");
            let msg = format!("nothing of {source} was installed: {why}");
            return Err(if clashed { Error::NameCollision(msg) } else { Error::InvalidSkillRepo(msg) });
        }
        for r in &refused {
            notes.push(format!("{} not installed: {}", r.name, r.reason));
        }
        let n = prepared.len().max(1);
        let mut records = vec![];
        let result = (|| {
            for (i, p) in prepared.iter().enumerate() {
                progress(Progress {
                    message: format!("storing {} ({}/{})", p.info.name, i + 1, prepared.len()),
                    percent: Some(60 + (35 * i / n) as u32),
                });
                let hash = store::write(repo, &p.files, self.data_dir, &p.info.name)?;
                let rel = store::rel_path(&p.info.name, &hash);
                let mut info = p.info.clone();
                info.path = self.data_dir.join(&rel).display().to_string();
                info.content_hash = hash;
                records.push(registry::NewSkill { info, store_path: rel });
            }
            registry::replace_source(&mut lock(self.conn), source, rref, &pinned, choices, &records)
        })();
        let mut involved: Vec<String> = prepared.iter().map(|p| p.info.name.clone()).collect();
        if let Ok(removed) = &result {
            involved.extend(removed.iter().cloned());
        }
        self.gc(&involved);
        let removed = result?;
        tracing::debug!(
            source = %source,
            "install: fetch {fetched_ms} ms, read and check {} ms, store and record {} ms ({} skill(s))",
            prepared_ms - fetched_ms,
            started.elapsed().as_millis() - prepared_ms,
            records.len()
        );
        progress(Progress {
            message: format!("installed {} skill(s) from {source}", records.len()),
            percent: Some(100),
        });
        let skills = registry::skills_of(&lock(self.conn), self.data_dir, source)?;
        Ok(Outcome { skills, removed, refused })
    }

    /// Audits each prepared skill from the commit's blobs; keeps the ones that pass (with
    /// their `warn` findings and accepted risks added to their warnings) and refuses the rest.
    fn audit_prepared(
        &self,
        repo: &git2::Repository,
        prepared: Vec<Prepared>,
        refused: &mut Vec<Refused>,
    ) -> Result<Vec<Prepared>> {
        let mut keep = Vec::with_capacity(prepared.len());
        // The blobs are read on this thread (a repository is not shared across threads), a
        // batch at a time so that a large source is never all in memory; the rules, most of
        // an install's CPU on a collection of hundreds of skills, run on every core.
        let mut reports = Vec::with_capacity(prepared.len());
        for batch in prepared.chunks(AUDIT_BATCH) {
            let files = batch.iter().map(|p| audit_files(repo, &p.files)).collect::<Result<Vec<_>>>()?;
            let audit = |(p, files): (&Prepared, &Vec<skillmem_audit::File>)| {
                skillmem_audit::audit(&p.info.subpath, &p.info.name, files, &self.audit_allow)
            };
            reports.extend(on_every_core(batch.iter().zip(files.iter()).collect(), audit));
        }
        for (mut p, report) in prepared.into_iter().zip(reports) {
            let blocking = skillmem_audit::blocking_rules(&report);
            let unaccepted: Vec<String> = blocking.iter().filter(|r| !self.accept_risk.contains(r)).cloned().collect();
            if !unaccepted.is_empty() {
                let reason = blocked_reason(&p.info.name, &report, &unaccepted);
                let findings =
                    report.findings.into_iter().filter(|f| f.severity <= skillmem_audit::Severity::Medium).collect();
                refused.push(Refused { name: p.info.name.clone(), subpath: p.info.subpath.clone(), reason, findings });
                continue;
            }
            for rule in &blocking {
                let f = report.findings.iter().find(|f| &f.rule == rule);
                let at =
                    f.map(
                        |f| if f.line > 0 { format!(" at {}:{}", f.file, f.line) } else { format!(" at {}", f.file) },
                    );
                p.info.warnings.push(format!(
                    "audit: risk accepted with --accept-risk: {rule} ({}){}",
                    f.map_or("high", |f| f.severity.as_str()),
                    at.unwrap_or_default()
                ));
            }
            for f in report.findings.iter().filter(|f| f.severity == skillmem_audit::Severity::Medium) {
                let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
                p.info.warnings.push(format!("audit: {} (medium) at {at}: {}", f.rule, f.why));
            }
            keep.push(p);
        }
        Ok(keep)
    }

    /// What `url` offers at `rref` under `choice`: each skill's name, plugin, subpath,
    /// description and what would stop it installing. Fetches, writes nothing.
    pub fn offered(
        &self,
        url: &str,
        rref: Option<&str>,
        choice: &Choice,
        progress: &dyn Fn(Progress),
    ) -> Result<Vec<Offered>> {
        let source = fetch::normalize(url)?;
        let rref = rref.map(str::trim).filter(|r| !r.is_empty());
        let choice = choice.tidy();
        progress(Progress { message: format!("cloning {source}"), percent: Some(0) });
        let fetched = fetch::fetch(&source, rref, &self.data_dir.join("tmp"), progress)?;
        let repo = &fetched.repo;
        let root = repo.find_commit(fetched.commit).map_err(git)?.tree().map_err(git)?;
        let choices = if choice.is_all() { vec![] } else { vec![choice.clone()] };
        let (chosen, _) = self.choose(repo, &root, &source, &choices, Some(&choice))?;
        let mut out: Vec<Offered> = chosen
            .iter()
            .map(|c| {
                let (description, problem) = match self.read_md(repo, &source, c) {
                    Ok((_, fm, _)) => (fm.description.unwrap_or_default().trim().to_string(), None),
                    Err(e) => (String::new(), Some(e.to_string())),
                };
                Offered {
                    name: c.name.clone(),
                    plugin: c.candidate.plugin.clone(),
                    subpath: c.candidate.subpath.clone(),
                    description,
                    problem,
                }
            })
            .collect();
        for i in 0..out.len() {
            let twins: Vec<&str> = out
                .iter()
                .filter(|o| o.name == out[i].name && o.subpath != out[i].subpath)
                .map(|o| o.subpath.as_str())
                .collect();
            if !twins.is_empty() && out[i].problem.is_none() {
                out[i].problem = Some(format!("the name is offered again at {}", twins.join(", ")));
            }
        }
        progress(Progress { message: format!("{source} offers {} skill(s)", out.len()), percent: Some(100) });
        Ok(out)
    }

    /// The skill folders `choices` pick (every skill when empty), one per subpath, with their
    /// names, and the warnings of discovery.
    fn choose(
        &self,
        repo: &git2::Repository,
        root: &git2::Tree<'_>,
        source: &str,
        choices: &[Choice],
        fresh: Option<&Choice>,
    ) -> Result<(Vec<Chosen>, Vec<String>)> {
        let all = [Choice::default()];
        let choices = if choices.is_empty() { &all[..] } else { choices };
        let mut out: Vec<Chosen> = vec![];
        let mut notes = vec![];
        for choice in choices {
            let strict = fresh == Some(choice) || choice.is_all();
            let found = layout::detect(repo, root, choice.path.as_deref());
            let (candidates, warnings) = match found {
                Ok(f) => f,
                Err(e) if !strict => {
                    notes.push(format!("a choice this source was installed with no longer applies: {e}"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            notes.extend(warnings);
            let mut named = vec![];
            for c in candidates {
                let name = match &c.folder {
                    Some(folder) => folder.clone(),
                    None => self.read_md(repo, source, &Chosen { candidate: c.clone(), name: String::new() })?.0,
                };
                named.push(Chosen { candidate: c, name });
            }
            if !choice.skills.is_empty() {
                let mut missing = vec![];
                for want in &choice.skills {
                    let hit = |c: &Chosen| match layout::clean_path(want) {
                        Some(p) if want.contains('/') => c.candidate.subpath == p,
                        _ => &c.name == want,
                    };
                    if !named.iter().any(hit) {
                        missing.push(want.as_str());
                    }
                }
                named.retain(|c| {
                    choice.skills.iter().any(|want| match layout::clean_path(want) {
                        Some(p) if want.contains('/') => c.candidate.subpath == p,
                        _ => &c.name == want,
                    })
                });
                if !missing.is_empty() {
                    let what = format!(
                        "{source}{} offers no skill {}; `skillmem skills install --list {source}` shows what it offers",
                        choice.path.as_deref().map(|p| format!(" under {p}")).unwrap_or_default(),
                        missing.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ")
                    );
                    if strict {
                        return Err(Error::invalid(what));
                    }
                    notes.push(format!("a choice this source was installed with no longer applies: {what}"));
                }
            }
            if let Some(new) = &choice.rename {
                if named.len() != 1 {
                    let msg = format!(
                        "--as {new} renames one skill, and this choice picks {}; choose one with --skill NAME or --skill SUBPATH",
                        named.len()
                    );
                    if strict {
                        return Err(Error::invalid(msg));
                    }
                    notes.push(format!("a choice this source was installed with no longer applies: {msg}"));
                    continue;
                }
                skill_name::check(new)
                    .map_err(|why| Error::invalid(format!("--as {new:?} is not a skill name: {why}")))?;
                named[0].name = new.clone();
            }
            for c in named {
                match out.iter_mut().find(|o| o.candidate.subpath == c.candidate.subpath) {
                    // A later choice renaming a folder an earlier one took wins.
                    Some(o) if choice.rename.is_some() => o.name = c.name,
                    Some(_) => {}
                    None => out.push(c),
                }
            }
        }
        out.sort_by(|a, b| a.candidate.subpath.cmp(&b.candidate.subpath));
        Ok((out, notes))
    }

    /// The source's skills when it is already installed at `pinned` with the same requested
    /// ref and choices, every chosen folder installed (none was refused) and every store
    /// folder in place: a reinstall with nothing to do.
    fn unchanged(
        &self,
        source: &str,
        rref: Option<&str>,
        pinned: &str,
        choices: &[Choice],
        chosen: &[Chosen],
    ) -> Result<Option<Vec<SkillInfo>>> {
        let conn = lock(self.conn);
        let Some(row) = registry::source(&conn, source)? else { return Ok(None) };
        if row.pinned_ref != pinned || row.requested_ref.as_deref() != rref || row.choices != choices {
            return Ok(None);
        }
        let skills = registry::skills_of(&conn, self.data_dir, source)?;
        // A stored copy edited since install is not intact: the reinstall writes it again.
        let intact = !skills.is_empty()
            && skills.iter().all(|s| Path::new(&s.path).join("SKILL.md").is_file() && self.store_drift(s).is_none());
        let all_in = chosen.iter().all(|c| skills.iter().any(|s| s.subpath == c.candidate.subpath && s.name == c.name));
        Ok((intact && all_in).then_some(skills))
    }

    /// A chosen skill's name (its chosen name, or for a root SKILL.md the frontmatter's
    /// `name`, else the repository's), frontmatter and text, checked.
    fn read_md(
        &self,
        repo: &git2::Repository,
        source: &str,
        c: &Chosen,
    ) -> Result<(String, frontmatter::Frontmatter, String)> {
        let subpath = &c.candidate.subpath;
        let md_path = if subpath.is_empty() { "SKILL.md".to_string() } else { format!("{subpath}/SKILL.md") };
        let tree = repo.find_tree(c.candidate.tree).map_err(git)?;
        let md = tree.get_name("SKILL.md").ok_or_else(|| Error::InvalidSkillRepo(format!("{md_path} is missing")))?;
        let blob = repo.find_blob(md.id()).map_err(git)?;
        if blob.size() > 1024 * 1024 {
            return Err(Error::InvalidSkillRepo(format!("{md_path} is over 1 MB; refused")));
        }
        let text = std::str::from_utf8(blob.content())
            .map_err(|_| Error::InvalidSkillRepo(format!("{md_path} is not UTF-8 text; save it as UTF-8")))?;
        let fm = frontmatter::parse(text)
            .map_err(|why| Error::InvalidSkillRepo(format!("{md_path} has a bad frontmatter: {why}")))?;
        let name = if !c.name.is_empty() {
            c.name.clone()
        } else {
            fm.name.clone().map(|n| n.trim().to_string()).unwrap_or_else(|| fetch::basename(source))
        };
        skill_name::check(&name).map_err(|why| {
            let pick = if subpath.is_empty() { String::new() } else { format!("--skill {subpath} ") };
            Error::InvalidSkillRepo(format!(
                "skill {name:?} ({}) has an invalid name: {why}; install it under a valid one with {pick}--as NEW-NAME",
                label(subpath)
            ))
        })?;
        Ok((name, fm, text.to_string()))
    }

    fn prepare(&self, repo: &git2::Repository, source: &str, pinned: &str, c: &Chosen, now: i64) -> Result<Prepared> {
        let (name, fm, text) = self.read_md(repo, source, c)?;
        let tree = repo.find_tree(c.candidate.tree).map_err(git)?;
        let mut warnings = warnings::frontmatter_warnings(&fm, &text, c.candidate.folder.as_deref());
        if c.candidate.folder.as_deref().is_some_and(|f| f != name) {
            warnings.push(format!("installed as {name:?} (--as); its folder is {:?}", label(&c.candidate.subpath)));
        }
        if let Some(why) = &fm.lenient {
            warnings.push(format!(
                "the frontmatter is not valid YAML ({why}); hosts and skillmem read it line by line, other tools may not: quote values that hold \": \""
            ));
        }
        let files = store::collect(repo, &tree, &name, store::CAPS, &mut warnings)?;
        let exec: Vec<&str> = files.iter().filter(|f| f.exec).map(|f| f.rel.as_str()).collect();
        if !exec.is_empty() {
            warnings.push(format!("executable files: {}", exec.join(", ")));
        }
        Ok(Prepared {
            info: SkillInfo {
                name,
                description: fm.description.unwrap_or_default().trim().to_string(),
                source: source.to_string(),
                pinned_ref: pinned.to_string(),
                subpath: c.candidate.subpath.clone(),
                plugin: c.candidate.plugin.clone(),
                content_hash: String::new(),
                path: String::new(),
                installed_at: now,
                warnings,
            },
            files,
        })
    }

    fn gc(&self, names: &[String]) {
        for name in names {
            let keep =
                lock(self.conn).query_row("SELECT store_path FROM installed_skills WHERE name = ?1", [name], |r| {
                    r.get::<_, String>(0)
                });
            match keep {
                Ok(k) => store::gc(self.data_dir, name, Some(&k)),
                Err(rusqlite::Error::QueryReturnedNoRows) => store::gc(self.data_dir, name, None),
                Err(e) => tracing::warn!("store cleanup skipped for {name}: {e}"),
            }
        }
    }

    /// The installed source matching what the user typed (normalised, else as typed).
    fn find_source(&self, source: &str) -> Result<registry::SourceRow> {
        let conn = lock(self.conn);
        if let Ok(norm) = fetch::normalize(source) {
            if let Some(row) = registry::source(&conn, &norm)? {
                return Ok(row);
            }
        }
        registry::source(&conn, source.trim())?.ok_or_else(|| registry::not_installed(source))
    }

    /// Installs `source` at exactly `commit` with `choices` (a lock file's entry): the same
    /// flow as an install, audit included.
    pub fn install_exact(
        &self,
        source: &str,
        commit: &str,
        choices: &[Choice],
        progress: &dyn Fn(Progress),
    ) -> Result<Outcome> {
        let source = fetch::normalize(source)?;
        self.install_choices(&source, Some(commit), choices, None, progress)
    }

    /// Re-fetches an installed source at the ref it was installed with (or `rref`), with the
    /// choices it was installed with.
    pub fn update(&self, source: &str, rref: Option<&str>, progress: &dyn Fn(Progress)) -> Result<Outcome> {
        let row = self.find_source(source)?;
        let rref = rref.map(str::to_string).or(row.requested_ref.clone());
        self.install_choices(&row.source, rref.as_deref(), &row.choices, None, progress)
    }

    /// What updating `source` (at `rref`, default the ref it was installed with) would change,
    /// without writing anything: per skill the files added, changed and removed, the audit's
    /// new findings, and the commit log between the pinned commit and the new one.
    pub fn preview_update(&self, source: &str, rref: Option<&str>, progress: &dyn Fn(Progress)) -> Result<UpdatePlan> {
        let row = self.find_source(source)?;
        let rref = rref.map(str::to_string).or(row.requested_ref.clone());
        let rref = rref.as_deref().map(str::trim).filter(|r| !r.is_empty());
        progress(Progress { message: format!("fetching {}", row.source), percent: Some(0) });
        let fetched = fetch::fetch(&row.source, rref, &self.data_dir.join("tmp"), progress)?;
        let repo = &fetched.repo;
        let commit = repo.find_commit(fetched.commit).map_err(git)?;
        let to = commit.id().to_string();
        let root = commit.tree().map_err(git)?;
        let (chosen, _) = self.choose(repo, &root, &row.source, &row.choices, None)?;
        let installed = registry::skills_of(&lock(self.conn), self.data_dir, &row.source)?;
        let now = db::now_ms();
        let mut skills = vec![];
        for c in &chosen {
            let old = installed.iter().find(|s| s.name == c.name);
            let new = match self.prepare(repo, &row.source, &to, c, now) {
                Ok(p) => p,
                Err(Error::InvalidSkillRepo(why)) => {
                    skills.push(SkillChange {
                        name: c.name.clone(),
                        status: if old.is_some() { "changed" } else { "added" }.into(),
                        files: verify::FileDiff::default(),
                        verdict: None,
                        new_findings: vec![],
                        problem: Some(why),
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            let files = audit_files(repo, &new.files)?;
            let mut new_files = verify::Files::new();
            for (f, e) in files.iter().zip(&new.files) {
                use sha2::Digest;
                let sha: String = sha2::Sha256::digest(&f.bytes).iter().map(|b| format!("{b:02x}")).collect();
                new_files.insert(f.rel.clone(), (sha, e.exec));
            }
            let report = skillmem_audit::audit(&c.candidate.subpath, &c.name, &files, &self.audit_allow);
            let (status, diff, new_findings) = match old {
                Some(o) => {
                    let old_dir = Path::new(&o.path);
                    let old_files = verify::hash_dir(old_dir, &[]).map(|h| h.files).unwrap_or_default();
                    let old_report = skillmem_audit::read_dir(old_dir)
                        .map(|f| skillmem_audit::audit(&o.path, &o.name, &f, &self.audit_allow))
                        .ok();
                    let seen: HashSet<(String, String)> = old_report
                        .map(|r| r.findings.into_iter().map(|f| (f.rule, f.file)).collect())
                        .unwrap_or_default();
                    let fresh: Vec<skillmem_audit::Finding> = report
                        .findings
                        .iter()
                        .filter(|f| !seen.contains(&(f.rule.clone(), f.file.clone())))
                        .cloned()
                        .collect();
                    let d = verify::diff(&old_files, &new_files);
                    (if d.is_empty() { "unchanged" } else { "changed" }, d, fresh)
                }
                None => (
                    "added",
                    verify::FileDiff { added: new_files.keys().cloned().collect(), ..Default::default() },
                    report.findings.clone(),
                ),
            };
            skills.push(SkillChange {
                name: c.name.clone(),
                status: status.into(),
                files: diff,
                verdict: Some(report.verdict),
                new_findings,
                problem: None,
            });
        }
        for o in &installed {
            if !chosen.iter().any(|c| c.name == o.name) {
                skills.push(SkillChange {
                    name: o.name.clone(),
                    status: "removed".into(),
                    files: verify::FileDiff::default(),
                    verdict: None,
                    new_findings: vec![],
                    problem: None,
                });
            }
        }
        let (log, log_note) = commit_log(repo, &row.pinned_ref, &to);
        progress(Progress { message: format!("{} at {}", row.source, &to[..12]), percent: Some(100) });
        Ok(UpdatePlan { source: row.source, from: row.pinned_ref, to, log, log_note, skills })
    }

    /// Removes a source, its skills and their store folders; returns the names removed.
    pub fn remove(&self, source: &str) -> Result<Vec<String>> {
        let row = self.find_source(source)?;
        let _guard = lock::exclusive(self.data_dir, "install")?;
        let removed = registry::delete_source(&mut lock(self.conn), &row.source)?;
        self.gc(&removed);
        Ok(removed)
    }

    /// Every source with its skills.
    pub fn list(&self) -> Result<Vec<(registry::SourceRow, Vec<SkillInfo>)>> {
        let conn = lock(self.conn);
        let mut out = vec![];
        for row in registry::sources(&conn)? {
            let skills = registry::skills_of(&conn, self.data_dir, &row.source)?;
            out.push((row, skills));
        }
        Ok(out)
    }

    /// global ∪ list ∪ task, first-seen order, no duplicates; names not installed are dropped.
    pub fn resolve(&self, global: &[String], list: &[String], task: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let installed: HashSet<String> = registry::names(&lock(self.conn))?.into_iter().collect();
        let mut seen = HashSet::new();
        let (mut skills, mut dropped) = (vec![], vec![]);
        for name in global.iter().chain(list).chain(task) {
            let name = name.trim();
            if name.is_empty() || !seen.insert(name.to_string()) {
                continue;
            }
            if installed.contains(name) {
                skills.push(name.to_string());
            } else {
                tracing::warn!(skill = name, "resolve: not installed; dropped");
                dropped.push(name.to_string());
            }
        }
        Ok((skills, dropped))
    }

    /// The store folder of an installed skill.
    pub fn store_dir(&self, name: &str) -> Option<PathBuf> {
        let rel = registry::store_path(&lock(self.conn), name).ok().flatten()?;
        Some(self.data_dir.join(rel))
    }

    /// Seeds `names` into `<cwd>/<target>`. Every name must be installed.
    pub fn seed(
        &self,
        cwd: &Path,
        names: &[String],
        target: Option<&str>,
        dry_run: bool,
    ) -> Result<(Vec<SeedAction>, Vec<String>)> {
        if !cwd.is_absolute() {
            return Err(Error::invalid(format!("cwd {} must be an absolute path", cwd.display())));
        }
        if !cwd.is_dir() {
            return Err(Error::invalid(format!(
                "cwd {} does not exist or is not a folder; create it first",
                cwd.display()
            )));
        }
        let target = target.map(str::trim).filter(|t| !t.is_empty()).unwrap_or(seed::DEFAULT_TARGET);
        seed::check_target(target)?;
        // A stored copy edited since install is refused: a seed copies what was reviewed.
        {
            let conn = lock(self.conn);
            let mut drifted = vec![];
            for n in names {
                // An update in another process may swap the stored copy while it is hashed:
                // judged again against the registry as it is then (a copy gone meanwhile is
                // the seed's to look for again, below).
                for attempt in 1..=SEED_ATTEMPTS {
                    let Some(info) = registry::skill(&conn, self.data_dir, n)? else { break };
                    if !Path::new(&info.path).is_dir() {
                        break;
                    }
                    let Some(d) = self.store_drift(&info) else { break };
                    let now = registry::skill(&conn, self.data_dir, n)?;
                    let swapped = now.is_none_or(|i| i.path != info.path || i.content_hash != info.content_hash)
                        || !Path::new(&info.path).is_dir();
                    if !swapped || attempt == SEED_ATTEMPTS {
                        drifted.push(format!("{}: {}", d.skill, d.message));
                        break;
                    }
                }
            }
            if !drifted.is_empty() {
                return Err(Error::Storage(format!("not seeded: {}", drifted.join("; "))));
            }
        }
        for n in names {
            skill_name::check(n).map_err(|why| Error::invalid(format!("skills: {n:?} is not a skill name: {why}")))?;
        }
        // Two seeds of one folder wait for each other (the lock lives in the data dir).
        let _guard = if dry_run {
            None
        } else {
            let key = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()).join(target);
            Some(lock::exclusive(self.data_dir, &format!("seed:{}", key.display()))?)
        };
        // A concurrent update may swap a skill's store folder while we copy; look again then.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wanted = self.wanted(names)?;
            // A stored copy swapped under the seed is gone, or (an install flipping back to a
            // version stored before) is a new folder at the same path: another inode.
            // The change time too: a deleted folder's inode number can be reused.
            let folder =
                |w: &seed::Wanted| std::fs::metadata(&w.store_dir).ok().map(|m| (m.ino(), m.ctime(), m.ctime_nsec()));
            let before: Vec<Option<(u64, i64, i64)>> = wanted.iter().map(folder).collect();
            let changed =
                |wanted: &[seed::Wanted]| wanted.iter().zip(&before).any(|(w, b)| b.is_none() || folder(w) != *b);
            match seed::seed(cwd, target, &wanted, self.home.as_deref(), dry_run) {
                // A copy that read a folder swapped (and deleted) under it can succeed with
                // files missing or from two versions: seeded again, whole (seen once in a
                // test flipping versions while seeding: a copy without one of its files).
                Ok(_) if !dry_run && changed(&wanted) => {
                    if attempt < SEED_ATTEMPTS {
                        tracing::info!("a stored skill changed while seeding; seeding again");
                        continue;
                    }
                    return Err(Error::Storage(
                        "the stored skills kept changing while they were seeded (updates running); seed again".into(),
                    ));
                }
                Err(e) if attempt < SEED_ATTEMPTS && changed(&wanted) => {
                    tracing::info!("a stored skill changed while seeding ({e}); seeding again");
                    continue;
                }
                Err(e) => {
                    if let Some(w) = wanted.iter().find(|w| !w.store_dir.is_dir()) {
                        return Err(Error::NotFound(format!(
                            "the stored copy of skill {:?} is missing ({}); run `skillmem skills update {}`",
                            w.name,
                            w.store_dir.display(),
                            w.source
                        )));
                    }
                    return Err(e);
                }
                ok => return ok,
            }
        }
    }

    /// The drift of one stored skill: `None` when its folder still hashes to its content hash.
    fn store_drift(&self, info: &SkillInfo) -> Option<verify::Drift> {
        let dir = Path::new(&info.path);
        let drift = |files: verify::FileDiff, message: String| verify::Drift {
            skill: info.name.clone(),
            place: "store".into(),
            path: info.path.clone(),
            files,
            message,
        };
        let hashed = match verify::hash_dir(dir, &[]) {
            Ok(h) => h,
            Err(e) => {
                return Some(drift(
                    verify::FileDiff::default(),
                    format!("its stored copy cannot be read ({e}); run `skillmem skills update {}`", info.source),
                ))
            }
        };
        if hashed.hash == info.content_hash {
            return None;
        }
        let manifest = verify::read_manifest(&verify::manifest_path(self.data_dir, &info.name, &info.content_hash));
        let files = manifest.map(|m| verify::diff(&m, &hashed.files)).unwrap_or_default();
        let which = if files.is_empty() {
            "files changed (stored before manifests; not named)".into()
        } else {
            files.summary()
        };
        Some(drift(
            files,
            format!(
                "its stored files no longer match the digest they were installed with ({which}); run `skillmem skills install {} --ref {}` to store the pinned commit again",
                info.source, info.pinned_ref
            ),
        ))
    }

    /// Checks every installed skill's stored files against their digest and, with `cwd`,
    /// every copy seeded under `cwd`'s `targets` against the stored files. Returns what drifted.
    pub fn verify(&self, cwd: Option<&Path>, targets: &[String]) -> Result<Vec<verify::Drift>> {
        let mut out = vec![];
        let installed: Vec<SkillInfo> = self.list()?.into_iter().flat_map(|(_, s)| s).collect();
        for info in &installed {
            if let Some(d) = self.store_drift(info) {
                out.push(d);
            }
        }
        let Some(cwd) = cwd else { return Ok(out) };
        let targets: Vec<String> = if targets.is_empty() {
            [".claude/skills", ".opencode/skills", ".agents/skills", ".gemini/skills", ".github/skills", ".pi/skills"]
                .iter()
                .map(|t| t.to_string())
                .collect()
        } else {
            targets.to_vec()
        };
        let skip = [seed::IGNORE_FILE, seed::MARKER];
        for t in &targets {
            let dir = cwd.join(seed::check_target(t)?);
            for info in &installed {
                let copy = dir.join(&info.name);
                if !copy.join(seed::MARKER).is_file() {
                    continue;
                }
                let (Ok(stored), Ok(seeded)) =
                    (verify::hash_dir(Path::new(&info.path), &skip), verify::hash_dir(&copy, &skip))
                else {
                    continue;
                };
                let files = verify::diff(&stored.files, &seeded.files);
                if !files.is_empty() {
                    let message = format!(
                        "the seeded copy differs from the stored skill ({}); seed it again to restore it",
                        files.summary()
                    );
                    out.push(verify::Drift {
                        skill: info.name.clone(),
                        place: "seed".into(),
                        path: copy.display().to_string(),
                        files,
                        message,
                    });
                }
            }
        }
        Ok(out)
    }

    fn wanted(&self, names: &[String]) -> Result<Vec<seed::Wanted>> {
        let conn = lock(self.conn);
        let mut out: Vec<seed::Wanted> = vec![];
        let mut missing = vec![];
        for n in names {
            if out.iter().any(|w| &w.name == n) {
                continue;
            }
            match registry::skill(&conn, self.data_dir, n)? {
                Some(i) => out.push(seed::Wanted {
                    name: i.name,
                    store_dir: PathBuf::from(i.path),
                    source: i.source,
                    content_hash: i.content_hash,
                }),
                None => missing.push(format!("{n:?}")),
            }
        }
        if !missing.is_empty() {
            return Err(Error::NotFound(format!(
                "skill {} not installed; install it with `skillmem skills install URL`",
                if missing.len() == 1 { format!("{} is", missing[0]) } else { format!("{} are", missing.join(", ")) }
            )));
        }
        Ok(out)
    }
}

/// Splits off the skills whose name another skill of the same repository also has: none of
/// them is installed, and each says where the others are and how to pick one.
fn refuse_twins(prepared: Vec<Prepared>) -> (Vec<Prepared>, Vec<Refused>) {
    let mut count: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for p in &prepared {
        count.entry(p.info.name.clone()).or_default().push(p.info.subpath.clone());
    }
    let mut refused = vec![];
    let mut keep = vec![];
    for p in prepared {
        let at = &count[&p.info.name];
        if at.len() < 2 {
            keep.push(p);
            continue;
        }
        let pick = if p.info.subpath.is_empty() { p.info.name.clone() } else { p.info.subpath.clone() };
        refused.push(Refused {
            name: p.info.name.clone(),
            subpath: p.info.subpath.clone(),
            reason: format!(
                "the repository offers {:?} {} times ({}); install one with --skill {pick}, or each under a name of its own: --skill {pick} --as NEW-NAME",
                p.info.name,
                at.len(),
                at.iter().map(|s| label(s)).collect::<Vec<_>>().join(", "),
            ),
            findings: vec![],
        });
    }
    (keep, refused)
}

/// The commits after `from` up to `to`, newest first, as `short-hash subject` (at most 50).
fn commit_log(repo: &git2::Repository, from: &str, to: &str) -> (Vec<String>, Option<String>) {
    if from == to {
        return (vec![], None);
    }
    let (Ok(to_oid), Ok(from_oid)) = (git2::Oid::from_str(to), git2::Oid::from_str(from)) else {
        return (vec![], None);
    };
    if repo.find_commit(from_oid).is_err() {
        return (
            vec![],
            Some(format!(
                "the pinned commit {} is not in the fetched history (a shallow fetch)",
                &from[..12.min(from.len())]
            )),
        );
    }
    let mut log = vec![];
    let walk = repo.revwalk().and_then(|mut w| {
        w.push(to_oid)?;
        w.hide(from_oid)?;
        Ok(w)
    });
    let Ok(walk) = walk else { return (vec![], Some("the history could not be read".into())) };
    for oid in walk.flatten().take(50) {
        if let Ok(c) = repo.find_commit(oid) {
            log.push(format!("{} {}", &oid.to_string()[..12], c.summary().unwrap_or("")));
        }
    }
    (log, None)
}

/// Most bytes of one file the install audit reads (the rest of a larger file is not read
/// line by line; its first bytes still tell what kind of file it is).
const AUDIT_READ: u64 = skillmem_audit::MAX_TEXT as u64;

/// Skills whose files the install audit holds in memory at once.
const AUDIT_BATCH: usize = 64;

/// `f` of each item, in order, the items split over the machine's cores.
fn on_every_core<T: Copy + Sync, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
    if cores <= 1 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = items
            .chunks(per)
            .map(|chunk| scope.spawn(move || chunk.iter().map(|&t| f(t)).collect::<Vec<R>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("an audit thread panicked")).collect()
    })
}

/// A skill's files as the audit reads them, from the commit's blobs (nothing is checked out).
fn audit_files(repo: &git2::Repository, files: &[store::FileEntry]) -> Result<Vec<skillmem_audit::File>> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let blob = repo.find_blob(f.oid).map_err(git)?;
        let bytes = if f.size > AUDIT_READ {
            blob.content()[..8192.min(blob.size())].to_vec()
        } else {
            blob.content().to_vec()
        };
        out.push(skillmem_audit::File { rel: f.rel.clone(), bytes, exec: f.exec, link: None });
    }
    Ok(out)
}

/// The one-line reason a blocked skill is refused, with the way out.
fn blocked_reason(name: &str, report: &skillmem_audit::Report, rules: &[String]) -> String {
    let first: Vec<String> = report
        .findings
        .iter()
        .filter(|f| rules.contains(&f.rule))
        .take(3)
        .map(|f| {
            let at = if f.line > 0 { format!("{}:{}", f.file, f.line) } else { f.file.clone() };
            format!("{} ({}) at {at}: {}", f.rule, f.severity.as_str(), f.why)
        })
        .collect();
    format!(
        "the audit blocks {name:?}: {}; read it with `skillmem skills audit` on a checkout, or install it anyway with --accept-risk {}",
        first.join("; "),
        rules.join(",")
    )
}
