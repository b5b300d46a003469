//! Sending: resolve every recipient, then publish one durable copy to each and the outbox
//! trace in one all-or-nothing store call ([`Store::deliver_all`]).

use crate::address::{Address, AddressSpec};
use crate::error::{Error, Fix, Result};
use crate::message::{Kind, Message, MessageId, Priority};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::directory::Plan;
use crate::ops::reads::Reads;
use crate::store::{KeyClaim, Store};
use crate::text::{MAX_BODY_BYTES, MAX_SUBJECT_CHARS, clean_line, default_subject};

/// Longest idempotency key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 100;

/// Most recipients one send may name (`--to`, counted as written, before any lookup). Each
/// copy carries the whole recipient list (a recipient sees who else got it), so a send's work
/// grows with the square of its recipients: 3,000 took minutes. At this cap the list costs
/// no measurable CPU (a send to 100 spends its time in the 100 syncs of its copies) and at most
/// 13 KiB of header per copy with the longest names. Reaching a whole project is what
/// `--broadcast` is for.
pub const MAX_RECIPIENTS: usize = 100;

/// A message to send, as a front end received it.
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// Addresses as written (`bob`, `bob@web`, `HUMAN`).
    pub to: Vec<String>,
    pub subject: Option<String>,
    pub body: String,
    pub kind: Kind,
    pub priority: Priority,
    pub idempotency_key: Option<String>,
}

/// What a send did.
#[derive(Clone, Debug)]
pub struct Sent {
    pub message: Message,
    /// Things the sender should know: mailboxes created, a trace that failed.
    pub notices: Vec<String>,
    /// True when the idempotency key had been used: the first message stands.
    pub duplicate: bool,
    /// On such a retry, the mailboxes the first send had not reached (it crashed or failed
    /// mid-way), which got their copy now; empty when the first send had reached everyone.
    pub delivered_now: Vec<Address>,
}

