//! The search index: a file beside a group of message directories (a mailbox's archive,
//! `done/` and `cancelled/`; its outbox; a channel's entries) that narrows a search to the files that can
//! match, so a search reads a few files instead of the whole archive.
//!
//! Invariants:
//! - The Markdown files stay the truth. The index only *narrows*: every candidate is read
//!   and confirmed by the core's rule ([`matches_query`]), so the answer is what reading every
//!   file gives, in the same order, with the same fields and the same damaged entries.
//! - The narrowing is exact as a filter: a message matches only if its lower-cased subject or
//!   body contains the query, so every three-character window of the query is a window of
//!   that text. The index lists, for each hashed window ("trigram"), the messages that have
//!   it; a candidate must be in the list of every window of the query. Hash collisions only
//!   add candidates. A query shorter than three characters has no window: every file is a
//!   candidate.
//! - The index is trusted only while each directory it covers is the one it read: same inode
//!   and same status-change time (every file added, removed or renamed in a directory sets
//!   it, and nobody can set it back). A directory changed within [`RACY_NS`] of being read
//!   may change again within the same clock tick without its time moving (git's "racy"
//!   index entries): for such a directory the time proves nothing, and each search lists it
//!   and compares every name and inode number with the index's before trusting it.
//! - Missing, stale, truncated, garbage or older-format indexes are rebuilt from the files,
//!   never trusted: the header and every record and list read carry a checksum. The file is
//!   replaced by one rename, so a crash (or `kill -9`) while it is written leaves the old
//!   index or the new one, and a temporary file `doctor --fix` removes.
//! - Writers never touch it: sending, archiving and editing stay as fast as they were, and the
//!   first search after a change pays for the rebuild.
//! - Like the pending cache, a message file rewritten *in place* by hand (same inode, its
//!   directory untouched) is not noticed until `doctor --fix` drops the index: docs/FORMAT.md
//!   says to write a new file and move it in.

use std::fs::File;
use std::os::unix::fs::FileExt;

use mailroom_core::store::matches_query;
use mailroom_core::{Address, Listing, MessageId, State};

use crate::TMP;
use crate::bytes::Reader;
use crate::dir::{Dir, Durability};
use crate::error::FsError;
use crate::listing::{latest_mask, read_one};
use crate::{id_of, is_message_name};

/// The index file of a mailbox's archived states, `done/` and `cancelled/` (in the mailbox
/// directory; pending mail is read directly).
pub const MAILBOX_INDEX: &str = "search.index";
/// The index file of a mailbox's outbox (in the mailbox directory).
pub const OUTBOX_INDEX: &str = "outbox.index";
/// The index file of a channel's entries (in the channel directory).
pub const CHANNEL_INDEX: &str = "search.index";

/// The first bytes of an index file; a new layout gets a new magic, so an index written by
/// another version is rebuilt, not misread.
const MAGIC: &[u8; 8] = b"MRINDEX1";

/// A directory whose status changed less than this long before it was read is not trusted
/// by its time alone (one second: far more than a clock tick of any filesystem's timestamps).
const RACY_NS: i128 = 1_000_000_000;

/// The file is read by every search: it was unreadable when indexed (so it is reported as
/// damaged exactly as a full read reports it), or its id is not its name.
const ALWAYS: u8 = 1;
/// Another copy of the same id in a later state hides this one (see `keep_latest`).
const HIDDEN: u8 = 2;

/// The bytes of one entry record: directory, flags, name length, name offset, inode number,
/// checksum.
const RECORD: u64 = 20;
/// The bytes of one bucket record: postings offset and checksum.
const BUCKET: u64 = 8;

/// A list longer than this many bytes per candidate left is not read: reading a candidate's
/// file costs more than decoding that much of a list.
const SKIP_BYTES: u64 = 256;

/// One directory an index covers: its name in the parent and the state its files are in
/// (`None`: an outbox).
pub type Source<'a> = (&'a str, Option<State>);

/// What to search: the directories `sources` of `parent`, whose index is the file `file` in
/// `parent`; `owner` is the mailbox a file without `to` belongs to.
pub struct Indexed<'a> {
    pub parent: &'a Dir,
    pub file: &'a str,
    pub sources: &'a [Source<'a>],
    pub owner: &'a Address,
}

