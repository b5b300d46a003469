//! The formats of the systems mailroom replaces, as pure text ⇄ record conversions: the
//! mailbox protocol's `mailbox.md`, m_AI_l's mailbox files and tables, and repo-mailbox's
//! frontmatter files. Reading them never fails as a whole: what can be recovered is, and every
//! line that cannot is reported with its number.
//!
//! Every importer's rules are here, once: how an imported message's id derives from its source
//! ([`derived_id`]), how a foreign name becomes an address ([`written_address`]), how a foreign
//! type becomes a [`Kind`] ([`guess_kind`]). Importers only walk and read files.

use jiff::Timestamp;

use crate::message::{Kind, Message, MessageId, Priority};

pub mod frontmatter;
pub mod m_ai_l;
pub mod mailbox_md;
pub mod repo_mailbox;

/// A problem found while reading a file, at a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// A stable 128-bit hash of some text, for ids derived from content (re-imports must give the
/// same id on every machine and every version, which std's hashers do not promise). FNV-1a,
/// written out because it is eight lines and no dependency is worth it.
pub fn stable_hash(parts: &[&str]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// What a record was in its source, which decides where it lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Directed mail not yet handled there: delivered unread.
    Pending,
    /// Directed mail handled there: delivered to the archive.
    Archived,
    /// The sender's trace of mail it sent (m_AI_l's outbox): an outbox entry only.
    Sent,
    /// An entry of the project's broadcast channel.
    Broadcast,
    /// A broadcast its sender retracted.
    Retracted,
}

/// What an imported message's id derives from (see [`derived_id`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdKey {
    /// A place in the source that holds this message and no other (repo-mailbox: the repo and
    /// the file name).
    Place(String),
    /// Sender, recipient, minute and subject: how m_AI_l names a message, so the sender's outbox
    /// line and the recipient's copy are one message, and a message m_AI_l later moved to the
    /// archive file is still found.
    Parties,
    /// The protocol's own fields at its minute precision, and the entry's position in its file
    /// (which orders entries within a minute): a channel entry of a `mailbox.md`.
    Content { position: usize },
}

/// A record read from another system, before it becomes a message.
#[derive(Clone, Debug)]
pub struct Foreign {
    pub id_key: IdKey,
    pub disposition: Disposition,
    /// The sender as written there (`name`, `name@project`, `ORIGIN/NAME`, `HUMAN`).
    pub from: String,
    /// The recipient as written there, for directed mail (a mailbox's owner, an outbox line's
    /// recipient, a repo); `None` for channel entries.
    pub to: Option<String>,
    pub subject: String,
    pub body: String,
    pub kind: Kind,
    pub priority: Priority,
    pub date: Timestamp,
    /// The 1-based line it starts at in its file, for reports.
    pub line: usize,
}

/// The one id derivation of imported messages: the same source gives the same id on every
/// machine and every version, so importing twice adds nothing. `message` is the record as
/// resolved (its addresses are the ones it will be stored under).
pub fn derived_id(key: &IdKey, message: &Message) -> MessageId {
    match key {
        IdKey::Place(place) => {
            MessageId::derived(message.date, stable_hash(&["import", place.as_str()]))
        }
        IdKey::Parties => {
            let to = message.to.first().map(ToString::to_string);
            let key = format!(
                "m_ai_l:{}>{}:{}:{}",
                message.from,
                to.unwrap_or_default(),
                m_ai_l::format_timestamp(message.date),
                message.subject
            );
            MessageId::derived(message.date, stable_hash(&[&key]))
        }
        IdKey::Content { position } => {
            let offset = i64::try_from(*position).unwrap_or(i64::MAX);
            let at = message
                .date
                .checked_add(jiff::SignedDuration::from_millis(offset))
                .unwrap_or(message.date);
            MessageId::derived(at, content_key(message))
        }
    }
}

/// What makes two channel entries the same for imports: the protocol's own fields, at the
/// protocol's minute precision.
pub fn content_key(m: &Message) -> u128 {
    let minute = m.date.as_second().div_euclid(60).to_string();
    stable_hash(&[
        &minute,
        m.from.handle.as_str(),
        m.kind.as_str(),
        m.subject.trim(),
        // The body exactly: two entries whose bodies differ only in white space are two
        // entries (an export imports back byte for byte, so nothing needs trimming to match).
        &m.body,
    ])
}

