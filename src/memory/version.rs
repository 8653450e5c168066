//! The version of a skill: a content hash of its folder.
//!
//! A sorted walk of the folder hashes each regular file's relative path and bytes; dotfiles,
//! dot-folders and symlinks are skipped, and the read is bounded (files and bytes), so a huge
//! or hostile folder cannot stall a skill load. Notes are stamped with the hash of the skill
//! they were written for; a different current hash marks them as written for an older version.

use std::path::Path;

use sha2::{Digest, Sha256};

/// At most this many files are hashed.
pub const MAX_FILES: usize = 2_000;
/// At most this many bytes are hashed.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The hex content hash of `dir`, or `None` when it cannot be read.
pub fn content_hash(dir: &Path) -> Option<String> {
    let mut files = vec![];
    collect(dir, dir, &mut files, 0);
    if files.is_empty() {
        return None;
    }
    files.sort();
    let mut h = Sha256::new();
    let mut budget = MAX_BYTES;
    for rel in files.iter().take(MAX_FILES) {
        let Ok(bytes) = std::fs::read(dir.join(rel)) else { continue };
        let take = (bytes.len() as u64).min(budget) as usize;
        budget -= take as u64;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes[..take]);
        if budget == 0 {
            break;
        }
    }
    Some(h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect())
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>, depth: usize) {
    if depth > 16 || out.len() >= MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        if ft.is_dir() {
            collect(root, &path, out, depth + 1);
        } else if ft.is_file() {
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_with_content_not_with_dotfiles() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("SKILL.md"), "a").unwrap();
        let h1 = content_hash(d.path()).unwrap();
        std::fs::write(d.path().join(".skillmem-seeded"), "x").unwrap();
        assert_eq!(content_hash(d.path()).unwrap(), h1);
        std::fs::create_dir(d.path().join("scripts")).unwrap();
        std::fs::write(d.path().join("scripts/run.sh"), "echo").unwrap();
        let h2 = content_hash(d.path()).unwrap();
        assert_ne!(h1, h2);
        std::fs::write(d.path().join("SKILL.md"), "b").unwrap();
        assert_ne!(content_hash(d.path()).unwrap(), h2);
        assert_eq!(content_hash(&d.path().join("missing")), None);
    }
}
