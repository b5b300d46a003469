//! m_AI_l's mailbox files: `SENDER // YYYYMMDD-HHMM // H|M|L // SUBJECT // Body` message lines,
//! bodies continuing on the following lines, a `<!-- END -->` sentinel at the end, and
//! `(((END)))` standing for the sentinel inside content; outbox files in that shape or the short
//! `YYYYMMDD-HHMM // RECIPIENT // SUBJECT`. Also its Markdown roster and project tables, and
//! what each file of a project folder is by its name.
//!
//! Nothing in the format marks the end of a body but the next message line, so a line counts as
//! one only when its second field is a timestamp, or reads like a damaged one (digits and date
//! punctuation only): prose with ` // ` in it stays body.

use jiff::Timestamp;

use super::{Disposition, Foreign, IdKey, Problem};
use crate::address::HUMAN;
use crate::message::{Kind, Priority};
use crate::store::MemberStatus;

pub const SENTINEL: &str = "<!-- END -->";
pub const ESCAPED_SENTINEL: &str = "(((END)))";

/// One message of an m_AI_l mailbox (or outbox) file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailEntry {
    /// The first field: the sender in a mailbox, the recipient in an outbox; `ORIGIN/HANDLE`
    /// for cross-project mail.
    pub party: String,
    pub timestamp: Timestamp,
    pub priority: Priority,
    pub subject: String,
    pub body: String,
    pub line: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub entries: Vec<MailEntry>,
    pub problems: Vec<Problem>,
}

