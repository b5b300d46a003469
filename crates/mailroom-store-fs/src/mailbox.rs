//! A mailbox's copies and their states: listing pending mail, finding a copy, moving copies
//! between state directories, replacing an unread copy, and the outbox and archive listings.
//!
//! Invariants: a copy is in exactly one state directory, and every change of state is one
//! `rename` (or one `renameat2(RENAME_EXCHANGE)` for an edit), so a crash leaves the old state
//! or the new one; pending mail is read from `unread/` and `read/` only, never the archive.

use std::collections::HashSet;

use jiff::Timestamp;
use mailroom_core::store::{PendingEntry, PendingSet, Revisions};
use mailroom_core::{Address, Damaged, Listing, Message, MessageId, Result, Scope, State, Stored};

use mailroom_core::store::matches_query;

use crate::cache;
use crate::codec::{message_from_bytes, message_to_text};
use crate::compact;
use crate::dir::{Dir, Durability};
use crate::error::FsError;
use crate::index::{self, Indexed};
use crate::listing::{keep_latest, read_dir, read_one};
use crate::{
    FsStore, MESSAGE_FILE, OUTBOX, REVISIONS, TMP, create_exclusive, file_name, id_of,
    is_message_name, state_dir_name,
};

const PENDING: [State; 2] = [State::Unread, State::Read];
const ARCHIVED: [State; 2] = [State::Done, State::Cancelled];

/// The state directory of mailbox `bx` that holds the file `name`, if any.
pub(crate) fn state_in(bx: &Dir, name: &str) -> Result<Option<State>, FsError> {
    for state in State::ALL {
        if let Some(dir) = bx.open(state_dir_name(state))?
            && dir.exists(name)?
        {
            return Ok(Some(state));
        }
    }
    Ok(None)
}

/// The copies in `states` whose file names `keep` accepts, each id once.
fn read_states(
    fs: &FsStore,
    mailbox: &Address,
    states: &[State],
    keep: impl Fn(&str) -> bool,
) -> Result<Listing, FsError> {
    let mut out = Listing::default();
    if let Some(bx) = fs.open_box(mailbox)? {
        for &state in states {
            if let Some(dir) = bx.open(state_dir_name(state))? {
                read_dir(mailbox, &dir, Some(state), &keep, &mut out)?;
            }
        }
    }
    keep_latest(&mut out.messages);
    Ok(out)
}

pub(crate) fn pending(fs: &FsStore, mailbox: &Address) -> Result<Listing> {
    let set = pending_set(fs, mailbox)?;
    let mut messages = (0..set.entries.len())
        .map(|i| set.stored(i))
        .collect::<Result<Vec<_>>>()?;
    mailroom_core::message::sort_by_cheap_key(&mut messages, |s| s.message.id);
    Ok(Listing {
        messages,
        damaged: set.damaged,
    })
}

/// A state directory as listed: its state, the directory, and its message files with their
/// inode numbers.
type Listed = (State, Dir, Vec<(String, u64)>);

/// The pending copies of a mailbox, in listing order, each decoded from the mailbox's cache
/// only when asked for (a copy that cannot be cached is held decoded).
pub(crate) struct FsPending {
    cache: Vec<u8>,
    entries: Vec<PendingEntry>,
    sources: Vec<Source>,
    damaged: Vec<Damaged>,
}

enum Source {
    Cached(cache::Record),
    Decoded(Box<Stored>),
}

impl PendingSet for FsPending {
    fn entries(&self) -> &[PendingEntry] {
        &self.entries
    }

