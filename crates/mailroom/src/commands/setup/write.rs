//! Writing every changed config file, or none: staged beside each file, then renamed.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use mailroom_core::Error;

use super::edit::{Change, missing_dirs};
use super::record::Records;

/// Writes every change or none: each new text is staged in a temporary file beside its file
/// first (a folder that refuses it fails here, before anything changed), then the records, then
/// the renames; a rename that still fails puts back the files already renamed.
pub(super) fn write_all(changes: &[Change], records: &Records) -> Result<()> {
    let mut staged = Vec::new();
    let mut made: Vec<PathBuf> = Vec::new();
    let changed: Vec<&Change> = changes.iter().filter(|c| c.before != c.after).collect();
    for c in &changed {
        made.extend(missing_dirs(&c.path));
        match stage(&c.path, c.after.as_deref(), 0o644) {
            Ok(s) => staged.push(s),
            Err(e) => {
                drop(staged);
                remove_empty(&made);
                return Err(e.context("setup changed nothing"));
            }
        }
    }
    // A record goes with its file's change, and on --uninstall even when the file is gone.
    for c in changes
        .iter()
        .filter(|c| c.before != c.after || (c.had_record && c.record.is_none()))
    {
        let kept = match &c.record {
            Some(r) => records.put(r),
            None if c.had_record => records.remove(&c.path),
            None => Ok(()),
        };
        if let Err(e) = kept {
            drop(staged);
            remove_empty(&made);
            return Err(e.context("setup changed nothing"));
        }
    }
    for (i, s) in staged.into_iter().enumerate() {
        if let Err(e) = s.commit() {
            for c in &changed[..i] {
                let _ = write_file(&c.path, c.before.as_deref(), 0o644);
            }
            return Err(e);
        }
    }
    // The folders setup created for a file it took out again, when nothing else is in them.
    let dirs: Vec<PathBuf> = changed.iter().flat_map(|c| c.dirs.clone()).collect();
    remove_empty(&dirs);
    Ok(())
}

/// Removes the folders of `dirs` (outermost first) that are empty, innermost first.
fn remove_empty(dirs: &[PathBuf]) {
    let mut dirs = dirs.to_vec();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in dirs {
        let _ = std::fs::remove_dir(d);
    }
}

/// Whether a write to `path` would fail for what it is (checked before anything is written):
/// a read-only file, or a file or folder the system will not let this process change.
pub(super) fn check_writable(path: &Path) -> Result<()> {
    use rustix::fs::Access;
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let mode = m.permissions().mode() & 0o7777;
        if mode & 0o200 == 0 {
            return Err(Error::Refused(format!(
                "{} is read-only (mode {mode:04o}); setup changed nothing (make it writable with chmod u+w, or leave mailroom out of it)",
                path.display()
            ))
            .into());
        }
        if rustix::fs::access(path, Access::WRITE_OK).is_err() {
            return Err(Error::Refused(format!(
                "{} cannot be written (the system refuses it, e.g. an immutable file); setup changed nothing",
                path.display()
            ))
            .into());
        }
    }
    // The folder it is in, or the nearest that exists, must take a new file.
    if let Some(dir) = path.ancestors().skip(1).find(|d| d.exists())
        && rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).is_err()
    {
        return Err(Error::Refused(format!(
            "{} cannot be written: the folder {} does not let this user change it; setup changed nothing",
            path.display(),
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// A file's new text, in a temporary file beside it until `commit`.
struct Staged {
    path: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
}

/// Writes `text` into a temporary file in `path`'s folder (creating the folder), with `path`'s
/// mode (or `mode` for a new file). None: `path` is to be removed.
fn stage(path: &Path, text: Option<&str>, mode: u32) -> Result<Staged> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let Some(text) = text else {
        return Ok(Staged {
            path: path.to_path_buf(),
            tmp: None,
        });
    };
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent folder", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions())
        .unwrap_or_else(|_| std::fs::Permissions::from_mode(mode));
    std::fs::set_permissions(tmp.path(), mode)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Staged {
        path: path.to_path_buf(),
        tmp: Some(tmp),
    })
}

impl Staged {
    fn commit(self) -> Result<()> {
        match self.tmp {
            Some(tmp) => tmp
                .persist(&self.path)
                .map(drop)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot write {}", self.path.display())),
            None => match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("cannot remove {}", self.path.display()))
                }
                _ => Ok(()),
            },
        }
    }
}

/// Writes through a temporary file in the same folder and a rename, keeping the old mode
/// (`mode` for a new file); None removes the file.
pub(super) fn write_file(path: &Path, text: Option<&str>, mode: u32) -> Result<()> {
    stage(path, text, mode)?.commit()
}

pub(super) fn unified_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let shown = path.display().to_string();
    let (a, b) = (before.unwrap_or_default(), after.unwrap_or_default());
    let diff = similar::TextDiff::from_lines(a, b);
    let old = if before.is_some() {
        shown.clone()
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        shown.clone()
    } else {
        "/dev/null".into()
    };
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}
