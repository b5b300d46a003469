//! mailroom's Markdown file store: one file per message copy, its state the directory it is
//! in, every change one atomic rename (Maildir's discipline).
//!
//! Invariants: a message file is only ever published complete (written under `tmp/`, fsynced,
//! then linked or renamed into place), so no reader sees a torn file; a copy is in exactly one
//! state directory at any instant; reading a mailbox's pending mail never lists its archive.
//! The layout is documented in docs/FORMAT.md.

pub(crate) mod cache;
mod codec;
mod dir;
mod doctor;
mod error;
pub mod frontmatter;
mod names;
mod watch;

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::store::{Delivery, KeyClaim, OriginClaim};
use mailroom_core::{
    Address, Damaged, Listing, Member, Message, MessageId, Name, Policy, Project, Result, Scope,
    State, Store, Stored,
};

pub use crate::codec::LAYOUT_VERSION;

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
use crate::codec::{message_from_bytes, message_to_text};
use crate::dir::{Dir, Durability, Limit};
pub use crate::error::FsError;

/// The file store rooted at a home directory.
#[derive(Debug)]
pub struct FsStore {
    home: PathBuf,
    /// The last copy this store delivered: its text and the directory it is in. The sender's
    /// outbox trace of the same text is then a hard link to it, not a second file.
    last_delivery: std::sync::Mutex<Option<(String, Dir)>>,
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

const PENDING: [State; 2] = [State::Unread, State::Read];
const ARCHIVED: [State; 2] = [State::Done, State::Cancelled];

/// When an entry last changed, for records whose own date is missing (hand-written ones).
fn ctime_of(dir: &Dir, name: &str) -> Timestamp {
    dir.ctime(name)
        .ok()
        .flatten()
        .and_then(|ns| Timestamp::from_nanosecond(ns).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

fn file_name(id: MessageId) -> String {
    format!("{id}.md")
}

pub(crate) fn id_of(name: &str) -> Option<MessageId> {
    name.strip_suffix(".md").and_then(MessageId::parse)
}

pub(crate) fn is_message_name(name: &str) -> bool {
    name.ends_with(".md") && !name.starts_with('.')
}

/// A state directory as listed: its state, the directory, and its message files with their
/// inode numbers.
type Listed = (State, Dir, Vec<(String, u64)>);

/// Keeps one copy per id across states, the last: state directories are read in lifecycle
/// order, so a copy that moved on while they were read is kept once, in its later state.
/// (Two files of one state with one id, possible only with hand-chosen names, both stay.)
fn keep_latest(messages: &mut Vec<Stored>) {
    let mut last: std::collections::HashMap<MessageId, State> = std::collections::HashMap::new();
    let keep: Vec<bool> = messages
        .iter()
        .rev()
        .map(|s| *last.entry(s.message.id).or_insert(s.state) == s.state)
        .collect();
    let mut keep = keep.into_iter().rev();
    messages.retain(|_| keep.next().unwrap_or(true));
}

impl FsStore {
    /// A store at `home`; nothing is created until the first write.
    pub fn new(home: impl Into<PathBuf>) -> FsStore {
        FsStore {
            home: home.into(),
            last_delivery: std::sync::Mutex::new(None),
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

    /// The home, created (0700, with its layout file) when absent.
    fn root_for_write(&self) -> Result<Dir, FsError> {
        if let Some(d) = self.root()? {
            return Ok(d);
        }
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(dir::DIR_MODE)
            .create(&self.home)
            .map_err(|e| FsError::io("create directory", &self.home, e))?;
        let root = Dir::open_root(&self.home)?;
        let tmp = root.open_or_create(TMP)?;
        let name = tmp.write_temp(
            format!("{LAYOUT_VERSION}\n").as_bytes(),
            Durability::Durable,
        )?;
        tmp.publish_new(&name, &root, LAYOUT_FILE)?;
        root.sync()?;
        Ok(root)
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

    fn scope_dir(&self, scope: &Scope, create: bool) -> Result<Option<Dir>, FsError> {
        let root = if create {
            self.root_for_write()?
        } else {
            match self.root()? {
                Some(r) => r,
                None => return Ok(None),
            }
        };
        let open = |d: &Dir, name: &str| {
            if create {
                d.open_or_create(name).map(Some)
            } else {
                d.open(name)
            }
        };
        match scope {
            Scope::Global => open(&root, GLOBAL),
            Scope::Project(p) => match open(&root, PROJECTS)? {
                Some(projects) if create => names::open_or_create(&projects, p.as_str()).map(Some),
                Some(projects) => names::open(&projects, p.as_str()),
                None => Ok(None),
            },
        }
    }

    fn project_dir(&self, name: &Name, create: bool) -> Result<Option<Dir>, FsError> {
        self.scope_dir(&Scope::Project(name.clone()), create)
    }

    /// The mailbox directory of `address`.
    fn box_dir(&self, address: &Address, create: bool) -> Result<Option<Dir>, FsError> {
        let Some(scope) = self.scope_dir(&address.scope, create)? else {
            return Ok(None);
        };
        let boxes = if create {
            Some(scope.open_or_create(BOXES)?)
        } else {
            scope.open(BOXES)?
        };
        match boxes {
            Some(b) if create => names::open_or_create(&b, address.handle.as_str()).map(Some),
            Some(b) => names::open(&b, address.handle.as_str()),
            None => Ok(None),
        }
    }

    /// The directory of a channel.
    fn channel_dir(&self, channel: &ChannelRef, create: bool) -> Result<Option<Dir>, FsError> {
        let Some(project) = self.project_dir(&channel.project, create)? else {
            return Ok(None);
        };
        let channels = if create {
            Some(project.open_or_create(CHANNELS)?)
        } else {
            project.open(CHANNELS)?
        };
        match channels {
            Some(c) if create => names::open_or_create(&c, channel.name.as_str()).map(Some),
            Some(c) => names::open(&c, channel.name.as_str()),
            None => Ok(None),
        }
    }

    /// Reads the message files `names` of a channel directory, oldest first.
    fn read_entries(
        &self,
        channel: &ChannelRef,
        dir: &Dir,
        mut names: Vec<String>,
        state: State,
        out: &mut Listing,
    ) -> Result<(), FsError> {
        names.sort();
        // Entries have no owner mailbox; the channel's project stands in for a missing `to`.
        let owner = Address::in_project(channel.name.clone(), channel.project.clone());
        for name in names {
            self.read_one(&owner, dir, &name, Some(state), out)?;
        }
        Ok(())
    }

    /// Reads every message file in one state directory of a mailbox.
    fn read_state(
        &self,
        owner: &Address,
        bx: &Dir,
        state: State,
        out: &mut Listing,
    ) -> Result<(), FsError> {
        let Some(dir) = bx.open(state_dir_name(state))? else {
            return Ok(());
        };
        let mut names: Vec<String> = dir
            .list()?
            .into_iter()
            .filter(|n| is_message_name(n))
            .collect();
        names.sort();
        for name in names {
            self.read_one(owner, &dir, &name, Some(state), out)?;
        }
        Ok(())
    }

    /// Reads one message file into `out` (a message, or a damaged entry); returns the inode
    /// of the file when it was read as a message.
    fn read_one(
        &self,
        owner: &Address,
        dir: &Dir,
        name: &str,
        state: Option<State>,
        out: &mut Listing,
    ) -> Result<Option<u64>, FsError> {
        // A file moved away between listing and reading was moved by a concurrent process:
        // it is in another state now, and that listing (not this one) reports it.
        let (bytes, ino) = match dir.read_with_ino(name, MESSAGE_FILE) {
            Ok(Some(read)) => read,
            Ok(None) => return Ok(None),
            // One unreadable entry (a planted symlink or FIFO, a file without permission, one
            // too large to be a message) is reported like a damaged file; it must not hide
            // the rest of the listing.
            Err(e) => {
                out.damaged.push(Damaged {
                    location: dir.child_path(name).display().to_string(),
                    state,
                    problem: e.to_string(),
                });
                return Ok(None);
            }
        };
        match message_from_bytes(&bytes, id_of(name), owner) {
            Ok(decoded) => {
                let mut warnings = decoded.warnings;
                if id_of(name).is_none() {
                    warnings.push(format!(
                        "the file name '{name}' is not <id>.md, so this message cannot be moved; run `mailroom doctor --fix`"
                    ));
                }
                out.messages.push(Stored {
                    message: decoded.message,
                    state: state.unwrap_or(State::Done),
                    warnings,
                });
                Ok(Some(ino))
            }
            Err(problem) => {
                out.damaged.push(Damaged {
                    location: dir.child_path(name).display().to_string(),
                    state,
                    problem,
                });
                Ok(None)
            }
        }
    }

    fn read_states(&self, mailbox: &Address, states: &[State]) -> Result<Listing, FsError> {
        let mut out = Listing::default();
        if let Some(bx) = self.box_dir(mailbox, false)? {
            for &s in states {
                self.read_state(mailbox, &bx, s, &mut out)?;
            }
        }
        keep_latest(&mut out.messages);
        Ok(out)
    }

    /// The pending copies, their content from the mailbox's cache where the file is the one
    /// cached (same name, same inode); the cache is rewritten when it missed or went stale.
    fn pending_cached(&self, mailbox: &Address) -> Result<Listing, FsError> {
        let mut out = Listing::default();
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(out);
        };
        // A cache that cannot be read (missing, damaged, too large, not a regular file) is
        // an empty one: it only costs speed, and the rewrite below replaces it.
        let mut old = match bx.read(cache::CACHE_FILE, cache::LIMIT) {
            Ok(Some(bytes)) => cache::Cache::parse(&bytes),
            _ => cache::Cache::default(),
        };
        let cached_before = old.len();
        out.messages.reserve(cached_before);
        // Both directories are listed before any file is read. A copy moved from unread/ to
        // read/ between the two listings is in both: states only move forward, so it is kept
        // once, as read, and a listing never holds an id twice.
        let list = |state: State| -> Result<Option<Listed>, FsError> {
            let Some(dir) = bx.open(state_dir_name(state))? else {
                return Ok(None);
            };
            let mut names = dir.list_with_ino()?;
            names.retain(|(n, _)| is_message_name(n));
            Ok(Some((state, dir, names)))
        };
        let mut unread = list(State::Unread)?;
        let read = list(State::Read)?;
        if let (Some((_, _, u)), Some((_, _, r))) = (&mut unread, &read) {
            let moved_on: std::collections::HashSet<&str> =
                r.iter().map(|(n, _)| n.as_str()).collect();
            u.retain(|(n, _)| !moved_on.contains(n.as_str()));
        }
        // (file name, inode, index in `out.messages`) of every cacheable copy listed.
        let mut keys: Vec<(String, u64, usize)> = Vec::new();
        let mut missed = false;
        for (state, dir, names) in [unread, read].into_iter().flatten() {
            for (name, ino) in names {
                if let Some(hit) = old.take(&name, ino) {
                    keys.push((name, ino, out.messages.len()));
                    out.messages.push(Stored {
                        message: hit.message,
                        state,
                        warnings: hit.warnings,
                    });
                    continue;
                }
                missed = true;
                let before = out.messages.len();
                // Keyed by the inode of the file actually read, not the one listed: an edit
                // that replaced the file in between must not file its content under the old.
                let read = self.read_one(mailbox, &dir, &name, Some(state), &mut out)?;
                // Only well-named, readable files are cached; the rest are read every time.
                if let (Some(ino), Some(_)) = (read, id_of(&name)) {
                    keys.push((name, ino, before));
                }
            }
        }
        if missed || keys.len() != cached_before {
            let entries: Vec<(&str, u64, &Stored)> = keys
                .iter()
                .map(|(n, i, at)| (n.as_str(), *i, &out.messages[*at]))
                .collect();
            let bytes = cache::encode(&entries);
            // Best effort: a cache that cannot be written only costs speed. One too large to
            // be read back is not written, and the stale one goes.
            if bytes.len() > cache::LIMIT.bytes {
                let _ = bx.remove(cache::CACHE_FILE);
            } else if let Ok(tmp) = bx.open_or_create(TMP) {
                if let Ok(t) = tmp.write_temp(&bytes, Durability::Lazy) {
                    if tmp.rename(&t, &bx, cache::CACHE_FILE).is_err() {
                        let _ = tmp.remove(&t);
                    }
                }
            }
        }
        Ok(out)
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

    /// A mailbox's directories for delivery (created when absent): its `tmp/` and `unread/`.
    fn delivery_dirs(&self, recipient: &Address) -> Result<(Dir, Dir, Dir), FsError> {
        let bx = self.box_dir(recipient, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = bx.open_or_create(TMP)?;
        let unread = bx.open_or_create(state_dir_name(State::Unread))?;
        Ok((bx, tmp, unread))
    }

    /// Whether the mailbox `bx` holds the file `name` in any state.
    fn holds(bx: &Dir, name: &str) -> Result<bool, FsError> {
        for state in State::ALL {
            if let Some(dir) = bx.open(state_dir_name(state))? {
                if dir.exists(name)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Leaves the sender's outbox trace of `message` unless there is one: a second name for
    /// the prepared copy `source` when there is one (no second write), else a file of its own.
    /// Returns the outbox when this call created the trace (so an undo can remove it).
    fn leave_trace(
        &self,
        message: &Message,
        text: &str,
        source: Option<(&Dir, &str)>,
    ) -> Result<Option<Dir>, FsError> {
        let (bx, _, _) = self.delivery_dirs(&message.from)?;
        let outbox = bx.open_or_create(OUTBOX)?;
        let name = file_name(message.id);
        if outbox.exists(&name)? {
            return Ok(None);
        }
        let created = match source {
            Some((tmp, temp)) => tmp.link_to(temp, &outbox, &name)?,
            None => {
                let tmp = bx.open_or_create(TMP)?;
                let t = tmp.write_temp(text.as_bytes(), Durability::Lazy)?;
                tmp.publish_new(&t, &outbox, &name)?
            }
        };
        Ok(created.then_some(outbox))
    }

    fn find_in(
        &self,
        mailbox: &Address,
        prefix: &str,
        states: &[State],
    ) -> Result<Listing, FsError> {
        let mut out = Listing::default();
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(out);
        };
        for &state in states {
            let Some(dir) = bx.open(state_dir_name(state))? else {
                continue;
            };
            let mut names: Vec<String> = dir
                .list()?
                .into_iter()
                .filter(|n| is_message_name(n) && n.to_ascii_uppercase().starts_with(prefix))
                .collect();
            names.sort();
            for name in names {
                self.read_one(mailbox, &dir, &name, Some(state), &mut out)?;
            }
        }
        keep_latest(&mut out.messages);
        Ok(out)
    }
}

impl Store for FsStore {
    fn describe(&self) -> String {
        self.home.display().to_string()
    }

    fn projects(&self) -> Result<Vec<Project>> {
        let Some(root) = self.root()? else {
            return Ok(vec![]);
        };
        let Some(projects) = root.open(PROJECTS)? else {
            return Ok(vec![]);
        };
        let mut out = Vec::new();
        for entry in projects.list()? {
            let Ok(name) = Name::parse(&entry) else {
                continue;
            };
            if let Some(p) = self.project(&name)? {
                out.push(p);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn project(&self, name: &Name) -> Result<Option<Project>> {
        let Some(dir) = self.project_dir(name, false)? else {
            return Ok(None);
        };
        let Some(bytes) = dir.read(PROJECT_FILE, Limit::small("a project file"))? else {
            return Ok(None);
        };
        let fallback = || ctime_of(&dir, PROJECT_FILE);
        // The name as first written, which is the directory's.
        let spelled = dir
            .file_name()
            .and_then(|n| Name::parse(n).ok())
            .unwrap_or_else(|| name.clone());
        Ok(Some(codec::project_from_bytes(&bytes, &spelled, fallback)))
    }

    fn ensure_project(&self, project: &Project) -> Result<(Project, bool)> {
        let dir = self.project_dir(&project.name, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(PROJECTS),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = dir.open_or_create(TMP)?;
        dir.open_or_create(ROSTER)?;
        dir.open_or_create(BOXES)?;
        if Self::create_exclusive(&tmp, &dir, PROJECT_FILE, &codec::project_to_text(project))? {
            return Ok((project.clone(), true));
        }
        let existing = self
            .project(&project.name)?
            .unwrap_or_else(|| project.clone());
        Ok((existing, false))
    }

    fn set_policy(&self, name: &Name, policy: Policy) -> Result<bool> {
        let Some(mut project) = self.project(name)? else {
            return Ok(false);
        };
        let Some(dir) = self.project_dir(name, false)? else {
            return Ok(false);
        };
        project.policy = policy;
        let tmp = dir.open_or_create(TMP)?;
        Self::replace(&tmp, &dir, PROJECT_FILE, &codec::project_to_text(&project))?;
        Ok(true)
    }

    fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        let Some(dir) = self.project_dir(project, false)? else {
            return Ok(vec![]);
        };
        let Some(roster) = dir.open(ROSTER)? else {
            return Ok(vec![]);
        };
        let mut out = Vec::new();
        for entry in roster.list()? {
            let Some(handle) = entry.strip_suffix(".md").and_then(|h| Name::parse(h).ok()) else {
                continue;
            };
            if let Some(m) = self.member(project, &handle)? {
                out.push(m);
            }
        }
        out.sort_by(|a, b| a.handle.cmp(&b.handle));
        Ok(out)
    }

    fn member(&self, project: &Name, handle: &Name) -> Result<Option<Member>> {
        let Some(dir) = self.project_dir(project, false)? else {
            return Ok(None);
        };
        let Some(roster) = dir.open(ROSTER)? else {
            return Ok(None);
        };
        let Some(name) = names::spelled(&roster, handle.as_str(), ".md")? else {
            return Ok(None);
        };
        let Some(bytes) = roster.read(&name, Limit::small("a roster file"))? else {
            return Ok(None);
        };
        let fallback = || ctime_of(&roster, &name);
        let spelled = name
            .strip_suffix(".md")
            .and_then(|h| Name::parse(h).ok())
            .unwrap_or_else(|| handle.clone());
        Ok(Some(codec::member_from_bytes(&bytes, &spelled, fallback)))
    }

    fn add_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let dir = self.project_dir(project, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(PROJECTS),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = dir.open_or_create(TMP)?;
        let roster = dir.open_or_create(ROSTER)?;
        if names::spelled(&roster, member.handle.as_str(), ".md")?.is_some() {
            return Ok(false);
        }
        Ok(Self::create_exclusive(
            &tmp,
            &roster,
            &format!("{}.md", member.handle),
            &codec::member_to_text(member),
        )?)
    }

    fn update_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let Some(dir) = self.project_dir(project, false)? else {
            return Ok(false);
        };
        let Some(roster) = dir.open(ROSTER)? else {
            return Ok(false);
        };
        let Some(name) = names::spelled(&roster, member.handle.as_str(), ".md")? else {
            return Ok(false);
        };
        let tmp = dir.open_or_create(TMP)?;
        Self::replace(&tmp, &roster, &name, &codec::member_to_text(member))?;
        Ok(true)
    }

    fn deliver(&self, recipient: &Address, message: &Message) -> Result<bool> {
        let bx = self.box_dir(recipient, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = bx.open_or_create(TMP)?;
        let unread = bx.open_or_create(state_dir_name(State::Unread))?;
        let text = message_to_text(message);
        let t = tmp.write_temp(text.as_bytes(), Durability::Durable)?;
        let created = tmp.publish_new(&t, &unread, &file_name(message.id))?;
        unread.sync()?;
        if let Ok(mut last) = self.last_delivery.lock() {
            *last = Some((text, unread));
        }
        Ok(created)
    }

    /// Three steps. Prepare: in each recipient's mailbox that does not hold the id yet, write the
    /// copy under `tmp/` and `fdatasync` it (a failure removes the temp files written so far:
    /// nothing was published). Trace: link the first prepared copy into the sender's `outbox/`
    /// (best effort, not synced). Publish: `link` each copy into its `unread/`, then `fsync`
    /// each `unread/`; a failure unlinks every copy this call published, and the trace, before
    /// returning the error. A crash during publishing leaves the trace and the copies linked so
    /// far (plus temp files, debris for `doctor --fix`); called again, this skips the mailboxes
    /// that hold the id and finishes the rest.
    fn deliver_all(&self, recipients: &[Address], message: &Message) -> Result<Delivery> {
        let name = file_name(message.id);
        let text = message_to_text(message);
        // Each recipient's `tmp/` and `unread/`, with its prepared copy unless it had the id.
        let mut prepared: Vec<(Dir, Dir, Option<String>)> = Vec::with_capacity(recipients.len());
        let discard = |prepared: &[(Dir, Dir, Option<String>)]| {
            for (tmp, _, temp) in prepared {
                if let Some(t) = temp {
                    let _ = tmp.remove(t);
                }
            }
        };
        for recipient in recipients {
            let step = self.delivery_dirs(recipient).and_then(|(bx, tmp, unread)| {
                let temp = if Self::holds(&bx, &name)? {
                    None
                } else {
                    Some(tmp.write_temp(text.as_bytes(), Durability::Durable)?)
                };
                Ok((tmp, unread, temp))
            });
            match step {
                Ok(p) => prepared.push(p),
                Err(e) => {
                    discard(&prepared);
                    return Err(e.into());
                }
            }
        }

        let source = prepared
            .iter()
            .find_map(|(tmp, _, temp)| temp.as_deref().map(|t| (tmp, t)));
        let (trace, trace_error) = match self.leave_trace(message, &text, source) {
            Ok(outbox) => (outbox, None),
            Err(e) => (None, Some(e.to_string())),
        };

        let mut new = vec![false; prepared.len()];
        let mut failure = None;
        for (i, (tmp, unread, temp)) in prepared.iter_mut().enumerate() {
            let Some(t) = temp.take() else { continue };
            match tmp.link_to(&t, unread, &name) {
                Ok(created) => new[i] = created,
                Err(e) => failure = Some(e),
            }
            // A temp name left by a failed removal is debris `doctor --fix` clears.
            let _ = tmp.remove(&t);
            if failure.is_some() {
                break;
            }
        }
        if failure.is_none() {
            failure = prepared
                .iter()
                .zip(&new)
                .filter(|(_, new)| **new)
                .find_map(|((_, unread, _), _)| unread.sync().err());
        }
        let Some(failure) = failure else {
            return Ok(Delivery { new, trace_error });
        };

        // Undo: every copy this call published, then the trace. A copy no longer in `unread/`
        // was taken by a reader in the meantime and stays (so does the trace, which shows the
        // sender where): the error says where.
        discard(&prepared);
        let mut kept = Vec::new();
        for ((_, unread, _), recipient) in prepared
            .iter()
            .zip(recipients)
            .zip(&new)
            .filter_map(|(p, new)| new.then_some(p))
        {
            match unread.remove_present(&name) {
                Ok(true) => {
                    let _ = unread.sync();
                }
                Ok(false) | Err(_) => kept.push(recipient.to_string()),
            }
        }
        if kept.is_empty() {
            if let Some(outbox) = trace {
                let _ = outbox.remove(&name);
            }
            return Err(failure.into());
        }
        Err(mailroom_core::Error::store(
            format!(
                "message {} could not be sent, yet {} already had it (read at once, or it could not be withdrawn)",
                message.id,
                kept.join(", ")
            ),
            failure,
        ))
    }

    fn record_sent(&self, message: &Message) -> Result<()> {
        let bx = self.box_dir(&message.from, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let outbox = bx.open_or_create(OUTBOX)?;
        let text = message_to_text(message);
        let name = file_name(message.id);
        let last = self.last_delivery.lock().ok().and_then(|mut l| l.take());
        if let Some((delivered, unread)) = last {
            // The copy just delivered has exactly this text: link the trace to it (the copy's
            // later moves are renames, which keep the link; an edit records a new trace).
            if delivered == text && unread.link_to(&name, &outbox, &name)? {
                return Ok(());
            }
        }
        let tmp = bx.open_or_create(TMP)?;
        let t = tmp.write_temp(text.as_bytes(), Durability::Lazy)?;
        tmp.rename(&t, &outbox, &name)?;
        Ok(())
    }

    fn claim_key(&self, sender: &Address, key: &str, id: MessageId) -> Result<KeyClaim> {
        let bx = self.box_dir(sender, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = bx.open_or_create(TMP)?;
        let keys = bx.open_or_create(KEYS)?;
        // Hex keeps any key a safe file name; keys are at most 100 bytes, so 200 characters.
        let name: String = key.bytes().map(|b| format!("{b:02x}")).collect();
        if Self::create_exclusive(&tmp, &keys, &name, &format!("{id}\n"))? {
            return Ok(KeyClaim::Claimed);
        }
        let existing = keys
            .read(&name, Limit::small("an idempotency key file"))?
            .and_then(|b| MessageId::parse(String::from_utf8_lossy(&b).trim()));
        Ok(match existing {
            Some(first) => KeyClaim::Existing(first),
            None => KeyClaim::Claimed,
        })
    }

    fn pending(&self, mailbox: &Address) -> Result<Listing> {
        let mut listing = self.pending_cached(mailbox)?;
        mailroom_core::message::sort_by_cheap_key(&mut listing.messages, |s| s.message.id);
        Ok(listing)
    }

    fn find(&self, mailbox: &Address, prefix: &str) -> Result<Vec<Stored>> {
        let prefix = prefix.to_ascii_uppercase();
        if let Some(id) = MessageId::parse(&prefix) {
            return Ok(self.get(mailbox, id)?.into_iter().collect());
        }
        let pending = self.find_in(mailbox, &prefix, &PENDING)?;
        if !pending.messages.is_empty() {
            return Ok(pending.messages);
        }
        Ok(self.find_in(mailbox, &prefix, &ARCHIVED)?.messages)
    }

    fn get(&self, mailbox: &Address, id: MessageId) -> Result<Option<Stored>> {
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(None);
        };
        for state in State::ALL {
            let Some(dir) = bx.open(state_dir_name(state))? else {
                continue;
            };
            let mut out = Listing::default();
            self.read_one(mailbox, &dir, &file_name(id), Some(state), &mut out)?;
            if let Some(s) = out.messages.pop() {
                return Ok(Some(s));
            }
            if let Some(d) = out.damaged.pop() {
                return Err(mailroom_core::Error::store(
                    format!("message {id} cannot be read"),
                    format!("{}: {} (run `mailroom doctor`)", d.location, d.problem),
                ));
            }
        }
        Ok(None)
    }

    fn state_of(&self, mailbox: &Address, id: MessageId) -> Result<Option<State>> {
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(None);
        };
        for state in State::ALL {
            if let Some(dir) = bx.open(state_dir_name(state))? {
                if dir.exists(&file_name(id))? {
                    return Ok(Some(state));
                }
            }
        }
        Ok(None)
    }

    fn transition(
        &self,
        mailbox: &Address,
        moves: &[(MessageId, State)],
        to: State,
    ) -> Result<Vec<bool>> {
        let mut result = vec![false; moves.len()];
        if moves.is_empty() {
            return Ok(result);
        }
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(result);
        };
        let target = match bx.open(state_dir_name(to))? {
            Some(t) => t,
            // Create the target only when there is something to move: a refused move must
            // leave the home as it was.
            None if moves.iter().any(|(id, from)| {
                bx.open(state_dir_name(*from))
                    .ok()
                    .flatten()
                    .is_some_and(|d| d.exists(&file_name(*id)).unwrap_or(false))
            }) =>
            {
                bx.open_or_create(state_dir_name(to))?
            }
            None => return Ok(result),
        };
        let mut sources: Vec<(State, Dir)> = Vec::new();
        for (i, (id, from)) in moves.iter().enumerate() {
            if *from == to {
                continue;
            }
            if !sources.iter().any(|(s, _)| s == from) {
                match bx.open(state_dir_name(*from))? {
                    Some(d) => sources.push((*from, d)),
                    None => continue,
                }
            }
            let Some((_, src)) = sources.iter().find(|(s, _)| s == from) else {
                continue;
            };
            let name = file_name(*id);
            result[i] = src.rename(&name, &target, &name)?;
            if result[i] && to == State::Done {
                // `recover` orders by this: when the copy was archived.
                target.stamp(&name)?;
            }
        }
        if result.iter().any(|m| *m) {
            target.sync()?;
            for (_, src) in &sources {
                src.sync()?;
            }
        }
        Ok(result)
    }

    fn replace_unread(&self, mailbox: &Address, message: &Message) -> Result<bool> {
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(false);
        };
        let Some(unread) = bx.open(state_dir_name(State::Unread))? else {
            return Ok(false);
        };
        let tmp = bx.open_or_create(TMP)?;
        let revisions = bx.open_or_create(REVISIONS)?;
        let name = file_name(message.id);
        let old_name = format!("{}.r{}.md", message.id, message.revision.saturating_sub(1));
        let t = tmp.write_temp(message_to_text(message).as_bytes(), Durability::Durable)?;
        match tmp.exchange(&t, &unread, &name) {
            Ok(true) => {}
            Ok(false) => {
                tmp.remove(&t)?;
                return Ok(false);
            }
            Err(FsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::Unsupported => {
                // No atomic exchange here: claim the unread copy by moving it aside first, so
                // a reader either got it before the claim or finds the new revision after.
                let claim = format!("{}.editing", message.id);
                if !unread.rename(&name, &tmp, &claim)? {
                    tmp.remove(&t)?;
                    return Ok(false);
                }
                tmp.rename(&t, &unread, &name)?;
                unread.sync()?;
                tmp.rename(&claim, &revisions, &old_name)?;
                revisions.sync()?;
                return Ok(true);
            }
            Err(e) => {
                let _ = tmp.remove(&t);
                return Err(e.into());
            }
        }
        unread.sync()?;
        tmp.rename(&t, &revisions, &old_name)?;
        revisions.sync()?;
        Ok(true)
    }

    fn outbox(&self, sender: &Address) -> Result<Vec<Message>> {
        let Some(bx) = self.box_dir(sender, false)? else {
            return Ok(vec![]);
        };
        let Some(outbox) = bx.open(OUTBOX)? else {
            return Ok(vec![]);
        };
        let mut names: Vec<String> = outbox
            .list()?
            .into_iter()
            .filter(|n| is_message_name(n))
            .collect();
        names.sort();
        let mut out = Listing::default();
        for name in names {
            self.read_one(sender, &outbox, &name, None, &mut out)?;
        }
        Ok(out.messages.into_iter().map(|s| s.message).collect())
    }

    fn recently_archived(
        &self,
        mailbox: &Address,
        limit: usize,
    ) -> Result<Vec<(Stored, Timestamp)>> {
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(vec![]);
        };
        let Some(done) = bx.open(state_dir_name(State::Done))? else {
            return Ok(vec![]);
        };
        let mut dated = Vec::new();
        for name in done.list()?.into_iter().filter(|n| is_message_name(n)) {
            // The archive time: `transition` stamps the modification time on the way in.
            if let Some(at) = done.mtime(&name)? {
                dated.push((at, name));
            }
        }
        dated.sort_by(|a, b| b.cmp(a));
        let mut out = Vec::new();
        for (ctime, name) in dated.into_iter().take(limit) {
            let mut l = Listing::default();
            self.read_one(mailbox, &done, &name, Some(State::Done), &mut l)?;
            if let Some(s) = l.messages.pop() {
                out.push((
                    s,
                    Timestamp::from_nanosecond(ctime).unwrap_or(Timestamp::UNIX_EPOCH),
                ));
            }
        }
        Ok(out)
    }

    fn everything(&self, mailbox: &Address) -> Result<Listing> {
        Ok(self.read_states(mailbox, &State::ALL)?)
    }

    fn append(&self, channel: &ChannelRef, message: &Message) -> Result<bool> {
        let dir = self.channel_dir(channel, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(CHANNELS),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = dir.open_or_create(TMP)?;
        let entries = dir.open_or_create(ENTRIES)?;
        let t = tmp.write_temp(message_to_text(message).as_bytes(), Durability::Durable)?;
        let created = tmp.publish_new(&t, &entries, &file_name(message.id))?;
        entries.sync()?;
        Ok(created)
    }

    fn entries(&self, channel: &ChannelRef, retracted: bool) -> Result<Listing> {
        let mut out = Listing::default();
        let Some(dir) = self.channel_dir(channel, false)? else {
            return Ok(out);
        };
        let mut sources = vec![(ENTRIES, State::Unread)];
        if retracted {
            sources.push((RETRACTED, State::Retracted));
        }
        for (sub, state) in sources {
            if let Some(d) = dir.open(sub)? {
                let names = d
                    .list()?
                    .into_iter()
                    .filter(|n| is_message_name(n))
                    .collect();
                self.read_entries(channel, &d, names, state, &mut out)?;
            }
        }
        keep_latest(&mut out.messages);
        out.messages.sort_by_key(|s| s.message.id);
        Ok(out)
    }

    fn unseen(&self, channel: &ChannelRef, reader: &Name) -> Result<Listing> {
        let mut out = Listing::default();
        let Some(dir) = self.channel_dir(channel, false)? else {
            return Ok(out);
        };
        let Some(entries) = dir.open(ENTRIES)? else {
            return Ok(out);
        };
        let seen: std::collections::HashSet<MessageId> =
            self.seen(channel, reader)?.into_iter().collect();
        let names = entries
            .list()?
            .into_iter()
            .filter(|n| is_message_name(n) && id_of(n).is_none_or(|id| !seen.contains(&id)))
            .collect();
        self.read_entries(channel, &entries, names, State::Unread, &mut out)?;
        Ok(out)
    }

    fn seen(&self, channel: &ChannelRef, reader: &Name) -> Result<Vec<MessageId>> {
        let Some(dir) = self.channel_dir(channel, false)? else {
            return Ok(vec![]);
        };
        let Some(seen) = dir.open(SEEN)? else {
            return Ok(vec![]);
        };
        let Some(mine) = names::open(&seen, reader.as_str())? else {
            return Ok(vec![]);
        };
        Ok(mine
            .list()?
            .iter()
            .filter_map(|n| MessageId::parse(n))
            .collect())
    }

    fn mark_seen(
        &self,
        channel: &ChannelRef,
        reader: &Name,
        ids: &[MessageId],
    ) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let dir = self.channel_dir(channel, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(CHANNELS),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let mine = names::open_or_create(&dir.open_or_create(SEEN)?, reader.as_str())?;
        // Not fsynced: a seen mark lost in a crash shows the entry once more, never loses it.
        Ok(ids
            .iter()
            .map(|id| mine.create_marker(&id.to_string()))
            .collect::<Result<_, _>>()?)
    }

    fn retract(&self, channel: &ChannelRef, id: MessageId) -> Result<bool> {
        let Some(dir) = self.channel_dir(channel, false)? else {
            return Ok(false);
        };
        let Some(entries) = dir.open(ENTRIES)? else {
            return Ok(false);
        };
        if !entries.exists(&file_name(id))? {
            return Ok(false);
        }
        let retracted = dir.open_or_create(RETRACTED)?;
        let moved = entries.rename(&file_name(id), &retracted, &file_name(id))?;
        if moved {
            retracted.sync()?;
            entries.sync()?;
        }
        Ok(moved)
    }

    fn channels(&self, project: &Name) -> Result<Vec<Name>> {
        let Some(dir) = self.project_dir(project, false)? else {
            return Ok(vec![]);
        };
        let Some(channels) = dir.open(CHANNELS)? else {
            return Ok(vec![]);
        };
        let mut names: Vec<Name> = channels
            .list()?
            .iter()
            .filter_map(|n| Name::parse(n).ok())
            .collect();
        names.sort();
        Ok(names)
    }

    fn watch(&self, mailbox: &Address) -> Result<Box<dyn mailroom_core::store::Watch + Send>> {
        let bx = self.box_dir(mailbox, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let unread = bx.open_or_create(state_dir_name(State::Unread))?;
        let mut w = watch::FsWatch::new(&unread)?;
        // A member's broadcasts land in the project's `all` channel, which may not exist yet.
        if let Some(project) = mailbox.project() {
            if let Some(dir) = self.project_dir(project, false)? {
                w.also(dir, &[CHANNELS, mailroom_core::message::BROADCAST, ENTRIES])?;
            }
        }
        Ok(Box::new(w))
    }

    fn change_token(&self, mailbox: &Address) -> Result<String> {
        // The modification times of the directories deliveries land in: `unread/` and, for a
        // project member, the broadcast channel's entries. Two stats, no listing.
        let mut token = String::new();
        let stamp = |dir: Option<Dir>, name: &str| -> Result<String, FsError> {
            Ok(match dir {
                Some(d) => match d.mtime(name)? {
                    Some(ns) => ns.to_string(),
                    None => "-".into(),
                },
                None => "-".into(),
            })
        };
        token.push_str(&stamp(
            self.box_dir(mailbox, false)?,
            state_dir_name(State::Unread),
        )?);
        if let Some(project) = mailbox.project() {
            let all = ChannelRef {
                project: project.clone(),
                name: Name::parse(mailroom_core::message::BROADCAST)
                    .map_err(|e| mailroom_core::Error::store("channel name", e))?,
            };
            token.push(':');
            token.push_str(&stamp(self.channel_dir(&all, false)?, ENTRIES)?);
        }
        Ok(token)
    }

    fn last_injected(&self, mailbox: &Address) -> Result<Option<String>> {
        let Some(bx) = self.box_dir(mailbox, false)? else {
            return Ok(None);
        };
        // A token that cannot be read is no token: the hook lists, and saving the next one
        // replaces whatever is there.
        Ok(bx
            .read(INJECTED, Limit::small("the injection token"))
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned()))
    }

    fn set_last_injected(&self, mailbox: &Address, token: &str) -> Result<()> {
        let bx = self.box_dir(mailbox, true)?.ok_or_else(|| {
            FsError::io(
                "create",
                self.home.join(BOXES),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let tmp = bx.open_or_create(TMP)?;
        let t = tmp.write_temp(format!("{token}\n").as_bytes(), Durability::Lazy)?;
        tmp.rename(&t, &bx, INJECTED)?;
        Ok(())
    }

    fn doctor(&self, fix: bool) -> Result<Vec<mailroom_core::Finding>> {
        Ok(doctor::run(self, fix)?)
    }

    fn claim_origin(&self, identity: &Address, path: &str) -> Result<OriginClaim> {
        // A mailbox that was never written to is not created just to hold the claim.
        let Some(bx) = self.box_dir(identity, false)? else {
            return Ok(OriginClaim::Same);
        };
        if let Some(existing) = bx.read(ORIGIN, Limit::small("an origin file"))? {
            let existing = String::from_utf8_lossy(&existing).trim().to_owned();
            return Ok(if existing == path {
                OriginClaim::Same
            } else {
                OriginClaim::Other(existing)
            });
        }
        let tmp = bx.open_or_create(TMP)?;
        if Self::create_exclusive(&tmp, &bx, ORIGIN, &format!("{path}\n"))? {
            return Ok(OriginClaim::Same);
        }
        self.claim_origin(identity, path)
    }
}
