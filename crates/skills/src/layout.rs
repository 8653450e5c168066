//! Which folders of a commit are skills.
//!
//! Discovery, in this order:
//!
//! 1. **A plugin marketplace.** When `.claude-plugin/marketplace.json` lists plugins whose
//!    `source` is a path inside the repository (`./plugins/x`; a bare `x` is taken under
//!    `metadata.pluginRoot`), each such plugin contributes the folders of
//!    `<source>/skills/*/SKILL.md`, and the folders its `skills` field names (in its
//!    marketplace entry or its own `.claude-plugin/plugin.json`): a folder holding a SKILL.md,
//!    or a folder of such folders. Sources elsewhere (a URL, another repository) are passed
//!    over. A folder two plugins claim belongs to the one whose `skills` field names it, else
//!    to the more specific one (the longer source).
//! 2. **A bundle**, `skills/*/SKILL.md` exactly one level deep, is added to what a
//!    marketplace found (one folder once).
//! 3. **Anywhere.** When neither found a skill, every folder holding a SKILL.md is one, at any
//!    depth (the root SKILL.md of a single-skill repository included). Not looked in:
//!    `node_modules`, vendored folders, test and fixture folders ([`SKIPPED`]), and the
//!    folders of a skill (a SKILL.md below another skill's is part of that skill). Folders
//!    whose name starts with `.` (`.claude/skills`, `.openclaw/skills`: copies for other
//!    tools) are looked in only when nothing was found outside them.
//!
//! So a bundle wins over a root `SKILL.md` and over duplicate trees elsewhere (e.g.
//! `.openclaw/skills/*`), as before. A SKILL.md must be a regular file: a symlink is never
//! followed, so a folder whose SKILL.md is a symlink is not a skill.
//!
//! With `under` (`--path`), only skills in that folder count: the marketplace's skills there,
//! and the same rules (bundle, else anywhere) run from that folder.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use git2::{ObjectType, Oid, Repository, Tree, TreeEntry};

use super::git;
use crate::error::{Error, Result};

/// Mode of a regular file in a git tree.
pub const MODE_FILE: i32 = 0o100644;
/// Mode of an executable file in a git tree.
pub const MODE_EXEC: i32 = 0o100755;
/// Mode of a symlink in a git tree.
pub const MODE_LINK: i32 = 0o120000;

/// The marketplace file of a Claude Code plugin marketplace.
pub const MARKETPLACE: &str = ".claude-plugin/marketplace.json";

/// Folder names never looked in for skills at any depth (dependencies, vendored code, tests
/// and their fixtures), compared without case.
pub const SKIPPED: &[&str] = &[
    "node_modules",
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "test",
    "tests",
    "__tests__",
    "testdata",
    "test-data",
    "test_data",
    "fixtures",
    "__fixtures__",
    "test-fixtures",
    "test_fixtures",
];

/// Limits of discovery itself, so that a hostile tree cannot keep an install walking.
#[derive(Debug, Clone, Copy)]
pub struct ScanCaps {
    /// Folders looked at, in all.
    pub max_folders: usize,
    /// How deep below the root (or `under`) a skill folder may lie.
    pub max_depth: usize,
    /// The size of `marketplace.json` or a `plugin.json`.
    pub max_manifest_bytes: usize,
}

/// The limits every install applies.
pub const SCAN_CAPS: ScanCaps = ScanCaps { max_folders: 100_000, max_depth: 16, max_manifest_bytes: 4 * 1024 * 1024 };

/// One skill folder found in a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The folder's name (the skill's name); `None` for a SKILL.md at the repository root.
    pub folder: Option<String>,
    /// The folder's path in the repository (`skills/pdf`, or `` for the root).
    pub subpath: String,
    /// The folder's tree.
    pub tree: Oid,
    /// The marketplace plugin whose skill it is.
    pub plugin: Option<String>,
}

