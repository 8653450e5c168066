//! The engine's parts that know where skills live: the skill folders found so far, their
//! content hashes, the skills memory is on for by configuration (`memory.enabledSkills`), and
//! the warnings a skill's folder gives a person once (a malformed frontmatter). With them,
//! [`Engine::skill_context`]: whether a skill has memory, and why not.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::{lock, Engine};
use skillmem_error::{Error, Result};
use skillmem_skillmd::frontmatter::{self, MemorySettings};
use skillmem_store::memory::{provenance, version};

/// What the engine knows about one skill at the moment of a call.
#[derive(Debug, Clone)]
pub struct SkillContext {
    pub name: String,
    pub dir: Option<PathBuf>,
    pub enabled: bool,
    pub settings: MemorySettings,
    pub version: Option<String>,
    /// Why memory is off although the skill may ask for it: its SKILL.md's frontmatter cannot
    /// be read (the line, and what to fix).
    pub problem: Option<String>,
}

/// Where the skills of this engine's workspace live.
/// What a SKILL.md's frontmatter said: its memory settings and why it was read line by line,
/// or why it could not be read.
type Parsed = std::result::Result<(MemorySettings, Option<String>), String>;

/// SKILL.md files whose parse is kept at most (then all dropped).
const PARSED_HELD: usize = 4096;

pub(super) struct SkillFolders {
    workspace: Option<PathBuf>,
    /// `memory.enabledSkills`.
    enabled_globs: GlobSet,
    /// Each skill's folder, as a host named it or as it was found.
    dirs: Mutex<HashMap<String, PathBuf>>,
    /// Skill folders' content hashes, kept while their files are unchanged.
    hashes: version::HashCache,
    /// Each SKILL.md's text as last read and what its frontmatter said (the memory settings,
    /// and why it was read line by line; or why it could not be read): a load reads the file
    /// (cheap) and parses it again only when the text changed (YAML, a tenth of a small
    /// skill's load).
    parsed: Mutex<HashMap<PathBuf, (String, Parsed)>>,
}

impl SkillFolders {
    /// The skill folders of `workspace`, with memory on by configuration for the skills the
    /// globs `enabled` match.
    /// Folders' content hashes are also kept under `cache` ([`version::HashCache::on_disk`]).
    pub(super) fn new(workspace: Option<PathBuf>, enabled: &[String], cache: PathBuf) -> Result<SkillFolders> {
        let mut b = GlobSetBuilder::new();
        for g in enabled {
            let glob =
                Glob::new(g).map_err(|e| Error::invalid(format!("memory.enabledSkills: bad glob {g:?}: {e}")))?;
            b.add(glob);
        }
        let enabled_globs = b.build().map_err(|e| Error::invalid(format!("memory.enabledSkills: {e}")))?;
        Ok(SkillFolders {
            workspace,
            enabled_globs,
            dirs: Mutex::default(),
            hashes: version::HashCache::on_disk(cache),
            parsed: Mutex::default(),
        })
    }

    pub(super) fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Whether `memory.enabledSkills` turns memory on for `skill`.
    pub(super) fn enabled_by_config(&self, skill: &str) -> bool {
        self.enabled_globs.is_match(skill)
    }

    /// The folder of `skill` seen before, while it still holds a SKILL.md; else the one found
    /// in the workspace's or the user's skill folders.
    pub(super) fn find(&self, skill: &str) -> Option<PathBuf> {
        let home = dirs::home_dir();
        lock(&self.dirs)
            .get(skill)
            .cloned()
            .filter(|d| d.join("SKILL.md").is_file())
            .or_else(|| provenance::find_by_name(skill, self.workspace.as_deref(), home.as_deref()))
    }
}

/// The warnings for a person gathered since the doors last took them, each said once.
#[derive(Default)]
pub(super) struct Warnings {
    said: Mutex<HashSet<String>>,
    pending: Mutex<Vec<String>>,
}

impl Warnings {
    pub(super) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Logs `msg` and keeps it for the doors, the first time `key` is warned of.
    fn once(&self, key: &str, msg: String) {
        if lock(&self.said).insert(key.to_string()) {
            tracing::warn!("{msg}");
            lock(&self.pending).push(msg);
        }
    }
}

