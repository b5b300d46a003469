//! The m_AI_l importer: a COMMON_PATH with `projects_config.md`, each project's `roster.md`,
//! `mailbox_HANDLE.md`, `mailbox_HANDLE_archive.md`, `outbox_HANDLE.md`, and the operator's
//! `mailbox_HUMAN.md` beside the registry.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::interchange::{Problem, m_ai_l, stable_hash};
use mailroom_core::ops::{Foreign, ImportReport};
use mailroom_core::{Address, Kind, Mailroom, MemberStatus, Name, Policy, State};

use super::{FileReport, Progress, cell, file_stem, list_files, list_md, problem_only};
use crate::commands::channel::{file_time, read_text};

/// An m_AI_l COMMON_PATH (with projects_config.md and the HUMAN mailbox) or one project folder.
pub(super) fn import(
    mr: &Mailroom<'_>,
    root: &Path,
    default_project: &Name,
) -> Result<Vec<FileReport>> {
    let mut reports = Vec::new();
    let mut projects: Vec<(Name, PathBuf, usize)> = Vec::new();
    let config = root.join("projects_config.md");
    if config.is_file() {
        let text = read_text(&config)?;
        let mut report = ImportReport::default();
        for row in m_ai_l::project_rows(&text) {
            let line = row.line;
            let Some(name) = row.handle.as_deref() else {
                report.problems.push(Problem {
                    line,
                    message: "row without a project handle; skipped".into(),
                });
                continue;
            };
            let Ok(handle) = mr.import_handle(name, default_project) else {
                report.problems.push(Problem {
                    line,
                    message: format!("'{name}' cannot be a project name; skipped"),
                });
                continue;
            };
            let written = row.folder.as_deref().unwrap_or(name);
            match project_folder(root, written) {
                Some((dir, moved)) => {
                    if moved {
                        report.problems.push(Problem {
                            line,
                            message: format!(
                                "the folder {written} of project '{name}' is not here; read {} instead",
                                dir.display()
                            ),
                        });
                    }
                    projects.push((handle, dir, line));
                }
                None => report.problems.push(Problem {
                    line,
                    message: format!(
                        "the folder {written} of project '{name}' does not exist, nor a folder of that name in or beside {}; skipped",
                        root.display()
                    ),
                }),
            }
        }
        reports.push(FileReport {
            file: config.display().to_string(),
            report,
        });
    } else {
        projects.push((default_project.clone(), root.to_owned(), 0));
    }
    // The operator's mailbox sits next to projects_config.md; HUMAN's mailbox is unique, so
    // it is read once, outside any project, even when COMMON_PATH is also a project's folder.
    let human_files: Vec<PathBuf> = if config.is_file() {
        list_md(root)
            .into_iter()
            .filter(|f| file_stem(f).starts_with("mailbox_HUMAN"))
            .collect()
    } else {
        Vec::new()
    };
    let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let mut files: Vec<(Option<Name>, PathBuf)> = Vec::new();
    for (project, dir, _) in &projects {
        // m_AI_l routes by roster: an unknown handle is an error there, so it is here too.
        mr.import_project(project, Policy::Roster)?;
        let mut listed = list_md(dir);
        listed.retain(|f| !human_files.iter().any(|h| same_file(f, h)));
        // The roster first: members keep their roles when their mailboxes are read after.
        listed.sort_by_key(|f| file_stem(f) != "roster");
        files.extend(listed.into_iter().map(|f| (Some(project.clone()), f)));
        // m_AI_l's file server writes `<file>.<32 hex>.tmp` and renames it over the file: one
        // left behind is an interrupted write, never mail.
        for temp in list_files(dir)
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "tmp"))
        {
            reports.push(FileReport {
                file: temp.display().to_string(),
                report: problem_only(
                    "a temporary file of an interrupted write, not mail; skipped".into(),
                ),
            });
        }
    }
    files.extend(human_files.into_iter().map(|f| (None, f)));
    let mut progress = Progress::new(files.len());
    for (project, file) in files {
        progress.tick();
        let stem = file_stem(&file);
        let project_name = project.clone().unwrap_or_else(|| default_project.clone());
        let report = if stem == "roster" {
            import_roster(mr, &file, &project_name)?
        } else if let Some(rest) = stem.strip_prefix("mailbox_") {
            let (handle, state) = match rest.strip_suffix("_archive") {
                Some(h) => (h, State::Done),
                None => (rest, State::Unread),
            };
            let owner = if project.is_none() || handle == mailroom_core::HUMAN {
                Address::human()
            } else {
                match mr.import_handle(handle, &project_name) {
                    Ok(h) => Address::in_project(h, project_name.clone()),
                    Err(e) => {
                        reports.push(FileReport {
                            file: file.display().to_string(),
                            report: problem_only(e),
                        });
                        continue;
                    }
                }
            };
            import_m_ai_l_mail(
                mr,
                &file,
                project.as_ref(),
                &project_name,
                Some(&owner),
                state,
            )?
        } else if stem.starts_with("outbox_") {
            import_m_ai_l_mail(
                mr,
                &file,
                project.as_ref(),
                &project_name,
                None,
                State::Done,
            )?
        } else {
            continue;
        };
        reports.push(FileReport {
            file: file.display().to_string(),
            report,
        });
    }
    Ok(reports)
}

