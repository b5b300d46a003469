//! The `Store` trait's own contract, method by method, for what the operations above cannot
//! show: idempotent creation, at-most-once moves, "not found" as an empty answer.

use mailroom_core::store::{Delivery, KeyClaim, OriginClaim, Revisions};
use mailroom_core::{
    Address, Listing, Member, MemberStatus, Message, MessageId, Policy, Project, State, Store,
};

use crate::kit::{addr, message, name, now};

fn ids(listing: &Listing) -> Vec<(MessageId, State)> {
    listing
        .messages
        .iter()
        .map(|s| (s.message.id, s.state))
        .collect()
}

pub fn deliver_keeps_the_first_copy_of_an_id(store: &dyn Store) {
    let bob = addr("bob@web");
    let first = message("alice@web", "bob@web", "first");
    assert!(store.deliver(&bob, &first).expect("deliver"));
    let second = Message {
        body: "second".into(),
        ..first.clone()
    };
    assert!(!store.deliver(&bob, &second).expect("deliver again"));
    let copy = store.get(&bob, first.id).expect("get").expect("the copy");
    assert_eq!((copy.message, copy.state), (first, State::Unread));
    assert_eq!(store.pending(&bob).expect("pending").messages.len(), 1);
}

pub fn deliver_all_publishes_every_copy_and_one_outbox_trace(store: &dyn Store) {
    let message = Message {
        to: vec![addr("bob@web"), addr("carol@api")],
        ..message("alice@web", "bob@web", "to both")
    };
    assert_eq!(
        store
            .deliver_all(&message.to, &message)
            .expect("deliver_all"),
        Delivery {
            new: vec![true, true],
            trace_error: None
        }
    );
    for to in &message.to {
        let copy = store.get(to, message.id).expect("get").expect("a copy");
        assert_eq!((copy.message, copy.state), (message.clone(), State::Unread));
    }
    assert_eq!(
        store.outbox(&addr("alice@web")).expect("outbox"),
        vec![message]
    );
}

/// A send without a key delivers through `deliver_fresh`, which may skip looking for copies
/// already held: the result must be what `deliver_all` gives, copies, trace and flags, for
/// recipients in several projects and the operator alike, message after message.
pub fn deliver_fresh_publishes_every_copy_and_one_outbox_trace(store: &dyn Store) {
    let first = Message {
        to: vec![addr("bob@web"), addr("carol@api"), Address::human()],
        ..message("alice@web", "bob@web", "fresh one")
    };
    let second = Message {
        to: vec![addr("bob@web"), addr("carol@api"), Address::human()],
        ..message("alice@web", "bob@web", "fresh two")
    };
    for m in [&first, &second] {
        assert_eq!(
            store.deliver_fresh(&m.to, m).expect("deliver_fresh"),
            Delivery {
                new: vec![true, true, true],
                trace_error: None
            }
        );
    }
    for to in &first.to {
        let mut held = ids(&store.pending(to).expect("pending"));
        held.sort_by_key(|(id, _)| *id);
        let mut sent = vec![(first.id, State::Unread), (second.id, State::Unread)];
        sent.sort_by_key(|(id, _)| *id);
        assert_eq!(held, sent, "{to} holds both copies, unread, once each");
        let copy = store.get(to, second.id).expect("get").expect("a copy");
        assert_eq!(copy.message, second);
    }
    let mut traces = store.outbox(&addr("alice@web")).expect("outbox");
    traces.sort_by_key(|m| m.id);
    let mut sent = vec![first, second];
    sent.sort_by_key(|m| m.id);
    assert_eq!(traces, sent, "one trace of each");
}

