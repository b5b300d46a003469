//! Linux's calls: `renameat2` with `RENAME_NOREPLACE` and `RENAME_EXCHANGE`, and the inotify
//! watcher.

use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{self as rfs, RenameFlags, inotify};
use rustix::io::Errno;

use crate::dir::Dir;
use crate::error::FsError;
use crate::watch::{Step, deepest_ancestor, path_of};

/// `renameat2(RENAME_NOREPLACE)`: one step where a link and an unlink take two.
pub(super) fn rename_noreplace(
    from: BorrowedFd<'_>,
    name: &str,
    to: BorrowedFd<'_>,
    to_name: &str,
) -> Result<bool, Errno> {
    match rfs::renameat_with(from, name, to, to_name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `renameat2(RENAME_EXCHANGE)`.
pub(super) fn exchange(
    from: BorrowedFd<'_>,
    name: &str,
    to: BorrowedFd<'_>,
    to_name: &str,
) -> Result<bool, Errno> {
    match rfs::renameat_with(from, name, to, to_name, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waiting with inotify: a watch on each directory reached, and on the deepest existing
/// ancestor of each one not reached yet.
#[derive(Debug)]
pub(crate) struct InotifyWatch {
    fd: OwnedFd,
    path: PathBuf,
    /// What was asked to be watched: the home and the levels below it.
    targets: Vec<(PathBuf, Vec<Step>)>,
    /// Directories still to reach: each one's deepest existing ancestor (watched for
    /// creations) and the names below it.
    pending: Vec<Pending>,
    /// The watches of directories reached, with the target each stands for. They stay until
    /// the directory is removed (compaction replaces an empty `unread/`): then the target
    /// is watched again from its deepest existing level.
    reached: Vec<(i32, usize)>,
}

#[derive(Debug)]
struct Pending {
    dir: Dir,
    wd: i32,
    rest: Vec<Step>,
    target: usize,
}

fn add(fd: &OwnedFd, dir: &Dir) -> Result<i32, FsError> {
    // inotify takes a path: the directory's own descriptor, so no link is followed.
    let proc = PathBuf::from(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&dir.as_fd())
    ));
    inotify::add_watch(
        fd,
        &proc,
        inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO | inotify::WatchFlags::ONLYDIR,
    )
    .map_err(|e| FsError::io("watch", path_of(dir), e.into()))
}

impl InotifyWatch {
    /// A watch on nothing yet; `path` names it in messages.
    pub(crate) fn new(path: &Path) -> Result<InotifyWatch, FsError> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| FsError::io("watch", path, e.into()))?;
        Ok(InotifyWatch {
            fd,
            path: path.to_owned(),
            targets: Vec::new(),
            pending: Vec::new(),
            reached: Vec::new(),
        })
    }

    /// Also watches `home/below…` for new entries (see `sys::Watcher::below_home`).
    pub(crate) fn below_home(&mut self, home: &Path, below: Vec<Step>) -> Result<(), FsError> {
        self.targets.push((home.to_owned(), below));
        self.arm(self.targets.len() - 1)
    }

    /// Watches target `target` from its deepest existing level down.
    fn arm(&mut self, target: usize) -> Result<(), FsError> {
        let (home, below) = self.targets[target].clone();
        let (base, rest) = deepest_ancestor(&home, below)?;
        let wd = add(&self.fd, &base)?;
        self.pending.push(Pending {
            dir: base,
            wd,
            rest,
            target,
        });
        self.descend()
    }

    /// Whether a watch is still needed.
    fn uses(&self, wd: i32) -> bool {
        self.reached.iter().any(|(w, _)| *w == wd) || self.pending.iter().any(|p| p.wd == wd)
    }

    /// Goes down to each level that exists now. Each level is watched before the next is
    /// looked for, so a level created in between wakes the watch.
    fn descend(&mut self) -> Result<(), FsError> {
        let mut i = 0;
        while let Some(p) = self.pending.get_mut(i) {
            let Some(step) = p.rest.first() else {
                // Reached: its watch stays.
                let p = self.pending.remove(i);
                self.reached.push((p.wd, p.target));
                continue;
            };
            let Some(child) = step.open(&p.dir)? else {
                i += 1;
                continue;
            };
            let wd = add(&self.fd, &child)?;
            let old = std::mem::replace(&mut p.wd, wd);
            p.dir = child;
            p.rest.remove(0);
            // The ancestor's creations no longer matter, unless another path still waits
            // there (a watch already gone is no error).
            if !self.uses(old) {
                let _ = inotify::remove_watch(&self.fd, old);
            }
        }
        Ok(())
    }

    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> mailroom_core::Result<bool> {
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        let ts = timeout.map(|t| Timespec {
            tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let ready = loop {
            match poll(&mut fds, ts.as_ref()) {
                Ok(n) => break n > 0,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(FsError::io("wait on", &self.path, e.into()).into()),
            }
        };
        if ready {
            // Drain what is queued: the caller re-reads the mailbox, not the events.
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            let mut removed = Vec::new();
            while let Ok(event) = reader.next() {
                if event.events().contains(inotify::ReadFlags::IGNORED) {
                    removed.push(event.wd());
                }
            }
            // A reached directory was removed (compaction replaced it): watch its target
            // again from what exists now. The caller looks at the mailbox after this wake,
            // so nothing published in between is missed.
            for wd in removed {
                while let Some(at) = self.reached.iter().position(|(w, _)| *w == wd) {
                    let (_, target) = self.reached.remove(at);
                    self.arm(target)?;
                }
            }
            // A level of a directory still to reach may have been created.
            self.descend()?;
        }
        Ok(ready)
    }
}
