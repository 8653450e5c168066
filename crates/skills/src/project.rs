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
    if !git_may_find(&canonical) {
        // No `.git` above it, no bare repository, no GIT_DIR: git would find nothing, and
        // libgit2 is not started (its start loads OpenSSL's certificates: 15–18 ms of a hook
        // process's 40).
        return format!("path-{}", digest(&canonical.to_string_lossy()));
    }
    from_git(&canonical)
}

/// [`identity`], kept in a file under `cache` (a folder of the data directory) for a folder
/// in a plain git checkout: a hook is a process per skill load, and reading the repository
/// (libgit2's start, the walk to the root commit) was half of one at 1,000 notes. The file
/// holds what the identity was derived from as git keeps it (`.git/HEAD`, the branch it names,
/// `packed-refs` and `config`: their sizes and times), so a commit, a checkout or another
/// `origin` reads the repository again. Linked worktrees, bare repositories and `GIT_DIR` are
/// not kept: they are read every time.
pub fn identity_cached(dir: &Path, cache: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if !git_may_find(&canonical) {
        return format!("path-{}", digest(&canonical.to_string_lossy()));
    }
    let Some(stamp) = git_stamp(&canonical) else { return from_git(&canonical) };
    let file = cache.join(format!("project-{}", digest(&canonical.to_string_lossy())));
    if let Ok(text) = std::fs::read_to_string(&file) {
        if let Some((kept, id)) = text.rsplit_once('\n') {
            if kept == stamp && !id.is_empty() {
                return id.to_string();
            }
        }
    }
    let id = from_git(&canonical);
    // Best effort: written whole under another name, then renamed into place.
    let _ = std::fs::create_dir_all(cache).and_then(|()| {
        let tmp = cache.join(format!(".project-{}-{}", std::process::id(), digest(&stamp)));
        std::fs::write(&tmp, format!("{stamp}\n{id}"))?;
        std::fs::rename(&tmp, &file)
    });
    id
}

/// Whether git could find a repository for `dir`: `GIT_DIR` is set, or `dir` or a folder above
/// it holds `.git` or looks like a bare repository (`HEAD`, `objects` and `refs`).
fn git_may_find(dir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    dir.ancestors().any(|d| {
        d.join(".git").exists() || (d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir())
    })
}

/// What a cached identity of `dir` is checked against: for a folder of a plain checkout (the
/// nearest `.git` above it is a folder), the path of that folder, `HEAD`'s text, and the size
/// and time of `HEAD`, the branch file it names, `packed-refs` and `config`. `None` when the
/// identity is not kept (another kind of repository, or `GIT_DIR`).
fn git_stamp(dir: &Path) -> Option<String> {
    if std::env::var_os("GIT_DIR").is_some() {
        return None;
    }
    let git = dir.ancestors().map(|d| d.join(".git")).find(|g| g.exists())?;
    if !git.is_dir() || git.join("commondir").exists() {
        return None;
    }
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let mut files = vec![git.join("HEAD"), git.join("packed-refs"), git.join("config")];
    if let Some(branch) = head.trim().strip_prefix("ref: ") {
        files.push(git.join(branch));
    }
    let mut stamp = format!("{}|{}", git.display(), head.trim());
    for f in files {
        match std::fs::metadata(&f) {
            Ok(m) => {
                let t = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                stamp.push_str(&format!("|{}:{}", m.len(), t.map_or(0, |t| t.as_nanos())));
            }
            Err(_) => stamp.push_str("|-"),
        }
    }
    Some(stamp.replace('\n', " "))
}

/// The identity as libgit2 reads the repository that contains `canonical`.
fn from_git(canonical: &Path) -> String {
    match git2::Repository::discover(canonical) {
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

    /// The cached identity is the identity, in every case of the table below, and is read
    /// again after what it was derived from changed.
    #[test]
    fn cached_identity_is_the_identity() {
        let t = tempfile::tempdir().unwrap();
        let cache = t.path().join("cache");
        let plain = t.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let root = t.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        git(&root, &["init", "-q"]);
        let check = |dir: &Path, what: &str| {
            let want = identity(dir);
            assert_eq!(identity_cached(dir, &cache), want, "{what}, first");
            assert_eq!(identity_cached(dir, &cache), want, "{what}, from the cache");
            want
        };
        assert!(check(&plain, "a plain folder").starts_with("path-"));
        assert!(check(&root, "a repository without commits").starts_with("gitdir-"));
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "first"]);
        let first = check(&root.join("src"), "after the first commit, a subfolder");
        assert!(first.starts_with("git-"));
        git(&root, &["remote", "add", "origin", "https://example.com/acme/tool.git"]);
        let with_origin = check(&root, "with an origin");
        assert_ne!(with_origin, first);
        git(&root, &["remote", "set-url", "origin", "https://example.com/fork/tool.git"]);
        assert_ne!(check(&root, "another origin"), with_origin);
        // Another history on another branch: another root commit.
        git(&root, &["checkout", "-q", "--orphan", "other"]);
        std::fs::write(root.join("b.txt"), "b").unwrap();
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "unrelated", "--date", "2001-01-01T00:00:00"]);
        check(&root, "an unrelated history checked out");
        let wt = t.path().join("wt");
        git(&root, &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "w"]);
        check(&wt, "a linked worktree (not kept)");
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
