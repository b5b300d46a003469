//! The checker: holds every copy on disk, and every listing a command printed, to the ledger.
//!
//! Invariant: a problem is never dropped; each falls in exactly one category, and a run with
//! any problem fails. Lost: an acknowledged copy is missing. Doubled: a copy in two states, or
//! one send present under two ids in a mailbox. Torn: a file or listed entry that does not
//! decode, or a body that is not byte for byte what was sent. Misdelivered: a copy in a mailbox
//! that is not among its recipients. Mismatch: the disk contradicts what an edit, cancel or
//! reply reported. Failed: a command or `doctor` ended in a way it must not.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::Instant;

use mailroom_core::Kind;
use serde_json::Value;

use crate::bodies::{self, Marker};
use crate::disk::{Folder, Snapshot};
use crate::ledger::{Cancel, Edit, EditOutcome, Ledger};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Lost,
    Doubled,
    Torn,
    Misdelivered,
    Mismatch,
    Failed,
}

impl Category {
    const ALL: [Category; 6] = [
        Category::Lost,
        Category::Doubled,
        Category::Torn,
        Category::Misdelivered,
        Category::Mismatch,
        Category::Failed,
    ];

    fn label(self) -> &'static str {
        match self {
            Category::Lost => "lost",
            Category::Doubled => "doubled",
            Category::Torn => "torn",
            Category::Misdelivered => "misdelivered",
            Category::Mismatch => "mismatched",
            Category::Failed => "failed",
        }
    }
}

/// Every problem found so far.
#[derive(Debug, Default)]
pub struct Problems {
    items: Vec<(Category, String)>,
}

impl Problems {
    pub fn push(&mut self, c: Category, what: impl Into<String>) {
        self.items.push((c, what.into()));
    }

