//! Waiting for mail with inotify: a watch on the mailbox's `unread/` wakes on every message
//! published into it (a `link` is a create, a hand-delivered `mv` a move-in).

use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::inotify;

use crate::error::FsError;

#[derive(Debug)]
pub struct FsWatch {
    fd: OwnedFd,
    path: std::path::PathBuf,
}

impl FsWatch {
    /// Watches `dir` (which must exist) for new entries.
    pub fn new(dir: &Path) -> Result<FsWatch, FsError> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| FsError::io("watch", dir, e.into()))?;
        inotify::add_watch(
            &fd,
            dir,
            inotify::WatchFlags::CREATE
                | inotify::WatchFlags::MOVED_TO
                | inotify::WatchFlags::ONLYDIR,
        )
        .map_err(|e| FsError::io("watch", dir, e.into()))?;
        Ok(FsWatch {
            fd,
            path: dir.to_owned(),
        })
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
        }
        Ok(ready)
    }
}
