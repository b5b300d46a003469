//! The operations, each written once: front ends turn input into one of these calls and render
//! what it returns.
//!
//! Every operation validates all of its input before its first write, so bad input changes
//! nothing.

mod channels;
mod directory;
mod import;
mod inject;
mod lifecycle;
mod send;
mod wait;

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::message::Stored;
use crate::store::Store;

pub use channels::{ChannelRead, ChannelSummary, ImportReport};
pub use directory::{Candidate, MemberContext, Resolution};
pub use import::{Foreign, Imported};
pub use inject::{HookAnswer, HookEvent};
pub use lifecycle::{
    CancelReport, EditOutcome, EditPatch, EditReport, Inbox, OutboxEntry, Read, Search, SearchHit,
    urgency_order,
};
pub use send::{Draft, MAX_RECIPIENTS, Sent};
pub use wait::WaitFor;

/// A source of the current time, so tests can pin it.
pub type Clock = fn() -> Timestamp;

/// Whole seconds: what mailroom records, so dates read the same in every rendering.
pub fn system_clock() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The operations over one store.
#[derive(Clone, Copy)]
pub struct Mailroom<'s> {
    store: &'s dyn Store,
    clock: Clock,
}

impl std::fmt::Debug for Mailroom<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailroom")
            .field("store", &self.store.describe())
            .finish()
    }
}

impl<'s> Mailroom<'s> {
    pub fn new(store: &'s dyn Store) -> Mailroom<'s> {
        Mailroom {
            store,
            clock: system_clock,
        }
    }

    pub fn with_clock(store: &'s dyn Store, clock: Clock) -> Mailroom<'s> {
        Mailroom { store, clock }
    }

    pub fn store(&self) -> &'s dyn Store {
        self.store
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// The one copy in `mailbox` whose id starts with `prefix`.
    fn find_one(&self, mailbox: &Address, prefix: &str, hint: &'static str) -> Result<Stored> {
        let prefix = check_prefix(prefix)?;
        let mut found = self.store.find(mailbox, &prefix)?;
        match found.len() {
            0 => Err(Error::MessageNotFound {
                prefix,
                mailbox: mailbox.clone(),
                hint,
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::AmbiguousId {
                prefix,
                candidates: found.iter().map(|s| s.message.id.to_string()).collect(),
            }),
        }
    }
}

/// Ids are Crockford base32; a prefix with anything else can match nothing and is a typo.
fn check_prefix(prefix: &str) -> Result<String> {
    let p = prefix.trim().to_ascii_uppercase();
    if p.is_empty() || p.len() > 26 || !p.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Invalid(format!(
            "'{prefix}' is not a message id; ids are 26 letters and digits, and any unique prefix of one will do"
        )));
    }
    Ok(p)
}
