//! The directed-mail lifecycle: unread → read → done, and what a sender may still do while a
//! copy is unread (edit in place, cancel) and after (a correction).

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::message::{Damaged, Kind, Listing, Message, MessageId, Priority, State, Stored};
use crate::ops::Mailroom;
use crate::ops::send::{Draft, Sent, check_content};
use crate::text::{clean_line, reply_subject};

/// What `inbox` shows.
#[derive(Clone, Debug)]
pub struct Inbox {
    /// Shown messages, most urgent first, each with the state it had before this call.
    pub messages: Vec<Stored>,
    /// Pending messages left out by the limit.
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

/// Changes an edit makes; `None` keeps the field.
#[derive(Clone, Debug, Default)]
pub struct EditPatch {
    pub subject: Option<String>,
    pub priority: Option<Priority>,
    pub body: Option<String>,
}

/// What an edit did at one recipient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditOutcome {
    /// The unread copy now reads as the new revision.
    Edited,
    /// The copy had been read: a CORRECTION with this id went to the recipient.
    Corrected(MessageId),
    /// The copy was cancelled; nothing was sent.
    Cancelled,
}

#[derive(Clone, Debug)]
pub struct EditReport {
    pub message: Message,
    pub outcomes: Vec<(Address, EditOutcome)>,
}

#[derive(Clone, Debug)]
pub struct CancelReport {
    pub id: MessageId,
    /// Each recipient and the state its copy is in now.
    pub outcomes: Vec<(Address, State)>,
}