impl Mailroom<'_> {
    /// Sends `draft` from `me` to each of its recipients.
    /// `me` may be spelled in any case: the message carries the names as first written.
    pub fn send(&self, me: &Address, draft: Draft) -> Result<Sent> {
        self.send_in_thread(me, draft, None)
    }

    /// Sends `draft`, as an answer to `reply_to` when given (same thread).
    pub(crate) fn send_in_thread(
        &self,
        me: &Address,
        draft: Draft,
        reply_to: Option<&Message>,
    ) -> Result<Sent> {
        // The checks read each project file and roster entry once, the sender's spelling
        // included, and what they are sure to ask for in one store call; the record is dropped
        // before the first write. Recipients are parsed first only to know what to fetch:
        // their errors come in the checks' order below.
        let parsed: Vec<Result<AddressSpec>> = draft
            .to
            .iter()
            .map(|raw| {
                AddressSpec::parse(raw).map_err(|source| Error::InvalidAddress {
                    input: raw.clone(),
                    source,
                })
            })
            .collect();
        let reads = Reads::default();
        if draft.to.len() <= MAX_RECIPIENTS {
            let known: Vec<AddressSpec> = parsed.iter().flatten().cloned().collect();
            let (projects, members) = facts_needed(me, &known);
            reads.prefetch(self.store(), &projects, &members)?;
        }
        let me = &self.spelled_in(&reads, me)?;
        let (subject, body) = check_content(draft.subject.as_deref(), &draft.body)?;
        if let Some(key) = &draft.idempotency_key {
            check_key(key)?;
        }
        if draft.to.is_empty() {
            return Err(Error::InvalidWith {
                reason: "no recipient".into(),
                fix: Box::new(Fix::NameRecipient),
            });
        }
        if draft.to.len() > MAX_RECIPIENTS {
            return Err(Error::InvalidWith {
                reason: format!(
                    "{} recipients named; one send reaches at most {MAX_RECIPIENTS}",
                    draft.to.len()
                ),
                fix: Box::new(Fix::SplitRecipients),
            });
        }
        let specs = parsed.into_iter().collect::<Result<Vec<_>>>()?;
        let mut plans: Vec<Plan> = Vec::new();
        for spec in &specs {
            let plan = self.plan_recipient(&reads, me.project(), spec)?;
            if !plans.iter().any(|p| p.address == plan.address) {
                plans.push(plan);
            }
        }
        let sender_plan = self.plan_sender(&reads, me)?;
        for plan in &plans {
            if let Some(project) = plan.address.project() {
                self.check_may_write_into(&reads, me, project)?;
                if plan.changes_roster() {
                    self.store().check_roster_change(project)?;
                }
            }
        }
        drop(reads);

        let (id, now) = self.stamp();
        let (reply_to, thread) = match reply_to {
            Some(orig) => (Some(orig.id), orig.thread),
            None => (None, id),
        };
        let message = Message {
            id,
            from: me.clone(),
            to: plans.iter().map(|p| p.address.clone()).collect(),
            subject,
            body,
            kind: draft.kind,
            priority: draft.priority,
            date: now,
            reply_to,
            thread,
            revision: 1,
            edited: None,
            channel: None,
        };

        // Projects and mailboxes are created only once the message is delivered: a send that
        // fails, or a retry of a claimed key, leaves no new empty mailbox or project behind.
        if let Some(key) = &draft.idempotency_key
            && let KeyClaim::Existing(first) = self.store.claim_key(me, key, id)?
        {
            return self.redeliver(me, first, &message, &sender_plan, &plans);
        }
        let mut delivered = Vec::new();
        // A keyed send may be the retry of one that crashed: only an unkeyed id is surely new.
        let fresh = draft.idempotency_key.is_none();
        deliver_all(self.store(), me, &message, fresh, &mut delivered)?;
        let mut notices = Vec::new();
        self.record_plans(
            std::iter::once(&sender_plan).chain(&plans),
            now,
            &mut notices,
        );
        notices.append(&mut delivered);
        if super::channels::forwards_to_human(me, &message) {
            notices.push("the hold request is also in the HUMAN mailbox".into());
        }
        Ok(Sent {
            message,
            notices,
            duplicate: false,
            delivered_now: vec![],
        })
    }

    /// A retried send (its key was claimed before): the first message stands. Publishing it
    /// again finishes a first send that crashed or failed mid-way: the store skips every
    /// mailbox that has the copy, so the retry delivers nothing twice and names who got it now.
    fn redeliver(
        &self,
        me: &Address,
        first: MessageId,
        retry: &Message,
        sender_plan: &Plan,
        plans: &[Plan],
    ) -> Result<Sent> {
        let original = self.store.sent(me, first)?;
        let message = original.unwrap_or_else(|| {
            // No trace (lost in a crash, or the first send failed and was undone): the retry's
            // content, under the first id.
            let mut m = retry.clone();
            m.id = first;
            if m.reply_to.is_none() {
                m.thread = first;
            }
            m
        });
        let mut delivered = Vec::new();
        let delivered_now = deliver_all(self.store(), me, &message, false, &mut delivered)?;
        // What the first send would have recorded for the recipients of the message that
        // stands (a crash may have cut it short); nothing for a recipient only the retry names.
        let mut notices = Vec::new();
        let standing = plans.iter().filter(|p| message.to.contains(&p.address));
        self.record_plans(
            std::iter::once(sender_plan).chain(standing),
            retry.date,
            &mut notices,
        );
        notices.append(&mut delivered);
        notices.push(if delivered_now.is_empty() {
            format!(
                "this idempotency key was used before; message {} stands and nothing new was delivered",
                message.id
            )
        } else {
            format!(
                "this idempotency key was used before; message {} stands; it had not reached {}: delivered to them now",
                message.id,
                delivered_now
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        Ok(Sent {
            message,
            notices,
            duplicate: true,
            delivered_now,
        })
    }
}

impl Mailroom<'_> {
    /// Records the projects and mailboxes a delivered message created. The message is there
    /// already, so a failure here is told as a notice, not as a failed send (which would invite
    /// a second copy).
    fn record_plans<'p>(
        &self,
        plans: impl Iterator<Item = &'p Plan>,
        now: jiff::Timestamp,
        notices: &mut Vec<String>,
    ) {
        for plan in plans {
            if let Err(e) = self.apply_plan(plan, now, notices) {
                notices.push(format!(
                    "the mailbox {} could not be recorded on its project's roster ({e}); the message was delivered",
                    plan.address
                ));
            }
        }
    }
}

