//! Rows ⇄ the core's records: the message columns every message table shares, the keys names
//! are stored under, and the decoding of a row that does not read as a message into a
//! `Damaged` entry rather than an error.

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::{Address, Damaged, Kind, Message, MessageId, Name, Priority, Scope, State};
use postgres::Row;
use postgres::types::{ToSql, Type};

/// The message columns of `copies`, `outbox` and `entries`, in parameter order.
pub(crate) const MSG_COLS: &str = "sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision, edited, channel";

/// `$first` … `$(first + 11)`: the placeholders of [`MSG_COLS`].
pub(crate) fn msg_placeholders(first: usize) -> String {
    (first..first + 12)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A message's column values, borrowed where they can be.
pub(crate) struct Cols<'a> {
    sender: String,
    recipients: Vec<String>,
    subject: &'a str,
    body: &'a str,
    kind: &'static str,
    priority: &'static str,
    date: String,
    reply_to: Option<String>,
    thread: String,
    revision: i64,
    edited: Option<String>,
    channel: Option<String>,
}

impl<'a> Cols<'a> {
    pub(crate) fn of(m: &'a Message) -> Cols<'a> {
        Cols {
            sender: m.from.to_string(),
            recipients: m.to.iter().map(ToString::to_string).collect(),
            subject: &m.subject,
            body: &m.body,
            kind: m.kind.as_str(),
            priority: m.priority.as_str(),
            date: m.date.to_string(),
            reply_to: m.reply_to.map(|r| r.to_string()),
            thread: m.thread.to_string(),
            revision: i64::from(m.revision),
            edited: m.edited.map(|e| e.to_string()),
            channel: m.channel.as_ref().map(ToString::to_string),
        }
    }

    /// The typed parameters, in [`MSG_COLS`] order.
    pub(crate) fn params(&self) -> [(&(dyn ToSql + Sync), Type); 12] {
        [
            (&self.sender, Type::TEXT),
            (&self.recipients, Type::TEXT_ARRAY),
            (&self.subject, Type::TEXT),
            (&self.body, Type::TEXT),
            (&self.kind, Type::TEXT),
            (&self.priority, Type::TEXT),
            (&self.date, Type::TEXT),
            (&self.reply_to, Type::TEXT),
            (&self.thread, Type::TEXT),
            (&self.revision, Type::INT8),
            (&self.edited, Type::TEXT),
            (&self.channel, Type::TEXT),
        ]
    }
}

/// The key a mailbox is stored under: `human`, or `handle@project` in lower case.
pub(crate) fn mailbox_key(a: &Address) -> String {
    match &a.scope {
        Scope::Global => "human".to_owned(),
        Scope::Project(p) => format!(
            "{}@{}",
            a.handle.as_str().to_ascii_lowercase(),
            p.as_str().to_ascii_lowercase()
        ),
    }
}

/// The key a name is stored under.
pub(crate) fn key(n: &Name) -> String {
    n.as_str().to_ascii_lowercase()
}

pub(crate) fn state_str(s: State) -> &'static str {
    s.as_str()
}

pub(crate) fn parse_state(s: &str) -> Option<State> {
    match s {
        "unread" => Some(State::Unread),
        "read" => Some(State::Read),
        "done" => Some(State::Done),
        "cancelled" => Some(State::Cancelled),
        "retracted" => Some(State::Retracted),
        _ => None,
    }
}

pub(crate) fn parse_time(s: &str) -> Result<Timestamp, String> {
    s.parse()
        .map_err(|e| format!("the time '{s}' does not read: {e}"))
}

fn get<'r, T: postgres::types::FromSql<'r>>(row: &'r Row, col: &str) -> Result<T, String> {
    row.try_get(col)
        .map_err(|e| format!("the column {col} does not read: {e}"))
}

fn address(s: &str, what: &str) -> Result<Address, String> {
    Address::parse_canonical(s).map_err(|e| format!("the {what} '{s}' is not an address: {e}"))
}

fn id(s: &str, what: &str) -> Result<MessageId, String> {
    MessageId::parse(s).ok_or_else(|| format!("the {what} '{s}' is not a message id"))
}

/// The message in a row holding `id` and [`MSG_COLS`].
pub(crate) fn message(row: &Row) -> Result<Message, String> {
    let recipients: Vec<String> = get(row, "recipients")?;
    let channel: Option<String> = get(row, "channel")?;
    let reply_to: Option<String> = get(row, "reply_to")?;
    let edited: Option<String> = get(row, "edited")?;
    let kind: String = get(row, "kind")?;
    let priority: String = get(row, "priority")?;
    let revision: i64 = get(row, "revision")?;
    Ok(Message {
        id: id(&get::<String>(row, "id")?, "id")?,
        from: address(&get::<String>(row, "sender")?, "sender")?,
        to: recipients
            .iter()
            .map(|r| address(r, "recipient"))
            .collect::<Result<_, _>>()?,
        subject: get(row, "subject")?,
        body: get(row, "body")?,
        kind: kind.parse::<Kind>()?,
        priority: priority.parse::<Priority>()?,
        date: parse_time(&get::<String>(row, "date")?)?,
        reply_to: reply_to.map(|r| id(&r, "reply_to")).transpose()?,
        thread: id(&get::<String>(row, "thread")?, "thread")?,
        revision: u32::try_from(revision)
            .map_err(|_| format!("the revision {revision} is out of range"))?,
        edited: edited.map(|e| parse_time(&e)).transpose()?,
        channel: channel
            .map(|c| {
                ChannelRef::parse_canonical(&c)
                    .ok_or_else(|| format!("the channel '{c}' does not read"))
            })
            .transpose()?,
    })
}

/// Where a row is, for a `Damaged` entry.
pub(crate) fn damaged(
    table: &str,
    owner: &str,
    row: &Row,
    state: Option<State>,
    problem: String,
) -> Damaged {
    let id: String = row.try_get("id").unwrap_or_default();
    Damaged {
        location: format!("{table} {owner} {id}"),
        state,
        problem,
    }
}
