//! Stories of naming a message by a prefix of its id: unique, ambiguous, unknown, malformed.

use mailroom_core::{Error, ErrorKind, MessageId, State, Store};

use crate::kit::{addr, common_prefix, err, mailroom, send, state};

/// The shortest prefix of `id` that none of `others` starts with.
fn unique_prefix(id: MessageId, others: &[MessageId]) -> String {
    let text = id.to_string();
    (1..=text.len())
        .map(|n| text[..n].to_owned())
        .find(|p| {
            others
                .iter()
                .all(|o| *o == id || !o.to_string().starts_with(p))
        })
        .expect("a full id is unique")
}

pub fn unique_id_prefix_finds_the_message(store: &dyn Store) {
    let m = mailroom(store);
    let ids: Vec<_> = (0..3)
        .map(|i| send(&m, "alice@web", &["bob@web"], &format!("message {i}")).id)
        .collect();
    for &id in &ids {
        let prefix = unique_prefix(id, &ids).to_lowercase();
        let read = m
            .read(&addr("bob@web"), &prefix, false)
            .expect("a unique prefix, in any case, names one message");
        assert_eq!(read.stored.message.id, id, "prefix {prefix}");
    }
}

pub fn ambiguous_id_prefix_is_a_conflict_listing_candidates(store: &dyn Store) {
    let m = mailroom(store);
    let a = send(&m, "alice@web", &["bob@web"], "one");
    let b = send(&m, "alice@web", &["bob@web"], "two");
    let prefix = common_prefix(a.id, b.id);
    assert!(!prefix.is_empty(), "ids made together share their time");
    let e = err(m.read(&addr("bob@web"), &prefix, false));
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let Error::AmbiguousId { candidates, .. } = &e else {
        panic!("expected AmbiguousId, got {e:?}");
    };
    let mut candidates = candidates.clone();
    candidates.sort();
    assert_eq!(candidates, vec![a.id.to_string(), b.id.to_string()]);
    assert_eq!(state(store, "bob@web", a.id), Some(State::Unread));
    assert_eq!(state(store, "bob@web", b.id), Some(State::Unread));
}

pub fn unknown_id_is_not_found(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "one");
    let absent = MessageId::generate().to_string();
    for prefix in ["ZZZZZZZZZZ", absent.as_str()] {
        let e = err(m.read(&addr("bob@web"), prefix, false));
        assert_eq!(e.kind(), ErrorKind::NotFound, "{prefix}");
        assert!(
            matches!(&e, Error::MessageNotFound { mailbox, .. } if *mailbox == addr("bob@web")),
            "{e:?}"
        );
    }
}

pub fn malformed_id_is_invalid(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "one");
    for prefix in ["", "  ", "not an id", "../x", &"0".repeat(27)] {
        let e = err(m.read(&addr("bob@web"), prefix, false));
        assert_eq!(e.kind(), ErrorKind::Invalid, "{prefix:?}: {e:?}");
    }
}

pub fn id_prefix_prefers_pending_over_archived_mail(store: &dyn Store) {
    let m = mailroom(store);
    let old = send(&m, "alice@web", &["bob@web"], "archived");
    let live = send(&m, "alice@web", &["bob@web"], "pending");
    m.done(&addr("bob@web"), &[old.id.to_string()])
        .expect("done");
    let prefix = common_prefix(old.id, live.id);
    let read = m
        .read(&addr("bob@web"), &prefix, false)
        .expect("pending mail is matched first");
    assert_eq!(read.stored.message.id, live.id);
}

pub fn full_id_finds_archived_mail(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "archived");
    m.done(&addr("bob@web"), &[msg.id.to_string()])
        .expect("done");
    let read = m
        .read(&addr("bob@web"), &msg.id.to_string(), false)
        .expect("read");
    assert_eq!(read.stored.state, State::Done);
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Done));
}

pub fn another_mailboxs_message_is_not_found(store: &dyn Store) {
    let m = mailroom(store);
    let msg = send(&m, "alice@web", &["bob@web"], "for bob only");
    let e = err(m.read(&addr("carol@web"), &msg.id.to_string(), false));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(state(store, "bob@web", msg.id), Some(State::Unread));
}
