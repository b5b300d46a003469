//! Directory handles that never follow a symlink, and the atomic-write discipline on top of
//! them.
//!
//! Every path below the home is reached with `openat(…, O_NOFOLLOW)` one component at a time,
//! so a symlink planted anywhere in the tree is refused instead of followed. Written by hand
//! over `rustix` because no crate offers both the no-follow walk and `renameat2`'s exchange
//! (which, with the other Linux-only calls, `sys` keeps behind portable stand-ins).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::error::FsError;

/// Permissions of every directory mailroom creates.
pub const DIR_MODE: u32 = 0o700;
/// Permissions of every file mailroom creates.
pub const FILE_MODE: u32 = 0o600;

/// An open directory and the path it was opened at (for error messages). Clones share one
/// descriptor.
#[derive(Clone, Debug)]
pub struct Dir {
    fd: Arc<OwnedFd>,
    path: PathBuf,
}

/// A directory's exclusive lock, held until dropped (see `Dir::lock`).
#[derive(Debug)]
pub struct DirLock {
    _fd: Option<OwnedFd>,
}

impl DirLock {
    /// Whether the lock is held: `false` where the file system cannot lock a directory.
    pub fn held(&self) -> bool {
        self._fd.is_some()
    }
}

/// What `Dir::entry` found.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub is_dir: bool,
    pub is_file: bool,
    pub mode: u32,
    pub ctime: i64,
}

/// Whether a write must reach the disk before it is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync the file before publishing it and the directory after.
    Durable,
    /// Best effort (outbox traces, the pending cache, the injection mark): a crash may lose
    /// it, never tear it.
    Lazy,
}

