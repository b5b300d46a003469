//! `done`, `edit`, `cancel`, `archive`, `outbox` and `recover`: directed mail after it is sent.

use insta::assert_snapshot;
use serde_json::Value;

use crate::support::{Home, both_stores, settings};

#[test]
fn done_marks_one_several_or_all() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let ids: Vec<String> = (1..=5)
        .map(|i| home.send("alice", "bob", &format!("task {i}")))
        .collect();
    let one = home.as_("bob", ["done", &ids[0]]).ok();
    let several = home
        .as_("bob", ["--json", "done", &ids[1], &ids[2][..12], &ids[1]])
        .json();
    let again = home.as_("bob", ["done", &ids[0]]).ok();
    let all = home.as_("bob", ["done", "--all"]).ok();
    let none = home.as_("bob", ["--json", "done", "--all"]).json();
    assert_snapshot!(format!(
        "{}{}\n{}{}{}",
        home.show(&one),
        home.redact_json(&several),
        home.show(&again),
        home.show(&all),
        home.redact_json(&none)
    ));
    assert_eq!(
        (
            home.count("bob", "unread"),
            home.count("bob", "read"),
            home.count("bob", "done")
        ),
        (0, 0, 5)
    );
    let unknown = home.as_("bob", ["done", "01ZZZZZZZZ"]).fails(3);
    assert_snapshot!("done_unknown", home.show(&unknown));
}

#[test]
fn edit_of_unread_mail_changes_it_in_place() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let id = home.send("alice", "bob", "Meet at 10");
    let run = home
        .as_("alice", ["edit", &id, "-m", "Meet at 11", "-s", "Meeting"])
        .ok();
    assert_snapshot!("edit_in_place_text", home.show(&run));
    let v = home
        .as_("alice", ["--json", "edit", &id, "--priority", "H"])
        .json();
    assert_snapshot!("edit_in_place_json", home.redact_json(&v));
    let inbox = home.as_("bob", ["inbox"]).stdout();
    assert_snapshot!("edit_in_place_inbox", home.redact(&inbox));
    assert_eq!(home.count("bob", "read"), 1);
}

fn edit_of_read_mail_sends_a_correction_in_the_same_thread(home: &Home) {
    let _s = settings().bind_to_scope();
    let id = home.send("alice", "bob", "Meet at 10");
    home.as_("bob", ["read", &id]).ok();
    let run = home.as_("alice", ["edit", &id, "-m", "Meet at 11"]).ok();
    assert_snapshot!("correction_text", home.show(&run));
    let v = home.as_("bob", ["--json", "inbox"]).json();
    let messages = v["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0]["body"], "Meet at 10",
        "the read copy is untouched"
    );
    assert_eq!(messages[1]["kind"], "CORRECTION");
    assert_eq!(messages[1]["thread"], id.as_str());
    assert_eq!(messages[1]["reply_to"], id.as_str());
    assert_snapshot!("correction_inbox", home.redact_json(&v));
}

#[test]
fn cancel_withdraws_unread_mail_and_refuses_read_or_foreign_mail() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let unread = home.send("alice", "bob", "Never mind this");
    let read = home.send("alice", "bob", "Already seen");
    home.as_("bob", ["read", &read]).ok();

    let run = home.as_("alice", ["cancel", &unread]).ok();
    // A second cancel is a no-op, as `done` of done mail is: exit 0, saying nothing changed.
    let again = home.as_("alice", ["cancel", &unread]).ok();
    let v = home.as_("alice", ["--json", "cancel", &unread]).json();
    assert_snapshot!(
        "cancel_unread",
        format!(
            "{}{}{}",
            home.show(&run),
            home.show(&again),
            home.redact_json(&v)
        )
    );
    assert_eq!(
        (home.count("bob", "unread"), home.count("bob", "cancelled")),
        (0, 1)
    );

    let refused = home.as_("alice", ["cancel", &read]).fails(4);
    let foreign = home.as_("bob", ["cancel", &read]).fails(4);
    assert_snapshot!(
        "cancel_refused",
        format!("{}{}", home.show(&refused), home.show(&foreign))
    );
    let inbox = home.as_("bob", ["inbox"]).stdout();
    assert_snapshot!("cancel_inbox", home.redact(&inbox));
}

#[test]
fn archive_archives_the_whole_mailbox() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    for body in ["a", "b", "c"] {
        home.send("alice", "bob", body);
    }
    home.as_("bob", ["inbox", "--limit", "1"]).ok();
    let run = home.as_("bob", ["archive"]).ok();
    let v = home.as_("bob", ["--json", "archive"]).json();
    assert_snapshot!(format!("{}{}", home.show(&run), home.redact_json(&v)));
    assert_eq!(home.count("bob", "done"), 3);
}

