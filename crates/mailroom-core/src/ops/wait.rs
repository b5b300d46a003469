//! Waiting for mail: `wait` blocks until new directed mail (or a reply to a given message) is
//! pending; `watch` follows a mailbox and hands over each message as it lands. Both are woken by
//! the store's watch, never by polling for mail, and both stop at a deadline or when their
//! [`Cancel`] token is set, which they notice within [`Cancel::SLICE`]. Nothing changes state.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::address::{Address, Written, read_written};
use crate::error::{Error, Result};
use crate::message::{State, Stored};
use crate::ops::Mailroom;
use crate::store::Watch;

/// What `wait` waits for.
#[derive(Clone, Debug, Default)]
pub struct WaitFor {
    /// Only mail from this sender (as written: handle, handle@project, HUMAN).
    pub from: Option<String>,
    /// Only replies to the message this id (or unique prefix) names.
    pub reply_to: Option<String>,
}

impl WaitFor {
    /// The error a front end reports when nothing arrived within `waited`.
    pub fn timed_out(&self, waited: Duration) -> Error {
        let for_what = match (&self.from, &self.reply_to) {
            (_, Some(id)) => format!("reply to {id}"),
            (Some(f), None) => format!("mail from {f}"),
            (None, None) => "new mail".to_owned(),
        };
        Error::Timeout(format!(
            "no {for_what} arrived within {}",
            human_duration(waited)
        ))
    }
}

/// `waited` as people write it: `0s`, `200ms`, `1s`, `2m`, `1h 30m`.
fn human_duration(waited: Duration) -> String {
    // Whole milliseconds: a wait is never timed finer, and `1.000213s` reads as noise.
    let millis = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
    let rounded = Duration::from_millis(millis);
    match jiff::SignedDuration::try_from(rounded) {
        Ok(d) => format!("{d:#}"),
        Err(_) => format!("{}s", rounded.as_secs()),
    }
}

/// A token that stops a `wait` or `watch` from another thread (an async server's task, a
/// signal handler): clones share one flag.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// The longest a set token can go unnoticed.
    pub const SLICE: Duration = Duration::from_millis(100);

    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every operation holding this token (or a clone) to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a wait matches, resolved by [`Mailroom::awaiting`].
#[derive(Clone, Debug)]
pub struct Awaiting {
    from: Option<Address>,
    reply_to: Option<String>,
}

/// How a `wait` ended.
#[derive(Clone, Debug)]
pub enum Waited {
    /// The matching pending mail, as soon as there was some.
    Arrived(Vec<Stored>),
    TimedOut,
    Cancelled,
}

/// How a `watch` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    TimedOut,
    Cancelled,
    /// The callback asked to stop.
    Stopped,
}

/// Why sleeping stopped without a wake-up.
enum Stop {
    TimedOut,
    Cancelled,
}

/// Sleeps until `watch` wakes (`None`), the deadline passes or `cancel` is set, in slices of
/// at most [`Cancel::SLICE`] so the token is checked often enough.
fn sleep(
    watch: &mut dyn Watch,
    deadline: Option<Instant>,
    cancel: &Cancel,
) -> Result<Option<Stop>> {
    loop {
        if cancel.is_cancelled() {
            return Ok(Some(Stop::Cancelled));
        }
        let slice = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(r) if !r.is_zero() => r.min(Cancel::SLICE),
                _ => return Ok(Some(Stop::TimedOut)),
            },
            None => Cancel::SLICE,
        };
        if watch.wait(Some(slice))? {
            return Ok(None);
        }
    }
}

