//! The `Sessions` role: waits, change tokens, injection marks and origin claims.

use mailroom_core::store::{OriginClaim, Sessions, Watch};
use mailroom_core::{Address, Result};
use postgres::types::Type;

use crate::PgStore;
use crate::codec::{key, mailbox_key};
use crate::rows::{broadcast_key, notify_channel};

impl Sessions for PgStore {
    fn watch(&self, mailbox: &Address) -> Result<Box<dyn Watch + Send>> {
        self.watch_many(std::slice::from_ref(mailbox))
    }

    fn watch_many(&self, mailboxes: &[Address]) -> Result<Box<dyn Watch + Send>> {
        let mut channels = Vec::new();
        for mailbox in mailboxes {
            channels.push(notify_channel(&self.schema, &mailbox_key(mailbox)));
            if let Some(p) = mailbox.project() {
                channels.push(notify_channel(&self.schema, &broadcast_key(p)));
            }
        }
        // One LISTEN per channel, however many of the mailboxes share it.
        channels.sort_unstable();
        channels.dedup();
        Ok(Box::new(crate::watch::PgWatch::start(self, channels)?))
    }

    fn change_token(&self, mailbox: &Address) -> Result<String> {
        let m = mailbox_key(mailbox);
        let p = mailbox.project().map(key);
        let row = self.read("read the change token", |c| {
            c.query_typed_one(
                "SELECT (SELECT generation FROM mailboxes WHERE key = $1) \
                 + (SELECT coalesce(sum(generation), 0)::bigint FROM mailbox_counts WHERE key = $1), \
                 (SELECT generation FROM channels WHERE project_key = $2 AND key = 'all')",
                &[(&m, Type::TEXT), (&p, Type::TEXT)],
            )
        })?;
        let part = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |g| g.to_string());
        let mut token = format!("g{}", part(row.get(0)));
        if p.is_some() {
            token.push(':');
            token.push_str(&part(row.get(1)));
        }
        Ok(token)
    }

    fn last_injected(&self, mailbox: &Address) -> Result<Option<String>> {
        let m = mailbox_key(mailbox);
        let row = self.read("read the injection mark", |c| {
            c.query_typed_opt(
                "SELECT injected FROM mailboxes WHERE key = $1",
                &[(&m, Type::TEXT)],
            )
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }

    fn set_last_injected(&self, mailbox: &Address, token: &str) -> Result<()> {
        let m = mailbox_key(mailbox);
        let spelled = mailbox.to_string();
        // Mailbox rows change only through mailroom's functions (migration 0009).
        self.write("save the injection mark", |tx| {
            tx.execute_typed(
                "SELECT mailroom_mark_injected($1, $2, $3)",
                &[
                    (&m, Type::TEXT),
                    (&spelled, Type::TEXT),
                    (&token, Type::TEXT),
                ],
            )
        })?;
        Ok(())
    }

    fn claim_origin(&self, identity: &Address, path: &str) -> Result<OriginClaim> {
        let m = mailbox_key(identity);
        let spelled = identity.to_string();
        // An identity has a mailbox once mail was delivered to it or sent by it (as in the
        // file store, where a send makes the sender's mailbox for its outbox): a sender that
        // never received any has no `mailboxes` row yet, and gets one with its claim
        // (`mailroom_claim_origin`, migration 0009).
        let row = self.write("record the checkout of an identity", |tx| {
            tx.query_typed_one(
                "SELECT mailroom_claim_origin($1, $2, $3)",
                &[
                    (&m, Type::TEXT),
                    (&spelled, Type::TEXT),
                    (&path, Type::TEXT),
                ],
            )
        })?;
        Ok(match row.get::<_, Option<String>>(0) {
            Some(first) if first != path => OriginClaim::Other(first),
            _ => OriginClaim::Same,
        })
    }

    fn origin(&self, identity: &Address) -> Result<Option<String>> {
        let m = mailbox_key(identity);
        let row = self.read("read the checkout of an identity", |c| {
            c.query_typed_opt(
                "SELECT origin FROM mailboxes WHERE key = $1",
                &[(&m, Type::TEXT)],
            )
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }
}