/// All-or-nothing, as far as a story can show it: an `Err` cannot be provoked through the trait,
/// but what a store without transactions may leave when interrupted (some copies, no trace) must
/// be finished by the same call again, which skips every mailbox holding the id in any state.
pub fn deliver_all_again_finishes_an_interrupted_call_and_doubles_nothing(store: &dyn Store) {
    let (bob, carol, dave) = (addr("bob@web"), addr("carol@web"), addr("dave@api"));
    let message = Message {
        to: vec![bob.clone(), carol.clone(), dave.clone()],
        ..message("alice@web", "bob@web", "to three")
    };
    // Interrupted after bob's copy, which bob has read since.
    assert!(store.deliver(&bob, &message).expect("deliver"));
    store
        .transition(&bob, &[(message.id, State::Unread)], State::Read)
        .expect("bob reads");

    let again = store.deliver_all(&message.to, &message).expect("again");
    assert_eq!(
        again.new,
        vec![false, true, true],
        "only the missing copies"
    );
    assert_eq!(
        ids(&store.pending(&bob).expect("pending")),
        vec![(message.id, State::Read)],
        "bob's copy is left as it was, not doubled"
    );
    store
        .transition(&bob, &[(message.id, State::Read)], State::Done)
        .expect("bob archives");
    let third = store.deliver_all(&message.to, &message).expect("third");
    assert_eq!(third.new, vec![false, false, false]);
    assert!(store.pending(&bob).expect("pending").messages.is_empty());
    for to in [&carol, &dave] {
        assert_eq!(
            ids(&store.pending(to).expect("pending")),
            vec![(message.id, State::Unread)]
        );
    }
    assert_eq!(
        store.outbox(&addr("alice@web")).expect("outbox"),
        vec![message],
        "one trace"
    );
}

pub fn transition_moves_a_copy_at_most_once(store: &dyn Store) {
    let bob = addr("bob@web");
    let a = message("alice@web", "bob@web", "a");
    let b = message("alice@web", "bob@web", "b");
    store.deliver(&bob, &a).expect("deliver");
    store.deliver(&bob, &b).expect("deliver");
    let absent = MessageId::generate();

    assert_eq!(
        store
            .transition(&bob, &[(a.id, State::Unread)], State::Read)
            .expect("move"),
        vec![true]
    );
    assert_eq!(
        store
            .transition(&bob, &[(a.id, State::Unread)], State::Read)
            .expect("move again"),
        vec![false],
        "no longer unread"
    );
    assert_eq!(
        store
            .transition(
                &bob,
                &[
                    (a.id, State::Read),
                    (b.id, State::Unread),
                    (absent, State::Unread),
                    (b.id, State::Unread),
                ],
                State::Done,
            )
            .expect("move several"),
        vec![true, true, false, false]
    );
    assert_eq!(
        store.state_of(&bob, a.id).expect("state"),
        Some(State::Done)
    );
    assert_eq!(
        store.state_of(&bob, b.id).expect("state"),
        Some(State::Done)
    );
    assert_eq!(
        store
            .transition(&addr("nobody@web"), &[(a.id, State::Done)], State::Read)
            .expect("move in an unknown mailbox"),
        vec![false]
    );
    assert_eq!(
        store.transition(&bob, &[], State::Done).expect("no moves"),
        Vec::<bool>::new()
    );
}

/// A listing's moves are one call, and what others did between the listing and the move shows
/// in its answers: a copy another reader read, a `done` archived or its sender cancelled is not
/// moved again, an absent one is reported so, and an edit made before the move is what moved.
/// `get_many` then answers each copy as it is now, in the order asked.
pub fn a_batch_reports_the_copies_others_moved_first(store: &dyn Store) {
    let bob = addr("bob@web");
    let copies: Vec<Message> = (0..6)
        .map(|i| message("alice@web", "bob@web", &format!("m{i}")))
        .collect();
    for m in &copies {
        store.deliver(&bob, m).expect("deliver");
    }
    // After bob's listing, before his move: another reader reads m1, a `done` archives m2,
    // alice cancels m3 and edits m4.
    for (m, to) in [
        (&copies[1], State::Read),
        (&copies[2], State::Done),
        (&copies[3], State::Cancelled),
    ] {
        assert_eq!(
            store
                .transition(&bob, &[(m.id, State::Unread)], to)
                .expect("moved by another"),
            vec![true]
        );
    }
    let edited = Message {
        body: "m4, edited".into(),
        revision: 2,
        edited: Some(now()),
        ..copies[4].clone()
    };
    assert!(store.replace_unread(&bob, &edited).expect("edit"));
    let absent = MessageId::generate();
    let listed: Vec<(MessageId, State)> = copies
        .iter()
        .map(|m| (m.id, State::Unread))
        .chain([(absent, State::Unread)])
        .collect();
    assert_eq!(
        store
            .transition(&bob, &listed, State::Read)
            .expect("move the listing"),
        vec![true, false, false, false, true, true, false]
    );

    let mut asked: Vec<MessageId> = listed.iter().map(|(id, _)| *id).collect();
    asked.push(copies[0].id);
    let now: Vec<Option<(String, State)>> = store
        .get_many(&bob, &asked)
        .expect("get_many")
        .into_iter()
        .map(|s| s.map(|s| (s.message.body, s.state)))
        .collect();
    let as_now = |body: &str, state| Some((body.to_owned(), state));
    assert_eq!(
        now,
        vec![
            as_now("m0", State::Read),
            as_now("m1", State::Read),
            as_now("m2", State::Done),
            as_now("m3", State::Cancelled),
            as_now("m4, edited", State::Read),
            as_now("m5", State::Read),
            None,
            as_now("m0", State::Read),
        ]
    );
    assert_eq!(store.get_many(&bob, &[]).expect("nothing asked"), vec![]);
    assert_eq!(
        store
            .get_many(&addr("nobody@web"), &[copies[0].id])
            .expect("an unknown mailbox"),
        vec![None]
    );

    // Archiving the rest, as `done --all` does: what was read and what is still pending alike.
    let rest: Vec<(MessageId, State)> = store
        .pending(&bob)
        .expect("pending")
        .messages
        .iter()
        .map(|s| (s.message.id, s.state))
        .collect();
    assert_eq!(rest.len(), 4);
    assert_eq!(
        store
            .transition(&bob, &rest, State::Done)
            .expect("archive the rest"),
        vec![true; 4]
    );
    assert!(store.pending(&bob).expect("pending").messages.is_empty());
    assert_eq!(
        store.recently_archived(&bob, 10).expect("archived").len(),
        5
    );
}

