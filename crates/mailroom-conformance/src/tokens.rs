//! Access tokens: issued by the operator alone, kept as a hash, found by their secret while
//! live, gone on revocation, and with unique names.

use jiff::{SignedDuration, Timestamp};
use mailroom_core::token::hash_secret;
use mailroom_core::{ErrorKind, Mailroom, Store};

use crate::kit::{addr, err, mailroom, now};

fn an_hour_later() -> Timestamp {
    now() + SignedDuration::from_hours(1)
}

pub fn a_token_is_kept_as_a_hash_and_found_by_its_secret(store: &dyn Store) {
    let m = mailroom(store);
    let human = addr("HUMAN");
    let issued = m
        .add_token(&human, &addr("bob@web"), Some("ci"), None, &[1; 32])
        .unwrap();
    assert_eq!(issued.token.address, addr("bob@web"));
    assert_eq!(issued.token.hash, hash_secret(&issued.secret));
    let listed = m.tokens(&human).unwrap();
    assert_eq!(listed, vec![issued.token.clone()]);
    assert!(
        !format!("{listed:?}").contains(&issued.secret),
        "a store keeps no secret"
    );
    let found = m.authenticate(&issued.secret).unwrap().expect("live token");
    assert_eq!(found, issued.token);
    assert_eq!(m.authenticate("mailroom_wrong").unwrap(), None);
    assert_eq!(
        store.token_by_hash(&issued.token.hash).unwrap(),
        Some(issued.token)
    );
}

pub fn a_revoked_token_stops_authenticating_at_once(store: &dyn Store) {
    let m = mailroom(store);
    let human = addr("HUMAN");
    let a = m
        .add_token(&human, &addr("alice@web"), Some("a"), None, &[2; 32])
        .unwrap();
    let b = m
        .add_token(&human, &addr("bob@web"), None, None, &[3; 32])
        .unwrap();
    assert_eq!(m.revoke_token(&human, "A").unwrap().id, a.token.id);
    assert_eq!(m.authenticate(&a.secret).unwrap(), None);
    assert_eq!(m.revoke_token(&human, &b.token.id).unwrap().id, b.token.id);
    assert_eq!(m.authenticate(&b.secret).unwrap(), None);
    assert!(m.tokens(&human).unwrap().is_empty());
    assert_eq!(err(m.revoke_token(&human, "a")).kind(), ErrorKind::NotFound);
    assert!(!store.remove_token(&a.token.id).unwrap());
}

pub fn an_expired_token_no_longer_authenticates(store: &dyn Store) {
    let m = mailroom(store);
    let human = addr("HUMAN");
    let expires = now() + SignedDuration::from_mins(30);
    let t = m
        .add_token(&human, &addr("bob@web"), None, Some(expires), &[4; 32])
        .unwrap();
    assert_eq!(t.token.expires, Some(expires));
    assert!(m.authenticate(&t.secret).unwrap().is_some());
    let later = Mailroom::with_clock(store, an_hour_later);
    assert_eq!(later.authenticate(&t.secret).unwrap(), None);
    // Still listed, so the operator sees it and can revoke it.
    assert_eq!(later.tokens(&human).unwrap().len(), 1);
    let past = now() - SignedDuration::from_mins(1);
    let e = err(m.add_token(&human, &addr("bob@web"), None, Some(past), &[5; 32]));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(later.tokens(&human).unwrap().len(), 1);
}

pub fn only_the_operator_manages_tokens_and_names_are_unique(store: &dyn Store) {
    let m = mailroom(store);
    let human = addr("HUMAN");
    let bob = addr("bob@web");
    let e = err(m.add_token(&bob, &bob, None, None, &[6; 32]));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(err(m.tokens(&bob)).kind(), ErrorKind::Refused);
    let t = m
        .add_token(&human, &bob, Some("laptop"), None, &[7; 32])
        .unwrap();
    assert_eq!(
        err(m.revoke_token(&bob, "laptop")).kind(),
        ErrorKind::Refused
    );
    let e = err(m.add_token(&human, &addr("alice@web"), Some("Laptop"), None, &[8; 32]));
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let e = err(m.add_token(&human, &bob, Some("not a name!"), None, &[9; 32]));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = err(m.add_token(&human, &bob, None, None, &[7; 32]));
    assert_eq!(e.kind(), ErrorKind::Conflict, "the same secret twice");
    assert_eq!(m.tokens(&human).unwrap(), vec![t.token]);
}
