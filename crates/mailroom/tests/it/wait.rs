//! `wait`: blocks until mail is pending, woken by the file system (no polling), and changes
//! nothing; times out with exit 6.

use std::process::Stdio;

use crate::support::{Home, Watchdog, both_stores};

fn waiter(home: &Home, args: &[&str]) -> std::process::Child {
    home.process()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_wakes_when_mail_arrives_and_leaves_it_unread(home: &Home) {
    home.send("alice", "bob", "warm up");
    home.as_("bob", ["inbox"]).ok();
    let child = waiter(home, &["--as", "bob", "--json", "wait", "--timeout", "60"]);
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

fn wait_for_a_reply_wakes_on_that_reply_only(home: &Home) {
    let question = home.send("alice", "bob", "which port?");
    let child = waiter(
        home,
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
        "error: no new mail arrived within 200ms; wait again, or check `mailroom --as bob@default inbox`\n"
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    let bad = home.as_("bob", ["wait", "--timeout", "soon"]).fails(2);
    assert_eq!(
        bad.stderr,
        "error: 'soon' is not a duration; write 30s, 5m, 1h or a number of seconds\n"
    );
}

fn watch_follows_a_mailbox_line_by_line_and_marks_nothing_read(home: &Home) {
    use std::io::{BufRead, BufReader};
    let first = home.send("alice", "bob", "already here");
    let mut child = waiter(home, &["--as", "HUMAN", "--json", "watch", "bob@default"]);
    // A watchdog, so a broken watch fails the test instead of hanging it.
    let watchdog = Watchdog::arm(&child);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_id = || {
        let line = lines.next().expect("a line").expect("readable");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        (
            v["id"].as_str().unwrap().to_owned(),
            v["state"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(next_id(), (first.clone(), "unread".to_owned()));
    let second = home.send("carol", "bob", "just arrived");
    assert_eq!(next_id(), (second, "unread".to_owned()));
    child.kill().unwrap();
    child.wait().unwrap();
    watchdog.disarm();
    let inbox = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(
        inbox["messages"][0]["state"], "unread",
        "watch marked nothing read"
    );
}

fn watch_prints_a_broadcast_posted_while_it_runs(home: &Home) {
    use std::io::{BufRead, BufReader};
    let first = home.send("alice", "bob", "already here");
    let mut child = waiter(home, &["--as", "bob", "--json", "watch"]);
    // A watchdog, so a watch that never wakes fails the test instead of hanging it.
    let watchdog = Watchdog::arm(&child);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_id = || {
        let line = lines.next().expect("a line").expect("readable");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v["id"].as_str().unwrap().to_owned()
    };
    // The first line comes after the watch started, so what follows must wake it.
    assert_eq!(next_id(), first);
    let broadcast = |body: &str| {
        home.as_("alice", ["--json", "send", "--broadcast", "-m", body])
            .json()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The project's first broadcast creates its channel after the watch started.
    let news = broadcast("the first broadcast");
    assert_eq!(next_id(), news);
    let more = broadcast("and another");
    assert_eq!(next_id(), more);
    child.kill().unwrap();
    child.wait().unwrap();
    watchdog.disarm();
}

#[test]
fn waiting_in_a_fresh_home_creates_nothing() {
    let home = Home::new();
    let run = home.as_("bob", ["wait", "--timeout", "0.2"]).run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(!home.path().exists(), "wait created the home");
    // Nor a mailbox, nor a project without its project.md.
    home.send("alice", "bob", "hello");
    let before = home.tree();
    let run = home
        .as_("ghost@webiste", ["wait", "--timeout", "0.2"])
        .run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

fn wait_started_before_the_home_exists_wakes_on_the_first_mail(home: &Home) {
    let child = waiter(home, &["--as", "bob", "--json", "wait", "--timeout", "60"]);
    let id = home.send("alice", "bob", "first ever");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["messages"][0]["id"], id.as_str());
}

#[test]
fn wait_in_a_fresh_setup_says_there_is_no_home_and_creates_none() {
    let home = Home::new();
    let run = home.as_("bob", ["wait", "--timeout", "1s"]).run();
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "note: there is no mailroom home at {}: nothing was ever sent there; check --home or MAILROOM_HOME (the first send creates it)\nerror: no new mail arrived within 1s; wait again, or check `mailroom --as bob@default inbox`\n",
            home.path().display()
        )
    );
    assert!(!home.path().exists(), "wait created the home");
}

#[test]
fn a_timed_out_wait_for_a_reply_says_how_long_it_waited_as_people_write_it() {
    let home = Home::new();
    let question = home.send("alice", "bob", "which port?");
    let before = home.tree();
    for (timeout, said) in [("1s", "1s"), ("0", "0s")] {
        let run = home
            .as_(
                "alice",
                ["wait", "--reply-to", &question, "--timeout", timeout],
            )
            .fails(6);
        assert_eq!(
            run.stderr,
            format!(
                "error: no reply to {question} arrived within {said}; wait again, or check `mailroom --as alice@default inbox`\n"
            )
        );
    }
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

both_stores!(
    wait_wakes_when_mail_arrives_and_leaves_it_unread,
    wait_for_a_reply_wakes_on_that_reply_only,
    watch_follows_a_mailbox_line_by_line_and_marks_nothing_read,
    watch_prints_a_broadcast_posted_while_it_runs,
    wait_started_before_the_home_exists_wakes_on_the_first_mail,
);
