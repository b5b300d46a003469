//! The portable stand-ins: a move that never replaces as a link and an unlink, and a watcher
//! that polls.

use std::hash::{Hash, Hasher};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, AtFlags};
use rustix::io::Errno;

use crate::error::FsError;
use crate::watch::{Step, deepest_ancestor};

/// `linkat` then `unlinkat`: the new name exists only if it did not before (`link` never
/// replaces), then the old one goes. A crash between the two leaves the file under both
/// names; the store only moves this way out of `tmp/`, where `doctor` clears what is left.
pub(super) fn rename_noreplace(
    from: BorrowedFd<'_>,
    name: &str,
    to: BorrowedFd<'_>,
    to_name: &str,
) -> Result<bool, Errno> {
    match rfs::linkat(from, name, to, to_name, AtFlags::empty()) {
        Ok(()) => {}
        Err(Errno::EXIST) => return Ok(false),
        Err(e) => return Err(e),
    }
    match rfs::unlinkat(from, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(e) => Err(e),
    }
}

/// How often the poll looks.
const EVERY: Duration = Duration::from_millis(100);

/// A directory modified less than this long ago may be modified again with the same time (a
/// filesystem's clock ticks coarsely): its names are compared too.
const UNSETTLED_NS: i128 = 2_000_000_000;

/// Waiting by looking: every 100 ms, each watched path is walked as far as it exists, and
/// what was found (each level's device and inode; for a path reached, its directory's
/// modification time and, while that is recent, its names) compared with the last look. Any
/// difference wakes the caller, who reads the mailbox again; a removal wakes it too, which
/// `Watch` allows.
#[derive(Debug)]
pub(crate) struct PollWatch {
    /// What was asked to be watched, and what it looked like at the last look.
    targets: Vec<(PathBuf, Vec<Step>, Look)>,
}

#[derive(Debug, PartialEq, Eq)]
struct Look {
    /// Device and inode of each level that exists, from the deepest existing ancestor of the
    /// home down.
    levels: Vec<(u64, u64)>,
    /// For a path reached: its directory's modification time, and a hash of its names while
    /// that time is recent.
    reached: Option<(i128, Option<u64>)>,
}

fn look(home: &Path, below: &[Step]) -> Result<Look, FsError> {
    let (mut dir, rest) = deepest_ancestor(home, below.to_vec())?;
    let mut levels = vec![dir.identity()?];
    let mut missing = rest.len();
    for step in &rest {
        let Some(child) = step.open(&dir)? else {
            break;
        };
        dir = child;
        levels.push(dir.identity()?);
        missing -= 1;
    }
    let reached = if missing == 0 {
        let modified = dir.modified()?;
        let now = jiff::Timestamp::now().as_nanosecond();
        let names = if now - modified < UNSETTLED_NS {
            let mut names = dir.list()?;
            names.sort_unstable();
            let mut hasher = std::hash::DefaultHasher::new();
            names.hash(&mut hasher);
            Some(hasher.finish())
        } else {
            None
        };
        Some((modified, names))
    } else {
        None
    };
    Ok(Look { levels, reached })
}

impl PollWatch {
    /// A watch on nothing yet.
    pub(crate) fn new() -> PollWatch {
        PollWatch {
            targets: Vec::new(),
        }
    }

    /// Also watches `home/below…` for new entries (see `sys::Watcher::below_home`): what is
    /// there now is the first look.
    pub(crate) fn below_home(&mut self, home: &Path, below: Vec<Step>) -> Result<(), FsError> {
        let first = look(home, &below)?;
        self.targets.push((home.to_owned(), below, first));
        Ok(())
    }

    pub(crate) fn wait(&mut self, timeout: Option<Duration>) -> mailroom_core::Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let mut changed = false;
            for (home, below, last) in &mut self.targets {
                let now = look(home, below)?;
                if now != *last {
                    *last = now;
                    changed = true;
                }
            }
            if changed {
                return Ok(true);
            }
            let nap = match deadline {
                None => EVERY,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(EVERY),
                    _ => return Ok(false),
                },
            };
            std::thread::sleep(nap);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::time::Duration;

    use super::*;
    use crate::watch::Step::Exact;

    fn open(path: &Path) -> std::fs::File {
        std::fs::File::open(path).expect("open a directory")
    }

    #[test]
    fn the_stand_in_rename_never_replaces_and_moves_otherwise() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).expect("mkdir a");
        std::fs::create_dir(&b).expect("mkdir b");
        std::fs::write(a.join("new"), "new").expect("write");
        std::fs::write(b.join("taken"), "old").expect("write");
        let (fa, fb) = (open(&a), open(&b));

        assert_eq!(
            rename_noreplace(fa.as_fd(), "new", fb.as_fd(), "taken"),
            Ok(false)
        );
        assert_eq!(
            std::fs::read_to_string(b.join("taken")).ok().as_deref(),
            Some("old")
        );
        assert!(a.join("new").exists(), "a refused move leaves the file");

        assert_eq!(
            rename_noreplace(fa.as_fd(), "new", fb.as_fd(), "free"),
            Ok(true)
        );
        assert_eq!(
            std::fs::read_to_string(b.join("free")).ok().as_deref(),
            Some("new")
        );
        assert!(!a.join("new").exists(), "a move leaves no second name");

        assert_eq!(
            rename_noreplace(fa.as_fd(), "gone", fb.as_fd(), "other"),
            Err(Errno::NOENT)
        );
    }

    #[test]
    fn the_poll_wakes_for_what_arrives_after_it_started_and_only_then() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let home = dir.path().join("home");
        let mut watch = PollWatch::new();
        // Nothing exists yet below the temporary directory: watched through it.
        watch
            .below_home(&home, vec![Exact("unread".into())])
            .expect("watch");
        assert!(!watch.wait(Some(Duration::from_millis(150))).expect("wait"));

        std::fs::create_dir_all(home.join("unread")).expect("mkdir");
        assert!(watch.wait(Some(Duration::from_secs(10))).expect("wait"));
        assert!(!watch.wait(Some(Duration::from_millis(150))).expect("wait"));

        // Two files in quick succession, each after a wake: the second is seen even when the
        // filesystem's clock gives both the same time.
        std::fs::write(home.join("unread/1.md"), "1").expect("write");
        assert!(watch.wait(Some(Duration::from_secs(10))).expect("wait"));
        std::fs::write(home.join("unread/2.md"), "2").expect("write");
        assert!(watch.wait(Some(Duration::from_secs(10))).expect("wait"));

        // A replaced directory (compaction) is followed to the new one.
        std::fs::remove_file(home.join("unread/1.md")).expect("rm");
        std::fs::remove_file(home.join("unread/2.md")).expect("rm");
        std::fs::remove_dir(home.join("unread")).expect("rmdir");
        std::fs::create_dir(home.join("unread")).expect("mkdir");
        assert!(watch.wait(Some(Duration::from_secs(10))).expect("wait"));
        std::fs::write(home.join("unread/3.md"), "3").expect("write");
        assert!(watch.wait(Some(Duration::from_secs(10))).expect("wait"));
    }
}