    fn stored(&self, i: usize) -> Result<Stored> {
        let state = self.entries.get(i).map(|e| e.state);
        match (self.sources.get(i), state) {
            (Some(Source::Decoded(s)), _) => Ok((**s).clone()),
            (Some(Source::Cached(r)), Some(state)) => match cache::decode(&self.cache, r) {
                Some(c) => Ok(Stored {
                    message: c.message,
                    state,
                    warnings: c.warnings,
                }),
                // The record was indexed from these same bytes, and was written by this code
                // from a decoded message: it cannot fail to decode unless memory is damaged.
                None => Err(mailroom_core::Error::store(
                    format!("message {} cannot be read", r.id),
                    mailroom_core::Advised {
                        text: "the pending cache is damaged".to_owned(),
                        fix: mailroom_core::Fix::Doctor { repair: true },
                    },
                )),
            },
            _ => Err(mailroom_core::Error::store(
                "a pending listing",
                format!("no copy at {i}"),
            )),
        }
    }

    fn damaged(&self) -> &[Damaged] {
        &self.damaged
    }
}

/// The pending copies, their content from the mailbox's cache where the file is the one
/// cached (same name, same inode); the cache is rewritten when it missed or went stale.
pub(crate) fn pending_set(fs: &FsStore, mailbox: &Address) -> Result<FsPending, FsError> {
    let mut set = FsPending {
        cache: Vec::new(),
        entries: Vec::new(),
        sources: Vec::new(),
        damaged: Vec::new(),
    };
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(set);
    };
    let mut old = cache::load(&bx);
    let cached_before = old.len();
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
    if let (Some((_, _, u)), Some((_, _, r))) = (&mut unread, &read)
        && !u.is_empty()
    {
        let moved_on: HashSet<&str> = r.iter().map(|(n, _)| n.as_str()).collect();
        u.retain(|(n, _)| !moved_on.contains(n.as_str()));
    }
    // An empty pending directory that once held many files is replaced (see `compact`): this
    // listing read all of its blocks, and every later one would. Best effort: a directory
    // that cannot be replaced now only costs speed.
    for (state, dir, names) in [&unread, &read].into_iter().flatten() {
        if names.is_empty() && dir.size().is_ok_and(|b| b > compact::WORTH) {
            let _ = compact::replace(&bx, *state);
        }
    }
    let listed = unread.iter().chain(&read).map(|(_, _, n)| n.len()).sum();
    // First pass: every listed file found in the cache? Then the cache is used as it is.
    let mut found: Vec<Option<u32>> = Vec::with_capacity(listed);
    for (_, _, names) in [&unread, &read].into_iter().flatten() {
        for (name, ino) in names {
            found.push(old.find(name, *ino));
        }
    }
    let all_hit = found.iter().all(Option::is_some) && listed == cached_before;
    let mut writer = (!all_hit).then(cache::Writer::new);
    set.entries.reserve(listed);
    set.sources.reserve(listed);
    let mut found = found.into_iter();
    for (state, dir, names) in [unread, read].into_iter().flatten() {
        for (name, _) in names {
            let hit = found.next().flatten().and_then(|i| old.record(i));
            if let Some(r) = hit {
                let r = match &mut writer {
                    Some(w) => w.copy(&old.bytes, &r),
                    None => Some(r),
                };
                if let Some(r) = r {
                    set.entries.push(PendingEntry {
                        id: r.id,
                        kind: r.kind,
                        priority: r.priority,
                        state,
                    });
                    set.sources.push(Source::Cached(r));
                    continue;
                }
            }
            let mut out = Listing::default();
            // Keyed by the inode of the file actually read, not the one listed: an edit
            // that replaced the file in between must not file its content under the old.
            let mut read = read_one(mailbox, &dir, &name, Some(state), &mut out)?;
            let mut state = state;
            // Listed in unread/ but gone when read: a reader moved it on to read/ in between,
            // after read/ was listed. It is still pending, so this listing must hold it (a
            // `done --all` built on it would otherwise leave it behind).
            if read.is_none()
                && state == State::Unread
                && out.messages.is_empty()
                && out.damaged.is_empty()
                && let Some(moved_on) = bx.open(state_dir_name(State::Read))?
            {
                read = read_one(mailbox, &moved_on, &name, Some(State::Read), &mut out)?;
                state = State::Read;
            }
            set.damaged.append(&mut out.damaged);
            let Some(stored) = out.messages.pop() else {
                continue;
            };
            set.entries.push(PendingEntry {
                id: stored.message.id,
                kind: stored.message.kind,
                priority: stored.message.priority,
                state,
            });
            // Only well-named, readable files are cached; the rest are held decoded.
            match (read, id_of(&name), &mut writer) {
                (Some(ino), Some(_), Some(w)) => set
                    .sources
                    .push(Source::Cached(w.push(&name, ino, &stored))),
                _ => set.sources.push(Source::Decoded(Box::new(stored))),
            }
        }
    }
    set.cache = match writer {
        Some(w) => {
            let bytes = w.finish();
            cache::save(&bx, &bytes);
            bytes
        }
        None => std::mem::take(&mut old.bytes),
    };
    Ok(set)
}

