//! mailroom's core: the model (names, addresses, messages), the operations written once for
//! every front end, the `Store` trait both stores implement, and the injection format.
//!
//! The core does no terminal, environment or file-system I/O of its own: it acts only through
//! a [`store::Store`], and front ends hand it configuration as data.

pub mod address;
pub mod error;
pub mod identity;
pub mod interchange;
pub mod message;
pub mod name;
pub mod ops;
pub mod render;
pub mod store;
pub mod text;

pub use address::{Address, AddressSpec, HUMAN, Scope, Written, read_written};
pub use error::{Advised, Error, ErrorKind, Fix, Result};
pub use message::{Damaged, Kind, Listing, Message, MessageId, Priority, State, Stored};
pub use name::Name;
pub use ops::Mailroom;
pub use store::{
    Channels, Delivery, Directory, Finding, KeyClaim, Mailboxes, Member, MemberStatus, OriginClaim,
    PendingEntry, PendingSet, Policy, Project, Sessions, Store,
};
