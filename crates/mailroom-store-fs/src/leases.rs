//! The `Reservations` role: one file per lease, `leases/<project>/<id>.lease`, each published
//! complete (written under `tmp/`, then linked in without replacing). A change holds the
//! project directory's `flock` from its read to its last write, so two reservations never
//! decide from the same leases; where the file system cannot lock a directory, the link that
//! never replaces still lets only one writer publish a given lease.
//!
//! Beside the leases, `leases.cache` holds them all decoded, so that the check before every
//! edit reads one file, not one per lease. The cache is kept true by the lock: a change removes
//! it before touching a lease file and writes it anew after its last one, and a reader that
//! finds none reads the lease files and writes it while holding the lock. So a cache present is
//! the leases as they are; a change stopped midway (a crash) leaves none, and the next reader
//! rebuilds it. Where the file system cannot lock a directory no cache is written, and every
//! read lists the files. The cache is never fsynced: a lost one is rebuilt.

use jiff::Timestamp;
use mailroom_core::lease::{Lease, LeaseChange, Reservations};
use mailroom_core::{Address, MessageId, Name, Result};

use crate::bytes::Reader;
use crate::cache::{put_opt_str, put_str};
use crate::dir::{Dir, Durability, Limit};
use crate::error::FsError;
use crate::{FsStore, TMP};

pub(crate) const LEASES: &str = "leases";
pub(crate) const LEASE_SUFFIX: &str = ".lease";

/// A lease file: a few short lines.
const LEASE_FILE: Limit = Limit {
    bytes: 16 * 1024,
    what: "a lease file",
};

impl FsStore {
    fn open_leases(&self, project: &Name) -> Result<Option<Dir>, FsError> {
        let Some(root) = self.root()? else {
            return Ok(None);
        };
        match root.open(LEASES)? {
            Some(d) => d.open(&project.as_str().to_ascii_lowercase()),
            None => Ok(None),
        }
    }

    fn create_leases(&self, project: &Name) -> Result<(Dir, Dir), FsError> {
        let root = self.create_root()?;
        let tmp = root.open_or_create(TMP)?;
        let dir = root
            .open_or_create(LEASES)?
            .open_or_create(&project.as_str().to_ascii_lowercase())?;
        Ok((tmp, dir))
    }
}

/// The project's leases, read from their files.
fn read_files(dir: &Dir) -> Result<Vec<Lease>, FsError> {
    let mut out = Vec::new();
    for name in dir.list()? {
        let Some(stem) = name.strip_suffix(LEASE_SUFFIX) else {
            continue;
        };
        // Removed since the listing: gone, not damaged.
        let Some(bytes) = dir.read(&name, LEASE_FILE)? else {
            continue;
        };
        // A file that does not read is skipped: a lease is advisory, and `doctor` names it.
        if let Some(l) = decode(stem, &bytes) {
            out.push(l);
        }
    }
    Ok(out)
}

/// The cache file's name in a project's lease directory (no `.lease` suffix: never a lease).
pub(crate) const LEASE_CACHE: &str = "leases.cache";

/// The first bytes of a lease cache; bumped whenever the record layout changes.
const CACHE_MAGIC: &[u8; 8] = b"MRLEASE1";

/// The largest lease cache read: far above what 10,000 leases take.
const CACHE_LIMIT: Limit = Limit {
    bytes: 16 * 1024 * 1024,
    what: "the lease cache",
};

/// The leases of the cache whose pattern `want` accepts, only those decoded; `None` when there
/// is no cache, or it is damaged (then the files are read).
fn from_cache(dir: &Dir, want: &dyn Fn(&str) -> bool) -> Option<Vec<Lease>> {
    let bytes = dir.read(LEASE_CACHE, CACHE_LIMIT).ok()??;
    let mut r = Reader {
        buf: &bytes,
        pos: 0,
    };
    if r.take(CACHE_MAGIC.len())? != CACHE_MAGIC {
        return None;
    }
    let n = r.u32()?;
    let mut out = Vec::new();
    for _ in 0..n {
        // Each record: its length, the pattern (what `want` reads), then the other fields.
        let len = r.u32()? as usize;
        let end = r.pos.checked_add(len)?;
        let pattern = r.str()?;
        if want(pattern) {
            let pattern = pattern.to_owned();
            out.push(Lease {
                id: MessageId::from_bits(r.u128()?),
                holder: Address::parse_canonical(r.str()?).ok()?,
                pattern,
                exclusive: r.u8()? != 0,
                reason: r.opt_str()?.map(str::to_owned),
                since: Timestamp::from_nanosecond(r.i128()?).ok()?,
                until: Timestamp::from_nanosecond(r.i128()?).ok()?,
            });
        }
        if end > bytes.len() {
            return None;
        }
        r.pos = end;
    }
    (r.pos == bytes.len()).then_some(out)
}

