//! The graph's exact vectors, one row of `dim` floats per slot, kept out of memory: the graph
//! walks its int8 codes, and only the head of a result list is rescored from these rows.
//!
//! Rows live in a file read with positioned reads (`pread`): the kernel's page cache holds
//! what is read often, and none of it counts in the process's resident size, where a mapped
//! file's touched pages would. Three places a row can be in:
//!
//! - a **shared** file (reloaded from the index folder, or the file the last save wrote):
//!   never written again, because another process may have loaded the same file; rows added
//!   after it are kept in
//! - the **tail**, in memory, until the next save writes a new file (the shared rows copied,
//!   the tail appended) and adopts it: the tail is at most what the worker inserts between
//!   two saves;
//! - a **private** file (a build's, an anonymous temporary file nobody else can open): rows
//!   are appended to it directly, until a save adopts the file it wrote.
//!
//! Every row has a 64-bit checksum ([`row_sum`]), kept in memory and in the graph file: a
//! read whose bytes do not match is refused (the caller falls back to the int8 codes and
//! asks for a rebuild), so a damaged or foreign vectors file is never taken for the vectors.
//! The same checksum compares a stored vector with a slot's without reading the row.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::RwLock;

/// The checksum of a row: a multiply-xorshift over its bits, two floats a step. Equal rows
/// have equal sums; `-0.0` and `0.0` differ (bits, as the file holds them).
pub fn row_sum(v: &[f32]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (v.len() as u64).wrapping_mul(K) ^ 0x5be0_cd19_137e_2179;
    let mut pairs = v.chunks_exact(2);
    for p in &mut pairs {
        let w = u64::from(p[0].to_bits()) | (u64::from(p[1].to_bits()) << 32);
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 29;
    }
    for x in pairs.remainder() {
        h = (h ^ u64::from(x.to_bits())).wrapping_mul(K);
        h ^= h >> 29;
    }
    h ^ (h >> 32)
}

struct Inner {
    /// Rows `0..file_rows` (all rows when `private`).
    file: Option<File>,
    file_rows: usize,
    /// The file is ours alone: rows are appended to it.
    private: bool,
    /// Rows `file_rows..` when the file is shared (or there is none).
    tail: Vec<f32>,
}

/// The exact rows of a graph; see the module docs.
pub struct Rows {
    dim: usize,
    sums: Vec<u64>,
    inner: RwLock<Inner>,
}

impl Rows {
    /// No rows; new ones are kept in memory (an index with no folder).
    pub fn in_memory(dim: usize) -> Rows {
        Rows { dim, sums: vec![], inner: RwLock::new(Inner { file: None, file_rows: 0, private: false, tail: vec![] }) }
    }

    /// No rows; new ones are appended to an anonymous temporary file in `dir` (a build: the
    /// rows never pass through memory). Falls back to memory when no file can be made there.
    pub fn private_in(dim: usize, dir: &Path) -> Rows {
        match std::fs::create_dir_all(dir).and_then(|()| tempfile::tempfile_in(dir)) {
            Ok(f) => Rows {
                dim,
                sums: vec![],
                inner: RwLock::new(Inner { file: Some(f), file_rows: 0, private: true, tail: vec![] }),
            },
            Err(e) => {
                tracing::warn!("vector index: no temporary file in {} ({e}); rows kept in memory", dir.display());
                Rows::in_memory(dim)
            }
        }
    }

