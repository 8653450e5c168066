//! Seeding: copies of stored skills in a session's working folder, `<cwd>/<target>/<name>/`,
//! that git never picks up and that a later seed can tell apart from the project's own.
//!
//! Every seeded folder holds two files of ours: `.gitignore` with `*` (it ignores the folder's
//! whole content, itself included, and a nested ignore file beats any negation in the
//! project's upper `.gitignore` files or `info/exclude`, in a main checkout and a linked
//! worktree alike, without touching anything shared), and the marker [`MARKER`]. A folder
//! without the marker, or one the project's git index tracks, is the project's: it is
//! reported as `skip` and never written or removed. A copy is built in a staging folder
//! beside its destination (ignored from its first byte) and renamed into place, so a replaced
//! copy keeps no stale file.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The marker file of a seeded folder.
pub const MARKER: &str = ".skillmem-seeded";
/// The ignore file written into every seeded folder.
pub const IGNORE_FILE: &str = ".gitignore";
/// Its content: ignore everything in this folder, this file included.
pub const IGNORE_ALL: &str = "# written by skillmem: a seeded session skill, never to be committed\n*\n";
/// The default seed target.
pub const DEFAULT_TARGET: &str = ".claude/skills";
const TEMP_PREFIX: &str = ".skillmem-tmp-";

/// What a seed did (or, with `dryRun`, would do) to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SeedOp {
    /// The skill was copied to `path`.
    Copy,
    /// `path` (the ignore file) keeps git from staging the seeded copy.
    Ignore,
    /// A copy seeded earlier and no longer wanted was removed.
    Remove,
    /// `path` was left alone; `reason` says why.
    Skip,
}

/// One action of a seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeedAction {
    pub op: SeedOp,
    pub skill: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A skill to seed: its name and its stored folder.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub name: String,
    pub store_dir: PathBuf,
    pub source: String,
    pub content_hash: String,
}

/// Checks a seed target: a relative path of plain components.
pub fn check_target(target: &str) -> Result<PathBuf> {
    let p = Path::new(target);
    let ok = !target.trim().is_empty()
        && !target.contains('\0')
        && p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)));
    if !ok {
        return Err(Error::invalid(format!(
            "target {target:?} must be a relative folder inside cwd without `..` (e.g. .claude/skills, .opencode/skills, .agents/skills)"
        )));
    }
    Ok(p.to_path_buf())
}

/// What git tracks under the target folder: the names of its first-level entries.
fn tracked_under(cwd: &Path, target_dir: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    let Ok(repo) = git2::Repository::discover(cwd) else { return out };
    let Some(workdir) = repo.workdir().and_then(|w| std::fs::canonicalize(w).ok()) else { return out };
    let Ok(rel) = target_dir.strip_prefix(&workdir) else { return out };
    let mut prefix = rel.to_string_lossy().replace('\\', "/");
    if !prefix.is_empty() {
        prefix.push('/');
    }
    let Ok(index) = repo.index() else { return out };
    for e in index.iter() {
        let path = String::from_utf8_lossy(&e.path).into_owned();
        if let Some(rest) = path.strip_prefix(&prefix) {
            if let Some(first) = rest.split('/').next() {
                out.insert(first.to_string());
            }
        }
    }
    out
}

fn seeded(dir: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return false };
    meta.is_dir() && std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// Plans a seed and, unless `dry_run`, carries it out. `cwd` must be an existing absolute
