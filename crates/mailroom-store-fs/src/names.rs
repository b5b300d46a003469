//! Names on disk match ASCII-case-insensitively: a project, mailbox, roster entry, channel or
//! reader is found under the spelling it was first written with, whatever case the caller uses,
//! so `Api`, `api` and `API` never become three directories.
//!
//! A lookup lists the directory, so every spelling reaches the same entry. Creating a name takes
//! the directory's lock and looks again under it: two writers creating one name in different
//! cases at once end with one entry, spelled as the first of them wrote it. Readers never lock.
//!
//! A process remembers the spellings it found (`SPELLINGS`), so a long-lived one (the MCP
//! server) and a command that resolves one name several times list each directory once. The
//! memory is only ever a first guess: a remembered spelling is used only when the entry is
//! still there under it (the caller's own open or read says so), and anything not remembered,
//! or remembered but gone, is looked up by listing. It never answers "does not exist", so a
//! name another process created is always found. (What it can miss: a second spelling made by
//! hand later, which sorts before the remembered one; `mailroom doctor` reports those.)

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::dir::Dir;
use crate::error::FsError;

/// Remembered spellings, keyed by the path of the entry spelled in lower case.
static SPELLINGS: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
/// The most spellings remembered (beyond it the memory starts over): bounds a process that
/// is asked for many names.
const MAX_SPELLINGS: usize = 4096;

fn cache_key(dir: &Dir, wanted: &str) -> PathBuf {
    dir.child_path(&wanted.to_ascii_lowercase())
}

fn remembered(key: &PathBuf) -> Option<String> {
    let cache = SPELLINGS.lock().ok()?;
    cache.as_ref()?.get(key).cloned()
}

fn forget(key: &PathBuf) {
    if let Ok(mut cache) = SPELLINGS.lock()
        && let Some(map) = cache.as_mut()
    {
        map.remove(key);
    }
}

/// The entry of `dir` spelled `name` + `suffix` in any case, with what `probe` made of it
/// (an open or a read; `Ok(None)` when the entry is not there). A remembered spelling is tried
/// first; otherwise, or when it is gone, the directory is listed. `Ok(None)` when there is no
/// such entry.
pub(crate) fn find<T>(
    dir: &Dir,
    name: &str,
    suffix: &str,
    probe: impl Fn(&str) -> Result<Option<T>, FsError>,
) -> Result<Option<(String, T)>, FsError> {
    let wanted = format!("{name}{suffix}");
    let key = cache_key(dir, &wanted);
    if let Some(on_disk) = remembered(&key) {
        if let Some(found) = probe(&on_disk)? {
            return Ok(Some((on_disk, found)));
        }
        forget(&key);
    }
    let mut entries = dir.list()?;
    entries.sort_unstable();
    let Some(on_disk) = entries
        .iter()
        .find(|n| n.eq_ignore_ascii_case(&wanted))
        .cloned()
    else {
        remember_all(dir, &entries, None);
        return Ok(None);
    };
    remember_all(dir, &entries, Some(&on_disk));
    match probe(&on_disk)? {
        Some(found) => Ok(Some((on_disk, found))),
        None => {
            forget(&key);
            Ok(None)
        }
    }
}

/// Remembers the spelling of every entry of a small directory just listed (sorted), the first
/// in byte order of each name, so the next lookup of a sibling (the recipient after the
/// sender) lists nothing; of a big one, only `found`.
fn remember_all(dir: &Dir, sorted: &[String], found: Option<&str>) {
    const MAX_LISTED: usize = 256;
    let sorted = if sorted.len() <= MAX_LISTED {
        sorted
    } else if let Some(i) = found.and_then(|f| sorted.iter().position(|n| n == f)) {
        &sorted[i..=i]
    } else {
        return;
    };
    // Sorted, so the first spelling of each name is the one kept.
    let mut first: HashMap<PathBuf, String> = HashMap::with_capacity(sorted.len());
    for name in sorted {
        first
            .entry(cache_key(dir, name))
            .or_insert_with(|| name.clone());
    }
    if let Ok(mut cache) = SPELLINGS.lock() {
        let map = cache.get_or_insert_with(HashMap::new);
        if map.len() + first.len() > MAX_SPELLINGS {
            map.clear();
        }
        map.extend(first);
    }
}

fn listed(dir: &Dir, wanted: &str) -> Result<Option<String>, FsError> {
    Ok(dir
        .list()?
        .into_iter()
        .filter(|n| n.eq_ignore_ascii_case(wanted))
        .min())
}

/// The entry of `dir` spelled `name` + `suffix` in any case, as it is spelled on disk.
/// Several spellings (left by an older mailroom, or made by hand) all resolve to the first in
/// byte order, which `mailroom doctor` reports.
pub(crate) fn spelled(dir: &Dir, name: &str, suffix: &str) -> Result<Option<String>, FsError> {
    listed(dir, &format!("{name}{suffix}"))
}

/// Opens the subdirectory `name` in any case; `Ok(None)` when there is none.
pub(crate) fn open(dir: &Dir, name: &str) -> Result<Option<Dir>, FsError> {
    Ok(find(dir, name, "", |on_disk| dir.open(on_disk))?.map(|(_, d)| d))
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
