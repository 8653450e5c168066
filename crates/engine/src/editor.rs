//! What an editor shows about a skill while its SKILL.md is open: the memory it has and
//! whether memory is on, and why. Reads only; counts no recall.

use std::path::PathBuf;

use super::Engine;
use skillmem_error::Result;
use skillmem_store::memory::{store, Note};

/// A skill's memory at a glance.
#[derive(Debug, Clone)]
pub struct SkillOverview {
    pub skill: String,
    pub enabled: bool,
    /// Why memory is on or off, for a person.
    pub why: String,
    /// Notes of this project, and global notes (visible from every project).
    pub project_notes: i64,
    pub global_notes: i64,
    pub pinned: i64,
    /// The leading notes: pinned first, then by hits.
    pub top: Vec<Note>,
}

impl Engine {
    /// The memory of `skill` (whose folder is `dir`, when known) as seen from this project.
    pub fn skill_overview(&self, skill: &str, dir: Option<PathBuf>, top: usize) -> Result<SkillOverview> {
        let ctx = self.skill_context(skill, dir)?;
        let by_glob = self.skill_folders.enabled_by_config(skill);
        let why = match (&ctx.problem, ctx.enabled, by_glob) {
            (Some(problem), false, _) => format!("memory is off because {problem}"),
            (_, true, true) => "memory is on by the configuration (memory.enabledSkills)".to_string(),
            (_, true, false) => "memory is on by the frontmatter (skill-memory)".to_string(),
            (None, false, _) => {
                "memory is off: add `skill-memory: { enabled: true }` to the frontmatter, or the skill to memory.enabledSkills"
                    .to_string()
            }
        };
        let conn = self.conn();
        let (project_notes, global_notes, pinned) = store::scope_counts(&conn, skill, &self.project_id)?;
        let ids = store::leading_ids(&conn, skill, &self.project_id, top)?;
        let mut notes = store::load(&conn, &ids)?;
        notes.sort_by_key(|n| ids.iter().position(|id| *id == n.id));
        Ok(SkillOverview {
            skill: skill.to_string(),
            enabled: ctx.enabled,
            why,
            project_notes,
            global_notes,
            pinned,
            top: notes,
        })
    }
}
