//! Small helpers the cases share: a pinned clock, addresses from text, one-line sends, and
//! the error a call must have returned.

use std::fmt::Debug;

use jiff::Timestamp;
use mailroom_core::ops::Draft;
use mailroom_core::{
    Address, Error, Kind, Mailroom, Message, MessageId, Name, Priority, Result, State, Store,
};

/// The instant every case's clock reads.
pub const NOW: &str = "2026-03-13T14:22:00Z";

pub fn now() -> Timestamp {
    NOW.parse().expect("NOW is RFC 3339")
}

/// The operations over `store`, with the clock pinned at [`NOW`].
pub fn mailroom(store: &dyn Store) -> Mailroom<'_> {
    Mailroom::with_clock(store, now)
}

/// An address in canonical form: `handle@project` or `HUMAN`.
pub fn addr(s: &str) -> Address {
    Address::parse_canonical(s).expect("a canonical address")
}

pub fn name(s: &str) -> Name {
    Name::parse(s).expect("a valid name")
}

pub fn draft(to: &[&str], body: &str) -> Draft {
    Draft {
        to: to.iter().map(|s| (*s).to_owned()).collect(),
        body: body.to_owned(),
        ..Draft::default()
    }
}

/// Sends `body` from `from` to `to` and returns the message; any error fails the case.
pub fn send(m: &Mailroom<'_>, from: &str, to: &[&str], body: &str) -> Message {
    m.send(&addr(from), draft(to, body))
        .expect("the send succeeds")
        .message
}

/// The error `r` must be.
pub fn err<T: Debug>(r: Result<T>) -> Error {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// The mailbox's pending mail as (id, state), oldest first, read without changing anything.
pub fn pending(store: &dyn Store, mailbox: &str) -> Vec<(MessageId, State)> {
    let mut listing = store.pending(&addr(mailbox)).expect("pending");
    listing.messages.sort_by_key(|s| s.message.id);
    listing
        .messages
        .iter()
        .map(|s| (s.message.id, s.state))
        .collect()
}

pub fn state(store: &dyn Store, mailbox: &str, id: MessageId) -> Option<State> {
    store.state_of(&addr(mailbox), id).expect("state_of")
}

/// A message built by hand, for cases that call the store directly.
pub fn message(from: &str, to: &str, body: &str) -> Message {
    let id = MessageId::generate();
    Message {
        id,
        from: addr(from),
        to: vec![addr(to)],
        subject: body.lines().next().unwrap_or_default().to_owned(),
        body: body.to_owned(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date: now(),
        reply_to: None,
        thread: id,
        revision: 1,
        edited: None,
        channel: None,
    }
}

/// The longest prefix that both ids share.
pub fn common_prefix(a: MessageId, b: MessageId) -> String {
    a.to_string()
        .chars()
        .zip(b.to_string().chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

/// Hint words for the stories: the command line's, for an implied identity.
#[derive(Debug)]
pub struct Words;

impl mailroom_core::render::Vocabulary for Words {
    fn reply(&self, id: &str) -> String {
        format!("mailroom reply {id} --message \"...\"")
    }
    fn done(&self, id: &str) -> String {
        format!("mailroom done {id}")
    }
    fn read(&self, id: &str) -> String {
        format!("mailroom read {id}")
    }
    fn inbox(&self) -> String {
        "mailroom inbox".into()
    }
    fn doctor(&self) -> String {
        "mailroom doctor".into()
    }
}
