//! The recipient's lifecycle of directed mail: unread → read → done, by inbox, read, done and
//! reply. Invariant: a listing shows each pending copy once, and marks read exactly what it showed.

use crate::address::Address;
use crate::error::{Error, Fix, Result};
use crate::message::{Damaged, Kind, Listing, MessageId, State, Stored};
use crate::ops::Mailroom;
use crate::ops::send::{Draft, Sent};
use crate::store::PendingSet;
use crate::text::reply_subject;

/// What `inbox` shows.
#[derive(Clone, Debug)]
pub struct Inbox {
    /// Shown messages: directed mail most urgent first, then broadcasts oldest first, each with
    /// the state it had before this call.
    pub messages: Vec<Stored>,
    /// Messages left out by the limit (or the budget), directed mail and broadcasts.
    pub more: usize,
    /// The ids of those left out, most urgent first.
    pub left_out: Vec<MessageId>,
    pub damaged: Vec<Damaged>,
}

/// What `read` shows.
#[derive(Clone, Debug)]
pub struct Read {
    /// The message with the state it had before this call.
    pub stored: Stored,
    pub archived: bool,
}

/// Most urgent first: open hold requests, then by priority, then oldest first.
pub fn urgency_order(a: &Stored, b: &Stored) -> std::cmp::Ordering {
    urgency_key(a).cmp(&urgency_key(b))
}

/// The key of [`urgency_order`].
pub fn urgency_key(s: &Stored) -> (bool, crate::message::Priority, MessageId) {
    (
        s.message.kind != Kind::HoldRequest,
        s.message.priority,
        s.message.id,
    )
}

/// Most message ids one `done` names.
pub const MAX_IDS: usize = 1_000;

/// What `inbox` shows, each directed message decoded only when it is visited: a long inbox is
/// shown one message at a time, never held whole.
pub struct InboxStream {
    pending: Box<dyn PendingSet>,
    /// The directed copies shown, most urgent first: an index into `pending`, or the copy as
    /// re-read after this call marked it read (or found it moved by another process).
    shown: Vec<Shown>,
    broadcasts: Vec<Stored>,
    /// Messages left out by the limit.
    pub more: usize,
    /// The ids of those left out, most urgent first.
    pub left_out: Vec<MessageId>,
    pub damaged: Vec<Damaged>,
}

enum Shown {
    Listed(usize),
    Fresh(Box<Stored>),
}

impl std::fmt::Debug for InboxStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxStream")
            .field("shown", &self.len())
            .field("more", &self.more)
            .finish_non_exhaustive()
    }
}

impl InboxStream {
    /// How many messages are shown.
    pub fn len(&self) -> usize {
        self.shown.len() + self.broadcasts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Visits the shown messages in order (directed mail most urgent first, then broadcasts),
    /// each with the state it had before this call, stopping at `visit`'s first error.
    pub fn visit<E: From<Error>>(
        &self,
        mut visit: impl FnMut(&Stored) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for shown in &self.shown {
            match shown {
                Shown::Listed(i) => visit(&self.pending.stored(*i)?)?,
                Shown::Fresh(stored) => visit(stored)?,
            }
        }
        self.broadcasts.iter().try_for_each(visit)
    }

    /// Every shown message, decoded.
    pub fn collect(self) -> Result<Inbox> {
        let mut messages = Vec::with_capacity(self.len());
        self.visit(|s: &Stored| -> Result<()> {
            messages.push(s.clone());
            Ok(())
        })?;
        Ok(Inbox {
            messages,
            more: self.more,
            left_out: self.left_out,
            damaged: self.damaged,
        })
    }
}

impl Mailroom<'_> {
    /// Pending directed mail, most urgent first, then unseen broadcasts; marks what it shows
    /// read (and seen).
    pub fn inbox(&self, me: &Address, limit: Option<usize>) -> Result<Inbox> {
        self.inbox_stream(me, limit)?.collect()
    }

