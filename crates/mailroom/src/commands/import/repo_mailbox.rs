//! The repo-mailbox importer: walks `<repo>/inbox`, `<repo>/archive`, `_broadcast/inbox`,
//! `_broadcast/archive` and `_broadcast/seen/<repo>`, reads each file and hands it to the core
//! (`interchange::repo_mailbox` says what it is, `Mailroom::import_record` puts it in place).

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::interchange::repo_mailbox::{self, BROADCAST_DIR, SEEN_DIR, TEMP_SKIPPED};
use mailroom_core::interchange::{Disposition, Problem};
use mailroom_core::ops::ImportReport;
use mailroom_core::{Address, Mailroom, MessageId, Name};

use super::{
    FileReport, Progress, file_name_of, list_files, problem_only, read_found, read_found_text,
};
use crate::files::MAX_MESSAGE_FILE_BYTES;

/// A repo-mailbox root: `<repo>/inbox`, `<repo>/archive`, `_broadcast/{inbox,archive,seen}`.
pub(super) fn import(
    mr: &Mailroom<'_>,
    importer: Option<&Address>,
    root: &Path,
    project: &Name,
) -> Result<Vec<FileReport>> {
    mr.check_may_import(importer, project, mailroom_core::Policy::Open)?;
    let mut reports = Vec::new();
    let mut repos: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    repos.retain(|p| p.is_dir());
    repos.sort();
    let mut work: Vec<(PathBuf, String, Disposition)> = Vec::new();
    for repo in &repos {
        let name = file_name_of(repo);
        for (sub, disposition) in repo_mailbox::mail_folders(&name) {
            for file in list_files(&repo.join(sub)) {
                if repo_mailbox::is_temp(&file_name_of(&file)) {
                    reports.push(temp_report(&file));
                } else if repo_mailbox::is_message(&file_name_of(&file)) {
                    work.push((file, name.clone(), *disposition));
                }
            }
        }
    }
    let mut progress = Progress::new(work.len());
    // Broadcasts by file name, for the seen sets; and who sent each.
    let mut broadcasts: Vec<(String, MessageId, Name)> = Vec::new();
    for (file, repo, disposition) in work {
        progress.tick();
        let contents = match read_found(&file, MAX_MESSAGE_FILE_BYTES) {
            Ok(c) => c,
            Err(problem) => {
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report: problem_only(problem),
                });
                continue;
            }
        };
        let modified = contents.modified.unwrap_or_else(jiff::Timestamp::now);
        let name = file_name_of(&file);
        let mut report = ImportReport::default();
        let outcome =
            match repo_mailbox::record(&repo, &name, disposition, &contents.bytes, modified) {
                Ok((record, problems)) => {
                    report.problems = problems;
                    mr.import_record(importer, &record, Some(project), project)?
                }
                Err(reason) => Err(reason),
            };
        match outcome {
            Ok(done) => {
                if matches!(disposition, Disposition::Broadcast | Disposition::Retracted) {
                    broadcasts.push((name, done.id, done.from.handle));
                }
                if done.added {
                    report.imported += 1;
                } else {
                    report.duplicates += 1;
                }
            }
            Err(message) => report.problems.push(Problem { line: 1, message }),
        }
        reports.push(FileReport {
            file: file.display().to_string(),
            report,
        });
    }
    let all = mr.channel_ref(project, mailroom_core::message::BROADCAST)?;
    // Seen sets: `_broadcast/seen/<repo>` lists the broadcast file names that repo was shown.
    for file in list_files(&root.join(BROADCAST_DIR).join(SEEN_DIR)) {
        if repo_mailbox::is_temp(&file_name_of(&file)) {
            reports.push(temp_report(&file));
            continue;
        }
        let reader = match mr.import_handle(&file_name_of(&file), project) {
            Ok(h) => h,
            Err(e) => {
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report: problem_only(e),
                });
                continue;
            }
        };
        let text = match read_found_text(&file) {
            Ok((text, _)) => text,
            Err(problem) => {
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report: problem_only(problem),
                });
                continue;
            }
        };
        let mut report = ImportReport::default();
        let mut ids = Vec::new();
        for (line, name) in repo_mailbox::seen_names(&text) {
            match broadcasts.iter().find(|(f, _, _)| f == name) {
                Some((_, id, _)) => ids.push(*id),
                None => report.problems.push(Problem {
                    line,
                    message: format!(
                        "'{name}' is not a broadcast in _broadcast/inbox or archive; skipped"
                    ),
                }),
            }
        }
        let marked = mr.import_seen(&all, &reader, &ids)?;
        report.imported += marked;
        report.duplicates += ids.len() - marked;
        reports.push(FileReport {
            file: file.display().to_string(),
            report,
        });
    }
    // repo-mailbox writes a sender's own seen entry when it broadcasts; a seen file that lost
    // it must still not deliver a broadcast back to its sender.
    for (_, id, sender) in broadcasts {
        mr.import_seen(&all, &sender, &[id])?;
    }
    Ok(reports)
}

fn temp_report(file: &Path) -> FileReport {
    FileReport {
        file: file.display().to_string(),
        report: problem_only(TEMP_SKIPPED.into()),
    }
}
