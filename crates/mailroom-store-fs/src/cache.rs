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
use mailroom_core::{Address, Kind, Message, MessageId, Priority, Stored};

use crate::TMP;
use crate::dir::{Dir, Durability, Limit};

/// The cache file's name inside a mailbox directory.
pub const CACHE_FILE: &str = "pending.cache";

/// The largest cache file read: 64 MiB, hundreds of typical pending messages. A mailbox whose
/// pending mail would make a larger cache is listed without one.
pub const LIMIT: Limit = Limit {
    bytes: 64 * 1024 * 1024,
    what: "the pending cache",
};

/// The first bytes of a cache file; bumped whenever the record layout changes, so an old
/// cache is ignored.
const MAGIC: &[u8; 8] = b"MRCACHE2";

/// A cached, decoded message file.
#[derive(Clone, Debug)]
pub struct Cached {
    pub message: Message,
    pub warnings: Vec<String>,
}

/// The cache as read: inode → (file name, content).
#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<u64, (String, Cached)>,
}

impl Cache {
    /// Parses a cache file; anything unexpected gives an empty cache.
    pub fn parse(bytes: &[u8]) -> Cache {
        let mut r = Reader { buf: bytes, pos: 0 };
        if r.take(MAGIC.len()) != Some(&MAGIC[..]) {
            return Cache::default();
        }
        let Some(count) = r.u32() else {
            return Cache::default();
        };
        // Each record takes well over 64 bytes: a count beyond that is damage, not a size.
        let mut entries = HashMap::with_capacity((count as usize).min(bytes.len() / 64));
        for _ in 0..count {
            match r.record() {
                Some((name, ino, cached)) => {
                    entries.insert(ino, (name.to_owned(), cached));
                }
                None => return Cache::default(),
            }
        }
        Cache { entries }
    }

