//! `import`: m_AI_l trees, repo-mailbox trees and protocol `mailbox.md` files into the store.
//! Each importer is idempotent (ids derive from the source) and reports every record it could
//! not read by file and line; nothing is dropped silently.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::interchange::{Problem, m_ai_l, stable_hash};
use mailroom_core::ops::{Foreign, ImportReport};
use mailroom_core::{Address, Error, Kind, Mailroom, MemberStatus, Name, Priority, State};
use mailroom_store_fs::frontmatter;
use serde_json::json;

use super::channel::{file_time, read_text};
use crate::cli::ImportFormat;
use crate::context::Ctx;
use crate::output;

/// What one file gave.
struct FileReport {
    file: String,
    report: ImportReport,
}

/// Shows `n of total` on a terminal, for large trees.
struct Progress {
    on: bool,
    total: usize,
    done: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal() && total >= 50,
            total,
            done: 0,
        }
    }

    fn tick(&mut self) {
        self.done += 1;
        if self.on && (self.done % 25 == 0 || self.done == self.total) {
            eprint!("\rimporting: {} of {} files", self.done, self.total);
            if self.done == self.total {
                eprintln!();
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
    let project = match ctx.identity()? {
        Some(i) => ctx.channel_project(&i.address)?,
        None => ctx.project()?,
    };
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
                report: mr.import_channel(&project, &name, &text, file_time(path))?,
            }]
        }
        ImportFormat::MAiL => import_m_ai_l(&mr, path, &project)?,
        ImportFormat::RepoMailbox => import_repo_mailbox(&mr, path, &project)?,
    };
    print_file_reports(ctx, &reports)
}

/// A protocol mailbox lives at `runs/<request-id>/mailbox.md`: the run is the channel.
fn default_channel(path: &Path) -> String {
    let candidate = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if Name::parse(&candidate).is_ok() {
        candidate
    } else {
        "imported".to_owned()
    }
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
        crate::outln!("{file}:{}: {}", p.line, p.message);
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

fn list_md(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "md") && p.is_file());
    files.sort();
    files
}