impl Engine {
    /// Warnings gathered since the last call (malformed frontmatter, once per skill).
    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings.take()
    }

    /// Works out where a skill lives and whether it has memory. `dir` is the host's word for
    /// where it lives; without it the skill is looked up by name.
    pub fn skill_context(&self, name: &str, dir: Option<PathBuf>) -> Result<SkillContext> {
        let dir = match dir {
            Some(d) => Some(d),
            None => self.skill_folders.find(name).or_else(|| {
                let stored = self.skills().store_dir(name)?;
                stored.join("SKILL.md").is_file().then_some(stored)
            }),
        };
        let by_glob = self.skill_folders.enabled_by_config(name);
        let Some(dir) = dir else {
            if by_glob {
                return Ok(SkillContext {
                    name: name.into(),
                    dir: None,
                    enabled: true,
                    settings: MemorySettings::default(),
                    version: None,
                    problem: None,
                });
            }
            return Err(Error::NotFound(format!(
                "skill {name:?}: no SKILL.md found in the workspace's or the user's skill folders (.opencode/skills, .claude/skills, .agents/skills, .pi/skills, ~/.pi/agent/skills); load the skill once, or add it to memory.enabledSkills"
            )));
        };
        let file = dir.join("SKILL.md");
        let bytes = std::fs::read(&file)
            .map_err(|e| Error::NotFound(format!("skill {name:?}: cannot read {}: {e}", file.display())))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::InvalidSkillRepo(format!("skill {name:?}: {} is not UTF-8 text; save it as UTF-8", file.display()))
        })?;
        lock(&self.skill_folders.dirs).insert(name.to_string(), dir.clone());
        let parsed = {
            let mut held = lock(&self.skill_folders.parsed);
            match held.get(&file) {
                Some((t, p)) if *t == text => p.clone(),
                _ => {
                    let p = frontmatter::parse(&text).map(|f| (f.memory, f.lenient)).map_err(|e| e.to_string());
                    if held.len() >= PARSED_HELD {
                        held.clear();
                    }
                    held.insert(file.clone(), (text, p.clone()));
                    p
                }
            }
        };
        let (mut settings, problem) = match parsed {
            Ok((memory, lenient)) => {
                if let Some(why) = &lenient {
                    // Hosts read such a frontmatter too; nothing for a person to act on.
                    tracing::debug!("skill {name:?}: {} read line by line: {why}", file.display());
                }
                (memory, None)
            }
            Err(why) => {
                let problem = format!("{} has a malformed frontmatter that cannot be read: {why}", file.display());
                let what = if by_glob { "memory on by memory.enabledSkills, but" } else { "memory disabled because" };
                self.warnings
                    .once(&format!("frontmatter:{}", file.display()), format!("skill {name:?}: {what} {problem}"));
                (MemorySettings::default(), Some(problem))
            }
        };
        settings.enabled |= by_glob;
        let version = if settings.enabled { self.skill_folders.hashes.content_hash(&dir) } else { None };
        Ok(SkillContext { name: name.into(), dir: Some(dir), enabled: settings.enabled, settings, version, problem })
    }

    pub(super) fn require_enabled(&self, skill: &str) -> Result<SkillContext> {
        if skill.trim().is_empty() {
            return Err(Error::invalid("skill must name a skill"));
        }
        let ctx = self.skill_context(skill, None)?;
        if let (false, Some(problem)) = (ctx.enabled, &ctx.problem) {
            return Err(Error::MemoryDisabled(format!(
                "memory is off for skill {skill:?} because {problem}; fix that line (quote a value that holds \": \" or #), then call again"
            )));
        }
        if !ctx.enabled {
            let file = match &ctx.dir {
                Some(d) => d.join("SKILL.md").display().to_string(),
                None => "its SKILL.md".into(),
            };
            return Err(Error::MemoryDisabled(format!(
                "memory is not enabled for skill {skill:?}: add the line `skill-memory: {{ enabled: true }}` to the frontmatter of {file} (between its --- lines), or add {skill:?} to memory.enabledSkills in skillmem.toml; then call again"
            )));
        }
        Ok(ctx)
    }
}
