//! `send`, `reply` and `handover`: everything that creates a message.

use insta::assert_snapshot;

use crate::support::{Home, both_stores, settings};

#[test]
fn send_to_several_recipients_gives_each_their_own_copy() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let run = home
        .as_(
            "alice",
            ["send", "--to", "bob", "--to", "carol", "-m", "Hello both"],
        )
        .ok();
    assert_snapshot!("several_text", home.show(&run));
    let v = home
        .as_(
            "alice",
            [
                "send",
                "--to",
                "bob",
                "--to",
                "carol@default",
                "--subject",
                "Second",
                "--kind",
                "QUESTION",
                "--priority",
                "H",
                "-m",
                "Body\nof two lines",
                "--json",
            ],
        )
        .json();
    assert_snapshot!("several_json", home.redact_json(&v));
    for who in ["bob", "carol"] {
        assert_eq!(home.count(who, "unread"), 2, "{who}'s unread mail");
    }
    let carol = home.as_("carol", ["--json", "inbox"]).json();
    assert_snapshot!("several_carol_inbox", home.redact_json(&carol));
}

#[test]
fn send_with_a_used_idempotency_key_returns_the_first_id_and_delivers_once() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let args = [
        "--json",
        "send",
        "--to",
        "bob",
        "-m",
        "deploy now",
        "--idempotency-key",
        "deploy-1",
    ];
    let first = home.as_("alice", args).json();
    let again = home.as_("alice", args).json();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(
        (&first["duplicate"], &again["duplicate"]),
        (&serde_json::json!(false), &serde_json::json!(true))
    );
    let text = home
        .as_(
            "alice",
            [
                "send",
                "--to",
                "bob",
                "-m",
                "deploy now",
                "--idempotency-key",
                "deploy-1",
            ],
        )
        .ok();
    assert_snapshot!("idempotent_retry_text", home.show(&text));
    assert_eq!(home.count("bob", "unread"), 1);
    let outbox = home.as_("alice", ["--json", "outbox"]).json();
    assert_eq!(outbox["messages"].as_array().map(Vec::len), Some(1));
    // Another sender's key is another key.
    let carol = home.as_("carol", args).json();
    assert_ne!(carol["id"], first["id"]);
    assert_eq!(home.count("bob", "unread"), 2);
}

#[test]
fn send_to_more_than_a_hundred_recipients_is_refused_and_writes_nothing() {
    // 3,000 --to once took minutes and hundreds of MB: every copy carries the whole list.
    let home = Home::new();
    home.send("alice", "bob", "before");
    let before = home.tree();
    let mut args: Vec<String> = vec!["send".into()];
    for i in 0..101 {
        args.extend(["--to".into(), format!("r{i}")]);
    }
    args.extend(["-m".into(), "to everyone".into()]);
    let run = home.as_("alice", &args).fails(2);
    assert_eq!(
        run.stderr,
        "error: 101 recipients named; one send reaches at most 100; use --broadcast to reach the whole project, or split the list\n"
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());

    // The cap itself is accepted, and reaches everyone.
    args.drain(1..3);
    home.as_("alice", &args).ok();
    assert_eq!(home.count("r100", "unread"), 1);
    assert_eq!(home.count("r1", "unread"), 1);
}

#[test]
fn send_reads_the_body_from_stdin_and_cuts_the_default_subject_at_72_characters() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let first_line = format!("Long first line {}", "word ".repeat(20));
    let body = format!("\n\n{first_line}\nsecond line\n");
    home.as_("alice", ["send", "--to", "bob"])
        .stdin(body.clone())
        .ok();
    let v = home.as_("bob", ["--json", "inbox"]).json();
    let m = &v["messages"][0];
    assert_eq!(m["body"], body.as_str());
    let subject = m["subject"].as_str().expect("a subject");
    assert_eq!(subject.chars().count(), 72);
    assert_eq!(
        subject,
        format!("{}…", &first_line[..71]),
        "the first non-blank line, cut with an ellipsis"
    );
    assert_snapshot!("stdin_body_inbox", home.redact_json(&v));
}

fn send_accepts_a_body_of_exactly_one_mebibyte_on_stdin(home: &Home) {
    let body = "a".repeat(1024 * 1024);
    home.as_("alice", ["send", "--to", "bob", "--subject", "big"])
        .stdin(body.clone())
        .ok();
    let v = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(
        v["messages"][0]["body"].as_str().map(str::len),
        Some(body.len())
    );
}

