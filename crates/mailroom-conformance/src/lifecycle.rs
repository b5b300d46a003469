//! Stories of the directed-mail lifecycle as its recipient lives it: unread → read → done, by
//! inbox, read, done and reply.

use mailroom_core::ops::Draft;
use mailroom_core::{Error, ErrorKind, Kind, Priority, State, Store, Stored};

use crate::kit::{addr, draft, err, mailroom, now, pending, send, state};

pub fn send_delivers_an_unread_copy_with_defaults(store: &dyn Store) {
    let m = mailroom(store);
    let body = "\n  Build is green\nmore detail\n";
    let sent = m
        .send(&addr("alice@web"), draft(&["bob@web"], body))
        .expect("send");
    assert!(!sent.duplicate);
    let msg = &sent.message;
    assert_eq!(msg.from, addr("alice@web"));
    assert_eq!(msg.to, vec![addr("bob@web")]);
    assert_eq!(msg.subject, "Build is green", "the body's first line");
    assert_eq!(msg.body, body, "the body is kept verbatim");
    assert_eq!(msg.kind, Kind::Info);
    assert_eq!(msg.priority, Priority::Medium);
    assert_eq!(msg.date, now());
    assert_eq!(msg.reply_to, None);
    assert_eq!(msg.thread, msg.id, "a new message starts its own thread");
    assert_eq!(msg.revision, 1);
    assert_eq!(msg.edited, None);

    let listing = m.peek(&addr("bob@web")).expect("peek");
    assert_eq!(
        listing.messages,
        vec![Stored {
            message: msg.clone(),
            state: State::Unread,
            warnings: vec![],
        }]
    );
    assert!(listing.damaged.is_empty());
    assert!(
        pending(store, "alice@web").is_empty(),
        "nothing for the sender"
    );
}

pub fn peek_changes_no_state(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");
    for _ in 0..2 {
        let listing = m.peek(&addr("bob@web")).expect("peek");
        assert_eq!(listing.messages.len(), 1);
        assert_eq!(listing.messages[0].state, State::Unread);
    }
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Unread));
}

pub fn inbox_reports_the_state_before_and_marks_shown_mail_read(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");

    let first = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert_eq!(first.more, 0);
    assert_eq!(first.messages.len(), 1);
    assert_eq!(first.messages[0].message, msg);
    assert_eq!(first.messages[0].state, State::Unread, "the state before");
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Read));

    let second = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert_eq!(second.messages.len(), 1, "read mail is delivered again");
    assert_eq!(second.messages[0].state, State::Read);
    assert_eq!(pending(store, "bob@web"), vec![(msg.id, State::Read)]);
}

pub fn inbox_shows_most_urgent_first_then_oldest(store: &dyn Store) {
    let m = mailroom(store);
    let mut ids = Vec::new();
    for (body, priority) in [
        ("low", Priority::Low),
        ("medium 1", Priority::Medium),
        ("high", Priority::High),
        ("medium 2", Priority::Medium),
    ] {
        let d = Draft {
            priority,
            ..draft(&["bob@web"], body)
        };
        ids.push(m.send(&addr("alice@web"), d).expect("send").message.id);
    }
    let inbox = m.inbox(&addr("bob@web"), None).expect("inbox");
    let shown: Vec<_> = inbox.messages.iter().map(|s| s.message.id).collect();
    assert_eq!(shown, vec![ids[2], ids[1], ids[3], ids[0]]);
}

pub fn inbox_limit_leaves_the_rest_unread(store: &dyn Store) {
    let m = mailroom(store);
    let ids: Vec<_> = (0..3)
        .map(|i| send(&m, "alice@web", &["bob@web"], &format!("message {i}")).id)
        .collect();
    let inbox = m.inbox(&addr("bob@web"), Some(1)).expect("inbox");
    assert_eq!(inbox.messages.len(), 1);
    assert_eq!(inbox.messages[0].message.id, ids[0], "the oldest first");
    assert_eq!(inbox.more, 2);
    assert_eq!(
        pending(store, "bob@web"),
        vec![
            (ids[0], State::Read),
            (ids[1], State::Unread),
            (ids[2], State::Unread)
        ]
    );
}

pub fn read_marks_read_and_reports_the_state_before(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");
    let id = msg.id.to_string();

    let first = m.read(&addr("bob@web"), &id, false).expect("read");
    assert_eq!(first.stored.message, msg);
    assert_eq!(first.stored.state, State::Unread);
    assert!(!first.archived);
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Read));

    let again = m.read(&addr("bob@web"), &id, false).expect("read");
    assert_eq!(again.stored.state, State::Read);
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Read));
}

pub fn read_with_archive_moves_to_done(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");
    let read = m
        .read(&addr("bob@web"), &msg.id.to_string(), true)
        .expect("read");
    assert_eq!(read.stored.state, State::Unread);
    assert!(read.archived);
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Done));
    assert!(pending(store, "bob@web").is_empty());
    let inbox = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert!(inbox.messages.is_empty(), "archived mail is not delivered");
}

