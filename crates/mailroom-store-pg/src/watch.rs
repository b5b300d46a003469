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
    /// The wake locks (channel, slot) this connection could not take yet: while any is
    /// missing, a send of that slot may not notify, so the watch wakes its caller to look at
    /// every turn instead of sleeping until a notification.
    missing: Vec<(String, i32)>,
    /// When to try reconnecting next, while `client` is `None`.
    retry_at: Instant,
}

/// How often a watch that lost its connection tries to make another.
const RETRY: Duration = Duration::from_secs(2);

/// How often a watch missing a wake lock has its caller look (see `PgWatch::missing`).
const POLL: Duration = Duration::from_secs(1);

impl PgWatch {
    pub(crate) fn start(store: &PgStore, channels: Vec<String>) -> Result<PgWatch> {
        let (client, missing) = listen(store, &store.config, &channels)?;
        Ok(PgWatch {
            config: store.config.clone(),
            tls: store.tls.clone(),
            shown: store.shown.clone(),
            channels,
            client: Some(client),
            missing,
            retry_at: Instant::now(),
        })
    }

    fn reconnect(&self) -> Result<(Client, Vec<(String, i32)>)> {
        let mut client = crate::dial(&self.config, self.tls.as_ref(), &self.shown)?;
        let missing = listen_on(&mut client, &self.channels).map_err(|e| {
            crate::sentence(
                format!("the PostgreSQL server at {} refused LISTEN", self.shown),
                crate::said(&e),
            )
        })?;
        Ok((client, missing))
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
                if let Ok((client, missing)) = self.reconnect() {
                    self.client = Some(client);
                    self.missing = missing;
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

/// Takes the wake locks of `channels` and listens on them; returns the locks it could not take.
///
/// Each channel's wake lock of every slot in share mode, without waiting: a send that finds
/// one held notifies (one that commits before the LISTEN below is seen by the caller's first
/// look, which comes after it). Then LISTEN, for as long as this connection lives. A lock held in
/// exclusive mode is a send in flight that found nobody listening (it commits in a moment), or
/// anyone who can connect holding it on purpose: waiting for it could block the watch for good,
/// its timeout never armed. Such a lock is left missing and tried again at each wait, and the
/// caller looks at every turn until it is taken (see `PgWatch::missing`).
fn listen_on(
    client: &mut Client,
    channels: &[String],
) -> Result<Vec<(String, i32)>, postgres::Error> {
    let wanted: Vec<(String, i32)> = channels
        .iter()
        .flat_map(|c| (0..crate::rows::SLOTS).map(move |s| (c.clone(), s)))
        .collect();
    let missing = take_locks(client, &wanted)?;
    // Channel names are `mailroom_` and hex digits (see `notify_channel`): safe identifiers.
    let sql: String = channels.iter().map(|c| format!("LISTEN {c};")).collect();
    client.batch_execute(&sql)?;
    Ok(missing)
}

/// Takes the wake locks `wanted` in share mode, each without waiting; returns those not taken.
fn take_locks(
    client: &mut Client,
    wanted: &[(String, i32)],
) -> Result<Vec<(String, i32)>, postgres::Error> {
    let (channels, slots): (Vec<&str>, Vec<i32>) =
        wanted.iter().map(|(c, s)| (c.as_str(), *s)).unzip();
    let rows = client.query(
        "SELECT w.c, w.s FROM unnest($1::text[], $2::int4[]) AS w(c, s) \
         WHERE NOT pg_try_advisory_lock_shared($3::int4 + w.s, hashtext(w.c))",
        &[&channels, &slots, &crate::rows::WAKE_LOCK],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

fn listen(
    store: &PgStore,
    config: &Config,
    channels: &[String],
) -> Result<(Client, Vec<(String, i32)>)> {
    let mut client = crate::dial(config, store.tls.as_ref(), &store.shown)?;
    let missing = listen_on(&mut client, channels)
        .map_err(|e| store.failed("start listening for mail", &e))?;
    Ok((client, missing))
}

impl Watch for PgWatch {
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool> {
        let Some(client) = self.client.as_mut() else {
            return Ok(self.retry(timeout));
        };
        let polling = !self.missing.is_empty();
        if polling {
            match take_locks(client, &self.missing) {
                // All taken now: every later send notifies; one look covers those before.
                Ok(still) if still.is_empty() => {
                    self.missing = still;
                    return Ok(true);
                }
                Ok(still) => self.missing = still,
                // The connection's trouble shows below.
                Err(_) => {}
            }
        }
        // While polling, never sleep past one look's worth.
        let timeout = match timeout {
            Some(t) if polling => Some(t.min(POLL)),
            None if polling => Some(POLL),
            other => other,
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
            // Without every wake lock a send may not notify: look at every turn.
            Ok(None) if !client.is_closed() => Ok(polling),
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
