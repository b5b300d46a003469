//! The `Store` trait: everything mailroom keeps, in the domain's terms, and the contract each
//! implementation (files, PostgreSQL) must keep.
//!
//! The trait is synchronous on purpose: the file store is blocking by nature and sits on the
//! hot path of every hook, where starting an async runtime would cost more than the work.
//! Every method that changes state is atomic: after a crash, either all of its effect is there
//! or none of it (the outbox trace excepted, which is best effort by design). The one method
//! that spans several mailboxes, [`Store::deliver_all`], is all-or-nothing when it returns; what
//! a crash in its middle may leave, and how a call again finishes it, is written beside it.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::Result;
use crate::message::{
    ChannelRef, Damaged, Kind, Listing, Message, MessageId, Priority, State, Stored,
};
use crate::name::Name;
use crate::token::Tokens;

/// What happens when mail is sent to a handle a project does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// The mailbox is created on first send, with a notice to the sender.
    #[default]
    Open,
    /// Only roster members can be written to; an unknown handle is an error.
    Roster,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Open => "open",
            Policy::Roster => "roster",
        }
    }

    pub fn parse(s: &str) -> Option<Policy> {
        match s.trim() {
            "open" => Some(Policy::Open),
            "roster" => Some(Policy::Roster),
            _ => None,
        }
    }
}

/// A namespace of mailboxes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    pub name: Name,
    pub policy: Policy,
    pub created: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberStatus {
    Active,
    Inactive,
}

impl MemberStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberStatus::Active => "active",
            MemberStatus::Inactive => "inactive",
        }
    }

    pub fn parse(s: &str) -> Option<MemberStatus> {
        match s.trim() {
            "active" => Some(MemberStatus::Active),
            "inactive" => Some(MemberStatus::Inactive),
            _ => None,
        }
    }
}

/// One entry of a project's roster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub handle: Name,
    /// Free text, one line ("backend", "reviewer"); may be empty.
    pub role: String,
    pub status: MemberStatus,
    pub joined: Timestamp,
    /// When the status last changed, when it ever did: an inactive member is not shown the
    /// broadcasts posted since then, even once reactivated.
    pub since: Option<Timestamp>,
}

/// What [`Directory::lookup`] found: for each project and each roster entry asked for, in the
/// order asked, the project or entry (`None`: not there).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub projects: Vec<Option<Project>>,
    pub members: Vec<Option<Member>>,
}

/// The outcome of claiming an idempotency key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key was free and now belongs to the given id.
    Claimed,
    /// The key was used before, for this message.
    Existing(MessageId),
}

/// The outcome of recording the path that claims a git-derived identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginClaim {
    /// First claim, or the same path as before.
    Same,
    /// Another path claimed this identity first.
    Other(String),
}

/// What [`Store::deliver_all`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// For each recipient, in the order given: whether this call put the copy there (`false`:
    /// the mailbox already had a copy of this id, in whatever state).
    pub new: Vec<bool>,
    /// Why the sender's outbox trace could not be left, when it could not. The trace is best
    /// effort: the copies stand without it.
    pub trace_error: Option<String>,
}

/// Something to block on until a mailbox may have received mail: a file-system watch, a
/// database `LISTEN`; on a system without a watch, the file store's poll of its directories'
/// times and names (a few system calls; it reads no message).
pub trait Watch {
    /// Blocks until new mail may have arrived (`Ok(true)`) or `timeout` passed (`Ok(false)`;
    /// `None` waits without limit). A spurious wake-up is allowed: callers check again.
    fn wait(&mut self, timeout: Option<std::time::Duration>) -> Result<bool>;
}

/// One problem `doctor` found, and what was or can be done about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Where, in the store's terms (a path for the file store).
    pub location: String,
    pub problem: String,
    /// The repair: what `--fix` did, or would do, or what the user must do.
    pub fix: String,
    /// Whether this run repaired it.
    pub fixed: bool,
}

