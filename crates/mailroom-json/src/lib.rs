//! The JSON shapes mailroom prints, written once for every front end: the CLI's `--json` and the
//! MCP server's structured results carry the same message object and the same reports.
//!
//! Invariant: a shape lives here or nowhere; front ends compose these values and add nothing
//! but the fields of their own envelope (docs/CLI.md documents each shape).
//!
//! ## Its modules
//!
//! the JSON every front end prints: `MessageOut` (the message object) and one function per
//! operation's report (`sent_json`, `edit_json`, `inbox_json`, …). The CLI's `--json` and the MCP
//! server's `structuredContent` are these values. *Never* decides anything.

use mailroom_core::ops::{
    CancelReport, ChannelRead, EditOutcome, EditReport, Inbox, MemberContext, OutboxEntry,
    Resolution, Search, Sent,
};
use mailroom_core::{
    Damaged, Mailroom, Member, Message, MessageId, Project, Result, State, Stored,
};
use serde_json::{Value, json};

/// A message as JSON (docs/CLI.md). Serialised field by field, in alphabetical order (as
/// `serde_json::Value` objects print), writing ids and dates straight into the output.
#[derive(Debug)]
pub struct MessageOut<'a> {
    m: &'a Message,
    state: Option<State>,
    warnings: &'a [String],
}

impl<'a> MessageOut<'a> {
    pub fn new(m: &'a Message, state: Option<State>, warnings: &'a [String]) -> MessageOut<'a> {
        MessageOut { m, state, warnings }
    }

    pub fn stored(s: &'a Stored) -> MessageOut<'a> {
        MessageOut::new(&s.message, Some(s.state), &s.warnings)
    }
}

/// Serialises a value through its `Display`, without an intermediate `String`.
struct Shown<T>(T);

impl<T: std::fmt::Display> serde::Serialize for Shown<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The recipients as one line: the addresses, or `#channel` for a channel entry.
struct ToLine<'a>(&'a Message);

impl std::fmt::Display for ToLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        if let (Some(c), true) = (&m.channel, m.to.is_empty()) {
            return write!(f, "#{c}");
        }
        for (i, t) in m.to.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl serde::Serialize for MessageOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let m = self.m;
        let mut st = s.serialize_struct("Message", 18)?;
        st.serialize_field("body", &m.body)?;
        st.serialize_field(
            "broadcast",
            &(m.is_channel_entry() && m.channel.as_ref().is_some_and(|c| c.is_broadcast())),
        )?;
        st.serialize_field("channel", &m.channel.as_ref().map(|c| c.name.as_str()))?;
        st.serialize_field("date", &Shown(m.date))?;
        st.serialize_field("edited", &m.edited.map(Shown))?;
        st.serialize_field("from", &Shown(&m.from))?;
        st.serialize_field("id", &Shown(m.id))?;
        st.serialize_field("kind", m.kind.as_str())?;
        st.serialize_field("priority", m.priority.as_str())?;
        let to: Vec<Shown<&mailroom_core::Address>> = m.to.iter().map(Shown).collect();
        st.serialize_field("recipients", &to)?;
        st.serialize_field("reply_to", &m.reply_to.map(Shown))?;
        st.serialize_field("revision", &m.revision)?;
        st.serialize_field("state", &self.state.map(State::as_str))?;
        st.serialize_field("subject", &m.subject)?;
        st.serialize_field("thread", &Shown(m.thread))?;
        st.serialize_field("timestamp", &Shown(timestamp(m)))?;
        st.serialize_field("to", &Shown(ToLine(m)))?;
        if !self.warnings.is_empty() {
            st.serialize_field("warnings", self.warnings)?;
        }
        st.end()
    }
}

/// m_AI_l's name for a message's minute: `YYYYMMDD-HHMM`, UTC.
pub fn timestamp(m: &Message) -> impl std::fmt::Display {
    m.date.strftime("%Y%m%d-%H%M")
}

/// The JSON object of a message, with the state of this copy.
pub fn message_json(m: &Message, state: Option<State>) -> Value {
    serde_json::to_value(MessageOut::new(m, state, &[])).unwrap_or(Value::Null)
}

pub fn stored_json(s: &Stored) -> Value {
    serde_json::to_value(MessageOut::stored(s)).unwrap_or(Value::Null)
}

