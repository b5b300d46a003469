//! A hostile file system: a full disk must fail a send with a clear error and leave nothing
//! behind. The disk is a 128 KiB tmpfs mounted in a private mount namespace (`unshare -rm`),
//! so the test needs no privileges and touches no real file system.

use std::process::Command;

#[test]
fn a_full_disk_fails_the_send_with_a_clear_error_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("disk");
    std::fs::create_dir(&mnt).unwrap();
    let script = r#"
set -eu
mnt="$1"; bin="$2"; err="$3"
mount -t tmpfs -o size=128k tmpfs "$mnt"
export MAILROOM_HOME="$mnt/home"
unset MAILROOM_AS
"$bin" --as a send --to b --message first >/dev/null 2>&1
head -c 400000 /dev/zero > "$mnt/fill" 2>/dev/null || true
body=$(head -c 60000 /dev/zero | tr '\0' x)
set +e
"$bin" --as a send --to b --message "$body" 2>"$err"
echo "exit=$?"
set -e
echo "unread=$(ls "$MAILROOM_HOME/projects/default/boxes/b/unread" | wc -l)"
echo "outbox=$(ls "$MAILROOM_HOME/projects/default/boxes/a/outbox" | wc -l)"
echo "temp files=$(cd "$MAILROOM_HOME" && find . -path '*/tmp/*' -type f | wc -l)"
"#;
    let err = dir.path().join("stderr");
    let out = Command::new("unshare")
        .args(["-r", "-m", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(env!("CARGO_BIN_EXE_mailroom"))
        .arg(&err)
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success(),
        "the namespace script failed (unshare -rm needs user namespaces): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "exit=1\nunread=1\noutbox=1\ntemp files=0\n",
        "the failed send exits 1 and leaves the first message as the only one, with no debris"
    );
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains("No space left on device"),
        "a clear error naming the cause: {stderr}"
    );
    assert!(
        stderr.contains("/home/projects/default/boxes/b/tmp/")
            && stderr.contains("free some space"),
        "the error names the path and the fix: {stderr}"
    );
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_instead_of_panicking() {
    // `mailroom inbox | head` once panicked with "failed printing to stdout".
    let home = crate::support::Home::new();
    home.send("alice", "bob", "hello");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_mailroom"))
        .args(["--as", "bob", "inbox"])
        .env("MAILROOM_HOME", home.path())
        .env_remove("MAILROOM_AS")
        .current_dir(home.path().parent().unwrap())
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.as_ref()), (Some(0), ""));
}

#[test]
fn an_error_or_a_hook_warning_into_a_full_stderr_keeps_its_exit_code() {
    // Writing the error line to a full or closed stderr once panicked (exit 101; an abort once
    // the binary had its own entry point), and a hook's warning failed the session it serves.
    let home = crate::support::Home::new();
    home.send("alice", "bob", "hello");
    let run = |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mailroom"))
            .args(args)
            .env("MAILROOM_HOME", home.path())
            .env_remove("MAILROOM_AS")
            .current_dir(home.path().parent().unwrap())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .spawn()
            .unwrap();
        use std::io::Write as _;
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        child.wait().unwrap().code()
    };
    assert_eq!(
        run(&["--as", "bob", "read", "ZZZ"], ""),
        Some(3),
        "not found"
    );
    assert_eq!(run(&["--as", "bob", "--json", "read", "ZZZ"], ""), Some(3));
    assert_eq!(
        run(
            &["--as", "bob", "hook", "claude", "SessionStart"],
            "garbage"
        ),
        Some(0),
        "a hook's warning nobody can read does not fail the session"
    );
    assert_eq!(
        run(&["--as", "bob", "wait", "--timeout", "1e20"], ""),
        Some(2),
        "a timeout beyond the clock is bad input"
    );
}