pub fn replace_unread_edits_only_unread_copies(store: &dyn Store) {
    let bob = addr("bob@web");
    let v1 = message("alice@web", "bob@web", "v1");
    store.deliver(&bob, &v1).expect("deliver");
    let v2 = Message {
        body: "v2".into(),
        revision: 2,
        edited: Some(now()),
        channel: None,
        ..v1.clone()
    };
    assert!(store.replace_unread(&bob, &v2).expect("replace"));
    let copy = store.get(&bob, v1.id).expect("get").expect("the copy");
    assert_eq!((copy.message, copy.state), (v2.clone(), State::Unread));
    assert_eq!(store.pending(&bob).expect("pending").messages.len(), 1);

    store
        .transition(&bob, &[(v1.id, State::Unread)], State::Read)
        .expect("read");
    let v3 = Message {
        body: "v3".into(),
        revision: 3,
        ..v2.clone()
    };
    assert!(!store.replace_unread(&bob, &v3).expect("replace read"));
    let copy = store.get(&bob, v1.id).expect("get").expect("the copy");
    assert_eq!((copy.message, copy.state), (v2, State::Read));
    assert!(
        !store
            .replace_unread(&addr("nobody@web"), &v3)
            .expect("replace in an unknown mailbox")
    );
}

pub fn lookups_of_unknown_things_are_empty(store: &dyn Store) {
    let check = |store: &dyn Store| {
        let nobody = addr("nobody@web");
        let id = MessageId::generate();
        assert_eq!(store.project(&name("nope")).expect("project"), None);
        assert!(store.roster(&name("nope")).expect("roster").is_empty());
        assert_eq!(
            store.member(&name("web"), &name("nobody")).expect("member"),
            None
        );
        assert_eq!(store.pending(&nobody).expect("pending"), Listing::default());
        assert_eq!(store.everything(&nobody).expect("all"), Listing::default());
        assert!(store.find(&nobody, "0").expect("find").is_empty());
        assert_eq!(store.get(&nobody, id).expect("get"), None);
        assert_eq!(store.state_of(&nobody, id).expect("state"), None);
        assert!(store.outbox(&nobody).expect("outbox").is_empty());
        assert!(
            store
                .recently_archived(&nobody, 10)
                .expect("recent")
                .is_empty()
        );
        assert!(
            !store
                .set_policy(&name("nope"), Policy::Roster)
                .expect("set")
        );
        let member = Member {
            handle: name("nobody"),
            role: String::new(),
            status: MemberStatus::Inactive,
            joined: now(),
            since: None,
        };
        assert!(!store.update_member(&name("web"), &member).expect("update"));
        assert_eq!(
            store.member(&name("web"), &name("nobody")).expect("member"),
            None,
            "an update creates no one"
        );
    };
    assert!(store.projects().expect("projects").is_empty());
    check(store);
    let bob = addr("bob@web");
    store
        .deliver(&bob, &message("alice@web", "bob@web", "x"))
        .expect("deliver");
    store
        .add_member(
            &name("web"),
            &Member {
                handle: name("bob"),
                role: String::new(),
                status: MemberStatus::Active,
                joined: now(),
                since: None,
            },
        )
        .expect("add");
    check(store);
    assert_eq!(
        store.get(&bob, MessageId::generate()).expect("get"),
        None,
        "an unknown id in a known mailbox"
    );
}

