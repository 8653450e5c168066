//! Fetching a skill source with git2: which URLs are accepted, the clone into a temporary
//! folder, and the resolution of a ref to one full commit.
//!
//! The clone is bare: skills are read straight from the commit's tree objects (see
//! `layout` and `store`), so nothing from the repository ever touches the disk as a working
//! tree, symlinks are seen as what they are (a blob of mode 120000) and never followed, and
//! `.git` cannot be copied by accident. Credentials are never prompted for: the credentials
//! callback offers the ssh agent or the platform default once, then fails.

use std::path::{Path, PathBuf};
use std::sync::Once;

use git2::build::RepoBuilder;
use git2::{AutotagOption, Cred, CredentialType, FetchOptions, Oid, RemoteCallbacks, Repository};

use super::git;
use super::Progress;
use crate::error::{Error, Result};

/// A fetched source: the bare repository (in a temporary folder removed on drop; none when
/// a local repository is read in place) and the commit its ref resolved to.
pub struct Fetched {
    pub repo: Repository,
    pub commit: Oid,
    _dir: Option<tempfile::TempDir>,
}

const SCHEMES: &[&str] = &["https", "http", "ssh", "git", "file"];

/// Normalises what a user typed as a source: URLs (https, http, ssh, git, file and scp-like
/// `user@host:path`) are kept as given without a trailing slash; a local path must be
/// absolute and is canonicalised when it exists, so that one repository is one source.
pub fn normalize(url: &str) -> Result<String> {
    let url = url.trim();
    if url.is_empty() {
        return Err(Error::invalid("url is empty; give a git URL (https, ssh, file://) or an absolute local path"));
    }
    if url.starts_with('-') {
        return Err(Error::invalid(format!("url {url:?} starts with '-', which could be read as an option; refused")));
    }
    if url.chars().any(char::is_control) {
        return Err(Error::invalid("url contains control characters; refused"));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        if !SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(Error::invalid(format!(
                "url scheme {scheme:?} is not supported; use https, http, ssh, git or file"
            )));
        }
        if rest.trim_matches('/').is_empty() {
            return Err(Error::invalid(format!("url {url:?} names no repository")));
        }
        return Ok(url.trim_end_matches('/').to_string());
    }
    let path = Path::new(url);
    if path.is_absolute() {
        let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        return Ok(canon.display().to_string());
    }
    // scp-like user@host:path (a colon before the first slash).
    if let Some(colon) = url.find(':') {
        let host = &url[..colon];
        let host_ok = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || "@._-".contains(c));
        if host_ok && url.find('/').is_none_or(|slash| colon < slash) && !url[colon..].starts_with("::") {
            return Ok(url.trim_end_matches('/').to_string());
        }
    }
    Err(Error::invalid(format!(
        "url {url:?} is neither a URL (https, ssh, file://) nor an absolute path; give the full path of a local repository"
    )))
}

/// The last segment of a source without `.git`: the name of a single-skill repository whose
/// SKILL.md names none.
pub fn basename(source: &str) -> String {
    let s = source.trim_end_matches('/');
    let last = s.rsplit(['/', ':']).next().unwrap_or(s);
    last.strip_suffix(".git").unwrap_or(last).to_string()
}

fn set_timeouts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: process-wide libgit2 options, set once before any clone.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(30_000);
            let _ = git2::opts::set_server_timeout_in_milliseconds(120_000);
        }
    });
}

/// Fetches `source` and resolves `rref` (branch, tag or commit; default HEAD) to a full
/// commit. Only one commit's tree is needed, so:
///
/// - a local repository (an absolute path or a `file://` URL naming a folder) is read in
///   place, through its object database only: copying its history would be most of the cost
///   of an install (libgit2's local clone copies every pack, and its local transport cannot
///   fetch shallow);
/// - a network URL is cloned bare with depth 1 (the branch tips, and the tags when a ref is
///   named), unless the ref looks like a commit id, which may lie deep in the history: then
///   the whole history is cloned.
pub fn fetch(source: &str, rref: Option<&str>, tmp_parent: &Path, progress: &dyn Fn(Progress)) -> Result<Fetched> {
    if let Some(path) = local_repo(source) {
        if let Ok(repo) = Repository::open_ext(&path, git2::RepositoryOpenFlags::NO_SEARCH, std::iter::empty::<&str>())
        {
            let commit = resolve_in(&repo, source, rref, false)?;
            return Ok(Fetched { repo, commit, _dir: None });
        }
    }
    let commit_like = rref.is_some_and(|r| (4..=40).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit()));
    let network =
        source.contains("://") && !source.starts_with("file://") || !source.contains("://") && !source.starts_with('/');
    clone(source, rref, tmp_parent, progress, network && !commit_like)
}

/// The folder of a local source (an absolute path, or a `file://` URL), when it exists.
fn local_repo(source: &str) -> Option<PathBuf> {
    let path = match source.strip_prefix("file://") {
        Some(rest) => PathBuf::from(rest),
        None => Some(PathBuf::from(source)).filter(|p| p.is_absolute())?,
    };
    path.is_dir().then_some(path)
}

