//! mailroom's core: the model (names, addresses, messages), the operations written once for
//! every front end, the `Store` trait both stores implement, and the injection format.
//!
//! The core does no terminal, environment or file-system I/O of its own: it acts only through
//! a [`store::Store`], and front ends hand it configuration as data.
//!
//! ## Its modules
//!
//! `name` (the naming rule), `interchange` (the imported formats as pure text → record conversions:
//! m_AI_l's tables and mailbox files, repo-mailbox's files, the protocol's `mailbox.md`, and the
//! frontmatter reader; each record says what it was there — pending, archived, sent, broadcast,
//! retracted — and what its id derives from; the one id derivation, the one `ORIGIN/HANDLE` rule
//! and the one kind guess live here, and `Mailroom::import_record` puts a record in place, skipping
//! a body over the limit), `address` (`handle[@project]`, the global `HUMAN`), `message` (ids,
//! kinds, priorities, states, `Message`, `Stored`, `Listing`), `text` (one-line fields, default
//! subject, body limit), `identity` (precedence of `--as`, `MAILROOM_AS`, `.mailroom.toml`, git
//! top-level, as a pure function of gathered inputs), `store` (the `Store` trait and its contract:
//! `Store: Directory + Mailboxes + Channels + Sessions + Send + Sync`, four roles; a send is one
//! `Mailboxes::deliver_all`, the unit of work a database makes one transaction; point lookups —
//! `sent`, `entry`, `states`, `get_many`, `memberships`, `lookup` (the projects and roster entries
//! a send's checks read, fetched together before the checks run), `search*` — have scanning
//! defaults a store overrides with an index; what only an export needs — `keys`, `revisions` and
//! `keep_revision`, `set_archived_at`, `origin` — every store implements, with no default; a
//! store's upkeep, like the file store's `doctor`, is its own), `ops` (every operation, written
//! once; `export_to` copies a whole mailroom from one store into another through the trait alone,
//! so files ⇄ PostgreSQL is one loop), `render` (the injection format; its hint lines come from a
//! `render::Vocabulary` the front end passes in — the CLI's `words.rs` writes commands, naming
//! `--as`/`--home` when they came from flags), `error` (one enum; each variant maps to one
//! `ErrorKind` = one exit code; a variant states what is wrong in neutral words and `Error::fix()`
//! gives what would help as data — a `Fix` such as `AddMember { handle, project }`, or
//! `GiveChanges` for an edit that changes nothing — which each front end words: the CLI as a
//! command or its flags, the MCP server as a tool call and its fields; no core message names a CLI
//! flag; a store's own error carries its step as an `Advised` source, e.g. `Fix::Doctor`, so no
//! store names a command either). *Never* touches the terminal, the environment, `$HOME` or the
//! file system itself.

pub mod address;
pub mod error;
pub mod identity;
pub mod interchange;
pub mod lease;
pub mod message;
pub mod name;
pub mod ops;
pub mod render;
pub mod store;
pub mod text;
pub mod token;

pub use address::{Address, AddressSpec, HUMAN, Scope, Written, read_written};
pub use error::{Advised, Error, ErrorKind, Fix, Result};
pub use lease::{Lease, LeaseChange, Reservations};
pub use message::{Damaged, Kind, Listing, Message, MessageId, Priority, State, Stored};
pub use name::Name;
pub use ops::Mailroom;
pub use store::{
    Channels, Delivery, Directory, Finding, KeyClaim, Mailboxes, Member, MemberStatus, OriginClaim,
    PendingEntry, PendingSet, Policy, Project, Sessions, Store,
};
pub use token::{Token, Tokens};
