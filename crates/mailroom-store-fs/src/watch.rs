//! Waiting for mail: a watch on the mailbox's `unread/` wakes on every message published into
//! it (a `link` is a create, a hand-delivered `mv` a move-in), and a watch on the project's
//! broadcast entries wakes on every broadcast. A directory that does not exist yet (no mail or
//! broadcast yet, not even a home) is watched through its deepest existing ancestor, going down
//! one level each time a level is created, so nothing published after the watch started is
//! missed and nothing is created just to be watched. This module holds what the two watchers
//! (`sys`: inotify on Linux, a poll elsewhere) share: the levels of a path and finding the
//! deepest one that exists.

use std::path::{Path, PathBuf};

use crate::dir::Dir;
use crate::error::FsError;

/// One level of a path to watch, and how it is matched.
#[derive(Clone, Debug)]
pub enum Step {
    /// A directory above the home: links are followed, as they are to reach the home.
    Outside(String),
    /// A name of the layout, or the home itself: exactly, never through a link.
    Exact(String),
    /// A project, handle or channel: in any case (`names`).
    Named(String),
}

impl Step {
    pub(crate) fn open(&self, dir: &Dir) -> Result<Option<Dir>, FsError> {
        match self {
            Step::Outside(name) => dir.open_following(name),
            Step::Exact(name) => dir.open(name),
            Step::Named(name) => crate::names::open(dir, name),
        }
    }
}

/// The path a directory was opened at, for messages.
pub(crate) fn path_of(dir: &Dir) -> PathBuf {
    let child = dir.child_path("-");
    child.parent().map(Path::to_path_buf).unwrap_or(child)
}

/// The deepest existing ancestor of `home` (opened following links, as the path to the home
/// is), and the levels from it down to `home/below…`: the home itself is matched exactly,
/// never through a link, as the store opens it.
pub(crate) fn deepest_ancestor(home: &Path, below: Vec<Step>) -> Result<(Dir, Vec<Step>), FsError> {
    let mut up = Vec::new();
    let mut at = home;
    let base = loop {
        let path = if at.as_os_str().is_empty() {
            Path::new(".")
        } else {
            at
        };
        match Dir::open_path_following(path) {
            Ok(d) => break d,
            Err(FsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                    return Err(FsError::io("watch", home, source));
                };
                up.push(name.to_string_lossy().into_owned());
                at = parent;
            }
            Err(e) => return Err(e),
        }
    };
    let mut rest: Vec<Step> = up.iter().rev().map(|n| Step::Outside(n.clone())).collect();
    if let Some(Step::Outside(last)) = rest.pop() {
        rest.push(Step::Exact(last));
    }
    rest.extend(below);
    Ok((base, rest))
}
