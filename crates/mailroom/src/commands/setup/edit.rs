//! One config file's new text: what setup adds to it, or on `--uninstall` what taking out
//! setup's entries leaves, with the record that lets a later run take them out again.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use mailroom_core::Error;
use serde_json::Value;

use super::record::{Record, Records, Replaced};
use super::{Piece, is_ours, jsonc, toml};
use crate::cli::SetupArgs;
use crate::harness::Harness;

/// What setup does to one file: its text before and after, what its record becomes.
pub(super) struct Change {
    pub(super) harness: &'static dyn Harness,
    pub(super) path: PathBuf,
    pub(super) before: Option<String>,
    pub(super) after: Option<String>,
    pub(super) record: Option<Record>,
    /// The record as it was (a new one replaces it; on --uninstall it goes).
    pub(super) had_record: bool,
    /// Folders to remove when empty once the file is written (--uninstall: those setup made).
    pub(super) dirs: Vec<PathBuf>,
}

/// The new text of the file `pieces` (all at one path) live in, and its record.
pub(super) fn plan_file(
    harness: &'static dyn Harness,
    path: &Path,
    pieces: &[&Piece],
    current: Option<String>,
    records: &Records,
    args: &SetupArgs,
) -> Result<Change> {
    let rec = records.get(path);
    let had_record = rec.is_some();
    let unparsable = |e: anyhow::Error| -> anyhow::Error {
        if let Some(f) = e.downcast_ref::<jsonc::Foreign>() {
            return Error::Refused(format!(
                "{} cannot be set up: {f}; setup changed nothing (keep yours, or run again with --replace: setup's entry takes its place and --uninstall puts yours back)",
                path.display()
            ))
            .into();
        }
        Error::Invalid(format!(
            "{} cannot be edited: {e:#}; setup changed nothing (fix the file, or move it away)",
            path.display()
        ))
        .into()
    };
    let crlf = current.as_deref().is_some_and(|t| t.contains("\r\n"));
    if args.uninstall {
        let after = match &rec {
            // As setup left it: its bytes from before setup, whole.
            Some(r) if current.as_deref() == Some(r.after.as_str()) => r.before.clone(),
            _ => {
                let before_value = rec
                    .as_ref()
                    .map(|r| r.before.as_deref().and_then(jsonc::value_of));
                let known = match &rec {
                    Some(r) => jsonc::Known {
                        server: r.server,
                        hooks: &r.hooks,
                        replaced: &r.replaced,
                        before: Some(before_value.as_ref().and_then(|b| b.as_ref())),
                    },
                    None => jsonc::Known::default(),
                };
                let mut text = current.clone();
                for piece in pieces {
                    text = remove_piece(piece, text.as_deref(), &known, rec.as_ref(), harness)
                        .map_err(unparsable)?;
                }
                text.map(|t| line_ends(t, crlf))
            }
        };
        return Ok(Change {
            harness,
            path: path.to_path_buf(),
            before: current,
            after,
            record: None,
            had_record,
            dirs: rec.map(|r| r.dirs).unwrap_or_default(),
        });
    }
    let known = match &rec {
        Some(r) => jsonc::Known {
            server: r.server,
            hooks: &r.hooks,
            replaced: &[],
            before: None,
        },
        None => jsonc::Known::default(),
    };
    let mut text = current.clone();
    let mut replaced: Vec<Replaced> = Vec::new();
    let mut hooks: Vec<Value> = Vec::new();
    let mut server = false;
    for piece in pieces {
        let added =
            add_piece(piece, text.as_deref(), &known, args.replace, harness).map_err(unparsable)?;
        text = Some(added.text);
        replaced.extend(added.replaced);
        hooks.extend(added.hooks);
        server |= added.server;
    }
    let after = text.map(|t| line_ends(t, crlf));
    let record = if after == current {
        rec
    } else {
        // The file as it would be without setup: its bytes from before setup while it is as
        // setup left it, else what taking setup's entries out of it now gives.
        let (before, mut dirs, mut kept) = match rec {
            Some(r) if current.as_deref() == Some(r.after.as_str()) => {
                (r.before, r.dirs, r.replaced)
            }
            Some(r) => {
                let before_value = r.before.as_deref().and_then(jsonc::value_of);
                let known = jsonc::Known {
                    server: r.server,
                    hooks: &r.hooks,
                    replaced: &r.replaced,
                    before: Some(before_value.as_ref()),
                };
                let mut t = current.clone();
                for piece in pieces {
                    t = remove_piece(piece, t.as_deref(), &known, Some(&r), harness)
                        .map_err(unparsable)?;
                }
                (t, r.dirs, r.replaced)
            }
            None => (current.clone(), Vec::new(), Vec::new()),
        };
        for r in replaced {
            if !kept.contains(&r) {
                kept.push(r);
            }
        }
        dirs.extend(missing_dirs(path));
        Some(Record {
            path: path.to_path_buf(),
            before,
            after: after.clone().unwrap_or_default(),
            dirs,
            replaced: kept,
            hooks,
            server,
        })
    };
    Ok(Change {
        harness,
        path: path.to_path_buf(),
        before: current,
        after,
        record,
        had_record,
        dirs: Vec::new(),
    })
}

/// `text` with the line ends the file had: CRLF throughout when it had CRLF.
fn line_ends(text: String, crlf: bool) -> String {
    if crlf {
        text.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        text
    }
}

/// The folders above `path` that do not exist yet, outermost first.
pub(super) fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

fn add_piece(
    piece: &Piece,
    text: Option<&str>,
    known: &jsonc::Known,
    replace: bool,
    harness: &dyn Harness,
) -> Result<jsonc::Added> {
    match piece {
        Piece::Json {
            pieces,
            skeleton,
            strict,
            ..
        } => jsonc::add(text, pieces, skeleton, *strict, known, replace, &|c| {
            is_ours(c, harness)
        }),
        Piece::Toml {
            command,
            args,
            hooks,
            remote,
            ..
        } => toml::add(
            text,
            (command.as_str(), args.as_slice()),
            remote.as_ref(),
            hooks,
            known,
            replace,
            &|c| is_ours(c, harness),
        ),
        Piece::Whole { contents, .. } => match text {
            Some(t) if !t.starts_with("// mailroom:") => {
                Err(anyhow!("it exists and was not written by mailroom"))
            }
            _ => Ok(jsonc::Added {
                text: contents.clone(),
                replaced: Vec::new(),
                hooks: Vec::new(),
                server: false,
            }),
        },
    }
}

fn remove_piece(
    piece: &Piece,
    text: Option<&str>,
    known: &jsonc::Known,
    rec: Option<&Record>,
    harness: &dyn Harness,
) -> Result<Option<String>> {
    let ours = |c: &str| is_ours(c, harness);
    match piece {
        Piece::Json {
            pieces,
            skeleton,
            strict,
            ..
        } => jsonc::remove(text, pieces, skeleton, *strict, known, &ours),
        Piece::Toml { hooks, .. } => toml::remove(text, hooks, rec, &ours),
        // Only the file mailroom wrote goes: its first line says so.
        Piece::Whole { .. } => Ok(match text {
            Some(t) if t.starts_with("// mailroom:") => None,
            other => other.map(str::to_owned),
        }),
    }
}
