//! Stories of sending: several recipients, retry-safe keys, and input refused before any write.

use mailroom_core::ops::{Draft, MAX_RECIPIENTS};
use mailroom_core::store::KeyClaim;
use mailroom_core::text::{MAX_BODY_BYTES, MAX_SUBJECT_CHARS};
use mailroom_core::{Error, ErrorKind, Kind, Message, Priority, State, Store};

use crate::kit::{addr, draft, err, mailroom, pending, send, state};

pub fn several_recipients_each_get_their_own_copy_and_lifecycle(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web", "carol@web"], "to both");
    assert_eq!(msg.to, vec![addr("bob@web"), addr("carol@web")]);
    m.inbox(&addr("bob@web"), None).expect("bob reads");
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Read));
    assert_eq!(state(store, "carol@web", msg.id), Some(State::Unread));

    let outbox = m.outbox(&addr("alice@web"), None).expect("outbox");
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].message, msg);
    assert_eq!(
        outbox[0].recipients,
        vec![
            (addr("bob@web"), Some(State::Read)),
            (addr("carol@web"), Some(State::Unread))
        ]
    );

    m.done(&addr("bob@web"), &[msg.id.to_string()])
        .expect("bob is done");
    let outbox = m.outbox(&addr("alice@web"), None).expect("outbox");
    assert_eq!(
        outbox[0].recipients,
        vec![
            (addr("bob@web"), Some(State::Done)),
            (addr("carol@web"), Some(State::Unread))
        ]
    );
}

pub fn a_repeated_recipient_gets_one_copy(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob", "bob@web"], "once");
    assert_eq!(msg.to, vec![addr("bob@web")]);
    assert_eq!(pending(store, "bob@web"), vec![(msg.id, State::Unread)]);
}

fn keyed(to: &str, body: &str, key: &str) -> Draft {
    Draft {
        idempotency_key: Some(key.to_owned()),
        ..draft(&[to], body)
    }
}

pub fn same_key_from_the_same_sender_delivers_once(store: &dyn Store) {
    let m = mailroom(store);
    let first = m
        .send(&addr("alice@web"), keyed("bob@web", "deploy now", "k-1"))
        .expect("send");
    assert!(!first.duplicate);
    let retry = m
        .send(&addr("alice@web"), keyed("bob@web", "deploy now!", "k-1"))
        .expect("retry");
    assert!(retry.duplicate);
    assert_eq!(retry.message.id, first.message.id);
    assert_eq!(retry.message, first.message, "the first message stands");
    assert!(!retry.notices.is_empty());
    assert_eq!(
        pending(store, "bob@web"),
        vec![(first.message.id, State::Unread)]
    );
    assert_eq!(m.outbox(&addr("alice@web"), None).expect("outbox").len(), 1);
}

pub fn same_key_from_another_sender_is_independent(store: &dyn Store) {
    let m = mailroom(store);
    let a = m
        .send(&addr("alice@web"), keyed("bob@web", "from alice", "k-1"))
        .expect("send");
    let c = m
        .send(&addr("carol@web"), keyed("bob@web", "from carol", "k-1"))
        .expect("send");
    assert!(!c.duplicate);
    assert_ne!(a.message.id, c.message.id);
    assert_eq!(pending(store, "bob@web").len(), 2);
}

pub fn a_keyed_retry_finishes_an_interrupted_send_and_names_who_got_it_now(store: &dyn Store) {
    let m = mailroom(store);
    let alice = addr("alice@web");
    // What a send interrupted mid-way can leave: its key claimed, bob's copy, nothing else.
    let first = Message {
        to: vec![addr("bob@web"), addr("carol@web")],
        ..crate::kit::message("alice@web", "bob@web", "deploy now")
    };
    assert_eq!(
        store.claim_key(&alice, "k-1", first.id).expect("claim"),
        KeyClaim::Claimed
    );
    store.deliver(&addr("bob@web"), &first).expect("bob's copy");

    let retry = m
        .send(
            &alice,
            Draft {
                idempotency_key: Some("k-1".into()),
                ..draft(&["bob@web", "carol@web"], "deploy now")
            },
        )
        .expect("retry");
    assert!(retry.duplicate);
    assert_eq!(retry.message.id, first.id, "the first id stands");
    assert_eq!(retry.delivered_now, vec![addr("carol@web")]);
    assert!(retry.notices.iter().any(|n| n.contains("carol@web")));
    for to in ["bob@web", "carol@web"] {
        assert_eq!(pending(store, to), vec![(first.id, State::Unread)], "{to}");
    }
    let again = m
        .send(
            &alice,
            Draft {
                idempotency_key: Some("k-1".into()),
                ..draft(&["bob@web", "carol@web"], "deploy now")
            },
        )
        .expect("retry again");
    assert!(again.duplicate && again.delivered_now.is_empty());
    assert_eq!(m.outbox(&alice, None).expect("outbox").len(), 1);
}

pub fn a_send_names_at_most_max_recipients(store: &dyn Store) {
    let m = mailroom(store);
    let names: Vec<String> = (0..=MAX_RECIPIENTS).map(|i| format!("r{i}@web")).collect();
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    let e = err(m.send(&addr("alice@web"), draft(&all, "too many")));
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e:?}");
    assert!(
        e.to_string().contains(&MAX_RECIPIENTS.to_string()),
        "names the limit: {e}"
    );
    assert!(
        m.projects().expect("projects").is_empty(),
        "nothing created"
    );

    let msg = send(
        &m,
        "alice@web",
        &all[..MAX_RECIPIENTS],
        "as many as allowed",
    );
    assert_eq!(msg.to.len(), MAX_RECIPIENTS);
    assert_eq!(pending(store, "r99@web"), vec![(msg.id, State::Unread)]);
    assert!(pending(store, "r100@web").is_empty());
}

