//! Session skills (skills/): the same calls for the server and the CLI.

use std::path::Path;

use super::Engine;
use crate::error::Result;

impl Engine {
    /// Session skills over this engine's data directory and connection.
    pub fn skills(&self) -> crate::skills::Skills<'_> {
        crate::skills::Skills { data_dir: &self.config.data_dir, conn: &self.conn, home: dirs::home_dir() }
    }

    /// `skillmem/skills/install`.
    pub fn skills_install(
        &self,
        p: crate::protocol::skills::InstallParams,
        progress: &dyn Fn(crate::skills::Progress),
    ) -> Result<crate::protocol::skills::InstallResult> {
        let (skills, removed) = self.skills().install(&p.url, p.r#ref.as_deref(), progress)?;
        Ok(crate::protocol::skills::InstallResult { skills, removed })
    }

    /// `skillmem/skills/update`.
    pub fn skills_update(
        &self,
        p: crate::protocol::skills::UpdateParams,
        progress: &dyn Fn(crate::skills::Progress),
    ) -> Result<crate::protocol::skills::UpdateResult> {
        let (skills, removed) = self.skills().update(&p.source, p.r#ref.as_deref(), progress)?;
        Ok(crate::protocol::skills::UpdateResult { skills, removed })
    }

    /// `skillmem/skills/remove`.
    pub fn skills_remove(
        &self,
        p: crate::protocol::skills::RemoveParams,
    ) -> Result<crate::protocol::skills::RemoveResult> {
        Ok(crate::protocol::skills::RemoveResult { removed: self.skills().remove(&p.source)? })
    }

    /// `skillmem/skills/list`.
    pub fn skills_list(&self) -> Result<crate::protocol::skills::ListResult> {
        let sources = self
            .skills()
            .list()?
            .into_iter()
            .map(|(row, skills)| crate::protocol::skills::SourceInfo {
                source: row.source,
                pinned_ref: row.pinned_ref,
                requested_ref: row.requested_ref,
                skills,
            })
            .collect();
        Ok(crate::protocol::skills::ListResult { sources })
    }

    /// `skillmem/skills/resolve`.
    pub fn skills_resolve(
        &self,
        p: crate::protocol::skills::ResolveParams,
    ) -> Result<crate::protocol::skills::ResolveResult> {
        let (skills, dropped) = self.skills().resolve(&p.global, &p.list, &p.task)?;
        Ok(crate::protocol::skills::ResolveResult { skills, dropped })
    }

    /// `skillmem/skills/seed`.
    pub fn skills_seed(&self, p: crate::protocol::skills::SeedParams) -> Result<crate::protocol::skills::SeedResult> {
        let (actions, warnings) = self.skills().seed(Path::new(&p.cwd), &p.skills, p.target.as_deref(), p.dry_run)?;
        Ok(crate::protocol::skills::SeedResult { actions, warnings })
    }
}
