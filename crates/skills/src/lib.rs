//! Session skills: install, pin, update, remove, list, resolve and seed skills from git.
//!
//! Owns the registry tables, the store under `<dataDir>/store`, git fetching (git2) and
//! seeding into a session's working folder. Knows nothing of JSON-RPC: [`Skills`] takes and
//! returns plain types, and both the server and the CLI reach it through the engine.
//!
//! Order of an install: fetch (no lock held), detect the layout, read and validate every
//! skill (every name checked before anything is written), write each skill's store folder
//! (staged, then renamed), then record the source in one transaction (a collision aborts it),
//! then drop the store folders nothing refers to any more.

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
    /// Its folder in the repository (`skills/<name>`, or empty for a root SKILL.md).
    pub subpath: String,
    /// SHA-256 of its files (relative path, executable bit, bytes).
    pub content_hash: String,
    /// Its immutable folder in the store.
    pub path: String,
    pub installed_at: i64,
    pub warnings: Vec<String>,
}

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

impl Skills<'_> {
    /// Installs (or reinstalls, which updates) every skill of `url` at `rref`. Returns the
    /// source's skills and the names it no longer has.
    pub fn install(
        &self,
        url: &str,
        rref: Option<&str>,
        progress: &dyn Fn(Progress),
    ) -> Result<(Vec<SkillInfo>, Vec<String>)> {
        let source = fetch::normalize(url)?;
        let rref = rref.map(str::trim).filter(|r| !r.is_empty());
        store::sweep_staging(self.data_dir);
        progress(Progress { message: format!("cloning {source}"), percent: Some(0) });
        let started = std::time::Instant::now();
        let fetched = fetch::fetch(&source, rref, &self.data_dir.join("tmp"), progress)?;
        let fetched_ms = started.elapsed().as_millis();
        let repo = &fetched.repo;
        let commit = repo.find_commit(fetched.commit).map_err(git)?;
        let pinned = commit.id().to_string();
        if let Some(skills) = self.unchanged(&source, rref, &pinned)? {
            progress(Progress { message: format!("{source} is already at {}", &pinned[..12]), percent: Some(100) });
            return Ok((skills, vec![]));
        }
        let root = commit.tree().map_err(git)?;
        let (candidates, layout_warnings) = layout::detect(repo, &root)?;
        for w in &layout_warnings {
            tracing::warn!(source = %source, "{w}");
        }
        progress(Progress {
            message: format!("checking {} skill(s) at {}", candidates.len(), &pinned[..12]),
            percent: Some(55),
        });
        let now = db::now_ms();
        let mut prepared = vec![];
        for c in &candidates {
            prepared.push(self.prepare(repo, &source, &pinned, c, now)?);
        }
        let prepared_ms = started.elapsed().as_millis();
        let mut seen = HashSet::new();
        for p in &prepared {
            if !seen.insert(p.info.name.clone()) {
                return Err(Error::InvalidSkillRepo(format!("{source} provides the name {:?} twice", p.info.name)));
            }
        }
        // Store, record and clean up under one data-dir-wide lock: a concurrent install's
        // cleanup must not drop a folder this one has stored but not yet recorded.
        let _guard = lock::exclusive(self.data_dir, "install")?;
        registry::check_collisions(&lock(self.conn), &source, prepared.iter().map(|p| p.info.name.as_str()))?;
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
            registry::replace_source(&mut lock(self.conn), &source, rref, &pinned, &records)
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
        let skills = registry::skills_of(&lock(self.conn), self.data_dir, &source)?;
        Ok((skills, removed))
    }

    /// The source's skills when it is already installed at `pinned` with the same requested
    /// ref and every store folder is in place: a reinstall with nothing to do.
    fn unchanged(&self, source: &str, rref: Option<&str>, pinned: &str) -> Result<Option<Vec<SkillInfo>>> {
        let conn = lock(self.conn);
        let Some(row) = registry::source(&conn, source)? else { return Ok(None) };
        if row.pinned_ref != pinned || row.requested_ref.as_deref() != rref {
            return Ok(None);
        }
        let skills = registry::skills_of(&conn, self.data_dir, source)?;
        let intact = !skills.is_empty() && skills.iter().all(|s| Path::new(&s.path).join("SKILL.md").is_file());
        Ok(intact.then_some(skills))
    }

    fn prepare(
        &self,
        repo: &git2::Repository,
        source: &str,
        pinned: &str,
        c: &layout::Candidate,
        now: i64,
    ) -> Result<Prepared> {
        let md_path = if c.subpath.is_empty() { "SKILL.md".to_string() } else { format!("{}/SKILL.md", c.subpath) };
        let label = if c.subpath.is_empty() { "the repository root" } else { c.subpath.as_str() };
        let tree = repo.find_tree(c.tree).map_err(git)?;
        let md = tree.get_name("SKILL.md").ok_or_else(|| Error::InvalidSkillRepo(format!("{md_path} is missing")))?;
        let blob = repo.find_blob(md.id()).map_err(git)?;
        if blob.size() > 1024 * 1024 {
            return Err(Error::InvalidSkillRepo(format!("{md_path} is over 1 MB; refused")));
        }
        let text = std::str::from_utf8(blob.content())
            .map_err(|_| Error::InvalidSkillRepo(format!("{md_path} is not UTF-8 text; save it as UTF-8")))?;
        let fm = frontmatter::parse(text)
            .map_err(|why| Error::InvalidSkillRepo(format!("{md_path} has a bad frontmatter: {why}")))?;
        let name = match &c.folder {
            Some(folder) => folder.clone(),
            None => fm.name.clone().map(|n| n.trim().to_string()).unwrap_or_else(|| fetch::basename(source)),
        };
        skill_name::check(&name).map_err(|why| {
            Error::InvalidSkillRepo(format!(
                "skill {name:?} ({label}) has an invalid name: {why}; nothing was installed"
            ))
        })?;
        let mut warnings = warnings::frontmatter_warnings(&fm, text, c.folder.as_deref());
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
                subpath: c.subpath.clone(),
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

    /// Re-fetches an installed source at the ref it was installed with (or `rref`).
    pub fn update(
        &self,
        source: &str,
        rref: Option<&str>,
        progress: &dyn Fn(Progress),
    ) -> Result<(Vec<SkillInfo>, Vec<String>)> {
        let row = self.find_source(source)?;
        let rref = rref.map(str::to_string).or(row.requested_ref.clone());
        self.install(&row.source, rref.as_deref(), progress)
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
