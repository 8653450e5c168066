//! Advisory file locks under `<dataDir>/locks/`, so that processes sharing a data directory
//! (several sidecars, the CLI) do not interleave the store-and-record phase of installs, or
//! two seeds of one folder. Held until the returned file is dropped; the lock files live in
//! the data directory, never in a project.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Takes an exclusive lock named `key` (any string; hashed into a file name), waiting for it.
pub fn exclusive(data_dir: &Path, key: &str) -> Result<File> {
    let dir = data_dir.join("locks");
    std::fs::create_dir_all(&dir)?;
    let name: String = Sha256::digest(key.as_bytes()).iter().take(12).map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
    loop {
        // SAFETY: flock on a descriptor this function owns; released when `file` is closed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(file);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::storage(format!("cannot lock {}: {err}", path.display())));
        }
    }
}