/// The folder a project's recorded path names on this machine, and whether it had to be looked
/// for: m_AI_l records absolute (often Windows) paths, and a tree copied elsewhere keeps them,
/// so a path that is not here is looked for by its last component as COMMON_PATH itself, a
/// folder in it, or one beside it.
fn project_folder(root: &Path, written: &str) -> Option<(PathBuf, bool)> {
    let as_written = root.join(written);
    if as_written.is_dir() {
        return Some((as_written, false));
    }
    let last = written
        .rsplit(['\\', '/'])
        .find(|c| !c.is_empty())
        .filter(|c| *c != "." && *c != ".." && !c.ends_with(':'))?;
    // `.` has no name and no parent: look around the folder it stands for.
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let root = root.as_path();
    let mut candidates = Vec::new();
    if root.file_name().is_some_and(|n| n == last) {
        candidates.push(root.to_owned());
    }
    candidates.push(root.join(last));
    if let Some(parent) = root.parent() {
        candidates.push(parent.join(last));
    }
    candidates
        .into_iter()
        .find(|c| c.is_dir())
        .map(|c| (c, true))
}

fn import_roster(mr: &Mailroom<'_>, file: &Path, project: &Name) -> Result<ImportReport> {
    let text = read_text(file)?;
    let mut report = ImportReport::default();
    for (line, row) in m_ai_l::table_rows(&text) {
        let Some(handle) = cell(&row, &["handle", "name", "member", "agent"]) else {
            report.problems.push(Problem {
                line,
                message: "roster row without a handle; skipped".into(),
            });
            continue;
        };
        let Ok(name) = mr.import_handle(handle, project) else {
            report.problems.push(Problem {
                line,
                message: format!("'{handle}' cannot be a handle; skipped"),
            });
            continue;
        };
        let role = cell(&row, &["role", "description"]).unwrap_or("");
        let status = match cell(&row, &["status", "state"])
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("inactive") | Some("disabled") | Some("off") => MemberStatus::Inactive,
            _ => MemberStatus::Active,
        };
        if mr.import_member(project, name.as_str(), role, status)? {
            report.imported += 1;
        } else {
            report.duplicates += 1;
        }
    }
    Ok(report)
}

/// A mailbox or archive file (`owner` is whose it is), or an outbox file (`owner` is `None`:
/// the first field of each line is the recipient and the sender is named by the file).
/// `scope` is the file's project, `None` for the operator's mailbox next to the registry.
fn import_m_ai_l_mail(
    mr: &Mailroom<'_>,
    file: &Path,
    scope: Option<&Name>,
    project: &Name,
    owner: Option<&Address>,
    state: State,
) -> Result<ImportReport> {
    let outbox = owner.is_none();
    let text = read_text(file)?;
    let parsed = if outbox {
        m_ai_l::parse_outbox(&text, file_time(file))
    } else {
        m_ai_l::parse(&text, file_time(file))
    };
    let mut report = ImportReport {
        problems: parsed.problems,
        ..ImportReport::default()
    };
    let stem = file_stem(file);
    let outbox_owner = stem.strip_prefix("outbox_").unwrap_or("").to_owned();
    for entry in parsed.entries {
        let record = Foreign {
            source_key: format!("m_ai_l:{}:{}:{}", project, stem, entry.line),
            from: if outbox {
                outbox_owner.clone()
            } else {
                entry.party.clone()
            },
            subject: entry.subject.clone(),
            body: entry.body.clone(),
            kind: if entry.subject.to_ascii_uppercase().starts_with("CORRECTION") {
                Kind::Correction
            } else {
                Kind::Info
            },
            priority: entry.priority,
            date: entry.timestamp,
        };
        let to = if let Some(owner) = owner {
            owner.clone()
        } else {
            let written = match entry.party.split_once('/') {
                Some((origin, handle)) => format!("{handle}@{origin}"),
                None => entry.party.clone(),
            };
            match mr.import_handle(&written, project) {
                Ok(_) if written == mailroom_core::HUMAN => Address::human(),
                Ok(h) => Address::in_project(
                    h,
                    written
                        .split_once('@')
                        .and_then(|(_, p)| Name::parse(p).ok())
                        .unwrap_or_else(|| project.clone()),
                ),
                Err(e) => {
                    report.problems.push(Problem {
                        line: entry.line,
                        message: e,
                    });
                    continue;
                }
            }
        };
        let mut message = match mr.foreign_message(&record, scope, vec![to.clone()], None) {
            Ok(m) => m,
            Err(e) => {
                report.problems.push(Problem {
                    line: entry.line,
                    message: e,
                });
                continue;
            }
        };
        // m_AI_l names a message by sender, recipient, timestamp and subject: the id derives
        // from those, so the sender's outbox line and the recipient's copy are one message,
        // and a message m_AI_l later moved to the archive file is still found on re-import.
        let key = format!(
            "m_ai_l:{}>{}:{}:{}",
            message.from,
            to,
            m_ai_l::format_timestamp(entry.timestamp),
            message.subject
        );
        message.id = mailroom_core::MessageId::derived(entry.timestamp, stable_hash(&[&key]));
        message.thread = message.id;
        let added = if outbox {
            mr.import_sent(&message)?
        } else {
            mr.import_mail(&to, &message, state)?
        };
        if added {
            report.imported += 1;
        } else {
            report.duplicates += 1;
        }
    }
    Ok(report)
}
