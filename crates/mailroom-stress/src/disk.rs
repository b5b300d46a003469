//! A snapshot of every message copy in a home, read straight from the files with the store's
//! own decoder: what is really on disk, independent of what any command reported.
//!
//! Invariant: every `*.md` under a mailbox's `unread/`, `read/`, `done/`, `cancelled/` and
//! `outbox/` becomes one [`Copy`], decoded or with the reason it cannot be; every file under any
//! `tmp/` is listed as debris. Channel folders will be one more [`Folder`] here.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use mailroom_core::{Address, Message, MessageId, Name};

/// The folders of a mailbox that hold message copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Folder {
    Unread,
    Read,
    Done,
    Cancelled,
    Outbox,
}

impl Folder {
    pub const ALL: [Folder; 5] = [
        Folder::Unread,
        Folder::Read,
        Folder::Done,
        Folder::Cancelled,
        Folder::Outbox,
    ];

    pub fn dir_name(self) -> &'static str {
        match self {
            Folder::Unread => "unread",
            Folder::Read => "read",
            Folder::Done => "done",
            Folder::Cancelled => "cancelled",
            Folder::Outbox => "outbox",
        }
    }

    /// True for the recipient's lifecycle states (a copy is in exactly one of them).
    pub fn is_state(self) -> bool {
        self != Folder::Outbox
    }
}

impl fmt::Display for Folder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dir_name())
    }
}

/// One message file.
#[derive(Debug)]
pub struct Copy {
    /// The mailbox's address (`handle@project`, or `HUMAN`).
    pub mailbox: String,
    pub folder: Folder,
    /// The file name's stem (the id, for a well-named file).
    pub id: String,
    pub path: PathBuf,
    /// The message, or why it cannot be read cleanly (a warning counts: mailroom never writes
    /// a file that needs one).
    pub decoded: Result<Message, String>,
}

/// Everything found in a home.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub copies: Vec<Copy>,
    /// Files under any `tmp/` directory.
    pub temp_files: Vec<PathBuf>,
}

impl Snapshot {
    /// Reads the whole home (an absent home is empty).
    pub fn scan(home: &Path) -> Result<Snapshot> {
        let mut snap = Snapshot::default();
        if !home.exists() {
            return Ok(snap);
        }
        snap.temp_dir(&home.join("tmp"))?;
        for scope in [None]
            .into_iter()
            .chain(names(&home.join("projects"))?.into_iter().map(Some))
        {
            let (scope_dir, project) = match &scope {
                None => (home.join("global"), None),
                Some(p) => (home.join("projects").join(p), Some(p.as_str())),
            };
            snap.temp_dir(&scope_dir.join("tmp"))?;
            for handle in names(&scope_dir.join("boxes"))? {
                let bx = scope_dir.join("boxes").join(&handle);
                snap.temp_dir(&bx.join("tmp"))?;
                let owner = owner(&handle, project);
                for folder in Folder::ALL {
                    let dir = bx.join(folder.dir_name());
                    for name in names(&dir)? {
                        let path = dir.join(&name);
                        let Some(stem) = name.strip_suffix(".md") else {
                            continue;
                        };
                        let bytes = std::fs::read(&path)
                            .with_context(|| format!("cannot read {}", path.display()))?;
                        let decoded = decode(&bytes, stem, owner.as_ref());
                        snap.copies.push(Copy {
                            mailbox: owner
                                .as_ref()
                                .map(ToString::to_string)
                                .unwrap_or_else(|| format!("{handle}@{}", project.unwrap_or("?"))),
                            folder,
                            id: stem.to_owned(),
                            path,
                            decoded,
                        });
                    }
                }
            }
        }
        Ok(snap)
    }

    fn temp_dir(&mut self, dir: &Path) -> Result<()> {
        for name in names(dir)? {
            self.temp_files.push(dir.join(name));
        }
        Ok(())
    }
}

fn owner(handle: &str, project: Option<&str>) -> Option<Address> {
    let handle = Name::parse(handle).ok()?;
    match project {
        None => Some(Address::human()),
        Some(p) => Some(Address::in_project(handle, Name::parse(p).ok()?)),
    }
}

fn decode(bytes: &[u8], stem: &str, owner: Option<&Address>) -> Result<Message, String> {
    let id = MessageId::parse(stem).ok_or("is not named <id>.md")?;
    let owner = owner.ok_or("is in a mailbox whose name breaks the naming rule")?;
    match mailroom_store_fs::decode_message(bytes, Some(id), owner) {
        Ok((m, warnings)) if warnings.is_empty() => Ok(m),
        Ok((_, warnings)) => Err(format!("reads with warnings: {}", warnings.join("; "))),
        Err(e) => Err(e),
    }
}

/// The names in a directory, sorted; none when it does not exist.
fn names(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        out.push(e.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(out)
}