/// A `stat` time as nanoseconds since the epoch.
fn nanoseconds(seconds: impl Into<i128>, nanos: impl Into<i128>) -> i128 {
    seconds.into() * 1_000_000_000 + nanos.into()
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// A file opened for reading: never through a link, never blocking on a planted FIFO, never
/// becoming the controlling terminal.
fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

fn io_err(e: Errno) -> io::Error {
    io::Error::from(e)
}

impl Dir {
    /// Opens the home directory itself (the last component must not be a symlink).
    pub fn open_root(path: &Path) -> Result<Dir, FsError> {
        let fd = rfs::open(path, dir_flags(), Mode::empty())
            .map_err(|e| FsError::io("open directory", path, no_follow_hint(e)))?;
        Ok(Dir {
            fd: Arc::new(fd),
            path: path.to_owned(),
        })
    }

    /// Opens a directory outside the home (an ancestor of it), following links as the path
    /// to the home does.
    pub fn open_path_following(path: &Path) -> Result<Dir, FsError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(path, flags, Mode::empty())
            .map_err(|e| FsError::io("open directory", path, io_err(e)))?;
        Ok(Dir {
            fd: Arc::new(fd),
            path: path.to_owned(),
        })
    }

    /// Opens a subdirectory outside the home, following a link; `Ok(None)` when it does not
    /// exist.
    pub fn open_following(&self, name: &str) -> Result<Option<Dir>, FsError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match rfs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(Dir {
                fd: Arc::new(fd),
                path: self.child_path(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(FsError::io(
                "open directory",
                self.child_path(name),
                io_err(e),
            )),
        }
    }

    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&*self.fd)
    }

    /// The device and inode of this directory.
    pub fn identity(&self) -> Result<(u64, u64), FsError> {
        let st = rfs::fstat(&*self.fd).map_err(|e| FsError::io("stat", &self.path, io_err(e)))?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Whether the path this directory was opened at names it still (`identity` is its
    /// own): one lookup of the whole path instead of a walk of it. A directory renamed or
    /// removed since, or a symbolic link put in its place, makes it false.
    pub fn still_at_its_path(&self, identity: (u64, u64)) -> bool {
        matches!(
            rfs::statat(rfs::CWD, &self.path, AtFlags::SYMLINK_NOFOLLOW),
            Ok(st) if (st.st_dev, st.st_ino) == identity
        )
    }

    /// The last component of the path this directory was opened at.
    pub fn file_name(&self) -> Option<&str> {
        self.path.file_name().and_then(|n| n.to_str())
    }

    pub fn child_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens a subdirectory; `Ok(None)` when it does not exist.
    pub fn open(&self, name: &str) -> Result<Option<Dir>, FsError> {
        match rfs::openat(&self.fd, name, dir_flags(), Mode::empty()) {
            Ok(fd) => Ok(Some(Dir {
                fd: Arc::new(fd),
                path: self.child_path(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(FsError::io(
                "open directory",
                self.child_path(name),
                no_follow_hint(e),
            )),
        }
    }

    /// Opens a subdirectory, creating it (0700, durably linked into this one) when absent.
    pub fn open_or_create(&self, name: &str) -> Result<Dir, FsError> {
        if let Some(d) = self.open(name)? {
            return Ok(d);
        }
        match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) => self.sync()?,
            Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(FsError::io(
                    "create directory",
                    self.child_path(name),
                    io_err(e),
                ));
            }
        }
        self.open(name)?.ok_or_else(|| {
            FsError::io(
                "open directory",
                self.child_path(name),
                io::Error::from(io::ErrorKind::NotFound),
            )
        })
    }

    /// Reads a whole regular file of at most `limit` bytes; `Ok(None)` when it does not exist.
    pub fn read(&self, name: &str, limit: Limit) -> Result<Option<Vec<u8>>, FsError> {
        Ok(self.read_with_ino(name, limit)?.map(|(bytes, _)| bytes))
    }

    /// Reads a whole regular file of at most `limit` bytes, with the inode number of the file
    /// read; `Ok(None)` when it does not exist.
    ///
    /// The open neither blocks nor follows a link (`O_NONBLOCK | O_NOFOLLOW`) and the type is
    /// checked on the opened descriptor, so a FIFO, device or socket planted in the home is an
    /// error naming its path, never a hang; a file over `limit` is an error before it is read,
    /// and one that grows past it while being read is an error too, so no read is unbounded.
    pub fn read_with_ino(
        &self,
        name: &str,
        limit: Limit,
    ) -> Result<Option<(Vec<u8>, u64)>, FsError> {
        Ok(self
            .read_with_stat(name, limit)?
            .map(|(bytes, st)| (bytes, st.st_ino)))
    }

    /// [`Dir::read_with_ino`], with the whole status of the file read (taken on the opened
    /// descriptor, before the read).
    pub fn read_with_stat(
        &self,
        name: &str,
        limit: Limit,
    ) -> Result<Option<(Vec<u8>, rfs::Stat)>, FsError> {
        let fd = match rfs::openat(&self.fd, name, read_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => {
                return Err(FsError::io(
                    "open",
                    self.child_path(name),
                    no_follow_hint(e),
                ));
            }
        };
        let st =
            rfs::fstat(&fd).map_err(|e| FsError::io("stat", self.child_path(name), io_err(e)))?;
        let kind = rfs::FileType::from_raw_mode(st.st_mode);
        if kind != rfs::FileType::RegularFile {
            return Err(FsError::io(
                "read",
                self.child_path(name),
                io::Error::other(format!(
                    "it is {}, not a regular file; mailroom reads only regular files in its home",
                    describe(kind)
                )),
            ));
        }
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size > limit.bytes as u64 {
            return Err(limit.exceeded(self.child_path(name), size));
        }
        // One read for the whole file: the buffer has room for one byte more than its size,
        // so a short read is its end (a regular file reads short only at its end).
        let mut buf = vec![0u8; size as usize + 1];
        let mut filled = 0;
        let mut file = File::from(fd);
        loop {
            match file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    if filled < buf.len() {
                        break;
                    }
                    // It grew since the fstat: read on, never past the limit.
                    if filled > limit.bytes {
                        return Err(limit.exceeded(self.child_path(name), filled as u64));
                    }
                    buf.resize((filled * 2).clamp(filled + 1, limit.bytes + 1), 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FsError::io("read", self.child_path(name), e)),
            }
        }
        buf.truncate(filled);
        Ok(Some((buf, st)))
    }

    /// Opens a regular file for reading at offsets (never through a link, never blocking on a
    /// FIFO); `Ok(None)` when it is absent or is not a regular file.
    pub fn open_regular(&self, name: &str) -> Result<Option<File>, FsError> {
        let fd = match rfs::openat(&self.fd, name, read_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(FsError::io("open", self.child_path(name), io_err(e))),
        };
        let st =
            rfs::fstat(&fd).map_err(|e| FsError::io("stat", self.child_path(name), io_err(e)))?;
        if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
            return Ok(None);
        }
        Ok(Some(File::from(fd)))
    }

    /// What identifies the present content of a directory entry: its inode number and its
    /// status-change time in nanoseconds (any entry added, removed or renamed in a directory
    /// sets it, and no user can set it back). `Ok(None)` when absent.
    pub fn child_identity(&self, name: &str) -> Result<Option<(u64, i128)>, FsError> {
        Ok(self
            .stat(name)?
            .map(|st| (st.st_ino, nanoseconds(st.st_ctime, st.st_ctime_nsec))))
    }

    /// Whether an entry exists (without following a symlink).
    pub fn exists(&self, name: &str) -> Result<bool, FsError> {
        Ok(self.stat(name)?.is_some())
    }

    /// An entry's status, without following a symlink; `Ok(None)` when absent.
    pub(crate) fn stat(&self, name: &str) -> Result<Option<rfs::Stat>, FsError> {
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(FsError::io("stat", self.child_path(name), io_err(e))),
        }
    }

    /// The status-change time of an entry, in nanoseconds since the epoch (a rename sets
    /// it: when it got here).
    pub fn ctime(&self, name: &str) -> Result<Option<i128>, FsError> {
        Ok(self
            .stat(name)?
            .map(|st| nanoseconds(st.st_ctime, st.st_ctime_nsec)))
    }

    /// What an entry is, without following a symlink; `Ok(None)` when absent.
    pub fn entry(&self, name: &str) -> Result<Option<Entry>, FsError> {
        Ok(self.stat(name)?.map(|st| {
            let kind = rfs::FileType::from_raw_mode(st.st_mode);
            Entry {
                is_dir: kind == rfs::FileType::Directory,
                is_file: kind == rfs::FileType::RegularFile,
                mode: st.st_mode & 0o7777,
                ctime: st.st_ctime,
            }
        }))
    }

    /// Sets an entry's permission bits (never through a symlink).
    pub fn chmod(&self, name: &str, mode: u32) -> Result<(), FsError> {
        let fd = rfs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| FsError::io("open", self.child_path(name), no_follow_hint(e)))?;
        rfs::fchmod(&fd, Mode::from_raw_mode(mode))
            .map_err(|e| FsError::io("chmod", self.child_path(name), io_err(e)))
    }

    /// Stamps an entry's modification time with the precise current time (the kernel's own
    /// change time is too coarse to order two moves made within a few milliseconds).
    pub fn stamp(&self, name: &str) -> Result<(), FsError> {
        self.set_mtime(name, jiff::Timestamp::now()).map(|_| ())
    }

    /// Sets an entry's modification time (never through a symlink): `Ok(false)` when there is
    /// no such entry.
    pub fn set_mtime(&self, name: &str, at: jiff::Timestamp) -> Result<bool, FsError> {
        // Whole seconds rounded down and a non-negative remainder, as the kernel wants them
        // (a time before 1970 has a negative sub-second part in jiff).
        let ns = at.as_nanosecond();
        let ts = rfs::Timespec {
            tv_sec: i64::try_from(ns.div_euclid(1_000_000_000)).unwrap_or(i64::MIN),
            tv_nsec: i64::try_from(ns.rem_euclid(1_000_000_000)).unwrap_or(0),
        };
        let times = rfs::Timestamps {
            last_access: rfs::Timespec {
                tv_sec: 0,
                tv_nsec: rfs::UTIME_OMIT,
            },
            last_modification: ts,
        };
        match rfs::utimensat(&self.fd, name, &times, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(FsError::io(
                "set the time of",
                self.child_path(name),
                io_err(e),
            )),
        }
    }

    /// The modification time of an entry in nanoseconds since the epoch.
    pub fn mtime(&self, name: &str) -> Result<Option<i128>, FsError> {
        Ok(self
            .stat(name)?
            .map(|st| nanoseconds(st.st_mtime, st.st_mtime_nsec)))
    }

    /// This directory's own modification time, in nanoseconds since the epoch (an entry
    /// added, removed or renamed in it sets it).
    pub fn modified(&self) -> Result<i128, FsError> {
        rfs::fstat(&self.fd)
            .map(|st| nanoseconds(st.st_mtime, st.st_mtime_nsec))
            .map_err(|e| FsError::io("stat", &self.path, io_err(e)))
    }

    /// The size this directory takes, in bytes (`st_size`): on ext4 it grows with the most
    /// entries it ever held and never shrinks, and every listing reads all of it.
    pub fn size(&self) -> Result<u64, FsError> {
        rfs::fstat(&self.fd)
            .map(|st| u64::try_from(st.st_size).unwrap_or(0))
            .map_err(|e| FsError::io("stat", &self.path, io_err(e)))
    }

    /// Removes the empty subdirectory `name`: `Ok(false)` when it is absent or not empty. The
    /// kernel checks emptiness and removes in one step, so an entry renamed in at the same
    /// moment either stops the removal or is refused (`ENOENT`) to its writer.
    pub fn remove_empty_dir(&self, name: &str) -> Result<bool, FsError> {
        match rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(e) => Err(FsError::io("remove", self.child_path(name), io_err(e))),
        }
    }

    /// Names and inode numbers of the entries, unsorted, without `.` and `..`.
    pub fn list_with_ino(&self) -> Result<Vec<(String, u64)>, FsError> {
        let dup = rfs::openat(&self.fd, ".", dir_flags(), Mode::empty())
            .map_err(|e| FsError::io("open directory", &self.path, io_err(e)))?;
        let dir = rfs::Dir::new(dup).map_err(|e| FsError::io("list", &self.path, io_err(e)))?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| FsError::io("list", &self.path, io_err(e)))?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            // Checked as UTF-8 first: the lossy conversion's own walk costs more, and every
            // name a listing keeps is valid.
            let name = match std::str::from_utf8(bytes) {
                Ok(name) => name.to_owned(),
                Err(_) => String::from_utf8_lossy(bytes).into_owned(),
            };
            names.push((name, entry.ino()));
        }
        Ok(names)
    }

    /// Takes this directory's exclusive lock (`flock`), blocking until it is free; it is
    /// released when the guard drops, or when the process dies. The lock is taken on a
    /// descriptor of its own, so two handles of one directory in one process exclude each
    /// other too. A filesystem that cannot lock a directory (NFS emulates `flock` with
    /// write locks, which a directory cannot take) gives no lock rather than an error.
    pub fn lock(&self) -> Result<DirLock, FsError> {
        let fd = rfs::openat(&self.fd, ".", dir_flags(), Mode::empty())
            .map_err(|e| FsError::io("open directory", &self.path, io_err(e)))?;
        loop {
            match rfs::flock(&fd, rfs::FlockOperation::LockExclusive) {
                Ok(()) => return Ok(DirLock { _fd: Some(fd) }),
                Err(Errno::INTR) => continue,
                Err(Errno::BADF | Errno::NOLCK | Errno::OPNOTSUPP) => {
                    return Ok(DirLock { _fd: None });
                }
                Err(e) => return Err(FsError::io("lock", &self.path, io_err(e))),
            }
        }
    }

    /// Names of the entries, unsorted, without `.` and `..`.
    pub fn list(&self) -> Result<Vec<String>, FsError> {
        Ok(self.list_with_ino()?.into_iter().map(|(n, _)| n).collect())
    }

    /// fsyncs the directory, making its entries durable.
    pub fn sync(&self) -> Result<(), FsError> {
        rfs::fsync(&self.fd).map_err(|e| FsError::io("fsync", &self.path, io_err(e)))
    }

    /// Writes `bytes` to a new temporary file in this directory (which must be a `tmp`
    /// directory on the same filesystem as where it will be published) and returns its name.
    pub fn write_temp(&self, bytes: &[u8], durability: Durability) -> Result<String, FsError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // The pid, asked of the kernel once: mailroom never forks without exec, so no process
        // runs this code under its parent's pid.
        static PID: OnceLock<u32> = OnceLock::new();
        // pid first: `doctor` tells an orphan from a file still being written by its pid.
        let name = format!(
            "{}.{}.{}.tmp",
            PID.get_or_init(std::process::id),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            jiff::Timestamp::now().as_nanosecond()
        );
        let fd = rfs::openat(
            &self.fd,
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        )
        .map_err(|e| FsError::io("create", self.child_path(&name), io_err(e)))?;
        let mut file = File::from(fd);
        let written = file.write_all(bytes).and_then(|()| match durability {
            Durability::Durable => file.sync_data(),
            Durability::Lazy => Ok(()),
        });
        if let Err(e) = written {
            drop(file);
            let _ = rfs::unlinkat(&self.fd, &name, AtFlags::empty());
            return Err(FsError::io("write", self.child_path(&name), e));
        }
        Ok(name)
    }

    /// Creates an empty file unless it exists: `Ok(true)` when this call created it. The
    /// exclusive create is what makes a seen mark a claim.
    pub fn create_marker(&self, name: &str) -> Result<bool, FsError> {
        match rfs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        ) {
            Ok(_) => Ok(true),
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(FsError::io("create", self.child_path(name), io_err(e))),
        }
    }

    /// Removes an entry; absent is fine.
    pub fn remove(&self, name: &str) -> Result<(), FsError> {
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(FsError::io("remove", self.child_path(name), io_err(e))),
        }
    }

    /// Removes a file that may be rebuilt at will (a cache, an index): absent, or a directory
    /// of that name (reported by `doctor` as something mailroom does not know), is left alone.
    pub fn remove_rebuildable(&self, name: &str) -> Result<(), FsError> {
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT | Errno::ISDIR) => Ok(()),
            Err(e) => Err(FsError::io("remove", self.child_path(name), io_err(e))),
        }
    }

    /// Removes an entry and says whether it was there: `Ok(false)` when absent (someone moved
    /// or removed it first).
    pub fn remove_present(&self, name: &str) -> Result<bool, FsError> {
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(FsError::io("remove", self.child_path(name), io_err(e))),
        }
    }

    /// Renames `name` here to `to_name` in `to`, replacing what is there. `Ok(false)` when
    /// `name` does not exist.
    pub fn rename(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool, FsError> {
        match rfs::renameat(&self.fd, name, &to.fd, to_name) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(FsError::io("rename", self.child_path(name), io_err(e))),
        }
    }

    /// Publishes `name` here as `to_name` in `to` unless that exists: `Ok(false)` when it did.
    /// The temporary name is removed either way.
    pub fn publish_new(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool, FsError> {
        match self.move_new(name, to, to_name) {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.remove(name)?;
                Ok(false)
            }
            Err(e) => {
                let _ = self.remove(name);
                Err(e)
            }
        }
    }

    /// Moves `name` here to `to_name` in `to` unless that exists (`sys::rename_noreplace`:
    /// one `renameat2` on Linux, a link and an unlink elsewhere): `Ok(false)` when `to_name`
    /// exists, and then `name` stays.
    pub fn move_new(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool, FsError> {
        crate::sys::rename_noreplace(self.as_fd(), name, to.as_fd(), to_name)
            .map_err(|e| FsError::io("rename", to.child_path(to_name), io_err(e)))
    }

    /// Adds a second name, `to_name` in `to`, for the file `name` here: `Ok(false)` when
    /// `name` is gone or `to_name` exists.
    pub fn link_to(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool, FsError> {
        match rfs::linkat(&self.fd, name, &to.fd, to_name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT | Errno::EXIST) => Ok(false),
            Err(e) => Err(FsError::io("link", to.child_path(to_name), io_err(e))),
        }
    }

    /// Atomically swaps `name` here with `to_name` in `to` (`sys::exchange`). `Ok(false)` when
    /// `to_name` does not exist; `Err` with `Unsupported` when the system or the filesystem
    /// cannot exchange.
    pub fn exchange(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool, FsError> {
        match crate::sys::exchange(self.as_fd(), name, to.as_fd(), to_name) {
            Ok(swapped) => Ok(swapped),
            Err(e @ (Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)) => Err(FsError::io(
                "exchange",
                to.child_path(to_name),
                io::Error::new(io::ErrorKind::Unsupported, io_err(e)),
            )),
            Err(e) => Err(FsError::io("exchange", to.child_path(to_name), io_err(e))),
        }
    }
}

/// The most a read takes from one file, and what kind of file that bound is for.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub bytes: usize,
    /// What the file is, for the error: "a message file".
    pub what: &'static str,
}