    /// The rows of `file` (written by [`Rows::write_to`]), one per checksum in `sums`; the
    /// file must hold exactly that many rows.
    pub fn shared(dim: usize, file: File, sums: Vec<u64>) -> std::io::Result<Rows> {
        let want = (sums.len() * dim * 4) as u64;
        if file.metadata()?.len() != want {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the vectors file does not hold one row per node",
            ));
        }
        let n = sums.len();
        Ok(Rows {
            dim,
            sums,
            inner: RwLock::new(Inner { file: Some(file), file_rows: n, private: false, tail: vec![] }),
        })
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.sums.len()
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.sums.is_empty()
    }

    /// The checksums, one per row.
    pub fn sums(&self) -> &[u64] {
        &self.sums
    }

    /// The checksum of `slot`'s row.
    pub fn sum(&self, slot: u32) -> u64 {
        self.sums[slot as usize]
    }

    /// Bytes held in memory (the checksums and the tail).
    pub fn heap_bytes(&self) -> usize {
        self.sums.capacity() * 8 + self.lock().tail.capacity() * 4
    }

    fn lock(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_mut(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `v` as the next row. A private file that cannot be written moves its rows to
    /// memory (nothing is lost).
    pub fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        let slot = self.sums.len();
        let dim = self.dim;
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        if inner.private {
            let bytes = to_bytes(v);
            let wrote = inner.file.as_ref().map(|f| write_at(f, &bytes, (slot * dim * 4) as u64));
            match wrote {
                Some(Ok(())) => {
                    inner.file_rows = slot + 1;
                    self.sums.push(row_sum(v));
                    return;
                }
                Some(Err(e)) => {
                    tracing::warn!(
                        "vector index: cannot write a row to the temporary file ({e}); keeping rows in memory"
                    );
                    let mut rows = vec![0.0f32; inner.file_rows * dim];
                    let f = inner.file.take().expect("a private file");
                    let ok = read_at(&f, &mut rows, 0).is_ok();
                    if !ok {
                        // The rows cannot be read back either: their checksums will refuse
                        // them, and the caller rebuilds.
                        rows.fill(f32::NAN);
                    }
                    inner.tail = rows;
                    inner.file_rows = 0;
                    inner.private = false;
                }
                None => inner.private = false,
            }
        }
        inner.tail.extend_from_slice(v);
        self.sums.push(row_sum(v));
    }

    /// Reads `slot`'s row into `out` (`dim` floats); false when it cannot be read or its
    /// bytes do not match its checksum.
    pub fn read(&self, slot: u32, out: &mut [f32]) -> bool {
        let slot = slot as usize;
        if slot >= self.sums.len() || out.len() != self.dim {
            return false;
        }
        {
            let inner = self.lock();
            if slot < inner.file_rows {
                let Some(f) = inner.file.as_ref() else { return false };
                if read_at(f, out, (slot * self.dim * 4) as u64).is_err() {
                    return false;
                }
            } else {
                let at = (slot - inner.file_rows) * self.dim;
                match inner.tail.get(at..at + self.dim) {
                    Some(r) => out.copy_from_slice(r),
                    None => return false,
                }
            }
        }
        row_sum(out) == self.sums[slot]
    }

    /// Writes every row to `out` (the file rows copied, then the tail) and syncs it; the
    /// caller adopts it with [`Rows::adopt`] once the save it belongs to is in place.
    pub fn write_to(&self, out: &mut File) -> std::io::Result<()> {
        let inner = self.lock();
        if let Some(f) = inner.file.as_ref() {
            let mut src = f.try_clone()?;
            src.seek(SeekFrom::Start(0))?;
            let want = (inner.file_rows * self.dim * 4) as u64;
            let copied = std::io::copy(&mut std::io::Read::take(src, want), out)?;
            if copied != want {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the vectors file is short"));
            }
        }
        // A chunk at a time: the tail is up to a save's worth of rows (10,000 at 100,000
        // notes), and a copy of it all was a start's transient peak.
        for chunk in inner.tail.chunks(16 * 1024) {
            out.write_all(&to_bytes(chunk))?;
        }
        out.sync_all()
    }

    /// Takes `file`, which holds exactly these rows and which this process alone can reach
    /// (a stopped build's, resumed: its folder is gone), as the private file rows are
    /// appended to from now on.
    pub fn own(&self, file: File) -> std::io::Result<()> {
        let want = (self.sums.len() * self.dim * 4) as u64;
        if file.metadata()?.len() != want {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the vectors file does not hold one row per node",
            ));
        }
        let mut inner = self.lock_mut();
        if !inner.tail.is_empty() {
            return Err(std::io::Error::other("rows were added in memory"));
        }
        inner.file = Some(file);
        inner.file_rows = self.sums.len();
        inner.private = true;
        Ok(())
    }

    /// Reads the rows from `file`, written by [`Rows::write_to`] of these rows, from now on:
    /// the tail is dropped and the file is shared (never written again).
    pub fn adopt(&self, file: File) {
        let mut inner = self.lock_mut();
        inner.file = Some(file);
        inner.file_rows = self.sums.len();
        inner.private = false;
        inner.tail = vec![];
    }
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads `out.len()` floats (little-endian) at byte `at` of `f`.
fn read_at(f: &File, out: &mut [f32], at: u64) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    let mut done = 0;
    while done < out.len() {
        let n = (out.len() - done).min(buf.len() / 4);
        read_exact_at(f, &mut buf[..n * 4], at + (done * 4) as u64)?;
        for (x, c) in out[done..done + n].iter_mut().zip(buf.chunks_exact(4)) {
            *x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        done += n;
    }
    Ok(())
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(unix)]
fn write_at(f: &File, buf: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, at)
}

