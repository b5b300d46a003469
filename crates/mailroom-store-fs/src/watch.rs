//! Waiting for mail with inotify: a watch on the mailbox's `unread/` wakes on every message
//! published into it (a `link` is a create, a hand-delivered `mv` a move-in), and a watch on the
//! project's broadcast entries wakes on every broadcast. A directory that does not exist yet
//! (no mail or broadcast yet, not even a home) is watched through its deepest existing
//! ancestor, going down one level each time a level is created, so nothing published after the
//! watch started is missed and nothing is created just to be watched.

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

/// One level of a path to watch, and how it is matched.
#[derive(Clone, Debug)]
pub enum Step {
    /// A directory above the home: links are followed, as they are to reach the home.
    Outside(String),
    /// A name of the layout, or the home itself: exactly, never through a link.
    Exact(String),
    /// A project, handle or channel: in any case (`names`).
    Named(String),
}

impl Step {
    fn open(&self, dir: &Dir) -> Result<Option<Dir>, FsError> {
        match self {
            Step::Outside(name) => dir.open_following(name),
            Step::Exact(name) => dir.open(name),
            Step::Named(name) => crate::names::open(dir, name),
        }
    }
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
    /// A watch on nothing yet; `path` names it in messages.
    pub fn new(path: &Path) -> Result<FsWatch, FsError> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| FsError::io("watch", path, e.into()))?;
        Ok(FsWatch {
            fd,
            path: path.to_owned(),
            targets: Vec::new(),
            pending: Vec::new(),
            reached: Vec::new(),
        })
    }

    /// Also watches `home/below…` for new entries, from now on, whether or not the home or
    /// any level below it exists yet. Nothing is created.
    pub fn below_home(&mut self, home: &Path, below: Vec<Step>) -> Result<(), FsError> {
        self.targets.push((home.to_owned(), below));
        self.arm(self.targets.len() - 1)
    }

    /// Watches target `target` from its deepest existing level down.
    fn arm(&mut self, target: usize) -> Result<(), FsError> {
        let (home, below) = self.targets[target].clone();
        let home = home.as_path();
        // The deepest existing ancestor of the home, and the levels from it down to the home.
        let mut up = Vec::new();
        let mut at = home;
        let base = loop {
            let path = if at.as_os_str().is_empty() {
                Path::new(".")
            } else {
                at
            };
            match Dir::open_path_following(path) {
                Ok(d) => break d,
                Err(FsError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                        return Err(FsError::io("watch", home, source));
                    };
                    up.push(name.to_string_lossy().into_owned());
                    at = parent;
                }
                Err(e) => return Err(e),
            }
        };
        // The home itself is opened as the store opens it, never through a link.
        let mut rest: Vec<Step> = up.iter().rev().map(|n| Step::Outside(n.clone())).collect();
        if let Some(Step::Outside(last)) = rest.pop() {
            rest.push(Step::Exact(last));
        }
        rest.extend(below);
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