fn clone(
    source: &str,
    rref: Option<&str>,
    tmp_parent: &Path,
    progress: &dyn Fn(Progress),
    shallow: bool,
) -> Result<Fetched> {
    set_timeouts();
    std::fs::create_dir_all(tmp_parent)?;
    let dir = tempfile::Builder::new().prefix("clone-").tempdir_in(tmp_parent)?;
    let mut callbacks = RemoteCallbacks::new();
    let mut attempts = 0;
    callbacks.credentials(move |_url, username, allowed| {
        attempts += 1;
        if attempts > 1 {
            return Err(git2::Error::from_str(
                "authentication failed, and skillmem never prompts for credentials; use an ssh agent, a public URL or a local clone",
            ));
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            if let Some(user) = username {
                return Cred::ssh_key_from_agent(user);
            }
        }
        if allowed.contains(CredentialType::DEFAULT) {
            return Cred::default();
        }
        Err(git2::Error::from_str(
            "the server asks for credentials, and skillmem never prompts for them; use an ssh agent, a public URL or a local clone",
        ))
    });
    let mut last = u32::MAX;
    callbacks.transfer_progress(move |stats| {
        let total = stats.total_objects().max(1);
        let pct = ((stats.received_objects() + stats.indexed_objects()) * 25 / total) as u32;
        if pct != last {
            last = pct;
            progress(Progress {
                message: format!("fetching objects {}/{}", stats.received_objects(), stats.total_objects()),
                percent: Some(pct.min(100)),
            });
        }
        true
    });
    let mut fo = FetchOptions::new();
    // Tags only matter when a ref is named (it may be one).
    let tags = if shallow && rref.is_none() { AutotagOption::None } else { AutotagOption::All };
    fo.remote_callbacks(callbacks).download_tags(tags);
    if shallow {
        fo.depth(1);
    }
    let repo = RepoBuilder::new()
        .bare(true)
        .fetch_options(fo)
        .clone(source, dir.path())
        .map_err(|e| Error::Git(format!("cannot clone {source}: {}", e.message())))?;
    let commit = resolve(&repo, source, rref)?;
    Ok(Fetched { repo, commit, _dir: Some(dir) })
}

/// Resolves a ref of a fresh clone to its commit: HEAD, a branch, a tag (annotated tags
/// peeled) or a commit id (full or abbreviated hex).
pub fn resolve(repo: &Repository, source: &str, rref: Option<&str>) -> Result<Oid> {
    resolve_in(repo, source, rref, true)
}

/// [`resolve`] in a clone (`cloned`: its branches are `refs/remotes/origin/*`) or in the
/// source repository itself (its own branches are `refs/heads/*`; its remote-tracking
/// branches are someone else's and are not looked at).
fn resolve_in(repo: &Repository, source: &str, rref: Option<&str>, cloned: bool) -> Result<Oid> {
    let Some(r) = rref.map(str::trim).filter(|r| !r.is_empty()) else {
        let head = repo.head().map_err(|e| {
            Error::Git(format!("{source} has no commit at HEAD (an empty repository?): {}", e.message()))
        })?;
        return Ok(head.peel_to_commit().map_err(git)?.id());
    };
    if r.starts_with('-') || r.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(Error::invalid(format!("ref {r:?} is not a branch, tag or commit name")));
    }
    let mut names = vec![];
    if r.starts_with("refs/") {
        names.push(r.to_string());
    }
    let prefixes: &[&str] =
        if cloned { &["refs/remotes/origin/", "refs/heads/", "refs/tags/"] } else { &["refs/heads/", "refs/tags/"] };
    for prefix in prefixes {
        names.push(format!("{prefix}{r}"));
    }
    for name in &names {
        if let Ok(reference) = repo.find_reference(name) {
            let commit = reference
                .peel_to_commit()
                .map_err(|e| Error::Git(format!("ref {r:?} of {source} is not a commit: {}", e.message())))?;
            return Ok(commit.id());
        }
    }
    if (4..=40).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit()) {
        if let Ok(obj) = repo.revparse_single(r) {
            if let Ok(commit) = obj.peel_to_commit() {
                return Ok(commit.id());
            }
        }
    }
    Err(Error::Git(format!("{source} has no branch, tag or commit named {r:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        let cases: &[(&str, Option<&str>)] = &[
            ("https://github.com/a/b.git", Some("https://github.com/a/b.git")),
            ("https://github.com/a/b/", Some("https://github.com/a/b")),
            ("file:///tmp/x", Some("file:///tmp/x")),
            ("ssh://git@host/x", Some("ssh://git@host/x")),
            ("git@github.com:a/b.git", Some("git@github.com:a/b.git")),
            ("-uhttps://x", None),
            ("--upload-pack=touch /tmp/x", None),
            ("", None),
            ("ext::sh -c touch", None),
            ("ftp://host/x", None),
            ("relative/path", None),
            ("https://", None),
            ("https://a/b\nc", None),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).ok().as_deref(), *want, "{input:?}");
        }
        assert_eq!(basename("https://github.com/a/pdf-tools.git"), "pdf-tools");
        assert_eq!(basename("/srv/skills/jq/"), "jq");
        assert_eq!(basename("git@host:jq.git"), "jq");
    }
}