pub(crate) fn find(fs: &FsStore, mailbox: &Address, prefix: &str) -> Result<Vec<Stored>> {
    let prefix = prefix.to_ascii_uppercase();
    if let Some(id) = MessageId::parse(&prefix) {
        return Ok(get(fs, mailbox, id)?.into_iter().collect());
    }
    let matches = |n: &str| n.to_ascii_uppercase().starts_with(&prefix);
    let pending = read_states(fs, mailbox, &PENDING, matches)?;
    if !pending.messages.is_empty() {
        return Ok(pending.messages);
    }
    Ok(read_states(fs, mailbox, &ARCHIVED, matches)?.messages)
}

pub(crate) fn get(fs: &FsStore, mailbox: &Address, id: MessageId) -> Result<Option<Stored>> {
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(None);
    };
    for state in State::ALL {
        let Some(dir) = bx.open(state_dir_name(state))? else {
            continue;
        };
        let mut out = Listing::default();
        read_one(mailbox, &dir, &file_name(id), Some(state), &mut out)?;
        if let Some(s) = out.messages.pop() {
            return Ok(Some(s));
        }
        if let Some(d) = out.damaged.pop() {
            return Err(mailroom_core::Error::store(
                format!("message {id} cannot be read"),
                mailroom_core::Advised {
                    text: format!("{}: {}", d.location, d.problem),
                    fix: mailroom_core::Fix::Doctor { repair: false },
                },
            ));
        }
    }
    Ok(None)
}

/// [`get`] of each of `ids`, with the mailbox and each state's directory opened once for all
/// (a listing that marked a thousand messages read reads each back: not a thousand openings
/// of the same directories).
pub(crate) fn get_many(
    fs: &FsStore,
    mailbox: &Address,
    ids: &[MessageId],
) -> Result<Vec<Option<Stored>>> {
    let mut found = Vec::with_capacity(ids.len());
    let Some(bx) = fs.open_box(mailbox)? else {
        found.resize_with(ids.len(), || None);
        return Ok(found);
    };
    // Each state's directory, opened when first needed (`None` until then).
    let mut dirs: Vec<Option<Option<Dir>>> = State::ALL.iter().map(|_| None).collect();
    for id in ids {
        let name = file_name(*id);
        let mut stored = None;
        for (state, dir) in State::ALL.iter().zip(dirs.iter_mut()) {
            let dir = match dir {
                Some(dir) => dir,
                None => dir.insert(bx.open(state_dir_name(*state))?),
            };
            let Some(dir) = dir else {
                continue;
            };
            let mut out = Listing::default();
            read_one(mailbox, dir, &name, Some(*state), &mut out)?;
            if let Some(s) = out.messages.pop() {
                stored = Some(s);
                break;
            }
            if let Some(d) = out.damaged.pop() {
                return Err(mailroom_core::Error::store(
                    format!("message {id} cannot be read"),
                    format!("{}: {} (run `mailroom doctor`)", d.location, d.problem),
                ));
            }
        }
        found.push(stored);
    }
    Ok(found)
}

pub(crate) fn state_of(fs: &FsStore, mailbox: &Address, id: MessageId) -> Result<Option<State>> {
    match fs.open_box(mailbox)? {
        Some(bx) => Ok(state_in(&bx, &file_name(id))?),
        None => Ok(None),
    }
}

