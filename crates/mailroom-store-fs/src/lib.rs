//! mailroom's Markdown file store: one file per message copy, its state the directory it is
//! in, every change one atomic rename (Maildir's discipline).
//!
//! Invariants: a message file is only ever published complete (written under `tmp/`, fsynced,
//! then linked or renamed into place), so no reader sees a torn file; a copy is in exactly one
//! state directory at any instant; reading a mailbox's pending mail never lists its archive.
//! The layout is documented in docs/FORMAT.md.
//!
//! This file holds the store's handle, the layout's names and the directory openers; the
//! `Store` methods are written once each in the module of their concept (`mailbox`,
//! `delivery`, `channels`, `directory`, `session`) and only dispatched from here.
//!
//! ## Its modules
//!
//! `dir` (directory handles opened with `O_NOFOLLOW` one component at a time; temp-write,
//! link/rename/exchange, fsync), `frontmatter` (the header format: the writer; the tolerant reader
//! is the core's, re-exported), `codec` (core records ⇄ documents), `bytes` (the bounds-checked
//! reader of the cache's and the indexes' binary fields), `cache` (pending messages keyed by name
//! and inode, indexed without decoding), `index` (the search index: hashed trigram lists that
//! narrow a search to its candidates, each then confirmed by the core's rule), `names`
//! (case-insensitive lookup of every name component, the spellings found remembered for the process
//! and only ever trusted when the entry is still there; creation under the parent's `flock`),
//! `held` (scope and mailbox directories kept open by the store between operations, each used only
//! while its path still names the same device and inode, else dropped for a fresh walk),
//! `unchanged` (project files and roster entries kept decoded between operations, each served only
//! while one `stat` shows the same device, inode, size and times, and only when settled for 2 s
//! before its read), `listing` (the one loop reading message files into a listing), `mailbox`
//! (pending, lookups, state moves, edits in place, outbox and archive listings), `delivery`
//! (deliver, `deliver_all`, outbox traces, idempotency keys), `channels` (entries, seen marks,
//! retraction), `directory` (projects and rosters), `session` (change token, injection mark, origin
//! claim), `sys` (the Linux-only calls, `renameat2` and inotify, beside portable stand-ins: link +
//! unlink, a polling watcher; `MAILROOM_FS_POSIX=1` forces those), `watch` (what both watchers
//! share), `doctor` (checks and safe repairs), `compact` (replacing an emptied, oversized `unread/`
//! or `read/`: ext4 never shrinks a directory), `lib` (`FsStore`, the layout's names,
//! `open_*`/`create_*` directory openers, and `impl Store` dispatching to those modules). *Never*
//! decides policy (who may write to whom): it stores what the core decided.
//!
//! ## How the operations run on this store
//!
//! **send** — `commands/send` reads the body (`--message` or stdin: size and UTF-8 checked), asks
//! `Ctx` for the identity, calls `Mailroom::send`. The core validates subject, body, key, the
//! number of recipients (at most `MAX_RECIPIENTS`, 100) and every recipient (`plan_recipient`:
//! explicit project, else current project's roster, else `HUMAN`, else active members of other
//! projects; policy `open` plans a new mailbox, `roster` refuses with did-you-mean) and the
//! sender's right to write, *before any write*. Then it applies the plans (project/member
//! creation), claims the idempotency key if any, and calls `Store::deliver_all` once for every copy
//! and the outbox trace: every recipient gets the copy or none does. `FsStore::deliver_all` writes
//! each copy to `boxes/<h>/tmp/<pid>.<n>.<ns>.tmp` and `fdatasync`s it, links the first into the
//! sender's `outbox/` (the trace, best effort), then moves each to `unread/<id>.md` with one
//! `renameat2(RENAME_NOREPLACE)` (never replacing; a link and an unlink where the file system lacks
//! the flag) and fsyncs each `unread/`; a failed move or sync unlinks what the call had published.
//! A keyed retry calls it again: mailboxes that hold the id are skipped, so it finishes an
//! interrupted send and names who got the copy now. A send without a key calls
//! `Store::deliver_fresh` instead: its id was just generated, so the file store skips looking for a
//! copy already held (a `stat` and three directory opens a recipient).
//!
//! **inbox** — `Mailroom::inbox_stream` calls `Store::pending_set` (lists only `unread/` and
//! `read/`: the archive is never opened): each pending copy as an entry (id, kind, priority, state)
//! whose content is decoded only when asked for. It orders the entries (open hold requests first,
//! then by priority and id), adds the project's broadcasts this member has not seen
//! (`Store::unseen` on channel `all`), applies the limit, then moves the shown unread copies to
//! `read/` in one `Store::transition` (renames, one fsync per directory) and re-reads the moved
//! files, so the content shown is the content marked read; shown broadcasts are marked seen with
//! exclusive creates, and a broadcast another reader claimed first is dropped. The CLI then visits
//! the result and writes each message straight to stdout, so a long inbox is never held decoded
//! whole (`Mailroom::inbox` collects the same result, for `--json` and the other front ends; the
//! default `pending_set` of a store decodes its `pending` listing). `FsStore::pending_set` takes
//! contents from `boxes/<h>/pending.cache` when the file's name and inode match what was cached: it
//! indexes the cache's length-prefixed records without decoding them, so a listing reads one file
//! plus the directories, not one file per message, and decodes each message once, when shown. An
//! empty `unread/` or `read/` larger than 64 KiB is replaced on the way (`compact`), and so is one
//! a `transition` has just emptied.
//!
//! **hooks and waiting** — `mailroom hook HARNESS EVENT` reads the harness JSON (to its end within
//! 3 s and 64 MiB, on a thread, parsing only the top-level fields it uses), resolves the identity
//! from its `cwd` (only within the checkout the hook was started in), and calls `Mailroom::hook`:
//! at session start `take` (the same selection as `inbox`) fits messages into the budget by
//! rendering each block (`render::Budget`: a third of the room at most per message, longer bodies
//! cut), marks what it shows, and saves a mark: the store's change token taken *before* listing and
//! the ids it left out (old, never shown as new mid-session); mid-session calls compare the current
//! token with the saved one first (`Mailroom::nothing_new`, for the address's cheap parts, before
//! the identity is spelled from the project file and roster) and list only when they differ; that
//! shortcut can only answer "nothing", everything else goes through `Mailroom::hook`. `wait` and
//! `watch` are core operations (`Mailroom::wait`, `Mailroom::watch`); they call `Store::watch`
//! (inotify, or the stand-in's poll, on the mailbox's `unread/` and the project's broadcast
//! entries, through their deepest existing ancestor until they exist, creating nothing) before
//! their first look, so nothing that lands in between is missed, stop at a deadline or when their
//! `Cancel` token is set (noticed within 100 ms), and mark nothing read. Any hook error becomes a
//! warning on stderr and exit 0.
//!
//! **channels** — `Mailroom::post` appends one file per entry to `channels/<name>/entries/` (never
//! contended, never rewritten) and marks it seen for its poster; a HOLD_REQUEST is also delivered
//! to `HUMAN`. `channel read` lists entries minus the reader's seen set and claims each shown entry
//! with an exclusive create (members and `HUMAN` have seen sets; a reader from another project has
//! none there and marks nothing). `retract` moves a broadcast to `retracted/`.

