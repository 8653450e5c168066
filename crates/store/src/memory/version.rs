//! The version of a skill: a content hash of its folder.
//!
//! A sorted walk of the folder hashes each regular file's relative path and bytes; dotfiles,
//! dot-folders and symlinks are skipped, and the read is bounded (files and bytes), so a huge
//! or hostile folder cannot stall a skill load. Notes are stamped with the hash of the skill
//! they were written for; a different current hash marks them as written for an older version.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// At most this many files are hashed.
pub const MAX_FILES: usize = 2_000;
/// At most this many bytes are hashed.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The hex content hash of `dir`, or `None` when it cannot be read.
pub fn content_hash(dir: &Path) -> Option<String> {
    let files = files_of(dir);
    hash_files(dir, &files)
}

/// The regular files of `dir` to hash, sorted (relative paths).
fn files_of(dir: &Path) -> Vec<String> {
    let mut files = vec![];
    collect(dir, dir, &mut files, 0);
    files.sort();
    files.truncate(MAX_FILES);
    files
}

fn hash_files(dir: &Path, files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut h = Sha256::new();
    let mut budget = MAX_BYTES;
    for rel in files {
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

/// A file's size and modification time, as a folder's stamp holds them.
type Stamp = Vec<(String, u64, SystemTime)>;

/// Folders whose hash is kept at most.
const FOLDERS_HELD: usize = 256;

/// A file changed less than this long ago may change again within the file system's time
/// resolution without its stamp changing (git's "racily clean" entries): such a folder is
/// hashed again every time.
const SETTLE: Duration = Duration::from_secs(2);

/// Content hashes kept by folder and reused while each file's size and modification time are
/// what they were: every skill load and every note write asks for its skill's version, and
/// hashing read the whole folder (SKILL.md and its scripts) each time. A folder is walked and
/// its files stat'ed every time; only the reads and the hashing are saved.
#[derive(Default)]
pub struct HashCache {
    held: Mutex<HashMap<PathBuf, (Stamp, Option<String>)>>,
}

impl HashCache {
    /// [`content_hash`] of `dir`, from the cache when its files are unchanged.
    pub fn content_hash(&self, dir: &Path) -> Option<String> {
        let files = files_of(dir);
        let now = SystemTime::now();
        let mut settled = true;
        let mut stamp: Stamp = Vec::with_capacity(files.len());
        for rel in &files {
            let Ok(m) = std::fs::metadata(dir.join(rel)) else { continue };
            let at = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            settled &= now.duration_since(at).is_ok_and(|age| age >= SETTLE);
            stamp.push((rel.clone(), m.len(), at));
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, h)) = held.get(dir) {
            if settled && *s == stamp {
                return h.clone();
            }
        }
        drop(held);
        let h = hash_files(dir, &files);
        held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if settled {
            if held.len() >= FOLDERS_HELD {
                held.clear();
            }
            held.insert(dir.to_path_buf(), (stamp, h.clone()));
        } else {
            held.remove(dir);
        }
        h
    }
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

    /// The cache answers what `content_hash` answers: a file rewritten just now (same size,
    /// maybe the same time stamp) is hashed again; a settled folder is not read again.
    #[test]
    fn the_cache_answers_what_hashing_answers() {
        let d = tempfile::tempdir().unwrap();
        let cache = HashCache::default();
        std::fs::write(d.path().join("SKILL.md"), "a").unwrap();
        assert_eq!(cache.content_hash(d.path()), content_hash(d.path()));
        std::fs::write(d.path().join("SKILL.md"), "b").unwrap();
        assert_eq!(cache.content_hash(d.path()), content_hash(d.path()), "same size, just rewritten");
        // Settled (its time two seconds back): kept, and used while the stamp holds.
        let old = SystemTime::now() - Duration::from_secs(10);
        let f = std::fs::File::options().write(true).open(d.path().join("SKILL.md")).unwrap();
        f.set_modified(old).unwrap();
        let h = cache.content_hash(d.path());
        assert_eq!(h, content_hash(d.path()));
        assert!(cache.held.lock().unwrap().contains_key(d.path()));
        // A change of size or time is seen.
        std::fs::write(d.path().join("SKILL.md"), "longer").unwrap();
        assert_eq!(cache.content_hash(d.path()), content_hash(d.path()));
        assert_ne!(cache.content_hash(d.path()), h);
        std::fs::write(d.path().join("new.sh"), "x").unwrap();
        assert_eq!(cache.content_hash(d.path()), content_hash(d.path()));
        assert_eq!(cache.content_hash(&d.path().join("missing")), None);
    }
}
