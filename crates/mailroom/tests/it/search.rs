//! `search` through the file store's index, end to end: the real binary over a home whose
//! archive is changed by hand between searches, and killed (`kill -9`) while it builds the
//! index. Every answer must be the one a full read of the files gives.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mailroom_core::MessageId;

use crate::support::{BIN, Home, both_stores};

const NOW: &str = "2026-03-13T14:22:00Z";

fn bob(home: &Home) -> PathBuf {
    home.path().join("projects/default/boxes/bob")
}

/// Writes a message file as a hand edit should: a new file moved into place.
fn put(home: &Home, state: &str, id: MessageId, body: &str) -> PathBuf {
    let dir = bob(home).join(state);
    std::fs::create_dir_all(&dir).expect("create the state directory");
    let text = format!(
        "---\nid: {id}\nfrom: alice@default\nto: [\"bob@default\"]\nsubject: \"Archived\"\nkind: INFO\npriority: M\ndate: {NOW}\nthread: {id}\n---\n{body}\n"
    );
    let tmp = home.root().join("hand.tmp");
    std::fs::write(&tmp, text).expect("write");
    let path = dir.join(format!("{id}.md"));
    std::fs::rename(&tmp, &path).expect("move in");
    path
}

/// The ids `bob` finds for `query`, with their states, in the order listed.
fn found(home: &Home, query: &str) -> Vec<(String, String)> {
    let v = home.as_("bob", ["--json", "search", query]).json();
    v["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("search --json lists results: {v}"))
        .iter()
        .map(|h| {
            (
                h["id"].as_str().expect("a hit has an id").to_owned(),
                h["state"].as_str().expect("a hit has a state").to_owned(),
            )
        })
        .collect()
}

/// `bob@default` with `n` archived messages ("Body number i."), their ids in order.
fn archive(home: &Home, n: usize) -> Vec<MessageId> {
    home.send("alice", "bob", "hello");
    (0..n)
        .map(|i| {
            let id = MessageId::generate();
            put(
                home,
                "done",
                id,
                &format!("Body number {i}. Some more words, so that the index has work to do."),
            );
            id
        })
        .collect()
}

#[test]
fn search_sees_every_hand_change_after_the_index_was_written() {
    let home = Home::new();
    let ids = archive(&home, 400);
    let hit = |i: usize, state: &str| (ids[i].to_string(), state.to_owned());
    assert_eq!(found(&home, "NUMBER 123."), vec![hit(123, "done")]);
    assert!(
        bob(&home).join("search.index").is_file(),
        "the index is written"
    );
    // The second search answers from the index.
    assert_eq!(found(&home, "number 123."), vec![hit(123, "done")]);

    put(&home, "done", ids[7], "now also number 123. here");
    assert_eq!(
        found(&home, "number 123."),
        vec![hit(7, "done"), hit(123, "done")],
        "an edited file is read again"
    );
    std::fs::create_dir_all(bob(&home).join("unread")).expect("unread");
    std::fs::rename(
        bob(&home).join(format!("done/{}.md", ids[123])),
        bob(&home).join(format!("unread/{}.md", ids[123])),
    )
    .expect("move back to unread");
    assert_eq!(
        found(&home, "number 123."),
        vec![hit(7, "done"), hit(123, "unread")],
        "a file moved by hand is found in its new state"
    );
    std::fs::remove_file(bob(&home).join(format!("done/{}.md", ids[7]))).expect("delete");
    assert_eq!(found(&home, "number 123."), vec![hit(123, "unread")]);

    for damage in [&b""[..], b"MRINDEX1 and then garbage", b"not an index"] {
        std::fs::write(bob(&home).join("search.index"), damage).expect("damage the index");
        assert_eq!(found(&home, "number 123."), vec![hit(123, "unread")]);
    }
    std::fs::remove_file(bob(&home).join("search.index")).expect("delete the index");
    assert_eq!(found(&home, "number 123."), vec![hit(123, "unread")]);
    // Short queries have no three-character window: every file is read. 14 of the numbers
    // below 400 hold "12".
    assert_eq!(found(&home, "12").len(), 14);

    // The index is part of the layout: doctor does not report it (it does report the
    // hand-written files' permissions, which is not what is checked here).
    let doctor = home.cmd(["doctor"]).run();
    assert!(
        !doctor.stdout.contains("index"),
        "doctor reports the index:\n{}",
        doctor.stdout
    );
}

/// Whether `dir` holds a temporary file (the index being written).
fn writing(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| {
        d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".tmp")))
    })
}

#[test]
fn a_search_killed_while_it_builds_the_index_leaves_search_right() {
    let home = Home::new();
    let ids = archive(&home, 3000);
    let expected = vec![(ids[2345].to_string(), "done".to_owned())];
    let tmp = bob(&home).join("tmp");
    let mut killed_writing = 0;
    for round in 0..12 {
        let _ = std::fs::remove_file(bob(&home).join("search.index"));
        let mut child = Command::new(BIN)
            .env_remove("MAILROOM_AS")
            .env_remove("MAILROOM_URL")
            .env("MAILROOM_HOME", home.path())
            .current_dir(home.root().join("work"))
            .args(["--as", "bob", "search", "number 2345."])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a search");
        // Even rounds kill at once (mid-read); odd rounds as soon as the index is being
        // written, or not at all when the search finished first.
        if round % 2 == 1 {
            while child.try_wait().expect("poll the search").is_none() {
                if writing(&tmp) {
                    killed_writing += 1;
                    break;
                }
            }
        }
        let _ = child.kill();
        child.wait().expect("reap the search");
        assert_eq!(found(&home, "number 2345."), expected, "round {round}");
        assert_eq!(
            found(&home, "number 2345."),
            expected,
            "round {round}, again"
        );
    }
    // The kills leave temporary files behind, which doctor --fix removes; search is right
    // after that too.
    home.cmd(["doctor", "--fix"]).run();
    assert!(!writing(&tmp));
    assert_eq!(found(&home, "number 2345."), expected);
    eprintln!("killed while writing the index in {killed_writing} of 6 rounds");
}

/// The operator belongs to no project and may read every channel: `--as HUMAN search` finds
/// posts in every project's channels, as the console's search does (one search, in the core);
/// a member searches its own project's only.
fn the_operators_search_covers_every_projects_channels(home: &Home) {
    home.as_(
        "alice@shop",
        ["channel", "post", "run-1", "--message", "kiwi deploy done"],
    )
    .ok();
    home.as_(
        "carl@farm",
        ["channel", "post", "run-2", "--message", "kiwi harvest in"],
    )
    .ok();
    let human = home.as_("HUMAN", ["--json", "search", "kiwi"]).json();
    let mut bodies: Vec<String> = human["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap_or_default().to_owned())
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["kiwi deploy done", "kiwi harvest in"], "{human}");
    let alice = home.as_("alice@shop", ["--json", "search", "kiwi"]).json();
    assert_eq!(alice["messages"].as_array().unwrap().len(), 1, "{alice}");
}

both_stores!(the_operators_search_covers_every_projects_channels,);
