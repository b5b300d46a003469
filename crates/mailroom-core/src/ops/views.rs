//! What a front end shows besides the lifecycle: one message by its full id, a thread, a
//! member's activity, and the state a send left each copy in. Each is one read of the store,
//! so no front end needs the store itself.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::Result;
use crate::message::{Message, MessageId, State};
use crate::ops::Mailroom;

/// How busy one member is, as the operator's overview shows it.
#[derive(Clone, Debug)]
pub struct Activity {
    /// Directed copies waiting in its mailbox (unread or read).
    pub pending: usize,
    /// When the oldest of them was sent.
    pub oldest_pending: Option<Timestamp>,
    /// When it last sent a message.
    pub last_sent: Option<Timestamp>,
}

impl Mailroom<'_> {
    /// The copy of message `id` in `me`'s mailbox (any state), with its state; else the message
    /// if `me` sent it (no state: `me` holds no copy).
    pub fn message(&self, me: &Address, id: MessageId) -> Result<Option<(Message, Option<State>)>> {
        if let Some(s) = self.store.get(me, id)? {
            return Ok(Some((s.message, Some(s.state))));
        }
        Ok(self.sent_message(me, id)?.map(|m| (m, None)))
    }

    /// Message `id` if `me` sent it.
    pub fn sent_message(&self, me: &Address, id: MessageId) -> Result<Option<Message>> {
        self.store.sent(me, id)
    }

    /// Every message of `thread` that `me` holds a copy of (with its state) or sent (without),
    /// oldest first.
    pub fn thread(&self, me: &Address, thread: MessageId) -> Result<Vec<(Message, Option<State>)>> {
        let mut found = std::collections::BTreeMap::new();
        for s in self.store.everything(me)?.messages {
            if s.message.thread == thread {
                found.insert(s.message.id, (s.message, Some(s.state)));
            }
        }
        for m in self.store.outbox(me)? {
            if m.thread == thread {
                found.entry(m.id).or_insert((m, None));
            }
        }
        Ok(found.into_values().collect())
    }

    /// How much directed mail waits for `member`, since when, and when it last sent.
    pub fn activity(&self, member: &Address) -> Result<Activity> {
        let pending = self.store.pending(member)?.messages;
        let last_sent = self.store.outbox(member)?.iter().map(|m| m.date).max();
        Ok(Activity {
            pending: pending.len(),
            oldest_pending: pending.iter().map(|s| s.message.date).min(),
            last_sent,
        })
    }

    /// The state of `mailbox`'s copy of message `id`, if it holds one.
    pub fn state_of(&self, mailbox: &Address, id: MessageId) -> Result<Option<State>> {
        self.store.state_of(mailbox, id)
    }
}