/// Where mailroom keeps everything: the four roles below, `Reservations` (in `lease`) and
/// `Tokens` (in `token`), shared across threads (an async server calls it from its blocking
/// pool). See the module documentation for the atomicity rule. A store's own upkeep (`doctor` for the file store) is its own, not part of this
/// contract.
///
/// "Not found" is `Ok(None)` (or an empty listing) wherever the method can answer it; errors
/// are for failures of the store itself.
pub trait Store:
    Directory + Mailboxes + Channels + Sessions + crate::lease::Reservations + Tokens + Send + Sync
{
    /// A short description for `whoami` and `doctor` (a path, a URL without credentials).
    fn describe(&self) -> String;
}

/// Projects and their rosters: who exists.
pub trait Directory {
    /// Every project, sorted by name.
    fn projects(&self) -> Result<Vec<Project>>;

    fn project(&self, name: &Name) -> Result<Option<Project>>;

    /// Creates the project unless it exists. Idempotent and race-free: of two concurrent
    /// creators, one creates and both get the same project back. Returns whether this call
    /// created it.
    fn ensure_project(&self, project: &Project) -> Result<(Project, bool)>;

    /// Changes an existing project's policy; `Ok(false)` when the project does not exist.
    fn set_policy(&self, name: &Name, policy: Policy) -> Result<bool>;

    /// The roster, sorted by handle.
    fn roster(&self, project: &Name) -> Result<Vec<Member>>;

    fn member(&self, project: &Name, handle: &Name) -> Result<Option<Member>>;

    /// Adds a member unless one with that handle exists; returns whether it added. Race-free
    /// like [`Store::ensure_project`].
    fn add_member(&self, project: &Name, member: &Member) -> Result<bool>;

    /// Replaces an existing member's entry (status, role); `Ok(false)` when there is none.
    fn update_member(&self, project: &Name, member: &Member) -> Result<bool>;

    /// Refuses, in one sentence, to let this store's connection act as `identity`. A store of
    /// files trusts the user account (the default: anyone); a shared server may give each
    /// connection only some identities (PostgreSQL's strict mode), and checking once, up front,
    /// keeps a command from reading a silently partial view or failing half-way.
    fn check_acts_as(&self, identity: &Address) -> Result<()> {
        let _ = identity;
        Ok(())
    }

    /// Refuses, before anything is written, a new project or roster entry in `project` that
    /// this store's connection may not make (the default: anyone may).
    fn check_roster_change(&self, project: &Name) -> Result<()> {
        let _ = project;
        Ok(())
    }

    /// The projects and the roster entries `(project, handle)` named, each in the order given
    /// (`None`: not there): what one operation's checks read, fetched as one question where a
    /// database answers with one query (the default asks for each). The answers are as current
    /// as those of [`Directory::project`] and [`Directory::member`].
    fn lookup(&self, projects: &[Name], members: &[(Name, Name)]) -> Result<Found> {
        let projects = projects
            .iter()
            .map(|p| self.project(p))
            .collect::<Result<_>>()?;
        let members = members
            .iter()
            .map(|(p, h)| self.member(p, h))
            .collect::<Result<_>>()?;
        Ok(Found { projects, members })
    }

    /// Every project `handle` is on the roster of, with its entry, sorted by project: one
    /// question where a database answers with one query (the default asks each project).
    fn memberships(&self, handle: &Name) -> Result<Vec<(Project, Member)>> {
        let mut out = Vec::new();
        for p in self.projects()? {
            if let Some(m) = self.member(&p.name, handle)? {
                out.push((p, m));
            }
        }
        Ok(out)
    }
}

/// One pending copy as listed, before its content is decoded: what the inbox orders by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    pub id: MessageId,
    pub kind: Kind,
    pub priority: Priority,
    pub state: State,
}

/// A mailbox's pending copies, each decoded only when asked for, so a long listing can be shown
/// one message at a time instead of holding every message decoded at once.
pub trait PendingSet {
    /// The copies [`Mailboxes::pending`] lists (each id once), in no particular order: a
    /// reader orders them by their entries, without decoding any.
    fn entries(&self) -> &[PendingEntry];

