//! `export`: copies a whole mailroom into another store (files to PostgreSQL or back), keeping
//! ids, states, threads, revisions as they read now, outbox traces, rosters, channel entries
//! (retracted ones too) and seen sets. Running it again copies only what is missing or moved on.
//!
//! Idempotency keys are copied too, so a retry against the target finds the first message.
//!
//! Not copied, because they belong to one store: the hooks' injection marks (a change token of
//! one store means nothing in another; the next session start shows pending mail again), the
//! origin claims of git-derived identities (the next command re-records them), and the earlier
//! revisions of edited copies (the trait cannot list them).

use std::collections::BTreeSet;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::message::{ChannelRef, Damaged, MessageId, State};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::store::{KeyClaim, Store};

/// What an export copied: totals, and what was new in the target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exported {
    pub projects: usize,
    pub projects_new: usize,
    pub members: usize,
    pub members_new: usize,
    pub mailboxes: usize,
    pub copies: usize,
    /// Copies the target did not have, or had in another state.
    pub copies_new: usize,
    pub traces: usize,
    pub traces_new: usize,
    pub entries: usize,
    pub entries_new: usize,
    pub seen: usize,
    pub seen_new: usize,
    pub keys: usize,
    /// Keys the target had not claimed (one it claimed for another id stays as it is).
    pub keys_new: usize,
    /// What the source could not read: reported, not copied.
    pub damaged: Vec<Damaged>,
}

impl Mailroom<'_> {
    /// Copies this mailroom into `target`. Only the operator (`HUMAN`) exports: it reads every
    /// mailbox. `progress` is told each mailbox and channel as it is done.
    pub fn export_to(
        &self,
        me: &Address,
        target: &dyn Store,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Exported> {
        if !me.is_human() {
            return Err(Error::Refused(format!(
                "{me} cannot export the mailroom: it copies every mailbox, which only the operator may read; run it as HUMAN (--as HUMAN)"
            )));
        }
        let source = self.store();
        let mut out = Exported::default();
        let mut mailboxes = vec![Address::human()];
        let mut readers: Vec<(Name, Vec<Name>)> = Vec::new();
        for project in source.projects()? {
            out.projects += 1;
            let (_, made) = target.ensure_project(&project)?;
            out.projects_new += usize::from(made);
            let mut handles = vec![Name::human()];
            for member in source.roster(&project.name)? {
                out.members += 1;
                if target.add_member(&project.name, &member)? {
                    out.members_new += 1;
                } else if target.member(&project.name, &member.handle)?.as_ref() != Some(&member) {
                    target.update_member(&project.name, &member)?;
                    out.members_new += 1;
                }
                mailboxes.push(Address::in_project(
                    member.handle.clone(),
                    project.name.clone(),
                ));
                handles.push(member.handle);
            }
            readers.push((project.name, handles));
        }
        for mailbox in &mailboxes {
            self.copy_mailbox(mailbox, target, &mut out)?;
            progress(&format!("mailbox {mailbox}"));
        }
        for (project, handles) in &readers {
            for name in source.channels(project)? {
                let channel = ChannelRef {
                    project: project.clone(),
                    name,
                };
                self.copy_channel(&channel, handles, target, &mut out)?;
                progress(&format!("channel {channel}"));
            }
        }
        Ok(out)
    }

    fn copy_mailbox(
        &self,
        mailbox: &Address,
        target: &dyn Store,
        out: &mut Exported,
    ) -> Result<()> {
        let source = self.store();
        let listing = source.everything(mailbox)?;
        out.damaged.extend(listing.damaged);
        if !listing.messages.is_empty() {
            out.mailboxes += 1;
        }
        // Archived copies last, oldest archived first, so the target's `recover` lists them in
        // the source's order.
        let mut archived: Vec<MessageId> = source
            .recently_archived(mailbox, usize::MAX)?
            .into_iter()
            .map(|(s, _)| s.message.id)
            .collect();
        archived.reverse();
        let rank = |id: &MessageId| archived.iter().position(|a| a == id);
        let mut copies = listing.messages;
        copies.sort_by_key(|s| (s.state == State::Done, rank(&s.message.id), s.message.id));
        for stored in &copies {
            out.copies += 1;
            let id = stored.message.id;
            // The state first: a store may see only `unread` when delivering (the file store
            // does), so delivering a copy the target holds in another state would hold it twice.
            let mut now = target.state_of(mailbox, id)?;
            let mut changed = false;
            if now.is_none() && target.deliver(mailbox, &stored.message)? {
                now = Some(State::Unread);
                changed = true;
            }
            if let Some(state) = now
                && state != stored.state
            {
                target.transition(mailbox, &[(id, state)], stored.state)?;
                changed = true;
            }
            out.copies_new += usize::from(changed);
        }
        for trace in source.outbox(mailbox)? {
            out.traces += 1;
            if target.sent(mailbox, trace.id)?.as_ref() != Some(&trace) {
                target.record_sent(&trace)?;
                out.traces_new += 1;
            }
        }
        let held = target.keys(mailbox)?;
        for (key, id) in source.keys(mailbox)? {
            out.keys += 1;
            if held.iter().any(|(k, _)| *k == key) {
                continue;
            }
            if target.claim_key(mailbox, &key, id)? == KeyClaim::Claimed {
                out.keys_new += 1;
            }
        }
        Ok(())
    }

    fn copy_channel(
        &self,
        channel: &ChannelRef,
        readers: &[Name],
        target: &dyn Store,
        out: &mut Exported,
    ) -> Result<()> {
        let source = self.store();
        let listing = source.entries(channel, true)?;
        out.damaged.extend(listing.damaged);
        for stored in &listing.messages {
            out.entries += 1;
            let added = target.append(channel, &stored.message)?;
            let retracted =
                stored.state == State::Retracted && target.retract(channel, stored.message.id)?;
            out.entries_new += usize::from(added || retracted);
        }
        let readers: BTreeSet<&Name> = readers.iter().collect();
        for reader in readers {
            let ids = source.seen(channel, reader)?;
            if ids.is_empty() {
                continue;
            }
            out.seen += ids.len();
            out.seen_new += target
                .mark_seen(channel, reader, &ids)?
                .into_iter()
                .filter(|&b| b)
                .count();
        }
        Ok(())
    }
}
