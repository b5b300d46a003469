//! Compaction of a mailbox's pending directories: an empty `unread/` or `read/` that once held
//! many files is replaced by a new, small one.
//!
//! ext4 never shrinks a directory: one that once held 100,000 entries keeps its blocks, and
//! every later listing reads them all, however few files are left. A directory is only ever
//! replaced while it is empty, and the kernel decides that: `rmdir` refuses a directory with
//! an entry and removes an empty one in the same step. So no lock is taken and no message
//! moves. A writer that opened the old directory before the removal and renames into it
//! afterwards is refused with `ENOENT` (nothing is created in a removed directory); the
//! writers reopen the directory by name and try again (`delivery`, `mailbox::transition`),
//! and a watch on the removed directory is set up again on the new one (`watch`). A crash
//! between the removal and the new `mkdir` leaves no directory, which every reader takes as
//! empty and every writer creates.

use mailroom_core::State;

use crate::dir::Dir;
use crate::error::FsError;
use crate::state_dir_name;

/// The pending directories, the ones every listing reads.
pub const PENDING: [State; 2] = [State::Unread, State::Read];

/// A directory larger than this (in `st_size` bytes) is worth replacing once it is empty: a
/// new directory takes one 4 KiB block, and one that once held about 1,000 message files
/// takes 64 KiB.
pub const WORTH: u64 = 64 * 1024;

/// The size of `bx`'s state directory `state` when it is worth compacting, else `None`.
pub fn oversized(bx: &Dir, state: State) -> Result<Option<(Dir, u64)>, FsError> {
    let Some(dir) = bx.open(state_dir_name(state))? else {
        return Ok(None);
    };
    let bytes = dir.size()?;
    Ok((bytes > WORTH).then_some((dir, bytes)))
}

/// Removes the empty state directory and makes a new one (durably linked into the mailbox);
/// `false` when it was not empty at the moment of removal.
pub fn replace(bx: &Dir, state: State) -> Result<bool, FsError> {
    let name = state_dir_name(state);
    if !bx.remove_empty_dir(name)? {
        return Ok(false);
    }
    // `open_or_create` syncs the mailbox directory after creating, which also makes the
    // removal durable; a crash before leaves no directory, which reads as empty.
    bx.open_or_create(name)?;
    Ok(true)
}