/// A sent message with the state of each recipient's copy (`None`: no copy found).
#[derive(Clone, Debug)]
pub struct OutboxEntry {
    pub message: Message,
    pub recipients: Vec<(Address, Option<State>)>,
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

impl Mailroom<'_> {
    /// Pending directed mail, most urgent first; marks what it shows as read.
    pub fn inbox(&self, me: &Address, limit: Option<usize>) -> Result<Inbox> {
        let mut left = limit.unwrap_or(usize::MAX);
        self.take(
            me,
            |_| true,
            |_| {
                let fits = left > 0;
                left = left.saturating_sub(1);
                fits
            },
        )
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
        if let Some(m) = self.store.member(p, &me.handle)? {
            if m.status == crate::store::MemberStatus::Inactive {
                return Ok(None);
            }
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
        for ((id, _), moved) in unread.iter().zip(moved) {
            let Some(slot) = shown.iter_mut().find(|s| s.message.id == *id) else {
                continue;
            };
            if !moved {
                // Cancelled or read by a concurrent reader: report its state as it is now.
                if let Some(now) = self.store.get(me, *id)? {
                    *slot = now;
                }
                continue;
            }
            if let Some(fresh) = self.store.get(me, *id)? {
                slot.message = fresh.message;
                slot.warnings = fresh.warnings;
            }
        }
        Ok(())
    }

    /// One message by id prefix; marks it read, and archives it with `archive`.
    pub fn read(&self, me: &Address, prefix: &str, archive: bool) -> Result<Read> {
        let found = self.find_one(me, prefix, "inbox")?;
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
        let original = match self.find_one(me, prefix, "inbox") {
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
        let sent = self.send_in_thread(me, draft, Some(&original.message))?;
        self.close_hold_request(me, &original.message)?;
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

    /// An answered hold request is no longer open in the operator's mailbox.
    fn close_hold_request(&self, me: &Address, original: &Message) -> Result<()> {
        let human = Address::human();
        if original.kind != Kind::HoldRequest || *me == human {
            return Ok(());
        }
        for from in [State::Unread, State::Read] {
            if self
                .store
                .transition(&human, &[(original.id, from)], State::Done)?
                .first()
                == Some(&true)
            {
                break;
            }
        }
        Ok(())
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
            return Err(Error::Invalid(
                "name at least one message id, or pass --all".into(),
            ));
        }
        let targets: Vec<Stored> = prefixes
            .iter()
            .map(|p| match self.find_one(me, p, "inbox") {
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

    /// The sent message `prefix` names, for its sender; someone else's is refused.
    fn sent_by_me(&self, me: &Address, prefix: &str, action: &'static str) -> Result<Message> {
        let p = super::check_prefix(prefix)?;
        let mut mine: Vec<Message> = self
            .store
            .outbox(me)?
            .into_iter()
            .filter(|m| m.id.to_string().starts_with(&p))
            .collect();
        match mine.len() {
            1 => {
                let m = mine.remove(0);
                if let Some(c) = &m.channel {
                    return Err(Error::Refused(if c.is_broadcast() {
                        format!(
                            "message {} is a broadcast; broadcasts are never edited or cancelled: retract it with `mailroom retract {}` and broadcast again",
                            m.id, m.id
                        )
                    } else {
                        format!(
                            "message {} is an entry of channel {c}, and channel entries are never edited or deleted; post a correction to the channel instead",
                            m.id
                        )
                    }));
                }
                return Ok(m);
            }
            n if n > 1 => {
                return Err(Error::AmbiguousId {
                    prefix: p,
                    candidates: mine.iter().map(|m| m.id.to_string()).collect(),
                });
            }
            _ => {}
        }
        if let Ok(theirs) = self.find_one(me, &p, "outbox") {
            return Err(Error::NotSender {
                id: theirs.message.id,
                sender: theirs.message.from,
                action,
            });
        }
        if let Some(project) = me.project() {
            if let Some(entry) = self.find_in_channels(project, &p)? {
                return Err(Error::Refused(format!(
                    "message {} is an entry of channel {} posted by {}; channel entries are never edited or deleted, by anyone",
                    entry.message.id,
                    entry
                        .message
                        .channel
                        .map(|c| c.to_string())
                        .unwrap_or_default(),
                    entry.message.from
                )));
            }
        }
        Err(Error::MessageNotFound {
            prefix: p,
            mailbox: me.clone(),
            hint: "outbox",
        })
    }

    /// Edits a sent message: in place where still unread, else a CORRECTION in its thread.
    pub fn edit(&self, me: &Address, prefix: &str, patch: EditPatch) -> Result<EditReport> {
        if patch.subject.is_none() && patch.priority.is_none() && patch.body.is_none() {
            return Err(Error::Invalid(
                "nothing to change: pass --subject, --priority or --message".into(),
            ));
        }
        let old = self.sent_by_me(me, prefix, "edit")?;
        let subject = patch
            .subject
            .as_deref()
            .map(clean_line)
            .unwrap_or(old.subject.clone());
        let body = patch.body.clone().unwrap_or(old.body.clone());
        let (subject, body) = check_content(Some(&subject), &body)?;
        let now = self.now();
        let new = Message {
            subject,
            body,
            priority: patch.priority.unwrap_or(old.priority),
            revision: old.revision + 1,
            edited: Some(now),
            channel: None,
            ..old.clone()
        };
        let mut outcomes = Vec::new();
        for to in &old.to {
            if self.store.replace_unread(to, &new)? {
                outcomes.push((to.clone(), EditOutcome::Edited));
                continue;
            }
            match self.store.state_of(to, old.id)? {
                Some(State::Cancelled) => outcomes.push((to.clone(), EditOutcome::Cancelled)),
                _ => {
                    let id = self.correction(me, to, &old, &new, now)?;
                    outcomes.push((to.clone(), EditOutcome::Corrected(id)));
                }
            }
        }
        if let Err(e) = self.store.record_sent(&new) {
            // Best effort, like every outbox trace: the recipients have the edit.
            let _ = e;
        }
        Ok(EditReport {
            message: new,
            outcomes,
        })
    }

    fn correction(
        &self,
        me: &Address,
        to: &Address,
        old: &Message,
        new: &Message,
        now: Timestamp,
    ) -> Result<MessageId> {
        let mut changes = Vec::new();
        if new.subject != old.subject {
            changes.push(format!("subject is now: {}", new.subject));
        }
        if new.priority != old.priority {
            changes.push(format!("priority is now: {}", new.priority));
        }
        let mut body = format!(
            "Correction to message {} (\"{}\"), which you had already read.\n",
            old.id, old.subject
        );
        for c in &changes {
            body.push_str(&format!("- {c}\n"));
        }
        if new.body != old.body {
            body.push_str("\nThe corrected text:\n\n");
            body.push_str(&new.body);
        }
        let id = MessageId::generate();
        let message = Message {
            id,
            from: me.clone(),
            to: vec![to.clone()],
            subject: crate::text::clean_line(&format!("CORRECTION: {}", new.subject)),
            body,
            kind: Kind::Correction,
            priority: new.priority,
            date: now,
            reply_to: Some(old.id),
            thread: old.thread,
            revision: 1,
            edited: None,
            channel: None,
        };
        self.store.deliver(to, &message)?;
        let _ = self.store.record_sent(&message);
        Ok(id)
    }

    /// Withdraws a sent message from every recipient that has not read it.
    pub fn cancel(&self, me: &Address, prefix: &str) -> Result<CancelReport> {
        let msg = self.sent_by_me(me, prefix, "cancel")?;
        let mut outcomes = Vec::new();
        let mut cancelled_any = false;
        for to in &msg.to {
            let moved = self
                .store
                .transition(to, &[(msg.id, State::Unread)], State::Cancelled)?
                .first()
                .copied()
                .unwrap_or(false);
            cancelled_any |= moved;
            let state = if moved {
                State::Cancelled
            } else {
                self.store.state_of(to, msg.id)?.unwrap_or(State::Cancelled)
            };
            outcomes.push((to.clone(), state));
        }
        if !cancelled_any {
            if let Some((to, state)) = outcomes.iter().find(|(_, s)| *s != State::Cancelled) {
                return Err(Error::NotCancellable {
                    id: msg.id,
                    recipient: to.clone(),
                    state: *state,
                });
            }
        }
        Ok(CancelReport {
            id: msg.id,
            outcomes,
        })
    }

    /// Sent messages, most recent last, with each recipient's state.
    pub fn outbox(&self, me: &Address, limit: Option<usize>) -> Result<Vec<OutboxEntry>> {
        let mut sent = self.store.outbox(me)?;
        sent.sort_by_key(|m| m.id);
        let skip = sent.len().saturating_sub(limit.unwrap_or(usize::MAX));
        sent.into_iter()
            .skip(skip)
            .map(|message| {
                let recipients = message
                    .to
                    .iter()
                    .map(|to| Ok((to.clone(), self.store.state_of(to, message.id)?)))
                    .collect::<Result<_>>()?;
                Ok(OutboxEntry {
                    message,
                    recipients,
                })
            })
            .collect()
    }

    /// Recently archived messages, most recent first, with when each was archived.
    pub fn recover(&self, me: &Address, limit: usize) -> Result<Vec<(Stored, Timestamp)>> {
        self.store.recently_archived(me, limit)
    }

    /// Puts an archived message back to pending (read), so it is delivered again.
    pub fn restore(&self, me: &Address, prefix: &str) -> Result<Stored> {
        let found = self.find_one(me, prefix, "recover")?;
        if found.state != State::Done {
            return Err(Error::WrongState {
                id: found.message.id,
                state: found.state,
                expected: "done",
                hint: "only archived mail can be restored",
            });
        }
        self.store
            .transition(me, &[(found.message.id, State::Done)], State::Read)?;
        self.store
            .get(me, found.message.id)?
            .ok_or_else(|| Error::MessageNotFound {
                prefix: prefix.to_owned(),
                mailbox: me.clone(),
                hint: "recover",
            })
    }

    /// A note to one's own next session.
    pub fn handover(
        &self,
        me: &Address,
        body: String,
        subject: Option<String>,
        priority: Priority,
    ) -> Result<Sent> {
        let subject = subject.or_else(|| {
            let first = crate::text::default_subject(&body);
            Some(format!("Handover: {first}"))
        });
        self.send(
            me,
            Draft {
                to: vec![me.to_string()],
                subject,
                body,
                kind: Kind::Handover,
                priority,
                ..Draft::default()
            },
        )
    }

    /// Messages in the mailbox (every state) and in the outbox whose subject or body contains
    /// `query`, case-insensitively, oldest first.
    pub fn search(&self, me: &Address, query: &str) -> Result<Search> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Err(Error::Invalid("the search query is empty".into()));
        }
        let matches = |m: &Message| {
            m.subject.to_lowercase().contains(&q) || m.body.to_lowercase().contains(&q)
        };
        let Listing { messages, damaged } = self.store.everything(me)?;
        let mut hits: Vec<SearchHit> = messages
            .into_iter()
            .filter(|s| matches(&s.message))
            .map(|stored| SearchHit {
                stored,
                sent: false,
            })
            .collect();
        if let Some(project) = me.project() {
            for name in self.store.channels(project)? {
                let channel = crate::message::ChannelRef {
                    project: project.clone(),
                    name,
                };
                for stored in self.store.entries(&channel, false)?.messages {
                    if matches(&stored.message) {
                        hits.push(SearchHit {
                            stored,
                            sent: false,
                        });
                    }
                }
            }
        }
        for message in self.store.outbox(me)? {
            if !matches(&message) || hits.iter().any(|h| h.stored.message.id == message.id) {
                continue;
            }
            let state = match message.to.first() {
                Some(to) => self.store.state_of(to, message.id)?,
                None => None,
            };
            hits.push(SearchHit {
                stored: Stored {
                    state: state.unwrap_or(State::Done),
                    message,
                    warnings: vec![],
                },
                sent: true,
            });
        }
        hits.sort_by_key(|h| h.stored.message.id);
        Ok(Search { hits, damaged })
    }
}

/// One search result.
#[derive(Clone, Debug)]
pub struct SearchHit {
    /// For sent mail, the state is that of the first recipient's copy.
    pub stored: Stored,
    /// True when found in the outbox rather than the mailbox.
    pub sent: bool,
}

#[derive(Clone, Debug)]
pub struct Search {
    pub hits: Vec<SearchHit>,
    pub damaged: Vec<Damaged>,
}
