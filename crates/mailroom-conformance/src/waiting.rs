//! Stories of waiting as a front end drives it: `wait` returns what arrived, `watch` hands over
//! each message once, and both stop at their deadline or soon after their token is cancelled.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use mailroom_core::ops::{Cancel, WaitFor, Waited, Watched};
use mailroom_core::{MessageId, Store};

use crate::kit::{addr, mailroom, send};

/// Far longer than any of these stories should take: reaching it means a wait did not stop.
const NEVER: Duration = Duration::from_secs(30);

pub fn wait_returns_what_arrived_at_once(store: &dyn Store) {
    let m = mailroom(store);
    let sent = send(&m, "alice@web", &["bob@web"], "here already");
    let got = m
        .wait(
            &addr("bob@web"),
            &WaitFor::default(),
            Some(Instant::now() + NEVER),
            &Cancel::new(),
        )
        .expect("wait");
    match got {
        Waited::Arrived(found) => {
            let ids: Vec<MessageId> = found.iter().map(|s| s.message.id).collect();
            assert_eq!(ids, vec![sent.id]);
        }
        other => panic!("pending mail is returned at once, got {other:?}"),
    }
}

pub fn wait_times_out_at_its_deadline(store: &dyn Store) {
    let m = mailroom(store);
    let start = Instant::now();
    let got = m
        .wait(
            &addr("bob@web"),
            &WaitFor::default(),
            Some(start + Duration::from_millis(150)),
            &Cancel::new(),
        )
        .expect("wait");
    assert!(matches!(got, Waited::TimedOut), "got {got:?}");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(150) && took < NEVER,
        "took {took:?}"
    );
}

/// The token is set from another thread while the call may already be blocked: either way the
/// call returns `Cancelled`, long before any deadline.
pub fn wait_and_watch_stop_soon_when_cancelled(store: &dyn Store) {
    let m = mailroom(store);
    let bob = addr("bob@web");
    let cancel = Cancel::new();
    let start = Instant::now();
    let got = std::thread::scope(|s| {
        let c = cancel.clone();
        s.spawn(move || c.cancel());
        m.wait(&bob, &WaitFor::default(), None, &cancel)
    })
    .expect("wait");
    assert!(matches!(got, Waited::Cancelled), "got {got:?}");
    assert!(start.elapsed() < NEVER);

    let cancel = Cancel::new();
    let got = std::thread::scope(|s| {
        let c = cancel.clone();
        s.spawn(move || c.cancel());
        m.watch(&bob, None, &cancel, |_| ControlFlow::Continue(()))
    })
    .expect("watch");
    assert_eq!(got, Watched::Cancelled);
    assert!(start.elapsed() < NEVER);
}

pub fn watch_hands_over_each_message_once_until_told_to_stop(store: &dyn Store) {
    let m = mailroom(store);
    let bob = addr("bob@web");
    let first = send(&m, "alice@web", &["bob@web"], "one");
    let second = send(&m, "carol@web", &["bob@web"], "two");
    let mut seen = Vec::new();
    let got = m
        .watch(&bob, Some(Instant::now() + NEVER), &Cancel::new(), |s| {
            seen.push(s.message.id);
            if seen.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("watch");
    assert_eq!(got, Watched::Stopped);
    assert_eq!(seen, vec![first.id, second.id], "oldest first, each once");

    let mut again = Vec::new();
    let got = m
        .watch(
            &bob,
            Some(Instant::now() + Duration::from_millis(150)),
            &Cancel::new(),
            |s| {
                again.push(s.message.id);
                ControlFlow::Continue(())
            },
        )
        .expect("watch");
    assert_eq!(got, Watched::TimedOut);
    assert_eq!(again, vec![first.id, second.id], "watching marked nothing");
}