fn cell<'a>(row: &'a [(String, String)], keys: &[&str]) -> Option<&'a str> {
    row.iter()
        .find(|(k, _)| keys.iter().any(|want| k.replace([' ', '-'], "_") == *want))
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// An m_AI_l COMMON_PATH (with projects_config.md and the HUMAN mailbox) or one project folder.
fn import_m_ai_l(
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
        for (line, row) in m_ai_l::table_rows(&text) {
            let Some(name) = cell(&row, &["project", "project_handle", "handle", "name"]) else {
                report.problems.push(Problem {
                    line,
                    message: "row without a project name; skipped".into(),
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
            let dir = cell(&row, &["path", "project_path", "root", "dir", "directory"])
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(name));
            let dir = if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            };
            if !dir.is_dir() {
                report.problems.push(Problem {
                    line,
                    message: format!(
                        "the folder {} of project '{name}' does not exist; skipped",
                        dir.display()
                    ),
                });
                continue;
            }
            projects.push((handle, dir, line));
        }
        reports.push(FileReport {
            file: config.display().to_string(),
            report,
        });
    } else {
        projects.push((default_project.clone(), root.to_owned(), 0));
    }
    let mut files: Vec<(Option<Name>, PathBuf)> = Vec::new();
    for (project, dir, _) in &projects {
        let mut listed = list_md(dir);
        // The roster first: members keep their roles when their mailboxes are read after.
        listed.sort_by_key(|f| file_stem(f) != "roster");
        files.extend(listed.into_iter().map(|f| (Some(project.clone()), f)));
    }
    if config.is_file() {
        // The HUMAN mailbox sits next to projects_config.md.
        files.extend(
            list_md(root)
                .into_iter()
                .filter(|f| file_stem(f).starts_with("mailbox_HUMAN"))
                .map(|f| (None, f)),
        );
    }
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

fn problem_only(message: String) -> ImportReport {
    ImportReport {
        problems: vec![Problem { line: 1, message }],
        ..ImportReport::default()
    }
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
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
    let parsed = m_ai_l::parse(&text, file_time(file));
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

/// A repo-mailbox root: `<repo>/inbox`, `<repo>/archive`, `_broadcast/{inbox,archive,seen}`.
fn import_repo_mailbox(mr: &Mailroom<'_>, root: &Path, project: &Name) -> Result<Vec<FileReport>> {
    let mut reports = Vec::new();
    let mut repos: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    repos.retain(|p| p.is_dir());
    repos.sort();
    let mut work: Vec<(PathBuf, String, &'static str)> = Vec::new();
    for repo in &repos {
        let name = file_stem_full(repo);
        if name == "_broadcast" {
            for (sub, what) in [("inbox", "broadcast"), ("archive", "retracted")] {
                work.extend(
                    list_md(&repo.join(sub))
                        .into_iter()
                        .map(|f| (f, name.clone(), what)),
                );
            }
        } else if !name.starts_with('_') && !name.starts_with('.') {
            for (sub, what) in [("inbox", "pending"), ("archive", "archived")] {
                work.extend(
                    list_md(&repo.join(sub))
                        .into_iter()
                        .map(|f| (f, name.clone(), what)),
                );
            }
        }
    }
    let all = mr.channel_ref(project, mailroom_core::message::BROADCAST)?;
    let mut progress = Progress::new(work.len());
    let mut broadcast_ids: Vec<(String, mailroom_core::MessageId)> = Vec::new();
    let mut senders: Vec<(Name, mailroom_core::MessageId)> = Vec::new();
    for (file, repo, what) in work {
        progress.tick();
        let mut report = ImportReport::default();
        let file_name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let doc = match frontmatter::parse(&bytes) {
            Ok(d) => d,
            Err(e) => {
                report.problems.push(Problem {
                    line: 1,
                    message: format!("the file {e}; skipped"),
                });
                reports.push(FileReport {
                    file: file.display().to_string(),
                    report,
                });
                continue;
            }
        };
        let Some(from) = doc.text("from").filter(|f| !f.trim().is_empty()) else {
            report.problems.push(Problem {
                line: 1,
                message: "no 'from' in the frontmatter; skipped".into(),
            });
            reports.push(FileReport {
                file: file.display().to_string(),
                report,
            });
            continue;
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
                file_time(&file)
            }
        };
        let record = Foreign {
            source_key: format!("repo-mailbox:{repo}:{file_name}"),
            from: from.trim().to_owned(),
            subject: doc.text("subject").unwrap_or_default(),
            body: doc.body.clone(),
            kind: Kind::Info,
            priority: Priority::Medium,
            date,
        };
        let added = match what {
            "broadcast" | "retracted" => {
                match mr.foreign_message(&record, Some(project), vec![], Some(all.clone())) {
                    Ok(m) => {
                        broadcast_ids.push((file_name.clone(), m.id));
                        senders.push((m.from.handle.clone(), m.id));
                        mr.import_entry(&all, &m, what == "retracted")?
                    }
                    Err(e) => {
                        report.problems.push(Problem {
                            line: 1,
                            message: e,
                        });
                        reports.push(FileReport {
                            file: file.display().to_string(),
                            report,
                        });
                        continue;
                    }
                }
            }
            _ => {
                let handle = match mr.import_handle(&repo, project) {
                    Ok(h) => h,
                    Err(e) => {
                        report.problems.push(Problem {
                            line: 1,
                            message: e,
                        });
                        reports.push(FileReport {
                            file: file.display().to_string(),
                            report,
                        });
                        continue;
                    }
                };
                let to = Address::in_project(handle, project.clone());
                match mr.foreign_message(&record, Some(project), vec![to.clone()], None) {
                    Ok(m) => mr.import_mail(
                        &to,
                        &m,
                        if what == "pending" {
                            State::Unread
                        } else {
                            State::Done
                        },
                    )?,
                    Err(e) => {
                        report.problems.push(Problem {
                            line: 1,
                            message: e,
                        });
                        reports.push(FileReport {
                            file: file.display().to_string(),
                            report,
                        });
                        continue;
                    }
                }
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
    let mut seen_files: Vec<PathBuf> = std::fs::read_dir(&seen_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    seen_files.sort();
    for file in seen_files.into_iter().filter(|p| p.is_file()) {
        let mut report = ImportReport::default();
        let repo = file_stem_full(&file);
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

fn file_stem_full(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
