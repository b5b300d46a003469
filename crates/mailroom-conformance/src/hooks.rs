//! What harness hooks rely on a store for: a change token that moves when mail may have
//! arrived, the mark of the last injection, and the hook operation built on both.
//!
//! A token may stay equal for two deliveries within a store's timestamp granularity (the
//! trait allows mail to be reported a turn late, never lost), so every "it changed" below is
//! asserted across the first arrival in a place, which no granularity can hide.

use mailroom_core::ops::{HookAnswer, HookEvent};
use mailroom_core::{Address, Mailroom, Store};

use crate::channels::broadcast;
use crate::kit::{addr, mailroom, send};

/// Room enough for every message these stories inject.
const BUDGET: usize = 20_000;

fn token(store: &dyn Store, mailbox: &str) -> String {
    store.change_token(&addr(mailbox)).expect("change_token")
}

fn hook(m: &Mailroom<'_>, me: &Address, event: HookEvent) -> HookAnswer {
    m.hook(me, event, false, BUDGET, &crate::kit::Words)
        .expect("the hook answers")
}

/// The injected text, which must name each of `shown` and none of `hidden`.
fn assert_injects(answer: &HookAnswer, shown: &[&str], hidden: &[&str]) {
    let context = answer.context.as_deref().expect("something is injected");
    for body in shown {
        assert!(context.contains(body), "{body:?} missing from:\n{context}");
    }
    for body in hidden {
        assert!(
            !context.contains(body),
            "{body:?} shown again in:\n{context}"
        );
    }
}

pub fn change_token_is_equal_while_nothing_arrives(store: &dyn Store) {
    assert_eq!(
        token(store, "bob@web"),
        token(store, "bob@web"),
        "no mailbox yet"
    );
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "one");
    let before = token(store, "bob@web");
    // Reading without marking anything, and the hook's own mark, are not arrivals.
    m.peek(&addr("bob@web")).expect("peek");
    store
        .set_last_injected(&addr("bob@web"), "a mark")
        .expect("set_last_injected");
    assert_eq!(token(store, "bob@web"), before);
}

pub fn change_token_changes_when_directed_mail_arrives_for_that_mailbox_only(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["carol@web"], "to carol");
    let (bob, carol, human) = (
        token(store, "bob@web"),
        token(store, "carol@web"),
        token(store, "HUMAN"),
    );
    send(&m, "alice@web", &["bob@web"], "to bob");
    assert_ne!(token(store, "bob@web"), bob, "bob's first mail");
    assert_eq!(token(store, "carol@web"), carol, "carol got nothing");
    assert_eq!(token(store, "HUMAN"), human, "HUMAN got nothing");
    send(&m, "alice@web", &["HUMAN"], "to the operator");
    assert_ne!(token(store, "HUMAN"), human, "HUMAN's first mail");
}

pub fn change_token_changes_when_a_broadcast_of_the_project_arrives(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "alice@web", &["bob@web"], "hello bob");
    send(&m, "dave@api", &["erin@api"], "hello erin");
    let (bob, erin) = (token(store, "bob@web"), token(store, "erin@api"));
    broadcast(&m, "alice@web", "to everyone in web");
    assert_ne!(token(store, "bob@web"), bob, "a broadcast of bob's project");
    assert_eq!(
        token(store, "erin@api"),
        erin,
        "a broadcast of another project"
    );
}

pub fn last_injected_is_absent_at_first_and_round_trips_per_mailbox(store: &dyn Store) {
    let (bob, carol) = (addr("bob@web"), addr("carol@web"));
    assert_eq!(store.last_injected(&bob).expect("last_injected"), None);
    store
        .set_last_injected(&bob, "token-1\nsome ids")
        .expect("set_last_injected");
    assert_eq!(
        store.last_injected(&bob).expect("last_injected").as_deref(),
        Some("token-1\nsome ids")
    );
    assert_eq!(store.last_injected(&carol).expect("last_injected"), None);
    store
        .set_last_injected(&bob, "token-2\nother ids")
        .expect("set_last_injected again");
    assert_eq!(
        store.last_injected(&bob).expect("last_injected").as_deref(),
        Some("token-2\nother ids"),
        "the newer mark replaces the older"
    );
}

pub fn session_start_injects_pending_mail_and_later_hooks_only_what_is_new(store: &dyn Store) {
    let m = mailroom(store);
    let bob = addr("bob@web");
    broadcast(&m, "alice@web", "standing broadcast");

    let start = hook(&m, &bob, HookEvent::SessionStart);
    assert_injects(&start, &["standing broadcast"], &[]);
    assert_eq!(start.block_stop, None);
    assert_eq!(
        hook(&m, &bob, HookEvent::UserPromptSubmit),
        HookAnswer::default(),
        "nothing arrived since the session started"
    );

    send(&m, "alice@web", &["bob@web"], "directed news");
    let news = hook(&m, &bob, HookEvent::UserPromptSubmit);
    assert_injects(&news, &["directed news"], &["standing broadcast"]);
    for event in [HookEvent::PostToolUse, HookEvent::UserPromptSubmit] {
        assert_eq!(
            hook(&m, &bob, event),
            HookAnswer::default(),
            "{event:?} after the news was shown"
        );
    }
    // What a hook showed was marked read: it is no longer unread, still pending.
    assert!(
        m.peek(&bob)
            .expect("peek")
            .messages
            .iter()
            .all(|s| { s.state == mailroom_core::State::Read })
    );
}

pub fn session_start_shows_directed_mail_and_stop_asks_to_handle_it(store: &dyn Store) {
    let m = mailroom(store);
    let bob = addr("bob@web");
    send(&m, "alice@web", &["bob@web"], "please review");
    let start = hook(&m, &bob, HookEvent::SessionStart);
    assert_injects(&start, &["please review"], &[]);
    let stop = hook(&m, &bob, HookEvent::Stop);
    assert_eq!(stop.context, None);
    assert!(
        stop.block_stop
            .as_deref()
            .is_some_and(|why| why.starts_with("1 directed message is still pending for bob@web.")),
        "{stop:?}"
    );
    assert_eq!(
        m.hook(&bob, HookEvent::Stop, true, BUDGET, &crate::kit::Words)
            .expect("hook"),
        HookAnswer::default(),
        "a stop hook already active never blocks twice"
    );
}
