//! File reservations: taking, renewing, expiring, releasing and checking leases, and the race
//! for one pattern that exactly one caller wins.

use std::time::Duration;

use jiff::Timestamp;
use mailroom_core::ops::{Release, Reserve};
use mailroom_core::{ErrorKind, Mailroom, Store};

use crate::kit::{addr, err, mailroom, name, now};

fn reserve(patterns: &[&str], exclusive: bool) -> Reserve {
    Reserve {
        patterns: patterns.iter().map(|s| (*s).to_owned()).collect(),
        exclusive,
        ttl: Duration::from_secs(3600),
        reason: Some("moving the users endpoint".to_owned()),
    }
}

/// Three hours after the cases' clock: every one-hour lease has run out.
fn later() -> Timestamp {
    now() + jiff::SignedDuration::from_hours(3)
}

pub fn an_exclusive_lease_refuses_an_overlapping_one_naming_the_holder(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    let taken = m
        .reserve(&addr("web@shop"), &shop, &reserve(&["src/api/**"], true))
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].pattern, "src/api/**");
    assert_eq!(taken[0].until, now() + jiff::SignedDuration::from_hours(1));
    let e = err(m.reserve(&addr("db@shop"), &shop, &reserve(&["src/*/users.rs"], true)));
    assert_eq!(e.kind(), ErrorKind::Refused);
    let text = e.to_string();
    assert!(text.contains("web@shop"), "{text}");
    assert!(text.contains("src/api/**"), "{text}");
    assert!(text.contains("moving the users endpoint"), "{text}");
    assert!(text.contains("2026-03-13T15:22:00Z"), "{text}");
    // A shared lease conflicts with the exclusive one too; nothing of a refused call is kept.
    let e = err(m.reserve(
        &addr("db@shop"),
        &shop,
        &reserve(&["docs/**", "src/api/x.rs"], false),
    ));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(m.reservations(&shop).unwrap().len(), 1);
    // Elsewhere in the tree, or in another project, it goes ahead.
    m.reserve(&addr("db@shop"), &shop, &reserve(&["src/db/**"], true))
        .unwrap();
    m.reserve(
        &addr("db@mill"),
        &name("mill"),
        &reserve(&["src/api/**"], true),
    )
    .unwrap();
    assert_eq!(m.reservations(&shop).unwrap().len(), 2);
}

pub fn shared_leases_do_not_conflict_with_each_other(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    m.reserve(&addr("web@shop"), &shop, &reserve(&["docs/**"], false))
        .unwrap();
    m.reserve(&addr("db@shop"), &shop, &reserve(&["docs/api.md"], false))
        .unwrap();
    let e = err(m.reserve(&addr("ops@shop"), &shop, &reserve(&["docs"], true)));
    assert_eq!(e.kind(), ErrorKind::Refused);
    // A shared lease never blocks an edit check; an exclusive one blocks others, not its holder.
    assert!(
        m.check_paths(&addr("ops@shop"), &shop, &["docs/api.md".to_owned()])
            .unwrap()
            .is_empty()
    );
}

pub fn reserving_again_renews_the_own_lease(store: &dyn Store) {
    let shop = name("shop");
    let first = mailroom(store)
        .reserve(&addr("web@shop"), &shop, &reserve(&["src/api/**"], true))
        .unwrap();
    let later_m = Mailroom::with_clock(store, || now() + jiff::SignedDuration::from_mins(30));
    let again = later_m
        .reserve(&addr("web@shop"), &shop, &reserve(&["src/api/**"], true))
        .unwrap();
    assert_eq!(again[0].id, first[0].id, "a renewal keeps the lease's id");
    assert_eq!(again[0].since, first[0].since);
    assert_eq!(
        again[0].until,
        now() + jiff::SignedDuration::from_mins(90),
        "a renewal runs from now"
    );
    let all = later_m.reservations(&shop).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].until, again[0].until);
}

pub fn an_expired_lease_never_blocks(store: &dyn Store) {
    let shop = name("shop");
    mailroom(store)
        .reserve(&addr("web@shop"), &shop, &reserve(&["src/**"], true))
        .unwrap();
    let m = Mailroom::with_clock(store, later);
    assert!(m.reservations(&shop).unwrap().is_empty());
    assert!(
        m.check_paths(&addr("db@shop"), &shop, &["src/main.rs".to_owned()])
            .unwrap()
            .is_empty()
    );
    let taken = m
        .reserve(&addr("db@shop"), &shop, &reserve(&["src/main.rs"], true))
        .unwrap();
    assert_eq!(taken[0].holder, addr("db@shop"));
}

