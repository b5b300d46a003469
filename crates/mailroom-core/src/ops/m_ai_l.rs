//! m_AI_l's ways of naming and reading mail, for front ends that speak its tools: a sent message
//! named by its minute (`YYYYMMDD-HHMM`, UTC) and subject, a read that archives what it shows,
//! and joining a project that may not exist yet. Invariant: a minute and subject name one
//! message or are an error that says why; among several it never picks one.

use crate::address::{Address, AddressSpec};
use crate::error::{Error, Fix, Result};
use crate::message::{MessageId, State};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::lifecycle::Inbox;
use crate::store::{Member, MemberStatus, Policy, Project};

impl Mailroom<'_> {
    /// The one message `me` sent at `timestamp` (`YYYYMMDD-HHMM`, UTC) with `subject`, to
    /// `recipient` when given (a handle, `handle@project` or `HUMAN`).
    pub fn sent_at(
        &self,
        me: &Address,
        recipient: Option<&str>,
        timestamp: &str,
        subject: &str,
    ) -> Result<MessageId> {
        let stamp = timestamp.trim();
        let well_formed = stamp.len() == 13
            && stamp.bytes().enumerate().all(|(i, b)| match i {
                8 => b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !well_formed {
            return Err(Error::Invalid(format!(
                "'{timestamp}' is not a timestamp; write YYYYMMDD-HHMM in UTC, as write_mail returned it, or name the message by its id"
            )));
        }
        let to = recipient
            .map(|r| {
                AddressSpec::parse(r).map_err(|source| Error::InvalidAddress {
                    input: r.to_owned(),
                    source,
                })
            })
            .transpose()?;
        let subject = subject.trim();
        let matching: Vec<MessageId> = self
            .store
            .outbox(me)?
            .into_iter()
            .filter(|m| m.channel.is_none())
            .filter(|m| m.date.strftime("%Y%m%d-%H%M").to_string() == stamp)
            .filter(|m| m.subject.trim() == subject)
            .filter(|m| {
                to.as_ref().is_none_or(|spec| {
                    m.to.iter().any(|a| {
                        if spec.is_human() {
                            return a.is_human();
                        }
                        a.handle == spec.handle
                            && spec.project.as_ref().is_none_or(|p| a.project() == Some(p))
                    })
                })
            })
            .map(|m| m.id)
            .collect();
        match matching.as_slice() {
            [one] => Ok(*one),
            [] => Err(Error::MessageNotFound {
                prefix: format!("{stamp} \"{subject}\""),
                mailbox: me.clone(),
                list: Box::new(Fix::Outbox),
            }),
            several => Err(Error::AmbiguousId {
                prefix: format!("{stamp} \"{subject}\""),
                candidates: several.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// `inbox`, then, with `archive`, the directed mail it showed archived (done), as m_AI_l's
    /// read does; returns the listing (states as they were before this call) and how many
    /// messages were archived. Broadcasts have no done step: they are only marked seen.
    pub fn read_archiving(
        &self,
        me: &Address,
        limit: Option<usize>,
        archive: bool,
    ) -> Result<(Inbox, usize)> {
        let inbox = self.inbox(me, limit)?;
        if !archive {
            return Ok((inbox, 0));
        }
        let moves: Vec<(MessageId, State)> = inbox
            .messages
            .iter()
            .filter(|s| !s.message.is_channel_entry())
            .map(|s| (s.message.id, State::Read))
            .collect();
        let moved = self.store.transition(me, &moves, State::Done)?;
        Ok((inbox, moved.into_iter().filter(|m| *m).count()))
    }

    /// Puts `handle` on the roster of `project`, creating the project (policy `open`) when it
    /// does not exist yet; returns the entry and whether the project was created.
    pub fn join(
        &self,
        actor: &Address,
        project: &str,
        handle: &str,
        role: &str,
        status: MemberStatus,
    ) -> Result<(Member, bool)> {
        let name = Name::parse(project).map_err(|source| Error::InvalidName {
            what: "project",
            input: project.to_owned(),
            source,
        })?;
        let handle_name = Name::parse(handle).map_err(|source| Error::InvalidName {
            what: "handle",
            input: handle.to_owned(),
            source,
        })?;
        if handle_name.matches(crate::address::HUMAN) {
            // Checked before the project is created: a refused join leaves nothing behind.
            return Err(Error::Invalid(
                "HUMAN is the operator's global mailbox and cannot join a roster".into(),
            ));
        }
        let (project, created) = self.store.ensure_project(&Project {
            name,
            policy: Policy::Open,
            created: self.now(),
        })?;
        let member = self.add_member(actor, &project.name, handle, role, status)?;
        Ok((member, created))
    }
}
