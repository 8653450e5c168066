//! Drift: whether a stored skill still holds the bytes it was installed with, and whether a
//! seeded copy still holds the stored ones.
//!
//! A store folder is named by its content hash ([`crate::store::write`]: each file's relative
//! path, executable bit, length and bytes, in path order), so [`hash_dir`] over the folder
//! says whether it drifted; the manifest written beside it at install (one line per file:
//! SHA-256, exec flag, path) names which files did. A seeded copy is compared file by file
//! with its stored folder, leaving out the seed's own ignore file and marker.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One file's SHA-256 (hex) and executable bit.
pub type Files = BTreeMap<String, (String, bool)>;

/// A folder's content hash (the store's scheme) and its files.
pub struct Hashed {
    pub hash: String,
    pub files: Files,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The store's content hash of a folder and each file's SHA-256; symlinks and anything not a
/// regular file are left out (the store never holds them), as are the top-level names in
/// `skip_top`.
pub fn hash_dir(dir: &Path, skip_top: &[&str]) -> std::io::Result<Hashed> {
    let mut rels = vec![];
    walk(dir, "", skip_top, &mut rels)?;
    rels.sort();
    let mut h = Sha256::new();
    let mut files = Files::new();
    for rel in rels {
        let p = dir.join(&rel);
        let bytes = std::fs::read(&p)?;
        let exec = std::fs::metadata(&p)?.permissions().mode() & 0o111 != 0;
        h.update(rel.as_bytes());
        h.update([0, if exec { b'x' } else { b'-' }, 0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
        files.insert(rel, (hex(&Sha256::digest(&bytes)), exec));
    }
    Ok(Hashed { hash: hex(&h.finalize()), files })
}

fn walk(dir: &Path, prefix: &str, skip_top: &[&str], out: &mut Vec<String>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if prefix.is_empty() && skip_top.contains(&name.as_str()) {
            continue;
        }
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&e.path(), &rel, &[], out)?;
        } else if ft.is_file() {
            out.push(rel);
        }
    }
    Ok(())
}

/// Where the manifest of a stored version lives (outside the store folder, which stays
/// exactly the skill's files).
pub fn manifest_path(data_dir: &Path, name: &str, hash: &str) -> PathBuf {
    data_dir.join(crate::store::STORE).join(".manifests").join(name).join(format!("{hash}.tsv"))
}

/// Writes a manifest (when it is not there yet): `sha256<TAB>x|-<TAB>path` per line.
pub fn write_manifest(path: &Path, files: &Files) -> std::io::Result<()> {
    if path.is_file() {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    for (rel, (sha, exec)) in files {
        writeln!(f, "{sha}\t{}\t{rel}", if *exec { "x" } else { "-" })?;
    }
    // No fsync (one per skill was a large part of installing a collection of hundreds, and the
    // stored files it describes are not synced either): the last line counts the files, so a
    // manifest a crash cut short reads as none ([`read_manifest`]), never as a wrong list.
    writeln!(f, "{MANIFEST_END}\t{}", files.len())?;
    f.into_inner().map_err(|e| e.into_error())?;
    std::fs::rename(tmp, path)
}

/// The first field of a manifest's last line, which counts its files.
const MANIFEST_END: &str = "#end";

/// A manifest's files, or `None` when there is none (a version stored before manifests).
pub fn read_manifest(path: &Path) -> Option<Files> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = Files::new();
    let mut count = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix(MANIFEST_END).and_then(|r| r.strip_prefix('\t')) {
            count = n.parse::<usize>().ok();
            continue;
        }
        let mut parts = line.splitn(3, '\t');
        let (Some(sha), Some(x), Some(rel)) = (parts.next(), parts.next(), parts.next()) else { continue };
        out.insert(rel.to_string(), (sha.to_string(), x == "x"));
    }
    // Cut short (or of another writer): no list rather than a wrong one.
    (count == Some(out.len())).then_some(out)
}

/// What differs between the files expected and the files found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl FileDiff {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }

    /// `changed: a, b; added: c` for messages.
    pub fn summary(&self) -> String {
        let mut parts = vec![];
        for (what, list) in [("changed", &self.changed), ("added", &self.added), ("removed", &self.removed)] {
            if !list.is_empty() {
                parts.push(format!("{what}: {}", list.join(", ")));
            }
        }
        parts.join("; ")
    }
}

/// The files of `found` that differ from `expected` (content or executable bit).
pub fn diff(expected: &Files, found: &Files) -> FileDiff {
    let mut d = FileDiff::default();
    for (rel, want) in expected {
        match found.get(rel) {
            Some(got) if got == want => {}
            Some(_) => d.changed.push(rel.clone()),
            None => d.removed.push(rel.clone()),
        }
    }
    d.added = found.keys().filter(|r| !expected.contains_key(*r)).cloned().collect();
    d
}

/// One skill whose files drifted, in the store or in a seeded copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    pub skill: String,
    /// `store` or `seed`.
    pub place: String,
    /// The folder that drifted.
    pub path: String,
    #[serde(flatten)]
    pub files: FileDiff,
    /// What happened and what to do, in one sentence.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_of_a_folder_is_the_stores_and_a_diff_names_the_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("scripts")).unwrap();
        std::fs::write(d.path().join("SKILL.md"), "a").unwrap();
        std::fs::write(d.path().join("scripts/run.sh"), "b").unwrap();
        let before = hash_dir(d.path(), &[]).unwrap();
        assert_eq!(before.files.len(), 2);
        std::fs::write(d.path().join("scripts/run.sh"), "c").unwrap();
        std::fs::write(d.path().join("extra"), "d").unwrap();
        std::fs::remove_file(d.path().join("SKILL.md")).unwrap();
        let after = hash_dir(d.path(), &[]).unwrap();
        assert_ne!(before.hash, after.hash);
        let diff = diff(&before.files, &after.files);
        assert_eq!(diff.changed, ["scripts/run.sh"]);
        assert_eq!(diff.added, ["extra"]);
        assert_eq!(diff.removed, ["SKILL.md"]);
        let m = d.path().join("m/x.tsv");
        write_manifest(&m, &before.files).unwrap();
        assert_eq!(read_manifest(&m).unwrap(), before.files);
    }

    /// A manifest is read whole or not at all: one a crash cut short (its count line missing,
    /// or a line lost) names no files rather than wrong ones.
    #[test]
    fn manifest_cut_short_reads_as_none() {
        let d = tempfile::tempdir().unwrap();
        let files: Files = [("SKILL.md", "aa"), ("scripts/run.sh", "bb")]
            .into_iter()
            .map(|(r, h)| (r.to_string(), (h.to_string(), false)))
            .collect();
        let m = d.path().join("m.tsv");
        write_manifest(&m, &files).unwrap();
        let whole = std::fs::read_to_string(&m).unwrap();
        let lines: Vec<&str> = whole.lines().collect();
        // (what, the file's text, read back whole)
        let cases = [
            ("whole", whole.clone(), true),
            ("no count line", format!("{}\n{}\n", lines[0], lines[1]), false),
            ("a line lost", format!("{}\n{}\n", lines[0], lines[2]), false),
            ("cut mid-line", whole[..whole.len() / 2].to_string(), false),
            ("empty", String::new(), false),
        ];
        for (what, text, ok) in cases {
            std::fs::write(&m, text).unwrap();
            assert_eq!(read_manifest(&m).is_some(), ok, "{what}");
        }
        assert_eq!(read_manifest(&d.path().join("missing.tsv")), None);
    }
}
