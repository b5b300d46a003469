//! `wait`: blocks until mail is pending, woken by the file system (no polling), and changes
//! nothing; times out with exit 6.

use std::process::{Command, Stdio};

use crate::support::{BIN, Home};

fn waiter(home: &Home, args: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .env("MAILROOM_HOME", home.path())
        .env_remove("MAILROOM_AS")
        .current_dir(home.path().parent().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn wait_wakes_when_mail_arrives_and_leaves_it_unread() {
    let home = Home::new();
    home.send("alice", "bob", "warm up");
    home.as_("bob", ["inbox"]).ok();
    let child = waiter(&home, &["--as", "bob", "--json", "wait", "--timeout", "60"]);
    let id = home.send("alice", "bob", "are you there?");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: Vec<(&str, &str)> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(got, vec![(id.as_str(), "unread")]);
    let inbox = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(
        inbox["messages"][1]["state"], "unread",
        "wait marked nothing read"
    );
}

#[test]
fn wait_for_a_reply_wakes_on_that_reply_only() {
    let home = Home::new();
    let question = home.send("alice", "bob", "which port?");
    let child = waiter(
        &home,
        &[
            "--as",
            "alice",
            "--json",
            "wait",
            "--reply-to",
            &question[..10],
            "--timeout",
            "60",
        ],
    );
    home.send("bob", "alice", "unrelated news");
    let answer = home
        .as_("bob", ["--json", "reply", &question, "--message", "8080"])
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![answer.as_str()]);
}

#[test]
fn wait_times_out_with_exit_6_and_changes_nothing() {
    let home = Home::new();
    home.send("alice", "bob", "old news");
    home.as_("bob", ["inbox"]).ok();
    let before = home.tree();
    let run = home.as_("bob", ["wait", "--timeout", "0.2"]).fails(6);
    assert_eq!(
        run.stderr,
        "error: no new mail arrived within 200ms; wait again, or check `mailroom inbox`\n"
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    let bad = home.as_("bob", ["wait", "--timeout", "soon"]).fails(2);
    assert_eq!(
        bad.stderr,
        "error: 'soon' is not a duration; write 30s, 5m, 1h or a number of seconds\n"
    );
}
