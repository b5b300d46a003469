//! Putting mail from other systems into the store, idempotently: every imported record gets
//! an id derived from where it came from, so a second import of the same source finds it and
//! adds nothing.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::Result;
use crate::interchange::stable_hash;
use crate::message::{ChannelRef, Kind, Message, MessageId, Priority, State};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::store::{Member, MemberStatus, Policy, Project};

/// A record read from another system, before it becomes a message.
#[derive(Clone, Debug)]
pub struct Foreign {
    /// Where it came from, unique within the source (a file and line, a file name).
    pub source_key: String,
    /// The sender as written there (`name`, `name@project`, `ORIGIN/NAME`, `HUMAN`).
    pub from: String,
    pub subject: String,
    pub body: String,
    pub kind: Kind,
    pub priority: Priority,
    pub date: Timestamp,
}

impl Mailroom<'_> {
    /// The message a foreign record becomes; `Err` says why its sender cannot be a handle.
    pub fn foreign_message(
        &self,
        record: &Foreign,
        project: Option<&Name>,
        to: Vec<Address>,
        channel: Option<ChannelRef>,
    ) -> std::result::Result<Message, String> {
        let written = match record.from.split_once('/') {
            // m_AI_l writes cross-project senders as ORIGIN/HANDLE.
            Some((origin, handle)) => format!("{handle}@{origin}"),
            None => record.from.clone(),
        };
        let fallback = Name::parse(crate::identity::DEFAULT_PROJECT).map_err(|e| e.to_string())?;
        let from = match project {
            Some(p) => self.import_sender(&written, p)?,
            // Outside any project (the operator's mailbox): where that handle is a member.
            None => self.import_sender_anywhere(&written, &fallback)?,
        };
        let id = MessageId::derived(record.date, stable_hash(&["import", &record.source_key]));
        let subject = crate::text::clean_line(&record.subject);
        Ok(Message {
            id,
            from,
            to,
            subject: if subject.is_empty() {
                crate::text::default_subject(&record.body)
            } else {
                subject
            },
            body: record.body.clone(),
            kind: record.kind,
            priority: record.priority,
            date: record.date,
            reply_to: None,
            thread: id,
            revision: 1,
            edited: None,
            channel,
        })
    }

    /// Delivers an imported message to `to` in `state` unless a copy is already there;
    /// returns whether it added one.
    pub fn import_mail(&self, to: &Address, message: &Message, state: State) -> Result<bool> {
        match self.store.state_of(to, message.id)? {
            // An import interrupted between delivering and archiving left it unread (nobody
            // has seen it since): finish what the source says.
            Some(State::Unread) if state != State::Unread => {
                self.store
                    .transition(to, &[(message.id, State::Unread)], state)?;
                return Ok(false);
            }
            Some(_) => return Ok(false),
            None => {}
        }
        if let Some(project) = to.project() {
            self.import_member(project, to.handle.as_str(), "", MemberStatus::Active)?;
        }
        let added = self.store.deliver(to, message)?;
        if added && state != State::Unread {
            self.store
                .transition(to, &[(message.id, State::Unread)], state)?;
        }
        Ok(added)
    }

    /// Leaves an imported outbox trace unless one is there; returns whether it added one.
    pub fn import_sent(&self, message: &Message) -> Result<bool> {
        if self
            .store
            .outbox(&message.from)?
            .iter()
            .any(|m| m.id == message.id)
        {
            return Ok(false);
        }
        self.store.record_sent(message)?;
        Ok(true)
    }

    /// Appends an imported channel entry (and retracts it when it was retracted there) unless
    /// it is there already.
    pub fn import_entry(
        &self,
        channel: &ChannelRef,
        message: &Message,
        retracted: bool,
    ) -> Result<bool> {
        self.ensure_open_project(&channel.project)?;
        let existing = self
            .store
            .entries(channel, true)?
            .messages
            .into_iter()
            .find(|s| s.message.id == message.id);
        if let Some(existing) = existing {
            // Interrupted between appending and retracting: finish the retraction.
            if retracted && existing.state != State::Retracted {
                self.store.retract(channel, message.id)?;
            }
            return Ok(false);
        }
        let added = self.store.append(channel, message)?;
        if added && retracted {
            self.store.retract(channel, message.id)?;
        }
        Ok(added)
    }

    /// Marks imported entries seen by `reader` (a seen set carried over).
    pub fn import_seen(
        &self,
        channel: &ChannelRef,
        reader: &Name,
        ids: &[MessageId],
    ) -> Result<usize> {
        Ok(self
            .store
            .mark_seen(channel, reader, ids)?
            .into_iter()
            .filter(|m| *m)
            .count())
    }

    /// Creates a project with `policy` unless it exists (an existing project keeps its own);
    /// returns whether it created it. Importers call it first, so a source's rule for unknown
    /// handles (m_AI_l's roster) outlives the import.
    pub fn import_project(&self, project: &Name, policy: Policy) -> Result<bool> {
        let (_, created) = self.store.ensure_project(&Project {
            name: project.clone(),
            policy,
            created: self.now(),
        })?;
        Ok(created)
    }

    /// Adds a member unless one with that handle exists (creating an open project on first
    /// use); returns whether it added.
    pub fn import_member(
        &self,
        project: &Name,
        handle: &str,
        role: &str,
        status: MemberStatus,
    ) -> Result<bool> {
        let Ok(handle) = Name::parse(handle) else {
            return Ok(false);
        };
        let now = self.now();
        self.store.ensure_project(&Project {
            name: project.clone(),
            policy: Policy::Open,
            created: now,
        })?;
        self.store.add_member(
            project,
            &Member {
                handle,
                role: crate::text::clean_line(role),
                status,
                joined: now,
                since: None,
            },
        )
    }

    /// The handle a name from another system becomes (see [`Mailroom::import_sender`]).
    pub fn import_handle(
        &self,
        written: &str,
        project: &Name,
    ) -> std::result::Result<Name, String> {
        self.import_sender(written, project).map(|a| a.handle)
    }
}
