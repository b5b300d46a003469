//! Waking on new mail with `LISTEN`: one connection of its own per watch.
//!
//! A notification is only a wake-up: the caller looks at the mailbox again after every one.
//! When the connection breaks, the watch reconnects, listens again and reports a wake-up, so
//! the caller looks again: anything sent while it was disconnected (whose notification is
//! lost) is found by that look. A connection that dies silently (a partition: no reset ever
//! arrives) is found dead by its TCP keepalives (see `keepalives` in the crate root); while the
//! server cannot be reached again, the watch tries every [`RETRY`] and reports nothing, so a
//! `watch` or `wait` outlives an outage and catches up once it is over.

use std::time::{Duration, Instant};

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
    /// `None` while the server cannot be reached again.
    client: Option<Client>,
    /// When to try reconnecting next, while `client` is `None`.
    retry_at: Instant,
}

/// How often a watch that lost its connection tries to make another.
const RETRY: Duration = Duration::from_secs(2);

impl PgWatch {
    pub(crate) fn start(store: &PgStore, channels: Vec<String>) -> Result<PgWatch> {
        let client = listen(store, &store.config, &channels)?;
        Ok(PgWatch {
            config: store.config.clone(),
            tls: store.tls.clone(),
            shown: store.shown.clone(),
            channels,
            client: Some(client),
            retry_at: Instant::now(),
        })
    }

    fn reconnect(&self) -> Result<Client> {
        let mut client = crate::dial(&self.config, self.tls.as_ref(), &self.shown)?;
        listen_on(&mut client, &self.channels).map_err(|e| {
            crate::sentence(
                format!("the PostgreSQL server at {} refused LISTEN", self.shown),
                crate::said(&e),
            )
        })?;
        Ok(client)
    }

    /// Without a connection: tries to listen again when it is time, until `timeout` passes.
    /// `true` once listening again (the caller looks: the notifications meanwhile are lost).
    fn retry(&mut self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let now = Instant::now();
            if now >= self.retry_at {
                // A failure is the outage going on (or a server that refuses this watch now):
                // not a reason to end the watch, whose caller would lose what comes after.
                if let Ok(client) = self.reconnect() {
                    self.client = Some(client);
                    return true;
                }
                self.retry_at = Instant::now() + RETRY;
            }
            let now = Instant::now();
            let wake = match deadline {
                Some(d) if d <= now => return false,
                Some(d) => d.min(self.retry_at),
                None => self.retry_at,
            };
            std::thread::sleep(wake.saturating_duration_since(now));
        }
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
        let Some(client) = self.client.as_mut() else {
            return Ok(self.retry(timeout));
        };
        let got = {
            let mut n = client.notifications();
            match timeout {
                Some(t) => n.timeout_iter(t).next(),
                None => n.blocking_iter().next(),
            }
        };
        match got {
            Ok(Some(_)) => {
                // One wake-up for everything that is already queued.
                let mut n = client.notifications();
                let mut queued = n.iter();
                while let Ok(Some(_)) = queued.next() {}
                Ok(true)
            }
            Ok(None) if !client.is_closed() => Ok(false),
            // The connection broke (an error from the server or the network, or keepalives
            // unanswered): listen again, then wake the caller to look (what arrived meanwhile
            // had its notification lost, not its mail).
            _ => {
                self.client = None;
                self.retry_at = Instant::now();
                Ok(self.retry(timeout))
            }
        }
    }
}
