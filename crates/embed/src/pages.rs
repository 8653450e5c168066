//! Huge pages for the tables read at random: the static table's rows (token matching reads
//! a few hundred of its 30,522 rows a load) and the vector index's blocks (a search reads a
//! few thousand scattered over tens of megabytes). With 4 KiB pages nearly every such read
//! also misses the TLB.
//!
//! Advice only (Linux, `transparent_hugepage` in `madvise` mode, the common default):
//! nothing changes when it is refused, and nothing read depends on it. Memory is backed by
//! huge pages only when it is advised *before* it is first touched; advice given after that
//! waits for the kernel's background collapsing (at 100,000 notes the sidecar held no huge
//! page four seconds into a run of loads when the blocks were advised after their load).

/// `madvise(MADV_HUGEPAGE)` over the whole 2 MiB pages inside `len` bytes from `p`.
pub fn advise_huge(p: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (p as usize).div_ceil(HUGE) * HUGE;
        let end = (p as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside one live allocation of the caller's;
            // MADV_HUGEPAGE only changes how the kernel backs it, never its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

/// `bytes` copied into memory advised for huge pages before it is written.
pub fn huge_copy(bytes: &[u8]) -> Vec<u8> {
    let mut v: Vec<u8> = Vec::with_capacity(bytes.len());
    advise_huge(v.as_ptr(), v.capacity());
    v.extend_from_slice(bytes);
    v
}

/// Lets the kernel drop the resident pages of compiled-in bytes that will not be read again
/// (a table copied by [`huge_copy`]): they stay mapped, and a read would fault them back in
/// from the binary, unchanged.
pub fn release_static(bytes: &'static [u8]) {
    #[cfg(target_os = "linux")]
    {
        let start = (bytes.as_ptr() as usize).div_ceil(4096) * 4096;
        let end = (bytes.as_ptr() as usize + bytes.len()) / 4096 * 4096;
        if end > start {
            // SAFETY: the range is whole pages of the binary's read-only mapping; for a
            // private file mapping MADV_DONTNEED drops the pages, and a later read maps the
            // same bytes from the file again.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_copy_holds_the_same_bytes() {
        for len in [0, 1, 4095, (2 << 20) + 17, 5 << 20] {
            let src: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            assert_eq!(huge_copy(&src), src, "{len} bytes");
        }
    }

    #[test]
    fn released_static_bytes_read_back_unchanged() {
        static BYTES: [u8; 3 * 4096 + 100] = {
            let mut b = [0u8; 3 * 4096 + 100];
            let mut i = 0;
            while i < b.len() {
                b[i] = (i % 253) as u8;
                i += 1;
            }
            b
        };
        let before = BYTES.to_vec();
        release_static(&BYTES);
        assert_eq!(BYTES.to_vec(), before);
    }
}