    /// The copy at `i` of [`PendingSet::entries`], decoded: what [`Mailboxes::pending`] would
    /// have listed for it.
    fn stored(&self, i: usize) -> Result<Stored>;

    /// What could not be read.
    fn damaged(&self) -> &[Damaged];
}

/// A [`PendingSet`] over a listing already decoded: the default for stores without a cheaper
/// way.
#[derive(Debug)]
pub struct DecodedSet {
    entries: Vec<PendingEntry>,
    listing: Listing,
}

impl DecodedSet {
    pub fn new(listing: Listing) -> DecodedSet {
        let entries = listing
            .messages
            .iter()
            .map(|s| PendingEntry {
                id: s.message.id,
                kind: s.message.kind,
                priority: s.message.priority,
                state: s.state,
            })
            .collect();
        DecodedSet { entries, listing }
    }
}

impl PendingSet for DecodedSet {
    fn entries(&self) -> &[PendingEntry] {
        &self.entries
    }

    fn stored(&self, i: usize) -> Result<Stored> {
        self.listing.messages.get(i).cloned().ok_or_else(|| {
            crate::error::Error::store("a pending listing", format!("no copy at {i}"))
        })
    }

    fn damaged(&self) -> &[Damaged] {
        &self.listing.damaged
    }
}

/// Mailboxes: directed mail, its copies and their states, and the senders' traces.
pub trait Mailboxes {
    /// Puts a copy of `message` in `recipient`'s mailbox as unread, durably: when this returns
    /// `Ok`, the copy survives a crash of the machine. Delivering the same id twice to the same
    /// mailbox keeps one copy (the first) and returns `Ok(false)`. For one copy that is not part
    /// of a send to several (imports, corrections); a send uses [`Store::deliver_all`].
    fn deliver(&self, recipient: &Address, message: &Message) -> Result<bool>;

    /// Publishes `message` to every recipient as unread, with the sender's outbox trace, as one
    /// step: a send to several recipients is one call of this, never a loop over
    /// [`Store::deliver`].
    ///
    /// - `Ok`: every recipient has its copy, durably (it survives a crash of the machine); the
    ///   trace is best effort, as for [`Store::record_sent`], and a failure to leave it is
    ///   reported in [`Delivery::trace_error`], never as an error.
    /// - `Err`: no recipient got a copy from this call and no trace was left by it. The one
    ///   exception a store without transactions cannot close: a copy a reader took (moved out of
    ///   unread) in the instant between its publication and the undo stays, with the trace, and
    ///   the error names its mailbox.
    /// - A recipient whose mailbox already holds a copy of this id, in any state, is left alone
    ///   (`false` in [`Delivery::new`]). So calling this again with the same message finishes a
    ///   call a crash interrupted, and delivers nothing twice: that is what a keyed retry does.
    ///
    /// A transactional store (PostgreSQL) commits the copies and the trace in one transaction:
    /// a crash leaves all or nothing. The file store cannot: a crash (or power cut) while it
    /// publishes may leave the trace and some of the copies; the sender's `outbox` then shows
    /// the recipients without one, and a retry with the same idempotency key delivers exactly
    /// the missing copies. Before publishing it has only written temporary files, which a crash
    /// leaves as debris for `doctor --fix` and no reader ever lists.
    fn deliver_all(&self, recipients: &[Address], message: &Message) -> Result<Delivery>;

    /// [`Store::deliver_all`] for a message whose id this process has just generated for a
    /// send without an idempotency key (never an imported, derived or retried id): no mailbox
    /// can hold a copy of it yet, so a store may skip looking for one. Same contract otherwise.
    fn deliver_fresh(&self, recipients: &[Address], message: &Message) -> Result<Delivery> {
        self.deliver_all(recipients, message)
    }

    /// Leaves the sender's outbox trace of `message` (best effort: may be lost in a crash).
    fn record_sent(&self, message: &Message) -> Result<()>;

