//! The skill store: one immutable, content-addressed folder per installed skill version,
//! `<dataDir>/store/<name>/<contentHash>/`.
//!
//! A skill is read from its git tree (never from a working tree), written into a staging
//! folder under `<dataDir>/store/.staging/` and renamed into place, so a reader never sees a
//! half-written skill. Regular files and folders are copied with their executable bit;
//! symlinks and submodules are skipped with a warning; `.git` is never copied; a skill over
//! [`CAPS`] is refused before a byte is written. The content hash covers every copied file's
//! relative path, executable bit and bytes.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};
use sha2::{Digest, Sha256};

use super::git;
use super::layout::{MODE_EXEC, MODE_FILE, MODE_LINK};
use crate::error::{Error, Result};

/// Limits on one skill.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_files: usize,
    pub max_bytes: u64,
    pub max_depth: usize,
}

/// The limits every install applies.
pub const CAPS: Caps = Caps { max_files: 5_000, max_bytes: 50 * 1024 * 1024, max_depth: 32 };

/// The folder (under the data directory) that holds the store.
pub const STORE: &str = "store";

/// One file of a skill, as found in its tree.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub rel: String,
    pub oid: Oid,
    pub exec: bool,
    pub size: u64,
}

/// Lists the files of a skill's tree within `caps`. `label` names the skill in messages.
pub fn collect(
    repo: &Repository,
    tree: &Tree<'_>,
    label: &str,
    caps: Caps,
    warnings: &mut Vec<String>,
) -> Result<Vec<FileEntry>> {
    let mut out = vec![];
    let mut bytes = 0u64;
    walk(repo, tree, "", 0, label, caps, &mut out, &mut bytes, warnings)?;
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &str,
    depth: usize,
    label: &str,
    caps: Caps,
    out: &mut Vec<FileEntry>,
    bytes: &mut u64,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if depth > caps.max_depth {
        return Err(Error::InvalidSkillRepo(format!(
            "skill {label}: folders nested deeper than {} levels; refused",
            caps.max_depth
        )));
    }
    let odb = repo.odb().map_err(git)?;
    for entry in tree.iter() {
        let Some(name) = entry.name() else {
            warnings.push(format!("{prefix}<non-UTF-8 name> skipped: file names must be UTF-8"));
            continue;
        };
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
            return Err(Error::InvalidSkillRepo(format!(
                "skill {label}: the tree has an unsafe entry name {name:?}; refused"
            )));
        }
        if name.eq_ignore_ascii_case(".git") {
            continue;
        }
        if reads_as_dot_git(name) {
            warnings.push(format!("{prefix}{name} skipped: some filesystems read that name as .git"));
            continue;
        }
        let rel = format!("{prefix}{name}");
        match (entry.kind(), entry.filemode()) {
            (Some(ObjectType::Tree), _) => {
                let sub = repo.find_tree(entry.id()).map_err(git)?;
                walk(repo, &sub, &format!("{rel}/"), depth + 1, label, caps, out, bytes, warnings)?;
            }
            (Some(ObjectType::Blob), MODE_LINK) => {
                warnings.push(format!("{rel} is a symlink; skipped (symlinks are never followed or copied)"));
            }
            (Some(ObjectType::Blob), mode) if mode == MODE_FILE || mode == MODE_EXEC => {
                let (size, _) = odb.read_header(entry.id()).map_err(git)?;
                *bytes += size as u64;
                if out.len() + 1 > caps.max_files {
                    return Err(Error::InvalidSkillRepo(format!(
                        "skill {label} has more than {} files; refused (a skill must stay small)",
                        caps.max_files
                    )));
                }
                if *bytes > caps.max_bytes {
                    return Err(Error::InvalidSkillRepo(format!(
                        "skill {label} is over {} MB (at {rel}, {} bytes); refused (a skill must stay small)",
                        caps.max_bytes / (1024 * 1024),
                        size
                    )));
                }
                out.push(FileEntry { rel, oid: entry.id(), exec: mode == MODE_EXEC, size: size as u64 });
            }
            (Some(ObjectType::Commit), _) => {
                warnings.push(format!("{rel} is a git submodule; skipped"));
            }
            _ => warnings.push(format!("{rel} is not a regular file; skipped")),
        }
    }
    Ok(())
}

