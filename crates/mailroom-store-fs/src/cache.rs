//! A per-mailbox cache of decoded pending messages, so that listing a mailbox reads one file
//! instead of one per message.
//!
//! Which messages exist, and in which state, always comes from listing the state directories;
//! the cache only stands in for a file's content, and only for the same name *and* the same
//! inode. mailroom never rewrites a published file in place (an edit publishes a new inode),
//! so a hit is the file's content. A file hand-edited in place keeps its inode and would be
//! served stale: docs/FORMAT.md says to write a new file and move it in, and `doctor` drops
//! the cache. The cache is never fsynced; a lost or damaged cache is rebuilt.

use std::collections::HashMap;

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::{Address, Kind, Message, MessageId, Priority};
use serde::{Deserialize, Serialize};

/// The cache file's name inside a mailbox directory.
pub const CACHE_FILE: &str = "pending.cache";

/// Bumped whenever the record layout changes: an old cache is then ignored.
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct File<'a> {
    version: u32,
    #[serde(borrow)]
    entries: Vec<Record<'a>>,
}

#[derive(Serialize, Deserialize)]
struct Record<'a> {
    name: &'a str,
    ino: u64,
    id: &'a str,
    from: &'a str,
    to: Vec<&'a str>,
    subject: std::borrow::Cow<'a, str>,
    body: std::borrow::Cow<'a, str>,
    kind: &'a str,
    priority: &'a str,
    date_ms: i64,
    reply_to: Option<&'a str>,
    thread: &'a str,
    revision: u32,
    edited_ms: Option<i64>,
    channel: Option<&'a str>,
    warnings: Vec<std::borrow::Cow<'a, str>>,
}

/// A cached, decoded message file.
#[derive(Clone, Debug)]
pub struct Cached {
    pub message: Message,
    pub warnings: Vec<String>,
}

/// The cache as read: `(file name, inode)` → content.
#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<(String, u64), Cached>,
}

impl Cache {
    /// Parses a cache file; anything unexpected gives an empty cache.
    pub fn parse(bytes: &[u8]) -> Cache {
        let Ok(file) = serde_json::from_slice::<File<'_>>(bytes) else {
            return Cache::default();
        };
        if file.version != VERSION {
            return Cache::default();
        }
        let entries = file
            .entries
            .into_iter()
            .filter_map(|r| Some(((r.name.to_owned(), r.ino), decode(&r)?)))
            .collect();
        Cache { entries }
    }

    /// Takes the content cached for this file, if it is the file that was cached.
    pub fn take(&mut self, name: &str, ino: u64) -> Option<Cached> {
        self.entries.remove(&(name.to_owned(), ino))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

fn decode(r: &Record<'_>) -> Option<Cached> {
    let ts = |ms: i64| Timestamp::from_millisecond(ms).ok();
    Some(Cached {
        message: Message {
            id: MessageId::parse(r.id)?,
            from: Address::parse_canonical(r.from).ok()?,
            to: r
                .to
                .iter()
                .map(|t| Address::parse_canonical(t).ok())
                .collect::<Option<_>>()?,
            subject: r.subject.to_string(),
            body: r.body.to_string(),
            kind: r.kind.parse::<Kind>().ok()?,
            priority: r.priority.parse::<Priority>().ok()?,
            date: ts(r.date_ms)?,
            reply_to: match r.reply_to {
                Some(s) => Some(MessageId::parse(s)?),
                None => None,
            },
            thread: MessageId::parse(r.thread)?,
            revision: r.revision,
            edited: match r.edited_ms {
                Some(ms) => Some(ts(ms)?),
                None => None,
            },
            channel: match r.channel {
                Some(c) => Some(ChannelRef::parse_canonical(c)?),
                None => None,
            },
        },
        warnings: r.warnings.iter().map(|w| w.to_string()).collect(),
    })
}

/// The strings a record borrows, rendered once per message.
struct Rendered {
    id: String,
    to: Vec<String>,
    from: String,
    reply_to: Option<String>,
    thread: String,
    channel: Option<String>,
}

/// Serialises the entries `(file name, inode, content)` as a cache file.
pub fn encode(entries: &[(&str, u64, &mailroom_core::Stored)]) -> Vec<u8> {
    let rendered: Vec<Rendered> = entries
        .iter()
        .map(|(_, _, c)| {
            let m = &c.message;
            Rendered {
                id: m.id.to_string(),
                to: m.to.iter().map(ToString::to_string).collect(),
                from: m.from.to_string(),
                reply_to: m.reply_to.map(|r| r.to_string()),
                thread: m.thread.to_string(),
                channel: m.channel.as_ref().map(ToString::to_string),
            }
        })
        .collect();
    let records: Vec<Record<'_>> = entries
        .iter()
        .zip(&rendered)
        .map(|((name, ino, c), r)| Record {
            name,
            ino: *ino,
            id: &r.id,
            from: &r.from,
            to: r.to.iter().map(String::as_str).collect(),
            subject: c.message.subject.as_str().into(),
            body: c.message.body.as_str().into(),
            kind: c.message.kind.as_str(),
            priority: c.message.priority.as_str(),
            date_ms: c.message.date.as_millisecond(),
            reply_to: r.reply_to.as_deref(),
            thread: &r.thread,
            revision: c.message.revision,
            edited_ms: c.message.edited.map(|e| e.as_millisecond()),
            channel: r.channel.as_deref(),
            warnings: c.warnings.iter().map(|w| w.as_str().into()).collect(),
        })
        .collect();
    serde_json::to_vec(&File {
        version: VERSION,
        entries: records,
    })
    .unwrap_or_default()
}