    pub fn extend(&mut self, other: Problems) {
        self.items.extend(other.items);
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn count(&self, c: Category) -> usize {
        self.items.iter().filter(|(k, _)| *k == c).count()
    }

    /// Prefixes every problem found since `from` (an index from [`Problems::len`]).
    pub fn label_since(&mut self, from: usize, label: &str) {
        for (_, what) in self.items.iter_mut().skip(from) {
            *what = format!("{label}: {what}");
        }
    }

    /// Each problem on its own line (at most `limit`, then how many more).
    pub fn listing(&self, limit: usize) -> String {
        let mut out = String::new();
        for (c, what) in self.items.iter().take(limit) {
            out.push_str(&format!("  {}: {what}\n", c.label()));
        }
        if self.items.len() > limit {
            out.push_str(&format!("  … and {} more\n", self.items.len() - limit));
        }
        out
    }
}

impl fmt::Display for Problems {
    /// `lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Category::ALL
            .iter()
            .map(|c| format!("{}={}", c.label(), self.count(*c)))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// One copy of a message as something showed it: a file, or an entry of a listing.
#[derive(Debug)]
pub struct Seen<'a> {
    pub mailbox: &'a str,
    pub id: &'a str,
    pub from: String,
    pub body: &'a str,
    pub revision: u32,
    pub correction: bool,
    pub reply_to: Option<String>,
    /// Where it was seen, for the report.
    pub place: String,
}

/// Holds one copy to the ledger; returns the send it belongs to (none for a CORRECTION).
pub fn check_seen(s: &Seen<'_>, ledger: &Ledger, p: &mut Problems) -> Option<Marker> {
    let at = &s.place;
    if s.correction {
        let Some(orig_id) = &s.reply_to else {
            p.push(
                Category::Mismatch,
                format!("{at}: a CORRECTION without reply_to"),
            );
            return None;
        };
        let Some(orig) = ledger.by_id(orig_id) else {
            p.push(
                Category::Misdelivered,
                format!("{at}: a CORRECTION of {orig_id}, which no acknowledged send has as id"),
            );
            return None;
        };
        if orig.edit == Edit::None {
            p.push(
                Category::Mismatch,
                format!("{at}: a CORRECTION of {orig_id}, which was never edited"),
            );
        }
        if !orig.to.iter().any(|t| t == s.mailbox) || s.from != orig.marker.from {
            p.push(
                Category::Misdelivered,
                format!(
                    "{at}: a CORRECTION from {} of {orig_id} (from {} to {:?}) in {}",
                    s.from, orig.marker.from, orig.to, s.mailbox
                ),
            );
        }
        if !s.body.ends_with(&bodies::correction_tail(&orig.marker)) {
            p.push(
                Category::Torn,
                format!(
                    "{at}: the CORRECTION's body does not end with revision 2 of {}",
                    orig.marker
                ),
            );
        }
        if let Some((to, _)) = ledger.corrections().get(s.id)
            && to != s.mailbox
        {
            p.push(
                Category::Misdelivered,
                format!("{at}: CORRECTION {} was reported for {to}", s.id),
            );
        }
        return None;
    }
    let Some((marker, rev)) = bodies::parse_marker(s.body) else {
        p.push(
            Category::Torn,
            format!(
                "{at}: the body is not one the harness sent (starts {:?})",
                s.body.chars().take(60).collect::<String>()
            ),
        );
        return None;
    };
    let Some(send) = ledger.send(&marker) else {
        p.push(
            Category::Misdelivered,
            format!("{at}: a body of send {marker}, which was never planned"),
        );
        return None;
    };
    if !bodies::matches(s.body, &marker, rev) {
        p.push(
            Category::Torn,
            format!("{at}: the body differs from revision {rev} of {marker} as sent"),
        );
    }
    if s.revision != rev {
        p.push(
            Category::Torn,
            format!(
                "{at}: the header says revision {} but the body is revision {rev}",
                s.revision
            ),
        );
    }
    match rev {
        1 => {}
        2 if send.edit != Edit::None => {}
        2 => p.push(
            Category::Mismatch,
            format!("{at}: revision 2 of {marker}, which was never edited"),
        ),
        r => p.push(Category::Torn, format!("{at}: revision {r} of {marker}")),
    }
    if s.from != marker.from {
        p.push(
            Category::Misdelivered,
            format!("{at}: the body of {marker} under the sender {}", s.from),
        );
    }
    if !send.to.iter().any(|t| t == s.mailbox) {
        p.push(
            Category::Misdelivered,
            format!(
                "{at}: send {marker} (to {:?}) found in {}",
                send.to, s.mailbox
            ),
        );
    }
    if let Some(acked) = &send.id
        && acked != s.id
    {
        p.push(
            Category::Doubled,
            format!(
                "{at}: send {marker}, acknowledged as {acked}, is also here as {}",
                s.id
            ),
        );
    }
    Some(marker)
}

/// Checks a listing a command printed (`inbox`, `read`): nothing damaged, no id twice, every
/// entry one the ledger allows in `mailbox`. A listing of pending mail (`pending_since`: when
/// its command started) must show only unread or read copies, and none the ledger knows was
/// archived before the command started.
pub fn check_listing(
    v: &Value,
    mailbox: &str,
    what: &str,
    pending_since: Option<Instant>,
    ledger: &Ledger,
    p: &mut Problems,
) {
    if let Some(damaged) = v["damaged"].as_array() {
        for d in damaged {
            p.push(
                Category::Torn,
                format!("{what} of {mailbox} listed a damaged entry: {d}"),
            );
        }
    }
    if let Some(m) = v["mailbox"].as_str()
        && m != mailbox
    {
        p.push(
            Category::Misdelivered,
            format!("{what} of {mailbox} listed mailbox {m}"),
        );
    }
    let Some(messages) = v["messages"].as_array() else {
        p.push(
            Category::Failed,
            format!("{what} of {mailbox} printed no message list: {v}"),
        );
        return;
    };
    let mut ids = HashSet::new();
    for m in messages {
        let id = m["id"].as_str().unwrap_or("");
        if !ids.insert(id) {
            p.push(
                Category::Doubled,
                format!("{what} of {mailbox} listed {id} twice"),
            );
        }
        if let Some(started) = pending_since {
            let state = m["state"].as_str().unwrap_or("");
            if !matches!(state, "unread" | "read") {
                p.push(
                    Category::Mismatch,
                    format!("{what} of {mailbox} listed {id} as {state:?}, not pending"),
                );
            } else if ledger.done_before(mailbox, id, started) {
                p.push(
                    Category::Mismatch,
                    format!("{what} of {mailbox} listed {id}, archived before it started"),
                );
            }
        }
        let seen = Seen {
            mailbox,
            id,
            from: m["from"].as_str().unwrap_or("").to_owned(),
            body: m["body"].as_str().unwrap_or(""),
            revision: m["revision"].as_u64().unwrap_or(0) as u32,
            correction: m["kind"].as_str() == Some("CORRECTION"),
            reply_to: m["reply_to"].as_str().map(str::to_owned),
            place: format!("{what} of {mailbox}, message {id}"),
        };
        check_seen(&seen, ledger, p);
    }
}

/// Holds every file in the home to the ledger.
pub fn check_disk(snap: &Snapshot, ledger: &Ledger, p: &mut Problems) {
    // (mailbox, id) → (folders, revision)
    let mut states: HashMap<(&str, &str), (Vec<Folder>, u32)> = HashMap::new();
    let mut per_send: HashMap<(&str, Marker), HashSet<&str>> = HashMap::new();
    let mut corrections: HashMap<(&str, String), usize> = HashMap::new();
    for c in &snap.copies {
        let place = c.path.display().to_string();
        let m = match &c.decoded {
            Ok(m) => m,
            Err(e) => {
                p.push(Category::Torn, format!("{place} {e}"));
                continue;
            }
        };
        if !c.folder.is_state() {
            if m.from.to_string() != c.mailbox {
                p.push(
                    Category::Misdelivered,
                    format!("{place}: an outbox trace of a message from {}", m.from),
                );
            }
            continue;
        }
        let entry = states
            .entry((c.mailbox.as_str(), c.id.as_str()))
            .or_insert((Vec::new(), m.revision));
        entry.0.push(c.folder);
        let seen = Seen {
            mailbox: &c.mailbox,
            id: &c.id,
            from: m.from.to_string(),
            body: &m.body,
            revision: m.revision,
            correction: m.kind == Kind::Correction,
            reply_to: m.reply_to.map(|r| r.to_string()),
            place,
        };
        if let Some(marker) = check_seen(&seen, ledger, p) {
            per_send
                .entry((c.mailbox.as_str(), marker))
                .or_default()
                .insert(c.id.as_str());
        } else if let Some(r) = seen.reply_to.clone().filter(|_| seen.correction) {
            *corrections.entry((c.mailbox.as_str(), r)).or_default() += 1;
        }
    }
    for ((mailbox, id), (folders, _)) in &states {
        if folders.len() > 1 {
            p.push(
                Category::Doubled,
                format!("{id} is in {mailbox} {} times: {folders:?}", folders.len()),
            );
        }
    }
    for ((mailbox, marker), ids) in &per_send {
        if ids.len() > 1 {
            let mut ids: Vec<&&str> = ids.iter().collect();
            ids.sort();
            p.push(
                Category::Doubled,
                format!(
                    "send {marker} is in {mailbox} under {} ids: {ids:?}",
                    ids.len()
                ),
            );
        }
    }
    for ((mailbox, orig), n) in &corrections {
        if *n > 1 {
            p.push(
                Category::Doubled,
                format!("{mailbox} has {n} CORRECTIONs of {orig}, edited once"),
            );
        }
    }
    let folder_of = |mailbox: &str, id: &str| states.get(&(mailbox, id)).map(|(f, r)| (f[0], *r));
    for send in ledger.sends() {
        let Some(id) = &send.id else { continue };
        for to in &send.to {
            let Some((folder, revision)) = folder_of(to, id) else {
                p.push(
                    Category::Lost,
                    format!("send {} acknowledged as {id} is not in {to}", send.marker),
                );
                continue;
            };
            let cancelled = folder == Folder::Cancelled;
            let reported_cancelled = match &send.cancel {
                Cancel::None | Cancel::Refused => Some(false),
                Cancel::Unreported => None,
                Cancel::Reported(states) => {
                    Some(states.iter().any(|(r, st)| r == to && st == "cancelled"))
                }
            };
            if reported_cancelled.is_some_and(|r| r != cancelled) {
                p.push(
                    Category::Mismatch,
                    format!(
                        "{id} is {folder} in {to}, but its cancel reported {:?}",
                        send.cancel
                    ),
                );
            }
            if let Edit::Reported(outcomes) = &send.edit {
                let outcome = outcomes.iter().find(|(r, _)| r == to).map(|(_, o)| o);
                let ok = match outcome {
                    Some(EditOutcome::Edited) => revision == 2,
                    Some(EditOutcome::Correction(c)) => {
                        if folder_of(to, c).is_none() {
                            p.push(
                                Category::Lost,
                                format!("CORRECTION {c} of {id}, reported for {to}, is not there"),
                            );
                        }
                        revision == 1
                    }
                    Some(EditOutcome::Cancelled) => cancelled,
                    None => false,
                };
                if !ok {
                    p.push(
                        Category::Mismatch,
                        format!(
                            "{id} in {to} is {folder} at revision {revision}, but its edit reported {outcome:?}"
                        ),
                    );
                }
            }
        }
    }
    for (mailbox, id) in ledger.closed_copies() {
        match folder_of(mailbox, id) {
            Some((Folder::Done, _)) => {}
            other => p.push(
                Category::Mismatch,
                format!("a reply reported it closed {id} in {mailbox}, but it is {other:?}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mailroom_core::{Address, Kind, Message, MessageId, Priority};

    use super::*;
    use crate::disk::Copy;

    const ID: &str = "01KB3S9XGZ6V2Q1C1ZQ8D2M4TR";

    fn marker() -> Marker {
        Marker {
            from: "s0@stress".into(),
            seq: 1,
        }
    }

    fn message(body: String) -> Message {
        let id = MessageId::parse(ID).unwrap();
        Message {
            id,
            from: Address::parse_canonical("s0@stress").unwrap(),
            to: vec![],
            subject: "s".into(),
            body,
            kind: Kind::Info,
            priority: Priority::Medium,
            date: id.timestamp(),
            reply_to: None,
            thread: id,
            revision: 1,
            edited: None,
            channel: None,
        }
    }

    fn copy(mailbox: &str, folder: Folder, body: String) -> Copy {
        Copy {
            mailbox: mailbox.into(),
            folder,
            id: ID.into(),
            path: PathBuf::from(format!("{mailbox}/{folder}/{ID}.md")),
            decoded: Ok(message(body)),
        }
    }

    /// A listing of pending mail with an id twice, a copy shown as done, and a copy a `done`
    /// archived before the listing began: each is caught.
    #[test]
    fn a_pending_listing_with_an_id_twice_or_done_mail_is_caught() {
        let mut ledger = Ledger::default();
        ledger.plan_send(marker(), vec!["r0@stress".into()], None);
        ledger.ack_send(&marker(), ID).unwrap();
        let entry = |state: &str| {
            serde_json::json!({"id": ID, "from": "s0@stress", "body": bodies::body(&marker(), 1),
                "revision": 1, "kind": "INFO", "state": state})
        };
        let listing = |entries: Vec<Value>| serde_json::json!({"messages": entries, "damaged": []});
        let check = |v: &Value, ledger: &Ledger, since: Instant| {
            let mut p = Problems::default();
            check_listing(v, "r0@stress", "inbox", Some(since), ledger, &mut p);
            p.to_string()
        };
        let before = Instant::now();
        let clean = "lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0";
        assert_eq!(check(&listing(vec![entry("read")]), &ledger, before), clean);
        assert_eq!(
            check(
                &listing(vec![entry("unread"), entry("read")]),
                &ledger,
                before
            ),
            "lost=0 doubled=1 torn=0 misdelivered=0 mismatched=0 failed=0"
        );
        assert_eq!(
            check(&listing(vec![entry("done")]), &ledger, before),
            "lost=0 doubled=0 torn=0 misdelivered=0 mismatched=1 failed=0"
        );
        ledger.archived("r0@stress", ID, before);
        assert_eq!(check(&listing(vec![entry("read")]), &ledger, before), clean);
        let later = before + std::time::Duration::from_millis(1);
        assert_eq!(
            check(&listing(vec![entry("read")]), &ledger, later),
            "lost=0 doubled=0 torn=0 misdelivered=0 mismatched=1 failed=0"
        );
    }

    /// One acknowledged send to r0 and r1, held to the disk each case describes.
    #[test]
    fn each_kind_of_damage_is_caught_and_named() {
        let good = || bodies::body(&marker(), 1);
        let cases: Vec<(&str, Vec<Copy>, &str)> = vec![
            (
                "intact",
                vec![
                    copy("r0@stress", Folder::Unread, good()),
                    copy("r1@stress", Folder::Done, good()),
                ],
                "lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0",
            ),
            (
                "one copy missing",
                vec![copy("r0@stress", Folder::Unread, good())],
                "lost=1 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0",
            ),
            (
                "a body cut short",
                vec![
                    copy("r0@stress", Folder::Unread, good()),
                    copy("r1@stress", Folder::Read, good()[..40].to_owned()),
                ],
                "lost=0 doubled=0 torn=1 misdelivered=0 mismatched=0 failed=0",
            ),
            (
                "in two states",
                vec![
                    copy("r0@stress", Folder::Unread, good()),
                    copy("r0@stress", Folder::Read, good()),
                    copy("r1@stress", Folder::Read, good()),
                ],
                "lost=0 doubled=1 torn=0 misdelivered=0 mismatched=0 failed=0",
            ),
            (
                "a third mailbox",
                vec![
                    copy("r0@stress", Folder::Unread, good()),
                    copy("r1@stress", Folder::Read, good()),
                    copy("r2@stress", Folder::Read, good()),
                ],
                "lost=0 doubled=0 torn=0 misdelivered=1 mismatched=0 failed=0",
            ),
            (
                "cancelled by nobody",
                vec![
                    copy("r0@stress", Folder::Cancelled, good()),
                    copy("r1@stress", Folder::Read, good()),
                ],
                "lost=0 doubled=0 torn=0 misdelivered=0 mismatched=1 failed=0",
            ),
        ];
        for (name, copies, want) in cases {
            let mut ledger = Ledger::default();
            ledger.plan_send(marker(), vec!["r0@stress".into(), "r1@stress".into()], None);
            ledger.ack_send(&marker(), ID).unwrap();
            let snap = Snapshot {
                copies,
                temp_files: vec![],
            };
            let mut p = Problems::default();
            check_disk(&snap, &ledger, &mut p);
            assert_eq!(p.to_string(), want, "{name}:\n{}", p.listing(10));
        }
    }
}
