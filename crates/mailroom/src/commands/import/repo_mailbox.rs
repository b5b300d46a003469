//! The repo-mailbox importer: `<repo>/inbox`, `<repo>/archive`, `_broadcast/inbox`,
//! `_broadcast/archive` and `_broadcast/seen/<repo>`, pending and archived state and seen sets
//! preserved.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::interchange::Problem;
use mailroom_core::ops::{Foreign, ImportReport};
use mailroom_core::{Address, Kind, Mailroom, Name, Priority, State};
use mailroom_store_fs::frontmatter;

use super::{FileReport, Progress, file_name_of, list_files, problem_only};
use crate::commands::channel::{file_time, read_text};

/// A repo-mailbox root: `<repo>/inbox`, `<repo>/archive`, `_broadcast/{inbox,archive,seen}`.
pub(super) fn import(mr: &Mailroom<'_>, root: &Path, project: &Name) -> Result<Vec<FileReport>> {
    let mut reports = Vec::new();
    let mut repos: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    repos.retain(|p| p.is_dir());
    repos.sort();
    let mut work: Vec<(PathBuf, String, &'static str)> = Vec::new();
    let mut temps: Vec<PathBuf> = Vec::new();
    for repo in &repos {
        let name = file_name_of(repo);
        let subs: &[(&str, &'static str)] = if name == "_broadcast" {
            &[("inbox", "broadcast"), ("archive", "retracted")]
        } else if !name.starts_with('_') && !name.starts_with('.') {
            &[("inbox", "pending"), ("archive", "archived")]
        } else {
            &[]
        };
        for (sub, what) in subs {
            for file in list_files(&repo.join(sub)) {
                if is_temp(&file) {
                    temps.push(file);
                } else if file.extension().is_some_and(|e| e == "md") {
                    work.push((file, name.clone(), *what));
                }
            }
        }
    }
    // repo-mailbox writes each file under a dot name beside its final one and renames it: a
    // dot file is a write that never finished (or was never mail), so it is reported, not read.
    for file in temps {
        reports.push(FileReport {
            file: file.display().to_string(),
            report: problem_only(TEMP_SKIPPED.into()),
        });
    }
    let all = mr.channel_ref(project, mailroom_core::message::BROADCAST)?;
    let mut progress = Progress::new(work.len());
    let mut broadcast_ids: Vec<(String, mailroom_core::MessageId)> = Vec::new();
    let mut senders: Vec<(Name, mailroom_core::MessageId)> = Vec::new();
    for (file, repo, what) in work {
        progress.tick();
        let mut report = ImportReport::default();
        // Ok(Err(reason)): the file is skipped with that reason; nothing else is lost.
        let outcome = import_file(mr, project, &all, &file, &repo, what, &mut report)?;
        let added = match outcome {
            Ok((added, id, sender)) => {
                if let Some(id) = id {
                    broadcast_ids.push((file_name_of(&file), id));
                    senders.push((sender, id));
                }
                added
            }
            Err(message) => {
                report.problems.push(Problem { line: 1, message });
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report,
                });
                continue;
            }
        };
        if added {
            report.imported += 1;
        } else {
            report.duplicates += 1;
        }
        reports.push(FileReport {
            file: file.display().to_string(),
            report,
        });
    }
    // Seen sets: `_broadcast/seen/<repo>` lists the broadcast file names that repo was shown.
    let seen_dir = root.join("_broadcast").join("seen");
    for file in list_files(&seen_dir) {
        if is_temp(&file) {
            reports.push(FileReport {
                file: file.display().to_string(),
                report: problem_only(TEMP_SKIPPED.into()),
            });
            continue;
        }
        let mut report = ImportReport::default();
        let repo = file_name_of(&file);
        let reader = match mr.import_handle(&repo, project) {
            Ok(h) => h,
            Err(e) => {
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report: problem_only(e),
                });
                continue;
            }
        };
        let text = read_text(&file)?;
        let mut ids = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let name = line.trim();
            if name.is_empty() {
                continue;
            }
            match broadcast_ids.iter().find(|(f, _)| f == name) {
                Some((_, id)) => ids.push(*id),
                None => report.problems.push(Problem {
                    line: i + 1,
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
    for (sender, id) in senders {
        mr.import_seen(&all, &sender, &[id])?;
    }
    Ok(reports)
}

const TEMP_SKIPPED: &str =
    "the name starts with '.': a temporary file of an unfinished write, not mail; skipped";

fn is_temp(file: &Path) -> bool {
    file_name_of(file).starts_with('.')
}

/// One file of the tree: `Ok((added, broadcast id, its sender))`, or the reason it is skipped.
/// Problems that do not stop the import (an unreadable date) go into `report`.
#[allow(
    clippy::type_complexity,
    reason = "a private helper's result, named at its one call"
)]
fn import_file(
    mr: &Mailroom<'_>,
    project: &Name,
    all: &mailroom_core::message::ChannelRef,
    file: &Path,
    repo: &str,
    what: &str,
    report: &mut ImportReport,
) -> Result<std::result::Result<(bool, Option<mailroom_core::MessageId>, Name), String>> {
    let bytes =
        std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let doc = match frontmatter::parse(&bytes) {
        Ok(d) => d,
        Err(e) => return Ok(Err(format!("the file {e}; skipped"))),
    };
    let Some(from) = doc.text("from").filter(|f| !f.trim().is_empty()) else {
        return Ok(Err("no 'from' in the frontmatter; skipped".into()));
    };
    let date = match doc
        .text("date")
        .and_then(|d| mailroom_core::interchange::mailbox_md::parse_timestamp(&d))
    {
        Some(t) => t,
        None => {
            report.problems.push(Problem {
                line: 1,
                message: "no readable 'date'; imported with the file's time".into(),
            });
            file_time(file)
        }
    };
    let record = Foreign {
        source_key: format!("repo-mailbox:{repo}:{}", file_name_of(file)),
        from: from.trim().to_owned(),
        subject: doc.text("subject").unwrap_or_default(),
        body: doc.body.clone(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date,
    };
    if what == "broadcast" || what == "retracted" {
        let m = match mr.foreign_message(&record, Some(project), vec![], Some(all.clone())) {
            Ok(m) => m,
            Err(e) => return Ok(Err(e)),
        };
        let added = mr.import_entry(all, &m, what == "retracted")?;
        return Ok(Ok((added, Some(m.id), m.from.handle)));
    }
    let handle = match mr.import_handle(repo, project) {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    let to = Address::in_project(handle.clone(), project.clone());
    let m = match mr.foreign_message(&record, Some(project), vec![to.clone()], None) {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    let state = if what == "pending" {
        State::Unread
    } else {
        State::Done
    };
    Ok(Ok((mr.import_mail(&to, &m, state)?, None, handle)))
}