fn outbox_shows_each_recipients_state(home: &Home) {
    let _s = settings().bind_to_scope();
    let many = home
        .as_(
            "alice",
            [
                "--json",
                "send",
                "--to",
                "bob",
                "--to",
                "carol",
                "--to",
                "dave",
                "--to",
                "erin",
                "-m",
                "Standup moved",
            ],
        )
        .json()["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    home.as_("bob", ["read", &many]).ok();
    home.as_("carol", ["done", &many]).ok();
    home.send("alice", "dave", "Only for dave");
    let second = home.send("alice", "erin", "Only for erin");
    home.as_("alice", ["cancel", &second]).ok();
    let text = home.as_("alice", ["outbox"]).stdout();
    assert_snapshot!("outbox_text", home.redact(&text));
    let v = home.as_("alice", ["--json", "outbox"]).json();
    assert_snapshot!("outbox_json", home.redact_json(&v));
    let empty = home.as_("zed", ["outbox"]).stdout();
    assert_snapshot!("outbox_empty", empty);
}

#[test]
fn recover_lists_recent_archive_and_restores_to_pending() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let lost = home.send("alice", "bob", "Crash right after reading me");
    home.as_("bob", ["read", &lost, "--archive"]).ok();
    let list = home.as_("bob", ["recover"]).stdout();
    let v = home.as_("bob", ["--json", "recover"]).json();
    assert_snapshot!(
        "recover_list",
        format!("{}{}", home.redact(&list), home.redact_json(&v))
    );
    let run = home.as_("bob", ["recover", "--restore", &lost]).ok();
    assert_snapshot!("recover_restore", home.show(&run));
    let inbox = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["id"], lost.as_str());
    let again = home.as_("bob", ["recover", "--restore", &lost]).fails(4);
    assert_snapshot!("recover_restore_pending", home.show(&again));
    let empty = home.as_("carol", ["recover"]).stdout();
    assert_snapshot!("recover_empty", empty);
}

fn send_inbox_read_reply_done_and_search_go_through_the_store(h: &Home) {
    let first = h.send("alice@web", "bob", "is the API frozen?");
    let second = h.send("alice@web", "bob", "second question");
    let inbox = h.as_("bob@web", ["--json", "inbox", "--limit", "1"]).json();
    assert_eq!(ids(&inbox), vec![first.clone()]);
    assert_eq!(inbox["messages"][0]["state"], "unread", "the state before");
    let read = h.as_("bob@web", ["--json", "read", &second]).json();
    assert_eq!(read["messages"][0]["body"], "second question", "{read}");
    h.as_("bob@web", ["reply", &first, "--message", "yes, frozen"])
        .ok();
    let alice = h.as_("alice@web", ["--json", "inbox"]).json();
    assert_eq!(alice["messages"][0]["body"], "yes, frozen");
    assert_eq!(alice["messages"][0]["thread"], first.as_str());
    h.as_("bob@web", ["done", &second]).ok();
    let left = h.as_("bob@web", ["--json", "inbox"]).json();
    assert!(
        ids(&left).is_empty(),
        "replied and done: nothing pending: {left}"
    );
    let found = h.as_("bob@web", ["--json", "search", "FROZEN"]).json();
    assert!(
        found.to_string().contains("is the API frozen?"),
        "search reaches the archive: {found}"
    );
    let outbox = h.as_("alice@web", ["--json", "outbox"]).json();
    assert!(outbox.to_string().contains(&second), "{outbox}");
}

fn edit_and_cancel_reach_only_unread_copies(h: &Home) {
    let id = h.send("alice@web", "bob", "port 8080");
    h.as_("alice@web", ["edit", &id, "--message", "port 9090"])
        .ok();
    let read = h.as_("bob@web", ["--json", "read", &id]).json();
    assert_eq!(read["messages"][0]["body"], "port 9090", "{read}");
    assert_eq!(read["messages"][0]["revision"], 2, "{read}");
    let refused = h.as_("alice@web", ["cancel", &id]).fails(4);
    assert!(
        refused.stderr.contains("already read"),
        "{}",
        refused.stderr
    );
}

/// The ids of a listing's messages, in order.
fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_str().expect("id").to_owned())
        .collect()
}

both_stores!(
    send_inbox_read_reply_done_and_search_go_through_the_store,
    edit_and_cancel_reach_only_unread_copies,
    edit_of_read_mail_sends_a_correction_in_the_same_thread,
    outbox_shows_each_recipients_state,
);
