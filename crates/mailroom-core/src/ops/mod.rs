//! The operations, each written once: front ends turn input into one of these calls and render
//! what it returns.
//!
//! Every operation validates all of its input before its first write, so bad input changes
//! nothing.

mod archive;
mod channels;
mod directory;
mod export;
mod import;
mod inject;
mod lifecycle;
mod lookup;
mod m_ai_l;
mod reads;
mod reserve;
mod revise;
mod send;
mod tokens;
mod typos;
mod views;
mod wait;

use jiff::Timestamp;

use crate::message::MessageId;
use crate::store::Store;

pub use archive::{Search, SearchHit};
pub use channels::{ChannelRead, ChannelSummary, ImportReport};
pub use directory::{Candidate, MemberContext, Resolution};
pub use export::Exported;
pub use import::{Foreign, Imported};
pub use inject::{HookAnswer, HookEvent};
pub use lifecycle::{Inbox, InboxStream, Read, urgency_order};
pub use reserve::{
    Blocked, DEFAULT_TTL, MAX_TTL, MIN_TTL, Release, Reserve, blocked_error, describe_lease,
};
pub use revise::{CancelReport, EditOutcome, EditPatch, EditReport, OutboxEntry};
pub use send::{Draft, MAX_RECIPIENTS, Sent};
pub use tokens::Issued;
pub use views::Activity;
pub use wait::{Awaiting, Cancel, WaitFor, Waited, Watched};

use lookup::check_prefix;

/// A source of the current time, so tests can pin it. Message ids and dates both come from it.
pub type Clock = fn() -> Timestamp;

/// The system's time.
pub fn system_clock() -> Timestamp {
    Timestamp::now()
}

/// Whole seconds: what mailroom records, so dates read the same in every rendering.
fn whole_seconds(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The operations over one store: borrowed for one command, or shared (`Mailroom::shared`,
/// `Mailroom<'static>`, `Send + Sync + Clone`) by a server that calls it from many threads.
#[derive(Clone)]
pub struct Mailroom<'s> {
    store: StoreRef<'s>,
    clock: Clock,
}

/// How a `Mailroom` holds its store.
#[derive(Clone)]
enum StoreRef<'s> {
    Borrowed(&'s dyn Store),
    Shared(std::sync::Arc<dyn Store>),
}

impl<'s> std::ops::Deref for StoreRef<'s> {
    type Target = dyn Store + 's;

    fn deref(&self) -> &(dyn Store + 's) {
        match self {
            StoreRef::Borrowed(s) => *s,
            StoreRef::Shared(s) => s.as_ref(),
        }
    }
}

impl std::fmt::Debug for Mailroom<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailroom")
            .field("store", &self.store.describe())
            .finish()
    }
}

impl Mailroom<'static> {
    /// Operations over a store shared by several threads: clone it into each task.
    pub fn shared(store: std::sync::Arc<dyn Store>) -> Mailroom<'static> {
        Mailroom {
            store: StoreRef::Shared(store),
            clock: system_clock,
        }
    }
}

impl<'s> Mailroom<'s> {
    pub fn new(store: &'s dyn Store) -> Mailroom<'s> {
        Mailroom::with_clock(store, system_clock)
    }

    pub fn with_clock(store: &'s dyn Store, clock: Clock) -> Mailroom<'s> {
        Mailroom {
            store: StoreRef::Borrowed(store),
            clock,
        }
    }

    pub(crate) fn store(&self) -> &(dyn Store + 's) {
        &*self.store
    }

    /// The clock's time in whole seconds.
    fn now(&self) -> Timestamp {
        whole_seconds((self.clock)())
    }

    /// A new message's id and date from one reading of the clock: the id carries the instant to
    /// the millisecond (so ids made in one second still sort in the order they were made), the
    /// date the same instant to the second.
    fn stamp(&self) -> (MessageId, Timestamp) {
        let at = (self.clock)();
        (MessageId::generate_at(at), whole_seconds(at))
    }
}