fn is_regular(e: &TreeEntry<'_>) -> bool {
    e.kind() == Some(ObjectType::Blob) && (e.filemode() == MODE_FILE || e.filemode() == MODE_EXEC)
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else if name.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

fn candidate(subpath: String, tree: Oid, plugin: Option<String>) -> Candidate {
    let folder = (!subpath.is_empty()).then(|| subpath.rsplit('/').next().unwrap_or(&subpath).to_string());
    Candidate { folder, subpath, tree, plugin }
}

/// A relative path of a manifest as a clean path inside the repository (`./a/../b` is
/// refused, `./` is the root); `None` when it leaves the repository.
pub fn clean_path(p: &str) -> Option<String> {
    let p = p.trim();
    if p.starts_with('/') || p.contains('\\') || p.contains('\0') {
        return None;
    }
    let mut parts = vec![];
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// The tree at `path` (`` is `root`), when it is a folder.
fn subtree<'r>(repo: &'r Repository, root: &Tree<'r>, path: &str) -> Result<Option<Tree<'r>>> {
    if path.is_empty() {
        return Ok(Some(root.clone()));
    }
    match root.get_path(Path::new(path)) {
        Ok(e) if e.kind() == Some(ObjectType::Tree) => Ok(Some(repo.find_tree(e.id()).map_err(git)?)),
        _ => Ok(None),
    }
}

/// Whether `tree` is a skill folder: `Some(true)` with a regular SKILL.md, `Some(false)` with
/// a SKILL.md that is not a regular file (a warning), `None` without.
fn skill_md(tree: &Tree<'_>) -> Option<bool> {
    tree.get_name("SKILL.md").map(|md| is_regular(&md))
}

fn not_regular(subpath: &str) -> String {
    if subpath.is_empty() {
        "the root SKILL.md is not a regular file (a symlink?); it is not installed".into()
    } else {
        format!("{subpath}/SKILL.md is not a regular file (a symlink?); that folder is not installed")
    }
}

/// The skill folders one level inside `dir` (`dir/*/SKILL.md`), sorted by name.
fn children(
    repo: &Repository,
    tree: &Tree<'_>,
    dir: &str,
    plugin: Option<&str>,
    out: &mut Vec<Candidate>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    for entry in tree.iter() {
        let Some(name) = entry.name() else { continue };
        if entry.kind() != Some(ObjectType::Tree) {
            continue;
        }
        let sub = repo.find_tree(entry.id()).map_err(git)?;
        let subpath = join(dir, name);
        match skill_md(&sub) {
            Some(true) => out.push(candidate(subpath, entry.id(), plugin.map(str::to_string))),
            Some(false) => warnings.push(not_regular(&subpath)),
            None => {}
        }
    }
    Ok(())
}

/// A JSON manifest of the commit (`marketplace.json`, `plugin.json`), when present and valid.
fn manifest(
    repo: &Repository,
    root: &Tree<'_>,
    path: &str,
    caps: ScanCaps,
    warnings: &mut Vec<String>,
) -> Result<Option<serde_json::Value>> {
    let Ok(entry) = root.get_path(Path::new(path)) else { return Ok(None) };
    if !is_regular(&entry) {
        return Ok(None);
    }
    let blob = repo.find_blob(entry.id()).map_err(git)?;
    if blob.size() > caps.max_manifest_bytes {
        warnings.push(format!("{path} is over {} MB; not read", caps.max_manifest_bytes / (1024 * 1024)));
        return Ok(None);
    }
    match serde_json::from_slice(blob.content()) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            warnings.push(format!("{path} is not valid JSON ({e}); not read"));
            Ok(None)
        }
    }
}

/// A manifest's `skills` field: one path or a list of paths.
fn skill_paths(v: Option<&serde_json::Value>) -> Vec<String> {
    match v {
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
        _ => vec![],
    }
}