pub(crate) fn transition(
    fs: &FsStore,
    mailbox: &Address,
    moves: &[(MessageId, State)],
    to: State,
) -> Result<Vec<bool>> {
    let mut result = vec![false; moves.len()];
    if moves.is_empty() {
        return Ok(result);
    }
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(result);
    };
    let mut target = match bx.open(state_dir_name(to))? {
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
        if !result[i] && src.exists(&name)? {
            // Not moved, yet still here: the target was replaced by compaction since it was
            // opened (a removed directory takes no entry). Once more, into the new one.
            target = bx.open_or_create(state_dir_name(to))?;
            bx.sync()?;
            result[i] = src.rename(&name, &target, &name)?;
        }
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
        // A pending directory these moves emptied may be one that once held many files (see
        // `compact`): replaced now rather than left for the next listing (or for `doctor` to
        // find after a day of reading). `rmdir` refuses it while a file is left; best effort,
        // as a directory not replaced only costs speed.
        for (state, src) in &sources {
            if compact::PENDING.contains(state) && src.size().is_ok_and(|b| b > compact::WORTH) {
                let _ = compact::replace(&bx, *state);
            }
        }
    }
    Ok(result)
}

pub(crate) fn replace_unread(fs: &FsStore, mailbox: &Address, message: &Message) -> Result<bool> {
    let Some(bx) = fs.open_box(mailbox)? else {
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

pub(crate) fn outbox(fs: &FsStore, sender: &Address) -> Result<Vec<Message>> {
    let Some(bx) = fs.open_box(sender)? else {
        return Ok(vec![]);
    };
    let mut out = Listing::default();
    if let Some(outbox) = bx.open(OUTBOX)? {
        read_dir(sender, &outbox, None, |_| true, &mut out)?;
    }
    Ok(out.messages.into_iter().map(|s| s.message).collect())
}

/// One outbox trace, read by its file name: a point lookup, not a listing.
pub(crate) fn sent(fs: &FsStore, sender: &Address, id: MessageId) -> Result<Option<Message>> {
    let Some(bx) = fs.open_box(sender)? else {
        return Ok(None);
    };
    let Some(outbox) = bx.open(OUTBOX)? else {
        return Ok(None);
    };
    let mut out = Listing::default();
    read_one(sender, &outbox, &file_name(id), None, &mut out)?;
    Ok(out.messages.pop().map(|s| s.message))
}

pub(crate) fn recently_archived(
    fs: &FsStore,
    mailbox: &Address,
    limit: usize,
) -> Result<Vec<(Stored, Timestamp)>> {
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(vec![]);
    };
    let Some(done) = bx.open(state_dir_name(State::Done))? else {
        return Ok(vec![]);
    };
    let mut dated = Vec::new();
    for name in done.list()?.into_iter().filter(|n| is_message_name(n)) {
        // The archive time: `transition` stamps the modification time on the way in.
        if let Some(archived) = done.mtime(&name)? {
            dated.push((archived, name));
        }
    }
    dated.sort_by(|a, b| b.cmp(a));
    let mut out = Vec::new();
    for (archived, name) in dated.into_iter().take(limit) {
        let mut l = Listing::default();
        read_one(mailbox, &done, &name, Some(State::Done), &mut l)?;
        if let Some(s) = l.messages.pop() {
            out.push((
                s,
                Timestamp::from_nanosecond(archived).unwrap_or(Timestamp::UNIX_EPOCH),
            ));
        }
    }
    Ok(out)
}

/// Gives the done copy `id` its archive time: the modification time `recently_archived` reads
/// and orders by.
pub(crate) fn set_archived_at(
    fs: &FsStore,
    mailbox: &Address,
    id: MessageId,
    at: Timestamp,
) -> Result<bool> {
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(false);
    };
    let Some(done) = bx.open(state_dir_name(State::Done))? else {
        return Ok(false);
    };
    Ok(done.set_mtime(&file_name(id), at)?)
}