mod bytes;
pub(crate) mod cache;
mod channels;
mod codec;
pub(crate) mod compact;
mod delivery;
mod dir;
mod directory;
mod doctor;
mod error;
pub mod frontmatter;
mod held;
mod index;
mod leases;
mod listing;
mod mailbox;
mod names;
mod session;
mod sys;
mod tokens;
mod unchanged;
mod watch;

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::store::{
    Channels, Delivery, Directory, Found, KeyClaim, Mailboxes, OriginClaim, Sessions,
};
use mailroom_core::{
    Address, Listing, Member, Message, MessageId, Name, Policy, Project, Result, Scope, State,
    Store, Stored,
};

use crate::dir::{Dir, Durability, Limit};

pub use crate::codec::LAYOUT_VERSION;
pub use crate::error::FsError;

/// Decodes a message file's bytes as the store reads them (for tests and fuzzing): the
/// message with its warnings, or why it is unreadable.
pub fn decode_message(
    bytes: &[u8],
    file_id: Option<MessageId>,
    owner: &Address,
) -> std::result::Result<(Message, Vec<String>), String> {
    codec::message_from_bytes(bytes, file_id, owner).map(|d| (d.message, d.warnings))
}

/// Encodes a message as the store writes it.
pub fn encode_message(message: &Message) -> String {
    codec::message_to_text(message)
}

