//! Names on disk match ASCII-case-insensitively: a project, mailbox, roster entry, channel or
//! reader is found under the spelling it was first written with, whatever case the caller uses,
//! so `Api`, `api` and `API` never become three directories.
//!
//! An exact spelling costs one lookup; only a miss lists the directory.

use crate::dir::Dir;
use crate::error::FsError;

/// The entry of `dir` spelled `name` + `suffix` in any case, as it is spelled on disk.
/// Several spellings (left by an older mailroom) resolve to the first in byte order, which
/// `mailroom doctor` reports.
pub(crate) fn spelled(dir: &Dir, name: &str, suffix: &str) -> Result<Option<String>, FsError> {
    let exact = format!("{name}{suffix}");
    if dir.exists(&exact)? {
        return Ok(Some(exact));
    }
    let mut found: Vec<String> = dir
        .list()?
        .into_iter()
        .filter(|n| n.eq_ignore_ascii_case(&exact))
        .collect();
    found.sort();
    Ok(found.into_iter().next())
}

/// Opens the subdirectory `name` in any case; `Ok(None)` when there is none.
pub(crate) fn open(dir: &Dir, name: &str) -> Result<Option<Dir>, FsError> {
    if let Some(d) = dir.open(name)? {
        return Ok(Some(d));
    }
    match spelled(dir, name, "")? {
        Some(on_disk) if on_disk != name => dir.open(&on_disk),
        _ => Ok(None),
    }
}

/// Opens the subdirectory `name` in any case, creating it as spelled when there is none.
pub(crate) fn open_or_create(dir: &Dir, name: &str) -> Result<Dir, FsError> {
    match open(dir, name)? {
        Some(d) => Ok(d),
        None => dir.open_or_create(name),
    }
}
