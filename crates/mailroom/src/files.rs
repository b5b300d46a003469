//! Reading a file the user named or an importer found: opened without blocking and checked on
//! the descriptor, so a FIFO or device is a clear sentence instead of a hang, and read within a
//! bound, so a huge or endless file cannot exhaust memory.

use std::io::Read as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// The most a whole file read for import may hold (`mailbox.md`, an m_AI_l mailbox, a
/// registry): many messages of at most the body limit each.
pub const MAX_IMPORT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The most a one-message file (a repo-mailbox message) may hold: the body limit, plus room for
/// its header lines.
pub const MAX_MESSAGE_FILE_BYTES: u64 = mailroom_core::text::MAX_BODY_BYTES as u64 + 64 * 1024;

/// A file's bytes and when it was last changed.
pub struct Contents {
    pub bytes: Vec<u8>,
    pub modified: Option<jiff::Timestamp>,
}

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// It is not a regular file; what it is instead.
    NotRegular(&'static str),
    TooLarge(u64),
    Io(std::io::Error),
}

impl ReadError {
    /// The reason as the end of a sentence naming the file: `is a FIFO (named pipe), …`.
    pub fn reason(&self) -> String {
        match self {
            ReadError::NotRegular(what) => {
                format!("is {what}, not a regular file; mailroom reads only regular files")
            }
            ReadError::TooLarge(limit) => format!("is over {limit} bytes"),
            ReadError::Io(e) => format!("cannot be read: {e}"),
        }
    }
}

/// Reads the regular file at `path`, at most `limit` bytes. With `follow` false a symbolic link
/// is refused instead of followed (for files inside a walked tree, whose links may point
/// anywhere).
pub fn read_regular(path: &Path, limit: u64, follow: bool) -> Result<Contents, ReadError> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) if !follow => {
            return Err(ReadError::NotRegular("a symbolic link"));
        }
        // Opening a device may fail on its own terms (no such device): it is still no file.
        Err(rustix::io::Errno::NXIO) => return Err(ReadError::NotRegular("a device or socket")),
        Err(e) => return Err(ReadError::Io(e.into())),
    };
    let file = std::fs::File::from(fd);
    // Checked on the descriptor: what was opened is what is read.
    let meta = file.metadata().map_err(ReadError::Io)?;
    let ft = meta.file_type();
    let what = if ft.is_file() {
        None
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_symlink() {
        Some("a symbolic link")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    };
    if let Some(what) = what {
        return Err(ReadError::NotRegular(what));
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok());
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(Contents { bytes, modified })
}