    /// Claims `key` for `sender`'s message `id`, or returns the id that claimed it first.
    fn claim_key(&self, sender: &Address, key: &str, id: MessageId) -> Result<KeyClaim>;

    /// The idempotency keys `sender` claimed, each with the id it claimed, sorted by key: what
    /// an export copies (through [`Mailboxes::claim_key`]). A key file that does not read is
    /// left out.
    fn keys(&self, sender: &Address) -> Result<Vec<(String, MessageId)>>;

    /// The mailbox's pending copies (unread and read), oldest first, without changing them.
    /// Costs O(pending), never O(archive).
    fn pending(&self, mailbox: &Address) -> Result<Listing>;

    /// The same copies as [`Mailboxes::pending`], each decoded only when asked for. The default
    /// decodes them all at once; a store that can decode one at a time (the file store, from
    /// its cache) saves holding them all.
    fn pending_set(&self, mailbox: &Address) -> Result<Box<dyn PendingSet>> {
        Ok(Box::new(DecodedSet::new(self.pending(mailbox)?)))
    }

    /// Copies in `mailbox` whose id starts with `prefix` (case-insensitive), in any state.
    /// Pending states are searched first; archived ones only when no pending copy matches.
    fn find(&self, mailbox: &Address, prefix: &str) -> Result<Vec<Stored>>;

    /// The copy of `id` in `mailbox`, in whatever state it is.
    fn get(&self, mailbox: &Address, id: MessageId) -> Result<Option<Stored>>;

    /// The copy of each of `ids` in `mailbox`, in the order given (`None`: no copy there), each
    /// as [`Mailboxes::get`] answers it: one question for a listing's worth of copies, which a
    /// database answers with one query (the default asks for each).
    fn get_many(&self, mailbox: &Address, ids: &[MessageId]) -> Result<Vec<Option<Stored>>> {
        ids.iter().map(|id| self.get(mailbox, *id)).collect()
    }

    /// The state of the copy of `id` in `mailbox`, if there is one.
    fn state_of(&self, mailbox: &Address, id: MessageId) -> Result<Option<State>>;

    /// Moves each copy `(id, from)` to state `to`, each move atomic, and returns for each
    /// whether this call moved it (`false`: it was not in `from`, because someone else moved
    /// it or it is absent). Of several concurrent moves of one copy, at most one succeeds; a
    /// copy named twice is moved by its first mention at most. When this returns, the moves
    /// are durable. A listing's moves are one call: a database makes it one statement.
    fn transition(
        &self,
        mailbox: &Address,
        moves: &[(MessageId, State)],
        to: State,
    ) -> Result<Vec<bool>>;

    /// Replaces the content of an unread copy with `message` (same id), keeping the previous
    /// revision. `Ok(false)` when the copy is no longer unread: the edit did not happen.
    fn replace_unread(&self, mailbox: &Address, message: &Message) -> Result<bool>;

    /// The sender's outbox traces, oldest first.
    fn outbox(&self, sender: &Address) -> Result<Vec<Message>>;

    /// Up to `limit` copies archived (done) in `mailbox`, most recently archived first, with
    /// the time each was archived.
    fn recently_archived(
        &self,
        mailbox: &Address,
        limit: usize,
    ) -> Result<Vec<(Stored, Timestamp)>>;

    /// Every copy in the mailbox, in every state: the scan behind `search`.
    fn everything(&self, mailbox: &Address) -> Result<Listing>;

    /// Sets when the done copy `id` was archived, as [`Mailboxes::recently_archived`] reports
    /// it, and counts it as archived after every copy archived before this call: an export
    /// sets the times oldest first, so the archive's order and times survive the move.
    /// `Ok(false)` when the mailbox holds no done copy of `id` (nothing changed).
    fn set_archived_at(&self, mailbox: &Address, id: MessageId, at: Timestamp) -> Result<bool>;