    /// Takes the content cached for this file, if it is the file that was cached.
    pub fn take(&mut self, name: &str, ino: u64) -> Option<Cached> {
        match self.entries.get(&ino) {
            Some((cached_name, _)) if cached_name == name => {
                self.entries.remove(&ino).map(|(_, c)| c)
            }
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The cache of mailbox `bx`. One that cannot be read (missing, damaged, too large, not a
/// regular file) is an empty one: it only costs speed, and the next `save` replaces it.
pub fn load(bx: &Dir) -> Cache {
    match bx.read(CACHE_FILE, LIMIT) {
        Ok(Some(bytes)) => Cache::parse(&bytes),
        _ => Cache::default(),
    }
}

/// Replaces the cache of mailbox `bx` with `entries`, best effort: a cache that cannot be
/// written only costs speed. One too large to be read back is not written, and the stale one
/// goes.
pub fn save(bx: &Dir, entries: &[(&str, u64, &Stored)]) {
    let bytes = encode(entries);
    if bytes.len() > LIMIT.bytes {
        let _ = bx.remove(CACHE_FILE);
    } else if let Ok(tmp) = bx.open_or_create(TMP)
        && let Ok(t) = tmp.write_temp(&bytes, Durability::Lazy)
        && tmp.rename(&t, bx, CACHE_FILE).is_err()
    {
        let _ = tmp.remove(&t);
    }
}

/// A bounds-checked reader over the cache's length-prefixed fields. Written by hand: the
/// format is private, read on every listing, and a general serialiser cost more than the
/// rest of a listing of a thousand messages.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.take(1)? {
            [0] => Some(None),
            _ => self.str().map(Some),
        }
    }

    fn time(&mut self) -> Option<Timestamp> {
        Timestamp::from_millisecond(self.u64()? as i64).ok()
    }

    fn record(&mut self) -> Option<(&'a str, u64, Cached)> {
        let name = self.str()?;
        let ino = self.u64()?;
        // The fields in the order `encode` writes them, which is the order of `Message`'s
        // fields: a struct expression evaluates its fields in the order they are written.
        let message = Message {
            id: MessageId::parse(self.str()?)?,
            from: Address::parse_canonical(self.str()?).ok()?,
            to: (0..self.u32()?)
                .map(|_| self.str().and_then(|t| Address::parse_canonical(t).ok()))
                .collect::<Option<Vec<_>>>()?,
            subject: self.str()?.to_owned(),
            body: self.str()?.to_owned(),
            kind: self.str()?.parse::<Kind>().ok()?,
            priority: self.str()?.parse::<Priority>().ok()?,
            date: self.time()?,
            reply_to: match self.opt_str()? {
                Some(r) => Some(MessageId::parse(r)?),
                None => None,
            },
            thread: MessageId::parse(self.str()?)?,
            revision: self.u32()?,
            edited: match self.take(1)? {
                [0] => None,
                _ => Some(self.time()?),
            },
            channel: match self.opt_str()? {
                Some(c) => Some(ChannelRef::parse_canonical(c)?),
                None => None,
            },
        };
        let warnings = (0..self.u32()?)
            .map(|_| self.str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        Some((name, ino, Cached { message, warnings }))
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

/// Serialises the entries `(file name, inode, content)` as a cache file.
pub fn encode(entries: &[(&str, u64, &Stored)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + entries.len() * 512);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (name, ino, stored) in entries {
        let m = &stored.message;
        put_str(&mut out, name);
        out.extend_from_slice(&ino.to_le_bytes());
        put_str(&mut out, &m.id.to_string());
        put_str(&mut out, &m.from.to_string());
        out.extend_from_slice(&(m.to.len() as u32).to_le_bytes());
        for t in &m.to {
            put_str(&mut out, &t.to_string());
        }
        put_str(&mut out, &m.subject);
        put_str(&mut out, &m.body);
        put_str(&mut out, m.kind.as_str());
        put_str(&mut out, m.priority.as_str());
        out.extend_from_slice(&(m.date.as_millisecond() as u64).to_le_bytes());
        put_opt_str(&mut out, m.reply_to.map(|r| r.to_string()).as_deref());
        put_str(&mut out, &m.thread.to_string());
        out.extend_from_slice(&m.revision.to_le_bytes());
        match m.edited {
            None => out.push(0),
            Some(e) => {
                out.push(1);
                out.extend_from_slice(&(e.as_millisecond() as u64).to_le_bytes());
            }
        }
        put_opt_str(
            &mut out,
            m.channel.as_ref().map(ToString::to_string).as_deref(),
        );
        out.extend_from_slice(&(stored.warnings.len() as u32).to_le_bytes());
        for w in &stored.warnings {
            put_str(&mut out, w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mailroom_core::State;

    #[test]
    fn a_cache_reads_back_what_it_wrote_and_garbage_reads_as_empty() {
        let id = MessageId::generate();
        let stored = Stored {
            message: Message {
                id,
                from: Address::parse_canonical("alice@web").unwrap(),
                to: vec![
                    Address::human(),
                    Address::parse_canonical("bob@web").unwrap(),
                ],
                subject: "s \" ü".into(),
                body: "line\n---\nmore".into(),
                kind: Kind::HoldRequest,
                priority: Priority::High,
                date: Timestamp::from_millisecond(1_800_000_000_123).unwrap(),
                reply_to: Some(id),
                thread: id,
                revision: 3,
                edited: Some(Timestamp::from_millisecond(1_800_000_001_000).unwrap()),
                channel: ChannelRef::parse_canonical("run-1@web"),
            },
            state: State::Read,
            warnings: vec!["w".into()],
        };
        let bytes = encode(&[("x.md", 42, &stored)]);
        let mut cache = Cache::parse(&bytes);
        assert_eq!(cache.len(), 1);
        assert!(
            cache.take("y.md", 42).is_none(),
            "another name is another file"
        );
        let got = cache.take("x.md", 42).unwrap();
        assert_eq!(
            (got.message, got.warnings),
            (stored.message, stored.warnings)
        );
        for cut in 0..bytes.len() {
            assert_eq!(Cache::parse(&bytes[..cut]).len(), 0, "truncated at {cut}");
        }
    }
}
