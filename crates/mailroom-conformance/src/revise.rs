//! Stories of a sender changing its mind: edit in place while unread, a CORRECTION once read,
//! cancel while unread, and every refusal on the way.

use mailroom_core::ops::{EditOutcome, EditPatch};
use mailroom_core::text::MAX_BODY_BYTES;
use mailroom_core::{Error, ErrorKind, Kind, Priority, State, Store};

use crate::kit::{addr, err, mailroom, now, pending, send, state};

fn body_patch(body: &str) -> EditPatch {
    EditPatch {
        body: Some(body.to_owned()),
        ..EditPatch::default()
    }
}

pub fn edit_of_unread_mail_changes_it_in_place(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "first text");
    let report = m
        .edit(
            &addr("alice@web"),
            &orig.id.to_string(),
            EditPatch {
                subject: Some("New subject".into()),
                priority: Some(Priority::High),
                body: Some("second text".into()),
            },
        )
        .expect("edit");
    assert_eq!(
        report.outcomes,
        vec![(addr("bob@web"), EditOutcome::Edited)]
    );
    let new = &report.message;
    assert_eq!(new.id, orig.id, "same id");
    assert_eq!(new.revision, 2);
    assert_eq!(new.edited, Some(now()));
    assert_eq!(new.subject, "New subject");
    assert_eq!(new.priority, Priority::High);
    assert_eq!(new.body, "second text");
    assert_eq!((new.thread, new.date), (orig.thread, orig.date));

    let inbox = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert_eq!(inbox.messages.len(), 1, "one copy, edited in place");
    assert_eq!(&inbox.messages[0].message, new);
    assert_eq!(inbox.messages[0].state, State::Unread);

    let outbox = m.outbox(&addr("alice@web"), None).expect("outbox");
    assert_eq!(outbox.len(), 1, "the trace is updated, not doubled");
    assert_eq!(outbox[0].message.revision, 2);
    assert_eq!(
        outbox[0].recipients,
        vec![(addr("bob@web"), Some(State::Read))]
    );
}

pub fn edit_of_read_mail_sends_a_correction_in_the_thread(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "meet at 10");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let report = m
        .edit(
            &addr("alice@web"),
            &orig.id.to_string(),
            body_patch("meet at 11"),
        )
        .expect("edit");
    let [(to, EditOutcome::Corrected(cid))] = report.outcomes.as_slice() else {
        panic!("expected one correction, got {:?}", report.outcomes);
    };
    assert_eq!(to, &addr("bob@web"));
    assert_ne!(*cid, orig.id);

    let listing = m.peek(&addr("bob@web")).expect("peek");
    assert_eq!(listing.messages.len(), 2);
    let kept = listing
        .messages
        .iter()
        .find(|s| s.message.id == orig.id)
        .expect("the original stays");
    assert_eq!(kept.message, orig, "the read copy is never rewritten");
    assert_eq!(kept.state, State::Read);
    let c = listing
        .messages
        .iter()
        .find(|s| s.message.id == *cid)
        .expect("the correction arrived");
    assert_eq!(c.state, State::Unread);
    assert_eq!(c.message.kind, Kind::Correction);
    assert_eq!(c.message.reply_to, Some(orig.id));
    assert_eq!(c.message.thread, orig.thread);
    assert_eq!(c.message.from, addr("alice@web"));
    assert_eq!(c.message.to, vec![addr("bob@web")]);
    assert!(c.message.subject.starts_with("CORRECTION"), "{c:?}");
    assert!(c.message.body.contains("meet at 11"), "{c:?}");
    assert!(c.message.body.contains(&orig.id.to_string()), "{c:?}");
}

pub fn edit_without_changes_is_invalid_and_changes_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    let e = err(m.edit(
        &addr("alice@web"),
        &orig.id.to_string(),
        EditPatch::default(),
    ));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(e.fix(), Some(mailroom_core::Fix::GiveChanges), "{e:?}");
    let copy = store
        .get(&addr("bob@web"), orig.id)
        .expect("get")
        .expect("the copy");
    assert_eq!((copy.message, copy.state), (orig, State::Unread));
}

pub fn edit_with_oversize_body_is_invalid_and_changes_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    let e = err(m.edit(
        &addr("alice@web"),
        &orig.id.to_string(),
        body_patch(&"x".repeat(MAX_BODY_BYTES + 1)),
    ));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let copy = store
        .get(&addr("bob@web"), orig.id)
        .expect("get")
        .expect("the copy");
    assert_eq!((copy.message, copy.state), (orig, State::Unread));
    assert_eq!(pending(store, "bob@web").len(), 1, "no correction either");
}

