//! The file store's error: what was being done, to which path, and why.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("cannot {op} {}: {source}{}", .path.display(), hint(.source))]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} uses layout version {found}; this mailroom understands version {expected}", .path.display())]
    Layout {
        path: PathBuf,
        found: String,
        expected: &'static str,
    },
}

/// What to do about the errors a user can fix.
fn hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; free some space and try again"
        }
        io::ErrorKind::PermissionDenied => "; check the ownership and permissions of the home",
        io::ErrorKind::ReadOnlyFilesystem => "; the home is on a read-only file system",
        _ => "",
    }
}

impl FsError {
    pub fn io(op: &'static str, path: impl AsRef<Path>, source: io::Error) -> FsError {
        FsError::Io {
            op,
            path: path.as_ref().to_owned(),
            source,
        }
    }
}

impl From<FsError> for mailroom_core::Error {
    fn from(e: FsError) -> mailroom_core::Error {
        mailroom_core::Error::store("storage error", e)
    }
}
