//! `wait_mail` for a server of many clients: one watch of the store for every waiting call.
//!
//! A waiting call holds no thread and no watch of its own: it joins the server's [`Waits`]
//! (its mailbox added to the set watched), then sleeps as a task until the one watcher wakes
//! it, its deadline passes or its future is dropped (the client left or cancelled), which
//! leaves the set. The watcher is one thread holding one store watch of every mailbox waited
//! on (one inotify instance, or one PostgreSQL connection): it starts with the first waiter,
//! and ends, its watch closed, within [`Cancel::SLICE`] of the last one leaving. A new
//! mailbox remakes the watch; each remake and each wake makes every waiter look again (a
//! listing of its own pending mail), so mail landing while the watch is remade is found.
//!
//! Invariant: a waiter subscribes to wakes before it joins and looks after it joins, so every
//! delivery after its first look is followed by a wake it sees.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mailroom_core::ops::{Awaiting, Cancel, Waited};
use mailroom_core::{Address, Error, Mailroom, Result, Stored};

/// The waits of one server: the mailboxes waited on and the one watcher of them all.
#[derive(Clone, Debug)]
pub struct Waits(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    mr: Mailroom<'static>,
    state: Mutex<State>,
    /// Bumped at every wake; carries the watcher's failure, when it failed.
    wakes: tokio::sync::watch::Sender<Wake>,
    /// Looks run on a blocking thread (a store that blocks on a runtime of its own), else
    /// on the server's thread.
    look_aside: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Each mailbox waited on: how many waiters.
    mailboxes: HashMap<Address, usize>,
    /// Bumped whenever a mailbox joins the set: the watcher remakes its watch.
    epoch: u64,
    /// Whether the watcher thread runs.
    running: bool,
}

#[derive(Clone, Debug, Default)]
struct Wake {
    count: u64,
    trouble: Option<Arc<str>>,
}

/// One waiter's place in the set: dropping it leaves.
struct Member {
    shared: Arc<Shared>,
    mailbox: Address,
}

impl Drop for Member {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        if let Some(n) = s.mailboxes.get_mut(&self.mailbox) {
            *n -= 1;
            if *n == 0 {
                // The watch keeps the mailbox until it is next remade: a spurious wake at most.
                s.mailboxes.remove(&self.mailbox);
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Waits {
    /// Waits over `mr`. `look_aside`: run each look on a blocking thread (a store that
    /// blocks on an async runtime of its own, as the PostgreSQL client does).
    pub fn new(mr: Mailroom<'static>, look_aside: bool) -> Waits {
        Waits(Arc::new(Shared {
            mr,
            state: Mutex::default(),
            wakes: tokio::sync::watch::Sender::new(Wake::default()),
            look_aside,
        }))
    }

    /// Waits until mail `awaiting` matches is pending for `me`, or `deadline`. Cancelled by
    /// dropping the future.
    pub(crate) async fn wait(
        &self,
        me: &Address,
        awaiting: Awaiting,
        deadline: Instant,
    ) -> Result<Waited> {
        let mut wakes = self.0.wakes.subscribe();
        wakes.borrow_and_update();
        let _member = self.join(me)?;
        let awaiting = Arc::new(awaiting);
        loop {
            let found = self.look(me, &awaiting).await?;
            if !found.is_empty() {
                return Ok(Waited::Arrived(found));
            }
            tokio::select! {
                changed = wakes.changed() => {
                    if changed.is_err() {
                        return Err(stopped("the server is stopping"));
                    }
                    if let Some(why) = &wakes.borrow_and_update().trouble {
                        return Err(stopped(why));
                    }
                }
                () = tokio::time::sleep_until(deadline.into()) => return Ok(Waited::TimedOut),
            }
        }
    }

    async fn look(&self, me: &Address, awaiting: &Arc<Awaiting>) -> Result<Vec<Stored>> {
        if !self.0.look_aside {
            return self.0.mr.arrived(me, awaiting);
        }
        let (shared, me, awaiting) = (self.0.clone(), me.clone(), awaiting.clone());
        tokio::task::spawn_blocking(move || shared.mr.arrived(&me, &awaiting))
            .await
            .unwrap_or_else(|_| {
                Err(stopped(
                    "a look at the mailbox failed (a bug: please report it)",
                ))
            })
    }

    /// Adds `me` to the set watched, starting the watcher if none runs.
    fn join(&self, me: &Address) -> Result<Member> {
        let mut s = self.0.lock();
        let n = s.mailboxes.entry(me.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            s.epoch += 1;
        }
        if !s.running {
            s.running = true;
            self.0.wakes.send_modify(|w| w.trouble = None);
            let shared = self.0.clone();
            let started = std::thread::Builder::new()
                .name("mailroom-waits".into())
                .spawn(move || watcher(&shared));
            if let Err(e) = started {
                s.running = false;
                drop(s);
                // Leaves the set again as it drops.
                drop(Member {
                    shared: self.0.clone(),
                    mailbox: me.clone(),
                });
                return Err(stopped(&format!("cannot start watching for mail: {e}")));
            }
        }
        Ok(Member {
            shared: self.0.clone(),
            mailbox: me.clone(),
        })
    }
}

fn stopped(why: &str) -> Error {
    Error::store("cannot wait for mail", why.to_owned())
}

/// The watcher thread: remakes its watch when a mailbox joined, wakes every waiter at each
/// wake and each remake, and ends once nobody waits (or its watch failed: every waiter is
/// told, and the next one to join starts a fresh watcher).
fn watcher(shared: &Shared) {
    let mut watch = None;
    let mut armed = 0;
    loop {
        let remake = {
            let mut s = shared.lock();
            if s.mailboxes.is_empty() {
                s.running = false;
                return;
            }
            (s.epoch != armed).then(|| (s.epoch, s.mailboxes.keys().cloned().collect::<Vec<_>>()))
        };
        if let Some((epoch, mailboxes)) = remake {
            // The old watch goes first: one watch at a time, even while remaking.
            drop(watch.take());
            match shared.mr.wake_on(&mailboxes) {
                Ok(w) => watch = Some(w),
                Err(e) => return fail(shared, &e),
            }
            armed = epoch;
            shared.wakes.send_modify(|w| w.count += 1);
        }
        let Some(w) = watch.as_mut() else {
            continue;
        };
        match w.wait(Some(Cancel::SLICE)) {
            Ok(true) => shared.wakes.send_modify(|w| w.count += 1),
            Ok(false) => {}
            Err(e) => return fail(shared, &e),
        }
    }
}

fn fail(shared: &Shared, e: &Error) {
    let mut s = shared.lock();
    s.running = false;
    let why: Arc<str> = format!("the watch for new mail failed: {e}").into();
    shared.wakes.send_modify(|w| {
        w.count += 1;
        w.trouble = Some(why);
    });
}
