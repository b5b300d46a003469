//! Small files a long-lived process reads again and again (a project file, roster entries),
//! kept decoded with the status they had when read, so that reading one that has not changed
//! costs one `stat` instead of an open, a `stat`, a read, a close and a parse.
//!
//! Invariant: a kept value is served only while one `stat` of its name (never following a
//! link) shows the same device, inode, size, modification and status-change times as the
//! file it was read from. mailroom replaces these files by rename (a new inode, a new status
//! time), and an edit in place by hand changes the times; a file changed twice within one tick
//! of the file system's clock could keep them, so a file whose status changed less than
//! [`SETTLED`] before it was read is not kept (git's "racily clean" rule). Nothing kept ever
//! answers "does not exist": a missing file is read, and reads as missing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs as rfs;

use crate::dir::{Dir, Limit};
use crate::error::FsError;

/// How long before its read a file's status must have last changed for its content to be
/// kept: well beyond any file system's timestamp granularity.
const SETTLED: Duration = Duration::from_secs(2);

/// The most files kept (beyond it the store starts over): a process that reads many projects
/// holds a bounded amount.
const MAX_KEPT: usize = 256;

/// What identifies a file's present content without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, u64),
    ctime: (i64, u64),
}

impl Fingerprint {
    fn of(st: &rfs::Stat) -> Option<Fingerprint> {
        if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
            return None;
        }
        Some(Fingerprint {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        })
    }

    /// Whether the status last changed at least `settled` before `now`.
    fn settled_at(&self, now: SystemTime, settled: Duration) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let changed = u64::try_from(self.ctime.0)
            .map(|s| Duration::from_secs(s) + Duration::from_nanos(self.ctime.1));
        changed.is_ok_and(|changed| changed + settled <= now)
    }
}

/// The small files kept decoded (as `T`), by path, with their fingerprints.
#[derive(Debug)]
pub(crate) struct Unchanged<T> {
    files: Mutex<HashMap<PathBuf, (Fingerprint, T)>>,
    settled: Duration,
}

impl<T: Clone> Default for Unchanged<T> {
    fn default() -> Unchanged<T> {
        Unchanged::settled_after(SETTLED)
    }
}

impl<T: Clone> Unchanged<T> {
    /// Keeps files whose status last changed at least `settled` before their read.
    pub(crate) fn settled_after(settled: Duration) -> Unchanged<T> {
        Unchanged {
            files: Mutex::new(HashMap::new()),
            settled,
        }
    }

    /// `name` in `dir` read as [`Dir::read`] reads it, then `decode`d: the value kept when the
    /// file is unchanged since it was read, else read and decoded now (and kept when settled).
    /// `decode` must depend on nothing but the bytes and the file's name and status.
    pub(crate) fn read(
        &self,
        dir: &Dir,
        name: &str,
        limit: Limit,
        decode: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>, FsError> {
        let path = dir.child_path(name);
        let kept = self.files.lock().ok().and_then(|files| {
            files
                .get(&path)
                .map(|(fingerprint, value)| (*fingerprint, value.clone()))
        });
        if let Some((fingerprint, value)) = kept {
            let now = dir.stat(name)?.as_ref().and_then(Fingerprint::of);
            let within = usize::try_from(fingerprint.size).is_ok_and(|n| n <= limit.bytes);
            if now == Some(fingerprint) && within {
                return Ok(Some(value));
            }
        }
        let Some((bytes, st)) = dir.read_with_stat(name, limit)? else {
            if let Ok(mut files) = self.files.lock() {
                files.remove(&path);
            }
            return Ok(None);
        };
        let value = decode(&bytes);
        if let Ok(mut files) = self.files.lock() {
            match Fingerprint::of(&st) {
                Some(f) if f.settled_at(SystemTime::now(), self.settled) => {
                    if files.len() >= MAX_KEPT {
                        files.clear();
                    }
                    files.insert(path, (f, value.clone()));
                }
                _ => {
                    files.remove(&path);
                }
            }
        }
        Ok(Some(value))
    }

    /// How many files are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.files.lock().map(|f| f.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Dir) {
        let home = tempfile::tempdir().expect("temp dir");
        let dir = Dir::open_root(home.path()).expect("open");
        (home, dir)
    }

    fn read(u: &Unchanged<String>, dir: &Dir, name: &str) -> Option<String> {
        u.read(dir, name, Limit::small("a test file"), |b| {
            String::from_utf8_lossy(b).into_owned()
        })
        .expect("read")
    }

    #[test]
    fn a_file_replaced_by_rename_or_edited_in_place_reads_new() {
        let (home, dir) = setup();
        let path = home.path().join("b.md");
        let u = Unchanged::settled_after(Duration::ZERO);
        std::fs::write(&path, "status: active\n").expect("write");
        assert_eq!(read(&u, &dir, "b.md").as_deref(), Some("status: active\n"));
        assert_eq!(u.len(), 1);
        // Another process replaces it the way mailroom does: a new file moved over it.
        std::fs::write(home.path().join("b.tmp"), "status: inactive\n").expect("write");
        std::fs::rename(home.path().join("b.tmp"), &path).expect("rename");
        assert_eq!(
            read(&u, &dir, "b.md").as_deref(),
            Some("status: inactive\n")
        );
        // A hand edit in place, same inode.
        std::fs::write(&path, "status: active, edited by hand\n").expect("write");
        assert_eq!(
            read(&u, &dir, "b.md").as_deref(),
            Some("status: active, edited by hand\n")
        );
        std::fs::remove_file(&path).expect("remove");
        assert_eq!(read(&u, &dir, "b.md"), None);
        assert_eq!(u.len(), 0);
    }

    #[test]
    fn a_file_changed_just_before_its_read_is_not_kept() {
        let (home, dir) = setup();
        std::fs::write(home.path().join("p.md"), "name: p\n").expect("write");
        let u = Unchanged::default();
        assert_eq!(read(&u, &dir, "p.md").as_deref(), Some("name: p\n"));
        assert_eq!(u.len(), 0);
    }
}