/// The skills of the marketplace's plugins whose source lies inside the repository.
fn marketplace(
    repo: &Repository,
    root: &Tree<'_>,
    caps: ScanCaps,
    warnings: &mut Vec<String>,
) -> Result<Vec<Candidate>> {
    let Some(m) = manifest(repo, root, MARKETPLACE, caps, warnings)? else { return Ok(vec![]) };
    let plugin_root = m.pointer("/metadata/pluginRoot").and_then(|v| v.as_str()).and_then(clean_path);
    let Some(plugins) = m.get("plugins").and_then(|p| p.as_array()) else { return Ok(vec![]) };
    // subpath -> (how strongly the plugin claims it, the candidate): a folder a plugin's
    // `skills` field names beats one found in a plugin's skills/ folder (two plugins of one
    // source "./" share skills/), then the deeper plugin folder wins.
    let mut found: BTreeMap<String, ((bool, usize), Candidate)> = BTreeMap::new();
    for p in plugins {
        let Some(name) = p.get("name").and_then(|n| n.as_str()) else { continue };
        // A path source is a string; `{"source": "github" | "url" | "git-subdir", ...}` lies elsewhere.
        let Some(source) = p.get("source").and_then(|s| s.as_str()) else { continue };
        let relative = source.trim();
        let dir = match (&plugin_root, relative.starts_with("./") || relative == ".") {
            (Some(r), false) => clean_path(&join(r, relative)),
            _ => clean_path(relative),
        };
        let Some(dir) = dir else {
            warnings.push(format!("plugin {name:?}: source {source:?} leaves the repository; passed over"));
            continue;
        };
        let Some(tree) = subtree(repo, root, &dir)? else {
            warnings.push(format!("plugin {name:?}: source {source:?} is not a folder of the repository; passed over"));
            continue;
        };
        let mut default = vec![];
        if let Some(skills) = subtree(repo, &tree, "skills")? {
            children(repo, &skills, &join(&dir, "skills"), Some(name), &mut default, warnings)?;
        }
        let mut got = vec![];
        let own = manifest(repo, root, &join(&dir, ".claude-plugin/plugin.json"), caps, warnings)?;
        let mut paths = skill_paths(p.get("skills"));
        paths.extend(skill_paths(own.as_ref().and_then(|o| o.get("skills"))));
        for path in paths {
            let Some(rel) = clean_path(&path) else {
                warnings.push(format!("plugin {name:?}: skills path {path:?} leaves the repository; passed over"));
                continue;
            };
            let at = join(&dir, &rel);
            let Some(t) = subtree(repo, root, &at)? else { continue };
            match skill_md(&t) {
                Some(true) => got.push(candidate(at, t.id(), Some(name.to_string()))),
                Some(false) => warnings.push(not_regular(&at)),
                None => children(repo, &t, &at, Some(name), &mut got, warnings)?,
            }
        }
        let depth = if dir.is_empty() { 0 } else { dir.split('/').count() };
        let claims =
            got.into_iter().map(|c| ((true, depth), c)).chain(default.into_iter().map(|c| ((false, depth), c)));
        for (claim, c) in claims {
            match found.get(&c.subpath) {
                Some((held, _)) if *held >= claim => {}
                _ => {
                    found.insert(c.subpath.clone(), (claim, c));
                }
            }
        }
    }
    Ok(found.into_values().map(|(_, c)| c).collect())
}

/// Walks `tree` for skill folders at any depth (see the module's doc).
struct Scan<'a> {
    repo: &'a Repository,
    caps: ScanCaps,
    folders: usize,
    too_deep: bool,
}

impl Scan<'_> {
    /// Looks in `tree` (at `path`, `depth` below the scan's start). With `hidden` false,
    /// folders whose name starts with `.` are not entered but noted in `later`.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        tree: &Tree<'_>,
        path: &str,
        depth: usize,
        hidden: bool,
        out: &mut Vec<Candidate>,
        later: &mut Vec<(String, Oid, usize)>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        self.folders += 1;
        if self.folders > self.caps.max_folders {
            return Err(Error::InvalidSkillRepo(format!(
                "the repository has more than {} folders to look through for skills; refused (choose a folder with --path)",
                self.caps.max_folders
            )));
        }
        match skill_md(tree) {
            Some(true) => {
                out.push(candidate(path.to_string(), tree.id(), None));
                return Ok(()); // a SKILL.md below is part of this skill
            }
            Some(false) => {
                warnings.push(not_regular(path));
                return Ok(());
            }
            None => {}
        }
        if depth >= self.caps.max_depth {
            self.too_deep = true;
            return Ok(());
        }
        for entry in tree.iter() {
            let Some(name) = entry.name() else { continue };
            if entry.kind() != Some(ObjectType::Tree) || name.eq_ignore_ascii_case(".git") {
                continue;
            }
            if SKIPPED.iter().any(|s| s.eq_ignore_ascii_case(name)) {
                continue;
            }
            let sub = join(path, name);
            if !hidden && name.starts_with('.') {
                later.push((sub, entry.id(), depth + 1));
                continue;
            }
            let t = self.repo.find_tree(entry.id()).map_err(git)?;
            self.walk(&t, &sub, depth + 1, hidden, out, later, warnings)?;
        }
        Ok(())
    }
}