/// Replaces the cache with `leases`, best effort: a cache that cannot be written only costs
/// speed. Only ever called with the project's lock held (see the module's note).
fn save_cache(dir: &Dir, tmp: &Dir, leases: &[Lease]) {
    let mut out = Vec::with_capacity(16 + leases.len() * 160);
    out.extend_from_slice(CACHE_MAGIC);
    out.extend_from_slice(&(leases.len() as u32).to_le_bytes());
    let mut record = Vec::new();
    for l in leases {
        record.clear();
        put_str(&mut record, &l.pattern);
        record.extend_from_slice(&l.id.to_bits().to_le_bytes());
        put_str(&mut record, &l.holder.to_string());
        record.push(u8::from(l.exclusive));
        put_opt_str(&mut record, l.reason.as_deref());
        record.extend_from_slice(&l.since.as_nanosecond().to_le_bytes());
        record.extend_from_slice(&l.until.as_nanosecond().to_le_bytes());
        out.extend_from_slice(&(record.len() as u32).to_le_bytes());
        out.extend_from_slice(&record);
    }
    if let Ok(t) = tmp.write_temp(&out, Durability::Lazy)
        && tmp.rename(&t, dir, LEASE_CACHE).is_err()
    {
        let _ = tmp.remove(&t);
    }
}

fn file_name(id: MessageId) -> String {
    format!("{id}{LEASE_SUFFIX}")
}

fn encode(l: &Lease) -> String {
    let mut s = format!(
        "id: {}\nholder: {}\npattern: {}\nexclusive: {}\nsince: {}\nuntil: {}\n",
        l.id, l.holder, l.pattern, l.exclusive, l.since, l.until
    );
    if let Some(r) = &l.reason {
        s.push_str(&format!("reason: {r}\n"));
    }
    s
}

/// A lease file's lines back into a lease; `None` when a field is missing or malformed, or the
/// id differs from the file's name.
pub(crate) fn decode(stem: &str, bytes: &[u8]) -> Option<Lease> {
    let text = std::str::from_utf8(bytes).ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(": "))
    };
    let id = MessageId::parse(field("id")?)?;
    if id.to_string() != stem {
        return None;
    }
    Some(Lease {
        id,
        holder: Address::parse_canonical(field("holder")?).ok()?,
        pattern: mailroom_core::lease::normalize_pattern(field("pattern")?).ok()?,
        exclusive: field("exclusive")?.parse().ok()?,
        reason: field("reason").map(str::to_owned),
        since: field("since")?.parse::<Timestamp>().ok()?,
        until: field("until")?.parse::<Timestamp>().ok()?,
    })
}

impl Reservations for FsStore {
    fn leases(&self, project: &Name) -> Result<Vec<Lease>> {
        self.leases_where(project, &|_| true)
    }

    fn leases_where(&self, project: &Name, want: &dyn Fn(&str) -> bool) -> Result<Vec<Lease>> {
        let Some(dir) = self.open_leases(project)? else {
            return Ok(Vec::new());
        };
        if let Some(found) = from_cache(&dir, want) {
            return Ok(found);
        }
        // No cache: the files, read under the lock so that the cache written from them is the
        // leases as they are.
        let lock = dir.lock()?;
        let mut all = read_files(&dir)?;
        if lock.held()
            && let Some(tmp) = self.root()?.and_then(|r| r.open(TMP).ok().flatten())
        {
            save_cache(&dir, &tmp, &all);
        }
        all.retain(|l| want(&l.pattern));
        Ok(all)
    }

