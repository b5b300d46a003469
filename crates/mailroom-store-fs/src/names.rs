//! Names on disk match ASCII-case-insensitively: a project, mailbox, roster entry, channel or
//! reader is found under the spelling it was first written with, whatever case the caller uses,
//! so `Api`, `api` and `API` never become three directories.
//!
//! A lookup lists the directory, so every spelling reaches the same entry. Creating a name takes
//! the directory's lock and looks again under it: two writers creating one name in different
//! cases at once end with one entry, spelled as the first of them wrote it. Readers never lock.

use crate::dir::Dir;
use crate::error::FsError;

/// The entry of `dir` spelled `name` + `suffix` in any case, as it is spelled on disk.
/// Several spellings (left by an older mailroom, or made by hand) all resolve to the first in
/// byte order, which `mailroom doctor` reports.
pub(crate) fn spelled(dir: &Dir, name: &str, suffix: &str) -> Result<Option<String>, FsError> {
    let wanted = format!("{name}{suffix}");
    Ok(dir
        .list()?
        .into_iter()
        .filter(|n| n.eq_ignore_ascii_case(&wanted))
        .min())
}

/// Opens the subdirectory `name` in any case; `Ok(None)` when there is none.
pub(crate) fn open(dir: &Dir, name: &str) -> Result<Option<Dir>, FsError> {
    match spelled(dir, name, "")? {
        Some(on_disk) => dir.open(&on_disk),
        None => Ok(None),
    }
}

/// Opens the subdirectory `name` in any case, creating it as spelled when there is none.
pub(crate) fn open_or_create(dir: &Dir, name: &str) -> Result<Dir, FsError> {
    if let Some(d) = open(dir, name)? {
        return Ok(d);
    }
    let _lock = dir.lock()?;
    match open(dir, name)? {
        Some(d) => Ok(d),
        None => dir.open_or_create(name),
    }
}

/// Creates the entry `name` + `suffix` with `create` (given the name to create) unless it
/// exists in any case: `Ok(false)` when it did.
pub(crate) fn create_file(
    dir: &Dir,
    name: &str,
    suffix: &str,
    create: impl FnOnce(&str) -> Result<bool, FsError>,
) -> Result<bool, FsError> {
    if spelled(dir, name, suffix)?.is_some() {
        return Ok(false);
    }
    let _lock = dir.lock()?;
    if spelled(dir, name, suffix)?.is_some() {
        return Ok(false);
    }
    create(&format!("{name}{suffix}"))
}