#[cfg(windows)]
fn read_exact_at(f: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(windows)]
fn write_at(f: &File, mut buf: &[u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(f, buf, at)? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => {
                buf = &buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seed: u32, dim: usize) -> Vec<f32> {
        (0..dim).map(|i| ((seed as usize * 31 + i * 7) % 19) as f32 / 19.0 - 0.5).collect()
    }

    /// Rows read back the same from memory, a private file and a saved (shared) file, and a
    /// row whose bytes changed on disk is refused.
    #[test]
    fn rows_read_back_from_every_place_and_damage_is_refused() {
        let dim = 5;
        let dir = tempfile::tempdir().unwrap();
        for mut rows in [Rows::in_memory(dim), Rows::private_in(dim, dir.path())] {
            for s in 0..10 {
                rows.push(&row(s, dim));
            }
            let mut out = vec![0.0; dim];
            for s in 0..10u32 {
                assert!(rows.read(s, &mut out));
                assert_eq!(out, row(s, dim));
                assert_eq!(rows.sum(s), row_sum(&out));
            }
            assert!(!rows.read(10, &mut out), "past the end");
            // Saved and adopted: then two more rows go to the tail.
            let path = dir.path().join("v.f32");
            let mut f = File::create(&path).unwrap();
            rows.write_to(&mut f).unwrap();
            rows.adopt(File::open(&path).unwrap());
            rows.push(&row(10, dim));
            rows.push(&row(11, dim));
            for s in 0..12u32 {
                assert!(rows.read(s, &mut out), "row {s}");
                assert_eq!(out, row(s, dim));
            }
            // A file that holds other rows than its checksums say.
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[4 * dim * 3] ^= 0x40;
            std::fs::write(&path, &bytes).unwrap();
            let back = Rows::shared(dim, File::open(&path).unwrap(), rows.sums()[..10].to_vec()).unwrap();
            for s in 0..10u32 {
                assert_eq!(back.read(s, &mut out), s != 3, "row {s}");
            }
            // One row too few or too many: refused.
            assert!(Rows::shared(dim, File::open(&path).unwrap(), rows.sums()[..9].to_vec()).is_err());
            assert!(Rows::shared(dim, File::open(&path).unwrap(), rows.sums()[..11].to_vec()).is_err());
        }
    }

    #[test]
    fn row_sums_tell_rows_apart() {
        let cases: &[(&[f32], &[f32], bool)] = &[
            (&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], true),
            (&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0000002], false),
            (&[1.0, 2.0, 3.0], &[2.0, 1.0, 3.0], false),
            (&[0.0, 0.0], &[0.0, 0.0, 0.0], false),
            (&[0.0], &[-0.0], false),
            (&[], &[], true),
        ];
        for (a, b, same) in cases {
            assert_eq!(row_sum(a) == row_sum(b), *same, "{a:?} vs {b:?}");
        }
    }
}
