//! Real processes racing on one mailbox: nothing lost, doubled or torn.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::support::{Home, both_stores};

const SENDERS: usize = 4;
const PER_SENDER: usize = 250;

fn body(sender: usize, i: usize) -> String {
    // Several lines and a few kilobytes, so a torn write would show as a different body.
    format!(
        "sender {sender} message {i}\n{}\nend of {sender}/{i}\n",
        format!("line of {sender}/{i} ").repeat(200)
    )
}

/// The bodies of one `inbox --json` listing, checked on the way: it parses, reports nothing
/// damaged, and lists each id once.
fn listing(v: &Value) -> Vec<(String, String)> {
    assert_eq!(v["damaged"], serde_json::json!([]), "damaged files: {v}");
    let messages = v["messages"].as_array().expect("a message list");
    let pairs: Vec<(String, String)> = messages
        .iter()
        .map(|m| {
            (
                m["id"].as_str().expect("an id").to_owned(),
                m["body"].as_str().expect("a body").to_owned(),
            )
        })
        .collect();
    let ids: HashSet<&str> = pairs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), pairs.len(), "an id is listed twice");
    pairs
}

#[test]
fn concurrent_senders_and_a_reader_lose_double_and_tear_nothing() {
    let home = Home::new();
    let sent: HashSet<String> = (0..SENDERS)
        .flat_map(|s| (0..PER_SENDER).map(move |i| body(s, i)))
        .collect();
    let finished = AtomicUsize::new(0);
    let listings = std::thread::scope(|scope| {
        for s in 0..SENDERS {
            let (home, finished) = (&home, &finished);
            scope.spawn(move || {
                let me = format!("sender{s}");
                for i in 0..PER_SENDER {
                    home.as_(&me, ["send", "--to", "inbox", "--subject", "load"])
                        .stdin(body(s, i))
                        .ok();
                }
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        let reader = scope.spawn(|| {
            let mut listings = 0;
            loop {
                let done = finished.load(Ordering::SeqCst) == SENDERS;
                let v = home.as_("inbox", ["--json", "inbox"]).json();
                for (id, body) in listing(&v) {
                    assert!(sent.contains(&body), "message {id} has a torn body");
                }
                listings += 1;
                if done {
                    break listings;
                }
            }
        });
        reader.join().expect("the reader does not panic")
    });
    assert!(listings >= 2, "the reader ran while senders were sending");

    let final_listing = listing(&home.as_("inbox", ["--json", "inbox"]).json());
    let bodies: HashSet<&str> = final_listing.iter().map(|(_, b)| b.as_str()).collect();
    assert_eq!(final_listing.len(), SENDERS * PER_SENDER);
    assert_eq!(
        bodies.len(),
        SENDERS * PER_SENDER,
        "a body is delivered twice"
    );
    assert!(bodies.iter().all(|b| sent.contains(*b)));
    assert_eq!(
        (
            home.count("inbox", "unread"),
            home.count("inbox", "read"),
            home.count("inbox", "done")
        ),
        (0, SENDERS * PER_SENDER, 0)
    );
    for s in 0..SENDERS {
        assert_eq!(home.count(&format!("sender{s}"), "outbox"), PER_SENDER);
    }
}

/// Problems with one `inbox --json` listing: an id shown twice, or an entry not pending.
fn listing_problems(v: &Value) -> Vec<String> {
    let mut ids = HashSet::new();
    let mut problems = Vec::new();
    for m in v["messages"].as_array().expect("a message list") {
        let id = m["id"].as_str().expect("an id");
        if !ids.insert(id) {
            problems.push(format!("{id} is listed twice"));
        }
        if !matches!(m["state"].as_str(), Some("unread" | "read")) {
            problems.push(format!("{id} is listed as {}", m["state"]));
        }
    }
    problems
}

fn racing_inbox_loops_and_done_all_list_each_id_once_and_only_pending_mail(home: &Home) {
    const SENDERS: usize = 2;
    const PER_SENDER: usize = 150;
    let finished = AtomicUsize::new(0);
    let (listings, problems) = std::thread::scope(|scope| {
        for s in 0..SENDERS {
            let (home, finished) = (&home, &finished);
            scope.spawn(move || {
                for i in 0..PER_SENDER {
                    home.as_(&format!("sender{s}"), ["send", "--to", "inbox"])
                        .args(["--message", &format!("{s}/{i}")])
                        .ok();
                }
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        let sweeper = scope.spawn(|| {
            while finished.load(Ordering::SeqCst) < SENDERS {
                home.as_("inbox", ["done", "--all"]).ok();
            }
        });
        let readers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let (mut listings, mut problems) = (0, Vec::new());
                    while finished.load(Ordering::SeqCst) < SENDERS {
                        let v = home.as_("inbox", ["--json", "inbox"]).json();
                        problems.extend(listing_problems(&v));
                        listings += 1;
                    }
                    (listings, problems)
                })
            })
            .collect();
        sweeper.join().expect("the sweeper does not panic");
        readers
            .into_iter()
            .map(|r| r.join().expect("a reader does not panic"))
            .fold((0, Vec::new()), |(n, mut all), (k, p)| {
                all.extend(p);
                (n + k, all)
            })
    });
    assert!(listings >= 4, "the readers ran while senders were sending");
    assert_eq!(problems, Vec::<String>::new(), "in {listings} listings");
}

both_stores!(racing_inbox_loops_and_done_all_list_each_id_once_and_only_pending_mail,);