pub fn ensure_project_and_add_member_are_idempotent(store: &dyn Store) {
    let web = Project {
        name: name("web"),
        policy: Policy::Roster,
        created: now(),
    };
    assert_eq!(
        store.ensure_project(&web).expect("ensure"),
        (web.clone(), true)
    );
    let other = Project {
        policy: Policy::Open,
        ..web.clone()
    };
    assert_eq!(
        store.ensure_project(&other).expect("ensure again"),
        (web.clone(), false),
        "the existing project stands"
    );
    assert_eq!(store.projects().expect("projects"), vec![web.clone()]);

    let bob = Member {
        handle: name("bob"),
        role: "backend".into(),
        status: MemberStatus::Active,
        joined: now(),
        since: None,
    };
    assert!(store.add_member(&name("web"), &bob).expect("add"));
    assert!(
        !store
            .add_member(
                &name("web"),
                &Member {
                    role: "other".into(),
                    ..bob.clone()
                }
            )
            .expect("add again")
    );
    assert_eq!(
        store.member(&name("web"), &name("bob")).expect("member"),
        Some(bob.clone())
    );
    let inactive = Member {
        status: MemberStatus::Inactive,
        ..bob
    };
    assert!(
        store
            .update_member(&name("web"), &inactive)
            .expect("update")
    );
    assert_eq!(store.roster(&name("web")).expect("roster"), vec![inactive]);
    assert!(store.set_policy(&name("web"), Policy::Open).expect("set"));
    assert_eq!(
        store
            .project(&name("web"))
            .expect("project")
            .map(|p| p.policy),
        Some(Policy::Open)
    );
}

pub fn claim_key_returns_the_first_claimant(store: &dyn Store) {
    let alice = addr("alice@web");
    let first = MessageId::generate();
    let second = MessageId::generate();
    assert_eq!(
        store.claim_key(&alice, "k/1 ../x", first).expect("claim"),
        KeyClaim::Claimed
    );
    assert_eq!(
        store.claim_key(&alice, "k/1 ../x", second).expect("claim"),
        KeyClaim::Existing(first)
    );
    assert_eq!(
        store
            .claim_key(&addr("carol@web"), "k/1 ../x", second)
            .expect("claim"),
        KeyClaim::Claimed,
        "keys are per sender"
    );
    assert_eq!(
        store.claim_key(&alice, "k/2", second).expect("claim"),
        KeyClaim::Claimed
    );
}

pub fn claim_origin_names_the_first_path(store: &dyn Store) {
    let me = addr("repo@repo");
    // No mailbox yet: the claim waits for the first mail (a refused command leaves no trace).
    assert_eq!(
        store.claim_origin(&me, "/src/z/repo").expect("claim"),
        OriginClaim::Same
    );
    assert!(store.pending(&me).expect("pending").messages.is_empty());
    store
        .deliver(&me, &message("alice@web", "repo@repo", "hello"))
        .expect("deliver");
    assert_eq!(
        store.claim_origin(&me, "/src/a/repo").expect("claim"),
        OriginClaim::Same
    );
    assert_eq!(
        store.claim_origin(&me, "/src/a/repo").expect("claim"),
        OriginClaim::Same
    );
    assert_eq!(
        store.claim_origin(&me, "/src/b/repo").expect("claim"),
        OriginClaim::Other("/src/a/repo".into())
    );
    assert_eq!(
        store.origin(&me).expect("origin").as_deref(),
        Some("/src/a/repo"),
        "the first claim is what an export copies"
    );
    assert_eq!(store.origin(&addr("nobody@web")).expect("origin"), None);
    // An identity that has only sent mail has a mailbox too (its outbox): its claim holds.
    let sender = addr("sender@repo");
    let sent = message("sender@repo", "alice@web", "only sent");
    store.deliver_all(&sent.to, &sent).expect("deliver_all");
    assert_eq!(
        store.claim_origin(&sender, "/src/s/repo").expect("claim"),
        OriginClaim::Same
    );
    assert_eq!(
        store.claim_origin(&sender, "/src/t/repo").expect("claim"),
        OriginClaim::Other("/src/s/repo".into())
    );
    assert_eq!(
        store.origin(&sender).expect("origin").as_deref(),
        Some("/src/s/repo")
    );
}