/// folder; `home` is the user's home (for the shadowing warning: `~/.claude/skills/<name>`,
/// `~/<target>/<name>`, and OpenCode's `~/.config/opencode/skill(s)/<name>` for `.opencode`
/// targets).
pub fn seed(
    cwd: &Path,
    target: &str,
    wanted: &[Wanted],
    home: Option<&Path>,
    dry_run: bool,
) -> Result<(Vec<SeedAction>, Vec<String>)> {
    let target_rel = check_target(target)?;
    let cwd =
        std::fs::canonicalize(cwd).map_err(|e| Error::invalid(format!("cwd {} cannot be used: {e}", cwd.display())))?;
    let target_dir = cwd.join(&target_rel);
    let tracked = tracked_under(&cwd, &target_dir);
    let mut actions = vec![];
    let mut warnings = vec![];
    let mut copies = vec![];
    let wanted_names: HashSet<&str> = wanted.iter().map(|w| w.name.as_str()).collect();
    for w in wanted {
        let dest = target_dir.join(&w.name);
        let path = dest.display().to_string();
        let skip = |reason: String| SeedAction {
            op: SeedOp::Skip,
            skill: w.name.clone(),
            path: path.clone(),
            reason: Some(reason),
        };
        if tracked.contains(&w.name) {
            actions.push(skip(format!("{path} is tracked by the project's git; left untouched")));
            continue;
        }
        if std::fs::symlink_metadata(&dest).is_ok() && !seeded(&dest) {
            actions.push(skip(format!(
                "{path} exists and was not seeded by skillmem (no {MARKER} marker); left untouched"
            )));
            continue;
        }
        actions.push(SeedAction { op: SeedOp::Copy, skill: w.name.clone(), path: path.clone(), reason: None });
        actions.push(SeedAction {
            op: SeedOp::Ignore,
            skill: w.name.clone(),
            path: dest.join(IGNORE_FILE).display().to_string(),
            reason: Some("an ignore file with `*` inside the seeded folder keeps git from staging it".into()),
        });
        if let Some(home) = home {
            let mut shadows = vec![home.join(".claude/skills").join(&w.name)];
            let mut more = vec![home.join(&target_rel).join(&w.name)];
            more.extend(user_folders_beside(&target_rel).iter().map(|d| home.join(d).join(&w.name)));
            for m in more {
                if !shadows.contains(&m) {
                    shadows.push(m);
                }
            }
            for s in shadows.into_iter().filter(|s| s.join("SKILL.md").exists()) {
                warnings.push(format!(
                    "{} exists: the user's own skill {:?} may shadow the seeded one",
                    s.display(),
                    w.name
                ));
            }
        }
        copies.push((w, dest));
    }
    let mut removes = vec![];
    let mut leftovers = vec![];
    if let Ok(entries) = std::fs::read_dir(&target_dir) {
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    leftovers.push(e.path());
                }
                continue;
            }
            if wanted_names.contains(name.as_str()) || !seeded(&e.path()) {
                continue;
            }
            let path = e.path().display().to_string();
            if tracked.contains(&name) {
                actions.push(SeedAction {
                    op: SeedOp::Skip,
                    skill: name,
                    path: path.clone(),
                    reason: Some(format!("{path} is tracked by the project's git; left untouched")),
                });
                continue;
            }
            actions.push(SeedAction { op: SeedOp::Remove, skill: name, path, reason: None });
            removes.push(e.path());
        }
    }
    if dry_run {
        return Ok((actions, warnings));
    }
    for p in leftovers {
        let _ = std::fs::remove_dir_all(p);
    }
    if copies.is_empty() && removes.is_empty() {
        return Ok((actions, warnings));
    }
    std::fs::create_dir_all(&target_dir)
        .map_err(|e| Error::storage(format!("cannot create {}: {e}", target_dir.display())))?;
    // One work folder per seed, beside the copies (same file system, so renames are atomic),
    // ignored by git from its first byte. Skills are staged one level inside it, where a host
    // scanning `<target>/*/SKILL.md` does not see them; replaced and removed copies are moved
    // into it and deleted with it at the end.
    let work = tempfile::Builder::new().prefix(TEMP_PREFIX).tempdir_in(&target_dir)?;
    std::fs::write(work.path().join(IGNORE_FILE), IGNORE_ALL)?;
    for (i, (w, dest)) in copies.into_iter().enumerate() {
        copy_one(w, work.path(), i, &dest)?;
    }
    for (i, p) in removes.iter().enumerate() {
        std::fs::rename(p, work.path().join(format!("removed-{i}")))
            .map_err(|e| Error::storage(format!("cannot remove the seeded copy {}: {e}", p.display())))?;
    }
    let work = work.keep();
    if let Err(e) = std::fs::remove_dir_all(&work) {
        tracing::warn!(path = %work.display(), "cannot remove the seed's work folder (the next seed will): {e}");
    }
    Ok((actions, warnings))
}

