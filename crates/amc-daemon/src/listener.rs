//! The daemon's Unix socket: mode 0600 in a 0700 folder, one daemon at a time.
//!
//! A lock file held for the daemon's life decides who may serve. A socket file left by a
//! daemon that died is removed only when it is a socket and ours; anything else there
//! is refused.

use std::fs::{File, Permissions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

/// Why the daemon could not take its socket.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Another AMC (`amc serve` or the tray app) serves this data directory.
    #[error("another AMC is already running for {0} (quit it first, or use another --data-dir)")]
    AlreadyRunning(PathBuf),
    /// Something that is not our socket sits at the socket's path.
    #[error("{0} exists and is not AMC's socket; move it away and start again")]
    NotOurs(PathBuf),
    /// The path is longer than Unix sockets allow.
    #[error("the socket path {0} is too long for a Unix socket (keep the data directory path short)")]
    PathTooLong(PathBuf),
    /// Another I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ListenError + '_ {
    move |source| ListenError::Io { path: path.to_owned(), source }
}

/// A bound socket and the guard that keeps it ours.
#[derive(Debug)]
pub struct SocketListener {
    /// The listener.
    pub listener: UnixListener,
    /// Holds the lock; removes the socket file when dropped.
    pub guard: SocketGuard,
}

/// The daemon lock and the socket's path: while it lives, no other AMC can serve this
/// data directory; when it is dropped, the socket file goes.
#[derive(Debug)]
pub struct SocketGuard {
    /// The socket's path.
    pub path: PathBuf,
    _lock: File,
}

/// Takes the daemon lock in `run_dir` and binds `socket`.
pub fn bind_socket(run_dir: &Path, socket: &Path) -> Result<SocketListener, ListenError> {
    amc_core::files::create_dir_all(run_dir).map_err(io_err(run_dir))?;
    std::fs::set_permissions(run_dir, Permissions::from_mode(0o700)).map_err(io_err(run_dir))?;
    let lock_path = run_dir.join("amc.lock");
    let lock = amc_core::files::append(&lock_path).map_err(io_err(&lock_path))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(ListenError::AlreadyRunning(run_dir.to_owned())),
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
    }
    let my_uid = lock.metadata().map_err(io_err(&lock_path))?.uid();
    let run_meta = std::fs::metadata(run_dir).map_err(io_err(run_dir))?;
    if run_meta.uid() != my_uid {
        return Err(ListenError::NotOurs(run_dir.to_owned()));
    }
    if socket.as_os_str().len() >= 100 {
        return Err(ListenError::PathTooLong(socket.to_owned()));
    }
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() && meta.uid() == my_uid => {
            // We hold the lock, so no live daemon owns it: a stale socket.
            std::fs::remove_file(socket).map_err(io_err(socket))?;
        }
        Ok(_) => return Err(ListenError::NotOurs(socket.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(socket)(e)),
    }
    let listener = UnixListener::bind(socket).map_err(io_err(socket))?;
    std::fs::set_permissions(socket, Permissions::from_mode(0o600)).map_err(io_err(socket))?;
    Ok(SocketListener { listener, guard: SocketGuard { path: socket.to_owned(), _lock: lock } })
}

impl Drop for SocketGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
