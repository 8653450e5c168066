//! Project identity: which notes a workspace sees as "its own".
//!
//! For a folder inside a git repository the identity is derived from the repository's root
//! commit (the first-parent root of HEAD) and its normalised `origin` URL, so it is the same
//! for every subfolder and every linked worktree, the same for two clones of one project, and
//! different for a fork or a template copy with another `origin`. A repository without commits
//! falls back to its common git directory's canonical path; a folder outside git to its own
//! canonical path. Identities are short hex digests with a readable prefix.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The identity of the project that contains `dir`.
pub fn identity(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match git2::Repository::discover(&canonical) {
        Ok(repo) => {
            let origin = repo.find_remote("origin").ok().and_then(|r| r.url().map(normalize_url)).unwrap_or_default();
            match root_commit(&repo) {
                Some(root) => format!("git-{}", digest(&format!("{root}\n{origin}"))),
                None => {
                    let common = repo.commondir().canonicalize().unwrap_or_else(|_| repo.commondir().to_path_buf());
                    format!("gitdir-{}", digest(&common.to_string_lossy()))
                }
            }
        }
        Err(_) => format!("path-{}", digest(&canonical.to_string_lossy())),
    }
}

fn root_commit(repo: &git2::Repository) -> Option<String> {
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let mut walk = repo.revwalk().ok()?;
    walk.push(head.id()).ok()?;
    walk.simplify_first_parent().ok()?;
    walk.last().and_then(|r| r.ok()).map(|oid| oid.to_string())
}

/// Normalises a remote URL so that its https, ssh and scp-like spellings agree:
/// `git@github.com:a/b.git`, `ssh://git@github.com/a/b` and `https://github.com/a/b/` all
/// become `github.com/a/b`.
pub fn normalize_url(url: &str) -> String {
    let u = url.trim();
    let u = u.split_once("://").map(|(_, rest)| rest).unwrap_or(u);
    let u = u.rsplit_once('@').map(|(_, rest)| rest).unwrap_or(u);
    // scp-like host:path (no scheme)
    let u = if !url.contains("://") { u.replacen(':', "/", 1) } else { u.to_string() };
    let u = u.trim_end_matches('/');
    let u = u.strip_suffix(".git").unwrap_or(u);
    u.to_ascii_lowercase()
}

fn digest(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_table() {
        let same = [
            "git@github.com:Acme/Tool.git",
            "ssh://git@github.com/acme/tool",
            "https://github.com/acme/tool.git",
            "https://user:tok@github.com/acme/tool/",
        ];
        for u in same {
            assert_eq!(normalize_url(u), "github.com/acme/tool", "{u}");
        }
        assert_ne!(normalize_url("https://github.com/acme/tool"), normalize_url("https://github.com/fork/tool"));
    }

    #[test]
    fn non_git_folders_differ_by_path() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert!(identity(a.path()).starts_with("path-"));
        assert_ne!(identity(a.path()), identity(b.path()));
        assert_eq!(identity(a.path()), identity(a.path()));
    }
}