/// What an edit keeps is listed, each revision with its own number; `keep_revision` adds one
/// the mailbox does not keep, and only once.
pub fn revisions_list_what_edits_kept_and_keep_revision_adds_each_once(store: &dyn Store) {
    let bob = addr("bob@web");
    assert_eq!(
        store.revisions(&bob).expect("revisions"),
        Revisions::default()
    );
    let v1 = message("alice@web", "bob@web", "v1");
    store.deliver(&bob, &v1).expect("deliver");
    assert!(
        store
            .revisions(&bob)
            .expect("revisions")
            .messages
            .is_empty()
    );
    let v2 = Message {
        body: "v2".into(),
        revision: 2,
        edited: Some(now()),
        ..v1.clone()
    };
    assert!(store.replace_unread(&bob, &v2).expect("edit"));
    assert_eq!(
        store.revisions(&bob).expect("revisions"),
        Revisions {
            messages: vec![v1.clone()],
            damaged: vec![],
            warnings: vec![],
        },
        "the edit kept revision 1"
    );
    assert!(
        !store.keep_revision(&bob, &v1).expect("keep again"),
        "revision 1 is kept already"
    );
    // What an export brings: revision 2 of another copy, kept in a mailbox that has never seen
    // an edit of it.
    let other = message("carol@web", "bob@web", "w1");
    store.deliver(&bob, &other).expect("deliver");
    let w1 = Message {
        body: "w1, first draft".into(),
        ..other.clone()
    };
    let w2 = Message {
        body: "w2".into(),
        revision: 2,
        edited: Some(now()),
        ..other.clone()
    };
    assert!(store.keep_revision(&bob, &w2).expect("keep"));
    assert!(store.keep_revision(&bob, &w1).expect("keep"));
    assert!(!store.keep_revision(&bob, &w2).expect("keep again"));
    // A revision belongs to a copy: none is kept for a message the mailbox holds no copy of,
    // nor under another sender than the copy's.
    let stray = message("alice@web", "bob@web", "never delivered");
    assert!(!store.keep_revision(&bob, &stray).expect("keep a stray"));
    let forged = Message {
        from: addr("mallory@web"),
        revision: 3,
        ..other.clone()
    };
    assert!(!store.keep_revision(&bob, &forged).expect("keep a forged"));
    let mut expected = vec![v1.clone(), w1, w2];
    expected.sort_by_key(|m| (m.id, m.revision));
    assert_eq!(store.revisions(&bob).expect("revisions").messages, expected);
    assert_eq!(
        store.get(&bob, other.id).expect("get").map(|s| s.message),
        Some(other),
        "keeping a revision leaves the copy as it is"
    );
    assert!(
        store
            .revisions(&addr("carol@web"))
            .expect("revisions")
            .messages
            .is_empty(),
        "revisions are per mailbox"
    );
}

/// `set_archived_at` gives a done copy the time `recently_archived` reports; set oldest first,
/// as an export does, the times are also the order.
pub fn set_archived_at_sets_what_recently_archived_reports(store: &dyn Store) {
    let bob = addr("bob@web");
    let [a, b, c, d] = ["a", "b", "c", "d"].map(|body| message("alice@web", "bob@web", body));
    for m in [&a, &b, &c, &d] {
        store.deliver(&bob, m).expect("deliver");
    }
    for m in [&a, &b, &c] {
        store
            .transition(&bob, &[(m.id, State::Unread)], State::Done)
            .expect("done");
    }
    let at = |s: &str| -> jiff::Timestamp { s.parse().expect("RFC 3339") };
    let times = [
        (c.id, at("2020-01-02T03:04:05.123456789Z")),
        (a.id, at("2021-06-07T08:09:10.000000001Z")),
        (b.id, at("2022-11-12T13:14:15Z")),
    ];
    for (id, t) in times {
        assert!(store.set_archived_at(&bob, id, t).expect("set"));
    }
    let listed: Vec<(MessageId, jiff::Timestamp)> = store
        .recently_archived(&bob, 10)
        .expect("recently_archived")
        .into_iter()
        .map(|(s, t)| (s.message.id, t))
        .collect();
    let mut newest_first = times.to_vec();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    assert!(
        !store.set_archived_at(&bob, d.id, now()).expect("set"),
        "an unread copy has no archive time"
    );
    assert_eq!(
        store.state_of(&bob, d.id).expect("state"),
        Some(State::Unread)
    );
    assert!(
        !store
            .set_archived_at(&bob, MessageId::generate(), now())
            .expect("set")
    );
    assert!(
        !store
            .set_archived_at(&addr("nobody@web"), a.id, now())
            .expect("set")
    );
}

