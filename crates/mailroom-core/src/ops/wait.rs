//! Waiting for mail: block until new directed mail (or a reply to a given message) is
//! pending, woken by the store's watch rather than by polling. Nothing changes state.

use std::time::{Duration, Instant};

use crate::address::{Address, AddressSpec};
use crate::error::{Error, Result};
use crate::message::{State, Stored};
use crate::ops::Mailroom;

/// What `wait` waits for.
#[derive(Clone, Debug, Default)]
pub struct WaitFor {
    /// Only mail from this sender (as written: handle, handle@project, HUMAN).
    pub from: Option<String>,
    /// Only replies to the message this id (or unique prefix) names.
    pub reply_to: Option<String>,
    /// Give up after this long; `None` waits without limit.
    pub timeout: Option<Duration>,
}

impl Mailroom<'_> {
    /// Returns the matching pending mail as soon as there is some: unread mail (new to the
    /// reader), or with `reply_to`, any pending reply to that message. Marks nothing read.
    pub fn wait(&self, me: &Address, what: &WaitFor) -> Result<Vec<Stored>> {
        let from = match &what.from {
            Some(f) => Some(self.sender_named(me, f)?),
            None => None,
        };
        let reply_to = what
            .reply_to
            .as_deref()
            .map(super::check_prefix)
            .transpose()?;
        let deadline = what.timeout.map(|t| Instant::now() + t);
        // The watch starts before the first look, so mail that lands in between still wakes it.
        let mut watch = self.store.watch(me)?;
        loop {
            let matching: Vec<Stored> = self
                .peek(me)?
                .messages
                .into_iter()
                .filter(|s| !s.message.is_channel_entry())
                .filter(|s| from.as_ref().is_none_or(|f| s.message.from == *f))
                .filter(|s| match &reply_to {
                    Some(p) => s
                        .message
                        .reply_to
                        .is_some_and(|r| r.to_string().starts_with(p.as_str())),
                    None => s.state == State::Unread,
                })
                .collect();
            if !matching.is_empty() {
                return Ok(matching);
            }
            let remaining = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(r) if !r.is_zero() => Some(r),
                    _ => return Err(timed_out(what)),
                },
                None => None,
            };
            if !watch.wait(remaining)? && deadline.is_some() {
                return Err(timed_out(what));
            }
        }
    }

    /// The address a sender filter names, resolved as a send would resolve it (nothing is
    /// created).
    fn sender_named(&self, me: &Address, written: &str) -> Result<Address> {
        let spec = AddressSpec::parse(written).map_err(|source| Error::InvalidAddress {
            input: written.to_owned(),
            source,
        })?;
        if spec.is_human() {
            return Ok(Address::human());
        }
        let r = self.resolve(me.project(), written)?;
        match r.chosen {
            Some(c) => Ok(c.address),
            None => match spec.project {
                Some(p) => Ok(Address::in_project(spec.handle, p)),
                None => match me.project() {
                    Some(p) => Ok(Address::in_project(spec.handle, p.clone())),
                    None => Err(Error::HandleNowhere {
                        handle: spec.handle.to_string(),
                    }),
                },
            },
        }
    }
}

fn timed_out(what: &WaitFor) -> Error {
    let waited = what.timeout.map(|t| format!("{t:?}")).unwrap_or_default();
    let for_what = match (&what.from, &what.reply_to) {
        (_, Some(id)) => format!("a reply to {id}"),
        (Some(f), None) => format!("mail from {f}"),
        (None, None) => "new mail".to_owned(),
    };
    Error::Timeout(format!(
        "no {for_what} arrived within {waited}; wait again, or check `mailroom inbox`"
    ))
}
