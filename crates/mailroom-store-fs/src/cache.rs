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

use mailroom_core::message::ChannelRef;
use mailroom_core::{Address, Kind, Message, MessageId, Priority, Stored};

use crate::TMP;
use crate::bytes::Reader;
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
const MAGIC: &[u8; 8] = b"MRCACHE3";

/// A cached, decoded message file.
#[derive(Clone, Debug)]
pub struct Cached {
    pub message: Message,
    pub warnings: Vec<String>,
}

/// Where a record starts in the cache's bytes, and what a listing orders by: read without
/// decoding the rest of the record.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    pub at: usize,
    pub end: usize,
    pub ino: u64,
    pub id: MessageId,
    pub kind: Kind,
    pub priority: Priority,
}

/// The cache as read: its bytes and an index of its records, each decoded only on request.
#[derive(Debug, Default)]
pub struct Cache {
    pub bytes: Vec<u8>,
    records: Vec<Record>,
    /// The next record a listing is expected to ask for: the cache is written in listing
    /// order, and an unchanged directory lists in the same order, so a lookup usually costs
    /// one comparison.
    next: usize,
    /// Inode → record, built on the first lookup the order does not answer.
    by_ino: Option<HashMap<u64, usize>>,
}

impl Cache {
    /// Indexes a cache file; anything unexpected gives an empty cache.
    pub fn parse(bytes: Vec<u8>) -> Cache {
        match index(&bytes) {
            Some(records) => Cache {
                bytes,
                records,
                next: 0,
                by_ino: None,
            },
            None => Cache::default(),
        }
    }

    /// The record cached for this file, if it is the file that was cached (same name, same
    /// inode).
    pub fn find(&mut self, name: &str, ino: u64) -> Option<u32> {
        let is = |r: &Record| r.ino == ino && record_name(&self.bytes, r) == Some(name.as_bytes());
        if let Some(r) = self.records.get(self.next)
            && is(r)
        {
            self.next += 1;
            return u32::try_from(self.next - 1).ok();
        }
        let records = &self.records;
        let at = *self
            .by_ino
            .get_or_insert_with(|| {
                records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.ino, i))
                    .collect()
            })
            .get(&ino)?;
        is(&self.records[at]).then_some(u32::try_from(at).ok())?
    }

    /// Record `i`, as [`Cache::find`] named it.
    pub fn record(&self, i: u32) -> Option<Record> {
        self.records.get(i as usize).copied()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }
}

/// The file name of record `r`, as bytes (it is only compared with a listed name).
fn record_name<'a>(bytes: &'a [u8], r: &Record) -> Option<&'a [u8]> {
    Reader {
        buf: bytes.get(..r.end)?,
        pos: r.at,
    }
    .str_bytes()
}

/// The records of a cache file, each checked to lie within it.
fn index(bytes: &[u8]) -> Option<Vec<Record>> {
    let mut r = Reader { buf: bytes, pos: 0 };
    if r.take(MAGIC.len())? != &MAGIC[..] {
        return None;
    }
    let count = r.u32()?;
    // Each record takes well over 64 bytes: a count beyond that is damage, not a size.
    let mut records = Vec::with_capacity((count as usize).min(bytes.len() / 64));
    for _ in 0..count {
        let len = r.u32()? as usize;
        let at = r.pos;
        let end = at.checked_add(len)?;
        let mut rec = Reader {
            buf: bytes.get(..end)?,
            pos: at,
        };
        rec.str_bytes()?;
        let ino = rec.u64()?;
        let id = MessageId::from_bits(rec.u128()?);
        let kind = rec.str()?.parse::<Kind>().ok()?;
        let priority = rec.str()?.parse::<Priority>().ok()?;
        records.push(Record {
            at,
            end,
            ino,
            id,
            kind,
            priority,
        });
        r.pos = end;
    }
    (r.pos == bytes.len()).then_some(records)
}

