//! The `Reservations` role: one file per lease, `leases/<project>/<id>.lease`, each published
//! complete (written under `tmp/`, then linked in without replacing). A change holds the
//! project directory's `flock` from its read to its last write, so two reservations never
//! decide from the same leases; where the file system cannot lock a directory, the link that
//! never replaces still lets only one writer publish a given lease.

use jiff::Timestamp;
use mailroom_core::lease::{Lease, LeaseChange, Reservations};
use mailroom_core::{Address, MessageId, Name, Result};

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

fn read_all(dir: &Dir) -> Result<Vec<Lease>, FsError> {
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
        match self.open_leases(project)? {
            Some(dir) => Ok(read_all(&dir)?),
            None => Ok(Vec::new()),
        }
    }

    fn change_leases(
        &self,
        project: &Name,
        decide: &mut dyn FnMut(&[Lease]) -> Result<LeaseChange>,
    ) -> Result<()> {
        let (tmp, dir) = self.create_leases(project)?;
        let _lock = dir.lock()?;
        let leases = read_all(&dir)?;
        let change = decide(&leases)?;
        for id in &change.remove {
            dir.remove(&file_name(*id))?;
        }
        for l in &change.add {
            let name = file_name(l.id);
            let t = tmp.write_temp(encode(l).as_bytes(), Durability::Durable)?;
            if !tmp.publish_new(&t, &dir, &name)? {
                // Held already and not removed above: the change replaces it.
                let t = tmp.write_temp(encode(l).as_bytes(), Durability::Durable)?;
                tmp.rename(&t, &dir, &name)?;
            }
        }
        dir.sync()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