/// What a file name in `revisions/` says it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RevisionName {
    /// `<id>.r<N>.md`, N ≥ 1 (written without leading zeros): what an edit keeps.
    Numbered(MessageId, u32),
    /// `<id>.interrupted.md`: the revision an interrupted edit replaced, which `doctor --fix`
    /// moved there. Its name gives no number: its header's stands.
    Interrupted(MessageId),
}

/// How `name` in `revisions/` is read, or `None` when it is no revision's name (a duplicate
/// `doctor --fix` set aside, or anything written by hand).
pub(crate) fn revision_name(name: &str) -> Option<RevisionName> {
    let stem = name.strip_suffix(".md")?;
    let canonical = |s: &str| MessageId::parse(s).filter(|id| id.to_string() == s);
    if let Some(id) = stem.strip_suffix(".interrupted") {
        return canonical(id).map(RevisionName::Interrupted);
    }
    let (id, n) = stem.rsplit_once(".r")?;
    let number: u32 = n.parse().ok().filter(|&v| v >= 1)?;
    if number.to_string() != n {
        return None;
    }
    canonical(id).map(|id| RevisionName::Numbered(id, number))
}

/// Why a file of `revisions/` that is no revision's name is not read as one.
pub(crate) fn not_a_revision(name: &str) -> String {
    if name.contains(".duplicate-") {
        "is a second copy of a message that `doctor --fix` set aside, not an earlier revision (only <id>.r<N>.md and <id>.interrupted.md are), so it is not copied".to_owned()
    } else {
        "has a name that is not <id>.r<N>.md with N ≥ 1 (nor <id>.interrupted.md), so it is not read as an earlier revision".to_owned()
    }
}

/// Every earlier revision in `revisions/`: what edits kept (`<id>.r<N>.md`, the name giving
/// the id and the number) and what `doctor --fix` moved there from an interrupted edit
/// (`<id>.interrupted.md`, the name giving the id, the header the number). A header that
/// disagrees with the name is read as the name says, with a warning; any other file is
/// reported damaged, and so is a second file of one `(id, revision)`.
pub(crate) fn revisions(fs: &FsStore, mailbox: &Address) -> Result<Revisions> {
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(Revisions::default());
    };
    let Some(dir) = bx.open(REVISIONS)? else {
        return Ok(Revisions::default());
    };
    let mut names: Vec<String> = dir
        .list()?
        .into_iter()
        .filter(|n| is_message_name(n))
        .collect();
    names.sort();
    let mut out = Revisions::default();
    // Each revision read, whether its number came from the header (an interrupted edit's),
    // and where it is.
    let mut read: Vec<(Message, bool, String)> = Vec::new();
    for name in names {
        let location = dir.child_path(&name).display().to_string();
        let damaged = |problem: String| Damaged {
            location: location.clone(),
            state: None,
            problem,
        };
        let Some(named) = revision_name(&name) else {
            out.damaged.push(damaged(not_a_revision(&name)));
            continue;
        };
        let (id, number) = match named {
            RevisionName::Numbered(id, n) => (id, Some(n)),
            RevisionName::Interrupted(id) => (id, None),
        };
        let bytes = match dir.read_with_ino(&name, MESSAGE_FILE) {
            Ok(Some((bytes, _))) => bytes,
            Ok(None) => continue,
            Err(e) => {
                out.damaged.push(damaged(e.to_string()));
                continue;
            }
        };
        match message_from_bytes(&bytes, Some(id), mailbox) {
            Ok(decoded) => {
                let mut message = decoded.message;
                let mut warnings = decoded.warnings;
                if let Some(n) = number
                    && message.revision != n
                {
                    warnings.push(format!(
                        "the header says revision {} but the file is named r{n}; the name wins",
                        message.revision
                    ));
                    message.revision = n;
                }
                out.warnings
                    .extend(warnings.into_iter().map(|w| format!("{location}: {w}")));
                read.push((message, number.is_none(), location));
            }
            Err(problem) => out.damaged.push(damaged(problem)),
        }
    }
    read.sort_by_key(|(m, interrupted, _)| (m.id, m.revision, *interrupted));
    let mut last: Option<(MessageId, u32)> = None;
    for (message, _, location) in read {
        let key = (message.id, message.revision);
        if last == Some(key) {
            out.damaged.push(Damaged {
                location,
                state: None,
                problem: format!(
                    "is revision {} of {} again ({}.r{}.md or another file holds it), so it is not copied",
                    message.revision, message.id, message.id, message.revision
                ),
            });
            continue;
        }
        last = Some(key);
        out.messages.push(message);
    }
    Ok(out)
}

