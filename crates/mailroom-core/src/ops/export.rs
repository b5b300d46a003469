//! `export`: copies a whole mailroom into another store (files to PostgreSQL or back), keeping
//! ids, states, threads, the current and every earlier revision of each copy, outbox traces,
//! rosters, channel entries (retracted ones too), seen sets, the archive's order and times, the
//! origin claims of git-derived identities and, where they still hold, the hooks' injection
//! marks. Running it again copies only what is missing or moved on.
//!
//! Idempotency keys are copied too, so a retry against the target finds the first message.
//!
//! An injection mark is a change token of one store, which means nothing in another: it is
//! translated, not copied. When a mailbox's mark says its session saw everything up to the
//! source's token now (nothing arrived since), and the target shows that mailbox nothing the
//! source does not (no pending copy, no unseen broadcast of its own), the target gets the same
//! mark after its own token: its next mid-session hook then says nothing new, as the source's
//! would have. Otherwise nothing is written, and the target's next hook shows the pending mail
//! again (the safe side). A mark is taken before the copy and checked again after it, so mail
//! that arrives during the export is never hidden behind a carried mark.
//!
//! Origin claims are copied as the first claim in the target: a claim the target holds stays.

use std::collections::{BTreeSet, HashMap, HashSet};

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::message::{ChannelRef, Damaged, MessageId, State};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::inject::translate_mark;
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
    /// Earlier revisions of edited copies.
    pub revisions: usize,
    pub revisions_new: usize,
    /// Archived (done) copies whose archive time is copied.
    pub archive_times: usize,
    /// Archive times the target did not have (a copy archived by this export, or at another
    /// time).
    pub archive_times_new: usize,
    /// Injection marks the source holds.
    pub marks: usize,
    /// Marks written in the target, translated to its token (see the module documentation).
    pub marks_new: usize,
    /// Origin claims of git-derived identities.
    pub origins: usize,
    /// Claims the target did not have (one it holds for another path stays as it is).
    pub origins_new: usize,
    /// What the source could not read, or holds where it does not belong (a revision of a
    /// copy the mailbox does not hold): reported, not copied.
    pub damaged: Vec<Damaged>,
    /// What was copied as its name says although its content disagrees.
    pub warnings: Vec<String>,
}

