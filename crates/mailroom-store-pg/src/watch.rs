//! Waking on new mail with `LISTEN`: one connection of its own per watch.
//!
//! A notification is only a wake-up: the caller looks at the mailbox again after every one.
//! When the connection breaks, the watch reconnects, listens again and reports a wake-up, so
//! the caller looks again: anything sent while it was disconnected (whose notification is
//! lost) is found by that look.

use std::time::Duration;

use mailroom_core::Result;
use mailroom_core::store::Watch;
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Config};

use crate::PgStore;

pub(crate) struct PgWatch {
    config: Config,
    tls: Option<crate::tls::Tls>,
    shown: String,
    channels: Vec<String>,
    client: Client,
}

impl PgWatch {
    pub(crate) fn start(store: &PgStore, channels: Vec<String>) -> Result<PgWatch> {
        let client = listen(store, &store.config, &channels)?;
        Ok(PgWatch {
            config: store.config.clone(),
            tls: store.tls.clone(),
            shown: store.shown.clone(),
            channels,
            client,
        })
    }

    fn reconnect(&mut self) -> Result<()> {
        let client = crate::dial(&self.config, self.tls.as_ref(), &self.shown)?;
        self.client = client;
        listen_on(&mut self.client, &self.channels).map_err(|e| {
            crate::sentence(
                format!("the PostgreSQL server at {} refused LISTEN", self.shown),
                crate::said(&e),
            )
        })
    }
}

fn listen_on(client: &mut Client, channels: &[String]) -> Result<(), postgres::Error> {
    // Channel names are `mailroom_` and hex digits (see `notify_channel`): safe identifiers
    // and literals. The wake lock first (it waits for the sends in flight that found nobody
    // listening, so the caller's next look sees their mail), then LISTEN, for as long as this
    // connection lives.
    let sql: String = channels
        .iter()
        .map(|c| {
            format!(
                "SELECT pg_advisory_lock_shared({} + s, hashtext('{c}')) \
                 FROM generate_series(0, {} - 1) AS s; LISTEN {c};",
                crate::imp::WAKE_LOCK,
                crate::imp::SLOTS
            )
        })
        .collect();
    client.batch_execute(&sql)
}

fn listen(store: &PgStore, config: &Config, channels: &[String]) -> Result<Client> {
    let mut client = crate::dial(config, store.tls.as_ref(), &store.shown)?;
    listen_on(&mut client, channels).map_err(|e| store.failed("start listening for mail", &e))?;
    Ok(client)
}

impl Watch for PgWatch {
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool> {
        let got = {
            let mut n = self.client.notifications();
            match timeout {
                Some(t) => n.timeout_iter(t).next(),
                None => n.blocking_iter().next(),
            }
        };
        match got {
            Ok(Some(_)) => {
                // One wake-up for everything that is already queued.
                let mut n = self.client.notifications();
                let mut queued = n.iter();
                while let Ok(Some(_)) = queued.next() {}
                Ok(true)
            }
            Ok(None) if !self.client.is_closed() => Ok(false),
            // The connection broke: listen again, then wake the caller to look (what arrived
            // meanwhile had its notification lost, not its mail).
            _ => {
                self.reconnect()?;
                Ok(true)
            }
        }
    }
}
