//! Waiting for mail with inotify: a watch on the mailbox's `unread/` wakes on every message
//! published into it (a `link` is a create, a hand-delivered `mv` a move-in), and a watch on the
//! project's broadcast entries wakes on every broadcast. A directory that does not exist yet
//! (no broadcast was ever posted) is watched through its deepest existing ancestor, going down
//! one level each time a level is created, so nothing published after the watch started is
//! missed and nothing is created just to be watched.

use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::inotify;

use crate::dir::Dir;
use crate::error::FsError;

#[derive(Debug)]
pub struct FsWatch {
    fd: OwnedFd,
    path: PathBuf,
    /// A directory still to reach: the deepest existing ancestor (watched for creations) and
    /// the names below it.
    pending: Option<Pending>,
}

#[derive(Debug)]
struct Pending {
    dir: Dir,
    wd: i32,
    rest: Vec<String>,
}

/// The path a directory was opened at, for messages.
fn path_of(dir: &Dir) -> PathBuf {
    let child = dir.child_path("-");
    child.parent().map(Path::to_path_buf).unwrap_or(child)
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

impl FsWatch {
    /// Watches `dir` for new entries.
    pub fn new(dir: &Dir) -> Result<FsWatch, FsError> {
        let path = path_of(dir);
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| FsError::io("watch", &path, e.into()))?;
        add(&fd, dir)?;
        Ok(FsWatch {
            fd,
            path,
            pending: None,
        })
    }

    /// Also watches `base/below…` for new entries, from now on, whether or not it exists yet.
    pub fn also(&mut self, base: Dir, below: &[&str]) -> Result<(), FsError> {
        let wd = add(&self.fd, &base)?;
        self.pending = Some(Pending {
            dir: base,
            wd,
            rest: below.iter().map(|s| (*s).to_owned()).collect(),
        });
        self.descend()
    }

    /// Goes down to each level that exists now. Each level is watched before the next is
    /// looked for, so a level created in between wakes the watch.
    fn descend(&mut self) -> Result<(), FsError> {
        while let Some(p) = &mut self.pending {
            let Some(name) = p.rest.first() else {
                // Reached: its watch stays.
                self.pending = None;
                break;
            };
            let Some(child) = crate::names::open(&p.dir, name)? else {
                break;
            };
            let wd = add(&self.fd, &child)?;
            // The ancestor's creations no longer matter (a watch already gone is no error).
            let _ = inotify::remove_watch(&self.fd, p.wd);
            p.dir = child;
            p.wd = wd;
            p.rest.remove(0);
        }
        Ok(())
    }
}

impl mailroom_core::store::Watch for FsWatch {
    fn wait(&mut self, timeout: Option<Duration>) -> mailroom_core::Result<bool> {
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        let ts = timeout.map(|t| Timespec {
            tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let ready = loop {
            match poll(&mut fds, ts.as_ref()) {
                Ok(n) => break n > 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(FsError::io("wait on", &self.path, e.into()).into()),
            }
        };
        if ready {
            // Drain what is queued: the caller re-reads the mailbox, not the events.
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            while reader.next().is_ok() {}
            // A level of a directory still to reach may have been created.
            self.descend()?;
        }
        Ok(ready)
    }
}