/// Decodes record `r` of `bytes`; `None` when it is damaged.
pub fn decode(bytes: &[u8], r: &Record) -> Option<Cached> {
    let mut rd = Reader {
        buf: bytes.get(..r.end)?,
        pos: r.at,
    };
    // Name, inode, id, kind and priority: read by `index` already.
    rd.str_bytes()?;
    rd.u64()?;
    rd.u128()?;
    rd.str_bytes()?;
    rd.str_bytes()?;
    let message = Message {
        id: r.id,
        from: Address::parse_canonical(rd.str()?).ok()?,
        to: (0..rd.u32()?)
            .map(|_| rd.str().and_then(|t| Address::parse_canonical(t).ok()))
            .collect::<Option<Vec<_>>>()?,
        subject: rd.str()?.to_owned(),
        body: rd.str()?.to_owned(),
        kind: r.kind,
        priority: r.priority,
        date: rd.time()?,
        reply_to: match rd.take(1)? {
            [0] => None,
            _ => Some(MessageId::from_bits(rd.u128()?)),
        },
        thread: MessageId::from_bits(rd.u128()?),
        revision: rd.u32()?,
        edited: match rd.take(1)? {
            [0] => None,
            _ => Some(rd.time()?),
        },
        channel: match rd.opt_str()? {
            Some(c) => Some(ChannelRef::parse_canonical(c)?),
            None => None,
        },
    };
    let warnings = (0..rd.u32()?)
        .map(|_| rd.str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    (rd.pos == r.end).then_some(Cached { message, warnings })
}

/// The cache of mailbox `bx`. One that cannot be read (missing, damaged, too large, not a
/// regular file) is an empty one: it only costs speed, and the next `save` replaces it.
pub fn load(bx: &Dir) -> Cache {
    match bx.read(CACHE_FILE, LIMIT) {
        Ok(Some(bytes)) => Cache::parse(bytes),
        _ => Cache::default(),
    }
}

/// Replaces the cache of mailbox `bx` with `bytes` (see [`Writer`]), best effort: a cache that
/// cannot be written only costs speed. One too large to be read back is not written, and the
/// stale one goes.
pub fn save(bx: &Dir, bytes: &[u8]) {
    if bytes.len() > LIMIT.bytes {
        let _ = bx.remove(CACHE_FILE);
    } else if let Ok(tmp) = bx.open_or_create(TMP)
        && let Ok(t) = tmp.write_temp(bytes, Durability::Lazy)
        && tmp.rename(&t, bx, CACHE_FILE).is_err()
    {
        let _ = tmp.remove(&t);
    }
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

/// A cache file being written: records appended one at a time, the count filled in at the end.
pub struct Writer {
    out: Vec<u8>,
    count: u32,
}

impl Writer {
    pub fn new() -> Writer {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&0u32.to_le_bytes());
        Writer { out, count: 0 }
    }

    /// Appends a record copied from another cache's bytes; returns it as it is here.
    pub fn copy(&mut self, bytes: &[u8], r: &Record) -> Option<Record> {
        let body = bytes.get(r.at..r.end)?;
        self.out
            .extend_from_slice(&u32::try_from(body.len()).ok()?.to_le_bytes());
        let at = self.out.len();
        self.out.extend_from_slice(body);
        self.count += 1;
        Some(Record {
            at,
            end: self.out.len(),
            ..*r
        })
    }

    /// Appends the record of file `name` (inode `ino`) holding `stored`.
    pub fn push(&mut self, name: &str, ino: u64, stored: &Stored) -> Record {
        let m = &stored.message;
        let len_at = self.out.len();
        self.out.extend_from_slice(&0u32.to_le_bytes());
        let at = self.out.len();
        let out = &mut self.out;
        put_str(out, name);
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&m.id.to_bits().to_le_bytes());
        put_str(out, m.kind.as_str());
        put_str(out, m.priority.as_str());
        put_str(out, &m.from.to_string());
        out.extend_from_slice(&(m.to.len() as u32).to_le_bytes());
        for t in &m.to {
            put_str(out, &t.to_string());
        }
        put_str(out, &m.subject);
        put_str(out, &m.body);
        out.extend_from_slice(&(m.date.as_millisecond() as u64).to_le_bytes());
        match m.reply_to {
            None => out.push(0),
            Some(r) => {
                out.push(1);
                out.extend_from_slice(&r.to_bits().to_le_bytes());
            }
        }
        out.extend_from_slice(&m.thread.to_bits().to_le_bytes());
        out.extend_from_slice(&m.revision.to_le_bytes());
        match m.edited {
            None => out.push(0),
            Some(e) => {
                out.push(1);
                out.extend_from_slice(&(e.as_millisecond() as u64).to_le_bytes());
            }
        }
        put_opt_str(out, m.channel.as_ref().map(ToString::to_string).as_deref());
        out.extend_from_slice(&(stored.warnings.len() as u32).to_le_bytes());
        for w in &stored.warnings {
            put_str(out, w);
        }
        let end = self.out.len();
        let len = (end - at) as u32;
        self.out[len_at..at].copy_from_slice(&len.to_le_bytes());
        self.count += 1;
        Record {
            at,
            end,
            ino,
            id: m.id,
            kind: m.kind,
            priority: m.priority,
        }
    }

    /// The finished cache file.
    pub fn finish(mut self) -> Vec<u8> {
        self.out[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&self.count.to_le_bytes());
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
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
        let mut w = Writer::new();
        w.push("x.md", 42, &stored);
        let bytes = w.finish();
        let mut cache = Cache::parse(bytes.clone());
        assert_eq!(cache.len(), 1);
        assert!(
            cache.find("y.md", 42).is_none(),
            "another name is another file"
        );
        let r = cache.find("x.md", 42).unwrap();
        let got = decode(&cache.bytes, &cache.record(r).unwrap()).unwrap();
        assert_eq!(
            (got.message, got.warnings),
            (stored.message, stored.warnings)
        );
        for cut in 0..bytes.len() {
            assert_eq!(
                Cache::parse(bytes[..cut].to_vec()).len(),
                0,
                "truncated at {cut}"
            );
        }
    }
}
