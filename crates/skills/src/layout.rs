//! Which folders of a commit are skills.
//!
//! A bundle (`skills/*/SKILL.md`, exactly one level deep) wins over a root `SKILL.md` (a
//! single skill); neither is `invalidSkillRepo`. Nothing deeper is scanned: real bundles ship
//! duplicate trees elsewhere (e.g. `.openclaw/skills/*`). A SKILL.md must be a regular file: a
//! symlink is never followed, so a folder whose SKILL.md is a symlink is not a skill.

use git2::{ObjectType, Repository, Tree, TreeEntry};

use super::git;
use crate::error::{Error, Result};

/// Mode of a regular file in a git tree.
pub const MODE_FILE: i32 = 0o100644;
/// Mode of an executable file in a git tree.
pub const MODE_EXEC: i32 = 0o100755;
/// Mode of a symlink in a git tree.
pub const MODE_LINK: i32 = 0o120000;

/// One skill folder found in a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The folder name in a bundle (`skills/<folder>`); `None` for a root SKILL.md.
    pub folder: Option<String>,
    /// The folder's path in the repository (`skills/pdf`, or `` for the root).
    pub subpath: String,
    /// The folder's tree.
    pub tree: git2::Oid,
}

fn is_regular(e: &TreeEntry<'_>) -> bool {
    e.kind() == Some(ObjectType::Blob) && (e.filemode() == MODE_FILE || e.filemode() == MODE_EXEC)
}

/// Finds the skill folders of `root`. Returns them (bundle folders sorted by name) and the
/// warnings about folders passed over.
pub fn detect(repo: &Repository, root: &Tree<'_>) -> Result<(Vec<Candidate>, Vec<String>)> {
    let mut warnings = vec![];
    let mut found = vec![];
    if let Some(skills) = root.get_name("skills").filter(|e| e.kind() == Some(ObjectType::Tree)) {
        let skills = repo.find_tree(skills.id()).map_err(git)?;
        for entry in skills.iter() {
            let Some(folder) = entry.name() else { continue };
            if entry.kind() != Some(ObjectType::Tree) {
                continue;
            }
            let sub = repo.find_tree(entry.id()).map_err(git)?;
            let md = sub.get_name("SKILL.md").map(|md| is_regular(&md));
            match md {
                Some(true) => found.push(Candidate {
                    folder: Some(folder.to_string()),
                    subpath: format!("skills/{folder}"),
                    tree: entry.id(),
                }),
                Some(false) => warnings.push(format!(
                    "skills/{folder}/SKILL.md is not a regular file (a symlink?); that folder is not installed"
                )),
                None => {}
            }
        }
    }
    if !found.is_empty() {
        found.sort_by(|a, b| a.folder.cmp(&b.folder));
        return Ok((found, warnings));
    }
    match root.get_name("SKILL.md") {
        Some(md) if is_regular(&md) => {
            Ok((vec![Candidate { folder: None, subpath: String::new(), tree: root.id() }], warnings))
        }
        other => {
            let why = if other.is_some() { " (the root SKILL.md is not a regular file, e.g. a symlink)" } else { "" };
            let more = if warnings.is_empty() { String::new() } else { format!("; {}", warnings.join("; ")) };
            Err(Error::InvalidSkillRepo(format!(
                "no skill layout: expected skills/<name>/SKILL.md (a bundle) or a SKILL.md at the root{why}{more}"
            )))
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::Path;

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

    #[test]
    fn layouts() {
        let md = "---\nname: x\ndescription: d\n---\n";
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a [&'a str]>);
        let cases: &[Case<'_>] = &[
            ("bundle", &[("skills/a/SKILL.md", md), ("skills/b/SKILL.md", md)], Some(&["skills/a", "skills/b"])),
            ("single", &[("SKILL.md", md), ("scripts/run.sh", "x")], Some(&[""])),
            ("both: bundle wins", &[("SKILL.md", md), ("skills/a/SKILL.md", md)], Some(&["skills/a"])),
            ("neither", &[("README.md", "x")], None),
            ("too deep only", &[("skills/a/b/SKILL.md", md)], None),
            (
                "duplicate trees elsewhere",
                &[(".openclaw/skills/a/SKILL.md", md), ("skills/b/SKILL.md", md)],
                Some(&["skills/b"]),
            ),
            ("other trees only", &[(".openclaw/skills/a/SKILL.md", md)], None),
            (
                "folder without SKILL.md skipped",
                &[("skills/a/README.md", md), ("skills/b/SKILL.md", md)],
                Some(&["skills/b"]),
            ),
            (
                "symlinked SKILL.md in bundle",
                &[("skills/a/SKILL.md", "@/etc/passwd"), ("skills/b/SKILL.md", md)],
                Some(&["skills/b"]),
            ),
            ("symlinked root SKILL.md", &[("SKILL.md", "@/etc/passwd")], None),
            ("skills is a file", &[("skills", "x"), ("SKILL.md", md)], Some(&[""])),
            ("lowercase skill.md is not SKILL.md", &[("skills/a/skill.md", md)], None),
        ];
        for (what, files, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let (repo, tree) = repo_with(d.path(), files);
            let tree = repo.find_tree(tree).unwrap();
            let got = detect(&repo, &tree);
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
}
