//! Putting mail from other systems into the store, idempotently: every imported record gets
//! an id derived from where it came from, so a second import of the same source finds it and
//! adds nothing.

use crate::address::Address;
use crate::error::Result;
pub use crate::interchange::Foreign;
use crate::interchange::{Disposition, derived_id};
use crate::message::{BROADCAST, ChannelRef, Message, MessageId, State};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::store::{Member, MemberStatus, Policy, Project};
use crate::text::MAX_BODY_BYTES;

/// What importing one record did.
#[derive(Clone, Debug)]
pub struct Imported {
    /// Whether it added the message (`false`: a re-import found it).
    pub added: bool,
    pub id: MessageId,
    pub from: Address,
}

impl Mailroom<'_> {
    /// Imports one record where its disposition says: a copy for its recipient (unread or
    /// archived), a trace in its sender's outbox, or an entry of `project`'s broadcast channel
    /// (retracted or not). `scope` is the project the record was found in, `None` for mail found
    /// outside any (the operator's mailbox), where `project` only stands in for names that
    /// belong nowhere. `Ok(Err(reason))`: this record is skipped, and why.
    ///
    /// `importer` is who runs the import: an import writes as its records' senders, so mail
    /// from `HUMAN` is imported only by `HUMAN`, and a record is written into a project only
    /// when [`Mailroom::check_may_import`] lets the importer write there. Front ends check the
    /// projects they import into before their first write, so such a skip is a record that
    /// names another project.
    pub fn import_record(
        &self,
        importer: Option<&Address>,
        record: &Foreign,
        scope: Option<&Name>,
        project: &Name,
    ) -> Result<std::result::Result<Imported, String>> {
        let (to, channel) = match record.disposition {
            Disposition::Broadcast | Disposition::Retracted => {
                (vec![], Some(self.channel_ref(project, BROADCAST)?))
            }
            Disposition::Pending | Disposition::Archived | Disposition::Sent => {
                let Some(written) = record.to.as_deref() else {
                    return Ok(Err("no recipient; skipped".into()));
                };
                match self.import_sender(written, project) {
                    Ok(to) => (vec![to], None),
                    Err(e) => return Ok(Err(e)),
                }
            }
        };
        let message = match self.foreign_message(record, scope, to, channel) {
            Ok(m) => m,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(reason) = self.import_refusal(importer, &message)? {
            return Ok(Err(reason));
        }
        let added = match (&message.channel, message.to.first()) {
            (Some(all), _) => {
                self.import_entry(all, &message, record.disposition == Disposition::Retracted)?
            }
            (None, Some(_)) if record.disposition == Disposition::Sent => {
                self.import_sent(&message)?
            }
            (None, Some(to)) => {
                let state = if record.disposition == Disposition::Pending {
                    State::Unread
                } else {
                    State::Done
                };
                self.import_mail(to, &message, state)?
            }
            (None, None) => return Ok(Err("no recipient; skipped".into())),
        };
        Ok(Ok(Imported {
            added,
            id: message.id,
            from: message.from,
        }))
    }

    /// The message a foreign record becomes; `Err` says why it cannot be one (its sender
    /// cannot be a handle, its body is over the limit the store reads back).
    pub fn foreign_message(
        &self,
        record: &Foreign,
        project: Option<&Name>,
        to: Vec<Address>,
        channel: Option<ChannelRef>,
    ) -> std::result::Result<Message, String> {
        if record.body.len() > MAX_BODY_BYTES {
            return Err(format!(
                "the body is {} bytes, over mailroom's limit of {MAX_BODY_BYTES} bytes (1 MiB); skipped",
                record.body.len()
            ));
        }
        let fallback = Name::parse(crate::identity::DEFAULT_PROJECT).map_err(|e| e.to_string())?;
        let from = match project {
            Some(p) => self.import_sender(&record.from, p)?,
            // Outside any project (the operator's mailbox): where that handle is a member.
            None => self.import_sender_anywhere(&record.from, &fallback)?,
        };
        let subject = crate::text::clean_line(&record.subject);
        let mut message = Message {
            id: MessageId::generate(),
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
            thread: MessageId::generate(),
            revision: 1,
            edited: None,
            channel,
        };
        message.id = derived_id(&record.id_key, &message);
        message.thread = message.id;
        Ok(message)
    }

    /// Why `importer` may not import `message`, if it may not: mail from `HUMAN` is imported
    /// only by `HUMAN` (anyone else would make the operator say it), and the project it is
    /// written into must take an import from `importer`.
    pub(crate) fn import_refusal(
        &self,
        importer: Option<&Address>,
        message: &Message,
    ) -> Result<Option<String>> {
        if message.from.is_human() && !importer.is_some_and(Address::is_human) {
            return Ok(Some(
                "sent by HUMAN, and only HUMAN imports the operator's mail (run the import with --as HUMAN); skipped"
                    .into(),
            ));
        }
        let into = match &message.channel {
            Some(c) => Some(&c.project),
            None => message.to.first().and_then(Address::project),
        };
        if let Some(project) = into {
            match self.check_may_import(importer, project, Policy::Open) {
                Ok(()) => {}
                Err(e) if e.kind() == crate::error::ErrorKind::Refused => {
                    return Ok(Some(format!("{e}; skipped")));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
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
    /// use); returns whether it added. `HUMAN` is never a member: it is refused with `false`.
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
        if handle.matches(crate::address::HUMAN) {
            return Ok(false);
        }
        Ok(self.enlist(project, handle, role, status)?.1)
    }

    /// Writes a new member of `project` (creating it open on first use) unless one with that
    /// handle is there: the member as written, and whether it was added.
    pub(crate) fn enlist(
        &self,
        project: &Name,
        handle: Name,
        role: &str,
        status: MemberStatus,
    ) -> Result<(Member, bool)> {
        let now = self.now();
        self.store.ensure_project(&Project {
            name: project.clone(),
            policy: Policy::Open,
            created: now,
        })?;
        let member = Member {
            handle,
            // Imported roles are cut, never refused: the roster file must stay readable.
            role: crate::text::clean_line(role)
                .chars()
                .take(crate::text::MAX_ROLE_CHARS)
                .collect(),
            status,
            joined: now,
            since: None,
        };
        let added = self.store.add_member(project, &member)?;
        Ok((member, added))
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