pub fn oversize_body_is_invalid_and_changes_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let e = err(m.send(
        &addr("alice@web"),
        draft(&["bob@web"], &"x".repeat(MAX_BODY_BYTES + 1)),
    ));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
    assert!(
        m.projects().expect("projects").is_empty(),
        "nothing created"
    );
    assert!(pending(store, "bob@web").is_empty());
    assert!(
        m.outbox(&addr("alice@web"), None)
            .expect("outbox")
            .is_empty()
    );
}

pub fn body_of_exactly_the_limit_is_accepted(store: &dyn Store) {
    let m = mailroom(store);
    let body = "x".repeat(MAX_BODY_BYTES);
    let msg = send(&m, "alice@web", &["bob@web"], &body);
    let copy = store
        .get(&addr("bob@web"), msg.id)
        .expect("get")
        .expect("the copy");
    assert_eq!(copy.message.body.len(), MAX_BODY_BYTES);
}

pub fn invalid_drafts_are_refused_before_any_write(store: &dyn Store) {
    let m = mailroom(store);
    let cases: Vec<(&str, Draft)> = vec![
        ("empty message", draft(&["bob@web"], "  \n")),
        ("no recipient", draft(&[], "hello")),
        (
            "long subject",
            Draft {
                subject: Some("s".repeat(MAX_SUBJECT_CHARS + 1)),
                ..draft(&["bob@web"], "hello")
            },
        ),
        ("empty key", keyed("bob@web", "hello", "")),
        ("long key", keyed("bob@web", "hello", &"k".repeat(101))),
        ("control in key", keyed("bob@web", "hello", "k\n1")),
        (
            "one bad recipient among good ones",
            draft(&["bob@web", "../x"], "hello"),
        ),
    ];
    for (what, d) in cases {
        let e = err(m.send(&addr("alice@web"), d));
        assert_eq!(e.kind(), ErrorKind::Invalid, "{what}: {e:?}");
    }
    assert!(
        m.projects().expect("projects").is_empty(),
        "nothing created"
    );
    assert!(pending(store, "bob@web").is_empty());
}

pub fn subject_kind_and_priority_are_kept_on_one_line(store: &dyn Store) {
    let m = mailroom(store);
    let sent = m
        .send(
            &addr("alice@web"),
            Draft {
                subject: Some("a\nb\r\n---\tc".into()),
                kind: Kind::Question,
                priority: Priority::High,
                ..draft(&["bob@web"], "body")
            },
        )
        .expect("send");
    assert_eq!(sent.message.subject, "a b --- c");
    let copy = store
        .get(&addr("bob@web"), sent.message.id)
        .expect("get")
        .expect("the copy");
    assert_eq!(copy.message, sent.message);
    assert_eq!(copy.message.kind, Kind::Question);
    assert_eq!(copy.message.priority, Priority::High);
}

/// A pinned clock pins ids too: every new message's id carries the clock's instant, and its
/// date is that instant to the second; sends, replies, corrections, broadcasts and handovers.
pub fn ids_and_dates_come_from_the_same_clock(store: &dyn Store) {
    fn clock() -> jiff::Timestamp {
        "2026-03-13T14:22:00.250Z".parse().expect("RFC 3339")
    }
    let m = mailroom_core::Mailroom::with_clock(store, clock);
    let whole: jiff::Timestamp = "2026-03-13T14:22:00Z".parse().expect("RFC 3339");
    let agree = |what: &str, msg: &Message| {
        assert_eq!(
            msg.id.timestamp(),
            clock(),
            "{what}: the id carries the clock's instant"
        );
        assert_eq!(
            msg.date, whole,
            "{what}: the date is that instant to the second"
        );
    };
    // The cases' clock reads whole seconds: there the id's time is the date itself.
    let pinned = send(&mailroom(store), "alice@web", &["carol@web"], "pinned");
    assert_eq!(pinned.id.timestamp(), pinned.date);
    assert_eq!(pinned.date, crate::kit::now());
    let sent = send(&m, "alice@web", &["bob@web"], "first");
    agree("send", &sent);
    m.inbox(&addr("bob@web"), None).expect("bob reads");
    let (reply, _) = m
        .reply(
            &addr("bob@web"),
            &sent.id.to_string(),
            draft(&[], "ok"),
            true,
        )
        .expect("reply");
    agree("reply", &reply.message);
    let edit = m
        .edit(
            &addr("alice@web"),
            &sent.id.to_string(),
            mailroom_core::ops::EditPatch {
                body: Some("second".into()),
                ..Default::default()
            },
        )
        .expect("edit");
    let correction = match edit.outcomes.as_slice() {
        [(_, mailroom_core::ops::EditOutcome::Corrected(id))] => *id,
        other => panic!("a read copy gets a correction, got {other:?}"),
    };
    let stored = store
        .get(&addr("bob@web"), correction)
        .expect("get")
        .expect("the correction was delivered");
    agree("correction", &stored.message);
    let project = addr("alice@web").project().cloned().expect("a project");
    let posted = m
        .broadcast(&addr("alice@web"), &project, draft(&[], "news"))
        .expect("broadcast");
    agree("broadcast", &posted.message);
    let note = m
        .handover(&addr("alice@web"), "notes".into(), None, Priority::Medium)
        .expect("handover");
    agree("handover", &note.message);
}