/// The projects and roster entries a send from `me` to `specs` is sure to read: each
/// recipient's project (the sender's, for a bare handle) and the recipient's entry there, the
/// sender's project and entry, and the sender's entry in each other project written into (its
/// roster policy may ask).
fn facts_needed(me: &Address, specs: &[AddressSpec]) -> (Vec<Name>, Vec<(Name, Name)>) {
    let mut projects: Vec<Name> = Vec::new();
    let mut members: Vec<(Name, Name)> = Vec::new();
    let mut want = |project: &Name, handle: &Name| {
        if !projects.contains(project) {
            projects.push(project.clone());
        }
        let entry = (project.clone(), handle.clone());
        if !members.contains(&entry) {
            members.push(entry);
        }
    };
    if let Some(mine) = me.project() {
        want(mine, &me.handle);
    }
    for spec in specs.iter().filter(|s| !s.is_human()) {
        match (&spec.project, me.project()) {
            (Some(p), _) => {
                want(p, &spec.handle);
                if !me.is_human() && me.project() != Some(p) {
                    want(p, &me.handle);
                }
            }
            (None, Some(mine)) => want(mine, &spec.handle),
            (None, None) => {}
        }
    }
    (projects, members)
}

/// Publishes `message` to its recipients (and to HUMAN, for a hold request HUMAN is not among)
/// with its outbox trace, in one store call; returns the mailboxes that got a copy now.
/// `fresh`: the id was generated by this send ([`Store::deliver_fresh`]).
fn deliver_all(
    store: &dyn Store,
    me: &Address,
    message: &Message,
    fresh: bool,
    notices: &mut Vec<String>,
) -> Result<Vec<Address>> {
    let mut copies = message.to.clone();
    if super::channels::forwards_to_human(me, message) {
        copies.push(Address::human());
    }
    let delivery = if fresh {
        store.deliver_fresh(&copies, message)?
    } else {
        store.deliver_all(&copies, message)?
    };
    if let Some(e) = delivery.trace_error {
        notices.push(format!(
            "the outbox trace could not be written ({e}); the message was delivered"
        ));
    }
    Ok(copies
        .into_iter()
        .zip(delivery.new)
        .filter_map(|(to, new)| new.then_some(to))
        .collect())
}

/// Checks and normalises subject and body; returns them as they will be stored.
pub(crate) fn check_content(subject: Option<&str>, body: &str) -> Result<(String, String)> {
    if body.len() > MAX_BODY_BYTES {
        return Err(Error::Invalid(format!(
            "the body is {} bytes; the limit is {MAX_BODY_BYTES} bytes (1 MiB): put large content in a file and send its path",
            body.len()
        )));
    }
    let subject = match subject {
        Some(s) => clean_line(s),
        None => default_subject(body),
    };
    if subject.chars().count() > MAX_SUBJECT_CHARS {
        return Err(Error::Invalid(format!(
            "the subject is {} characters; the limit is {MAX_SUBJECT_CHARS}: move the detail into the body",
            subject.chars().count()
        )));
    }
    if subject.is_empty() && body.trim().is_empty() {
        return Err(Error::InvalidWith {
            reason: "the message is empty".into(),
            fix: Box::new(Fix::GiveContent),
        });
    }
    Ok((subject, body.to_owned()))
}

pub(crate) fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(Error::Invalid(format!(
            "the idempotency key must be 1 to {MAX_KEY_BYTES} bytes without control characters"
        )));
    }
    Ok(())
}