#[test]
fn reply_closes_the_original_unless_kept_open_and_never_doubles_re() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let question = home.send("alice", "bob", "Is the build green?");
    home.as_(
        "alice",
        ["send", "--to", "bob", "-s", "Build broke", "-m", "see CI"],
    )
    .ok();
    let broke = home
        .as_("alice", ["--json", "outbox", "--limit", "1"])
        .json()["messages"][0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();

    let run = home
        .as_("bob", ["reply", &question, "-m", "Yes, green."])
        .ok();
    assert_snapshot!("reply_text", home.show(&run));
    let run = home
        .as_(
            "bob",
            ["--json", "reply", &broke, "-m", "fixed", "--keep-open"],
        )
        .json();
    assert_snapshot!("reply_keep_open_json", home.redact_json(&run));
    // The answered question is archived, the kept-open one is still pending.
    assert_eq!(
        (
            home.count("bob", "unread") + home.count("bob", "read"),
            home.count("bob", "done")
        ),
        (1, 1)
    );

    let answer = run["id"].as_str().expect("an id").to_owned();
    let v = home
        .as_("alice", ["--json", "reply", &answer, "-m", "thanks"])
        .json();
    assert_eq!(v["message"]["subject"], "Re: Build broke");
    assert_eq!(v["message"]["thread"], broke.as_str());
    assert_eq!(v["message"]["reply_to"], answer.as_str());
    let inbox = home.as_("bob", ["inbox"]).stdout();
    assert_snapshot!("reply_bob_inbox", home.redact(&inbox));
}

#[test]
fn reply_keep_open_leaves_the_original_read_so_its_sender_cannot_cancel_it() {
    let home = Home::new();
    let id = home.send("alice", "bob", "Can you take the release?");
    // Answered straight from a hook's injection, which shows mail without marking it read.
    home.as_("bob", ["reply", &id, "-m", "Yes, I will.", "--keep-open"])
        .ok();
    assert_eq!(
        (home.count("bob", "unread"), home.count("bob", "read")),
        (0, 1),
        "an answered message has been read"
    );
    home.as_("alice", ["cancel", &id]).fails(4);
}

fn handover_leaves_a_note_for_the_next_session(home: &Home) {
    let _s = settings().bind_to_scope();
    let run = home
        .as_(
            "alice",
            ["handover", "-m", "Resume at step 3.\nTests pass."],
        )
        .ok();
    assert_snapshot!("handover_text", home.show(&run));
    let v = home
        .as_(
            "alice",
            [
                "--json",
                "handover",
                "--subject",
                "Second note",
                "--priority",
                "H",
            ],
        )
        .stdin("from stdin")
        .json();
    assert_snapshot!("handover_json", home.redact_json(&v));
    let inbox = home.as_("alice", ["inbox"]).stdout();
    assert_snapshot!("handover_inbox", home.redact(&inbox));
}

fn the_sender_is_spelled_as_first_written_whether_the_body_is_given_or_piped(home: &Home) {
    home.send("Api@Shop", "HUMAN", "first, as written");
    home.send("API@SHOP", "HUMAN", "given with --message");
    home.as_("api@shop", ["send", "--to", "HUMAN"])
        .stdin("piped on stdin")
        .ok();
    let inbox = home.as_("HUMAN", ["--json", "inbox"]).json();
    let from: Vec<&str> = inbox["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["from"].as_str().expect("from"))
        .collect();
    assert_eq!(from, ["Api@Shop"; 3]);
}

#[test]
fn an_unreadable_sender_entry_is_the_first_error_whatever_else_is_wrong() {
    let home = Home::new();
    home.send("api@shop", "HUMAN", "api joins shop");
    let entry = home.path().join("projects/shop/roster/api.md");
    std::fs::remove_file(&entry).expect("remove the roster entry");
    std::fs::create_dir(&entry).expect("a directory where the entry was");
    let before = home.tree();
    let expected = format!(
        "error: storage error: cannot read {}: it is a directory, not a regular file; mailroom reads only regular files in its home\n",
        entry.display()
    );
    // A bad recipient and an empty body are checked after the sender is read: with the body
    // given and with it piped, the sender's entry is what the user hears about first.
    for to in ["no good!", "HUMAN"] {
        for body in [&["-m", ""][..], &["-m", "x"][..]] {
            let mut args = vec!["send", "--to", to];
            args.extend_from_slice(body);
            let run = home.as_("api@shop", &args).fails(1);
            assert_eq!(run.stderr, expected, "send --to {to:?} {body:?}");
        }
        let run = home
            .as_("api@shop", ["send", "--to", to])
            .stdin("")
            .fails(1);
        assert_eq!(run.stderr, expected, "send --to {to:?} with an empty stdin");
    }
    assert!(before.changes(&home.tree()).is_empty(), "nothing changed");
}

both_stores!(
    send_accepts_a_body_of_exactly_one_mebibyte_on_stdin,
    handover_leaves_a_note_for_the_next_session,
    the_sender_is_spelled_as_first_written_whether_the_body_is_given_or_piped,
);
