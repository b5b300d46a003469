//! Live updates: one server-sent event stream per open page, fed by the core's `watch` of
//! HUMAN's mailbox on a blocking thread. Invariant: a watch runs exactly as long as its
//! stream: a closed page, or the server stopping, sets its `Cancel` (noticed within 100 ms).

use std::convert::Infallible;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use mailroom_core::MessageId;
use mailroom_core::ops::Cancel;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::Console;

/// Every open stream's `Cancel`, so the server can end them all when it stops.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<Mutex<StopState>>);

#[derive(Debug, Default)]
struct StopState {
    stopped: bool,
    open: Vec<Cancel>,
}

impl Stop {
    /// Registers a new stream's token; false once the server is stopping.
    fn register(&self, cancel: &Cancel) -> bool {
        let Ok(mut s) = self.0.lock() else {
            return false;
        };
        s.open.retain(|c| !c.is_cancelled());
        if s.stopped {
            return false;
        }
        s.open.push(cancel.clone());
        true
    }

    pub fn stop(&self) {
        if let Ok(mut s) = self.0.lock() {
            s.stopped = true;
            for c in s.open.drain(..) {
                c.cancel();
            }
        }
    }
}

#[derive(Debug, Deserialize, Default)]
pub struct EventsQuery {
    /// The newest message id the page shows: older ones are not announced again.
    after: Option<String>,
}

/// Sets the watch's `Cancel` when the stream is dropped (the page closed).
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// `event: mail` with the new message's id and kind, for each message that reaches HUMAN.
pub async fn events(
    State(c): State<Console>,
    Query(q): Query<EventsQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let after = q.after.as_deref().and_then(MessageId::parse);
    let (tx, rx) = mpsc::channel::<Event>(64);
    let cancel = Cancel::new();
    let guard = CancelOnDrop(cancel.clone());
    if c.inner.stop.register(&cancel) {
        let console = c.clone();
        tokio::task::spawn_blocking(move || {
            let ended = console.mr().watch(console.human(), None, &cancel, |s| {
                let m = &s.message;
                if after.is_some_and(|a| m.id <= a) {
                    return ControlFlow::Continue(());
                }
                let event =
                    Event::default()
                        .event("mail")
                        .data(format!("{} {}", m.id, m.kind.as_str()));
                match tx.blocking_send(event) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            });
            if let Err(e) = ended {
                let _ = tx.blocking_send(
                    Event::default()
                        .event("trouble")
                        .data(format!("live updates stopped: {e}")),
                );
            }
        });
    }
    let stream = futures_util::StreamExt::map(ReceiverStream::new(rx), move |e| {
        let _keep = &guard;
        Ok(e)
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