fn copy_one(w: &Wanted, work: &Path, i: usize, dest: &Path) -> Result<()> {
    let staging = work.join(format!("new-{i}"));
    std::fs::create_dir(&staging)?;
    std::fs::write(staging.join(IGNORE_FILE), IGNORE_ALL)?;
    copy_tree(&w.store_dir, &staging, true)?;
    let marker = serde_json::json!({
        "skill": w.name,
        "source": w.source,
        "contentHash": w.content_hash,
        "seededAt": crate::db::now_ms(),
    });
    std::fs::write(staging.join(MARKER), serde_json::to_string_pretty(&marker).unwrap_or_default())?;
    if std::fs::symlink_metadata(dest).is_ok() {
        std::fs::rename(dest, work.join(format!("old-{i}")))?;
    }
    std::fs::rename(&staging, dest)?;
    Ok(())
}

/// Copies regular files and folders of `src` into `dst`, keeping the executable bit; symlinks
/// are skipped. At the top level, our own ignore file and marker are never overwritten.
fn copy_tree(src: &Path, dst: &Path, top: bool) -> Result<()> {
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let name = e.file_name();
        if top && (name == IGNORE_FILE || name == MARKER) {
            continue;
        }
        let ft = e.file_type()?;
        let to = dst.join(&name);
        if ft.is_dir() {
            std::fs::create_dir(&to)?;
            copy_tree(&e.path(), &to, false)?;
        } else if ft.is_file() {
            // `copy` gives the copy the source's mode (the store writes 0644 or 0755); set it
            // only when the source's differs from that (a umask, a hand-edited store).
            std::fs::copy(e.path(), &to)?;
            let mode = e.metadata()?.permissions().mode() & 0o7777;
            let want = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
            if mode != want {
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(want))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        for ok in [".claude/skills", ".opencode/skills", ".agents/skills", "skills", "./x/y"] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/etc", "../x", ".claude/../../x", ".", "a/../../b"] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
    }
}

/// The user-level skill folders (under the home directory) that the hosts reading a project's
/// `target` folder also search, where a skill of the same name may shadow the seeded one.
fn user_folders_beside(target: &Path) -> &'static [&'static str] {
    let t = target.to_string_lossy();
    if t.starts_with(".opencode") {
        &[".config/opencode/skills", ".config/opencode/skill"]
    } else if t.starts_with(".gemini") {
        // Gemini CLI
        &[".gemini/skills", ".agents/skills"]
    } else if t.starts_with(".github") {
        // Copilot CLI
        &[".copilot/skills", ".agents/skills"]
    } else if t.starts_with(".agents") {
        // Codex CLI reads $CODEX_HOME/skills; Gemini and Copilot read .agents too
        &[".codex/skills", ".gemini/skills", ".copilot/skills"]
    } else if t.starts_with(".pi") {
        &[".pi/agent/skills"]
    } else {
        &[]
    }
}

#[cfg(test)]
mod shadow_tests {
    use super::user_folders_beside;
    use std::path::Path;

    #[test]
    fn each_hosts_project_folder_names_its_user_folders() {
        let cases: &[(&str, &[&str])] = &[
            (".claude/skills", &[]),
            (".opencode/skills", &[".config/opencode/skills", ".config/opencode/skill"]),
            (".gemini/skills", &[".gemini/skills", ".agents/skills"]),
            (".github/skills", &[".copilot/skills", ".agents/skills"]),
            (".agents/skills", &[".codex/skills", ".gemini/skills", ".copilot/skills"]),
            (".pi/skills", &[".pi/agent/skills"]),
            ("tools/skills", &[]),
        ];
        for (target, want) in cases {
            assert_eq!(user_folders_beside(Path::new(target)), *want, "{target}");
        }
    }
}