pub fn listings_are_oldest_first_and_everything_spans_states(store: &dyn Store) {
    let bob = addr("bob@web");
    let msgs: Vec<Message> = (0..4)
        .map(|i| message("alice@web", "bob@web", &format!("m{i}")))
        .collect();
    for m in msgs.iter().rev() {
        store.deliver(&bob, m).expect("deliver");
    }
    store
        .transition(&bob, &[(msgs[0].id, State::Unread)], State::Read)
        .expect("read");
    store
        .transition(&bob, &[(msgs[2].id, State::Unread)], State::Done)
        .expect("done");
    store
        .transition(&bob, &[(msgs[3].id, State::Unread)], State::Cancelled)
        .expect("cancel");

    let pending = store.pending(&bob).expect("pending");
    assert_eq!(
        ids(&pending),
        vec![(msgs[0].id, State::Read), (msgs[1].id, State::Unread)],
        "pending only, oldest first whatever the state"
    );
    let mut all = ids(&store.everything(&bob).expect("everything"));
    all.sort_by_key(|(id, _)| *id);
    assert_eq!(
        all,
        vec![
            (msgs[0].id, State::Read),
            (msgs[1].id, State::Unread),
            (msgs[2].id, State::Done),
            (msgs[3].id, State::Cancelled),
        ]
    );

    for m in msgs.iter().rev() {
        store.record_sent(m).expect("trace");
    }
    let outbox: Vec<MessageId> = store
        .outbox(&addr("alice@web"))
        .expect("outbox")
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(outbox, msgs.iter().map(|m| m.id).collect::<Vec<_>>());
}

pub fn find_matches_prefixes_case_insensitively(store: &dyn Store) {
    let bob = addr("bob@web");
    let m = message("alice@web", "bob@web", "x");
    store.deliver(&bob, &m).expect("deliver");
    let text = m.id.to_string();
    for prefix in [&text[..12], &text.to_lowercase()[..12], text.as_str()] {
        let found = store.find(&bob, prefix).expect("find");
        assert_eq!(found.len(), 1, "{prefix}");
        assert_eq!(found[0].message, m);
    }
    store
        .transition(&bob, &[(m.id, State::Unread)], State::Done)
        .expect("done");
    let found = store.find(&bob, &text[..12]).expect("find archived");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].state, State::Done);
}

pub fn a_watch_wakes_for_mail_delivered_after_it_started(store: &dyn Store) {
    let bob = addr("bob@web");
    let mut watch = store.watch(&bob).expect("watch");
    assert!(
        !watch
            .wait(Some(std::time::Duration::from_millis(50)))
            .expect("quiet wait"),
        "nothing was delivered yet"
    );
    store
        .deliver(&bob, &message("alice@web", "bob@web", "ping"))
        .expect("deliver");
    assert!(
        watch
            .wait(Some(std::time::Duration::from_secs(10)))
            .expect("wait"),
        "a delivery after the watch started wakes it"
    );
}

/// One watch of several mailboxes (in two projects, one of them global) wakes for mail
/// delivered to each of them after it started.
pub fn one_watch_of_many_mailboxes_wakes_for_mail_to_each(store: &dyn Store) {
    let boxes = [addr("bob@web"), addr("carol@api"), addr("HUMAN")];
    for to in &boxes {
        let mut watch = store.watch_many(&boxes).expect("watch");
        // A wake-up may be spurious (a level of an earlier delivery's path): the watch is
        // let settle before the delivery it must wake for.
        let quiet = (0..100).any(|_| {
            !watch
                .wait(Some(std::time::Duration::from_millis(50)))
                .expect("quiet wait")
        });
        assert!(quiet, "the watch settles while nothing is delivered");
        store
            .deliver(to, &message("alice@web", &to.to_string(), "ping"))
            .expect("deliver");
        assert!(
            watch
                .wait(Some(std::time::Duration::from_secs(10)))
                .expect("wait"),
            "a delivery to {to} after the watch started wakes it"
        );
    }
}

