//! The operations, each written once: front ends turn input into one of these calls and render
//! what it returns.
//!
//! Every operation validates all of its input before its first write, so bad input changes
//! nothing.

mod archive;
mod channels;
mod directory;
mod import;
mod inject;
mod lifecycle;
mod lookup;
mod revise;
mod send;
mod wait;

use jiff::Timestamp;

use crate::store::Store;

pub use archive::{Search, SearchHit};
pub use channels::{ChannelRead, ChannelSummary, ImportReport};
pub use directory::{Candidate, MemberContext, Resolution};
pub use import::Foreign;
pub use inject::{HookAnswer, HookEvent};
pub use lifecycle::{Inbox, Read, urgency_order};
pub use revise::{CancelReport, EditOutcome, EditPatch, EditReport, OutboxEntry};
pub use send::{Draft, MAX_RECIPIENTS, Sent};
pub use wait::WaitFor;

use lookup::check_prefix;

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
}
