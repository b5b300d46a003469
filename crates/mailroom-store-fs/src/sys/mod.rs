//! The store's system calls that only Linux has, each beside a portable stand-in, chosen once
//! per process: Linux's on Linux, the stand-ins anywhere else or when `MAILROOM_FS_POSIX=1`
//! forces them (the store conformance suite runs once each way; docs/RELIABILITY.md, "Other
//! systems", says what each stand-in keeps and loses).
//!
//! | Linux (`linux.rs`) | stand-in (`posix.rs`) |
//! |---|---|
//! | `renameat2(RENAME_NOREPLACE)`: a move that never replaces, one step | `linkat` then `unlinkat`: two steps; a crash between leaves the file under both names |
//! | `renameat2(RENAME_EXCHANGE)`: an atomic swap | none: `exchange` says it is unsupported, and an edit claims the old copy first (`mailbox::replace_unread`) |
//! | inotify on the watched directories | a poll of their identities, times and names every 100 ms |
//!
//! Everything else the store calls (`openat` with `O_NOFOLLOW`/`O_DIRECTORY`, `fstatat`,
//! `utimensat`, `linkat`, `renameat`, `fdatasync`, `flock`, `kill(pid, 0)`) is POSIX or present
//! on the BSDs and macOS alike.

#[cfg(any(target_os = "linux", target_os = "android"))]
mod linux;
mod posix;

use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::io::Errno;

use crate::error::FsError;
use crate::watch::Step;

/// Set to `1`, makes the store use the portable stand-ins even on Linux.
pub(crate) const FORCE_POSIX: &str = "MAILROOM_FS_POSIX";

/// Whether this process uses Linux's calls (read once).
pub(crate) fn linux() -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        static LINUX: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *LINUX.get_or_init(|| std::env::var_os(FORCE_POSIX).is_none_or(|v| v != "1"))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        false
    }
}

/// Moves `name` in `from` to `to_name` in `to` unless that exists: `Ok(false)` when it does,
/// and then `name` stays. Any other failure is the call's error (`NOENT` when `name` or the
/// directory `to` is gone).
pub(crate) fn rename_noreplace(
    from: BorrowedFd<'_>,
    name: &str,
    to: BorrowedFd<'_>,
    to_name: &str,
) -> Result<bool, Errno> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if linux() {
        match linux::rename_noreplace(from, name, to, to_name) {
            // A filesystem without the flag gets the stand-in.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            done => return done,
        }
    }
    posix::rename_noreplace(from, name, to, to_name)
}

/// Swaps `name` in `from` with `to_name` in `to` in one step: `Ok(false)` when either is
/// absent; `Err(NOSYS)` (or the filesystem's `INVAL`/`OPNOTSUPP`) where no such step exists,
/// which the caller must handle another way.
pub(crate) fn exchange(
    from: BorrowedFd<'_>,
    name: &str,
    to: BorrowedFd<'_>,
    to_name: &str,
) -> Result<bool, Errno> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if linux() {
        return linux::exchange(from, name, to, to_name);
    }
    let _ = (from, name, to, to_name);
    Err(Errno::NOSYS)
}

/// A watch for new entries in directories below a home: inotify's, or the poll's.
#[derive(Debug)]
pub(crate) enum Watcher {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    Inotify(linux::InotifyWatch),
    Poll(posix::PollWatch),
}

impl Watcher {
    /// A watch on nothing yet; `path` names it in messages.
    pub(crate) fn new(path: &Path) -> Result<Watcher, FsError> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if linux() {
            return Ok(Watcher::Inotify(linux::InotifyWatch::new(path)?));
        }
        let _ = path;
        Ok(Watcher::Poll(posix::PollWatch::new()))
    }

    /// Also watches `home/below…` for new entries, from now on, whether or not the home or
    /// any level below it exists yet. Nothing is created.
    pub(crate) fn below_home(&mut self, home: &Path, below: Vec<Step>) -> Result<(), FsError> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Watcher::Inotify(w) => w.below_home(home, below),
            Watcher::Poll(w) => w.below_home(home, below),
        }
    }
}

impl mailroom_core::store::Watch for Watcher {
    fn wait(&mut self, timeout: Option<std::time::Duration>) -> mailroom_core::Result<bool> {
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Watcher::Inotify(w) => w.wait(timeout),
            Watcher::Poll(w) => w.wait(timeout),
        }
    }
}