/// The messages of the sources (one copy per id, as `keep_latest` keeps them) whose subject or
/// body contains `query` (lower case), in directory then name order, and every damaged file.
/// Answered from the index when it is current; otherwise every file is read, which is the
/// answer, and the index is rebuilt from what was read (best effort: an index that cannot be
/// written only costs speed).
pub fn search(ix: &Indexed<'_>, query: &str) -> Result<Searched, FsError> {
    if let Some(found) = indexed(ix, query)? {
        return Ok(found);
    }
    let mut all = rebuild(ix)?;
    all.listing
        .messages
        .retain(|s| matches_query(&s.message, query));
    Ok(all)
}

/// What [`search`] found.
#[derive(Debug, Default)]
pub struct Searched {
    pub listing: Listing,
    /// The ids of the messages (matching or not) in files not named `<id>.md`, whose id
    /// comes from their header: every search reads those files, so a caller can tell which
    /// ids the sources hold without a lookup by name.
    pub misnamed: Vec<MessageId>,
}

/// FNV-1a, 32 bits: the checksum of records and lists, and the hash of a trigram.
fn fnv32(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for part in parts {
        for b in *part {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// FNV-1a, 64 bits: the checksum of the header.
fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The buckets (of `buckets`, a power of two) of every three-character window of `text`,
/// added to `out`. `text` is already lower case.
fn trigrams(text: &str, buckets: u32, out: &mut Vec<u32>) {
    let mut window = [0u32; 3];
    for (i, c) in text.chars().enumerate() {
        window = [window[1], window[2], c as u32];
        if i >= 2 {
            let mut bytes = [0u8; 12];
            for (k, w) in window.iter().enumerate() {
                bytes[k * 4..k * 4 + 4].copy_from_slice(&w.to_le_bytes());
            }
            out.push(fnv32(&[&bytes]) & (buckets - 1));
        }
    }
}

/// The number of buckets for a corpus of `chars` characters: about one for every 16
/// characters, a power of two between 256 and 2^18.
fn bucket_count(chars: usize) -> u32 {
    let want = (chars / 16).clamp(256, 1 << 18);
    u32::try_from(want.next_power_of_two()).unwrap_or(1 << 18)
}

/// What the index recorded about one directory it covers.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    /// Inode and status-change time; `None`: the directory did not exist.
    identity: Option<(u64, i128)>,
    /// Whether the time alone proves the directory unchanged (it was not racy).
    trusted: bool,
    /// The entries of its files (they are numbered directory by directory).
    files: std::ops::Range<u32>,
}

/// One indexed file.
struct Entry {
    source: u8,
    flags: u8,
    name: String,
    ino: u64,
}

/// One file read while rebuilding: its source, name and inode, and its index in the
/// listing's messages (`None`: it was damaged).
struct Found {
    source: u8,
    name: String,
    ino: u64,
    message: Option<usize>,
}

/// The header of an index file, as read.
struct Header {
    seen: Vec<Seen>,
    entries: u32,
    buckets: u32,
    records_at: u64,
    names_at: u64,
    names_len: u64,
    table_at: u64,
    postings_at: u64,
    postings_len: u64,
    always: Vec<u32>,
}

/// The answer from the index, or `None` when there is no current, readable index.
fn indexed(ix: &Indexed<'_>, query: &str) -> Result<Option<Searched>, FsError> {
    let Some(file) = ix.parent.open_regular(ix.file)? else {
        return Ok(None);
    };
    let Some(header) = read_header(&file) else {
        return Ok(None);
    };
    if header.seen.len() != ix.sources.len() {
        return Ok(None);
    }
    let mut racy = Vec::new();
    for (i, (seen, (name, _))) in header.seen.iter().zip(ix.sources).enumerate() {
        if seen.identity != ix.parent.child_identity(name)? {
            return Ok(None);
        }
        if !seen.trusted && seen.identity.is_some() {
            racy.push(i);
        }
    }
    if !racy.is_empty() && !same_files(ix, &file, &header, &racy)? {
        return Ok(None);
    }
    // Every read of the index comes before the first message file is read, so a damaged
    // index is noticed while a full read can still answer.
    let Some(candidates) = candidates(&file, &header, query) else {
        return Ok(None);
    };
    let mut entries = Vec::with_capacity(candidates.len());
    for at in candidates {
        match read_entry(&file, &header, at) {
            Some(e) if e.flags & HIDDEN != 0 => {}
            Some(e) if usize::from(e.source) < ix.sources.len() => entries.push(e),
            _ => return Ok(None),
        }
    }
    let mut out = Listing::default();
    let mut misnamed = Vec::new();
    let mut dirs: Vec<Option<Option<Dir>>> = ix.sources.iter().map(|_| None).collect();
    for e in entries {
        let (name, state) = ix.sources[usize::from(e.source)];
        let slot = &mut dirs[usize::from(e.source)];
        if slot.is_none() {
            *slot = Some(ix.parent.open(name)?);
        }
        if let Some(Some(dir)) = slot {
            let before = out.messages.len();
            read_one(ix.owner, dir, &e.name, state, &mut out)?;
            if id_of(&e.name).is_none()
                && let Some(s) = out.messages.get(before)
            {
                misnamed.push(s.message.id);
            }
        }
    }
    out.messages.retain(|s| matches_query(&s.message, query));
    Ok(Some(Searched {
        listing: out,
        misnamed,
    }))
}

/// The entries that can match `query`, ascending (those read every time included); `None`
/// when the index is damaged.
fn candidates(file: &File, h: &Header, query: &str) -> Option<Vec<u32>> {
    let mut grams = Vec::new();
    trigrams(query, h.buckets, &mut grams);
    grams.sort_unstable();
    grams.dedup();
    let mut found: Option<Vec<u32>> = None;
    if grams.is_empty() {
        found = Some((0..h.entries).collect());
    }
    let mut lists = Vec::with_capacity(grams.len());
    for g in grams {
        lists.push(bucket(file, h, g)?);
    }
    // Shortest lists first. Once few candidates are left, a long list costs more to decode
    // than it could save: every candidate is confirmed by reading its file anyway, so the
    // rest are skipped (a superset of the matches is all this must give).
    lists.sort_by_key(|b| b.len);
    for b in lists {
        if let Some(f) = &found
            && (f.is_empty() || (f.len() as u64).saturating_mul(SKIP_BYTES) < b.len)
        {
            break;
        }
        let list = postings(file, h, &b)?;
        found = Some(match found {
            None => list,
            Some(prev) => intersect(&prev, &list),
        });
    }
    let mut all = found.unwrap_or_default();
    all.extend_from_slice(&h.always);
    all.sort_unstable();
    all.dedup();
    Some(all)
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Reads exactly `len` bytes at `at`; `None` past the end or on any error (a damaged index).
fn read_at(file: &File, at: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, at).ok()?;
    Some(buf)
}

/// Where a bucket's list is: its bucket, offset and length in the postings, and checksum.
struct Bucket {
    g: u32,
    start: u64,
    len: u64,
    sum: u32,
}

/// The record of bucket `g`.
fn bucket(file: &File, h: &Header, g: u32) -> Option<Bucket> {
    let at = h.table_at.checked_add(u64::from(g).checked_mul(BUCKET)?)?;
    let rec = read_at(file, at, BUCKET + 4)?;
    let start = u64::from(u32::from_le_bytes(rec[0..4].try_into().ok()?));
    let sum = u32::from_le_bytes(rec[4..8].try_into().ok()?);
    let end = u64::from(u32::from_le_bytes(rec[8..12].try_into().ok()?));
    if start > end || end > h.postings_len {
        return None;
    }
    Some(Bucket {
        g,
        start,
        len: end - start,
        sum,
    })
}

/// The entries of a bucket's list, ascending.
fn postings(file: &File, h: &Header, b: &Bucket) -> Option<Vec<u32>> {
    let bytes = read_at(file, h.postings_at.checked_add(b.start)?, b.len)?;
    if fnv32(&[&b.g.to_le_bytes(), &bytes]) != b.sum {
        return None;
    }
    let mut out = Vec::new();
    let mut r = Reader {
        buf: &bytes,
        pos: 0,
    };
    let mut prev: Option<u32> = None;
    while r.pos < bytes.len() {
        let v = r.varint()?;
        let e = match prev {
            None => v,
            Some(p) if v > 0 => p.checked_add(v)?,
            Some(_) => return None,
        };
        if e >= h.entries {
            return None;
        }
        out.push(e);
        prev = Some(e);
    }
    Some(out)
}

fn read_entry(file: &File, h: &Header, at: u32) -> Option<Entry> {
    let rec = read_at(
        file,
        h.records_at
            .checked_add(u64::from(at).checked_mul(RECORD)?)?,
        RECORD,
    )?;
    let (source, flags, off, len, ino, sum) = parse_record(&rec)?;
    if off.checked_add(len)? > h.names_len {
        return None;
    }
    let name = read_at(file, h.names_at.checked_add(off)?, len)?;
    entry(at, source, flags, ino, sum, &name)
}

/// The fields of an entry record: source, flags, name offset and length, inode, checksum.
fn parse_record(rec: &[u8]) -> Option<(u8, u8, u64, u64, u64, u32)> {
    Some((
        *rec.first()?,
        *rec.get(1)?,
        u64::from(u32::from_le_bytes(rec.get(4..8)?.try_into().ok()?)),
        u64::from(u16::from_le_bytes(rec.get(2..4)?.try_into().ok()?)),
        u64::from_le_bytes(rec.get(8..16)?.try_into().ok()?),
        u32::from_le_bytes(rec.get(16..20)?.try_into().ok()?),
    ))
}

/// The checksum of entry `at`'s record.
fn record_sum(at: u32, source: u8, flags: u8, ino: u64, name: &[u8]) -> u32 {
    fnv32(&[
        &[source, flags],
        &at.to_le_bytes(),
        &ino.to_le_bytes(),
        name,
    ])
}

fn entry(at: u32, source: u8, flags: u8, ino: u64, sum: u32, name: &[u8]) -> Option<Entry> {
    if record_sum(at, source, flags, ino, name) != sum {
        return None;
    }
    Some(Entry {
        source,
        flags,
        name: String::from_utf8(name.to_vec()).ok()?,
        ino,
    })
}

/// Whether each of the `racy` sources holds exactly the files (names and inode numbers) the
/// index recorded for it: the check for a directory whose time alone proves nothing. It
/// reads those directories' records and lists them, but reads no message file.
fn same_files(ix: &Indexed<'_>, file: &File, h: &Header, racy: &[usize]) -> Result<bool, FsError> {
    for &i in racy {
        let Some(recorded) = recorded_files(file, h, i) else {
            return Ok(false);
        };
        let Some(dir) = ix.parent.open(ix.sources[i].0)? else {
            return Ok(false);
        };
        let mut now = dir.list_with_ino()?;
        now.retain(|(n, _)| is_message_name(n));
        now.sort();
        if now != recorded {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The names and inode numbers the index recorded for source `i`, in name order; `None` when
/// the index is damaged.
fn recorded_files(file: &File, h: &Header, i: usize) -> Option<Vec<(String, u64)>> {
    let range = h.seen.get(i)?.files.clone();
    if range.is_empty() {
        return Some(Vec::new());
    }
    let records = read_at(
        file,
        h.records_at
            .checked_add(u64::from(range.start).checked_mul(RECORD)?)?,
        u64::from(range.end - range.start).checked_mul(RECORD)?,
    )?;
    let fields: Vec<_> = records
        .chunks_exact(RECORD as usize)
        .map(parse_record)
        .collect::<Option<_>>()?;
    // The names of consecutive entries are consecutive: read them in one piece.
    let from = fields.first()?.2;
    let to = fields.last().map(|f| f.2.checked_add(f.3))??;
    if from > to || to > h.names_len {
        return None;
    }
    let names = read_at(file, h.names_at.checked_add(from)?, to - from)?;
    let mut out = Vec::with_capacity(fields.len());
    for (at, (source, flags, off, len, ino, sum)) in range.zip(fields) {
        let a = usize::try_from(off.checked_sub(from)?).ok()?;
        let name = names.get(a..a.checked_add(usize::try_from(len).ok()?)?)?;
        let e = entry(at, source, flags, ino, sum, name)?;
        if usize::from(e.source) != i {
            return None;
        }
        out.push((e.name, e.ino));
    }
    Some(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The header, checked; `None` when the file is not a whole index of this version.
fn read_header(file: &File) -> Option<Header> {
    let len = file.metadata().ok()?.len();
    let first = read_at(file, 0, len.min(4096))?;
    let mut r = Reader {
        buf: &first,
        pos: 0,
    };
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let size = u64::from(r.u32()?);
    let total = 12u64.checked_add(size)?.checked_add(8)?;
    if total > len {
        return None;
    }
    let whole;
    let bytes = if total <= first.len() as u64 {
        &first[..usize::try_from(total).ok()?]
    } else {
        whole = read_at(file, 0, total)?;
        &whole[..]
    };
    let body = bytes.get(12..bytes.len() - 8)?;
    let sum = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().ok()?);
    if fnv64(body) != sum {
        return None;
    }
    let mut r = Reader { buf: body, pos: 0 };
    let sources = r.u32()?;
    let mut seen = Vec::new();
    for _ in 0..sources.min(16) {
        let identity = match r.u8()? {
            0 => None,
            _ => Some((r.u64()?, r.i128()?)),
        };
        seen.push(Seen {
            identity,
            trusted: r.u8()? == 1,
            files: r.u32()?..r.u32()?,
        });
    }
    if seen.len() != sources as usize {
        return None;
    }
    let h = Header {
        seen,
        entries: r.u32()?,
        buckets: r.u32()?,
        records_at: r.u64()?,
        names_at: r.u64()?,
        names_len: r.u64()?,
        table_at: r.u64()?,
        postings_at: r.u64()?,
        postings_len: r.u64()?,
        always: {
            let n = r.u32()?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.push(r.u32()?);
            }
            v
        },
    };
    let ends = [
        h.records_at
            .checked_add(u64::from(h.entries).checked_mul(RECORD)?)?,
        h.names_at.checked_add(h.names_len)?,
        h.table_at
            .checked_add((u64::from(h.buckets) + 1).checked_mul(BUCKET)?)?,
        h.postings_at.checked_add(h.postings_len)?,
    ];
    if !h.buckets.is_power_of_two()
        || ends.iter().any(|e| *e > len)
        || h.seen
            .iter()
            .any(|s| s.files.start > s.files.end || s.files.end > h.entries)
        || h.always.iter().any(|a| *a >= h.entries)
    {
        return None;
    }
    Some(h)
}

/// Reads every file of the sources (the full read a search without an index does) and
/// writes the index of what it read. Returns every message, one copy per id, and every
/// damaged file.
fn rebuild(ix: &Indexed<'_>) -> Result<Searched, FsError> {
    let mut out = Listing::default();
    let mut seen = Vec::with_capacity(ix.sources.len());
    let mut files: Vec<Found> = Vec::new();
    for (i, (name, state)) in ix.sources.iter().enumerate() {
        // The directory's identity is taken before it is listed: a change made while it is
        // read moves its time past the one recorded, so the next search rebuilds.
        let identity = ix.parent.child_identity(name)?;
        let now = jiff::Timestamp::now().as_nanosecond();
        let trusted = identity.is_none_or(|(_, changed)| changed + RACY_NS < now);
        let first = u32::try_from(files.len()).unwrap_or(u32::MAX);
        seen.push(Seen {
            identity,
            trusted,
            files: first..first,
        });
        let Some(dir) = ix.parent.open(name)? else {
            continue;
        };
        let mut names = dir.list_with_ino()?;
        names.retain(|(n, _)| is_message_name(n));
        names.sort();
        let source = u8::try_from(i).unwrap_or(u8::MAX);
        for (name, ino) in names {
            let (m, d) = (out.messages.len(), out.damaged.len());
            read_one(ix.owner, &dir, &name, *state, &mut out)?;
            let message = if out.messages.len() > m {
                Some(m)
            } else if out.damaged.len() > d {
                None
            } else {
                // Moved away since it was listed: the directory's time moved past the one
                // recorded, so this index is rebuilt by the next search anyway.
                continue;
            };
            files.push(Found {
                source,
                name,
                ino,
                message,
            });
        }
        if let Some(s) = seen.last_mut() {
            s.files.end = u32::try_from(files.len()).unwrap_or(u32::MAX);
        }
    }
    let keep = latest_mask(&out.messages);
    write(ix, &seen, &files, &out, &keep);
    let misnamed = files
        .iter()
        .filter(|f| id_of(&f.name).is_none())
        .filter_map(|f| f.message.filter(|m| keep.get(*m).copied().unwrap_or(true)))
        .filter_map(|m| out.messages.get(m).map(|s| s.message.id))
        .collect();
    let mut keep = keep.into_iter();
    out.messages.retain(|_| keep.next().unwrap_or(true));
    Ok(Searched {
        listing: out,
        misnamed,
    })
}

/// Writes the index, best effort.
fn write(ix: &Indexed<'_>, seen: &[Seen], files: &[Found], all: &Listing, keep: &[bool]) {
    let Some(bytes) = encode(seen, files, all, keep) else {
        return;
    };
    if let Ok(tmp) = ix.parent.open_or_create(TMP)
        && let Ok(t) = tmp.write_temp(&bytes, Durability::Durable)
        && tmp.rename(&t, ix.parent, ix.file).is_err()
    {
        let _ = tmp.remove(&t);
    }
}

/// The bytes of an index; `None` when it cannot be represented (over 4 GiB of postings,
/// over 2^32 files, a name over 64 KiB): such a group is searched by reading every file.
fn encode(seen: &[Seen], files: &[Found], all: &Listing, keep: &[bool]) -> Option<Vec<u8>> {
    let entries = u32::try_from(files.len()).ok()?;
    let chars: usize = all
        .messages
        .iter()
        .map(|s| s.message.subject.len() + s.message.body.len())
        .sum();
    let buckets = bucket_count(chars);
    let mut lists: Vec<Vec<u8>> = vec![Vec::new(); buckets as usize];
    let mut last: Vec<Option<u32>> = vec![None; buckets as usize];
    let mut records = Vec::with_capacity(files.len() * RECORD as usize);
    let mut names = Vec::new();
    let mut always = Vec::new();
    let mut grams = Vec::new();
    for (at, f) in (0u32..).zip(files) {
        let mut flags = 0;
        match f.message {
            None => {
                flags |= ALWAYS;
                always.push(at);
            }
            Some(m) if !keep.get(m).copied().unwrap_or(true) => flags |= HIDDEN,
            Some(m) => {
                // A file whose id is not its name is read by every search (see `Searched`).
                if id_of(&f.name).is_none() {
                    flags |= ALWAYS;
                    always.push(at);
                }
                let msg = &all.messages.get(m)?.message;
                grams.clear();
                trigrams(&msg.subject.to_lowercase(), buckets, &mut grams);
                trigrams(&msg.body.to_lowercase(), buckets, &mut grams);
                grams.sort_unstable();
                grams.dedup();
                for g in &grams {
                    let list = &mut lists[*g as usize];
                    let prev = &mut last[*g as usize];
                    put_varint(list, at - prev.unwrap_or(0));
                    *prev = Some(at);
                }
            }
        }
        let len = u16::try_from(f.name.len()).ok()?;
        let off = u32::try_from(names.len()).ok()?;
        records.push(f.source);
        records.push(flags);
        records.extend_from_slice(&len.to_le_bytes());
        records.extend_from_slice(&off.to_le_bytes());
        records.extend_from_slice(&f.ino.to_le_bytes());
        let sum = record_sum(at, f.source, flags, f.ino, f.name.as_bytes());
        records.extend_from_slice(&sum.to_le_bytes());
        names.extend_from_slice(f.name.as_bytes());
    }
    let mut table = Vec::with_capacity((buckets as usize + 1) * BUCKET as usize);
    let mut postings = Vec::new();
    for (g, list) in lists.iter().enumerate() {
        table.extend_from_slice(&u32::try_from(postings.len()).ok()?.to_le_bytes());
        let g = u32::try_from(g).ok()?;
        table.extend_from_slice(&fnv32(&[&g.to_le_bytes(), list]).to_le_bytes());
        postings.extend_from_slice(list);
    }
    table.extend_from_slice(&u32::try_from(postings.len()).ok()?.to_le_bytes());
    table.extend_from_slice(&0u32.to_le_bytes());

    let mut head = Vec::new();
    head.extend_from_slice(&u32::try_from(seen.len()).ok()?.to_le_bytes());
    for s in seen {
        match s.identity {
            None => head.push(0),
            Some((ino, changed)) => {
                head.push(1);
                head.extend_from_slice(&ino.to_le_bytes());
                head.extend_from_slice(&changed.to_le_bytes());
            }
        }
        head.push(u8::from(s.trusted));
        head.extend_from_slice(&s.files.start.to_le_bytes());
        head.extend_from_slice(&s.files.end.to_le_bytes());
    }
    head.extend_from_slice(&entries.to_le_bytes());
    head.extend_from_slice(&buckets.to_le_bytes());
    // Offsets: the sections follow the header in the order records, names, table, postings.
    let offsets_at = head.len();
    head.extend_from_slice(&[0u8; 6 * 8]);
    head.extend_from_slice(&u32::try_from(always.len()).ok()?.to_le_bytes());
    for a in &always {
        head.extend_from_slice(&a.to_le_bytes());
    }
    let start = 12 + head.len() as u64 + 8;
    let records_at = start;
    let names_at = records_at + records.len() as u64;
    let table_at = names_at + names.len() as u64;
    let postings_at = table_at + table.len() as u64;
    for (k, v) in [
        records_at,
        names_at,
        names.len() as u64,
        table_at,
        postings_at,
        postings.len() as u64,
    ]
    .iter()
    .enumerate()
    {
        head[offsets_at + k * 8..offsets_at + k * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    let mut out = Vec::with_capacity(usize::try_from(postings_at).ok()? + postings.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&u32::try_from(head.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(&fnv64(&head).to_le_bytes());
    out.extend_from_slice(&records);
    out.extend_from_slice(&names);
    out.extend_from_slice(&table);
    out.extend_from_slice(&postings);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::read_dir;
    use mailroom_core::{Kind, Message, Priority};

    fn message(id: MessageId, body: &str) -> Message {
        let owner = Address::parse_canonical("bob@web").unwrap();
        Message {
            id,
            from: Address::parse_canonical("alice@web").unwrap(),
            to: vec![owner],
            subject: format!("subject {body}"),
            body: body.to_owned(),
            kind: Kind::Info,
            priority: Priority::Medium,
            date: jiff::Timestamp::from_second(1_800_000_000).unwrap(),
            reply_to: None,
            thread: id,
            revision: 0,
            edited: None,
            channel: None,
        }
    }

    /// Every cut of an index, and every byte of it flipped, is either refused (and the files
    /// read) or gives the same answer: never a wrong one.
    #[test]
    fn a_cut_or_flipped_index_never_changes_an_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = Dir::open_root(tmp.path()).unwrap();
        let done = parent.open_or_create("done").unwrap();
        let scratch = parent.open_or_create(TMP).unwrap();
        let owner = Address::parse_canonical("bob@web").unwrap();
        for i in 0..12 {
            let id = MessageId::generate();
            let text = crate::codec::message_to_text(&message(id, &format!("Body {i} ünïcode")));
            let t = scratch
                .write_temp(text.as_bytes(), Durability::Lazy)
                .unwrap();
            scratch.rename(&t, &done, &format!("{id}.md")).unwrap();
        }
        let t = scratch.write_temp(b"damaged", Durability::Lazy).unwrap();
        scratch.rename(&t, &done, "zz.md").unwrap();
        let sources = [("done", Some(State::Done))];
        let ix = Indexed {
            parent: &parent,
            file: "search.index",
            sources: &sources,
            owner: &owner,
        };
        let full = |q: &str| {
            let mut all = Listing::default();
            read_dir(&owner, &done, Some(State::Done), |_| true, &mut all).unwrap();
            all.messages.retain(|s| matches_query(&s.message, q));
            all
        };
        let queries = ["body 1", "ünï", "ody 3", "zzz", "y 11 ü", "b"];
        for q in queries {
            assert_eq!(search(&ix, q).unwrap().listing, full(q), "{q}");
        }
        let good = std::fs::read(tmp.path().join("search.index")).unwrap();
        // Each damaged index is rebuilt by the search that finds it (one fsync each), so the
        // cuts and flips are sampled, the header's bytes all of them.
        let mut damaged: Vec<Vec<u8>> = (0..good.len())
            .filter(|at| *at < 256 || at % 5 == 0)
            .map(|cut| good[..cut].to_vec())
            .collect();
        damaged.extend(
            (0..good.len())
                .filter(|at| *at < 256 || at % 7 == 0)
                .map(|at| {
                    let mut b = good.clone();
                    b[at] ^= 0x5a;
                    b
                }),
        );
        for (k, bytes) in damaged.iter().enumerate() {
            std::fs::write(tmp.path().join("search.index"), bytes).unwrap();
            let q = queries[k % queries.len()];
            assert_eq!(search(&ix, q).unwrap().listing, full(q), "{q}");
        }
    }
}
