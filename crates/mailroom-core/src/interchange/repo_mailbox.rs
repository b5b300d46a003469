//! repo-mailbox's tree: `<repo>/inbox` and `<repo>/archive` hold the mail sent to a repo,
//! `_broadcast/inbox` and `_broadcast/archive` the broadcasts (live and retracted), and
//! `_broadcast/seen/<repo>` the broadcast file names each repo was shown. Each message is one
//! file: a frontmatter header (`from`, `to`, `subject`, `date`), then the body.
//!
//! Invariant: a message's id key is its repo and file name, which repo-mailbox never reuses,
//! so importing a tree twice adds nothing; where a file sits decides its disposition.

use jiff::Timestamp;

use super::{Disposition, Foreign, IdKey, Problem, frontmatter};
use crate::message::{Kind, Priority};

/// The top folder of broadcasts and seen sets.
pub const BROADCAST_DIR: &str = "_broadcast";

/// The folder under [`BROADCAST_DIR`] holding one seen set per repo.
pub const SEEN_DIR: &str = "seen";

/// Why a dot-named file is not read.
pub const TEMP_SKIPPED: &str =
    "the name starts with '.': a temporary file of an unfinished write, not mail; skipped";

/// The folders of the top folder `top` that hold mail, and what their files are. Names
/// starting `_` or `.` other than [`BROADCAST_DIR`] are repo-mailbox's own, never a repo.
pub fn mail_folders(top: &str) -> &'static [(&'static str, Disposition)] {
    if top == BROADCAST_DIR {
        &[
            ("inbox", Disposition::Broadcast),
            ("archive", Disposition::Retracted),
        ]
    } else if top.starts_with(['_', '.']) {
        &[]
    } else {
        &[
            ("inbox", Disposition::Pending),
            ("archive", Disposition::Archived),
        ]
    }
}

/// Whether a file is a write repo-mailbox never finished: it writes each file under a dot name
/// beside its final one and renames it.
pub fn is_temp(file_name: &str) -> bool {
    file_name.starts_with('.')
}

/// Whether a (non-temporary) file of a mail folder is a message.
pub fn is_message(file_name: &str) -> bool {
    !is_temp(file_name) && file_name.ends_with(".md")
}

/// The record of the message file `file_name` found in `repo`'s (or [`BROADCAST_DIR`]'s)
/// folder of `disposition`; `Err` says why the file is skipped. Problems that do not stop it
/// (an unreadable date: `fallback_time` stands in) come with the record.
pub fn record(
    repo: &str,
    file_name: &str,
    disposition: Disposition,
    bytes: &[u8],
    fallback_time: Timestamp,
) -> Result<(Foreign, Vec<Problem>), String> {
    let doc = frontmatter::parse(bytes).map_err(|e| format!("the file {e}; skipped"))?;
    let from = doc
        .text("from")
        .map(|f| f.trim().to_owned())
        .filter(|f| !f.is_empty())
        .ok_or_else(|| "no 'from' in the frontmatter; skipped".to_owned())?;
    let mut problems = Vec::new();
    let date = match doc
        .text("date")
        .and_then(|d| super::mailbox_md::parse_timestamp(&d))
    {
        Some(t) => t,
        None => {
            problems.push(Problem {
                line: 1,
                message: "no readable 'date'; imported with the file's time".into(),
            });
            fallback_time
        }
    };
    let directed = matches!(disposition, Disposition::Pending | Disposition::Archived);
    let record = Foreign {
        id_key: IdKey::Place(format!("repo-mailbox:{repo}:{file_name}")),
        disposition,
        from,
        to: directed.then(|| repo.to_owned()),
        subject: doc.text("subject").unwrap_or_default(),
        kind: doc
            .text("type")
            .or_else(|| doc.text("kind"))
            .and_then(|k| super::guess_kind(&k))
            .unwrap_or(Kind::Info),
        body: doc.body,
        priority: Priority::Medium,
        date,
        line: 1,
    };
    Ok((record, problems))
}