/// Writes `revisions/<id>.r<N>.md` unless it, or another file there with that id and
/// revision, exists.
pub(crate) fn keep_revision(fs: &FsStore, mailbox: &Address, message: &Message) -> Result<bool> {
    // A revision belongs to a copy in this mailbox, from the same sender.
    if get(fs, mailbox, message.id)?.is_none_or(|copy| copy.message.from != message.from) {
        return Ok(false);
    }
    let name = format!("{}.r{}.md", message.id, message.revision);
    if let Some(bx) = fs.open_box(mailbox)?
        && let Some(dir) = bx.open(REVISIONS)?
    {
        if dir.exists(&name)? {
            return Ok(false);
        }
        // The one other name that may hold a revision (see `revisions`).
        let interrupted = format!("{}.interrupted.md", message.id);
        let mut read = Listing::default();
        read_dir(mailbox, &dir, None, |n| n == interrupted, &mut read)?;
        if read
            .messages
            .iter()
            .any(|s| s.message.id == message.id && s.message.revision == message.revision)
        {
            return Ok(false);
        }
    }
    let bx = fs.create_box(mailbox)?;
    let tmp = bx.open_or_create(TMP)?;
    let revisions = bx.open_or_create(REVISIONS)?;
    Ok(create_exclusive(
        &tmp,
        &revisions,
        &name,
        &message_to_text(message),
    )?)
}

pub(crate) fn everything(fs: &FsStore, mailbox: &Address) -> Result<Listing> {
    Ok(read_states(fs, mailbox, &State::ALL, |_| true)?)
}

/// Watches each mailbox's `unread/`, and a member's broadcast channel, with one watcher,
/// creating nothing: a level not there yet (not even the home) is watched through the deepest
/// one that is.
pub(crate) fn watch(
    fs: &FsStore,
    mailboxes: &[Address],
) -> Result<Box<dyn mailroom_core::store::Watch + Send>> {
    use crate::watch::Step::{Exact, Named};
    let mut w = crate::sys::Watcher::new(fs.home())?;
    let mut channels = std::collections::HashSet::new();
    for mailbox in mailboxes {
        let scope = match &mailbox.scope {
            Scope::Global => vec![Exact(crate::GLOBAL.into())],
            Scope::Project(p) => vec![Exact(crate::PROJECTS.into()), Named(p.to_string())],
        };
        let mut unread = scope.clone();
        unread.extend([
            Exact(crate::BOXES.into()),
            Named(mailbox.handle.to_string()),
            Exact(state_dir_name(State::Unread).into()),
        ]);
        w.below_home(fs.home(), unread)?;
        // A member's broadcasts land in the project's `all` channel, watched once per project.
        if let Some(p) = mailbox.project()
            && channels.insert(p.clone())
        {
            let mut entries = scope;
            entries.extend([
                Exact(crate::CHANNELS.into()),
                Named(mailroom_core::message::BROADCAST.into()),
                Exact(crate::ENTRIES.into()),
            ]);
            w.below_home(fs.home(), entries)?;
        }
    }
    Ok(Box::new(w))
}

