//! Channels of a project: appending entries, listing them, each reader's seen marks, and
//! retracting a broadcast.
//!
//! Invariants: entries are append-only (one file per entry, published complete, never
//! rewritten; a retraction is one rename into `retracted/`); a seen mark is an exclusive
//! create, so concurrent readers as one member claim each entry once.

use std::collections::HashSet;

use mailroom_core::message::ChannelRef;
use mailroom_core::{Address, Listing, Message, MessageId, Name, Result, State, Stored};

use crate::codec::message_to_text;
use crate::dir::Durability;
use crate::index::{self, Indexed};
use crate::listing::{keep_latest, read_dir};
use crate::{CHANNELS, ENTRIES, FsStore, RETRACTED, SEEN, TMP, file_name, id_of, names};

/// The mailbox a channel entry stands in for: entries have no owner mailbox, so the
/// channel's project stands in for a missing `to`.
fn entry_owner(channel: &ChannelRef) -> Address {
    Address::in_project(channel.name.clone(), channel.project.clone())
}

pub(crate) fn append(fs: &FsStore, channel: &ChannelRef, message: &Message) -> Result<bool> {
    let dir = fs.create_channel(channel)?;
    // An entry once posted keeps its id for good: retracted, it is not published again (a keyed
    // retry of the post, or an export run again, would otherwise bring it back to everyone
    // who has not seen it). A retract racing this check can still let one through.
    if let Some(retracted) = dir.open(RETRACTED)?
        && retracted.exists(&file_name(message.id))?
    {
        return Ok(false);
    }
    let tmp = dir.open_or_create(TMP)?;
    let entries = dir.open_or_create(ENTRIES)?;
    let t = tmp.write_temp(message_to_text(message).as_bytes(), Durability::Durable)?;
    let created = tmp.publish_new(&t, &entries, &file_name(message.id))?;
    entries.sync()?;
    Ok(created)
}

pub(crate) fn entries(fs: &FsStore, channel: &ChannelRef, retracted: bool) -> Result<Listing> {
    let mut out = Listing::default();
    let Some(dir) = fs.open_channel(channel)? else {
        return Ok(out);
    };
    let owner = entry_owner(channel);
    let mut sources = vec![(ENTRIES, State::Unread)];
    if retracted {
        sources.push((RETRACTED, State::Retracted));
    }
    for (sub, state) in sources {
        if let Some(d) = dir.open(sub)? {
            read_dir(&owner, &d, Some(state), |_| true, &mut out)?;
        }
    }
    keep_latest(&mut out.messages);
    out.messages.sort_by_key(|s| s.message.id);
    Ok(out)
}

/// One entry, live or retracted, read by its file name: a point lookup, not a listing.
pub(crate) fn entry(fs: &FsStore, channel: &ChannelRef, id: MessageId) -> Result<Option<Stored>> {
    let Some(dir) = fs.open_channel(channel)? else {
        return Ok(None);
    };
    let owner = entry_owner(channel);
    for (sub, state) in [(ENTRIES, State::Unread), (RETRACTED, State::Retracted)] {
        if let Some(d) = dir.open(sub)? {
            let mut out = Listing::default();
            crate::listing::read_one(&owner, &d, &file_name(id), Some(state), &mut out)?;
            if let Some(s) = out.messages.pop() {
                return Ok(Some(s));
            }
        }
    }
    Ok(None)
}

pub(crate) fn unseen(fs: &FsStore, channel: &ChannelRef, reader: &Name) -> Result<Listing> {
    let mut out = Listing::default();
    let Some(dir) = fs.open_channel(channel)? else {
        return Ok(out);
    };
    let Some(entries) = dir.open(ENTRIES)? else {
        return Ok(out);
    };
    let seen: HashSet<MessageId> = seen(fs, channel, reader)?.into_iter().collect();
    let not_seen = |n: &str| id_of(n).is_none_or(|id| !seen.contains(&id));
    read_dir(
        &entry_owner(channel),
        &entries,
        Some(State::Unread),
        not_seen,
        &mut out,
    )?;
    Ok(out)
}

pub(crate) fn seen(fs: &FsStore, channel: &ChannelRef, reader: &Name) -> Result<Vec<MessageId>> {
    let Some(dir) = fs.open_channel(channel)? else {
        return Ok(vec![]);
    };
    let Some(seen) = dir.open(SEEN)? else {
        return Ok(vec![]);
    };
    let Some(mine) = names::open(&seen, reader.as_str())? else {
        return Ok(vec![]);
    };
    Ok(mine
        .list()?
        .iter()
        .filter_map(|n| MessageId::parse(n))
        .collect())
}

pub(crate) fn mark_seen(
    fs: &FsStore,
    channel: &ChannelRef,
    reader: &Name,
    ids: &[MessageId],
) -> Result<Vec<bool>> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let dir = fs.create_channel(channel)?;
    let mine = names::open_or_create(&dir.open_or_create(SEEN)?, reader.as_str())?;
    // Not fsynced: a seen mark lost in a crash shows the entry once more, never loses it.
    Ok(ids
        .iter()
        .map(|id| mine.create_marker(&id.to_string()))
        .collect::<Result<_, _>>()?)
}

pub(crate) fn retract(fs: &FsStore, channel: &ChannelRef, id: MessageId) -> Result<bool> {
    let Some(dir) = fs.open_channel(channel)? else {
        return Ok(false);
    };
    let Some(entries) = dir.open(ENTRIES)? else {
        return Ok(false);
    };
    let name = file_name(id);
    if !entries.exists(&name)? {
        return Ok(false);
    }
    let retracted = dir.open_or_create(RETRACTED)?;
    let moved = entries.rename(&name, &retracted, &name)?;
    if moved {
        retracted.sync()?;
        entries.sync()?;
    }
    Ok(moved)
}

pub(crate) fn channels(fs: &FsStore, project: &Name) -> Result<Vec<Name>> {
    let Some(dir) = fs.open_project(project)? else {
        return Ok(vec![]);
    };
    let Some(channels) = dir.open(CHANNELS)? else {
        return Ok(vec![]);
    };
    let mut names: Vec<Name> = channels
        .list()?
        .iter()
        .filter_map(|n| Name::parse(n).ok())
        .collect();
    names.sort();
    Ok(names)
}

/// The entries (not retracted) of every channel of `project` whose subject or body contains
/// `query`, by channel then id: what `entries` filtered by `matches_query` gives, read through
/// each channel's search index (see `index`).
pub(crate) fn search_entries(fs: &FsStore, project: &Name, query: &str) -> Result<Listing> {
    let mut out = Listing::default();
    for name in channels(fs, project)? {
        let channel = ChannelRef {
            project: project.clone(),
            name,
        };
        let Some(dir) = fs.open_channel(&channel)? else {
            continue;
        };
        let owner = entry_owner(&channel);
        let Listing {
            mut messages,
            damaged,
        } = index::search(
            &Indexed {
                parent: &dir,
                file: index::CHANNEL_INDEX,
                sources: &[(ENTRIES, Some(State::Unread))],
                owner: &owner,
            },
            query,
        )?
        .listing;
        // The order `entries` gives; the sort is stable, so sorting the matches is sorting
        // the whole channel and then keeping the matches.
        messages.sort_by_key(|s| s.message.id);
        out.messages.extend(messages);
        out.damaged.extend(damaged);
    }
    Ok(out)
}
