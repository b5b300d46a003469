//! Reading message files into a `Listing`: the one loop every listing of a mailbox state, an
//! outbox or a channel goes through.
//!
//! Invariants: files are read in name order (ids sort by time); one unreadable file becomes a
//! damaged entry and never hides the rest; a file moved away between listing and reading is
//! skipped, because the listing of its new place reports it.

use std::collections::HashMap;

use mailroom_core::{Address, Damaged, Listing, MessageId, State, Stored};

use crate::codec::message_from_bytes;
use crate::dir::Dir;
use crate::error::FsError;
use crate::{MESSAGE_FILE, id_of, is_message_name, spelt_id_of};

/// Reads the message files of `dir` whose names `keep` accepts, in name order, into `out`.
/// `owner` is the mailbox a file without `to` belongs to; `state` is `None` for an outbox.
pub(crate) fn read_dir(
    owner: &Address,
    dir: &Dir,
    state: Option<State>,
    keep: impl Fn(&str) -> bool,
    out: &mut Listing,
) -> Result<(), FsError> {
    let mut names: Vec<String> = dir
        .list()?
        .into_iter()
        .filter(|n| is_message_name(n) && keep(n))
        .collect();
    names.sort();
    for name in names {
        read_one(owner, dir, &name, state, out)?;
    }
    Ok(())
}

/// Reads one message file into `out` (a message, or a damaged entry); returns the inode of
/// the file when it was read as a message.
pub(crate) fn read_one(
    owner: &Address,
    dir: &Dir,
    name: &str,
    state: Option<State>,
    out: &mut Listing,
) -> Result<Option<u64>, FsError> {
    let damaged = |problem: String| Damaged {
        location: dir.child_path(name).display().to_string(),
        state,
        problem,
    };
    // A file moved away between listing and reading was moved by a concurrent process:
    // it is in another state now, and that listing (not this one) reports it.
    let (bytes, ino) = match dir.read_with_ino(name, MESSAGE_FILE) {
        Ok(Some(read)) => read,
        Ok(None) => return Ok(None),
        // One unreadable entry (a planted symlink or FIFO, a file without permission, one
        // too large to be a message) is reported like a damaged file; it must not hide
        // the rest of the listing.
        Err(e) => {
            out.damaged.push(damaged(e.to_string()));
            return Ok(None);
        }
    };
    match message_from_bytes(&bytes, id_of(name).or_else(|| spelt_id_of(name)), owner) {
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
            out.damaged.push(damaged(problem));
            Ok(None)
        }
    }
}

/// Keeps one copy per id across states, the last: state directories are read in lifecycle
/// order, so a copy that moved on while they were read is kept once, in its later state.
/// (Two files of one state with one id, possible only with hand-chosen names, both stay.)
pub(crate) fn keep_latest(messages: &mut Vec<Stored>) {
    let mut keep = latest_mask(messages).into_iter();
    messages.retain(|_| keep.next().unwrap_or(true));
}

/// For each copy, whether [`keep_latest`] keeps it.
pub(crate) fn latest_mask(messages: &[Stored]) -> Vec<bool> {
    let mut last: HashMap<MessageId, State> = HashMap::new();
    let mut keep: Vec<bool> = messages
        .iter()
        .rev()
        .map(|s| *last.entry(s.message.id).or_insert(s.state) == s.state)
        .collect();
    keep.reverse();
    keep
}
