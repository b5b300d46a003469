//! Conversions between the core's records and frontmatter documents: the file store's format,
//! kept at the edge so the core model is not shaped by it.
//!
//! Reading is tolerant: a missing optional field takes its default silently, a bad value takes
//! its default with a warning, and only a document with no usable sender or id is unreadable.

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::{
    Address, Kind, Member, MemberStatus, Message, MessageId, Name, Policy, Priority, Project,
};

use crate::frontmatter::{self, Doc, Writer};

/// Layout version written to `<home>/layout`.
pub const LAYOUT_VERSION: &str = "1";

pub fn message_to_text(m: &Message) -> String {
    let mut w = Writer::new();
    w.token("id", &m.id.to_string())
        .token("from", &m.from.to_string())
        .list(
            "to",
            &m.to.iter().map(ToString::to_string).collect::<Vec<_>>(),
        )
        .text("subject", &m.subject)
        .token("kind", m.kind.as_str())
        .token("priority", m.priority.as_str())
        .token("date", &m.date.to_string());
    if let Some(r) = m.reply_to {
        w.token("reply_to", &r.to_string());
    }
    w.token("thread", &m.thread.to_string());
    if m.revision > 1 {
        w.token("revision", &m.revision.to_string());
    }
    if let Some(e) = m.edited {
        w.token("edited", &e.to_string());
    }
    if let Some(c) = &m.channel {
        w.token("channel", &c.to_string());
    }
    w.finish(&m.body)
}

/// A message read back, with what had to be defaulted.
pub struct Decoded {
    pub message: Message,
    pub warnings: Vec<String>,
    /// The id the header names, when it names a valid one (the file name may disagree).
    pub header_id: Option<MessageId>,
}

/// Decodes a message file. `file_id` (from the file name) is the authority for the id;
/// `owner` is the mailbox it was found in (the recipient when `to` is missing).
pub fn message_from_bytes(
    bytes: &[u8],
    file_id: Option<MessageId>,
    owner: &Address,
) -> Result<Decoded, String> {
    let doc = frontmatter::parse(bytes).map_err(|e| format!("the file {e}"))?;
    let mut warnings = Vec::new();
    let header_id = doc.text("id").and_then(|s| MessageId::parse(s.trim()));
    let id = match (file_id, header_id) {
        (Some(f), Some(h)) if f != h => {
            warnings.push(format!(
                "the header says id {h} but the file is named {f}; the name wins"
            ));
            f
        }
        (Some(f), _) => f,
        (None, Some(h)) => h,
        (None, None) => return Err("has no valid id (neither its name nor its header)".into()),
    };
    let from = match doc.text("from") {
        Some(f) => Address::parse_canonical(f.trim())
            .map_err(|e| format!("has a sender '{}' that is not an address: {e}", f.trim()))?,
        None => return Err("has no 'from' field".into()),
    };
    let mut to = Vec::new();
    for t in doc.get("to").map(|v| v.list()).unwrap_or_default() {
        match Address::parse_canonical(t.trim()) {
            Ok(a) => to.push(a),
            Err(e) => warnings.push(format!("skipped the recipient '{t}': {e}")),
        }
    }
    // A missing `to` (hand-written) means the mailbox's owner; an empty list is a channel entry.
    if doc.get("to").is_none() {
        to.push(owner.clone());
    }
    let body = doc.body.clone();
    let subject = match doc.text("subject") {
        Some(s) => mailroom_core::text::clean_line(&s),
        None => {
            warnings.push("has no subject; the body's first line stands in".into());
            mailroom_core::text::default_subject(&body)
        }
    };
    let kind = parse_or(&doc, "kind", Kind::Info, &mut warnings, |s| s.parse().ok());
    let priority = parse_or(&doc, "priority", Priority::Medium, &mut warnings, |s| {
        s.parse().ok()
    });
    let date = match doc.text("date").map(|d| parse_time(&d)) {
        Some(Some(t)) => t,
        other => {
            if other.is_some() {
                warnings.push("has a date that is not RFC 3339; the id's time stands in".into());
            }
            id.timestamp()
        }
    };
    let reply_to = doc
        .text("reply_to")
        .and_then(|s| MessageId::parse(s.trim()));
    let thread = doc
        .text("thread")
        .and_then(|s| MessageId::parse(s.trim()))
        .unwrap_or(id);
    let revision = parse_or(&doc, "revision", 1, &mut warnings, |s| {
        s.parse::<u32>().ok().filter(|r| *r >= 1)
    });
    let edited = doc.text("edited").and_then(|s| parse_time(&s));
    let channel = match doc.text("channel") {
        None => None,
        Some(c) => {
            let parsed = ChannelRef::parse_canonical(&c);
            if parsed.is_none() {
                warnings.push(format!(
                    "has a channel '{}' that is not name@project; ignored",
                    c.trim()
                ));
            }
            parsed
        }
    };
    Ok(Decoded {
        message: Message {
            id,
            from,
            to,
            subject,
            body,
            kind,
            priority,
            date,
            reply_to,
            thread,
            revision,
            edited,
            channel,
        },
        warnings,
        header_id,
    })
}