pub fn check_names_the_lease_covering_a_path(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    m.reserve(&addr("web@shop"), &shop, &reserve(&["src/api"], true))
        .unwrap();
    let paths = ["src/api/v1/users.rs".to_owned(), "README.md".to_owned()];
    let blocked = m.check_paths(&addr("db@shop"), &shop, &paths).unwrap();
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0].path, "src/api/v1/users.rs");
    assert_eq!(blocked[0].lease.holder, addr("web@shop"));
    assert!(
        m.check_paths(&addr("web@shop"), &shop, &paths)
            .unwrap()
            .is_empty(),
        "the holder may edit its own paths"
    );
}

pub fn release_of_anothers_lease_is_refused_but_human_may(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    let taken = m
        .reserve(&addr("web@shop"), &shop, &reserve(&["src/api/**"], true))
        .unwrap();
    let id = taken[0].id.to_string();
    let e = err(m.release(&addr("db@shop"), &shop, &Release::Id(id.clone())));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(e.to_string().contains("web@shop"), "{e}");
    let e = err(m.release(
        &addr("db@shop"),
        &shop,
        &Release::Patterns(vec!["src/api/**".to_owned()]),
    ));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = err(m.release(&addr("db@shop"), &shop, &Release::Id("0000".to_owned())));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(m.reservations(&shop).unwrap().len(), 1);
    let released = m.release(&addr("HUMAN"), &shop, &Release::Id(id)).unwrap();
    assert_eq!(released.len(), 1);
    assert!(m.reservations(&shop).unwrap().is_empty());
}

/// An id names a lease by its start: an empty one (which every id starts with) names none.
pub fn release_by_an_empty_id_releases_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    m.reserve(&addr("web@shop"), &shop, &reserve(&["src/api/**"], true))
        .unwrap();
    for id in ["", " "] {
        let e = err(m.release(&addr("web@shop"), &shop, &Release::Id(id.to_owned())));
        assert_eq!(e.kind(), ErrorKind::Invalid, "{id:?}: {e}");
    }
    assert_eq!(m.reservations(&shop).unwrap().len(), 1);
}

pub fn release_by_pattern_and_all_drop_only_the_callers(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    m.reserve(&addr("web@shop"), &shop, &reserve(&["a/**", "b/**"], true))
        .unwrap();
    m.reserve(&addr("db@shop"), &shop, &reserve(&["c/**"], true))
        .unwrap();
    let r = m
        .release(
            &addr("web@shop"),
            &shop,
            &Release::Patterns(vec!["./a/**".to_owned()]),
        )
        .unwrap();
    assert_eq!(r.len(), 1);
    let r = m.release(&addr("web@shop"), &shop, &Release::All).unwrap();
    assert_eq!(r.len(), 1);
    let left = m.reservations(&shop).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].holder, addr("db@shop"));
}

pub fn bad_reservations_are_invalid_and_change_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let shop = name("shop");
    for (patterns, ttl) in [
        (vec![], 3600),
        (vec!["../outside"], 3600),
        (vec!["{a,b}"], 3600),
        (vec!["src"], 10),
        (vec!["src"], 2 * 24 * 3600),
    ] {
        let r = Reserve {
            patterns: patterns.iter().map(|s| (*s).to_owned()).collect(),
            exclusive: true,
            ttl: Duration::from_secs(ttl),
            reason: None,
        };
        let e = err(m.reserve(&addr("web@shop"), &shop, &r));
        assert_eq!(e.kind(), ErrorKind::Invalid, "{patterns:?} {ttl}: {e}");
    }
    assert!(m.reservations(&shop).unwrap().is_empty());
}

pub fn two_agents_racing_for_one_pattern_exactly_one_gets_it(store: &dyn Store) {
    let shop = name("shop");
    for round in 0..5 {
        let pattern = format!("race/{round}/**");
        let barrier = std::sync::Barrier::new(4);
        let wins: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = ["a", "b", "c", "d"]
                .iter()
                .map(|h| {
                    let (barrier, pattern, shop) = (&barrier, &pattern, &shop);
                    s.spawn(move || {
                        let m = mailroom(store);
                        barrier.wait();
                        m.reserve(
                            &addr(&format!("{h}@shop")),
                            shop,
                            &reserve(&[pattern.as_str()], true),
                        )
                        .is_ok()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "round {round}: {wins:?}"
        );
    }
    assert_eq!(mailroom(store).reservations(&shop).unwrap().len(), 5);
}