/// `YYYYMMDD-HHMM` in UTC, m_AI_l's timestamp.
pub fn parse_timestamp(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    let shape_ok = s.len() == 13
        && s.bytes().enumerate().all(|(i, b)| {
            if i == 8 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !shape_ok {
        return None;
    }
    let dt = jiff::civil::DateTime::strptime("%Y%m%d-%H%M", s).ok()?;
    dt.to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

pub fn format_timestamp(t: Timestamp) -> String {
    t.strftime("%Y%m%d-%H%M").to_string()
}

fn unescape(s: &str) -> String {
    s.replace(ESCAPED_SENTINEL, SENTINEL)
}

/// Splits a message line into its fields, or `None` when it is not one.
fn message_fields(line: &str) -> Option<Vec<&str>> {
    let fields: Vec<&str> = line.split(" // ").collect();
    if fields.len() < 3 {
        return None;
    }
    let party = fields[0].trim();
    let looks_like_party = !party.is_empty()
        && !party.contains(char::is_whitespace)
        && party
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/@".contains(c));
    let ts = fields[1].trim();
    let looks_like_time = parse_timestamp(ts).is_some()
        || (fields.len() >= 4
            && ts.len() <= 25
            && ts.chars().filter(char::is_ascii_digit).count() >= 8
            && ts
                .chars()
                .all(|c| c.is_ascii_digit() || "-:/. TZ".contains(c)));
    (looks_like_party && looks_like_time).then_some(fields)
}

/// The outbox's short line `YYYYMMDD-HHMM // RECIPIENT // SUBJECT`: (time, recipient, subject).
fn short_outbox_fields(line: &str) -> Option<(Timestamp, &str, String)> {
    let (stamp, rest) = line.split_once(" // ")?;
    let timestamp = parse_timestamp(stamp)?;
    let (recipient, subject) = rest.split_once(" // ")?;
    let recipient = recipient.trim();
    let ok = !recipient.is_empty()
        && recipient
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/@".contains(c));
    ok.then(|| (timestamp, recipient, subject.trim().to_owned()))
}

/// Reads a mailbox or archive file (or an outbox written in the mailbox's line shape).
pub fn parse(text: &str, fallback_time: Timestamp) -> Parsed {
    parse_lines(text, fallback_time, false)
}

/// Reads an outbox file: lines in the mailbox's shape (the first field is the recipient) and
/// m_AI_l's short `YYYYMMDD-HHMM // RECIPIENT // SUBJECT` (no priority: M), in any mix.
pub fn parse_outbox(text: &str, fallback_time: Timestamp) -> Parsed {
    parse_lines(text, fallback_time, true)
}

fn parse_lines(text: &str, fallback_time: Timestamp, outbox: bool) -> Parsed {
    let mut out = Parsed::default();
    let mut current: Option<(MailEntry, Vec<String>)> = None;
    let mut after_sentinel = false;
    let mut saw_sentinel = false;
    let mut last_time = None;
    let flush = |cur: &mut Option<(MailEntry, Vec<String>)>, out: &mut Parsed| {
        if let Some((mut e, body)) = cur.take() {
            let mut lines: Vec<String> = body;
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            e.body = unescape(&lines.join("\n"));
            out.entries.push(e);
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        if raw.trim() == SENTINEL {
            flush(&mut current, &mut out);
            saw_sentinel = true;
            after_sentinel = true;
            continue;
        }
        if let Some((timestamp, recipient, subject)) = short_outbox_fields(raw).filter(|_| outbox) {
            flush(&mut current, &mut out);
            message_after_sentinel(&mut after_sentinel, &mut out, line_no);
            last_time = Some(timestamp);
            current = Some((
                MailEntry {
                    party: recipient.to_owned(),
                    timestamp,
                    priority: Priority::Medium,
                    subject: crate::text::clean_line(&unescape(&subject)),
                    body: String::new(),
                    line: line_no,
                },
                vec![],
            ));
            continue;
        }
        if let Some(fields) = message_fields(raw) {
            flush(&mut current, &mut out);
            message_after_sentinel(&mut after_sentinel, &mut out, line_no);
            let ts = fields[1].trim();
            let timestamp = match parse_timestamp(ts) {
                Some(t) => t,
                None => {
                    let stand_in = last_time.unwrap_or(fallback_time);
                    out.problems.push(Problem {
                        line: line_no,
                        message: format!("unreadable timestamp '{ts}'; imported with {stand_in}"),
                    });
                    stand_in
                }
            };
            last_time = Some(timestamp);
            let (priority, rest) = match fields[2].trim().parse::<Priority>() {
                Ok(p) if fields[2].trim().len() == 1 => (p, &fields[3..]),
                _ => {
                    out.problems.push(Problem {
                        line: line_no,
                        message: "no priority field; imported as M".into(),
                    });
                    (Priority::Medium, &fields[2..])
                }
            };
            let subject = rest.first().map(|s| unescape(s.trim())).unwrap_or_default();
            let first_body = if rest.len() > 1 {
                rest[1..].join(" // ")
            } else {
                String::new()
            };
            current = Some((
                MailEntry {
                    party: fields[0].trim().to_owned(),
                    timestamp,
                    priority,
                    subject: crate::text::clean_line(&subject),
                    body: String::new(),
                    line: line_no,
                },
                if first_body.trim().is_empty() {
                    vec![]
                } else {
                    vec![first_body.trim_start().to_owned()]
                },
            ));
            continue;
        }
        match &mut current {
            Some((_, body)) => body.push(raw.to_owned()),
            None if raw.trim().is_empty() || raw.trim_start().starts_with('#') => {}
            None if after_sentinel => {
                out.problems.push(Problem {
                    line: line_no,
                    message: format!(
                        "text after the {SENTINEL} sentinel that is not a message; skipped"
                    ),
                });
            }
            None => out.problems.push(Problem {
                line: line_no,
                message: "text before the first message line; skipped".into(),
            }),
        }
    }
    flush(&mut current, &mut out);
    if !saw_sentinel && !out.entries.is_empty() {
        out.problems.push(Problem {
            line: text.lines().count().max(1),
            message: format!("no {SENTINEL} sentinel; read to the end of the file"),
        });
    }
    out
}

fn message_after_sentinel(after_sentinel: &mut bool, out: &mut Parsed, line: usize) {
    if std::mem::take(after_sentinel) {
        out.problems.push(Problem {
            line,
            message: format!("message found after the {SENTINEL} sentinel; imported anyway"),
        });
    }
}

/// A Markdown table's rows as (1-based line, column name (lowercase) → cell) maps.
pub fn table_rows(text: &str) -> Vec<(usize, Vec<(String, String)>)> {
    let mut rows = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if !t.starts_with('|') {
            header = None;
            continue;
        }
        let cells: Vec<String> = t
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`').trim().to_owned())
            .collect();
        match &header {
            None => header = Some(cells.iter().map(|c| c.to_ascii_lowercase()).collect()),
            Some(_)
                if cells
                    .iter()
                    .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' '))) => {}
            Some(h) => rows.push((i + 1, h.iter().cloned().zip(cells).collect())),
        }
    }
    rows
}

/// One project of `projects_config.md`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectRow {
    pub line: usize,
    pub handle: Option<String>,
    /// The project's folder as written (absolute, often a Windows path, or relative).
    pub folder: Option<String>,
}

/// Reads `projects_config.md`, finding its columns by meaning rather than by one spelling: the
/// folder is the first column whose name says path, folder or directory (`Absolute path`,
/// `Path`, `Project path`, `Folder`) and is not the roster's or a mailbox's; the handle is the
/// first other column named for the project, its handle or name (`Project handle`, `Project`).
pub fn project_rows(text: &str) -> Vec<ProjectRow> {
    fn words(column: &str) -> Vec<&str> {
        column
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect()
    }
    let is_folder = |column: &str| {
        let w = words(column);
        w.iter()
            .any(|w| ["path", "folder", "dir", "directory", "root", "location"].contains(w))
            && !w
                .iter()
                .any(|w| ["roster", "mailbox", "outbox"].contains(w))
    };
    let is_handle = |column: &str| {
        !is_folder(column)
            && words(column)
                .iter()
                .any(|w| ["project", "handle", "name"].contains(w))
    };
    table_rows(text)
        .into_iter()
        .map(|(line, row)| {
            let find = |want: &dyn Fn(&str) -> bool| {
                row.iter()
                    .find(|(k, _)| want(k))
                    .map(|(_, v)| v.clone())
                    .filter(|v| !v.is_empty())
            };
            ProjectRow {
                line,
                handle: find(&is_handle),
                folder: find(&is_folder),
            }
        })
        .collect()
}

/// What a file of an m_AI_l folder holds, by its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileRole {
    /// `roster.md`.
    Roster,
    /// `mailbox_<H>.md` (pending), `mailbox_<H>_archive.md` (archived) or `outbox_<H>.md`
    /// (sent): `owner` is `<H>`.
    Mail {
        owner: String,
        disposition: Disposition,
    },
    /// `<file>.<hex>.tmp`: m_AI_l's file server writes one and renames it over the file, so one
    /// left behind is an interrupted write, never mail.
    Temp,
    /// Anything else (`ETAT_ACTUEL.md`, `projects_config.md`, conventions): not mail.
    Other,
}

/// The role of a file named `file_name` in an m_AI_l folder.
pub fn file_role(file_name: &str) -> FileRole {
    if file_name.ends_with(".tmp") {
        return FileRole::Temp;
    }
    let Some(stem) = file_name.strip_suffix(".md") else {
        return FileRole::Other;
    };
    if stem == "roster" {
        return FileRole::Roster;
    }
    let (owner, disposition) = if let Some(rest) = stem.strip_prefix("mailbox_") {
        match rest.strip_suffix("_archive") {
            Some(owner) => (owner, Disposition::Archived),
            None => (rest, Disposition::Pending),
        }
    } else if let Some(owner) = stem.strip_prefix("outbox_") {
        (owner, Disposition::Sent)
    } else {
        return FileRole::Other;
    };
    if owner.is_empty() {
        return FileRole::Other;
    }
    FileRole::Mail {
        owner: owner.to_owned(),
        disposition,
    }
}

/// Whether `file_name` is the operator's mailbox (or its archive), which sits beside
/// `projects_config.md` and belongs to no project.
pub fn is_human_mailbox(file_name: &str) -> bool {
    matches!(
        file_role(file_name),
        FileRole::Mail { owner, disposition } if owner == HUMAN && disposition != Disposition::Sent
    )
}

/// The records of a mail file whose role is [`FileRole::Mail`]: in a mailbox or archive the
/// first field is the sender and `owner` the recipient; in an outbox `owner` is the sender and
/// the first field the recipient.
pub fn mail_records(
    owner: &str,
    disposition: Disposition,
    text: &str,
    fallback_time: Timestamp,
) -> (Vec<Foreign>, Vec<Problem>) {
    let sent = disposition == Disposition::Sent;
    let parsed = if sent {
        parse_outbox(text, fallback_time)
    } else {
        parse(text, fallback_time)
    };
    let records = parsed
        .entries
        .into_iter()
        .map(|e| {
            let (from, to) = if sent {
                (owner.to_owned(), e.party)
            } else {
                (e.party, owner.to_owned())
            };
            Foreign {
                id_key: IdKey::Parties,
                disposition,
                from,
                to: Some(to),
                // m_AI_l has no type field: a subject that starts by naming a kind
                // (`CORRECTION: …`) says it.
                kind: super::guess_kind(&e.subject).unwrap_or(Kind::Info),
                subject: e.subject,
                body: e.body,
                priority: e.priority,
                date: e.timestamp,
                line: e.line,
            }
        })
        .collect();
    (records, parsed.problems)
}

/// One member of a `roster.md`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RosterRow {
    pub line: usize,
    pub handle: String,
    pub role: String,
    pub status: MemberStatus,
}

/// Reads a `roster.md`: its members, and a problem for each row that cannot be one (no handle;
/// `HUMAN`, which m_AI_l lists in every roster but is the operator's global mailbox, never a
/// member of a project).
pub fn roster_rows(text: &str) -> (Vec<RosterRow>, Vec<Problem>) {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (line, row) in table_rows(text) {
        let Some(handle) = cell(&row, &["handle", "name", "member", "agent"]) else {
            problems.push(Problem {
                line,
                message: "roster row without a handle; skipped".into(),
            });
            continue;
        };
        if handle.eq_ignore_ascii_case(HUMAN) {
            problems.push(Problem {
                line,
                message: "HUMAN is the operator's global mailbox, reachable from every project, never a roster member; skipped".into(),
            });
            continue;
        }
        let status = match cell(&row, &["status", "state"])
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("inactive") | Some("disabled") | Some("off") => MemberStatus::Inactive,
            _ => MemberStatus::Active,
        };
        rows.push(RosterRow {
            line,
            handle: handle.to_owned(),
            role: cell(&row, &["role", "description"])
                .unwrap_or("")
                .to_owned(),
            status,
        });
    }
    (rows, problems)
}

/// The first non-empty cell of a column named one of `keys` (spaces and dashes read as `_`).
fn cell<'a>(row: &'a [(String, String)], keys: &[&str]) -> Option<&'a str> {
    row.iter()
        .find(|(k, _)| keys.iter().any(|want| k.replace([' ', '-'], "_") == *want))
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        parse_timestamp(s).unwrap()
    }

    #[test]
    fn reads_messages_multi_line_bodies_and_the_escape() {
        let text = "# mailbox of BACKEND\nFRONTEND // 20260313-1422 // H // API ready // The endpoint is up.\nSecond line (((END))) here.\n\nOPS/INFRA // 20260313-1500 // L // Re: deploy // a // b\n<!-- END -->\n";
        let p = parse(text, Timestamp::UNIX_EPOCH);
        assert_eq!(p.problems, vec![]);
        assert_eq!(p.entries.len(), 2);
        let a = &p.entries[0];
        assert_eq!(
            (a.party.as_str(), a.priority, a.subject.as_str()),
            ("FRONTEND", Priority::High, "API ready")
        );
        assert_eq!(
            a.body,
            "The endpoint is up.\nSecond line <!-- END --> here."
        );
        assert_eq!(a.timestamp, t("20260313-1422"));
        let b = &p.entries[1];
        assert_eq!(
            (b.party.as_str(), b.body.as_str(), b.line),
            ("OPS/INFRA", "a // b", 5)
        );
    }

    #[test]
    fn recovers_damaged_files_and_reports_by_line() {
        let text = "stray words\nA // 2026031-1422 // M // bad time // x\nB // 20260313-1423 // no priority // body\n<!-- END -->\nC // 20260313-1424 // L // after the end // y\n";
        let p = parse(text, t("20260101-0000"));
        let subjects: Vec<&str> = p.entries.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, vec!["bad time", "no priority", "after the end"]);
        let lines: Vec<usize> = p.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![1, 2, 3, 5]);
    }

    #[test]
    fn a_bad_timestamp_keeps_the_message() {
        let text = "A // 20261399-9999 // M // s // body\n<!-- END -->\n";
        let p = parse(text, t("20260101-0000"));
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.entries[0].timestamp, t("20260101-0000"));
        assert_eq!(p.problems.len(), 1);
        assert_eq!(p.problems[0].line, 1);
    }

    #[test]
    fn missing_sentinel_is_reported_not_fatal() {
        let p = parse("A // 20260313-1422 // M // s // b\n", Timestamp::UNIX_EPOCH);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.problems.len(), 1);
    }

    #[test]
    fn an_outbox_is_read_in_the_short_shape_and_the_mailbox_shape() {
        let text = "20261105-1430 // BACKEND // Re: Repo layout agreed\nBACKEND // 20261106-0900 // H // Schema // body\n20261113-1000 // shop/OPS // Review done: a // b\n<!-- END -->\n";
        let p = parse_outbox(text, Timestamp::UNIX_EPOCH);
        assert_eq!(p.problems, vec![]);
        let got: Vec<(&str, Timestamp, Priority, &str, &str)> = p
            .entries
            .iter()
            .map(|e| {
                (
                    e.party.as_str(),
                    e.timestamp,
                    e.priority,
                    e.subject.as_str(),
                    e.body.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "BACKEND",
                    t("20261105-1430"),
                    Priority::Medium,
                    "Re: Repo layout agreed",
                    ""
                ),
                (
                    "BACKEND",
                    t("20261106-0900"),
                    Priority::High,
                    "Schema",
                    "body"
                ),
                (
                    "shop/OPS",
                    t("20261113-1000"),
                    Priority::Medium,
                    "Review done: a // b",
                    ""
                ),
            ]
        );
        // A mailbox never holds the short shape: there such a line is body.
        let mailbox = parse(
            "A // 20261105-1400 // M // s // quoting my outbox:\n20261105-1430 // BACKEND // Re: x\n<!-- END -->\n",
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!(mailbox.entries.len(), 1);
    }

    #[test]
    fn a_body_line_with_slashes_is_not_a_message_unless_its_second_field_is_a_time() {
        let text = "A // 20260313-1422 // M // s // first\nNOTE // v2 // see // above\nPLAN // step 12 // then // 13\nB // 2026-03-13 14:30 // M // damaged time // kept as a message\n<!-- END -->\n";
        let p = parse(text, Timestamp::UNIX_EPOCH);
        let subjects: Vec<&str> = p.entries.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, vec!["s", "damaged time"]);
        assert_eq!(
            p.entries[0].body,
            "first\nNOTE // v2 // see // above\nPLAN // step 12 // then // 13"
        );
    }

    #[test]
    fn projects_config_columns_are_found_by_meaning() {
        let real = "# projects_config.md\n# Default language: fr\n\n| Project handle | Absolute path           | Roster                  | Language | Status |\n|----------------|-------------------------|-------------------------|----------|--------|\n| COMMON         | C:\\dev\\common           | C:\\dev\\common\\roster.md  | -        | active |\n";
        let short = "| Project | Path |\n|---|---|\n| shop | shop |\n";
        let other = "| Name | Roster path | Project path |\n|---|---|---|\n| web | x/roster.md | /srv/web |\n";
        let rows: Vec<Vec<ProjectRow>> = [real, short, other].map(project_rows).into();
        let row = |line, handle: &str, folder: &str| ProjectRow {
            line,
            handle: Some(handle.into()),
            folder: Some(folder.into()),
        };
        assert_eq!(
            rows,
            vec![
                vec![row(6, "COMMON", "C:\\dev\\common")],
                vec![row(3, "shop", "shop")],
                vec![row(3, "web", "/srv/web")],
            ]
        );
    }

    #[test]
    fn tables_are_read_by_column_name() {
        let text = "# Roster\n| Handle | Role | Status |\n|---|---|---|\n| `BACKEND` | api | active |\n| FRONTEND | web | inactive |\n";
        let rows = table_rows(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, 4);
        assert_eq!(rows[0].1[0], ("handle".to_owned(), "BACKEND".to_owned()));
        assert_eq!(rows[1].1[2], ("status".to_owned(), "inactive".to_owned()));
    }

    #[test]
    fn files_are_known_by_their_names() {
        let pending = |o: &str| FileRole::Mail {
            owner: o.into(),
            disposition: Disposition::Pending,
        };
        let cases = [
            ("roster.md", FileRole::Roster),
            ("mailbox_BACKEND.md", pending("BACKEND")),
            (
                "mailbox_BACKEND_archive.md",
                FileRole::Mail {
                    owner: "BACKEND".into(),
                    disposition: Disposition::Archived,
                },
            ),
            (
                "outbox_FRONTEND.md",
                FileRole::Mail {
                    owner: "FRONTEND".into(),
                    disposition: Disposition::Sent,
                },
            ),
            (
                "mailbox_BACKEND.md.5f2a0c1e9b7d4a6f8e3c2b1a0d9f8e7c.tmp",
                FileRole::Temp,
            ),
            ("ETAT_ACTUEL.md", FileRole::Other),
            ("mailbox_.md", FileRole::Other),
            ("mailbox_BACKEND.txt", FileRole::Other),
        ];
        for (name, role) in cases {
            assert_eq!(file_role(name), role, "{name}");
        }
        assert!(is_human_mailbox("mailbox_HUMAN_archive.md"));
        assert!(!is_human_mailbox("outbox_HUMAN.md"));
    }

    #[test]
    fn human_rows_of_a_roster_are_reported_not_members() {
        let text = "| Handle | Role | Mailbox | Status |\n|---|---|---|---|\n| HUMAN | Vision | C:\\dev\\common\\mailbox_HUMAN.md | active |\n| BACKEND | api | mailbox_BACKEND.md | disabled |\n|  | orphan | x | active |\n";
        let (rows, problems) = roster_rows(text);
        assert_eq!(
            rows,
            vec![RosterRow {
                line: 4,
                handle: "BACKEND".into(),
                role: "api".into(),
                status: MemberStatus::Inactive,
            }]
        );
        let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![3, 5]);
        assert!(problems[0].message.starts_with("HUMAN is the operator's"));
    }

    #[test]
    fn an_outbox_line_is_sent_by_the_files_owner_to_its_first_field() {
        let text = "20261105-1430 // shop/OPS // CORRECTION: port 8081\n<!-- END -->\n";
        let (records, problems) =
            mail_records("FRONTEND", Disposition::Sent, text, Timestamp::UNIX_EPOCH);
        assert_eq!(problems, vec![]);
        let r = &records[0];
        assert_eq!(
            (r.from.as_str(), r.to.as_deref(), r.kind, r.line),
            ("FRONTEND", Some("shop/OPS"), Kind::Correction, 1)
        );
        let (records, _) = mail_records(
            "BACKEND",
            Disposition::Archived,
            "A // 20261105-1430 // H // s // b\n<!-- END -->",
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!(
            (records[0].from.as_str(), records[0].to.as_deref()),
            ("A", Some("BACKEND"))
        );
        assert_eq!(records[0].disposition, Disposition::Archived);
    }
}
