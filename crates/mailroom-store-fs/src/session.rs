//! What an identity's sessions leave in its mailbox: the change token hooks compare, the
//! token of the last injection, and the claim of the working tree the identity belongs to.
//!
//! Invariants: the change token costs a few `stat`s and changes whenever mail or a broadcast
//! lands for the mailbox; the injection token is one small file replaced by rename, and one
//! that cannot be read is no token; an origin claim is an exclusive create, so two trees
//! cannot both claim one identity.

use mailroom_core::message::{BROADCAST, ChannelRef};
use mailroom_core::store::OriginClaim;
use mailroom_core::{Address, Name, Result, State};

use crate::dir::{Dir, Durability, Limit};
use crate::error::FsError;
use crate::{ENTRIES, FsStore, INJECTED, ORIGIN, TMP, create_exclusive, state_dir_name};

pub(crate) fn change_token(fs: &FsStore, mailbox: &Address) -> Result<String> {
    // The modification times of the directories deliveries land in: `unread/` and, for a
    // project member, the broadcast channel's entries. Two stats, no listing.
    let stamp = |dir: Option<Dir>, name: &str| -> Result<String, FsError> {
        Ok(match dir {
            Some(d) => match d.mtime(name)? {
                Some(ns) => ns.to_string(),
                None => "-".into(),
            },
            None => "-".into(),
        })
    };
    let mut token = stamp(fs.open_box(mailbox)?, state_dir_name(State::Unread))?;
    if let Some(project) = mailbox.project() {
        let all = ChannelRef {
            project: project.clone(),
            name: Name::parse(BROADCAST)
                .map_err(|e| mailroom_core::Error::store("channel name", e))?,
        };
        token.push(':');
        token.push_str(&stamp(fs.open_channel(&all)?, ENTRIES)?);
    }
    Ok(token)
}

pub(crate) fn last_injected(fs: &FsStore, mailbox: &Address) -> Result<Option<String>> {
    let Some(bx) = fs.open_box(mailbox)? else {
        return Ok(None);
    };
    // A token that cannot be read is no token: the hook lists, and saving the next one
    // replaces whatever is there.
    Ok(bx
        .read(INJECTED, Limit::small("the injection token"))
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned()))
}

pub(crate) fn set_last_injected(fs: &FsStore, mailbox: &Address, token: &str) -> Result<()> {
    let bx = fs.create_box(mailbox)?;
    let tmp = bx.open_or_create(TMP)?;
    let t = tmp.write_temp(format!("{token}\n").as_bytes(), Durability::Lazy)?;
    tmp.rename(&t, &bx, INJECTED)?;
    Ok(())
}

pub(crate) fn claim_origin(fs: &FsStore, identity: &Address, path: &str) -> Result<OriginClaim> {
    // A mailbox that was never written to is not created just to hold the claim.
    let Some(bx) = fs.open_box(identity)? else {
        return Ok(OriginClaim::Same);
    };
    if let Some(existing) = bx.read(ORIGIN, Limit::small("an origin file"))? {
        let existing = String::from_utf8_lossy(&existing).trim().to_owned();
        return Ok(if existing == path {
            OriginClaim::Same
        } else {
            OriginClaim::Other(existing)
        });
    }
    let tmp = bx.open_or_create(TMP)?;
    if create_exclusive(&tmp, &bx, ORIGIN, &format!("{path}\n"))? {
        return Ok(OriginClaim::Same);
    }
    claim_origin(fs, identity, path)
}

pub(crate) fn origin(fs: &FsStore, identity: &Address) -> Result<Option<String>> {
    let Some(bx) = fs.open_box(identity)? else {
        return Ok(None);
    };
    Ok(bx
        .read(ORIGIN, Limit::small("an origin file"))?
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned()))
}