pub fn read_shows_a_broadcast_of_the_project_as_it_is(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "hello");
    let b = crate::channels::broadcast(&m, "alice@web", "the spec changed");
    let read = m
        .read(&addr("bob@web"), &b.id.to_string(), true)
        .expect("read a broadcast by id");
    assert_eq!(read.stored.message.id, b.id);
    assert_eq!(read.stored.message.body, "the spec changed");
    assert!(!read.archived, "a broadcast has no state to move");
    // Retracted, it stays readable for who had seen it and for its sender, and for no one else.
    m.inbox(&addr("bob@web"), None).expect("bob sees it");
    m.retract(
        &addr("alice@web"),
        &crate::kit::name("web"),
        &b.id.to_string(),
    )
    .expect("retract");
    let kept = m
        .read(&addr("bob@web"), &b.id.to_string(), false)
        .expect("who saw it keeps it");
    assert_eq!(kept.stored.state, State::Retracted);
    m.read(&addr("alice@web"), &b.id.to_string(), false)
        .expect("its sender keeps it");
    let unseen = err(m.read(&addr("dave@web"), &b.id.to_string(), false));
    assert_eq!(unseen.kind(), ErrorKind::NotFound, "one who never saw it");
    let elsewhere = err(m.read(&addr("carol@api"), &b.id.to_string(), false));
    assert_eq!(
        elsewhere.kind(),
        ErrorKind::NotFound,
        "another project's member does not find it"
    );
}

pub fn done_archives_pending_mail_once(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let ids = vec![msg.id.to_string()];
    assert_eq!(
        m.done(&addr("bob@web"), &ids).expect("done"),
        vec![(msg.id, true)]
    );
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Done));
    assert_eq!(
        m.done(&addr("bob@web"), &ids).expect("done again"),
        vec![(msg.id, false)],
        "already done: nothing moved"
    );
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Done));
}

pub fn done_without_ids_is_invalid(store: &dyn Store) {
    let m = mailroom(store);
    let e = err(m.done(&addr("bob@web"), &[]));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.fix(), Some(mailroom_core::Fix::NameIds), "{e:?}");
}

pub fn done_checks_every_id_before_moving_any(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "hello");
    let e = err(m.done(
        &addr("bob@web"),
        &[msg.id.to_string(), "ZZZZZZZZZZ".to_owned()],
    ));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(matches!(e, Error::MessageNotFound { .. }), "{e:?}");
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Unread));
}

pub fn done_all_archives_every_pending_message(store: &dyn Store) {
    let m = mailroom(store);
    let a = send(&m, "alice@web", &["bob@web"], "one");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let b = send(&m, "alice@web", &["bob@web"], "two");
    let c = send(&m, "carol@web", &["bob@web"], "three");
    assert_eq!(m.done_all(&addr("bob@web")).expect("done --all"), 3);
    assert!(pending(store, "bob@web").is_empty());
    for id in [a.id, b.id, c.id] {
        assert_eq!(state(store, "bob@web", id), Some(State::Done));
    }
    assert_eq!(m.done_all(&addr("bob@web")).expect("done --all"), 0);
}

pub fn reply_answers_the_sender_in_the_thread_and_closes_the_original(store: &dyn Store) {
    let m = mailroom(store);
    let orig = m
        .send(
            &addr("alice@web"),
            Draft {
                subject: Some("Deploy plan".into()),
                ..draft(&["bob@web"], "Friday?")
            },
        )
        .expect("send")
        .message;
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let (sent, closed) = m
        .reply(
            &addr("bob@web"),
            &orig.id.to_string(),
            draft(&[], "Friday works"),
            false,
        )
        .expect("reply");
    assert!(closed);
    let r = &sent.message;
    assert_eq!(r.from, addr("bob@web"));
    assert_eq!(r.to, vec![addr("alice@web")]);
    assert_eq!(r.subject, "Re: Deploy plan");
    assert_eq!(r.reply_to, Some(orig.id));
    assert_eq!(r.thread, orig.id);
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Done));
    assert_eq!(pending(store, "alice@web"), vec![(r.id, State::Unread)]);
}

pub fn reply_chain_keeps_the_root_thread_and_one_re(store: &dyn Store) {
    let m = mailroom(store);
    let orig = m
        .send(
            &addr("alice@web"),
            Draft {
                subject: Some("Re: build".into()),
                ..draft(&["bob@web"], "it broke again")
            },
        )
        .expect("send")
        .message;
    let (first, _) = m
        .reply(
            &addr("bob@web"),
            &orig.id.to_string(),
            draft(&[], "looking"),
            false,
        )
        .expect("reply");
    assert_eq!(first.message.subject, "Re: build", "Re: is not doubled");
    let (second, _) = m
        .reply(
            &addr("alice@web"),
            &first.message.id.to_string(),
            draft(&[], "thanks"),
            false,
        )
        .expect("reply to the reply");
    assert_eq!(second.message.subject, "Re: build");
    assert_eq!(second.message.to, vec![addr("bob@web")]);
    assert_eq!(second.message.reply_to, Some(first.message.id));
    assert_eq!(
        second.message.thread, orig.id,
        "the thread is the root's id"
    );
}

pub fn reply_with_keep_open_leaves_the_original_pending(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "question");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let (_, closed) = m
        .reply(
            &addr("bob@web"),
            &orig.id.to_string(),
            draft(&[], "partial answer"),
            true,
        )
        .expect("reply");
    assert!(!closed);
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Read));
}

pub fn reply_closes_an_unread_original(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "question");
    let (_, closed) = m
        .reply(
            &addr("bob@web"),
            &orig.id.to_string(),
            draft(&[], "answer"),
            false,
        )
        .expect("reply");
    assert!(closed);
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Done));
}