/// Whether a copy the target holds in state `from` may be moved to the source's `to`: only on
/// along its lifecycle (unread → read → done, unread → cancelled), never back. A copy the
/// target's reader archived, or its sender cancelled, since an earlier export (agents already
/// working on the target) stays so; the export reports it instead of undoing it.
fn moves_on(from: State, to: State) -> bool {
    matches!((from, to), (State::Unread, _) | (State::Read, State::Done))
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
        // A target that would refuse the operator (a strict-mode agent role's connection) is
        // refused before the first write, not half-way through with part of the home copied.
        target.check_acts_as(me)?;
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
        // Taken before anything is copied: mail arriving from here on changes the token.
        let mut marks = Vec::new();
        for mailbox in &mailboxes {
            if let Some(saved) = source.last_injected(mailbox)? {
                out.marks += 1;
                let token = source.change_token(mailbox)?;
                if translate_mark(&saved, &token, "").is_some() {
                    marks.push((mailbox, saved, token));
                }
            }
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
        for (mailbox, saved, token) in marks {
            if self.carry_mark(mailbox, &saved, &token, target)? {
                out.marks_new += 1;
            }
        }
        Ok(out)
    }

    /// Writes the translation of `saved` (the mark of `mailbox`, taken with the source's token
    /// `token` before the copy) in `target`, when it still holds; returns whether it wrote.
    fn carry_mark(
        &self,
        mailbox: &Address,
        saved: &str,
        token: &str,
        target: &dyn Store,
    ) -> Result<bool> {
        let source = self.store();
        // Mail arrived during the export (the session has not seen it), or a hook saved
        // another mark meanwhile (the next export carries that one).
        if source.change_token(mailbox)? != token
            || source.last_injected(mailbox)?.as_deref() != Some(saved)
        {
            return Ok(false);
        }
        let mut wrote = false;
        // Twice at most: saving a mark may change the target's token (PostgreSQL creates the
        // mailbox's row), and a mark saved with the token before that would never match.
        for _ in 0..2 {
            // The token first, then the comparison: mail delivered to the target after the
            // token was read changes it, so the mark written below is outdated (the safe side)
            // instead of hiding that mail.
            let now = target.change_token(mailbox)?;
            // The target shows this mailbox something the source does not (it held mail of
            // its own before the export, or got some since): the session has not seen that.
            if !shows_no_more(source, target, mailbox)? {
                return Ok(wrote);
            }
            let Some(mark) = translate_mark(saved, token, &now) else {
                return Ok(wrote);
            };
            if target
                .last_injected(mailbox)?
                .is_some_and(|held| held.trim() == mark.trim())
            {
                return Ok(wrote);
            }
            target.set_last_injected(mailbox, &mark)?;
            wrote = true;
        }
        Ok(wrote)
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
        let mut archived: Vec<(MessageId, Timestamp)> = source
            .recently_archived(mailbox, usize::MAX)?
            .into_iter()
            .map(|(s, at)| (s.message.id, at))
            .collect();
        archived.reverse();
        let ranks: HashMap<MessageId, usize> = archived
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let rank = |id: &MessageId| ranks.get(id).copied();
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
                if moves_on(state, stored.state) {
                    target.transition(mailbox, &[(id, state)], stored.state)?;
                    changed = true;
                } else {
                    out.damaged.push(Damaged {
                        location: format!("{mailbox} {id}"),
                        state: Some(stored.state),
                        problem: format!(
                            "the target's copy is {state}, further on than the source's {}; left as the target has it",
                            stored.state
                        ),
                    });
                }
            }
            out.copies_new += usize::from(changed);
        }
        self.copy_archive_times(mailbox, &archived, target, out)?;
        self.copy_revisions(mailbox, &copies, target, out)?;
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
        if let Some(path) = source.origin(mailbox)? {
            out.origins += 1;
            // First claim wins in the target too: one it holds stays.
            if target.origin(mailbox)?.is_none() {
                target.claim_origin(mailbox, &path)?;
                if target.origin(mailbox)?.as_deref() == Some(path.as_str()) {
                    out.origins_new += 1;
                }
            }
        }
        Ok(())
    }

    /// Gives the target's done copies the source's archive times, oldest first (`archived`).
    /// From the first copy whose time differs on, every one is set again, in order: a store
    /// that orders its archive by its moves (PostgreSQL) then lists them in the source's order.
    fn copy_archive_times(
        &self,
        mailbox: &Address,
        archived: &[(MessageId, Timestamp)],
        target: &dyn Store,
        out: &mut Exported,
    ) -> Result<()> {
        out.archive_times += archived.len();
        if archived.is_empty() {
            return Ok(());
        }
        let held: HashMap<MessageId, Timestamp> = target
            .recently_archived(mailbox, usize::MAX)?
            .into_iter()
            .map(|(s, at)| (s.message.id, at))
            .collect();
        let Some(first) = archived
            .iter()
            .position(|(id, at)| held.get(id) != Some(at))
        else {
            return Ok(());
        };
        for (id, at) in &archived[first..] {
            let differed = held.get(id) != Some(at);
            if target.set_archived_at(mailbox, *id, *at)? && differed {
                out.archive_times_new += 1;
            }
        }
        Ok(())
    }

    /// Copies the earlier revisions of the mailbox's edited copies (`copies`: the copies as
    /// they read now) that the target does not keep.
    fn copy_revisions(
        &self,
        mailbox: &Address,
        copies: &[crate::message::Stored],
        target: &dyn Store,
        out: &mut Exported,
    ) -> Result<()> {
        let revisions = self.store().revisions(mailbox)?;
        out.damaged.extend(revisions.damaged);
        out.warnings.extend(revisions.warnings);
        if revisions.messages.is_empty() {
            return Ok(());
        }
        let current: HashMap<MessageId, (u32, &Address)> = copies
            .iter()
            .map(|s| (s.message.id, (s.message.revision, &s.message.from)))
            .collect();
        let held: HashSet<(MessageId, u32)> = target
            .revisions(mailbox)?
            .messages
            .iter()
            .map(|m| (m.id, m.revision))
            .collect();
        for m in &revisions.messages {
            // A revision belongs to a copy in this mailbox, from that copy's sender, and is
            // earlier than it; anything else (a hand-made file, say) would put history under
            // a message that never had it.
            let problem = match current.get(&m.id) {
                None => Some("is a revision of a message this mailbox holds no copy of".to_owned()),
                Some((_, from)) if **from != m.from => Some(format!(
                    "names the sender {} but the copy is from {from}",
                    m.from
                )),
                Some((now, _)) if m.revision >= *now => Some(format!(
                    "is not earlier than the copy, which is at revision {now}"
                )),
                Some(_) => None,
            };
            if let Some(problem) = problem {
                out.damaged.push(Damaged {
                    location: format!("{mailbox}: revision {} of {}", m.revision, m.id),
                    state: None,
                    problem,
                });
                continue;
            }
            out.revisions += 1;
            if !held.contains(&(m.id, m.revision)) && target.keep_revision(mailbox, m)? {
                out.revisions_new += 1;
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

/// Whether `target` shows `mailbox` nothing that `source` does not: every pending copy it holds
/// is pending in the source, and for a project member every broadcast it has not seen is unseen
/// in the source too.
fn shows_no_more(source: &dyn Store, target: &dyn Store, mailbox: &Address) -> Result<bool> {
    let pending = |store: &dyn Store| -> Result<HashSet<MessageId>> {
        Ok(store
            .pending(mailbox)?
            .messages
            .into_iter()
            .map(|s| s.message.id)
            .collect())
    };
    if !pending(target)?.is_subset(&pending(source)?) {
        return Ok(false);
    }
    let Some(project) = mailbox.project() else {
        return Ok(true);
    };
    let all = ChannelRef {
        project: project.clone(),
        name: Name::parse(crate::message::BROADCAST)
            .map_err(|e| Error::store("the broadcast channel's name", e))?,
    };
    let unseen = |store: &dyn Store| -> Result<HashSet<MessageId>> {
        Ok(store
            .unseen(&all, &mailbox.handle)?
            .messages
            .into_iter()
            .map(|s| s.message.id)
            .collect())
    };
    Ok(unseen(target)?.is_subset(&unseen(source)?))
}
