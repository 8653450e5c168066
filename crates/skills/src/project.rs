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

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn git_identity_table() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("repo");
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        git(&root, &["init", "-q"]);
        let empty = identity(&root);
        assert!(empty.starts_with("gitdir-"), "{empty}");
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "first"]);
        git(&root, &["remote", "add", "origin", "https://example.com/acme/tool.git"]);
        let id = identity(&root);
        assert!(id.starts_with("git-"), "{id}");
        // every subfolder
        assert_eq!(identity(&root.join("src/deep")), id);
        // a linked worktree
        let wt = t.path().join("wt");
        git(&root, &["worktree", "add", "-q", wt.to_str().unwrap()]);
        assert_eq!(identity(&wt), id);
        // stable across later commits
        std::fs::write(root.join("b.txt"), "b").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "second"]);
        assert_eq!(identity(&root), id);
        // a clone with the same origin (ssh spelling) is the same project
        let same = t.path().join("same");
        git(t.path(), &["clone", "-q", root.to_str().unwrap(), same.to_str().unwrap()]);
        git(&same, &["remote", "set-url", "origin", "git@example.com:acme/tool.git"]);
        assert_eq!(identity(&same), id);
        // a fork: same root commit, another origin
        let fork = t.path().join("fork");
        git(t.path(), &["clone", "-q", root.to_str().unwrap(), fork.to_str().unwrap()]);
        git(&fork, &["remote", "set-url", "origin", "https://example.com/someone/tool.git"]);
        assert_ne!(identity(&fork), id);
        // an unrelated repository
        let other = t.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        git(&other, &["init", "-q"]);
        std::fs::write(other.join("a.txt"), "a").unwrap();
        git(&other, &["add", "."]);
        git(&other, &["commit", "-qm", "first", "--date", "2001-01-01T00:00:00"]);
        git(&other, &["remote", "add", "origin", "https://example.com/acme/other.git"]);
        assert_ne!(identity(&other), id);
    }
}
