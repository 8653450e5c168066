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
///
/// With a folder of its own ([`HashCache::on_disk`]), a settled folder's hash is also kept
/// there, one small file per skill folder, for the processes that live for one load: a hook
/// process hashed its skill's whole folder at every skill load (anthropics/skills'
/// `canvas-design`, 5.6 MB, 7.5–8 ms of a ~20 ms process; `docx`, 1.3 MB, 3–4 ms).
#[derive(Default)]
pub struct HashCache {
    held: Mutex<HashMap<PathBuf, (Stamp, Option<String>)>>,
    disk: Option<PathBuf>,
}

impl HashCache {
    /// A cache that also keeps settled folders' hashes in files under `dir` (made when first
    /// written; best effort: a file that cannot be read or written is a miss).
    pub fn on_disk(dir: PathBuf) -> HashCache {
        HashCache { held: Mutex::default(), disk: Some(dir) }
    }

    /// The file that keeps `dir`'s hash, under the cache's folder.
    fn file_of(&self, dir: &Path) -> Option<PathBuf> {
        let d: String =
            Sha256::digest(dir.to_string_lossy().as_bytes()).iter().take(12).map(|b| format!("{b:02x}")).collect();
        Some(self.disk.as_ref()?.join(format!("skill-hash-{d}")))
    }

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
        let written = encode(dir, &stamp);
        let file = self.file_of(dir).filter(|_| settled);
        if let Some(text) = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()) {
            if let Some((kept, h)) = text.rsplit_once('\n') {
                if kept == written {
                    let h = (!h.is_empty()).then(|| h.to_string());
                    self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(dir.to_path_buf(), (stamp, h.clone()));
                    return h;
                }
            }
        }
        let h = hash_files(dir, &files);
        if let Some(file) = &file {
            // Best effort: written whole under another name, then renamed into place.
            let _ = file.parent().map(std::fs::create_dir_all).transpose().and_then(|_| {
                let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
                std::fs::write(&tmp, format!("{written}\n{}", h.as_deref().unwrap_or_default()))?;
                std::fs::rename(&tmp, file)
            });
        }
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

/// A folder's stamp as its cache file holds it: the folder, then each file's relative path
/// (its length first, so that no name can pass for another list), size and time.
fn encode(dir: &Path, stamp: &Stamp) -> String {
    let mut out = format!("{}", dir.display());
    for (rel, len, at) in stamp {
        let ns = at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        out.push_str(&format!("|{}:{rel}:{len}:{ns}", rel.len()));
    }
    out
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

    /// Sets `file`'s modification time `secs` seconds back.
    fn age(file: &Path, secs: u64) {
        let f = std::fs::File::options().write(true).open(file).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
    }

    /// A cache on disk answers a new process (a new cache over the same folder) from its file
    /// while the folder's stamp holds, without reading the files: a file rewritten with bytes
    /// of the same size and its old time comes back with the hash kept. Every other change,
    /// a damaged or foreign cache file, and a folder not settled yet are hashed anew.
    #[test]
    fn a_cache_on_disk_serves_the_next_process_while_the_stamp_holds() {
        let d = tempfile::tempdir().unwrap();
        let skill = d.path().join("skill");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        let (md, script) = (skill.join("SKILL.md"), skill.join("scripts/run.sh"));
        let cache_dir = d.path().join("cache");
        let settle = |f: &Path| age(f, 10);
        let setup = || {
            std::fs::write(&md, "name: a").unwrap();
            std::fs::write(&script, "echo a").unwrap();
            settle(&md);
            settle(&script);
        };
        type Change = fn(&Path, &Path, &Path);
        let cases: &[(&str, Change, bool)] = &[
            ("nothing changed", |_, _, _| {}, true),
            // The stamp cannot see this one, as the in-process cache and git's index cannot.
            (
                "same size, same time",
                |md, _, _| {
                    let at = std::fs::metadata(md).unwrap().modified().unwrap();
                    std::fs::write(md, "name: b").unwrap();
                    std::fs::File::options().write(true).open(md).unwrap().set_modified(at).unwrap();
                },
                true,
            ),
            (
                "another size",
                |md, _, _| {
                    std::fs::write(md, "name: longer").unwrap();
                    age(md, 10)
                },
                false,
            ),
            ("another time", |_, s, _| age(s, 100), false),
            (
                "a file added",
                |md, _, _| {
                    let n = md.with_file_name("new.py");
                    std::fs::write(&n, "x").unwrap();
                    age(&n, 10)
                },
                false,
            ),
            ("a file removed", |_, s, _| std::fs::remove_file(s).unwrap(), false),
            (
                "the cache file damaged",
                |_, _, c| {
                    for f in std::fs::read_dir(c).unwrap() {
                        std::fs::write(f.unwrap().path(), "garbage").unwrap()
                    }
                },
                false,
            ),
            ("a file changed just now", |md, _, _| std::fs::write(md, "name: c").unwrap(), false),
        ];
        for (case, change, kept) in cases {
            let _ = std::fs::remove_dir_all(&cache_dir);
            let _ = std::fs::remove_file(skill.join("new.py"));
            setup();
            let first = HashCache::on_disk(cache_dir.clone()).content_hash(&skill);
            assert_eq!(first, content_hash(&skill), "{case}");
            assert_eq!(std::fs::read_dir(&cache_dir).unwrap().count(), 1, "{case}: one file for the folder");
            change(&md, &script, &cache_dir);
            let next = HashCache::on_disk(cache_dir.clone()).content_hash(&skill);
            if *kept {
                assert_eq!(next, first, "{case}: from the file");
            } else {
                assert_eq!(next, content_hash(&skill), "{case}: hashed anew");
            }
        }
        // Not settled: nothing is written.
        let _ = std::fs::remove_dir_all(&cache_dir);
        std::fs::write(&md, "name: d").unwrap();
        HashCache::on_disk(cache_dir.clone()).content_hash(&skill);
        assert!(!cache_dir.exists(), "a folder changed just now is not kept");
    }
}
