//! Live updates: one `Mailroom::watch` of HUMAN's mailbox per server (one inotify instance, or
//! one PostgreSQL listener), fanned out to every open server-sent event stream through a
//! broadcast channel. Invariant: the watch runs while at least one stream is open and the server
//! runs, and at most [`MAX_STREAMS`] streams are open at once, so open pages never use up the
//! user's inotify instances or the store's connections.

use std::collections::HashSet;
use std::convert::Infallible;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, StreamExt as _};
use mailroom_core::MessageId;
use mailroom_core::ops::Cancel;
use serde::Deserialize;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::Console;
use crate::view::{Failure, PageQuery};

/// Most event streams open at once; one more is answered 503. A browser keeps one per open
/// console tab (and at most six connections per server), so this is many tabs of many browsers.
pub const MAX_STREAMS: usize = 32;

/// What the watch hands a stream that has not read it yet; older ones are dropped, and the
/// stream then tells its page to reload (see `forward`).
const BACKLOG: usize = 256;

/// One thing the watch saw.
#[derive(Clone, Debug)]
enum Note {
    /// A message reached HUMAN: its id and kind.
    Mail(MessageId, &'static str),
    /// The watch failed; the streams end after this.
    Trouble(Arc<str>),
}

/// The server's one watch and its listeners.
#[derive(Clone, Debug, Default)]
pub struct Hub(Arc<Mutex<HubState>>);

#[derive(Debug, Default)]
struct HubState {
    stopped: bool,
    streams: usize,
    feed: Option<Feed>,
}

/// The running watch: its sender (to subscribe new streams) and its token.
#[derive(Debug)]
struct Feed {
    tx: broadcast::Sender<Note>,
    cancel: Cancel,
}

/// One open stream's place in the hub: dropping it (the page closed) leaves, and the last one
/// out stops the watch.
struct Member(Hub);

impl Drop for Member {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.0.lock() {
            s.streams = s.streams.saturating_sub(1);
            if s.streams == 0
                && let Some(feed) = s.feed.take()
            {
                feed.cancel.cancel();
            }
        }
    }
}

impl Hub {
    /// Admits one more stream: subscribes it to the running watch, starting the watch if none
    /// runs (or the last one failed).
    fn join(&self, console: &Console) -> Result<(Member, broadcast::Receiver<Note>), Failure> {
        let mut s = self
            .0
            .lock()
            .map_err(|_| Failure::internal("the live-update hub failed earlier".into()))?;
        if s.stopped {
            return Err(Failure::unavailable("the console is stopping."));
        }
        if s.streams >= MAX_STREAMS {
            return Err(Failure::unavailable(format!(
                "{MAX_STREAMS} console pages already receive live updates: close some of the console's tabs, then reload this one."
            )));
        }
        let rx = match &s.feed {
            Some(feed) if !feed.cancel.is_cancelled() => feed.tx.subscribe(),
            _ => {
                let (tx, rx) = broadcast::channel(BACKLOG);
                let cancel = Cancel::new();
                start_watch(console.clone(), tx.clone(), cancel.clone());
                s.feed = Some(Feed { tx, cancel });
                rx
            }
        };
        s.streams += 1;
        Ok((Member(self.clone()), rx))
    }

    /// Forgets the watch that sent through `tx`, which has ended: with the hub's sender gone too,
    /// every stream subscribed to it ends, and its page reconnects to a fresh watch.
    fn retire(&self, tx: &broadcast::Sender<Note>) {
        if let Ok(mut s) = self.0.lock()
            && s.feed.as_ref().is_some_and(|f| f.tx.same_channel(tx))
        {
            s.feed = None;
        }
    }

    /// Ends the watch and every stream, and admits no new one: the server is stopping.
    pub fn stop(&self) {
        if let Ok(mut s) = self.0.lock() {
            s.stopped = true;
            if let Some(feed) = s.feed.take() {
                feed.cancel.cancel();
            }
        }
    }
}

/// Runs the one watch on a blocking thread until `cancel` is set (noticed within
/// `Cancel::SLICE`) or it fails. When it ends, its senders drop (the hub's too, by `retire`),
/// which ends every stream subscribed to it.
fn start_watch(console: Console, tx: broadcast::Sender<Note>, cancel: Cancel) {
    tokio::task::spawn_blocking(move || {
        let ended = console.mr().watch(console.human(), None, &cancel, |s| {
            // No receiver at the moment is fine: the next stream looks for itself first.
            let _ = tx.send(Note::Mail(s.message.id, s.message.kind.as_str()));
            ControlFlow::Continue(())
        });
        if let Err(e) = ended {
            let _ = tx.send(Note::Trouble(format!("live updates stopped: {e}").into()));
        }
        // A failed watch is not reused: its streams end, and the next one starts a fresh watch.
        cancel.cancel();
        console.inner.hub.retire(&tx);
    });
}

#[derive(Debug, Deserialize, Default)]
pub struct EventsQuery {
    /// The newest message id the page shows: older ones are not announced again.
    after: Option<String>,
}

fn mail_event(id: MessageId, kind: &str) -> Event {
    Event::default().event("mail").data(format!("{id} {kind}"))
}

/// `event: mail` with the new message's id and kind, for each message that reaches HUMAN: what
/// is pending now and newer than the page, then what the server's watch sees arrive.
pub async fn events(
    State(c): State<Console>,
    PageQuery(q): PageQuery<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    let after = q.after.as_deref().and_then(MessageId::parse);
    // Subscribed before the look below, so a message landing in between is not missed.
    let (member, rx) = c.inner.hub.join(&c)?;
    let pending = c.blocking(|mr, me| mr.peek(me)).await??.messages;
    let mut announced: HashSet<MessageId> = HashSet::new();
    let mut first = Vec::new();
    let mut ids: Vec<_> = pending
        .iter()
        .map(|s| (s.message.id, s.message.kind.as_str()))
        .collect();
    ids.sort();
    for (id, kind) in ids {
        if after.is_none_or(|a| id > a) && announced.insert(id) {
            first.push(mail_event(id, kind));
        }
    }
    let later = BroadcastStream::new(rx).filter_map(move |note| {
        let _stays_while_the_stream_is_open = &member;
        futures_util::future::ready(forward(note, after, &mut announced))
    });
    let stream = futures_util::stream::iter(first).chain(later).map(Ok);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The event a stream sends for one note of the watch, if any.
fn forward(
    note: Result<Note, BroadcastStreamRecvError>,
    after: Option<MessageId>,
    announced: &mut HashSet<MessageId>,
) -> Option<Event> {
    match note {
        Ok(Note::Mail(id, kind)) => {
            (after.is_none_or(|a| id > a) && announced.insert(id)).then(|| mail_event(id, kind))
        }
        Ok(Note::Trouble(why)) => Some(Event::default().event("trouble").data(&*why)),
        // This page fell behind: which messages it missed is unknown, so it reloads.
        Err(BroadcastStreamRecvError::Lagged(_)) => {
            Some(Event::default().event("mail").data("more"))
        }
    }
}
