//! The host's channel: stdin, and the frame writer on a duplicate of the original stdout.
//!
//! When an end is a pipe or a socket (what every host spawns the sidecar with), it is put in
//! non-blocking mode and polled by the runtime, so a frame is read and written by the task
//! that handles it. Tokio's own stdin and files do each read and write on a thread of the
//! blocking pool instead, which is a thread to wake for every frame in and every frame out.
//! A terminal, a file or `/dev/null` keeps that path: a terminal's non-blocking mode would be
//! left to the shell that shares it, and files cannot be polled.

use tokio::io::{AsyncRead, AsyncWrite};

/// What the guard reads the host's frames from.
pub type HostIn = Box<dyn AsyncRead + Unpin + Send>;
/// What the guard writes frames to the host with.
pub type HostOut = Box<dyn AsyncWrite + Unpin + Send>;

/// The host's input: fd 0, polled when it is a pipe or a socket.
pub fn host_in() -> HostIn {
    #[cfg(unix)]
    if let Some(fd) = unix::pollable_dup(0) {
        match tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(fd) {
            Ok(r) => return Box::new(r),
            Err(e) => tracing::debug!("stdin is read on the blocking pool: {e}"),
        }
    }
    Box::new(tokio::io::stdin())
}

/// Moves the frame channel off fd 1: frames go to a duplicate of the original stdout, and fd 1
/// is pointed at stderr, so that anything a dependency prints cannot corrupt the frame stream.
/// The duplicate is polled when it is a pipe or a socket.
#[cfg(unix)]
pub fn host_out() -> std::io::Result<HostOut> {
    let polled = unix::pollable_dup(1);
    let out: HostOut = match polled.map(tokio::net::unix::pipe::Sender::from_owned_fd_unchecked) {
        Some(Ok(s)) => Box::new(s),
        other => {
            if let Some(Err(e)) = other {
                tracing::debug!("frames are written on the blocking pool: {e}");
            }
            Box::new(tokio::fs::File::from_std(std::fs::File::from(unix::dup(1)?)))
        }
    };
    unix::stderr_over_stdout()?;
    Ok(out)
}

/// Elsewhere the frames go to stdout as it is.
#[cfg(not(unix))]
pub fn host_out() -> std::io::Result<HostOut> {
    Ok(Box::new(tokio::io::stdout()))
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{FromRawFd, OwnedFd};

    /// A duplicate of `fd`, owned, closed on exec (a process the sidecar starts must not
    /// hold the host's channel open after the sidecar exits).
    pub fn dup(fd: i32) -> std::io::Result<OwnedFd> {
        // SAFETY: F_DUPFD_CLOEXEC of one of the process's standard descriptors; the duplicate
        // is new and owned by the returned value alone.
        let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `d` is a descriptor this function just opened.
        Ok(unsafe { OwnedFd::from_raw_fd(d) })
    }

    /// Points fd 1 at stderr.
    pub fn stderr_over_stdout() -> std::io::Result<()> {
        // SAFETY: dup2 over the process's own stdout, whose frames now go to a duplicate.
        if unsafe { libc::dup2(2, 1) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The file type and identity of `fd`.
    fn stat(fd: i32) -> Option<libc::stat> {
        // SAFETY: an all-zero `stat` is a valid value to be filled; fstat only writes it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on a descriptor number: an invalid one is an error, not UB.
        (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st)
    }

    /// A duplicate of `fd` in non-blocking mode, when `fd` is a pipe or a socket that is not
    /// also stderr (non-blocking is a mode of the open file, which a `2>&1` shares: a log line
    /// written to a full pipe would then fail instead of waiting).
    pub fn pollable_dup(fd: i32) -> Option<OwnedFd> {
        let st = stat(fd)?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
            return None;
        }
        if stat(2).is_some_and(|e| (e.st_dev, e.st_ino) == (st.st_dev, st.st_ino)) {
            return None;
        }
        let owned = dup(fd).ok()?;
        use std::os::fd::AsRawFd;
        let raw = owned.as_raw_fd();
        // SAFETY: fcntl on the descriptor just duplicated and still owned here.
        let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return None;
        }
        Some(owned)
    }
}
