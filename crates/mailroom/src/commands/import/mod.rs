//! `import`: m_AI_l trees, repo-mailbox trees and protocol `mailbox.md` files into the store.
//! Each importer is idempotent (ids derive from the source) and reports every record it could
//! not read by file and line; nothing is dropped silently.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::Error;
use mailroom_core::interchange::{Problem, mailbox_md};
use mailroom_core::ops::ImportReport;
use serde_json::json;

mod m_ai_l_tree;
mod repo_mailbox;

use super::channel::{file_time, read_text};
use crate::cli::ImportFormat;
use crate::context::Ctx;
use crate::files::{Contents, MAX_IMPORT_FILE_BYTES};
use crate::output;

/// What one file gave.
pub(super) struct FileReport {
    pub(super) file: String,
    pub(super) report: ImportReport,
}

/// Shows `n of total` on a terminal, for large trees.
pub(super) struct Progress {
    on: bool,
    total: usize,
    done: usize,
}

impl Progress {
    pub(super) fn new(total: usize) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal() && total >= 50,
            total,
            done: 0,
        }
    }

    pub(super) fn tick(&mut self) {
        self.done += 1;
        if self.on && (self.done.is_multiple_of(25) || self.done == self.total) {
            eprint!("\rimporting: {} of {} files", self.done, self.total);
            if self.done == self.total {
                crate::errln!();
            }
        }
    }
}

pub fn import(
    ctx: &mut Ctx,
    format: ImportFormat,
    path: &Path,
    channel: Option<String>,
) -> Result<()> {
    if !path.exists() {
        return Err(Error::Invalid(format!(
            "{} does not exist; give the path to import from",
            path.display()
        ))
        .into());
    }
    if matches!(format, ImportFormat::MAiL | ImportFormat::RepoMailbox) && !path.is_dir() {
        let (what, folder) = match format {
            ImportFormat::MAiL => ("m_ai_l", "an m_AI_l COMMON_PATH or project folder"),
            _ => (
                "repo-mailbox",
                "a repo-mailbox root (the folder of <repo>/inbox)",
            ),
        };
        return Err(Error::Invalid(format!(
            "{} is not a folder; `import {what}` reads {folder}",
            path.display()
        ))
        .into());
    }
    let importer = ctx.identity()?.map(|i| i.address);
    let project = match &importer {
        Some(me) => ctx.channel_project(me)?,
        None => ctx.project()?,
    };
    let importer = importer.as_ref();
    let mr = ctx.mailroom();
    let reports = match format {
        ImportFormat::MailboxMd => {
            let name = match channel {
                Some(c) => c,
                None => default_channel(path),
            };
            let text = read_text(path)?;
            vec![FileReport {
                file: path.display().to_string(),
                report: mr.import_channel(importer, &project, &name, &text, file_time(path))?,
            }]
        }
        ImportFormat::MAiL => m_ai_l_tree::import(&mr, importer, path, &project)?,
        ImportFormat::RepoMailbox => repo_mailbox::import(&mr, importer, path, &project)?,
    };
    print_file_reports(ctx, &reports)
}

/// The channel a `mailbox.md` file goes to when none is named (see
/// [`mailbox_md::default_channel`]).
fn default_channel(path: &Path) -> String {
    let folder = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    mailbox_md::default_channel(&file_name_of(path), &folder)
}

pub fn print_report(ctx: &Ctx, file: &str, reports: &[ImportReport]) -> Result<()> {
    let files: Vec<FileReport> = reports
        .iter()
        .map(|r| FileReport {
            file: file.to_owned(),
            report: r.clone(),
        })
        .collect();
    print_file_reports(ctx, &files)
}

fn print_file_reports(ctx: &Ctx, reports: &[FileReport]) -> Result<()> {
    let imported: usize = reports.iter().map(|r| r.report.imported).sum();
    let duplicates: usize = reports.iter().map(|r| r.report.duplicates).sum();
    let problems: Vec<(&str, &Problem)> = reports
        .iter()
        .flat_map(|r| r.report.problems.iter().map(move |p| (r.file.as_str(), p)))
        .collect();
    if ctx.json {
        output::print_json(&json!({
            "imported": imported,
            "duplicates": duplicates,
            "files": reports.len(),
            "problems": problems.iter().map(|(f, p)| json!({"file": f, "line": p.line, "message": p.message})).collect::<Vec<_>>(),
        }));
        return Ok(());
    }
    crate::outln!(
        "imported {imported} message{} from {} file{}; {duplicates} already there",
        if imported == 1 { "" } else { "s" },
        reports.len(),
        if reports.len() == 1 { "" } else { "s" }
    );
    for (file, p) in &problems {
        crate::outln!(
            "{}:{}: {}",
            mailroom_core::text::field(file),
            p.line,
            mailroom_core::text::field(&p.message)
        );
    }
    if !problems.is_empty() {
        crate::outln!(
            "{} problem{} above: what could be recovered was imported",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

/// The entries of `dir` that are not directories, sorted (none when it cannot be listed):
/// regular files, and the links, FIFOs and devices a reader must report rather than open.
pub(super) fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                // The entry's own type: a link to a directory is listed, and refused when read.
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A file found in the walked tree, read without following a symbolic link and within
/// `limit`; what cannot be read is that file's problem (reported, and the walk goes on).
pub(super) fn read_found(path: &Path, limit: u64) -> Result<Contents, String> {
    crate::files::read_regular(path, limit, false)
        .map_err(|e| format!("it {}; skipped", e.reason()))
}

/// [`read_found`] for a whole text file, with the time it was last changed.
pub(super) fn read_found_text(path: &Path) -> Result<(String, jiff::Timestamp), String> {
    let contents = read_found(path, MAX_IMPORT_FILE_BYTES)?;
    let modified = contents.modified.unwrap_or_else(jiff::Timestamp::now);
    String::from_utf8(contents.bytes)
        .map(|text| (text, modified))
        .map_err(|e| {
            format!(
                "it is not UTF-8 text (byte {} is not); convert it first; skipped",
                e.utf8_error().valid_up_to()
            )
        })
}

pub(super) fn problem_only(message: String) -> ImportReport {
    ImportReport {
        problems: vec![Problem { line: 1, message }],
        ..ImportReport::default()
    }
}

pub(super) fn file_name_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