pub fn damaged_json(d: &[Damaged]) -> Value {
    Value::Array(
        d.iter()
            .map(|d| json!({"location": d.location, "state": d.state.map(State::as_str), "problem": d.problem}))
            .collect(),
    )
}

/// What a send, reply, handover, broadcast or post did: the message with each recipient's copy
/// as the send left it (a keyed retry reads them now: it may find them read or done), its id
/// and m_AI_l timestamp.
/// `closed` is a reply's: whether it archived the original.
pub fn sent_json(mr: &Mailroom<'_>, sent: &Sent, closed: Option<bool>) -> Result<Value> {
    // A new message's id was made for this send, so every copy of it is one this send put in
    // place, unread: that is the state reported, without reading each back. A retry with a
    // used key reports each copy as it is now (the first send's may have been read).
    let mut states = Vec::with_capacity(sent.message.to.len());
    for to in &sent.message.to {
        let state = if sent.duplicate {
            mr.state_of(to, sent.message.id)?
        } else {
            Some(State::Unread)
        };
        states.push((to, state));
    }
    let common = match states.split_first() {
        Some(((_, first), rest)) if rest.iter().all(|(_, s)| s == first) => *first,
        // A post has no recipients: its entry is live in the channel.
        None if sent.message.channel.is_some() => Some(State::Unread),
        _ => None,
    };
    let mut v = json!({
        "id": sent.message.id.to_string(),
        "timestamp": timestamp(&sent.message).to_string(),
        "duplicate": sent.duplicate,
        "notices": sent.notices,
    });
    // Values set by index, not inside `json!`, which would copy each through `to_value`.
    v["message"] = message_json(&sent.message, common);
    v["recipients"] = Value::Array(
        states
            .iter()
            .map(|(to, s)| json!({"address": to.to_string(), "state": s.map(State::as_str)}))
            .collect(),
    );
    if let Some(c) = closed {
        v["closed"] = json!(c);
    }
    if sent.duplicate {
        let now: Vec<String> = sent.delivered_now.iter().map(ToString::to_string).collect();
        v["delivered_now"] = json!(now);
    }
    Ok(v)
}

/// What an edit did at each recipient.
pub fn edit_json(report: &EditReport) -> Value {
    let outcomes: Vec<Value> = report
        .outcomes
        .iter()
        .map(|(to, o)| match o {
            EditOutcome::Edited => json!({"recipient": to.to_string(), "outcome": "edited"}),
            EditOutcome::Corrected(id) => json!({"recipient": to.to_string(), "outcome": "correction", "correction_id": id.to_string()}),
            EditOutcome::Cancelled => json!({"recipient": to.to_string(), "outcome": "cancelled"}),
        })
        .collect();
    let mut v = serde_json::Map::new();
    v.insert("message".into(), message_json(&report.message, None));
    v.insert("outcomes".into(), Value::Array(outcomes));
    Value::Object(v)
}

/// What a cancel did at each recipient.
pub fn cancel_json(report: &CancelReport) -> Value {
    json!({
        "id": report.id.to_string(),
        "recipients": report.outcomes.iter().map(|(to, s)| json!({
            "recipient": to.to_string(),
            "state": s.as_str(),
            "changed": report.cancelled_now.contains(to),
        })).collect::<Vec<_>>(),
    })
}

/// The outbox: each sent message with each recipient's state.
pub fn outbox_json(entries: &[OutboxEntry]) -> Value {
    let messages: Vec<_> = entries
        .iter()
        .map(|e| {
            let mut v = message_json(&e.message, None);
            v["recipients"] = json!(
                e.recipients
                    .iter()
                    .map(
                        |(to, s)| json!({"address": to.to_string(), "state": s.map(|s| s.as_str())})
                    )
                    .collect::<Vec<_>>()
            );
            v["state"] = json!(
                e.recipients
                    .first()
                    .and_then(|(_, s)| s.map(|s| s.as_str()))
            );
            v
        })
        .collect();
    json!({"messages": messages})
}

/// Recently archived mail, each with when it was archived.
pub fn recover_json(recent: &[(Stored, jiff::Timestamp)]) -> Value {
    let messages: Vec<_> = recent
        .iter()
        .map(|(s, at)| {
            let mut v = stored_json(s);
            v["archived_at"] = json!(at.to_string());
            v
        })
        .collect();
    json!({"messages": messages})
}

