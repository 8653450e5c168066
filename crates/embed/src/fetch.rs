//! `skillmem model fetch`: downloads a sentence-embedding model into the Hugging Face cache.
//!
//! The layout is the hub client's (`huggingface_hub`), so that a model fetched by either is
//! found by both: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`, holds
//! `models--{org}--{name}/` with `blobs/{etag}` (the files), `snapshots/{commit}/{file}`
//! (links to the blobs) and `refs/{revision}` (the commit). Files come from
//! `{endpoint}/{repo}/resolve/{revision}/{file}`, the endpoint being `$HF_ENDPOINT` (a mirror)
//! or `https://huggingface.co`. Each file is asked for its commit, ETag and size first (a HEAD
//! that does not follow the redirect large files get), then downloaded and verified: the
//! SHA-256 a large file's ETag names, or the git blob SHA-1 of a small one, and the size.
//!
//! Downloading is a command a person runs: the sidecar never downloads (a configured model
//! that is missing is replaced by the static embedder, and the log says to run this).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use skillmem_error::{Error, Result};

/// The model fetched when no name is given.
pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The files a model folder needs (see [`super::model`]).
pub const FILES: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];
/// The hub, when `HF_ENDPOINT` is unset.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The hub cache folder: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
pub fn hub_cache() -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(c) = var("HF_HUB_CACHE") {
        return c;
    }
    if let Some(h) = var("HF_HOME") {
        return h.join("hub");
    }
    let cache =
        var("XDG_CACHE_HOME").or_else(|| dirs::home_dir().map(|h| h.join(".cache"))).unwrap_or_else(std::env::temp_dir);
    cache.join("huggingface").join("hub")
}

/// The hub endpoint: `$HF_ENDPOINT` without a trailing slash, else [`DEFAULT_ENDPOINT`].
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim().trim_end_matches('/').to_string())
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
}

/// The cache folder of model `repo` (`org/name`).
pub fn repo_dir(cache: &Path, repo: &str) -> PathBuf {
    cache.join(format!("models--{}", repo.replace('/', "--")))
}

/// Checks a model name: `org/name`, or `name` alone; letters, digits, `-`, `_`, `.`.
pub fn check_name(repo: &str) -> Result<()> {
    let ok_part = |p: &str| {
        !p.is_empty() && p != "." && p != ".." && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.len() > 2 || !parts.iter().all(|p| ok_part(p)) {
        return Err(Error::invalid(format!("model name {repo:?}: give org/name as on the hub, e.g. {DEFAULT_MODEL}")));
    }
    Ok(())
}

/// The snapshot of `repo` at `revision` in the cache, when every file of [`FILES`] is there.
pub fn cached(cache: &Path, repo: &str, revision: &str) -> Option<PathBuf> {
    let dir = repo_dir(cache, repo);
    let commit = if is_commit(revision) {
        revision.to_string()
    } else {
        std::fs::read_to_string(dir.join("refs").join(revision)).ok()?.trim().to_string()
    };
    let snap = dir.join("snapshots").join(commit);
    FILES.iter().all(|f| snap.join(f).is_file()).then_some(snap)
}

/// True when `path` is a model folder with every file of [`FILES`].
pub fn is_model_folder(path: &Path) -> bool {
    FILES.iter().all(|f| path.join(f).is_file())
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// One file of a fetch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FetchedFile {
    pub file: String,
    pub bytes: u64,
    /// False when the cache already held it (verified again).
    pub downloaded: bool,
}

/// What a fetch did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fetched {
    pub repo: String,
    pub commit: String,
    /// The snapshot folder: the `embedding.path` to configure.
    pub path: PathBuf,
    pub files: Vec<FetchedFile>,
}

/// What the hub says about one file before it is downloaded.
struct Head {
    commit: String,
    etag: String,
    size: Option<u64>,
}

fn agent(follow: bool) -> ureq::Agent {
    let cfg = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .user_agent(concat!("skillmem/", env!("CARGO_PKG_VERSION")));
    let cfg = if follow { cfg.max_redirects(10) } else { cfg.max_redirects(0).max_redirects_will_error(false) };
    cfg.build().into()
}