/// A sender or recipient name as another system writes it, in mailroom's address syntax:
/// m_AI_l writes a cross-project party as `ORIGIN/HANDLE`, which is `HANDLE@ORIGIN` here.
/// Every other spelling is left as written.
pub fn written_address(party: &str) -> String {
    let party = party.trim();
    match party.split_once('/') {
        Some((origin, handle)) => format!("{handle}@{origin}"),
        None => party.to_owned(),
    }
}

/// The kind a foreign type or subject names by its first word (`HOLD_REQUEST`,
/// `info (non-blocking)`, `CORRECTION: …`), in any case; `None` when it names none.
pub fn guess_kind(text: &str) -> Option<Kind> {
    let word: String = text
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    word.parse().ok()
}

/// A timestamp as any of the formats writes it: RFC 3339, or the forms people and models write
/// by hand (`2026-03-13 14:22 UTC`, a bare date-time or date, in backquotes), read as UTC.
pub fn parse_time(s: &str) -> Option<Timestamp> {
    let s = s.trim().trim_matches('`').trim();
    if let Ok(t) = s.parse::<Timestamp>() {
        return Some(t);
    }
    let bare = s
        .trim_end_matches("UTC")
        .trim_end_matches("GMT")
        .trim_end_matches('Z')
        .trim();
    for fmt in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d",
    ] {
        if let Ok(dt) = jiff::civil::DateTime::strptime(fmt, bare) {
            return dt
                .to_zoned(jiff::tz::TimeZone::UTC)
                .ok()
                .map(|z| z.timestamp());
        }
        if let Ok(d) = jiff::civil::Date::strptime(fmt, bare) {
            return d
                .to_zoned(jiff::tz::TimeZone::UTC)
                .ok()
                .map(|z| z.timestamp());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cross_project_party_is_written_handle_at_origin() {
        assert_eq!(written_address(" shop/OPS "), "OPS@shop");
        assert_eq!(written_address("OPS@shop"), "OPS@shop");
        assert_eq!(written_address("HUMAN"), "HUMAN");
    }

    #[test]
    fn the_kind_is_the_first_word_in_any_case() {
        let cases = [
            ("HOLD_REQUEST", Some(Kind::HoldRequest)),
            ("info (non-blocking)", Some(Kind::Info)),
            ("CORRECTION: the port is 8081", Some(Kind::Correction)),
            ("interface-change", Some(Kind::InterfaceChange)),
            ("Re: CORRECTION", None),
            ("BLOCK", None),
            ("", None),
        ];
        for (text, kind) in cases {
            assert_eq!(guess_kind(text), kind, "{text}");
        }
    }

    /// Pinned: a change to any of these would make every re-import of an already imported
    /// source add each message again.
    #[test]
    fn imported_ids_are_the_ones_earlier_versions_derived() {
        let at: Timestamp = "2026-03-13T14:22:00Z".parse().unwrap();
        let message = Message {
            id: MessageId::derived(at, 0),
            from: crate::Address::parse_canonical("web@shop").unwrap(),
            to: vec![crate::Address::human()],
            subject: "Schema changed".into(),
            body: "new column".into(),
            kind: Kind::Info,
            priority: Priority::Medium,
            date: at,
            reply_to: None,
            thread: MessageId::derived(at, 0),
            revision: 1,
            edited: None,
            channel: None,
        };
        let ids = [
            IdKey::Place("repo-mailbox:api:x.md".into()),
            IdKey::Parties,
            IdKey::Content { position: 2 },
        ]
        .map(|k| derived_id(&k, &message).to_string());
        assert_eq!(
            ids,
            [
                "01KKKS6PT0FPFQQKZ0JH2Z0XAG",
                "01KKKS6PT08TRCZ4N6KCA9VKPR",
                "01KKKS6PT2DWWVAH73386W1JEJ"
            ]
        );
    }

    #[test]
    fn stable_hash_is_stable_and_separates_parts() {
        assert_eq!(super::stable_hash(&["a"]), super::stable_hash(&["a"]));
        assert_ne!(
            super::stable_hash(&["ab", "c"]),
            super::stable_hash(&["a", "bc"])
        );
        // Pinned to values computed outside this code (FNV-1a 128 of "mailroom" then the 0xff
        // separator): a change here would duplicate every re-imported message.
        assert_eq!(
            format!("{:032x}", super::stable_hash(&["mailroom"])),
            "cbe1d2823605cd6b410b94f220825abe"
        );
        assert_eq!(
            format!("{:032x}", super::stable_hash(&[])),
            "6c62272e07bb014262b821756295c58d",
            "no input leaves FNV's offset basis"
        );
    }
}