pub fn a_watch_wakes_for_broadcasts_posted_after_it_started(store: &dyn Store) {
    let bob = addr("bob@web");
    let all = mailroom_core::message::ChannelRef {
        project: name("web"),
        name: name(mailroom_core::message::BROADCAST),
    };
    let broadcast = |body: &str| {
        let mut m = message("alice@web", "bob@web", body);
        m.to = vec![];
        m.channel = Some(all.clone());
        m
    };
    let mut watch = store.watch(&bob).expect("watch");
    // The project's first broadcast: its channel did not exist when the watch started.
    assert!(store.append(&all, &broadcast("first")).expect("append"));
    assert!(
        watch
            .wait(Some(std::time::Duration::from_secs(10)))
            .expect("wait"),
        "the project's first broadcast wakes a member's watch"
    );
    assert!(store.append(&all, &broadcast("second")).expect("append"));
    assert!(
        watch
            .wait(Some(std::time::Duration::from_secs(10)))
            .expect("wait"),
        "and so does every later one"
    );
}

pub fn point_lookups_agree_with_the_listings_they_spare(store: &dyn Store) {
    let m = crate::kit::mailroom(store);
    let sent = crate::kit::send(&m, "alice@web", &["bob@web", "carol@web"], "Needle in here");
    let other = crate::kit::send(&m, "alice@web", &["bob@web"], "nothing to find");
    let alice = addr("alice@web");
    assert_eq!(
        store.sent(&alice, sent.id).expect("sent").map(|m| m.id),
        Some(sent.id)
    );
    assert_eq!(
        store
            .sent(&alice, mailroom_core::MessageId::generate())
            .expect("sent"),
        None
    );
    let (bob, carol, dave) = (addr("bob@web"), addr("carol@web"), addr("dave@web"));
    store
        .transition(&carol, &[(sent.id, State::Unread)], State::Done)
        .expect("carol archives");
    let absent = mailroom_core::MessageId::generate();
    assert_eq!(
        store
            .states(&[
                (&bob, sent.id),
                (&carol, sent.id),
                (&dave, sent.id),
                (&bob, absent),
                (&bob, other.id),
                (&carol, other.id),
                (&bob, sent.id),
            ])
            .expect("states"),
        vec![
            Some(State::Unread),
            Some(State::Done),
            None,
            None,
            Some(State::Unread),
            None,
            Some(State::Unread),
        ]
    );
    assert_eq!(store.states(&[]).expect("no states asked"), vec![]);
    let found = store.search(&addr("bob@web"), "needle").expect("search");
    assert_eq!(
        found
            .messages
            .iter()
            .map(|s| s.message.id)
            .collect::<Vec<_>>(),
        vec![sent.id]
    );
    let traces = store.search_sent(&alice, "needle").expect("search sent");
    assert_eq!(
        traces.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![sent.id]
    );

    let posted = m
        .post(
            &alice,
            &name("web"),
            "run-1",
            crate::kit::draft(&[], "a needle posted"),
        )
        .expect("post")
        .message;
    let channel = mailroom_core::message::ChannelRef {
        project: name("web"),
        name: name("run-1"),
    };
    assert_eq!(
        store
            .entry(&channel, posted.id)
            .expect("entry")
            .map(|s| s.message.id),
        Some(posted.id)
    );
    assert_eq!(store.entry(&channel, sent.id).expect("entry"), None);
    let entries = store
        .search_entries(&name("web"), "needle")
        .expect("search entries");
    assert_eq!(
        entries
            .messages
            .iter()
            .map(|s| s.message.id)
            .collect::<Vec<_>>(),
        vec![posted.id]
    );

    crate::kit::send(&m, "bob@ops", &["HUMAN"], "bob is in ops too");
    let projects: Vec<String> = store
        .memberships(&name("BOB"))
        .expect("memberships")
        .into_iter()
        .map(|(p, member)| format!("{}:{}", p.name, member.handle))
        .collect();
    assert_eq!(projects, vec!["ops:bob", "web:bob"]);
}