/// True when some filesystem may read `name` as `.git`: in any case, with trailing dots or
/// spaces or an NTFS stream (Windows), with code points HFS+ ignores, or as the NTFS short
/// name `git~1` (the names git itself refuses to check out).
pub fn reads_as_dot_git(name: &str) -> bool {
    let hfs_ignored = |c: char| matches!(c as u32, 0x200C..=0x200F | 0x202A..=0x202E | 0x206A..=0x206F | 0xFEFF);
    let folded = name.chars().filter(|c| !hfs_ignored(*c)).collect::<String>().to_lowercase();
    let base = folded.split(':').next().unwrap_or("").trim_end_matches(['.', ' ']);
    base == ".git" || base == "git~1"
}

/// The store folder of a skill version, relative to the data directory.
pub fn rel_path(name: &str, hash: &str) -> String {
    format!("{STORE}/{name}/{hash}")
}

/// Writes a skill's files into a staging folder, hashing them, and moves it to
/// `store/<name>/<hash>` (kept as is when that version is already stored). Returns the hash.
pub fn write(repo: &Repository, files: &[FileEntry], data_dir: &Path, name: &str) -> Result<String> {
    let staging_root = data_dir.join(STORE).join(".staging");
    std::fs::create_dir_all(&staging_root)?;
    let staging = tempfile::Builder::new().prefix(&format!("{name}-")).tempdir_in(&staging_root)?;
    let mut h = Sha256::new();
    let mut manifest = crate::verify::Files::new();
    // Folders already made (files are sorted by path, so a folder's files come together).
    let mut made: Option<PathBuf> = None;
    for f in files {
        let blob = repo.find_blob(f.oid).map_err(git)?;
        let bytes = blob.content();
        h.update(f.rel.as_bytes());
        h.update([0, if f.exec { b'x' } else { b'-' }, 0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
        let sha: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
        manifest.insert(f.rel.clone(), (sha, f.exec));
        let path = staging.path().join(&f.rel);
        if let Some(parent) = path.parent().filter(|p| *p != staging.path() && made.as_deref() != Some(*p)) {
            std::fs::create_dir_all(parent)?;
            made = Some(parent.to_path_buf());
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if f.exec { 0o755 } else { 0o644 })
            .open(&path)?;
        file.write_all(bytes)?;
    }
    let hash: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let dest = data_dir.join(rel_path(name, &hash));
    // Which files a later `skills verify` names when the folder drifts.
    if let Err(e) = crate::verify::write_manifest(&crate::verify::manifest_path(data_dir, name, &hash), &manifest) {
        tracing::warn!("cannot write the manifest of {name}: {e}");
    }
    if dest.is_dir() {
        // The same version stored before, unless it was edited since: then it is replaced.
        if crate::verify::hash_dir(&dest, &[]).is_ok_and(|h| h.hash == hash) {
            return Ok(hash);
        }
        tracing::warn!("the stored copy of {name} was edited since install; writing it again");
        let aside = staging_root.join(format!("drifted-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::rename(&dest, &aside)?;
        let _ = std::fs::remove_dir_all(&aside);
    }
    std::fs::create_dir_all(dest.parent().unwrap_or(data_dir))?;
    match std::fs::rename(staging.path(), &dest) {
        Ok(()) => {}
        // Another install stored the same version meanwhile.
        Err(_) if dest.is_dir() => {}
        Err(e) => return Err(Error::storage(format!("cannot move skill {name} into the store: {e}"))),
    }
    Ok(hash)
}

/// Removes the stored versions of `name` other than `keep` (a path relative to the data
/// directory); with `keep` `None`, the skill's whole store folder.
pub fn gc(data_dir: &Path, name: &str, keep: Option<&str>) {
    let dir = data_dir.join(STORE).join(name);
    let keep: Option<PathBuf> = keep.map(|k| data_dir.join(k));
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if Some(&p) != keep.as_ref() {
            if let Err(err) = std::fs::remove_dir_all(&p) {
                tracing::warn!(path = %p.display(), "cannot remove an old stored skill: {err}");
            }
        }
    }
    let _ = std::fs::remove_dir(&dir); // only when empty
    let manifests = data_dir.join(STORE).join(".manifests").join(name);
    let keep_file = keep.as_ref().and_then(|k| k.file_name()).map(|h| format!("{}.tsv", h.to_string_lossy()));
    for e in std::fs::read_dir(&manifests).into_iter().flatten().flatten() {
        if Some(e.file_name().to_string_lossy().into_owned()) != keep_file {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let _ = std::fs::remove_dir(&manifests);
}

/// Removes staging folders and clones a crashed install left behind (older than an hour).
pub fn sweep_staging(data_dir: &Path) {
    let dirs = [data_dir.join(STORE).join(".staging"), data_dir.join("tmp")];
    for e in dirs.iter().filter_map(|d| std::fs::read_dir(d).ok()).flat_map(|r| r.flatten()) {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::tests::repo_with;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn copies_files_keeps_exec_skips_links_and_hashes() {
        let d = tempfile::tempdir().unwrap();
        let (repo, tree) = repo_with(
            &d.path().join("r"),
            &[("SKILL.md", "---\nname: a\n---\n"), ("scripts/run.sh", "!echo"), ("link", "@/etc/passwd")],
        );
        let tree = repo.find_tree(tree).unwrap();
        let mut warnings = vec![];
        let files = collect(&repo, &tree, "a", CAPS, &mut warnings).unwrap();
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["SKILL.md", "scripts/run.sh"]);
        assert!(warnings[0].contains("symlink"), "{warnings:?}");
        let data = d.path().join("data");
        let h1 = write(&repo, &files, &data, "a").unwrap();
        let h2 = write(&repo, &files, &data, "a").unwrap();
        assert_eq!(h1, h2);
        let dir = data.join(rel_path("a", &h1));
        let mode = std::fs::metadata(dir.join("scripts/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111);
        assert!(!dir.join("link").exists());
        gc(&data, "a", None);
        assert!(!data.join("store/a").exists());
    }

    #[test]
    fn names_read_as_dot_git() {
        for n in [
            ".git",
            ".GIT",
            ".git.",
            ".git ",
            ".git . ",
            "git~1",
            "GIT~1",
            ".g\u{200c}it",
            "\u{feff}.git",
            ".git::$DATA",
        ] {
            assert!(reads_as_dot_git(n), "{n:?}");
        }
        for n in [".gitignore", ".gitmodules", "git", ".gi", "x.git", "git~2", ".gi\u{200b}t"] {
            assert!(!reads_as_dot_git(n), "{n:?}");
        }
    }

    #[test]
    fn caps_refuse_before_writing() {
        let d = tempfile::tempdir().unwrap();
        let (repo, tree) = repo_with(d.path(), &[("SKILL.md", "x"), ("a", "0123456789"), ("b", "y")]);
        let tree = repo.find_tree(tree).unwrap();
        let small = Caps { max_files: 2, max_bytes: 1000, max_depth: 4 };
        let e = collect(&repo, &tree, "s", small, &mut vec![]).unwrap_err();
        assert!(matches!(e, Error::InvalidSkillRepo(ref m) if m.contains("files")), "{e}");
        let tiny = Caps { max_files: 10, max_bytes: 5, max_depth: 4 };
        let e = collect(&repo, &tree, "s", tiny, &mut vec![]).unwrap_err();
        assert!(matches!(e, Error::InvalidSkillRepo(ref m) if m.contains("MB")), "{e}");
    }
}