fn header<B>(resp: &ureq::http::Response<B>, name: &str) -> Option<String> {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn clean_etag(e: &str) -> String {
    e.trim().trim_start_matches("W/").trim_matches('"').to_string()
}

fn https_hint(url: &str, e: impl std::fmt::Display) -> Error {
    let hint = if url.starts_with("https:") && !cfg!(feature = "http-tls") {
        " (this build has no TLS: rebuild with --features http-tls or local-model, or set HF_ENDPOINT to an http:// mirror)"
    } else {
        ""
    };
    Error::Storage(format!("cannot reach {url}: {e}{hint}"))
}

fn head(url: &str) -> Result<Head> {
    let resp = agent(false).head(url).call().map_err(|e| https_hint(url, e))?;
    let status = resp.status().as_u16();
    if !(200..400).contains(&status) {
        let why = match status {
            401 | 403 => "the model is gated or private (this command sends no token)",
            404 => "no such model, revision or file",
            _ => "the hub refused",
        };
        return Err(Error::Storage(format!("{url}: HTTP {status}: {why}")));
    }
    let commit = header(&resp, "x-repo-commit").ok_or_else(|| {
        Error::Storage(format!(
            "{url}: the answer has no X-Repo-Commit header; is HF_ENDPOINT a Hugging Face hub or mirror?"
        ))
    })?;
    let etag = header(&resp, "x-linked-etag")
        .or_else(|| header(&resp, "etag"))
        .map(|e| clean_etag(&e))
        .filter(|e| !e.is_empty())
        .ok_or_else(|| Error::Storage(format!("{url}: the answer has no ETag to verify the file by")))?;
    if !etag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(Error::Storage(format!("{url}: unexpected ETag {etag:?}")));
    }
    let size = header(&resp, "x-linked-size").or_else(|| header(&resp, "content-length")).and_then(|s| s.parse().ok());
    Ok(Head { commit, etag, size })
}

/// Checks the bytes of `path` against an ETag (a SHA-256 for large files, the git blob SHA-1
/// for small ones; other ETags check the size only) and a size. Returns the size.
fn verify(path: &Path, etag: &str, size: Option<u64>) -> std::result::Result<u64, String> {
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if let Some(s) = size.filter(|s| *s != len) {
        return Err(format!("{len} bytes, the hub announced {s}"));
    }
    let mut sha256 = Sha256::new();
    let mut sha1 = <sha1::Sha1 as sha1::Digest>::new();
    sha1::Digest::update(&mut sha1, format!("blob {len}\0").as_bytes());
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        sha256.update(&buf[..n]);
        sha1::Digest::update(&mut sha1, &buf[..n]);
    }
    let got = match etag.len() {
        64 => Some(sha256.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>()),
        40 => Some(sha1::Digest::finalize(sha1).iter().map(|b| format!("{b:02x}")).collect::<String>()),
        _ => None,
    };
    match got {
        Some(g) if !g.eq_ignore_ascii_case(etag) => Err(format!("its hash is {g}, the hub's ETag says {etag}")),
        _ => Ok(len),
    }
}

