//! Compaction of a pending directory that once held many files: ext4 never shrinks a
//! directory, so an emptied `unread/` is replaced by a new one, by `doctor --fix` or by the
//! next listing, without losing a message to a sender, a reader or a `kill -9`.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Barrier;

use crate::support::{BIN, Home, Watchdog};

/// A directory this large is compacted once empty (`compact::WORTH`).
const WORTH: u64 = 64 * 1024;

fn unread(home: &Home, handle: &str) -> PathBuf {
    home.path()
        .join("projects/default/boxes")
        .join(handle)
        .join("unread")
}

/// Makes `dir` as large as a directory that once held a few thousand files, then empties
/// those out again (the messages in it stay).
fn inflate(dir: &Path) {
    for i in 0..2_500 {
        std::fs::write(dir.join(format!("filler-{i:05}.x")), b"").unwrap();
    }
    for i in 0..2_500 {
        std::fs::remove_file(dir.join(format!("filler-{i:05}.x"))).unwrap();
    }
    assert!(size(dir) > WORTH, "the file system grew the directory");
}

fn size(dir: &Path) -> u64 {
    std::fs::metadata(dir).unwrap().size()
}

fn bodies(home: &Home, who: &str) -> Vec<String> {
    let v = home.as_(who, ["--json", "inbox"]).json();
    assert_eq!(v["damaged"], serde_json::json!([]), "{v}");
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn doctor_fix_replaces_an_emptied_unread_and_keeps_every_message() {
    let home = Home::new();
    home.send("alice", "bob", "one");
    home.send("alice", "bob", "two");
    assert_eq!(bodies(&home, "bob"), ["one", "two"]);
    let dir = unread(&home, "bob");
    inflate(&dir);
    let before = size(&dir);

    let report = home.cmd(["--json", "doctor"]).fails(1);
    let v: serde_json::Value = serde_json::from_str(&report.stdout).unwrap();
    let finding = &v["findings"][0];
    assert_eq!(finding["location"], dir.display().to_string(), "{v}");
    assert_eq!(
        finding["problem"],
        format!(
            "is empty but takes {} KiB: it once held many more files, and every listing still reads all of it",
            before / 1024
        )
    );
    assert_eq!(finding["fixed"], false);
    assert_eq!(size(&dir), before, "doctor without --fix changes nothing");

    let fixed = home.cmd(["--json", "doctor", "--fix"]).ok();
    let v: serde_json::Value = serde_json::from_str(&fixed.stdout).unwrap();
    assert_eq!(v["findings"][0]["fixed"], true, "{v}");
    assert!(size(&dir) <= 4096, "replaced by a new directory");
    home.cmd(["doctor"]).ok();

    home.send("alice", "bob", "three");
    assert_eq!(bodies(&home, "bob"), ["one", "two", "three"]);
}

#[test]
fn a_listing_replaces_an_emptied_unread_and_a_full_one_stays() {
    let home = Home::new();
    home.send("alice", "bob", "one");
    home.send("alice", "bob", "two");
    let dir = unread(&home, "bob");
    inflate(&dir);
    // Holding a message it cannot be replaced: the move of one leaves it as it is.
    let first = home.as_("bob", ["--json", "inbox", "--limit", "1"]).json();
    assert_eq!(first["messages"][0]["body"], "one", "{first}");
    assert!(size(&dir) > WORTH, "not replaced while it held a message");
    // The move that empties it replaces it.
    assert_eq!(bodies(&home, "bob"), ["one", "two"]);
    assert!(size(&dir) <= 4096, "replaced by the move that emptied it");
    // One emptied otherwise (by hand, by an older mailroom): the next listing replaces it.
    inflate(&dir);
    assert_eq!(bodies(&home, "bob"), ["one", "two"]);
    assert!(size(&dir) <= 4096, "replaced by the listing");
    home.send("alice", "bob", "three");
    assert_eq!(bodies(&home, "bob"), ["one", "two", "three"]);
}

#[test]
fn a_crash_between_removing_and_recreating_unread_loses_nothing() {
    let home = Home::new();
    home.send("alice", "bob", "one");
    assert_eq!(bodies(&home, "bob"), ["one"]);
    // What a crash right after the removal leaves: no unread/ at all.
    std::fs::remove_dir(unread(&home, "bob")).unwrap();
    home.cmd(["doctor"]).ok();
    assert_eq!(bodies(&home, "bob"), ["one"]);
    home.send("alice", "bob", "two");
    assert_eq!(bodies(&home, "bob"), ["one", "two"]);
}

#[test]
fn a_watch_started_before_compaction_sees_mail_sent_after_it() {
    use std::io::{BufRead, BufReader};
    let home = Home::new();
    home.send("alice", "bob", "already here");
    home.as_("bob", ["inbox"]).ok();
    let mut child = Command::new(BIN)
        .args(["--as", "HUMAN", "--json", "watch", "bob@default"])
        .env("MAILROOM_HOME", home.path())
        .env_remove("MAILROOM_AS")
        .current_dir(home.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A watchdog, so a broken watch fails the test instead of hanging it.
    let watchdog = Watchdog::arm(&child);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_body = || {
        let line = lines.next().expect("a line").expect("readable");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v["body"].as_str().unwrap().to_owned()
    };
    // The first line comes after the watch is set up.
    assert_eq!(next_body(), "already here");
    let dir = unread(&home, "bob");
    inflate(&dir);
    home.cmd(["doctor", "--fix"]).ok();
    assert!(size(&dir) <= 4096, "replaced");
    home.send("carol", "bob", "after the compaction");
    assert_eq!(next_body(), "after the compaction");
    child.kill().unwrap();
    child.wait().unwrap();
    watchdog.disarm();
}

/// Each round, senders publish into an emptied, oversized `unread/` at the moment a reader or
/// `doctor --fix` replaces it, and every third of those is killed with SIGKILL at a moment that
/// varies: every send that was acknowledged is in the mailbox afterwards, once.
#[test]
fn senders_racing_compaction_and_kill_9_lose_nothing() {
    const SENDERS: usize = 3;
    const ROUNDS: u64 = 8;
    let home = Home::new();
    home.send("alice", "bob", "first");
    bodies(&home, "bob");
    let dir = unread(&home, "bob");
    let go = Barrier::new(SENDERS + 1);
    let (acknowledged, replaced) = std::thread::scope(|scope| {
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let (home, go) = (&home, &go);
                scope.spawn(move || {
                    let mut ok = Vec::new();
                    for round in 1..=ROUNDS {
                        let body = format!("sender {s} round {round}");
                        go.wait();
                        let run = home
                            .as_(
                                &format!("sender{s}"),
                                ["send", "--to", "bob", "--message", &body],
                            )
                            .run();
                        assert_eq!(run.code, 0, "{}", run.stderr);
                        ok.push(body);
                        go.wait();
                    }
                    ok
                })
            })
            .collect();
        let mut replaced = 0;
        for round in 1..=ROUNDS {
            // Empty unread/ (to read/), and make it worth replacing.
            home.as_("bob", ["inbox"]).ok();
            inflate(&dir);
            let before = std::fs::metadata(&dir).unwrap().ino();
            let args: &[&str] = if round % 2 == 0 {
                &["--as", "bob", "inbox"]
            } else {
                &["doctor", "--fix"]
            };
            go.wait();
            let mut child = Command::new(BIN)
                .args(args)
                .env("MAILROOM_HOME", home.path())
                .env_remove("MAILROOM_AS")
                .current_dir(home.root())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // Fault injection, not synchronisation: every third run is killed after a delay
            // that walks through its life, the rest run to their end.
            if round % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(round * 797 % 6_000));
                let _ = child.kill();
            }
            child.wait().unwrap();
            go.wait();
            if std::fs::metadata(&dir).is_ok_and(|m| m.ino() != before) {
                replaced += 1;
            }
        }
        let acknowledged: Vec<String> = senders
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        (acknowledged, replaced)
    });
    assert!(
        replaced >= 1,
        "unread/ was never replaced while senders published"
    );
    home.cmd(["doctor", "--fix"]).run();
    let listed = bodies(&home, "bob");
    let unique: HashSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "a message listed twice");
    for body in &acknowledged {
        assert!(unique.contains(body), "acknowledged but lost: {body}");
    }
    assert_eq!(listed.len(), acknowledged.len() + 1, "nothing unexpected");
}

