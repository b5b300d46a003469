//! Directory handles a store keeps open from one operation to the next, so that a long-lived
//! process (the MCP server) and a command that reaches one mailbox several times do not walk
//! from the home to a project or mailbox again each time.
//!
//! A held handle is only a first guess, checked before every use: it is used only while the
//! path it was opened at still names the same directory (device and inode, one `stat` of the
//! whole path, never following a link in its last component). A directory renamed, removed or
//! replaced by hand fails that check, is dropped, and the caller walks from the home as if
//! nothing were held. Nothing held ever answers "does not exist": a miss always walks. (The
//! check's lookup follows a link placed above the last component, which the walk refuses; it
//! passes only when that link leads back to the very directory held, opened inside the home
//! by a walk, so nothing is ever reached outside the home through it.)

use std::collections::HashMap;
use std::sync::Mutex;

use mailroom_core::{Address, Scope};

use crate::dir::Dir;

/// The most handles held (beyond it the store starts over): bounds the descriptors a process
/// that reaches many mailboxes keeps open.
const MAX_HELD: usize = 64;

/// A directory's device and inode.
type Identity = (u64, u64);

/// The held handles, keyed by the path below the home in lower case (names match in any
/// case), each with the device and inode it had when opened.
#[derive(Debug, Default)]
pub(crate) struct Held {
    dirs: Mutex<HashMap<String, (Dir, Identity)>>,
}

/// The key of a scope's directory.
pub(crate) fn scope_key(scope: &Scope) -> String {
    match scope {
        Scope::Global => crate::GLOBAL.to_owned(),
        Scope::Project(p) => format!("{}/{}", crate::PROJECTS, p.as_str().to_ascii_lowercase()),
    }
}

/// The key of a mailbox's directory.
pub(crate) fn box_key(address: &Address) -> String {
    format!(
        "{}/{}/{}",
        scope_key(&address.scope),
        crate::BOXES,
        address.handle.as_str().to_ascii_lowercase()
    )
}

impl Held {
    /// The directory held under `key`, if it is still where it was opened.
    pub(crate) fn get(&self, key: &str) -> Option<Dir> {
        let (dir, identity) = self.dirs.lock().ok()?.get(key).cloned()?;
        if dir.still_at_its_path(identity) {
            return Some(dir);
        }
        if let Ok(mut dirs) = self.dirs.lock() {
            dirs.remove(key);
        }
        None
    }

    /// Holds `dir`, just reached by a walk, under `key`.
    pub(crate) fn keep(&self, key: String, dir: &Dir) {
        let Ok(identity) = dir.identity() else {
            return;
        };
        if let Ok(mut dirs) = self.dirs.lock() {
            if dirs.len() >= MAX_HELD {
                dirs.clear();
            }
            dirs.insert(key, (dir.clone(), identity));
        }
    }
}
