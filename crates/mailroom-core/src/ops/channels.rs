//! Channels: append-only streams in a project, each reader with its own seen set. `all` is
//! the broadcast channel (shown in every member's inbox, retractable by its sender); any other
//! name is a run mailbox in the mailbox protocol's sense.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Fix, Result};
use crate::interchange::{
    Disposition, Foreign, IdKey, Problem, content_key, mailbox_md, written_address,
};
use crate::message::{BROADCAST, ChannelRef, Kind, Listing, Message, MessageId, State, Stored};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::reads::Reads;
use crate::ops::send::{Draft, Sent, check_content, check_key};
use crate::store::KeyClaim;

/// A channel and how much of it a reader has not seen.
#[derive(Clone, Debug)]
pub struct ChannelSummary {
    pub channel: ChannelRef,
    pub entries: usize,
    pub unseen: usize,
}

/// What `channel read` shows: entries this call marked seen, oldest first.
#[derive(Clone, Debug)]
pub struct ChannelRead {
    pub channel: ChannelRef,
    pub messages: Vec<Stored>,
    /// Unseen entries left for the next read by the limit.
    pub more: usize,
    pub damaged: Vec<crate::message::Damaged>,
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    pub imported: usize,
    /// Entries already in the channel (a re-import), left alone.
    pub duplicates: usize,
    pub problems: Vec<Problem>,
}

/// Whether a HOLD_REQUEST from `me` must also reach HUMAN: it waits for a human, and HUMAN is
/// neither its sender nor among its recipients.
pub(crate) fn forwards_to_human(me: &Address, message: &Message) -> bool {
    let human = Address::human();
    message.kind == Kind::HoldRequest && *me != human && !message.to.contains(&human)
}

/// The name `me` keeps its seen set under in `channel`: its handle when it is a member of the
/// channel's project, `HUMAN` for the operator. A reader from another project has no seen set
/// there (its handle is another mailbox's in that project): it marks nothing and sees every
/// entry as unseen.
fn reader<'a>(me: &'a Address, channel: &ChannelRef) -> Option<&'a Name> {
    match me.project() {
        None => Some(&me.handle),
        Some(p) if *p == channel.project => Some(&me.handle),
        Some(_) => None,
    }
}