pub fn edit_of_a_received_message_is_refused_as_not_sender(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    let e = err(m.edit(&addr("bob@web"), &orig.id.to_string(), body_patch("forged")));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(&e, Error::NotSender { id, sender, .. } if *id == orig.id && *sender == addr("alice@web")),
        "{e:?}"
    );
    let copy = store
        .get(&addr("bob@web"), orig.id)
        .expect("get")
        .expect("the copy");
    assert_eq!(copy.message, orig);
}

pub fn edit_of_an_unknown_id_is_not_found(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "text");
    let e = err(m.edit(&addr("alice@web"), "ZZZZZZZZZZ", body_patch("x")));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(matches!(e, Error::MessageNotFound { .. }), "{e:?}");
}

pub fn edit_of_cancelled_mail_delivers_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    m.cancel(&addr("alice@web"), &orig.id.to_string())
        .expect("cancel");
    let report = m
        .edit(&addr("alice@web"), &orig.id.to_string(), body_patch("more"))
        .expect("edit");
    assert_eq!(
        report.outcomes,
        vec![(addr("bob@web"), EditOutcome::Cancelled)]
    );
    assert!(pending(store, "bob@web").is_empty());
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Cancelled));
}

pub fn edit_reaches_each_recipient_by_its_state(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web", "carol@web"], "v1");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let report = m
        .edit(&addr("alice@web"), &orig.id.to_string(), body_patch("v2"))
        .expect("edit");
    assert_eq!(report.outcomes.len(), 2);
    assert!(
        matches!(report.outcomes[0], (ref a, EditOutcome::Corrected(_)) if *a == addr("bob@web")),
        "{report:?}"
    );
    assert_eq!(report.outcomes[1], (addr("carol@web"), EditOutcome::Edited));
    let carol = store
        .get(&addr("carol@web"), orig.id)
        .expect("get")
        .expect("carol's copy");
    assert_eq!(carol.message.body, "v2");
    assert_eq!(
        pending(store, "carol@web").len(),
        1,
        "no correction for carol"
    );
    let bob = store
        .get(&addr("bob@web"), orig.id)
        .expect("get")
        .expect("bob's copy");
    assert_eq!(bob.message.body, "v1");
}

pub fn cancel_of_unread_mail_withdraws_it(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "never mind");
    let report = m
        .cancel(&addr("alice@web"), &orig.id.to_string())
        .expect("cancel");
    assert_eq!(report.id, orig.id);
    assert_eq!(report.outcomes, vec![(addr("bob@web"), State::Cancelled)]);
    assert_eq!(report.cancelled_now, vec![addr("bob@web")]);
    // Cancelling again changes nothing and says so.
    let again = m
        .cancel(&addr("alice@web"), &orig.id.to_string())
        .expect("a second cancel");
    assert_eq!(again.outcomes, vec![(addr("bob@web"), State::Cancelled)]);
    assert!(again.cancelled_now.is_empty(), "{again:?}");
    let inbox = m.inbox(&addr("bob@web"), None).expect("inbox");
    assert!(inbox.messages.is_empty(), "{inbox:?}");
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Cancelled));
    let outbox = m.outbox(&addr("alice@web"), None).expect("outbox");
    assert_eq!(
        outbox[0].recipients,
        vec![(addr("bob@web"), Some(State::Cancelled))]
    );
}

pub fn cancel_of_read_mail_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let e = err(m.cancel(&addr("alice@web"), &orig.id.to_string()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(&e, Error::NotCancellable { id, recipient, state: State::Read }
            if *id == orig.id && *recipient == addr("bob@web")),
        "{e:?}"
    );
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Read));
}

pub fn cancel_of_archived_mail_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    m.done(&addr("bob@web"), &[orig.id.to_string()])
        .expect("done");
    let e = err(m.cancel(&addr("alice@web"), &orig.id.to_string()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(
            e,
            Error::NotCancellable {
                state: State::Done,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Done));
}

pub fn cancel_of_a_received_message_is_refused_as_not_sender(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    let e = err(m.cancel(&addr("bob@web"), &orig.id.to_string()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(&e, Error::NotSender { sender, .. } if *sender == addr("alice@web")),
        "{e:?}"
    );
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Unread));
}

pub fn cancel_withdraws_only_the_unread_copies(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web", "carol@web"], "text");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    let report = m
        .cancel(&addr("alice@web"), &orig.id.to_string())
        .expect("cancel");
    assert_eq!(
        report.outcomes,
        vec![
            (addr("bob@web"), State::Read),
            (addr("carol@web"), State::Cancelled)
        ]
    );
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Read));
    assert!(pending(store, "carol@web").is_empty());
}

pub fn done_of_cancelled_mail_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let orig = send(&m, "alice@web", &["bob@web"], "text");
    m.cancel(&addr("alice@web"), &orig.id.to_string())
        .expect("cancel");
    let e = err(m.done(&addr("bob@web"), &[orig.id.to_string()]));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(
            e,
            Error::WrongState {
                state: State::Cancelled,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(state(store, "bob@web", orig.id), Some(State::Cancelled));
}