    /// Every earlier revision the mailbox keeps of its edited copies (what
    /// [`Mailboxes::replace_unread`] and [`Mailboxes::keep_revision`] kept), each with its own
    /// `revision`, sorted by id then revision, each `(id, revision)` once. Where the store
    /// names a revision (the file store's `revisions/<id>.r<N>.md`), the name decides the id
    /// and the number, and a content that says otherwise is read with a warning in
    /// [`Revisions::warnings`]. One that cannot be read, or is not named as a revision, is
    /// reported in [`Revisions::damaged`] and hides none of the others. Whether the mailbox
    /// holds the copy each one belongs to is the caller's to check (an export reports one
    /// that belongs to no copy there, and does not copy it).
    fn revisions(&self, mailbox: &Address) -> Result<Revisions>;

    /// Keeps `message` as an earlier revision of its copy in `mailbox`, durably, unless the
    /// mailbox keeps that `(id, revision)` already, or holds no copy of `message.id` sent by
    /// `message.from` (a revision belongs to a copy: without one nothing is kept); returns
    /// whether this call kept it. What an export copies [`Mailboxes::revisions`] with, after
    /// the copies; the copy itself is not touched.
    fn keep_revision(&self, mailbox: &Address, message: &Message) -> Result<bool>;

    /// The sender's trace of its message `id`, if there is one (a point lookup: the default
    /// reads the whole outbox).
    fn sent(&self, sender: &Address, id: MessageId) -> Result<Option<Message>> {
        Ok(self.outbox(sender)?.into_iter().find(|m| m.id == id))
    }

    /// The state of each copy `(mailbox, id)`, in the order given (`None`: no copy there): one
    /// question for every recipient of a listing's sent messages, which a database answers with
    /// one query (the default asks for each).
    fn states(&self, copies: &[(&Address, MessageId)]) -> Result<Vec<Option<State>>> {
        copies.iter().map(|(m, id)| self.state_of(m, *id)).collect()
    }

    /// The copies in `mailbox`, in every state, whose subject or body contains `query` (see
    /// [`matches_query`]), oldest first. A store may answer from an index; the default scans
    /// [`Mailboxes::everything`].
    fn search(&self, mailbox: &Address, query: &str) -> Result<Listing> {
        let Listing { messages, damaged } = self.everything(mailbox)?;
        Ok(Listing {
            messages: messages
                .into_iter()
                .filter(|s| matches_query(&s.message, query))
                .collect(),
            damaged,
        })
    }

    /// The sender's traces whose subject or body contains `query`, oldest first.
    fn search_sent(&self, sender: &Address, query: &str) -> Result<Vec<Message>> {
        let mut sent = self.outbox(sender)?;
        sent.retain(|m| matches_query(m, query));
        Ok(sent)
    }
}

/// The earlier revisions of a mailbox's edited copies, as [`Mailboxes::revisions`] lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revisions {
    pub messages: Vec<Message>,
    /// What could not be read, or is not named as a revision (its `state` is `None`: a
    /// revision is in no state).
    pub damaged: Vec<Damaged>,
    /// What was read but had to be corrected (a header id or revision that disagrees with the
    /// name), each naming where it is.
    pub warnings: Vec<String>,
}

/// Whether `query` (lower-cased, non-empty) occurs in the message's subject or body, compared
/// in lower case: the search rule every store keeps, however it finds the candidates.
pub fn matches_query(m: &Message, query: &str) -> bool {
    m.subject.to_lowercase().contains(query) || m.body.to_lowercase().contains(query)
}

/// Channels: append-only streams and each reader's seen set.
pub trait Channels {
    /// Appends `message` to a channel, durably. Entries are never edited or deleted; the same
    /// id twice keeps the first and returns `Ok(false)`.
    fn append(&self, channel: &ChannelRef, message: &Message) -> Result<bool>;

    /// The channel's entries, oldest (by id) first. Retracted entries are included with state
    /// `Retracted` only when `retracted` is true; the others have state `Unread`.
    fn entries(&self, channel: &ChannelRef, retracted: bool) -> Result<Listing>;

    /// The entries `reader` has not seen yet (not retracted), oldest first, in state `Unread`.
    /// Costs O(entries) names and O(unseen) reads.
    fn unseen(&self, channel: &ChannelRef, reader: &Name) -> Result<Listing>;

