//! `inbox`, `read` and `search`: showing mail, and what showing it changes.

use insta::assert_snapshot;

use crate::support::{Home, both_stores, settings};

#[test]
fn inbox_reports_each_state_as_it_was_before_this_call_marked_it_read() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    home.send("alice", "bob", "First\n\nwith a blank line");
    home.send("carol", "bob", "Second");
    let first = home.as_("bob", ["inbox"]).stdout();
    assert_snapshot!("first_call_unread", home.redact(&first));
    assert_eq!(
        (home.count("bob", "unread"), home.count("bob", "read")),
        (0, 2)
    );
    let second = home.as_("bob", ["inbox", "--json"]).json();
    assert_snapshot!("second_call_read", home.redact_json(&second));
}

#[test]
fn inbox_limit_shows_the_most_urgent_and_leaves_the_rest_unread() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    for body in ["one", "two", "three"] {
        home.send("alice", "bob", body);
    }
    home.as_(
        "alice",
        ["send", "--to", "bob", "--priority", "H", "-m", "urgent"],
    )
    .ok();
    let v = home.as_("bob", ["--json", "inbox", "--limit", "2"]).json();
    assert_snapshot!("limit_json", home.redact_json(&v));
    assert_eq!(
        (home.count("bob", "unread"), home.count("bob", "read")),
        (2, 2)
    );
    let text = home.as_("bob", ["inbox", "--limit", "1"]).stdout();
    assert_snapshot!("limit_text", home.redact(&text));
}

#[test]
fn inbox_of_an_empty_mailbox_says_so() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    home.send("alice", "carol", "not for bob");
    let text = home.as_("bob", ["inbox"]).stdout();
    let json = home.as_("bob", ["inbox", "--json"]).json();
    assert_snapshot!(format!("{text}{}", home.redact_json(&json)));
}

#[test]
fn reading_commands_say_there_is_no_home_and_create_none() {
    let home = Home::new();
    let missing = format!(
        "there is no mailroom home at {}: nothing was ever sent there; check --home or MAILROOM_HOME (the first send creates it)",
        home.path().display()
    );
    for args in [
        &["read", "01ZZ"][..],
        &["done", "01ZZ"],
        &["cancel", "01ZZ"],
    ] {
        let run = home.as_("bob", args).fails(3);
        assert_eq!(run.stderr, format!("error: {missing}\n"), "{args:?}");
    }
    for args in [
        &["inbox"][..],
        &["search", "x"],
        &["outbox"],
        &["channel", "read", "all"],
    ] {
        let run = home.as_("bob", args).ok();
        assert_eq!(run.stderr, format!("note: {missing}\n"), "{args:?}");
    }
    assert!(!home.path().exists(), "no home was created");
    let relative = home
        .as_("bob", ["inbox"])
        .env("MAILROOM_HOME", "relative/home")
        .fails(2);
    assert_eq!(
        relative.stderr,
        "error: MAILROOM_HOME is the relative path 'relative/home'; set it to an absolute path (or unset it for the default home)\n"
    );
}

#[test]
fn read_marks_read_and_read_archive_archives() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let a = home.send("alice", "bob", "Please look at PR 7");
    let b = home.send("alice", "bob", "And PR 8");
    let text = home.as_("bob", ["read", &a[..10]]).stdout();
    assert_snapshot!("read_text", home.redact(&text));
    assert_eq!(
        (home.count("bob", "unread"), home.count("bob", "read")),
        (1, 1)
    );
    let v = home.as_("bob", ["--json", "read", &b, "--archive"]).json();
    assert_snapshot!("read_archive_json", home.redact_json(&v));
    let text = home.as_("bob", ["read", &a, "--archive"]).stdout();
    assert_snapshot!("read_archive_text", home.redact(&text));
    assert_eq!(
        (
            home.count("bob", "unread"),
            home.count("bob", "read"),
            home.count("bob", "done")
        ),
        (0, 0, 2)
    );
    let outbox = home.as_("alice", ["outbox"]).stdout();
    assert_snapshot!("read_outbox", home.redact(&outbox));
}

fn search_covers_the_archive_and_the_outbox(home: &Home) {
    let _s = settings().bind_to_scope();
    let plan = home.send("alice", "bob", "The deploy plan is in docs/");
    home.send("alice", "bob", "Unrelated lunch order");
    home.as_("bob", ["done", &plan]).ok();
    home.send("bob", "alice", "Deploy went fine");
    let text = home.as_("bob", ["search", "deploy"]).stdout();
    assert_snapshot!("search_text", home.redact(&text));
    let v = home.as_("bob", ["--json", "search", "DEPLOY"]).json();
    assert_snapshot!("search_json", home.redact_json(&v));
    let none = home.as_("bob", ["search", "nothing like it"]).stdout();
    assert_snapshot!("search_none", none);
}

both_stores!(search_covers_the_archive_and_the_outbox,);