/// Search hits, each with the folder it was found in.
pub fn search_json(found: &Search, notice: &str) -> Value {
    let messages: Vec<_> = found
        .hits
        .iter()
        .map(|h| {
            let mut v = stored_json(&h.stored);
            v["folder"] = json!(if h.sent { "outbox" } else { "mailbox" });
            v
        })
        .collect();
    json!({
        "messages": messages,
        "damaged": damaged_json(&found.damaged),
        "notice": notice,
    })
}

pub fn member_json(m: &Member) -> Value {
    json!({"handle": m.handle.as_str(), "role": m.role, "status": m.status.as_str(), "joined": m.joined.to_string()})
}

pub fn project_json(p: &Project) -> Value {
    json!({"name": p.name.as_str(), "policy": p.policy.as_str(), "created": p.created.to_string()})
}

/// A listing of pending mail shown to `mailbox` (`inbox`, m_AI_l's `read_mail`).
pub fn inbox_json(mailbox: &mailroom_core::Address, inbox: &Inbox, notice: &str) -> Value {
    #[derive(serde::Serialize)]
    struct InboxOut<'a> {
        damaged: Value,
        mailbox: String,
        messages: Vec<MessageOut<'a>>,
        more: usize,
        notice: &'a str,
    }
    serde_json::to_value(InboxOut {
        damaged: damaged_json(&inbox.damaged),
        mailbox: mailbox.to_string(),
        messages: inbox.messages.iter().map(MessageOut::stored).collect(),
        more: inbox.more,
        notice,
    })
    .unwrap_or(Value::Null)
}

/// [`inbox_json`] with `archived` (how many of the shown copies this read archived) added,
/// written straight to JSON text: the same object, member for member, as `inbox_json`'s value
/// with `"archived"` set, without building that value (for a listing of a thousand messages,
/// the tree's maps, strings and their freeing cost more than writing the text).
pub fn read_json_text(
    mailbox: &mailroom_core::Address,
    inbox: &Inbox,
    notice: &str,
    archived: usize,
) -> String {
    /// Members in the order `Value` objects print them (alphabetical).
    #[derive(serde::Serialize)]
    struct ReadOut<'a> {
        archived: usize,
        damaged: Value,
        mailbox: Shown<&'a mailroom_core::Address>,
        messages: Messages<'a>,
        more: usize,
        notice: &'a str,
    }
    /// The shown messages as a JSON array, each written as it is reached.
    struct Messages<'a>(&'a [Stored]);
    impl serde::Serialize for Messages<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.iter().map(MessageOut::stored))
        }
    }
    // About the size of the result: each message's fields around its body.
    let size = inbox
        .messages
        .iter()
        .map(|s| s.message.body.len() + s.message.subject.len() + 400)
        .sum::<usize>()
        + 512;
    let mut out = Vec::with_capacity(size);
    let written = serde_json::to_writer(
        &mut out,
        &ReadOut {
            archived,
            damaged: damaged_json(&inbox.damaged),
            mailbox: Shown(mailbox),
            messages: Messages(&inbox.messages),
            more: inbox.more,
            notice,
        },
    );
    match (written, String::from_utf8(out)) {
        (Ok(()), Ok(text)) => text,
        // Neither happens (every member serialises, and serde_json writes UTF-8); the value
        // is the same object the slow way.
        _ => {
            let mut v = inbox_json(mailbox, inbox, notice);
            v["archived"] = json!(archived);
            v.to_string()
        }
    }
}

/// The messages `done` archived, each with whether this call changed it.
pub fn done_json(results: &[(MessageId, bool)]) -> Value {
    json!({
        "messages": results.iter().map(|(id, moved)| json!({"id": id.to_string(), "state": "done", "changed": moved})).collect::<Vec<_>>(),
    })
}

/// The entries of a channel shown to a reader.
pub fn channel_read_json(read: &ChannelRead, notice: &str) -> Value {
    json!({
        "channel": read.channel.name.as_str(),
        "messages": read.messages.iter().map(stored_json).collect::<Vec<_>>(),
        "more": read.more,
        "damaged": damaged_json(&read.damaged),
        "notice": notice,
    })
}

/// What archiving a whole mailbox did.
pub fn archive_json(mailbox: &mailroom_core::Address, archived: usize) -> Value {
    json!({"archived": archived, "mailbox": mailbox.to_string()})
}

