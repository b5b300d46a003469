//! Stories of what is kept after it is done: recover, restore, handover notes, and search over
//! the archive and the outbox.

use jiff::{SignedDuration, Timestamp};
use mailroom_core::ops::Draft;
use mailroom_core::{Error, ErrorKind, Kind, MessageId, Priority, State, Store};

use crate::kit::{addr, draft, err, mailroom, pending, send, state};

fn recovered(store: &dyn Store, limit: usize) -> Vec<MessageId> {
    mailroom(store)
        .recover(&addr("bob@web"), limit)
        .expect("recover")
        .into_iter()
        .map(|(s, _)| s.message.id)
        .collect()
}

pub fn recover_lists_archived_mail_most_recent_first(store: &dyn Store) {
    let m = mailroom(store);
    assert!(recovered(store, 10).is_empty(), "nothing archived yet");
    let a = send(&m, "alice@web", &["bob@web"], "one");
    let b = send(&m, "alice@web", &["bob@web"], "two");
    let c = send(&m, "alice@web", &["bob@web"], "three");
    m.read(&addr("bob@web"), &a.id.to_string(), true)
        .expect("read and archive");
    m.done(&addr("bob@web"), &[b.id.to_string()]).expect("done");

    assert_eq!(recovered(store, 10), vec![b.id, a.id]);
    assert_eq!(recovered(store, 1), vec![b.id]);
    assert_eq!(state(store, "bob@web", c.id), Some(State::Unread));

    let listed = m.recover(&addr("bob@web"), 10).expect("recover");
    let real_now = Timestamp::now();
    for (stored, archived_at) in &listed {
        assert_eq!(stored.state, State::Done);
        let age = real_now.duration_since(*archived_at);
        assert!(
            age >= SignedDuration::from_secs(-5) && age <= SignedDuration::from_secs(3600),
            "archived at {archived_at}, now {real_now}"
        );
    }
}

pub fn recover_orders_by_archive_time_not_by_id(store: &dyn Store) {
    let m = mailroom(store);
    let older = send(&m, "alice@web", &["bob@web"], "older message");
    let newer = send(&m, "alice@web", &["bob@web"], "newer message");
    m.done(&addr("bob@web"), &[newer.id.to_string()])
        .expect("done");
    m.done(&addr("bob@web"), &[older.id.to_string()])
        .expect("done");
    assert_eq!(
        recovered(store, 10),
        vec![older.id, newer.id],
        "the one archived last comes first"
    );
    assert_eq!(recovered(store, 1), vec![older.id]);
}

pub fn restore_puts_archived_mail_back_to_pending_as_read(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "keep me");
    m.read(&addr("bob@web"), &msg.id.to_string(), true)
        .expect("read and archive");
    assert!(pending(store, "bob@web").is_empty());

    let restored = m
        .restore(&addr("bob@web"), &msg.id.to_string())
        .expect("restore");
    assert_eq!(restored.message, msg);
    assert_eq!(restored.state, State::Read);
    assert_eq!(pending(store, "bob@web"), vec![(msg.id, State::Read)]);
    let inbox = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert_eq!(inbox.messages.len(), 1, "delivered again");
    assert!(recovered(store, 10).is_empty());
}

pub fn restore_of_pending_mail_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "still here");
    let e = err(m.restore(&addr("bob@web"), &msg.id.to_string()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(
            e,
            Error::WrongState {
                state: State::Unread,
                expected: "done",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Unread));
}

pub fn handover_goes_to_ones_own_mailbox(store: &dyn Store) {
    let m = mailroom(store);
    let sent = m
        .handover(
            &addr("alice@web"),
            "Continue with the migration\nstep 3 is next".into(),
            None,
            Priority::High,
        )
        .expect("handover");
    let h = &sent.message;
    assert_eq!(h.from, addr("alice@web"));
    assert_eq!(h.to, vec![addr("alice@web")]);
    assert_eq!(h.kind, Kind::Handover);
    assert_eq!(h.priority, Priority::High);
    assert_eq!(h.subject, "Handover: Continue with the migration");
    let inbox = m.inbox(&addr("alice@web"), None).expect("inbox");
    assert_eq!(inbox.messages.len(), 1);
    assert_eq!(&inbox.messages[0].message, h);
}

pub fn search_finds_archived_and_sent_mail_case_insensitively(store: &dyn Store) {
    let m = mailroom(store);
    let hit = m
        .send(
            &addr("alice@web"),
            Draft {
                subject: Some("Deploy Window".into()),
                ..draft(&["bob@web"], "Friday at Ten")
            },
        )
        .expect("send")
        .message;
    send(&m, "alice@web", &["bob@web"], "unrelated");
    m.done_all(&addr("bob@web")).expect("archive");

    let found = m.search(&addr("bob@web"), "deploy WINDOW").expect("search");
    let ids: Vec<_> = found.hits.iter().map(|h| h.stored.message.id).collect();
    assert_eq!(ids, vec![hit.id], "the archive is searched");
    assert_eq!(found.hits[0].stored.state, State::Done);
    assert!(!found.hits[0].sent);

    let by_body = m.search(&addr("bob@web"), "friday at ten").expect("search");
    assert_eq!(by_body.hits.len(), 1, "the body is searched too");

    let sent = m.search(&addr("alice@web"), "DEPLOY").expect("search");
    assert_eq!(sent.hits.len(), 1, "the outbox is searched");
    assert!(sent.hits[0].sent);
    assert_eq!(sent.hits[0].stored.message.id, hit.id);
    assert_eq!(sent.hits[0].stored.state, State::Done, "bob's state");

    let none = m.search(&addr("carol@web"), "deploy").expect("search");
    assert!(none.hits.is_empty());
}

pub fn search_with_an_empty_query_is_invalid(store: &dyn Store) {
    let m = mailroom(store);
    let e = err(m.search(&addr("bob@web"), "  "));
    assert_eq!(e.kind(), ErrorKind::Invalid);
}