/// The copies whose subject or body contains `query`: `everything` filtered by
/// `matches_query`. Pending mail is read as `pending` reads it (O(pending)); the archive
/// through its search index (see `index`), which deliveries and reads never make stale.
pub(crate) fn search(fs: &FsStore, mailbox: &Address, query: &str) -> Result<Listing> {
    const _: () = assert!(
        PENDING.len() + ARCHIVED.len() == State::ALL.len(),
        "pending and archived states together are every state, in `State::ALL`'s order"
    );
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(Listing::default());
    };
    let sources = ARCHIVED.map(|s| (state_dir_name(s), Some(s)));
    let archive = index::search(
        &Indexed {
            parent: &bx,
            file: index::MAILBOX_INDEX,
            sources: &sources,
            owner: mailbox,
        },
        query,
    )?;
    let mut out = read_states(fs, mailbox, &PENDING, |_| true)?;
    out.messages.retain(|s| matches_query(&s.message, query));
    // `everything` keeps one copy per id, the one in the latest state: a pending copy with
    // an archived copy of the same id is not listed (a copy caught mid-move, or hand-made).
    let mut archived = Vec::new();
    for s in &out.messages {
        archived.push(in_archive(&bx, mailbox, s.message.id, &archive.misnamed)?);
    }
    let mut archived = archived.into_iter();
    out.messages.retain(|_| !archived.next().unwrap_or(false));
    // A copy restored from the archive between the two reads is in both: the pending one,
    // read last, is its state now.
    let pending: std::collections::HashSet<MessageId> =
        out.messages.iter().map(|s| s.message.id).collect();
    out.messages.extend(
        archive
            .listing
            .messages
            .into_iter()
            .filter(|s| !pending.contains(&s.message.id)),
    );
    out.damaged.extend(archive.listing.damaged);
    Ok(out)
}

/// Whether the archive of mailbox `bx` holds a readable copy with id `id`: the file
/// `<id>.md` of an archived state, or one of the misnamed files whose header gives `id`.
fn in_archive(
    bx: &Dir,
    mailbox: &Address,
    id: MessageId,
    misnamed: &[MessageId],
) -> Result<bool, FsError> {
    if misnamed.contains(&id) {
        return Ok(true);
    }
    for state in ARCHIVED {
        if let Some(dir) = bx.open(state_dir_name(state))? {
            let mut l = Listing::default();
            read_one(mailbox, &dir, &file_name(id), Some(state), &mut l)?;
            if l.messages.iter().any(|s| s.message.id == id) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The outbox traces whose subject or body contains `query`: `outbox` filtered by
/// `matches_query`, read through the outbox's search index.
pub(crate) fn search_sent(fs: &FsStore, sender: &Address, query: &str) -> Result<Vec<Message>> {
    let Some(bx) = fs.open_box(sender)? else {
        return Ok(vec![]);
    };
    let found = index::search(
        &Indexed {
            parent: &bx,
            file: index::OUTBOX_INDEX,
            sources: &[(OUTBOX, None)],
            owner: sender,
        },
        query,
    )?;
    Ok(found
        .listing
        .messages
        .into_iter()
        .map(|s| s.message)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{RevisionName, revision_name};
    use mailroom_core::MessageId;

    #[test]
    fn only_an_id_and_a_number_from_one_up_name_a_revision() {
        let id = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        let parsed = MessageId::parse(id).unwrap();
        assert_eq!(
            revision_name(&format!("{id}.r7.md")),
            Some(RevisionName::Numbered(parsed, 7))
        );
        assert_eq!(
            revision_name(&format!("{id}.interrupted.md")),
            Some(RevisionName::Interrupted(parsed))
        );
        for stray in [
            format!("{id}.r0.md"),
            format!("{id}.r07.md"),
            format!("{id}.r+7.md"),
            format!("{id}.r.md"),
            format!("{id}.md"),
            format!("{id}.duplicate-unread.md"),
            format!("{}.r1.md", id.to_lowercase()),
            "notes.r1.md".to_owned(),
        ] {
            assert_eq!(revision_name(&stray), None, "{stray}");
        }
    }
}