/// A day's use never makes `doctor` fail: reading all the mail of an `unread/` that had grown
/// large, then archiving it, leaves both pending directories small, with no listing between.
#[test]
fn reading_and_archiving_everything_leaves_doctor_healthy() {
    let home = Home::new();
    home.send("alice", "bob", "one");
    home.send("alice", "bob", "two");
    let dir = unread(&home, "bob");
    inflate(&dir);
    // `inbox` moves both out of the large `unread/`, which is then replaced at once.
    assert_eq!(bodies(&home, "bob"), ["one", "two"]);
    assert!(size(&dir) <= 4096, "unread/ replaced once emptied");
    let read = dir.with_file_name("read");
    inflate(&read);
    home.as_("bob", ["done", "--all"]).ok();
    assert!(size(&read) <= 4096, "read/ replaced once emptied");
    let doctor = home.cmd(["doctor"]).ok();
    assert!(doctor.stdout.ends_with(": healthy\n"), "{}", doctor.stdout);
}

/// A home made before mailroom first wrote to it (`mktemp -d`, then `MAILROOM_HOME`): doctor
/// finds it healthy, and the first send lays it out.
#[test]
fn a_home_created_empty_beforehand_is_healthy_and_laid_out_on_first_use() {
    let home = Home::new();
    std::fs::create_dir(home.path()).unwrap();
    home.cmd(["doctor"]).ok();
    home.send("alice", "bob", "hello");
    assert!(
        home.path().join("layout").is_file(),
        "the layout file is written"
    );
    let doctor = home.cmd(["doctor"]).ok();
    assert!(doctor.stdout.ends_with(": healthy\n"), "{}", doctor.stdout);
}
