//! Channels under concurrency on the file store: readers as one member share one seen set, so
//! every entry is shown exactly once however reads and posts interleave; a retract racing
//! readers is never an error and, once it returned, nobody new is shown the entry.

use std::collections::HashSet;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use mailroom_core::message::BROADCAST;
use mailroom_core::ops::Draft;
use mailroom_core::{Address, Kind, Mailroom, MessageId, Name, State};
use mailroom_store_fs::FsStore;

const POSTS: usize = 60;
const RACE_ROUNDS: usize = 40;

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).expect("a canonical address")
}

fn web() -> Name {
    Name::parse("web").expect("a valid name")
}

fn post(store: &FsStore, from: &Address, channel: &str, body: String) -> MessageId {
    Mailroom::new(store)
        .post(
            from,
            &web(),
            channel,
            Draft {
                body,
                kind: Kind::Info,
                ..Draft::default()
            },
        )
        .expect("post")
        .message
        .id
}

/// What one read as `me` shows of `channel`: `channel read`, or `inbox` for the broadcast
/// channel.
fn read_once(store: &FsStore, me: &Address, channel: &str) -> Vec<MessageId> {
    let m = Mailroom::new(store);
    let shown = if channel == BROADCAST {
        m.inbox(me, None).expect("inbox").messages
    } else {
        match m.channel_read(me, &web(), channel, None) {
            Ok(read) => read.messages,
            // Until the writer's first post, the channel does not exist yet.
            Err(mailroom_core::Error::ChannelNotFound { .. }) => vec![],
            Err(e) => panic!("channel read: {e}"),
        }
    };
    shown.iter().map(|s| s.message.id).collect()
}

#[test]
fn two_readers_as_one_member_racing_a_writer_show_every_entry_exactly_once() {
    for channel in ["run-42", BROADCAST] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = FsStore::new(dir.path().join("home"));
        let (alice, bob) = (addr("alice@web"), addr("bob@web"));
        let writing = AtomicBool::new(true);
        let start = Barrier::new(3);
        let (posted, shown) = thread::scope(|s| {
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let mut shown = Vec::new();
                        while writing.load(Ordering::Acquire) {
                            shown.extend(read_once(&store, &bob, channel));
                        }
                        // Everything is posted now: one more read drains what is left.
                        shown.extend(read_once(&store, &bob, channel));
                        shown
                    })
                })
                .collect();
            let writer = s.spawn(|| {
                start.wait();
                let ids: Vec<MessageId> = (0..POSTS)
                    .map(|i| post(&store, &alice, channel, format!("entry {i}")))
                    .collect();
                writing.store(false, Ordering::Release);
                ids
            });
            let posted = writer.join().expect("the writer");
            let shown: Vec<Vec<MessageId>> = readers
                .into_iter()
                .map(|r| r.join().expect("a reader"))
                .collect();
            (posted, shown)
        });
        let all: Vec<MessageId> = shown.concat();
        let unique: HashSet<MessageId> = all.iter().copied().collect();
        assert_eq!(
            unique.len(),
            all.len(),
            "#{channel}: an entry was shown twice ({} shown, {} distinct)",
            all.len(),
            unique.len()
        );
        assert_eq!(
            unique,
            posted.iter().copied().collect::<HashSet<_>>(),
            "#{channel}: every entry shown, none lost"
        );
        // Order is promised within one read only: a directory listing that races an append
        // may return a later entry before an earlier one, which the next read then brings.
        assert!(
            read_once(&store, &bob, channel).is_empty(),
            "#{channel}: nothing left"
        );
        assert!(
            read_once(&store, &alice, channel).is_empty(),
            "#{channel}: never to its sender"
        );
    }
}

#[test]
fn a_retract_racing_readers_is_never_an_error_and_stops_new_deliveries() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = FsStore::new(dir.path().join("home"));
    let alice = addr("alice@web");
    let readers = [addr("bob@web"), addr("carol@web")];
    let (mut seen_before, mut missed) = (0, 0);
    for round in 0..RACE_ROUNDS {
        let id = post(&store, &alice, BROADCAST, format!("news #{round}"));
        let barrier = Barrier::new(readers.len() + 1);
        let (retracted, results) = thread::scope(|s| {
            let retractor = s.spawn(|| {
                barrier.wait();
                Mailroom::new(&store).retract(&alice, &web(), &id.to_string())
            });
            let handles: Vec<_> = readers
                .iter()
                .map(|me| {
                    let barrier = &barrier;
                    let store = &store;
                    s.spawn(move || {
                        barrier.wait();
                        Mailroom::new(store).inbox(me, None)
                    })
                })
                .collect();
            (
                retractor.join().expect("the retractor"),
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a reader"))
                    .collect::<Vec<_>>(),
            )
        });
        assert_eq!(retracted.expect("retract").id, id, "round {round}");
        for (me, result) in readers.iter().zip(results) {
            let inbox = result.unwrap_or_else(|e| panic!("round {round}: {me}'s inbox: {e}"));
            assert!(
                inbox.damaged.is_empty(),
                "round {round}: {me}: {:?}",
                inbox.damaged
            );
            let saw = inbox.messages.iter().any(|s| s.message.id == id);
            if saw {
                seen_before += 1;
            } else {
                missed += 1;
            }
            let (_, show) = Mailroom::new(&store)
                .channel_show(me, &web(), BROADCAST)
                .expect("show");
            let kept = show
                .messages
                .iter()
                .find(|s| s.message.id == id)
                .map(|s| s.state);
            assert_eq!(
                kept,
                saw.then_some(State::Retracted),
                "round {round}: {me} keeps it exactly when it was shown"
            );
            assert!(
                !read_once(&store, me, BROADCAST).contains(&id),
                "round {round}: {me} got it after the retract"
            );
        }
        let newcomer = addr(&format!("new{round}@web"));
        assert!(
            !read_once(&store, &newcomer, BROADCAST).contains(&id),
            "round {round}: a newcomer got a retracted broadcast"
        );
    }
    assert_eq!(seen_before + missed, RACE_ROUNDS * readers.len());
}