/// The file store rooted at a home directory.
#[derive(Debug)]
pub struct FsStore {
    home: PathBuf,
    /// The last copy this store delivered: its text and the directory it is in. The sender's
    /// outbox trace of the same text is then a hard link to it, not a second file.
    last_delivery: std::sync::Mutex<Option<(String, Dir)>>,
    /// Scope and mailbox directories kept open between operations (see `held`).
    held: held::Held,
    /// Project files and roster entries kept decoded while unchanged (see `unchanged`); boxed,
    /// so a store stays small to move.
    projects: Box<unchanged::Unchanged<mailroom_core::Project>>,
    members: Box<unchanged::Unchanged<mailroom_core::Member>>,
}

pub(crate) const PROJECTS: &str = "projects";
pub(crate) const GLOBAL: &str = "global";
pub(crate) const BOXES: &str = "boxes";
pub(crate) const ROSTER: &str = "roster";
pub(crate) const TMP: &str = "tmp";
pub(crate) const OUTBOX: &str = "outbox";
pub(crate) const REVISIONS: &str = "revisions";
pub(crate) const KEYS: &str = "keys";
pub(crate) const ORIGIN: &str = "origin";
pub(crate) const PROJECT_FILE: &str = "project.md";
pub(crate) const LAYOUT_FILE: &str = "layout";
pub(crate) const CHANNELS: &str = "channels";
pub(crate) const ENTRIES: &str = "entries";
pub(crate) const RETRACTED: &str = "retracted";
pub(crate) const SEEN: &str = "seen";
pub(crate) const TOKENS: &str = "tokens";
/// The change token of the last hook injection (see `Store::change_token`).
pub(crate) const INJECTED: &str = "injected";

/// A message file: the largest body a message may have, and room for its header.
pub(crate) const MESSAGE_FILE: Limit = Limit {
    bytes: mailroom_core::text::MAX_BODY_BYTES + 256 * 1024,
    what: "a message file",
};

/// The directory of each state.
pub fn state_dir_name(state: State) -> &'static str {
    match state {
        State::Unread => "unread",
        State::Read => "read",
        State::Done => "done",
        State::Cancelled => "cancelled",
        State::Retracted => "retracted",
    }
}

