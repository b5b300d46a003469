//! A sender changing its mind: edit in place while a copy is unread, a CORRECTION once it was
//! read, cancel while unread, and the outbox that shows which it will be. Invariant: only the
//! sender revises, and a read copy is never changed under its reader.

use crate::address::Address;
use crate::error::{Error, Fix, Result};
use crate::message::{Kind, Message, MessageId, Priority, State};
use crate::ops::Mailroom;
use crate::ops::reads::Reads;
use crate::ops::send::check_content;
use crate::text::clean_line;

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
    /// Things the editor should know (a trace that could not be updated), as a send says them.
    pub notices: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct CancelReport {
    pub id: MessageId,
    /// Each recipient and the state its copy is in now.
    pub outcomes: Vec<(Address, State)>,
    /// The recipients whose copy this call cancelled; a copy cancelled by an earlier call is
    /// `Cancelled` in `outcomes` and absent here, so a second cancel reports that it did nothing.
    pub cancelled_now: Vec<Address>,
}

/// A sent message with the state of each recipient's copy (`None`: no copy found).
#[derive(Clone, Debug)]
pub struct OutboxEntry {
    pub message: Message,
    pub recipients: Vec<(Address, Option<State>)>,
}

impl Mailroom<'_> {
    /// Edits a sent message: in place where still unread, else a CORRECTION in its thread.
    pub fn edit(&self, me: &Address, prefix: &str, patch: EditPatch) -> Result<EditReport> {
        if patch.subject.is_none() && patch.priority.is_none() && patch.body.is_none() {
            return Err(Error::InvalidWith {
                reason: "nothing to change".into(),
                fix: Box::new(Fix::GiveChanges),
            });
        }
        let old = self.sent_by_me(me, prefix, "edit")?;
        // An edit reaches the recipients (in place, or as a CORRECTION) like a send: the sender
        // must still be allowed to write, and to write into each recipient's project.
        let reads = Reads::default();
        self.plan_sender(&reads, me)?;
        for to in &old.to {
            if let Some(project) = to.project() {
                self.check_may_write_into(&reads, me, project)?;
            }
        }
        drop(reads);
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
                    let id = self.correction(me, to, &old, &new)?;
                    outcomes.push((to.clone(), EditOutcome::Corrected(id)));
                }
            }
        }
        // Best effort, like every outbox trace: the recipients have the edit, and the editor
        // is told, as a send tells its sender.
        let mut notices = Vec::new();
        if let Err(e) = self.store.record_sent(&new) {
            notices.push(format!(
                "the outbox trace could not be updated ({e}); the recipients have the edit"
            ));
        }
        Ok(EditReport {
            message: new,
            outcomes,
            notices,
        })
    }

    fn correction(
        &self,
        me: &Address,
        to: &Address,
        old: &Message,
        new: &Message,
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
        let (id, date) = self.stamp();
        let message = Message {
            id,
            from: me.clone(),
            to: vec![to.clone()],
            subject: crate::text::clean_line(&format!("CORRECTION: {}", new.subject)),
            body,
            kind: Kind::Correction,
            priority: new.priority,
            date,
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
        let mut cancelled_now = Vec::new();
        for to in &msg.to {
            let moved = self
                .store
                .transition(to, &[(msg.id, State::Unread)], State::Cancelled)?
                .first()
                .copied()
                .unwrap_or(false);
            if moved {
                cancelled_now.push(to.clone());
            }
            let state = if moved {
                State::Cancelled
            } else {
                self.store.state_of(to, msg.id)?.unwrap_or(State::Cancelled)
            };
            outcomes.push((to.clone(), state));
        }
        if cancelled_now.is_empty()
            && let Some((to, state)) = outcomes.iter().find(|(_, s)| *s != State::Cancelled)
        {
            return Err(Error::NotCancellable {
                id: msg.id,
                recipient: to.clone(),
                state: *state,
            });
        }
        Ok(CancelReport {
            id: msg.id,
            outcomes,
            cancelled_now,
        })
    }

    /// Sent messages, most recent last, with each recipient's state.
    pub fn outbox(&self, me: &Address, limit: Option<usize>) -> Result<Vec<OutboxEntry>> {
        let mut sent = self.store.outbox(me)?;
        sent.sort_by_key(|m| m.id);
        let skip = sent.len().saturating_sub(limit.unwrap_or(usize::MAX));
        let sent = sent.split_off(skip);
        // Every recipient of every message listed, as one question.
        let copies: Vec<(&Address, MessageId)> = sent
            .iter()
            .flat_map(|m| m.to.iter().map(move |to| (to, m.id)))
            .collect();
        let mut states = self.store.states(&copies)?.into_iter();
        Ok(sent
            .into_iter()
            .map(|message| {
                let n = message.to.len();
                let recipients = message
                    .to
                    .iter()
                    .cloned()
                    .zip(states.by_ref().take(n))
                    .collect();
                OutboxEntry {
                    message,
                    recipients,
                }
            })
            .collect())
    }
}