/// Runs `script` as root of a private user and mount namespace, with `$1` an empty directory
/// (mount point), `$2` the mailroom binary and `$3` a file for stderr; returns stdout and the
/// stderr file's content.
fn in_namespace(script: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("disk");
    std::fs::create_dir(&mnt).unwrap();
    let err = dir.path().join("stderr");
    let out = Command::new("unshare")
        .args(["-r", "-m", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(env!("CARGO_BIN_EXE_mailroom"))
        .arg(&err)
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success(),
        "the namespace script failed (unshare -rm needs user namespaces): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        std::fs::read_to_string(&err).unwrap_or_default(),
    )
}

#[test]
fn a_send_to_two_failing_on_a_full_disk_leaves_neither_with_the_message_and_a_keyed_retry_delivers_both()
 {
    // Room for one copy, not two: the first copy once stayed with `b` while the send exited 1,
    // so a retry without a key doubled it.
    let (stdout, stderr) = in_namespace(
        r#"
set -eu
mnt="$1"; bin="$2"; err="$3"
mount -t tmpfs -o size=256k tmpfs "$mnt"
export MAILROOM_HOME="$mnt/home"
unset MAILROOM_AS
box="$MAILROOM_HOME/projects/default/boxes"
"$bin" --as a send --to b --to c --message first >/dev/null 2>&1
head -c 400000 /dev/zero > "$mnt/fill" 2>/dev/null || true
truncate -s "$(( $(stat -c %s "$mnt/fill") - 90000 ))" "$mnt/fill"
body=$(head -c 60000 /dev/zero | tr '\0' x)
set +e
"$bin" --as a send --to b --to c --idempotency-key k1 --message "$body" 2>"$err"
echo "exit=$?"
set -e
echo "b=$(ls "$box/b/unread" | wc -l) c=$(ls "$box/c/unread" | wc -l) outbox=$(ls "$box/a/outbox" | wc -l)"
echo "temp files=$(cd "$MAILROOM_HOME" && find . -path '*/tmp/*' -type f | wc -l)"
rm "$mnt/fill"
"$bin" --as a send --to b --to c --idempotency-key k1 --message "$body" 2>&1 | sed 's/[0-9A-Z]\{26\}/ID/'
echo "b=$(ls "$box/b/unread" | wc -l) c=$(ls "$box/c/unread" | wc -l) outbox=$(ls "$box/a/outbox" | wc -l)"
"#,
    );
    assert_eq!(
        stdout,
        "exit=1\nb=1 c=1 outbox=1\ntemp files=0\n\
         note: this idempotency key was used before; message ID stands; it had not reached b@default, c@default: delivered to them now\n\
         sent ID to b@default, c@default (already sent with this key; delivered now to b@default, c@default, which it had not reached)\n\
         b=2 c=2 outbox=2\n",
        "the failed send leaves only the first message anywhere; the keyed retry delivers each copy once"
    );
    assert!(
        stderr.lines().count() == 1 && stderr.contains("No space left on device"),
        "one clear line: {stderr}"
    );
}

#[test]
fn a_send_whose_last_copy_cannot_be_published_takes_back_the_copies_already_published() {
    // `c`'s unread/ is another file system, so linking its copy fails (EXDEV) after `b`'s copy
    // and the outbox trace were published: both must be taken back.
    let (stdout, stderr) = in_namespace(
        r#"
set -eu
mnt="$1"; bin="$2"; err="$3"
mount -t tmpfs -o size=1m tmpfs "$mnt"
export MAILROOM_HOME="$mnt/home"
unset MAILROOM_AS
box="$MAILROOM_HOME/projects/default/boxes"
"$bin" --as a send --to b --to c --message first >/dev/null 2>&1
"$bin" --as c done --all >/dev/null 2>&1
mount -t tmpfs -o size=64k tmpfs "$box/c/unread"
set +e
"$bin" --as a send --to b --to c --message second 2>"$err"
echo "exit=$?"
set -e
echo "b=$(ls "$box/b/unread" | wc -l) c=$(ls "$box/c/unread" | wc -l) outbox=$(ls "$box/a/outbox" | wc -l)"
echo "temp files=$(cd "$MAILROOM_HOME" && find . -path '*/tmp/*' -type f | wc -l)"
"#,
    );
    assert_eq!(
        stdout, "exit=1\nb=1 c=0 outbox=1\ntemp files=0\n",
        "nobody has the second message and no trace of it is left"
    );
    assert!(
        stderr.lines().count() == 1 && stderr.contains("/boxes/c/unread/"),
        "one line naming where it failed: {stderr}"
    );
}

/// Regression: a send recorded its new recipient's mailbox (and project) before delivering, so
/// one that failed on a full disk (room for a roster entry, not for the copy) left a roster
/// entry for a mailbox that never got mail.
#[test]
fn a_send_failing_on_a_full_disk_records_no_new_mailbox() {
    let (stdout, stderr) = in_namespace(
        r#"
set -eu
mnt="$1"; bin="$2"; err="$3"
mount -t tmpfs -o size=128k tmpfs "$mnt"
export MAILROOM_HOME="$mnt/home"
unset MAILROOM_AS
"$bin" --as a send --to b --message first >/dev/null 2>&1
head -c 400000 /dev/zero > "$mnt/fill" 2>/dev/null || true
truncate -s "$(( $(stat -c %s "$mnt/fill") - 24000 ))" "$mnt/fill"
body=$(head -c 60000 /dev/zero | tr '\0' x)
set +e
"$bin" --as a send --to newbie --message "$body" 2>"$err"
echo "exit=$?"
set -e
rm "$mnt/fill"
"$bin" --as a roster | awk 'NR > 1 {print $1}' | tr '\n' ' '
"#,
    );
    assert_eq!(
        stdout, "exit=1\na b ",
        "the failed send left no roster entry for the mailbox it would have created"
    );
    assert!(
        stderr.contains("No space left on device"),
        "a clear error: {stderr}"
    );
}
