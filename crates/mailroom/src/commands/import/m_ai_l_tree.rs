//! The m_AI_l importer: walks a COMMON_PATH with `projects_config.md`, each project's folder
//! and the operator's `mailbox_HUMAN.md` beside the registry, reads each file and hands its
//! text to the core (`interchange::m_ai_l` says what each file and line is,
//! `Mailroom::import_record` puts each message in place).

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::interchange::m_ai_l::{self, FileRole};
use mailroom_core::interchange::{Disposition, Problem};
use mailroom_core::ops::ImportReport;
use mailroom_core::{Address, Mailroom, Name, Policy};

use super::{FileReport, Progress, file_name_of, list_files, problem_only, read_found_text};

/// An m_AI_l COMMON_PATH (with projects_config.md and the HUMAN mailbox) or one project folder.
pub(super) fn import(
    mr: &Mailroom<'_>,
    importer: Option<&Address>,
    root: &Path,
    default_project: &Name,
) -> Result<Vec<FileReport>> {
    let mut reports = Vec::new();
    let mut projects: Vec<(Name, PathBuf, usize)> = Vec::new();
    let config = root.join("projects_config.md");
    // Present in any form but a directory: a registry that cannot be read is reported, never
    // mistaken for a project folder without one.
    let has_config = std::fs::symlink_metadata(&config).is_ok_and(|m| !m.is_dir());
    if has_config {
        let (text, mut report) = match read_found_text(&config) {
            Ok((text, _)) => (text, ImportReport::default()),
            Err(problem) => (String::new(), problem_only(problem)),
        };
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
        // A folder without a registry is one project's folder; one with nothing m_AI_l wrote
        // is a mistaken path, refused before the project is made.
        let holds_mail = list_files(root)
            .iter()
            .any(|f| m_ai_l::file_role(&file_name_of(f)) != FileRole::Other);
        if !holds_mail {
            return Err(mailroom_core::Error::Invalid(format!(
                "{} holds no projects_config.md, roster.md, mailbox_*.md or outbox_*.md; give an m_AI_l COMMON_PATH or project folder",
                root.display()
            ))
            .into());
        }
        projects.push((default_project.clone(), root.to_owned(), 0));
    }
    // The operator's mailbox sits next to projects_config.md; HUMAN's mailbox is unique, so
    // it is read once, outside any project, even when COMMON_PATH is also a project's folder.
    let human_files: Vec<PathBuf> = if has_config {
        list_files(root)
            .into_iter()
            .filter(|f| m_ai_l::is_human_mailbox(&file_name_of(f)))
            .collect()
    } else {
        Vec::new()
    };
    let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    for (project, _, _) in &projects {
        // m_AI_l routes by roster: each project it creates is a roster project.
        mr.check_may_import(importer, project, Policy::Roster)?;
    }
    let mut files: Vec<(Option<Name>, PathBuf, FileRole)> = Vec::new();
    for (project, dir, _) in &projects {
        // m_AI_l routes by roster: an unknown handle is an error there, so it is here too.
        mr.import_project(project, Policy::Roster)?;
        let mut listed: Vec<(PathBuf, FileRole)> = list_files(dir)
            .into_iter()
            .filter(|f| !human_files.iter().any(|h| same_file(f, h)))
            .map(|f| {
                let role = m_ai_l::file_role(&file_name_of(&f));
                (f, role)
            })
            .collect();
        // The roster first: members keep their roles when their mailboxes are read after.
        listed.sort_by_key(|(_, role)| *role != FileRole::Roster);
        for (file, role) in listed {
            match role {
                FileRole::Temp => reports.push(FileReport {
                    file: file.display().to_string(),
                    report: problem_only(
                        "a temporary file of an interrupted write, not mail; skipped".into(),
                    ),
                }),
                FileRole::Other => {}
                role => files.push((Some(project.clone()), file, role)),
            }
        }
    }
    files.extend(human_files.into_iter().map(|f| {
        let role = m_ai_l::file_role(&file_name_of(&f));
        (None, f, role)
    }));
    let mut progress = Progress::new(files.len());
    for (scope, file, role) in files {
        progress.tick();
        let project = scope.clone().unwrap_or_else(|| default_project.clone());
        let report = match role {
            FileRole::Roster => import_roster(mr, &file, &project)?,
            FileRole::Mail { owner, disposition } => import_mail(
                mr,
                importer,
                &file,
                scope.as_ref(),
                &project,
                &owner,
                disposition,
            )?,
            FileRole::Temp | FileRole::Other => continue,
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
    let text = match read_found_text(file) {
        Ok((text, _)) => text,
        Err(problem) => return Ok(problem_only(problem)),
    };
    let (rows, problems) = m_ai_l::roster_rows(&text);
    let mut report = ImportReport {
        problems,
        ..ImportReport::default()
    };
    for row in rows {
        let Ok(name) = mr.import_handle(&row.handle, project) else {
            report.problems.push(Problem {
                line: row.line,
                message: format!("'{}' cannot be a handle; skipped", row.handle),
            });
            continue;
        };
        if mr.import_member(project, name.as_str(), &row.role, row.status)? {
            report.imported += 1;
        } else {
            report.duplicates += 1;
        }
    }
    report.problems.sort_by_key(|p| p.line);
    Ok(report)
}

/// A mailbox, archive or outbox file of `owner`. `scope` is the file's project, `None` for the
/// operator's mailbox next to the registry.
fn import_mail(
    mr: &Mailroom<'_>,
    importer: Option<&Address>,
    file: &Path,
    scope: Option<&Name>,
    project: &Name,
    owner: &str,
    disposition: Disposition,
) -> Result<ImportReport> {
    let (text, modified) = match read_found_text(file) {
        Ok(read) => read,
        Err(problem) => return Ok(problem_only(problem)),
    };
    let (records, problems) = m_ai_l::mail_records(owner, disposition, &text, modified);
    let mut report = ImportReport {
        problems,
        ..ImportReport::default()
    };
    for record in records {
        match mr.import_record(importer, &record, scope, project)? {
            Ok(done) if done.added => report.imported += 1,
            Ok(_) => report.duplicates += 1,
            Err(message) => report.problems.push(Problem {
                line: record.line,
                message,
            }),
        }
    }
    Ok(report)
}