    /// [`Mailroom::inbox`], with each directed message decoded only when the result visits it.
    pub fn inbox_stream(&self, me: &Address, limit: Option<usize>) -> Result<InboxStream> {
        let pending = self.store.pending_set(me)?;
        let mut damaged = pending.damaged().to_vec();
        let entries = pending.entries();
        // Each key built once, and no two alike (the ids differ), so an unstable sort orders
        // them as a stable one would.
        let mut keyed: Vec<_> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.kind != Kind::HoldRequest, e.priority, e.id.to_bits(), i))
            .collect();
        keyed.sort_unstable();
        let mut order: Vec<usize> = keyed.into_iter().map(|k| k.3).collect();
        let mut broadcasts = match self.broadcast_channel(me)? {
            Some(all) => {
                let unseen = self.store.unseen(&all, &me.handle)?;
                damaged.extend(unseen.damaged);
                Some((all, unseen.messages))
            }
            None => None,
        };
        let limit = limit.unwrap_or(usize::MAX);
        let mut left_out: Vec<MessageId> =
            order.iter().skip(limit).map(|&i| entries[i].id).collect();
        order.truncate(limit);
        if let Some((_, list)) = &mut broadcasts {
            let room = limit - order.len();
            let shown = if left_out.is_empty() {
                room.min(list.len())
            } else {
                0
            };
            left_out.extend(list[shown..].iter().map(|s| s.message.id));
            list.truncate(shown);
        }
        // Mark the shown unread copies read, and show what was moved (an edit that raced this
        // call is either shown or turned into a correction).
        let unread: Vec<(MessageId, State)> = order
            .iter()
            .filter(|&&i| entries[i].state == State::Unread)
            .map(|&i| (entries[i].id, State::Unread))
            .collect();
        let mut fresh: std::collections::HashMap<MessageId, Option<Stored>> = Default::default();
        if !unread.is_empty() {
            let moved = self.store.transition(me, &unread, State::Read)?;
            let ids: Vec<MessageId> = unread.iter().map(|(id, _)| *id).collect();
            let now = self.store.get_many(me, &ids)?;
            for ((id, moved), now) in ids.iter().zip(moved).zip(now) {
                let now = now.map(|now| match moved {
                    // The content moved, with the state it had before this call.
                    true => Stored {
                        state: State::Unread,
                        ..now
                    },
                    // Cancelled or read by a concurrent reader: its state as it is now.
                    false => now,
                });
                fresh.insert(*id, now);
            }
        }
        let mut shown = Vec::with_capacity(order.len());
        for i in order {
            match fresh.remove(&entries[i].id) {
                // A cancel or a `done` that won the race against this read took the message
                // out of the pending states: a listing of pending mail does not show it.
                Some(Some(now)) if !now.state.is_pending() => {}
                Some(Some(now)) => shown.push(Shown::Fresh(Box::new(now))),
                Some(None) | None => shown.push(Shown::Listed(i)),
            }
        }
        let broadcasts = match broadcasts {
            Some((all, mut list)) => {
                let ids: Vec<MessageId> = list.iter().map(|s| s.message.id).collect();
                let mut claimed = self.store.mark_seen(&all, &me.handle, &ids)?.into_iter();
                // Another reader as the same member showed the ones this call did not claim.
                list.retain(|_| claimed.next().unwrap_or(false));
                list
            }
            None => vec![],
        };
        Ok(InboxStream {
            pending,
            shown,
            broadcasts,
            more: left_out.len(),
            left_out,
            damaged,
        })
    }

    /// Shows mail: pending directed mail most urgent first, then unseen broadcasts, each only
    /// if `keep` keeps it, as long as `fits` accepts the next one; marks what it shows read (and
    /// seen). What did not fit is counted in `more` and left as it was.
    pub fn take(
        &self,
        me: &Address,
        mut keep: impl FnMut(&Stored) -> bool,
        mut fits: impl FnMut(&Stored) -> bool,
    ) -> Result<Inbox> {
        let Listing {
            mut messages,
            mut damaged,
        } = self.store.pending(me)?;
        messages.retain(&mut keep);
        crate::message::sort_by_cheap_key(&mut messages, urgency_key);
        let all = self.broadcast_channel(me)?;
        let mut broadcasts = match &all {
            Some(all) => {
                let mut unseen = self.store.unseen(all, &me.handle)?;
                damaged.extend(unseen.damaged);
                unseen.messages.retain(&mut keep);
                unseen.messages
            }
            None => vec![],
        };
        let mut left_out = Vec::new();
        let mut full = false;
        for list in [&mut messages, &mut broadcasts] {
            let shown = if full {
                0
            } else {
                list.iter().take_while(|s| fits(s)).count()
            };
            full |= shown < list.len();
            left_out.extend(list[shown..].iter().map(|s| s.message.id));
            list.truncate(shown);
        }
        self.mark_read(me, &mut messages)?;
        // A cancel or a `done` that won the race against this read took the message out of
        // the pending states: a listing of pending mail does not show it.
        messages.retain(|s| s.state.is_pending());
        if let Some(all) = &all {
            let ids: Vec<MessageId> = broadcasts.iter().map(|s| s.message.id).collect();
            let mut claimed = self.store.mark_seen(all, &me.handle, &ids)?.into_iter();
            // Another reader as the same member showed the ones this call did not claim.
            broadcasts.retain(|_| claimed.next().unwrap_or(false));
        }
        messages.append(&mut broadcasts);
        Ok(Inbox {
            messages,
            more: left_out.len(),
            left_out,
            damaged,
        })
    }

    /// Pending directed mail (most urgent first) then unseen broadcasts (oldest first),
    /// without changing any state: what a hook peeks at.
    pub fn peek(&self, me: &Address) -> Result<Listing> {
        let mut listing = self.store.pending(me)?;
        crate::message::sort_by_cheap_key(&mut listing.messages, urgency_key);
        if let Some(all) = self.broadcast_channel(me)? {
            listing.extend(self.store.unseen(&all, &me.handle)?);
        }
        Ok(listing)
    }

    /// The broadcast channel of `me`'s project: none for the global HUMAN, and none for an
    /// inactive member (broadcasts are for the project's active members).
    fn broadcast_channel(&self, me: &Address) -> Result<Option<crate::message::ChannelRef>> {
        let Some(p) = me.project() else {
            return Ok(None);
        };
        if let Some(m) = self.store.member(p, &me.handle)?
            && m.status == crate::store::MemberStatus::Inactive
        {
            return Ok(None);
        }
        Ok(Some(self.channel_ref(p, crate::message::BROADCAST)?))
    }

    /// Moves the unread ones among `shown` to read and refreshes their content with what was
    /// moved, so an edit that raced this call is either shown or turned into a correction.
    fn mark_read(&self, me: &Address, shown: &mut [Stored]) -> Result<()> {
        let unread: Vec<(MessageId, State)> = shown
            .iter()
            .filter(|s| s.state == State::Unread)
            .map(|s| (s.message.id, State::Unread))
            .collect();
        if unread.is_empty() {
            return Ok(());
        }
        let moved = self.store.transition(me, &unread, State::Read)?;
        let ids: Vec<MessageId> = unread.iter().map(|(id, _)| *id).collect();
        let now = self.store.get_many(me, &ids)?;
        // `unread` lists the unread ones among `shown`, in order: the same walk pairs them up.
        let slots = shown.iter_mut().filter(|s| s.state == State::Unread);
        for ((slot, moved), now) in slots.zip(moved).zip(now) {
            let Some(now) = now else {
                continue;
            };
            if moved {
                slot.message = now.message;
                slot.warnings = now.warnings;
            } else {
                // Cancelled or read by a concurrent reader: report its state as it is now.
                *slot = now;
            }
        }
        Ok(())
    }

    /// One message by id prefix; marks it read, and archives it with `archive`. An id that is
    /// no copy of the mailbox but a broadcast or channel entry of `me`'s project shows that
    /// entry, unchanged.
    pub fn read(&self, me: &Address, prefix: &str, archive: bool) -> Result<Read> {
        let found = match self.find_one(me, prefix, Fix::Inbox) {
            Err(e @ Error::MessageNotFound { .. }) => {
                // Not in the mailbox: a broadcast or channel entry of the project is shown as
                // it is (each is shown once by the listings; it has no state to move), so the
                // hook's "read all of it with `mailroom read ID`" works for one cut there.
                let entry = self.readable_entry(me, &super::check_prefix(prefix)?)?;
                return entry
                    .map(|stored| Read {
                        stored,
                        archived: false,
                    })
                    .ok_or(e);
            }
            other => other?,
        };
        let mut shown = [found];
        self.mark_read(me, &mut shown)?;
        let [stored] = shown;
        let archived = archive
            && stored.state.is_pending()
            && self
                .store
                .transition(me, &[(stored.message.id, State::Read)], State::Done)?
                .first()
                .copied()
                .unwrap_or(false);
        Ok(Read { stored, archived })
    }

    /// Answers a message to its sender; closes the original unless `keep_open`.
    pub fn reply(
        &self,
        me: &Address,
        prefix: &str,
        mut draft: Draft,
        keep_open: bool,
    ) -> Result<(Sent, bool)> {
        let original = match self.find_one(me, prefix, Fix::Inbox) {
            Err(e @ Error::MessageNotFound { .. }) => {
                // Not in the mailbox: perhaps a broadcast or a channel entry of the project.
                let entry = match me.project() {
                    Some(project) => {
                        self.find_in_channels(project, &super::check_prefix(prefix)?)?
                    }
                    None => None,
                };
                entry.ok_or(e)?
            }
            other => other?,
        };
        if draft.subject.is_none() {
            draft.subject = Some(reply_subject(&original.message.subject));
        }
        draft.to = vec![original.message.from.to_string()];
        // Only the operator closes its own copy of a hold request (by replying or `done`): an
        // agent's answer is no permission, so HUMAN's copy stays open.
        let sent = self.send_in_thread(me, draft, Some(&original.message))?;
        if original.message.is_channel_entry() {
            // A channel entry is not in the mailbox: nothing to close.
            return Ok((sent, false));
        }
        let closed = if keep_open {
            // Answered is at least read: its sender must no longer cancel or edit it in place.
            if original.state == State::Unread {
                self.store
                    .transition(me, &[(original.message.id, State::Unread)], State::Read)?;
            }
            false
        } else {
            self.close(me, &original)?
        };
        Ok((sent, closed))
    }

    fn close(&self, me: &Address, stored: &Stored) -> Result<bool> {
        if !stored.state.is_pending() {
            return Ok(false);
        }
        let moved = self
            .store
            .transition(me, &[(stored.message.id, stored.state)], State::Done)?;
        if moved.first() == Some(&true) {
            return Ok(true);
        }
        // Read by another process between our look and our move: try from read.
        Ok(self
            .store
            .transition(me, &[(stored.message.id, State::Read)], State::Done)?
            .first()
            .copied()
            .unwrap_or(false))
    }

    /// Archives the given messages; all ids are checked before any moves. Returns each id
    /// with whether this call archived it (false: it was already done).
    pub fn done(&self, me: &Address, prefixes: &[String]) -> Result<Vec<(MessageId, bool)>> {
        if prefixes.is_empty() {
            return Err(Error::InvalidWith {
                reason: "no message id named".into(),
                fix: Box::new(Fix::NameIds),
            });
        }
        if prefixes.len() > MAX_IDS {
            return Err(Error::Invalid(format!(
                "{} message ids named; one call archives at most {MAX_IDS}: archive the whole mailbox instead, or split the list",
                prefixes.len()
            )));
        }
        let targets: Vec<Stored> = prefixes
            .iter()
            .map(|p| match self.find_one(me, p, Fix::Inbox) {
                Err(e @ Error::MessageNotFound { .. }) => {
                    let entry = match me.project() {
                        Some(project) => self.find_in_channels(project, &super::check_prefix(p)?)?,
                        None => None,
                    };
                    Err(match entry.and_then(|s| s.message.channel.map(|c| (s.message.id, c))) {
                        Some((id, channel)) => Error::Refused(format!(
                            "{id} is an entry of channel {channel}: broadcasts and channel entries have no done step (each is shown once)"
                        )),
                        None => e,
                    })
                }
                other => other,
            })
            .collect::<Result<_>>()?;
        if let Some(c) = targets.iter().find(|s| s.state == State::Cancelled) {
            return Err(Error::WrongState {
                id: c.message.id,
                state: c.state,
                expected: "pending",
                hint: "its sender withdrew it before you read it",
            });
        }
        targets
            .iter()
            .map(|s| Ok((s.message.id, self.close(me, s)?)))
            .collect()
    }

    /// Archives every pending message (`done --all`, `archive`); returns how many moved.
    pub fn done_all(&self, me: &Address) -> Result<usize> {
        let pending = self.store.pending(me)?;
        let moves: Vec<(MessageId, State)> = pending
            .messages
            .iter()
            .map(|s| (s.message.id, s.state))
            .collect();
        let mut moved = self.store.transition(me, &moves, State::Done)?;
        // An unread copy another reader moved to read after the listing: archive it from there.
        let retry: Vec<usize> = (0..moves.len())
            .filter(|&i| moves[i].1 == State::Unread && !moved.get(i).copied().unwrap_or(true))
            .collect();
        let again: Vec<(MessageId, State)> =
            retry.iter().map(|&i| (moves[i].0, State::Read)).collect();
        for (i, m) in retry
            .iter()
            .zip(self.store.transition(me, &again, State::Done)?)
        {
            moved[*i] = m;
        }
        Ok(moved.into_iter().filter(|m| *m).count())
    }
}