/// A member's context: address, project and policy, roster entry, pending counts.
pub fn member_context_json(c: &MemberContext) -> Value {
    let mut v = json!({
        "identity": c.address.to_string(),
        "handle": c.address.handle.as_str(),
        "project": c.address.project().map(|p| p.as_str()),
        "policy": c.project.as_ref().map(|p| p.policy.as_str()),
        "member": c.member.as_ref().map(|m| json!({"role": m.role, "status": m.status.as_str(), "joined": m.joined.to_string()})),
    });
    // Counted only for whoever may read the mailbox; absent otherwise.
    if let Some((unread, read)) = c.pending {
        v["unread"] = json!(unread);
        v["read"] = json!(read);
    }
    v
}

/// What a name may mean: the mailbox a send would reach and every candidate, in order.
pub fn resolution_json(name: &str, r: &Resolution) -> Value {
    json!({
        "name": name,
        "resolved": r.chosen.as_ref().map(|c| c.address.to_string()),
        "candidates": r.candidates.iter().map(|c| json!({"address": c.address.to_string(), "reason": c.reason})).collect::<Vec<_>>(),
        "note": r.note,
    })
}

/// One file reservation (`reserve`, `reservations`, `check`; MCP's `*_files` tools).
pub fn lease_json(l: &mailroom_core::Lease) -> Value {
    json!({
        "id": l.id.to_string(),
        "holder": l.holder.to_string(),
        "pattern": l.pattern,
        "exclusive": l.exclusive,
        "reason": l.reason,
        "since": l.since.to_string(),
        "until": l.until.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use mailroom_core::message::ChannelRef;
    use mailroom_core::ops::Inbox;
    use mailroom_core::{
        Address, Damaged, Kind, Message, MessageId, Name, Priority, State, Stored,
    };
    use serde_json::{Value, json};

    fn stored(i: u32, body: &str, channel: bool, warnings: Vec<String>) -> Stored {
        let at = jiff::Timestamp::from_second(1_800_000_000 + i64::from(i)).unwrap();
        let id = MessageId::generate_at(at);
        let message = Message {
            id,
            from: Address::parse_canonical("a@p").unwrap(),
            to: if channel {
                vec![]
            } else {
                vec![
                    Address::parse_canonical("b@p").unwrap(),
                    Address::parse_canonical("c@q").unwrap(),
                ]
            },
            subject: format!("subject {i} \"quoted\" \u{e9}"),
            body: body.to_owned(),
            kind: Kind::Info,
            priority: Priority::High,
            date: at,
            reply_to: i.is_multiple_of(2).then_some(id),
            thread: id,
            revision: i,
            edited: i.is_multiple_of(3).then_some(at),
            channel: channel.then(|| ChannelRef {
                project: Name::parse("p").unwrap(),
                name: Name::parse("all").unwrap(),
            }),
        };
        Stored {
            message,
            state: if i.is_multiple_of(2) {
                State::Read
            } else {
                State::Unread
            },
            warnings,
        }
    }

    /// The written text reads back as the value `inbox_json` builds, with `archived` set, and
    /// prints as that value prints.
    #[test]
    fn the_written_read_result_is_the_inbox_value() {
        let bodies = [
            "",
            "one line",
            "two\nlines\twith \\ and \" and \u{0}\u{1f}",
            "\u{2028} emoji \u{1f600}\n",
        ];
        let messages: Vec<Stored> = (0..8)
            .map(|i| {
                stored(
                    i,
                    bodies[i as usize % 4],
                    i == 5,
                    if i == 3 {
                        vec!["a warning".into()]
                    } else {
                        vec![]
                    },
                )
            })
            .collect();
        let me = Address::parse_canonical("b@p").unwrap();
        for (messages, damaged) in [
            (messages.clone(), vec![]),
            (
                vec![],
                vec![Damaged {
                    location: "x/y.md".into(),
                    state: Some(State::Unread),
                    problem: "no \"front\"".into(),
                }],
            ),
            (
                messages,
                vec![Damaged {
                    location: "z".into(),
                    state: None,
                    problem: "p".into(),
                }],
            ),
        ] {
            let inbox = Inbox {
                messages,
                more: 3,
                left_out: vec![],
                damaged,
            };
            let text = super::read_json_text(&me, &inbox, "a notice", 7);
            let mut value = super::inbox_json(&me, &inbox, "a notice");
            value["archived"] = json!(7);
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
            assert_eq!(text, value.to_string());
        }
    }
}