impl Mailroom<'_> {
    /// The channel `name` of `project`, validated.
    pub fn channel_ref(&self, project: &Name, name: &str) -> Result<ChannelRef> {
        let name = Name::parse(name).map_err(|source| Error::InvalidName {
            what: "channel",
            input: name.to_owned(),
            source,
        })?;
        Ok(ChannelRef {
            project: project.clone(),
            name,
        })
    }

    /// A channel that exists, spelled as it was first written: `all` always does (a project's
    /// broadcasts), any other once something was posted to it. Reading a name nobody posted to
    /// is a typo, not an empty channel.
    fn existing_channel(&self, me: &Address, project: &Name, name: &str) -> Result<ChannelRef> {
        let project = self.existing_project(me, project)?;
        let (channel, exists) = self.spelled_channel(&project, name)?;
        if exists || channel.is_broadcast() {
            return Ok(channel);
        }
        Err(Error::ChannelNotFound {
            channel: channel.name.to_string(),
            project: project.to_string(),
        })
    }

    /// The channel `name` of `project` spelled as the store has it, and whether it exists.
    fn spelled_channel(&self, project: &Name, name: &str) -> Result<(ChannelRef, bool)> {
        let mut channel = self.channel_ref(project, name)?;
        if let Some(p) = self.store.project(project)? {
            channel.project = p.name;
        }
        match self
            .store
            .channels(&channel.project)?
            .into_iter()
            .find(|c| *c == channel.name)
        {
            Some(stored) => {
                channel.name = stored;
                Ok((channel, true))
            }
            None => {
                if channel.is_broadcast() {
                    channel.name = Name::parse(BROADCAST).map_err(|source| Error::InvalidName {
                        what: "channel",
                        input: BROADCAST.to_owned(),
                        source,
                    })?;
                }
                Ok((channel, false))
            }
        }
    }

    /// `project` spelled as first written, when it exists; the implicit `default` project and
    /// the reader's own project (made by its first send) read as empty until then. Any other
    /// unknown project is not found: a typo is not an empty project.
    fn existing_project(&self, me: &Address, project: &Name) -> Result<Name> {
        if let Some(p) = self.store.project(project)? {
            return Ok(p.name);
        }
        if project.matches(crate::identity::DEFAULT_PROJECT) || me.project() == Some(project) {
            return Ok(project.clone());
        }
        Err(self.unknown_project(project)?)
    }

    /// Posts to a channel of `project`; `all` is a broadcast. A HOLD_REQUEST also reaches HUMAN.
    /// A new channel whose name is one typo from an existing one is refused (see
    /// [`Mailroom::post_new`]).
    pub fn post(&self, me: &Address, project: &Name, channel: &str, draft: Draft) -> Result<Sent> {
        self.post_to(me, project, channel, draft, false)
    }

    /// [`Mailroom::post`] that starts the channel even when its name is close to an existing
    /// channel's: the explicit way to create `notes2` beside `notes`.
    pub fn post_new(
        &self,
        me: &Address,
        project: &Name,
        channel: &str,
        draft: Draft,
    ) -> Result<Sent> {
        self.post_to(me, project, channel, draft, true)
    }

    fn post_to(
        &self,
        me: &Address,
        project: &Name,
        channel: &str,
        draft: Draft,
        on_purpose: bool,
    ) -> Result<Sent> {
        let (channel, exists) = self.spelled_channel(project, channel)?;
        if !exists && !on_purpose && !channel.is_broadcast() {
            let names = self.store.channels(&channel.project)?;
            if let Some(close) = super::typos::closest(&channel.name, &names) {
                return Err(Error::NotFoundWith {
                    reason: format!(
                        "project '{}' has no channel '{}', and '{close}' is close to it (did you mean '{close}'?)",
                        channel.project, channel.name
                    ),
                    fix: Box::new(Fix::NewChannel {
                        channel: channel.name.to_string(),
                    }),
                });
            }
        }
        let (subject, body) = check_content(draft.subject.as_deref(), &draft.body)?;
        if let Some(key) = &draft.idempotency_key {
            check_key(key)?;
        }
        // The checks read each project file and roster entry once.
        let reads = Reads::default();
        let sender_plan = self.plan_sender(&reads, me)?;
        let in_project = match me.project() {
            Some(p) if p == project => None,
            _ => {
                self.check_may_write_into(&reads, me, project)?;
                Some(self.plan_project(&reads, project)?)
            }
        };
        drop(reads);
        let (id, now) = self.stamp();
        let message = Message {
            id,
            from: me.clone(),
            to: vec![],
            subject,
            body,
            kind: draft.kind,
            priority: draft.priority,
            date: now,
            reply_to: None,
            thread: id,
            revision: 1,
            edited: None,
            channel: Some(channel.clone()),
        };
        let mut notices = Vec::new();
        self.apply_plan(&sender_plan, now, &mut notices)?;
        if let Some(plan) = &in_project {
            self.apply_plan(plan, now, &mut notices)?;
        }
        if let Some(key) = &draft.idempotency_key
            && let KeyClaim::Existing(first) = self.store.claim_key(me, key, id)?
        {
            let original = self.store.sent(me, first)?;
            let message = original.unwrap_or_else(|| Message {
                id: first,
                thread: first,
                ..message.clone()
            });
            if self.store.append(&channel, &message)?
                && let Some(r) = reader(me, &channel)
            {
                self.store.mark_seen(&channel, r, &[first])?;
            }
            notices.push(format!(
                    "this idempotency key was used before; message {first} stands and nothing new was posted"
                ));
            return Ok(Sent {
                message,
                notices,
                duplicate: true,
                delivered_now: vec![],
            });
        }
        // Its sender has seen it: a broadcast is never delivered back to the one who sent it,
        // not even to its own inbox running at the same moment (so the mark comes first).
        if let Some(r) = reader(me, &channel) {
            self.store.mark_seen(&channel, r, &[id])?;
        }
        self.store.append(&channel, &message)?;
        if let Err(e) = self.store.record_sent(&message) {
            notices.push(format!(
                "the outbox trace could not be written ({e}); the message was posted"
            ));
        }
        self.forward_hold_request(me, &message, &mut notices)?;
        Ok(Sent {
            message,
            notices,
            duplicate: false,
            delivered_now: vec![],
        })
    }

    /// Posts to the project's broadcast channel.
    pub fn broadcast(&self, me: &Address, project: &Name, draft: Draft) -> Result<Sent> {
        self.post(me, project, BROADCAST, draft)
    }

    /// A HOLD_REQUEST waits for a human: the operator's mailbox gets it too.
    pub(crate) fn forward_hold_request(
        &self,
        me: &Address,
        message: &Message,
        notices: &mut Vec<String>,
    ) -> Result<()> {
        let human = Address::human();
        if !forwards_to_human(me, message) {
            return Ok(());
        }
        if message.to.is_empty() {
            // A channel entry: HUMAN's copy is directed mail to HUMAN, with a done step.
            let copy = Message {
                to: vec![human.clone()],
                ..message.clone()
            };
            self.store.deliver(&human, &copy)?;
        } else {
            self.store.deliver(&human, message)?;
        }
        notices.push("the hold request is also in the HUMAN mailbox".into());
        Ok(())
    }

    /// Unseen entries of a channel for `me`, oldest first; marks what it shows seen. Of two
    /// concurrent readers as the same member, each entry is shown by exactly one.
    pub fn channel_read(
        &self,
        me: &Address,
        project: &Name,
        channel: &str,
        limit: Option<usize>,
    ) -> Result<ChannelRead> {
        let channel = self.existing_channel(me, project, channel)?;
        let Listing {
            mut messages,
            damaged,
        } = self.unseen_by(me, &channel)?;
        let shown = limit.unwrap_or(usize::MAX).min(messages.len());
        let more = messages.len() - shown;
        messages.truncate(shown);
        if let Some(r) = reader(me, &channel) {
            let ids: Vec<MessageId> = messages.iter().map(|s| s.message.id).collect();
            let claimed = self.store.mark_seen(&channel, r, &ids)?;
            let mut claimed = claimed.into_iter();
            messages.retain(|_| claimed.next().unwrap_or(false));
        }
        Ok(ChannelRead {
            channel,
            messages,
            more,
            damaged,
        })
    }

    /// Every entry of a channel, oldest first, as `me` sees it: `read` when seen, `unread`
    /// when not; a retracted entry only for its sender and those who had seen it.
    pub fn channel_show(
        &self,
        me: &Address,
        project: &Name,
        channel: &str,
    ) -> Result<(ChannelRef, Listing)> {
        let channel = self.existing_channel(me, project, channel)?;
        let mut listing = self.store.entries(&channel, true)?;
        let seen: std::collections::HashSet<MessageId> = match reader(me, &channel) {
            Some(r) => self.store.seen(&channel, r)?.into_iter().collect(),
            None => Default::default(),
        };
        listing.messages.retain_mut(|s| {
            let was_seen = seen.contains(&s.message.id);
            if s.state == State::Retracted {
                return was_seen || s.message.from == *me;
            }
            s.state = if was_seen { State::Read } else { State::Unread };
            true
        });
        Ok((channel, listing))
    }

    /// The channels of a project with their sizes and what `me` has not seen.
    pub fn channel_list(&self, me: &Address, project: &Name) -> Result<Vec<ChannelSummary>> {
        let project = self.existing_project(me, project)?;
        let mut out = Vec::new();
        for name in self.store.channels(&project)? {
            let channel = ChannelRef {
                project: project.clone(),
                name,
            };
            let entries = self.store.entries(&channel, false)?.messages.len();
            let unseen = self.unseen_by(me, &channel)?.messages.len();
            out.push(ChannelSummary {
                channel,
                entries,
                unseen,
            });
        }
        Ok(out)
    }

    /// The entries of `channel` that `me` has not seen: every standing entry for a reader
    /// without a seen set there.
    fn unseen_by(&self, me: &Address, channel: &ChannelRef) -> Result<Listing> {
        match reader(me, channel) {
            Some(r) => self.store.unseen(channel, r),
            None => {
                let mut all = self.store.entries(channel, false)?;
                for s in &mut all.messages {
                    s.state = State::Unread;
                }
                Ok(all)
            }
        }
    }

    /// Un-sends one's own broadcast: those who saw it keep it, nobody new gets it.
    pub fn retract(&self, me: &Address, project: &Name, prefix: &str) -> Result<Message> {
        let p = super::check_prefix(prefix)?;
        let all = self.channel_ref(project, BROADCAST)?;
        let entries = self.store.entries(&all, true)?;
        let matching: Vec<&Stored> = entries
            .messages
            .iter()
            .filter(|s| s.message.id.to_string().starts_with(&p))
            .collect();
        let target = match matching.as_slice() {
            [one] => *one,
            [] => {
                if let Some(mine) = self
                    .store
                    .outbox(me)?
                    .into_iter()
                    .find(|m| m.id.to_string().starts_with(&p))
                {
                    return Err(match &mine.channel {
                        Some(c) => Error::Refused(format!(
                            "message {} was posted to channel {c}, whose entries are never retracted or deleted; post a correction instead",
                            mine.id
                        )),
                        None => Error::RefusedWith {
                            reason: format!(
                                "message {} is directed mail, not a broadcast",
                                mine.id
                            ),
                            fix: Box::new(Fix::Cancel { id: mine.id }),
                        },
                    });
                }
                return Err(Error::MessageNotFound {
                    prefix: p,
                    mailbox: me.clone(),
                    list: Box::new(Fix::Broadcasts),
                });
            }
            many => {
                return Err(Error::AmbiguousId {
                    prefix: p,
                    candidates: many.iter().map(|s| s.message.id.to_string()).collect(),
                });
            }
        };
        if target.message.from != *me {
            return Err(Error::NotSender {
                id: target.message.id,
                sender: target.message.from.clone(),
                action: "retract",
            });
        }
        if target.state == State::Retracted || !self.store.retract(&all, target.message.id)? {
            return Err(Error::Refused(format!(
                "broadcast {} is already retracted",
                target.message.id
            )));
        }
        Ok(target.message.clone())
    }

    /// The channel in the mailbox protocol's `mailbox.md` format (retracted entries left out).
    pub fn export_channel(&self, me: &Address, project: &Name, channel: &str) -> Result<String> {
        let channel = self.existing_channel(me, project, channel)?;
        let listing = self.store.entries(&channel, false)?;
        let entries: Vec<mailbox_md::Entry> = listing
            .messages
            .iter()
            .map(|s| mailbox_md::Entry {
                timestamp: s.message.date,
                from: match s.message.from.project() {
                    Some(p) if *p == channel.project => s.message.from.handle.to_string(),
                    _ => s.message.from.to_string(),
                },
                kind: s.message.kind,
                subject: s.message.subject.clone(),
                body: s.message.body.clone(),
                line: 0,
            })
            .collect();
        Ok(mailbox_md::render(&entries))
    }

    /// Imports a `mailbox.md` into a channel. Entries already there (same minute, sender,
    /// type, subject and body) are skipped, so importing twice, or importing an export back,
    /// duplicates nothing. Unreadable entries are reported by line, never dropped silently.
    /// The import is refused, before any write, when `importer` may not write into `project`
    /// ([`Mailroom::check_may_import`]); an entry from `HUMAN` is imported only by `HUMAN`.
    pub fn import_channel(
        &self,
        importer: Option<&Address>,
        project: &Name,
        channel: &str,
        text: &str,
        fallback_time: Timestamp,
    ) -> Result<ImportReport> {
        let channel = self.channel_ref(project, channel)?;
        let parsed = mailbox_md::parse(text, fallback_time);
        let mut report = ImportReport {
            problems: parsed.problems,
            ..ImportReport::default()
        };
        self.check_may_import(importer, project, crate::store::Policy::Open)?;
        self.ensure_open_project(project)?;
        let mut known: std::collections::HashSet<u128> = self
            .store
            .entries(&channel, true)?
            .messages
            .iter()
            .map(|s| content_key(&s.message))
            .collect();
        for (position, entry) in parsed.entries.into_iter().enumerate() {
            let record = Foreign {
                id_key: IdKey::Content { position },
                disposition: Disposition::Broadcast,
                from: entry.from,
                to: None,
                subject: entry.subject,
                body: entry.body,
                kind: entry.kind,
                priority: crate::message::Priority::Medium,
                date: entry.timestamp,
                line: entry.line,
            };
            let message =
                match self.foreign_message(&record, Some(project), vec![], Some(channel.clone())) {
                    Ok(m) => m,
                    Err(message) => {
                        report.problems.push(Problem {
                            line: entry.line,
                            message,
                        });
                        continue;
                    }
                };
            if let Some(message) = self.import_refusal(importer, &message)? {
                report.problems.push(Problem {
                    line: entry.line,
                    message,
                });
                continue;
            }
            if !known.insert(content_key(&message)) {
                report.duplicates += 1;
                continue;
            }
            if self.store.append(&channel, &message)? {
                report.imported += 1;
            } else {
                report.duplicates += 1;
            }
        }
        Ok(report)
    }

    /// The address a sender or recipient name from another system stands for, the one rule
    /// every importer follows: `HUMAN`, `name` or `name@project` as written (m_AI_l's
    /// `ORIGIN/name` is `name@ORIGIN`), else the name with what the naming rule refuses
    /// replaced by `-`, in `project`.
    pub(crate) fn import_sender(
        &self,
        written: &str,
        project: &Name,
    ) -> std::result::Result<Address, String> {
        let address = written_address(written);
        if address.eq_ignore_ascii_case(crate::address::HUMAN) {
            return Ok(Address::human());
        }
        if let Ok(spec) = crate::address::AddressSpec::parse(&address) {
            return Ok(Address::in_project(
                spec.handle,
                spec.project.unwrap_or_else(|| project.clone()),
            ));
        }
        self.import_sender_cleaned(written, project)
    }

    /// Like [`Mailroom::import_sender`] for mail found outside any project (the operator's
    /// mailbox): a bare name means the one project it is an active member of, if there is one.
    pub fn import_sender_anywhere(
        &self,
        written: &str,
        fallback: &Name,
    ) -> std::result::Result<Address, String> {
        let w = written_address(written);
        if let Ok(spec) = crate::address::AddressSpec::parse(&w)
            && spec.project.is_none()
            && !spec.is_human()
            && let Ok(found) = self.active_elsewhere(&spec.handle, None)
            && let [only] = found.as_slice()
        {
            return Ok(only.address.clone());
        }
        self.import_sender(written, fallback)
    }

    fn import_sender_cleaned(
        &self,
        written: &str,
        project: &Name,
    ) -> std::result::Result<Address, String> {
        let mut cleaned: String = written
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        cleaned = cleaned
            .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
            .chars()
            .take(64)
            .collect();
        Name::parse(&cleaned)
            .map(|h| Address::in_project(h, project.clone()))
            .map_err(|e| format!("the sender '{written}' cannot be made a handle ({e}); skipped"))
    }

    /// Creates `project` (policy open) unless it exists.
    pub(crate) fn ensure_open_project(&self, project: &Name) -> Result<()> {
        self.store.ensure_project(&crate::store::Project {
            name: project.clone(),
            policy: crate::store::Policy::Open,
            created: self.now(),
        })?;
        Ok(())
    }

    /// An entry of any channel of `project` whose id starts with `prefix`.
    /// The entry of `me`'s project that `prefix` names, as `me` may read it: live, or
    /// retracted when `me` posted it or had seen it (who saw a retracted entry keeps it).
    pub(crate) fn readable_entry(&self, me: &Address, prefix: &str) -> Result<Option<Stored>> {
        let Some(project) = me.project() else {
            return Ok(None);
        };
        if let Some(live) = self.find_in_channels(project, prefix)? {
            return Ok(Some(live));
        }
        for name in self.store.channels(project)? {
            let channel = ChannelRef {
                project: project.clone(),
                name,
            };
            let Some(s) = self
                .store
                .entries(&channel, true)?
                .messages
                .into_iter()
                .find(|s| s.message.id.to_string().starts_with(prefix))
            else {
                continue;
            };
            let mine = s.message.from == *me;
            if mine
                || self
                    .store
                    .seen(&channel, &me.handle)?
                    .contains(&s.message.id)
            {
                return Ok(Some(s));
            }
            return Ok(None);
        }
        Ok(None)
    }

    pub(crate) fn find_in_channels(&self, project: &Name, prefix: &str) -> Result<Option<Stored>> {
        for name in self.store.channels(project)? {
            let channel = ChannelRef {
                project: project.clone(),
                name,
            };
            if let Some(s) = self
                .store
                .entries(&channel, false)?
                .messages
                .into_iter()
                .find(|s| s.message.id.to_string().starts_with(prefix))
            {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }
}