/// The broadcast file names of a seen set, with their 1-based lines.
pub fn seen_names(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FILE: &str = "---\nfrom: web\nto: api\nsubject: Schema changed\ndate: 2026-03-13T14:22:05Z\n---\nThe users table has a new column.\n";

    #[test]
    fn a_message_file_becomes_a_record_keyed_by_repo_and_file_name() {
        let (r, problems) = record(
            "api",
            "20260313T142205Z-ab12-from-web.md",
            Disposition::Pending,
            FILE.as_bytes(),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(problems, vec![]);
        assert_eq!(
            r.id_key,
            IdKey::Place("repo-mailbox:api:20260313T142205Z-ab12-from-web.md".into())
        );
        assert_eq!(
            (r.from.as_str(), r.to.as_deref(), r.subject.as_str(), r.kind),
            ("web", Some("api"), "Schema changed", Kind::Info)
        );
        assert_eq!(r.body, "The users table has a new column.\n");
        assert_eq!(r.date.to_string(), "2026-03-13T14:22:05Z");
    }

    #[test]
    fn where_a_file_sits_decides_what_it_is() {
        assert_eq!(mail_folders("api")[1], ("archive", Disposition::Archived));
        assert_eq!(
            mail_folders("_broadcast")[0],
            ("inbox", Disposition::Broadcast)
        );
        assert!(mail_folders("_locks").is_empty());
        assert!(mail_folders(".git").is_empty());
        assert!(!is_message(".20260313-ab12.md"));
        assert!(is_message("20260313-ab12.md"));
        let (b, _) = record(
            "_broadcast",
            "x.md",
            Disposition::Broadcast,
            FILE.as_bytes(),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(b.to, None);
    }

    #[test]
    fn a_file_without_sender_or_header_is_skipped_with_the_reason() {
        let no_from = record(
            "api",
            "x.md",
            Disposition::Pending,
            b"---\nsubject: s\n---\nbody",
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!(
            no_from.map(|_| ()),
            Err("no 'from' in the frontmatter; skipped".into())
        );
        let torn = record(
            "api",
            "x.md",
            Disposition::Pending,
            b"---\nfrom: web\nsubj",
            Timestamp::UNIX_EPOCH,
        );
        assert!(torn.is_err_and(|e| e.contains("no closing '---'")));
        let (undated, problems) = record(
            "api",
            "x.md",
            Disposition::Archived,
            b"---\nfrom: web\ndate: soon\n---\n",
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(undated.date, Timestamp::UNIX_EPOCH);
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn seen_sets_skip_blank_lines_and_keep_line_numbers() {
        let names: Vec<(usize, &str)> = seen_names("a.md\n\n  b.md \n").collect();
        assert_eq!(names, vec![(1, "a.md"), (3, "b.md")]);
    }

    proptest! {
        #[test]
        fn any_file_is_read_or_skipped_with_a_reason(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            match record("api", "x.md", Disposition::Pending, &bytes, Timestamp::UNIX_EPOCH) {
                Ok((r, _)) => prop_assert!(!r.from.is_empty()),
                Err(reason) => prop_assert!(reason.ends_with("; skipped")),
            }
        }

        #[test]
        fn a_written_message_reads_back(
            from in "[a-z][a-z0-9-]{0,12}",
            subject in "[A-Za-z0-9][A-Za-z0-9 ,.!?]{0,40}",
            body in "(?s).{0,200}",
        ) {
            let text = format!("---\nfrom: {from}\nto: api\nsubject: {subject}\ndate: 2026-03-13T14:22:05Z\n---\n{body}");
            let (r, problems) = record("api", "x.md", Disposition::Pending, text.as_bytes(), Timestamp::UNIX_EPOCH).unwrap();
            prop_assert_eq!(problems, vec![]);
            prop_assert_eq!(r.from, from);
            prop_assert_eq!(r.subject, subject.trim_end().to_owned());
            prop_assert_eq!(r.body, body);
        }
    }
}