/// Every skill folder at any depth of `tree` (at `path`), outside hidden folders unless
/// nothing is found outside them.
fn anywhere(
    repo: &Repository,
    tree: &Tree<'_>,
    path: &str,
    caps: ScanCaps,
    warnings: &mut Vec<String>,
) -> Result<Vec<Candidate>> {
    let mut scan = Scan { repo, caps, folders: 0, too_deep: false };
    let (mut out, mut later) = (vec![], vec![]);
    scan.walk(tree, path, 0, false, &mut out, &mut later, warnings)?;
    if out.is_empty() {
        for (sub, id, depth) in later {
            let t = repo.find_tree(id).map_err(git)?;
            scan.walk(&t, &sub, depth, true, &mut out, &mut vec![], warnings)?;
        }
    }
    if scan.too_deep {
        warnings.push(format!("folders deeper than {} levels were not looked in for skills", caps.max_depth));
    }
    Ok(out)
}

/// Finds the skill folders of `root` (or of its folder `under`). Returns them sorted by
/// subpath, and the warnings about what was passed over.
pub fn detect(repo: &Repository, root: &Tree<'_>, under: Option<&str>) -> Result<(Vec<Candidate>, Vec<String>)> {
    detect_with(repo, root, under, SCAN_CAPS)
}