/// Downloads `repo` at `revision` into `cache` (files already there are verified, not
/// downloaded again), calling `progress(file, bytes so far, size)` as bytes arrive.
pub fn fetch(
    cache: &Path,
    endpoint: &str,
    repo: &str,
    revision: &str,
    progress: &mut dyn FnMut(&str, u64, Option<u64>),
) -> Result<Fetched> {
    check_name(repo)?;
    if revision.is_empty() || revision.contains("..") || revision.starts_with('/') {
        return Err(Error::invalid(format!("revision {revision:?}: give a branch, tag or commit")));
    }
    let dir = repo_dir(cache, repo);
    let blobs = dir.join("blobs");
    let io = |p: &Path, e: std::io::Error| Error::Storage(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(&blobs).map_err(|e| io(&blobs, e))?;
    let mut commit: Option<String> = None;
    let mut files = vec![];
    let mut placed = vec![];
    for file in FILES {
        let url = format!("{endpoint}/{repo}/resolve/{revision}/{file}");
        let h = head(&url)?;
        if let Some(c) = &commit {
            if *c != h.commit {
                return Err(Error::Storage(format!(
                    "{repo} moved from commit {c} to {} during the download; run the command again",
                    h.commit
                )));
            }
        }
        commit = Some(h.commit.clone());
        let blob = blobs.join(&h.etag);
        let mut downloaded = false;
        let bytes = match blob.is_file().then(|| verify(&blob, &h.etag, h.size)) {
            Some(Ok(n)) => n,
            _ => {
                let part = blobs.join(format!("{}.incomplete", h.etag));
                // Pin the commit the HEAD named, so that every file comes from one snapshot.
                let get_url = format!("{endpoint}/{repo}/resolve/{}/{file}", h.commit);
                let resp = agent(true).get(&get_url).call().map_err(|e| https_hint(&get_url, e))?;
                let status = resp.status().as_u16();
                if status != 200 {
                    return Err(Error::Storage(format!("{get_url}: HTTP {status}")));
                }
                let mut body = resp.into_body().into_reader();
                let mut out = std::fs::File::create(&part).map_err(|e| io(&part, e))?;
                let mut buf = vec![0u8; 1 << 16];
                let mut got = 0u64;
                loop {
                    let n = body.read(&mut buf).map_err(|e| Error::Storage(format!("{get_url}: {e}")))?;
                    if n == 0 {
                        break;
                    }
                    out.write_all(&buf[..n]).map_err(|e| io(&part, e))?;
                    got += n as u64;
                    progress(file, got, h.size);
                }
                out.sync_all().map_err(|e| io(&part, e))?;
                drop(out);
                let n = verify(&part, &h.etag, h.size).map_err(|why| {
                    let _ = std::fs::remove_file(&part);
                    Error::Storage(format!("{file} of {repo} failed verification: {why}; nothing was kept"))
                })?;
                std::fs::rename(&part, &blob).map_err(|e| io(&blob, e))?;
                downloaded = true;
                n
            }
        };
        files.push(FetchedFile { file: file.to_string(), bytes, downloaded });
        placed.push((file, h.etag));
    }
    let commit = commit.unwrap_or_default();
    let snap = dir.join("snapshots").join(&commit);
    std::fs::create_dir_all(&snap).map_err(|e| io(&snap, e))?;
    for (file, etag) in placed {
        let link = snap.join(file);
        let _ = std::fs::remove_file(&link);
        #[cfg(unix)]
        std::os::unix::fs::symlink(Path::new("../../blobs").join(&etag), &link).map_err(|e| io(&link, e))?;
        #[cfg(not(unix))]
        std::fs::copy(blobs.join(&etag), &link).map_err(|e| io(&link, e))?;
    }
    if !is_commit(revision) {
        let refs = dir.join("refs");
        std::fs::create_dir_all(&refs).map_err(|e| io(&refs, e))?;
        let r = refs.join(revision);
        if let Some(p) = r.parent() {
            std::fs::create_dir_all(p).map_err(|e| io(p, e))?;
        }
        std::fs::write(&r, &commit).map_err(|e| io(&r, e))?;
    }
    let cfg = std::fs::read(snap.join("config.json")).map_err(|e| io(&snap, e))?;
    let cfg: serde_json::Value =
        serde_json::from_slice(&cfg).map_err(|e| Error::Storage(format!("{repo}: config.json is not JSON: {e}")))?;
    if cfg.get("hidden_size").and_then(serde_json::Value::as_u64).is_none() {
        return Err(Error::Storage(format!(
            "{repo}: config.json has no hidden_size; the model embedder runs BERT-family models"
        )));
    }
    Ok(Fetched { repo: repo.to_string(), commit, path: snap, files })
}

/// The configuration lines that select the model of folder `path`.
pub fn config_line(path: &Path) -> String {
    let p = path.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
    format!("[embedding]\nprovider = \"model\"\npath = \"{p}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_etags() {
        for ok in ["sentence-transformers/all-MiniLM-L6-v2", "bert-base-uncased", "a_b/c.d"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a/b/c", "../x", "a/..", "a b", "a/"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert_eq!(clean_etag("W/\"abc\""), "abc");
        assert_eq!(repo_dir(Path::new("/c"), "o/n"), PathBuf::from("/c/models--o--n"));
        assert_eq!(config_line(Path::new("/x/y")), "[embedding]\nprovider = \"model\"\npath = \"/x/y\"");
    }

    #[test]
    fn verifies_sha256_and_git_blob_sha1() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"hello\n").unwrap();
        // `git hash-object` of "hello\n", and its SHA-256.
        assert_eq!(verify(&p, "ce013625030ba8dba906f756967f9e9ca394464a", Some(6)), Ok(6));
        assert_eq!(verify(&p, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", None), Ok(6));
        assert!(verify(&p, "ce013625030ba8dba906f756967f9e9ca394464b", None).is_err());
        assert!(verify(&p, "ce013625030ba8dba906f756967f9e9ca394464a", Some(7)).is_err());
    }
}