impl Mailroom<'_> {
    /// Returns the matching pending mail as soon as there is some: unread mail (new to the
    /// reader), or with `reply_to`, any pending reply to that message. Gives up at `deadline`
    /// (`None`: never) or when `cancel` is set. Marks nothing read.
    pub fn wait(
        &self,
        me: &Address,
        what: &WaitFor,
        deadline: Option<Instant>,
        cancel: &Cancel,
    ) -> Result<Waited> {
        let awaiting = self.awaiting(me, what)?;
        // The watch starts before the first look, so mail that lands in between still wakes it.
        let mut watch = self.store.watch(me)?;
        loop {
            let matching = self.arrived(me, &awaiting)?;
            if !matching.is_empty() {
                return Ok(Waited::Arrived(matching));
            }
            match sleep(watch.as_mut(), deadline, cancel)? {
                None => {}
                Some(Stop::TimedOut) => return Ok(Waited::TimedOut),
                Some(Stop::Cancelled) => return Ok(Waited::Cancelled),
            }
        }
    }

    /// What `what` waits for, checked and resolved once (the sender named, the id prefix):
    /// for a front end that waits by itself, looking with [`Mailroom::arrived`] after each
    /// wake of a [`Mailroom::wake_on`] watch it started before its first look.
    pub fn awaiting(&self, me: &Address, what: &WaitFor) -> Result<Awaiting> {
        let from = match &what.from {
            Some(f) => Some(self.sender_named(me, f)?),
            None => None,
        };
        let reply_to = what
            .reply_to
            .as_deref()
            .map(super::check_prefix)
            .transpose()?;
        Ok(Awaiting { from, reply_to })
    }

    /// The pending mail `awaiting` matches now (empty: none yet), as `wait` returns it.
    /// Marks nothing read.
    pub fn arrived(&self, me: &Address, awaiting: &Awaiting) -> Result<Vec<Stored>> {
        Ok(self
            .peek(me)?
            .messages
            .into_iter()
            .filter(|s| !s.message.is_channel_entry())
            .filter(|s| awaiting.from.as_ref().is_none_or(|f| s.message.from == *f))
            .filter(|s| match &awaiting.reply_to {
                Some(p) => s
                    .message
                    .reply_to
                    .is_some_and(|r| r.to_string().starts_with(p.as_str())),
                None => s.state == State::Unread,
            })
            .collect())
    }

    /// One watch that wakes when new mail may have reached any of `mailboxes` (as a `wait` of
    /// each would): one inotify instance or one PostgreSQL connection however many there are,
    /// for a server that waits for many callers at once. A wake says nothing of which mailbox:
    /// each waiter looks again.
    pub fn wake_on(&self, mailboxes: &[Address]) -> Result<Box<dyn Watch + Send>> {
        self.store.watch_many(mailboxes)
    }

    /// The mailbox `watch` follows: `me`'s own, or the one `target` names in `me`'s project.
    pub fn watch_target(&self, me: &Address, target: Option<&str>) -> Result<Address> {
        let Some(t) = target else {
            return Ok(me.clone());
        };
        let r = self.resolve(me.project(), t)?;
        r.chosen
            .map(|c| c.address)
            .ok_or_else(|| match me.project() {
                Some(p) => Error::UnknownHandle {
                    handle: t.to_owned(),
                    project: p.to_string(),
                    suggestions: vec![],
                },
                None => Error::HandleNowhere {
                    handle: t.to_owned(),
                },
            })
    }

    /// Follows `target`'s mailbox: hands `each` what is pending now (directed mail and unseen
    /// broadcasts, oldest first), then each message as it lands, every message once, until
    /// `each` breaks, `deadline` passes or `cancel` is set. Marks nothing read or seen.
    pub fn watch(
        &self,
        target: &Address,
        deadline: Option<Instant>,
        cancel: &Cancel,
        mut each: impl FnMut(&Stored) -> ControlFlow<()>,
    ) -> Result<Watched> {
        // The watch starts before the first look, so mail that lands in between still wakes it.
        let mut watch = self.store.watch(target)?;
        let mut shown = HashSet::new();
        loop {
            let mut listing = self.peek(target)?.messages;
            listing.sort_by_key(|s| s.message.id);
            for s in listing.iter().filter(|s| shown.insert(s.message.id)) {
                if each(s).is_break() {
                    return Ok(Watched::Stopped);
                }
            }
            match sleep(watch.as_mut(), deadline, cancel)? {
                None => {}
                Some(Stop::TimedOut) => return Ok(Watched::TimedOut),
                Some(Stop::Cancelled) => return Ok(Watched::Cancelled),
            }
        }
    }

    /// The address a sender filter names, resolved as a send would resolve it (nothing is
    /// created).
    fn sender_named(&self, me: &Address, written: &str) -> Result<Address> {
        let read = read_written(written, || Ok(me.project().cloned()))?;
        if matches!(&read, Written::Address(a) if a.is_human()) {
            return Ok(Address::human());
        }
        let r = self.resolve(me.project(), written)?;
        match (r.chosen, read) {
            (Some(c), _) => Ok(c.address),
            (None, Written::Address(a)) => Ok(a),
            (None, Written::Bare(handle)) => Err(Error::HandleNowhere {
                handle: handle.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod timed_out_tests {
    use super::*;

    #[test]
    fn a_timeout_names_what_was_awaited_and_how_long_as_people_write_it() {
        let reply = WaitFor {
            from: None,
            reply_to: Some("01ABC".into()),
        };
        for (waited, said) in [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(200), "200ms"),
            (Duration::from_secs(1), "1s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(5400), "1h 30m"),
        ] {
            assert_eq!(
                reply.timed_out(waited).to_string(),
                format!("no reply to 01ABC arrived within {said}")
            );
        }
    }
}