fn parse_or<T>(
    doc: &Doc,
    key: &str,
    default: T,
    warnings: &mut Vec<String>,
    f: impl Fn(&str) -> Option<T>,
) -> T {
    match doc.text(key) {
        None => default,
        Some(s) if s.trim().is_empty() => default,
        Some(s) => f(s.trim()).unwrap_or_else(|| {
            warnings.push(format!(
                "has an unknown {key} '{}'; the default stands in",
                s.trim()
            ));
            default
        }),
    }
}

/// RFC 3339, or the forms people write by hand: the core's one tolerant reader.
pub use mailroom_core::interchange::parse_time;

pub fn member_to_text(m: &Member) -> String {
    let mut w = Writer::new();
    w.token("handle", m.handle.as_str())
        .text("role", &m.role)
        .token("status", m.status.as_str())
        .token("joined", &m.joined.to_string());
    if let Some(since) = m.since {
        w.token("since", &since.to_string());
    }
    w.finish("")
}

pub fn member_from_bytes(
    bytes: &[u8],
    handle: &Name,
    fallback_time: impl FnOnce() -> Timestamp,
) -> Member {
    let doc = frontmatter::parse(bytes).unwrap_or_default();
    Member {
        handle: handle.clone(),
        role: doc
            .text("role")
            .map(|r| mailroom_core::text::clean_line(&r))
            .unwrap_or_default(),
        status: doc
            .text("status")
            .and_then(|s| MemberStatus::parse(&s))
            .unwrap_or(MemberStatus::Active),
        joined: doc
            .text("joined")
            .and_then(|j| parse_time(&j))
            .unwrap_or_else(fallback_time),
        since: doc.text("since").and_then(|t| parse_time(&t)),
    }
}

pub fn project_to_text(p: &Project) -> String {
    let mut w = Writer::new();
    w.token("name", p.name.as_str())
        .token("policy", p.policy.as_str())
        .token("created", &p.created.to_string());
    w.finish("")
}

pub fn project_from_bytes(
    bytes: &[u8],
    name: &Name,
    fallback_time: impl FnOnce() -> Timestamp,
) -> Project {
    let doc = frontmatter::parse(bytes).unwrap_or_default();
    Project {
        name: name.clone(),
        policy: doc
            .text("policy")
            .and_then(|s| Policy::parse(&s))
            .unwrap_or(Policy::Open),
        created: doc
            .text("created")
            .and_then(|c| parse_time(&c))
            .unwrap_or_else(fallback_time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_zero_is_read_as_one_with_a_warning_so_a_rewrite_changes_nothing() {
        // Found by fuzzing (message_file): revision 0 decoded silently, then came back as 1.
        let owner = Address::human();
        let d = message_from_bytes(
            b"---\nfrom: HUMAN\nsubject: s\nrevision: 0\n---\n",
            Some(MessageId::generate()),
            &owner,
        )
        .unwrap();
        assert_eq!(d.message.revision, 1);
        assert_eq!(
            d.warnings,
            vec!["has an unknown revision '0'; the default stands in".to_owned()]
        );
        let again = message_from_bytes(
            message_to_text(&d.message).as_bytes(),
            Some(d.message.id),
            &owner,
        )
        .unwrap();
        assert_eq!((again.message, again.warnings), (d.message, vec![]));
    }
}