    /// The ids `reader` has seen in the channel.
    fn seen(&self, channel: &ChannelRef, reader: &Name) -> Result<Vec<MessageId>>;

    /// Marks entries seen by `reader` and returns, for each, whether this call marked it: of
    /// several concurrent readers as the same member, exactly one marks (and shows) an entry.
    fn mark_seen(
        &self,
        channel: &ChannelRef,
        reader: &Name,
        ids: &[MessageId],
    ) -> Result<Vec<bool>>;

    /// Moves an entry out of the channel (un-send): `Ok(false)` when it is not an entry now.
    fn retract(&self, channel: &ChannelRef, id: MessageId) -> Result<bool>;

    /// The project's channels that have entries (or retracted ones), sorted by name.
    fn channels(&self, project: &Name) -> Result<Vec<Name>>;

    /// The entries (not retracted) of every channel of `project` whose subject or body
    /// contains `query` (see [`matches_query`]), by channel then oldest first.
    fn search_entries(&self, project: &Name, query: &str) -> Result<Listing> {
        let mut out = Listing::default();
        for name in self.channels(project)? {
            let channel = ChannelRef {
                project: project.clone(),
                name,
            };
            let Listing { messages, damaged } = self.entries(&channel, false)?;
            out.messages.extend(
                messages
                    .into_iter()
                    .filter(|s| matches_query(&s.message, query)),
            );
            out.damaged.extend(damaged);
        }
        Ok(out)
    }

    /// The entry `id` of the channel, retracted or not (a point lookup: the default lists the
    /// channel).
    fn entry(&self, channel: &ChannelRef, id: MessageId) -> Result<Option<Stored>> {
        Ok(self
            .entries(channel, true)?
            .messages
            .into_iter()
            .find(|s| s.message.id == id))
    }
}

/// What a session relies on: waking on new mail, the hooks' change token and injection mark,
/// and who claimed a git-derived identity.
pub trait Sessions {
    /// Starts watching `mailbox` for newly delivered mail: directed mail, and for a project
    /// member the project's broadcasts (all that `peek` lists). Mail delivered or posted after
    /// this returns wakes the watch, so a caller that checks after starting the watch misses
    /// nothing.
    fn watch(&self, mailbox: &Address) -> Result<Box<dyn Watch + Send>>;

    /// One watch of all of `mailboxes`, each as `watch` watches it: mail delivered or posted
    /// to any of them after this returns wakes it. It holds what one `watch` holds (one
    /// inotify instance, one connection), however many mailboxes it covers.
    fn watch_many(&self, mailboxes: &[Address]) -> Result<Box<dyn Watch + Send>>;

    /// A cheap token that changes whenever mail may have arrived for `mailbox` (directed mail
    /// or a broadcast of its project), computed without listing the mailbox: hooks use it to
    /// answer "nothing new" fast. Equal tokens mean nothing was delivered in between, except
    /// within the store's timestamp granularity, where mail may be reported a turn late (never
    /// lost: it stays pending).
    fn change_token(&self, mailbox: &Address) -> Result<String>;

    /// The mark saved by the last injection into `mailbox`'s session, if any: text the core
    /// writes and reads (a change token, then what the injection left out), opaque to the store.
    fn last_injected(&self, mailbox: &Address) -> Result<Option<String>>;

    /// Saves the mark of an injection (best effort, like every cache).
    fn set_last_injected(&self, mailbox: &Address, token: &str) -> Result<()>;

    /// Records `path` as the checkout that claims this git-derived identity, unless one did.
    /// Writes nothing while the identity has no mailbox (`Ok(OriginClaim::Same)`).
    fn claim_origin(&self, identity: &Address, path: &str) -> Result<OriginClaim>;

    /// The path that claims this git-derived identity, if one did: what an export copies
    /// (through [`Sessions::claim_origin`], so a claim the target holds stays).
    fn origin(&self, identity: &Address) -> Result<Option<String>>;
}