    fn change_leases(
        &self,
        project: &Name,
        decide: &mut dyn FnMut(&[Lease]) -> Result<LeaseChange>,
    ) -> Result<()> {
        let (tmp, dir) = self.create_leases(project)?;
        let lock = dir.lock()?;
        // Under the lock a cache present is the leases as they are.
        let leases = match lock.held().then(|| from_cache(&dir, &|_| true)).flatten() {
            Some(cached) => cached,
            None => read_files(&dir)?,
        };
        let change = decide(&leases)?;
        if change.remove.is_empty() && change.add.is_empty() {
            return Ok(());
        }
        // The cache goes first: a change stopped midway leaves none to be trusted.
        dir.remove_rebuildable(LEASE_CACHE)?;
        for id in &change.remove {
            dir.remove(&file_name(*id))?;
        }
        for l in &change.add {
            let name = file_name(l.id);
            let t = tmp.write_temp(encode(l).as_bytes(), Durability::Durable)?;
            // A lease held already and not removed above is replaced at once; a new one is
            // linked in without replacing, so that where there is no lock only one writer
            // publishes it. (A renewal removes its lease above, then links it anew.)
            let held = leases.iter().any(|h| h.id == l.id) && !change.remove.contains(&l.id);
            if held {
                tmp.rename(&t, &dir, &name)?;
            } else if !tmp.publish_new(&t, &dir, &name)? {
                // Held already and not removed above: the change replaces it.
                let t = tmp.write_temp(encode(l).as_bytes(), Durability::Durable)?;
                tmp.rename(&t, &dir, &name)?;
            }
        }
        dir.sync()?;
        if lock.held() {
            let mut now: Vec<Lease> = leases
                .into_iter()
                .filter(|l| {
                    !change.remove.contains(&l.id) && !change.add.iter().any(|a| a.id == l.id)
                })
                .collect();
            now.extend(change.add);
            save_cache(&dir, &tmp, &now);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, pattern: &str) -> Lease {
        Lease {
            id: MessageId::generate(),
            holder: Address::parse_canonical(holder).unwrap(),
            pattern: pattern.to_owned(),
            exclusive: true,
            reason: Some("why".to_owned()),
            since: Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap(),
            until: Timestamp::from_second(1_700_007_200).unwrap(),
        }
    }

    fn sorted(mut v: Vec<Lease>) -> Vec<Lease> {
        v.sort_by_key(|l| l.id);
        v
    }

    #[test]
    fn the_cache_is_the_leases_and_a_damaged_or_missing_one_is_rebuilt() {
        let home = tempfile::tempdir().unwrap();
        let store = FsStore::new(home.path());
        let project = Name::parse("shop").unwrap();
        let (a, b) = (lease("a@shop", "src/a/**"), lease("b@shop", "src/b"));
        let add = |l: Lease| LeaseChange {
            remove: vec![],
            add: vec![l],
        };
        store
            .change_leases(&project, &mut |_| Ok(add(a.clone())))
            .unwrap();
        store
            .change_leases(&project, &mut |_| Ok(add(b.clone())))
            .unwrap();
        let both = sorted(vec![a.clone(), b.clone()]);
        let cache = home.path().join("leases/shop").join(LEASE_CACHE);
        assert!(cache.exists(), "a change writes the cache");
        assert_eq!(sorted(store.leases(&project).unwrap()), both);
        // Only the accepted patterns come back.
        let only_b = store.leases_where(&project, &|p| p == "src/b").unwrap();
        assert_eq!(only_b, vec![b.clone()]);
        // Damaged (cut short, then garbage): the files are read and the cache written anew.
        let bytes = std::fs::read(&cache).unwrap();
        for bad in [bytes[..bytes.len() - 3].to_vec(), b"garbage".to_vec()] {
            std::fs::write(&cache, &bad).unwrap();
            assert_eq!(sorted(store.leases(&project).unwrap()), both);
            assert_eq!(std::fs::read(&cache).unwrap().len(), bytes.len());
        }
        // A change stopped midway leaves no cache (it goes first): the files are read.
        std::fs::remove_file(&cache).unwrap();
        let c = lease("c@shop", "docs");
        let name = file_name(c.id);
        std::fs::write(home.path().join("leases/shop").join(&name), encode(&c)).unwrap();
        let all = sorted(vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(sorted(store.leases(&project).unwrap()), all);
        assert!(cache.exists(), "a reader rebuilds the cache");
        // A release and a renewal keep it true.
        let mut b2 = b.clone();
        b2.until = Timestamp::from_second(1_700_009_000).unwrap();
        store
            .change_leases(&project, &mut |_| {
                Ok(LeaseChange {
                    remove: vec![a.id],
                    add: vec![b2.clone()],
                })
            })
            .unwrap();
        let want = sorted(vec![b2.clone(), c.clone()]);
        assert_eq!(sorted(store.leases(&project).unwrap()), want);
        assert_eq!(
            sorted(read_files(&store.open_leases(&project).unwrap().unwrap()).unwrap()),
            want
        );
    }

    #[test]
    fn a_lease_file_reads_back_as_written() {
        let l = Lease {
            id: MessageId::generate(),
            holder: Address::parse_canonical("web@shop").unwrap(),
            pattern: "src/api/**".to_owned(),
            exclusive: true,
            reason: Some("moving: the users endpoint".to_owned()),
            since: Timestamp::from_second(1_700_000_000).unwrap(),
            until: Timestamp::from_second(1_700_007_200).unwrap(),
        };
        let stem = l.id.to_string();
        assert_eq!(decode(&stem, encode(&l).as_bytes()), Some(l.clone()));
        assert_eq!(
            decode("01ARZ3NDEKTSV4RRFFQ69G5FAV", encode(&l).as_bytes()),
            None
        );
    }
}