impl Limit {
    /// A file of a few lines (project, member, layout, key, origin, token): 64 KiB.
    pub const fn small(what: &'static str) -> Limit {
        Limit {
            bytes: 64 * 1024,
            what,
        }
    }

    fn exceeded(self, path: PathBuf, size: u64) -> FsError {
        FsError::io(
            "read",
            path,
            io::Error::other(format!(
                "it is {size} bytes, more than {} can be ({} bytes); move it out of the home",
                self.what, self.bytes
            )),
        )
    }
}

/// A file type, as the error names it.
fn describe(kind: rfs::FileType) -> &'static str {
    match kind {
        rfs::FileType::Fifo => "a FIFO (named pipe)",
        rfs::FileType::CharacterDevice => "a character device",
        rfs::FileType::BlockDevice => "a block device",
        rfs::FileType::Socket => "a socket",
        rfs::FileType::Directory => "a directory",
        rfs::FileType::Symlink => "a symbolic link",
        _ => "something",
    }
}

/// `O_NOFOLLOW` on a symlink fails with ELOOP (or ENOTDIR with `O_DIRECTORY`): say so.
fn no_follow_hint(e: Errno) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR => io::Error::other(
            "it is a symbolic link or not a directory, and mailroom never follows links inside its home",
        ),
        e => io_err(e),
    }
}