/// The status-change time of an entry (set when it was created, linked or renamed there), the
/// date of a record whose own date is missing (a hand-written one).
fn status_changed_at(dir: &Dir, name: &str) -> Timestamp {
    dir.ctime(name)
        .ok()
        .flatten()
        .and_then(|ns| Timestamp::from_nanosecond(ns).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

fn file_name(id: MessageId) -> String {
    format!("{id}.md")
}

/// The id a message file's name gives, only when the name is exactly `<id>.md` as mailroom
/// writes it: every move names the file by its id, so a name spelt otherwise (a ULID in lower
/// case) could be listed but never moved.
pub(crate) fn id_of(name: &str) -> Option<MessageId> {
    let stem = name.strip_suffix(".md")?;
    MessageId::parse(stem).filter(|id| id.to_string() == stem)
}

/// The id a file's name spells in any case (ULIDs are case-insensitive): what the message is
/// shown as, and the name `doctor --fix` gives it.
pub(crate) fn spelt_id_of(name: &str) -> Option<MessageId> {
    name.strip_suffix(".md").and_then(MessageId::parse)
}

pub(crate) fn is_message_name(name: &str) -> bool {
    name.ends_with(".md") && !name.starts_with('.')
}

/// Writes `text` under `tmp` and links it in as `name` in `dir` unless it exists, durably.
fn create_exclusive(tmp: &Dir, dir: &Dir, name: &str, text: &str) -> Result<bool, FsError> {
    let t = tmp.write_temp(text.as_bytes(), Durability::Durable)?;
    let created = tmp.publish_new(&t, dir, name)?;
    if created {
        dir.sync()?;
    }
    Ok(created)
}

/// Writes `text` under `tmp` and renames it over `name` in `dir`, durably.
fn replace(tmp: &Dir, dir: &Dir, name: &str, text: &str) -> Result<(), FsError> {
    let t = tmp.write_temp(text.as_bytes(), Durability::Durable)?;
    tmp.rename(&t, dir, name)?;
    dir.sync()
}

/// The directory `name` (matched in any case) inside `parent`'s `group`; `None` when either
/// is missing.
fn open_named(parent: Option<Dir>, group: &str, name: &str) -> Result<Option<Dir>, FsError> {
    match parent {
        Some(parent) => match parent.open(group)? {
            Some(group) => names::open(&group, name),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

/// The directory `name` (matched in any case) inside `parent`'s `group`, each created when
/// absent.
fn create_named(parent: &Dir, group: &str, name: &str) -> Result<Dir, FsError> {
    names::open_or_create(&parent.open_or_create(group)?, name)
}

impl FsStore {
    /// A store at `home`; nothing is created until the first write.
    pub fn new(home: impl Into<PathBuf>) -> FsStore {
        FsStore {
            home: home.into(),
            last_delivery: std::sync::Mutex::new(None),
            held: held::Held::default(),
            projects: Box::default(),
            members: Box::default(),
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Whether the home exists (anything was ever written to it).
    pub fn exists(&self) -> Result<bool, FsError> {
        Ok(self.root()?.is_some())
    }

    /// The home, or `None` when it does not exist yet.
    pub(crate) fn root(&self) -> Result<Option<Dir>, FsError> {
        match Dir::open_root(&self.home) {
            Ok(d) => Ok(Some(d)),
            Err(FsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The home, created (0700, with its layout file) when absent. An empty directory made for
    /// it beforehand (`mktemp -d`) gets its layout file the same way; a home holding anything
    /// else without one is left to `doctor`.
    fn create_root(&self) -> Result<Dir, FsError> {
        if let Some(d) = self.root()? {
            if d.entry(LAYOUT_FILE)?.is_none() && d.list()?.is_empty() {
                Self::write_layout(&d)?;
            }
            return Ok(d);
        }
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(dir::DIR_MODE)
            .create(&self.home)
            .map_err(|e| FsError::io("create directory", &self.home, e))?;
        let root = Dir::open_root(&self.home)?;
        Self::write_layout(&root)?;
        Ok(root)
    }

    /// Writes the layout file into a new home (never over one another process wrote first).
    fn write_layout(root: &Dir) -> Result<(), FsError> {
        let tmp = root.open_or_create(TMP)?;
        let name = tmp.write_temp(
            format!("{LAYOUT_VERSION}\n").as_bytes(),
            Durability::Durable,
        )?;
        tmp.publish_new(&name, root, LAYOUT_FILE)?;
        root.sync()
    }

    /// Checks the layout version; used by `doctor` and on opening for maintenance.
    pub fn check_layout(&self) -> Result<Option<String>, FsError> {
        let Some(root) = self.root()? else {
            return Ok(None);
        };
        let found = root
            .read(LAYOUT_FILE, Limit::small("the layout file"))?
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned());
        match found {
            Some(v) if v != LAYOUT_VERSION => Err(FsError::Layout {
                path: root.child_path(LAYOUT_FILE),
                found: v,
                expected: LAYOUT_VERSION,
            }),
            other => Ok(other),
        }
    }

    /// The directory of a scope (`global/` or a project's), `None` when it does not exist.
    fn open_scope(&self, scope: &Scope) -> Result<Option<Dir>, FsError> {
        let key = held::scope_key(scope);
        if let Some(dir) = self.held.get(&key) {
            return Ok(Some(dir));
        }
        let found = match scope {
            Scope::Global => match self.root()? {
                Some(root) => root.open(GLOBAL)?,
                None => None,
            },
            Scope::Project(p) => open_named(self.root()?, PROJECTS, p.as_str())?,
        };
        if let Some(dir) = &found {
            self.held.keep(key, dir);
        }
        Ok(found)
    }

    /// The directory of a scope, created (with the home) when absent.
    fn create_scope(&self, scope: &Scope) -> Result<Dir, FsError> {
        let key = held::scope_key(scope);
        if let Some(dir) = self.held.get(&key) {
            return Ok(dir);
        }
        let root = self.create_root()?;
        let dir = match scope {
            Scope::Global => root.open_or_create(GLOBAL)?,
            Scope::Project(p) => create_named(&root, PROJECTS, p.as_str())?,
        };
        self.held.keep(key, &dir);
        Ok(dir)
    }

    fn open_project(&self, name: &Name) -> Result<Option<Dir>, FsError> {
        self.open_scope(&Scope::Project(name.clone()))
    }

    fn create_project(&self, name: &Name) -> Result<Dir, FsError> {
        self.create_scope(&Scope::Project(name.clone()))
    }

    /// The mailbox directory of `address`, `None` when it does not exist.
    fn open_box(&self, address: &Address) -> Result<Option<Dir>, FsError> {
        let key = held::box_key(address);
        if let Some(dir) = self.held.get(&key) {
            return Ok(Some(dir));
        }
        let found = open_named(
            self.open_scope(&address.scope)?,
            BOXES,
            address.handle.as_str(),
        )?;
        if let Some(dir) = &found {
            self.held.keep(key, dir);
        }
        Ok(found)
    }

    /// The mailbox directory of `address`, created (with its scope) when absent.
    fn create_box(&self, address: &Address) -> Result<Dir, FsError> {
        let key = held::box_key(address);
        if let Some(dir) = self.held.get(&key) {
            return Ok(dir);
        }
        let dir = create_named(
            &self.create_scope(&address.scope)?,
            BOXES,
            address.handle.as_str(),
        )?;
        self.held.keep(key, &dir);
        Ok(dir)
    }

    /// The directory of a channel, `None` when it does not exist.
    fn open_channel(&self, channel: &ChannelRef) -> Result<Option<Dir>, FsError> {
        open_named(
            self.open_project(&channel.project)?,
            CHANNELS,
            channel.name.as_str(),
        )
    }

    /// The directory of a channel, created (with its project) when absent.
    fn create_channel(&self, channel: &ChannelRef) -> Result<Dir, FsError> {
        create_named(
            &self.create_project(&channel.project)?,
            CHANNELS,
            channel.name.as_str(),
        )
    }
}

impl Store for FsStore {
    fn describe(&self) -> String {
        self.home.display().to_string()
    }
}

impl Directory for FsStore {
    fn projects(&self) -> Result<Vec<Project>> {
        directory::projects(self)
    }

    fn project(&self, name: &Name) -> Result<Option<Project>> {
        directory::project(self, name)
    }

    fn ensure_project(&self, project: &Project) -> Result<(Project, bool)> {
        directory::ensure_project(self, project)
    }

    fn set_policy(&self, name: &Name, policy: Policy) -> Result<bool> {
        directory::set_policy(self, name, policy)
    }

    fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        directory::roster(self, project)
    }

    fn member(&self, project: &Name, handle: &Name) -> Result<Option<Member>> {
        directory::member(self, project, handle)
    }

    fn lookup(&self, projects: &[Name], members: &[(Name, Name)]) -> Result<Found> {
        directory::lookup(self, projects, members)
    }

    fn add_member(&self, project: &Name, member: &Member) -> Result<bool> {
        directory::add_member(self, project, member)
    }

    fn update_member(&self, project: &Name, member: &Member) -> Result<bool> {
        directory::update_member(self, project, member)
    }
}

impl Mailboxes for FsStore {
    fn sent(&self, sender: &Address, id: MessageId) -> Result<Option<Message>> {
        mailbox::sent(self, sender, id)
    }

    fn deliver(&self, recipient: &Address, message: &Message) -> Result<bool> {
        delivery::deliver(self, recipient, message)
    }

    fn deliver_all(&self, recipients: &[Address], message: &Message) -> Result<Delivery> {
        delivery::deliver_all(self, recipients, message, delivery::Copies::MayExist)
    }

    fn deliver_fresh(&self, recipients: &[Address], message: &Message) -> Result<Delivery> {
        delivery::deliver_all(self, recipients, message, delivery::Copies::NoneYet)
    }

    fn record_sent(&self, message: &Message) -> Result<()> {
        delivery::record_sent(self, message)
    }

    fn claim_key(&self, sender: &Address, key: &str, id: MessageId) -> Result<KeyClaim> {
        delivery::claim_key(self, sender, key, id)
    }

    fn keys(&self, sender: &Address) -> Result<Vec<(String, MessageId)>> {
        delivery::keys(self, sender)
    }

    fn pending(&self, mailbox: &Address) -> Result<Listing> {
        mailbox::pending(self, mailbox)
    }

    fn pending_set(&self, mailbox: &Address) -> Result<Box<dyn mailroom_core::PendingSet>> {
        Ok(Box::new(mailbox::pending_set(self, mailbox)?))
    }

    fn find(&self, mailbox: &Address, prefix: &str) -> Result<Vec<Stored>> {
        mailbox::find(self, mailbox, prefix)
    }

    fn get(&self, mailbox: &Address, id: MessageId) -> Result<Option<Stored>> {
        mailbox::get(self, mailbox, id)
    }

    fn get_many(&self, mailbox: &Address, ids: &[MessageId]) -> Result<Vec<Option<Stored>>> {
        mailbox::get_many(self, mailbox, ids)
    }

    fn state_of(&self, mailbox: &Address, id: MessageId) -> Result<Option<State>> {
        mailbox::state_of(self, mailbox, id)
    }

    fn transition(
        &self,
        mailbox: &Address,
        moves: &[(MessageId, State)],
        to: State,
    ) -> Result<Vec<bool>> {
        mailbox::transition(self, mailbox, moves, to)
    }

    fn replace_unread(&self, mailbox: &Address, message: &Message) -> Result<bool> {
        mailbox::replace_unread(self, mailbox, message)
    }

    fn outbox(&self, sender: &Address) -> Result<Vec<Message>> {
        mailbox::outbox(self, sender)
    }

    fn recently_archived(
        &self,
        mailbox: &Address,
        limit: usize,
    ) -> Result<Vec<(Stored, Timestamp)>> {
        mailbox::recently_archived(self, mailbox, limit)
    }

    fn everything(&self, mailbox: &Address) -> Result<Listing> {
        mailbox::everything(self, mailbox)
    }

    fn set_archived_at(&self, mailbox: &Address, id: MessageId, at: Timestamp) -> Result<bool> {
        mailbox::set_archived_at(self, mailbox, id, at)
    }

    fn revisions(&self, mailbox: &Address) -> Result<mailroom_core::store::Revisions> {
        mailbox::revisions(self, mailbox)
    }

    fn keep_revision(&self, mailbox: &Address, message: &Message) -> Result<bool> {
        mailbox::keep_revision(self, mailbox, message)
    }

    fn search(&self, mailbox: &Address, query: &str) -> Result<Listing> {
        mailbox::search(self, mailbox, query)
    }

    fn search_sent(&self, sender: &Address, query: &str) -> Result<Vec<Message>> {
        mailbox::search_sent(self, sender, query)
    }
}

impl Channels for FsStore {
    fn entry(&self, channel: &ChannelRef, id: MessageId) -> Result<Option<Stored>> {
        channels::entry(self, channel, id)
    }

    fn append(&self, channel: &ChannelRef, message: &Message) -> Result<bool> {
        channels::append(self, channel, message)
    }

    fn entries(&self, channel: &ChannelRef, retracted: bool) -> Result<Listing> {
        channels::entries(self, channel, retracted)
    }

    fn unseen(&self, channel: &ChannelRef, reader: &Name) -> Result<Listing> {
        channels::unseen(self, channel, reader)
    }

    fn seen(&self, channel: &ChannelRef, reader: &Name) -> Result<Vec<MessageId>> {
        channels::seen(self, channel, reader)
    }

    fn mark_seen(
        &self,
        channel: &ChannelRef,
        reader: &Name,
        ids: &[MessageId],
    ) -> Result<Vec<bool>> {
        channels::mark_seen(self, channel, reader, ids)
    }

    fn retract(&self, channel: &ChannelRef, id: MessageId) -> Result<bool> {
        channels::retract(self, channel, id)
    }

    fn channels(&self, project: &Name) -> Result<Vec<Name>> {
        channels::channels(self, project)
    }

    fn search_entries(&self, project: &Name, query: &str) -> Result<Listing> {
        channels::search_entries(self, project, query)
    }
}

impl Sessions for FsStore {
    fn watch(&self, mailbox: &Address) -> Result<Box<dyn mailroom_core::store::Watch + Send>> {
        mailbox::watch(self, std::slice::from_ref(mailbox))
    }

    fn watch_many(
        &self,
        mailboxes: &[Address],
    ) -> Result<Box<dyn mailroom_core::store::Watch + Send>> {
        mailbox::watch(self, mailboxes)
    }

    fn change_token(&self, mailbox: &Address) -> Result<String> {
        session::change_token(self, mailbox)
    }

    fn last_injected(&self, mailbox: &Address) -> Result<Option<String>> {
        session::last_injected(self, mailbox)
    }

    fn set_last_injected(&self, mailbox: &Address, token: &str) -> Result<()> {
        session::set_last_injected(self, mailbox, token)
    }

    fn claim_origin(&self, identity: &Address, path: &str) -> Result<OriginClaim> {
        session::claim_origin(self, identity, path)
    }

    fn origin(&self, identity: &Address) -> Result<Option<String>> {
        session::origin(self, identity)
    }
}

impl mailroom_core::Tokens for FsStore {
    fn add_token(&self, token: &mailroom_core::Token) -> Result<bool> {
        tokens::add(self, token)
    }

    fn tokens(&self) -> Result<Vec<mailroom_core::Token>> {
        tokens::list(self)
    }

    fn token_by_hash(&self, hash: &str) -> Result<Option<mailroom_core::Token>> {
        tokens::by_hash(self, hash)
    }

    fn remove_token(&self, id: &str) -> Result<bool> {
        tokens::remove(self, id)
    }
}

impl FsStore {
    /// Checks the home for problems (and with `fix`, repairs those that are safe to repair:
    /// never a message's content, never by deleting a message). The file store's own upkeep,
    /// not part of the shared store contract.
    pub fn doctor(&self, fix: bool) -> Result<Vec<mailroom_core::Finding>> {
        Ok(doctor::run(self, fix)?)
    }
}
