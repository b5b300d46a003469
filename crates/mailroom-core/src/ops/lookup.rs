//! Naming a message by a prefix of its id: unique, ambiguous, unknown, malformed. Invariant: a
//! prefix names one message (a pending copy before an archived one) or is an error that says
//! why; among several candidates it never picks one.

use crate::address::Address;
use crate::error::{Error, Fix, Result};
use crate::message::{Message, Stored};
use crate::ops::Mailroom;

impl Mailroom<'_> {
    /// The one copy in `mailbox` whose id starts with `prefix`.
    pub(super) fn find_one(&self, mailbox: &Address, prefix: &str, list: Fix) -> Result<Stored> {
        let prefix = check_prefix(prefix)?;
        let mut found = self.store.find(mailbox, &prefix)?;
        match found.len() {
            0 => Err(Error::MessageNotFound {
                prefix,
                mailbox: mailbox.clone(),
                list: Box::new(list),
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::AmbiguousId {
                prefix,
                candidates: found.iter().map(|s| s.message.id.to_string()).collect(),
            }),
        }
    }

    /// The sent message `prefix` names, for its sender; someone else's is refused.
    pub(super) fn sent_by_me(
        &self,
        me: &Address,
        prefix: &str,
        action: &'static str,
    ) -> Result<Message> {
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
                    if c.is_broadcast() {
                        return Err(Error::RefusedWith {
                            reason: format!(
                                "message {} is a broadcast; broadcasts are never edited or cancelled",
                                m.id
                            ),
                            fix: Box::new(Fix::Retract { id: m.id }),
                        });
                    }
                    return Err(Error::Refused({
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
        if let Ok(theirs) = self.find_one(me, &p, Fix::Outbox) {
            return Err(Error::NotSender {
                id: theirs.message.id,
                sender: theirs.message.from,
                action,
            });
        }
        if let Some(project) = me.project()
            && let Some(entry) = self.find_in_channels(project, &p)?
        {
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
        Err(Error::MessageNotFound {
            prefix: p,
            mailbox: me.clone(),
            list: Box::new(Fix::Outbox),
        })
    }
}

/// Ids are Crockford base32; a prefix with anything else can match nothing and is a typo.
pub(super) fn check_prefix(prefix: &str) -> Result<String> {
    let p = prefix.trim().to_ascii_uppercase();
    if p.is_empty() || p.len() > 26 || !p.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::Invalid(format!(
            "'{prefix}' is not a message id; ids are 26 letters and digits, and any unique prefix of one will do"
        )));
    }
    Ok(p)
}
