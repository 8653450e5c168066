//! Part of rule 7 (task-bound): places of one machine or one deployment: a home folder, a
//! workspace path, a bucket, a file of one source tree, a host named for an environment or
//! numbered in a fleet.
//!
//! Must not take a place that is the same everywhere for one of this task: a system path
//! ([`SYSTEM_PATHS`]), a dotfile under `~/`, an API's URL path, a file name that looks like a
//! host (`compose.yaml`), `path/to/…`.

/// Path prefixes that are the same on every machine (not a workspace, not a home folder).
const SYSTEM_PATHS: &[&str] = &[
    "/etc/",
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/dev/",
    "/proc/",
    "/sys/",
    "/var/log/",
    "/var/run/",
    "/var/lib/",
    "/run/",
    "/opt/homebrew/",
];

/// A home, workspace or storage location, or a path into a source tree.
pub(super) fn path_like(t: &str) -> Option<String> {
    let lt = t.to_ascii_lowercase();
    for (p, what) in [("s3://", "a bucket"), ("gs://", "a bucket"), ("az://", "a bucket")] {
        if let Some(i) = lt.find(p) {
            return Some(format!("{what} ({})", &t[i..]));
        }
    }
    if lt.contains("/home/") || lt.contains("/users/") || lt.contains("c:\\users\\") || lt.starts_with("/root/") {
        return Some(format!("a home folder ({t})"));
    }
    if let Some(rest) = t.strip_prefix("~/") {
        // `~/.aws/credentials` is where that file lives for everyone; `~/Downloads/x` is one person's.
        if !rest.starts_with('.') && !rest.is_empty() {
            return Some(format!("a home folder ({t})"));
        }
    }
    if let Some(what) = deployment_host(t) {
        return Some(what);
    }
    if t.contains("://") {
        return None;
    }
    if t.starts_with('/') && !SYSTEM_PATHS.iter().any(|p| t.starts_with(p)) && !api_path(t) {
        let segs = t.split('/').filter(|s| !s.is_empty()).count();
        if segs >= 3 {
            return Some(format!("a path on this machine ({t})"));
        }
    }
    // `src/billing/invoice.py`: a file of one source tree (not `.github/...`, not `path/to/...`).
    let segs: Vec<&str> = t.split('/').collect();
    if segs.len() >= 3 && !t.starts_with(['/', '.', '~', '$', '<']) && !lt.starts_with("path/to") {
        let last = segs.last().copied().unwrap_or("");
        let file = last.split("::").next().unwrap_or(last);
        let ext = file.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let code = [
            "py", "rs", "ts", "tsx", "js", "jsx", "go", "java", "rb", "php", "cs", "kt", "swift", "c", "cc", "cpp",
            "h", "tf", "sql", "json", "yaml", "yml", "toml", "pdf", "csv", "md", "txt",
        ];
        if code.contains(&ext) && segs.iter().all(|s| !s.is_empty()) {
            return Some(format!("a file of this project ({t})"));
        }
    }
    None
}

/// A URL path of an API, not a place on a disk: its first segment is `api`/`apis`/`graphql`
/// or some segment is a version (`v1`, `v2beta1`), as in `/api/v1/namespaces/default/pods`
/// or `/v2/repos/ORG/tags`. (An id in it is still found by the id rule.)
fn api_path(t: &str) -> bool {
    let segs: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
    let version =
        |s: &str| s.strip_prefix('v').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.len() <= 8);
    segs.first().is_some_and(|f| ["api", "apis", "graphql", "rest"].contains(f)) || segs.iter().any(|s| version(s))
}

/// A host of one deployment: a dotted name (in a URL or alone) with a label that says which
/// environment it is (`prod`, `staging`, `internal`…) or that numbers an instance (`db-3`).
fn deployment_host(t: &str) -> Option<String> {
    let lt = t.to_ascii_lowercase();
    let host = match lt.split_once("://") {
        Some((_, rest)) => rest.rsplit_once('@').map(|(_, h)| h).unwrap_or(rest),
        None => lt.as_str(),
    };
    let host = host.split(['/', ':', '?', '#']).next().unwrap_or("");
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2
        || labels.iter().any(|l| l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return None;
    }
    // A file name (`export.json`, `compose.yaml`) is not a host: the last label is a TLD-like word.
    let tld = labels[labels.len() - 1];
    if !tld.chars().all(|c| c.is_ascii_lowercase())
        || [
            "json", "yaml", "yml", "toml", "md", "txt", "py", "rs", "ts", "js", "sh", "sql", "csv", "pdf", "zip",
            "tar", "gz", "lock", "conf", "cfg", "ini", "log", "xml", "html", "env", "mp4", "mov", "mp3",
        ]
        .contains(&tld)
    {
        return None;
    }
    const ENV: &[&str] =
        &["prod", "production", "staging", "stage", "internal", "intranet", "corp", "lan", "local", "dev", "qa", "uat"];
    let env = labels.iter().any(|l| l.split('-').any(|p| ENV.contains(&p)));
    let numbered = labels[..labels.len() - 1].iter().any(|l| {
        l.rsplit('-').next().is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) && l.contains('-')
    });
    (env || numbered).then(|| format!("a host of one deployment ({host})"))
}