/// [`detect`] within `caps`.
pub fn detect_with(
    repo: &Repository,
    root: &Tree<'_>,
    under: Option<&str>,
    caps: ScanCaps,
) -> Result<(Vec<Candidate>, Vec<String>)> {
    let mut warnings = vec![];
    let under = match under.map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => Some(clean_path(u).ok_or_else(|| {
            Error::invalid(format!("path {u:?} must be a folder inside the repository (relative, without ..)"))
        })?),
        None => None,
    }
    .filter(|u| !u.is_empty());
    let start = under.as_deref().unwrap_or("");
    let Some(tree) = subtree(repo, root, start)? else {
        return Err(Error::invalid(format!("path {start:?} is not a folder of the repository at this commit")));
    };
    let inside = |c: &Candidate| start.is_empty() || c.subpath == start || c.subpath.starts_with(&format!("{start}/"));
    let mut found: Vec<Candidate> = marketplace(repo, root, caps, &mut warnings)?.into_iter().filter(inside).collect();
    let mut bundle = vec![];
    if let Some(skills) = subtree(repo, &tree, "skills")? {
        children(repo, &skills, &join(start, "skills"), None, &mut bundle, &mut warnings)?;
    }
    let mut seen: HashSet<String> = found.iter().map(|c| c.subpath.clone()).collect();
    found.extend(bundle.into_iter().filter(|c| seen.insert(c.subpath.clone())));
    if found.is_empty() {
        found = anywhere(repo, &tree, start, caps, &mut warnings)?;
    }
    if found.is_empty() {
        let at = under.as_deref().map(|u| format!(" under {u}")).unwrap_or_default();
        let more = if warnings.is_empty() { String::new() } else { format!("; {}", warnings.join("; ")) };
        return Err(Error::InvalidSkillRepo(format!(
            "no skill layout{at}: no folder holds a SKILL.md (looked for the plugins of {MARKETPLACE}, skills/<name>/SKILL.md, a SKILL.md at the root and SKILL.md folders at any depth outside node_modules, vendored and test folders){more}"
        )));
    }
    found.sort_by(|a, b| a.subpath.cmp(&b.subpath));
    Ok((found, warnings))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A repository with `files` (path, content; `@target` makes a symlink, `!body` an
    /// executable) and the
    /// tree of its index.
    pub(crate) fn repo_with(dir: &Path, files: &[(&str, &str)]) -> (Repository, git2::Oid) {
        let repo = Repository::init(dir).unwrap();
        for (path, content) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if let Some(target) = content.strip_prefix('@') {
                std::os::unix::fs::symlink(target, &p).unwrap();
            } else if let Some(body) = content.strip_prefix('!') {
                use std::os::unix::fs::PermissionsExt;
                std::fs::write(&p, body).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            } else {
                std::fs::write(&p, content).unwrap();
            }
        }
        let mut index = repo.index().unwrap();
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
        let tree = index.write_tree().unwrap();
        (repo, tree)
    }

    const MARKET: &str = r#"{"name": "m", "metadata": {"pluginRoot": "./plugins"}, "plugins": [
        {"name": "alpha", "source": "./plugins/alpha"},
        {"name": "beta", "source": "beta", "skills": ["./extra/one", "./more"]},
        {"name": "outer", "source": "./nest"},
        {"name": "inner", "source": "./nest/inner"},
        {"name": "remote", "source": {"source": "github", "repo": "o/r"}},
        {"name": "escape", "source": "../elsewhere"},
        {"name": "missing", "source": "./plugins/none"}]}"#;

    #[test]
    fn layouts() {
        let md = "---\nname: x\ndescription: d\n---\n";
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>, Option<&'a [&'a str]>);
        let cases: &[Case<'_>] = &[
            // The two layouts of before, unchanged.
            ("bundle", &[("skills/a/SKILL.md", md), ("skills/b/SKILL.md", md)], None, Some(&["skills/a", "skills/b"])),
            ("single", &[("SKILL.md", md), ("scripts/run.sh", "x")], None, Some(&[""])),
            ("both: bundle wins", &[("SKILL.md", md), ("skills/a/SKILL.md", md)], None, Some(&["skills/a"])),
            ("neither", &[("README.md", "x")], None, None),
            // Before: refused (nothing deeper than skills/*/ was looked at). A user who
            // installs a repository whose only skill lies there wants that skill.
            ("too deep only", &[("skills/a/b/SKILL.md", md)], None, Some(&["skills/a/b"])),
            (
                "duplicate trees elsewhere",
                &[(".openclaw/skills/a/SKILL.md", md), ("skills/b/SKILL.md", md)],
                None,
                Some(&["skills/b"]),
            ),
            // Before: refused. Hidden trees are looked in when nothing else holds a skill.
            ("other trees only", &[(".openclaw/skills/a/SKILL.md", md)], None, Some(&[".openclaw/skills/a"])),
            (
                "folder without SKILL.md skipped",
                &[("skills/a/README.md", md), ("skills/b/SKILL.md", md)],
                None,
                Some(&["skills/b"]),
            ),
            (
                "symlinked SKILL.md in bundle",
                &[("skills/a/SKILL.md", "@/etc/passwd"), ("skills/b/SKILL.md", md)],
                None,
                Some(&["skills/b"]),
            ),
            ("symlinked root SKILL.md", &[("SKILL.md", "@/etc/passwd")], None, None),
            ("skills is a file", &[("skills", "x"), ("SKILL.md", md)], None, Some(&[""])),
            ("lowercase skill.md is not SKILL.md", &[("skills/a/skill.md", md)], None, None),
            // Any depth.
            (
                "collection at depth two",
                &[("science/bio/SKILL.md", md), ("science/chem/SKILL.md", md), ("docs/x.md", "x")],
                None,
                Some(&["science/bio", "science/chem"]),
            ),
            (
                "mixed depths",
                &[("a/SKILL.md", md), ("group/b/SKILL.md", md), ("group/deep/er/c/SKILL.md", md)],
                None,
                Some(&["a", "group/b", "group/deep/er/c"]),
            ),
            (
                "a skill inside a skill is part of it",
                &[("tools/outer/SKILL.md", md), ("tools/outer/assets/inner/SKILL.md", md)],
                None,
                Some(&["tools/outer"]),
            ),
            (
                "node_modules, vendored and test folders skipped",
                &[
                    ("pkg/real/SKILL.md", md),
                    ("node_modules/dep/SKILL.md", md),
                    ("vendor/v/SKILL.md", md),
                    ("third_party/t/SKILL.md", md),
                    ("tests/fixtures/f/SKILL.md", md),
                    ("src/Fixtures/g/SKILL.md", md),
                ],
                None,
                Some(&["pkg/real"]),
            ),
            (
                "hidden copies passed over when others exist",
                &[("col/a/SKILL.md", md), (".gemini/skills/a/SKILL.md", md), (".claude/skills/b/SKILL.md", md)],
                None,
                Some(&["col/a"]),
            ),
            (
                "symlinked SKILL.md at depth",
                &[("col/a/SKILL.md", "@/etc/passwd"), ("col/b/SKILL.md", md)],
                None,
                Some(&["col/b"]),
            ),
            // A marketplace.
            (
                "marketplace plugins",
                &[
                    (MARKETPLACE, MARKET),
                    ("plugins/alpha/skills/a1/SKILL.md", md),
                    ("plugins/alpha/skills/a2/SKILL.md", md),
                    ("plugins/alpha/commands/c.md", "x"),
                    ("plugins/beta/extra/one/SKILL.md", md),
                    ("plugins/beta/more/m1/SKILL.md", md),
                    ("nest/skills/o1/SKILL.md", md),
                    ("nest/inner/skills/i1/SKILL.md", md),
                    ("unlisted/skills/u/SKILL.md", md),
                    (".gemini/skills/a1/SKILL.md", md),
                ],
                None,
                Some(&[
                    "nest/inner/skills/i1",
                    "nest/skills/o1",
                    "plugins/alpha/skills/a1",
                    "plugins/alpha/skills/a2",
                    "plugins/beta/extra/one",
                    "plugins/beta/more/m1",
                ]),
            ),
            (
                "marketplace and a bundle",
                &[(MARKETPLACE, MARKET), ("plugins/alpha/skills/a1/SKILL.md", md), ("skills/s/SKILL.md", md)],
                None,
                Some(&["plugins/alpha/skills/a1", "skills/s"]),
            ),
            (
                "marketplace of remote plugins only: anywhere",
                &[
                    (MARKETPLACE, r#"{"plugins": [{"name": "r", "source": {"source": "url", "url": "x"}}]}"#),
                    ("x/y/SKILL.md", md),
                ],
                None,
                Some(&["x/y"]),
            ),
            ("marketplace not JSON: anywhere", &[(MARKETPLACE, "{"), ("x/y/SKILL.md", md)], None, Some(&["x/y"])),
            (
                "plugin.json skills field",
                &[
                    (MARKETPLACE, r#"{"plugins": [{"name": "p", "source": "./p"}]}"#),
                    ("p/.claude-plugin/plugin.json", r#"{"name": "p", "skills": "./custom"}"#),
                    ("p/custom/k/SKILL.md", md),
                ],
                None,
                Some(&["p/custom/k"]),
            ),
            // --path.
            (
                "under a folder",
                &[("skills/a/SKILL.md", md), ("extra/b/SKILL.md", md), ("extra/c/d/SKILL.md", md)],
                Some("extra"),
                Some(&["extra/b", "extra/c/d"]),
            ),
            (
                "under a skill folder",
                &[("skills/a/SKILL.md", md), ("skills/b/SKILL.md", md)],
                Some("skills/b/"),
                Some(&["skills/b"]),
            ),
            (
                "under hidden copies",
                &[("skills/a/SKILL.md", md), (".openclaw/skills/z/SKILL.md", md)],
                Some("./.openclaw"),
                Some(&[".openclaw/skills/z"]),
            ),
            (
                "under a marketplace plugin",
                &[(MARKETPLACE, MARKET), ("plugins/alpha/skills/a1/SKILL.md", md), ("nest/skills/o1/SKILL.md", md)],
                Some("plugins/alpha"),
                Some(&["plugins/alpha/skills/a1"]),
            ),
            ("under a folder without skills", &[("skills/a/SKILL.md", md), ("docs/x.md", "x")], Some("docs"), None),
        ];
        for (what, files, under, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let (repo, tree) = repo_with(d.path(), files);
            let tree = repo.find_tree(tree).unwrap();
            let got = detect(&repo, &tree, *under);
            match (want, got) {
                (Some(want), Ok((found, _))) => {
                    let subs: Vec<&str> = found.iter().map(|c| c.subpath.as_str()).collect();
                    assert_eq!(&subs, want, "{what}");
                }
                (None, Err(Error::InvalidSkillRepo(_))) => {}
                (want, got) => panic!("{what}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn marketplace_records_plugins_and_the_more_specific_one_wins() {
        let md = "---\nname: x\n---\n";
        let d = tempfile::tempdir().unwrap();
        let files = [
            (MARKETPLACE, MARKET),
            ("plugins/alpha/skills/a1/SKILL.md", md),
            ("nest/skills/o1/SKILL.md", md),
            ("nest/inner/skills/i1/SKILL.md", md),
        ];
        let (repo, tree) = repo_with(d.path(), &files);
        let tree = repo.find_tree(tree).unwrap();
        let (found, warnings) = detect(&repo, &tree, None).unwrap();
        let got: Vec<(&str, Option<&str>, Option<&str>)> =
            found.iter().map(|c| (c.subpath.as_str(), c.folder.as_deref(), c.plugin.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("nest/inner/skills/i1", Some("i1"), Some("inner")),
                ("nest/skills/o1", Some("o1"), Some("outer")),
                ("plugins/alpha/skills/a1", Some("a1"), Some("alpha")),
            ]
        );
        assert!(warnings.iter().any(|w| w.contains("\"escape\"") && w.contains("leaves")), "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("\"missing\"")), "{warnings:?}");
    }

    #[test]
    fn plugins_sharing_one_folder_are_told_apart_by_their_skills_field() {
        let md = "---\nname: x\n---\n";
        let market = r#"{"plugins": [
            {"name": "docs", "source": "./", "skills": ["./skills/pdf"], "strict": false},
            {"name": "examples", "source": "./", "skills": ["./skills/art", "./skills/brand"], "strict": false}]}"#;
        let d = tempfile::tempdir().unwrap();
        let files = [
            (MARKETPLACE, market),
            ("skills/pdf/SKILL.md", md),
            ("skills/art/SKILL.md", md),
            ("skills/brand/SKILL.md", md),
            ("skills/loose/SKILL.md", md),
            ("template/SKILL.md", md),
        ];
        let (repo, tree) = repo_with(d.path(), &files);
        let tree = repo.find_tree(tree).unwrap();
        let (found, _) = detect(&repo, &tree, None).unwrap();
        let got: Vec<(&str, Option<&str>)> = found.iter().map(|c| (c.subpath.as_str(), c.plugin.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("skills/art", Some("examples")),
                ("skills/brand", Some("examples")),
                ("skills/loose", Some("docs")),
                ("skills/pdf", Some("docs")),
            ],
            "the subpaths of the bundle layout, each with the plugin that names it"
        );
    }

    #[test]
    fn bad_paths_and_scan_caps() {
        let md = "---\nname: x\n---\n";
        let d = tempfile::tempdir().unwrap();
        let (repo, tree) = repo_with(d.path(), &[("a/b/c/SKILL.md", md), ("z/SKILL.md", md)]);
        let tree = repo.find_tree(tree).unwrap();
        for bad in ["../x", "/etc", "a/../../b"] {
            assert!(matches!(detect(&repo, &tree, Some(bad)), Err(Error::InvalidParams(_))), "{bad}");
        }
        assert!(matches!(detect(&repo, &tree, Some("nowhere")), Err(Error::InvalidParams(_))));
        let shallow = ScanCaps { max_depth: 2, ..SCAN_CAPS };
        let (found, warnings) = detect_with(&repo, &tree, None, shallow).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(warnings.iter().any(|w| w.contains("deeper than 2")), "{warnings:?}");
        let few = ScanCaps { max_folders: 3, ..SCAN_CAPS };
        assert!(
            matches!(detect_with(&repo, &tree, None, few), Err(Error::InvalidSkillRepo(m)) if m.contains("--path"))
        );
        assert_eq!(clean_path("./a/./b/"), Some("a/b".into()));
        assert_eq!(clean_path("./"), Some(String::new()));
        assert_eq!(clean_path("a/../b"), None);
    }
}
