//! Bad input gets a clear error and changes nothing: one table of malformed names, oversize
//! and non-UTF-8 bodies, unknown ids, unknown flags and refused operations, each run against
//! the same populated home.

use std::ffi::OsString;

use insta::assert_snapshot;

use crate::support::{Home, settings};

/// How a bad command line must end.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// clap's usage error: exit 2, an `error:` line, then usage text.
    Usage,
    /// mailroom's own error: this exit code and exactly one `error:` line.
    Code(i32),
}

struct Case {
    label: String,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    expect: Expect,
}

fn case(label: impl Into<String>, args: &[&str], expect: Expect) -> Case {
    Case {
        label: label.into(),
        args: args.iter().map(OsString::from).collect(),
        stdin: None,
        expect,
    }
}

fn with_stdin(mut c: Case, bytes: Vec<u8>) -> Case {
    c.stdin = Some(bytes);
    c
}

/// Shows control characters (line breaks included) as escapes, so each case stays on one
/// line of the snapshot; the one-line rule itself is checked on the raw output.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let unread = home.send("alice", "bob", "still unread");
    let read = home.send("alice", "bob", "already read");
    home.as_("bob", ["read", &read]).ok();
    home.cmd([
        "--as",
        "HUMAN",
        "--project",
        "default",
        "roster",
        "add",
        "gone",
        "--inactive",
    ])
    .ok();
    home.cmd(["projects", "add", "shop", "--policy", "roster"])
        .ok();
    home.cmd([
        "--as",
        "HUMAN",
        "--project",
        "shop",
        "roster",
        "add",
        "frontend",
    ])
    .ok();
    for p in ["web", "ops"] {
        home.cmd(["--as", "HUMAN", "--project", p, "roster", "add", "sam"])
            .ok();
    }

    let long = "x".repeat(65);
    let bad_names: [(&str, &str); 7] = [
        ("dot-dot", "../x"),
        ("slash", "a/b"),
        ("empty", ""),
        ("reserved", "_x"),
        ("65 chars", &long),
        ("bell", "a\u{7}b"),
        ("newline", "a\nb"),
    ];
    let mut cases = Vec::new();
    for (what, name) in bad_names {
        cases.push(case(
            format!("--to {what}"),
            &["--as", "alice", "send", "--to", name, "-m", "hi"],
            Expect::Code(2),
        ));
        cases.push(case(
            format!("--as {what}"),
            &["--as", name, "send", "--to", "bob", "-m", "hi"],
            Expect::Code(2),
        ));
        cases.push(case(
            format!("--project {what}"),
            &[
                "--as",
                "alice",
                "--project",
                name,
                "send",
                "--to",
                "bob",
                "-m",
                "hi",
            ],
            Expect::Code(2),
        ));
        cases.push(case(
            format!("roster add {what}"),
            &[
                "--as",
                "HUMAN",
                "--project",
                "default",
                "roster",
                "add",
                name,
            ],
            Expect::Code(2),
        ));
    }
    cases.push(case(
        "--to with a bad project",
        &["--as", "alice", "send", "--to", "bob@_x", "-m", "hi"],
        Expect::Code(2),
    ));
    cases.push(case(
        "escape sequence in --to",
        &["--as", "alice", "send", "--to", "a\u{1b}[2Jb", "-m", "hi"],
        Expect::Code(2),
    ));

    let over = vec![b'a'; 1024 * 1024 + 1];
    cases.push(with_stdin(
        case(
            "oversize body on stdin",
            &["--as", "alice", "send", "--to", "bob"],
            Expect::Code(2),
        ),
        over.clone(),
    ));
    cases.push(with_stdin(
        case(
            "oversize reply on stdin",
            &["--as", "bob", "reply", &read],
            Expect::Code(2),
        ),
        over,
    ));
    let not_utf8 = b"fine so far \xff\xfe then not".to_vec();
    for args in [
        &["--as", "alice", "send", "--to", "bob"][..],
        &["--as", "bob", "reply", &read],
        &["--as", "alice", "handover"],
    ] {
        cases.push(with_stdin(
            case(format!("invalid UTF-8: {}", args[2]), args, Expect::Code(2)),
            not_utf8.clone(),
        ));
    }
    cases.push(case(
        "empty message",
        &["--as", "alice", "send", "--to", "bob", "-m", " \n"],
        Expect::Code(2),
    ));
    cases.push(case(
        "unknown kind",
        &[
            "--as", "alice", "send", "--to", "bob", "-m", "x", "--kind", "SHOUT",
        ],
        Expect::Code(2),
    ));
    cases.push(case(
        "unknown priority",
        &[
            "--as",
            "alice",
            "send",
            "--to",
            "bob",
            "-m",
            "x",
            "--priority",
            "Z",
        ],
        Expect::Code(2),
    ));
    cases.push(case(
        "not an id",
        &["--as", "bob", "read", "../x"],
        Expect::Code(2),
    ));

    // Shorter than a table's short id, so the snapshot shows it as typed.
    let unknown = "01ZZZZZZZZ";
    for args in [
        &["--as", "bob", "read", unknown][..],
        &["--as", "bob", "read", unknown, "--archive"],
        &["--as", "bob", "reply", unknown, "-m", "x"],
        &["--as", "bob", "done", unknown],
        &["--as", "bob", "done", &read, unknown],
        &["--as", "alice", "edit", unknown, "-m", "x"],
        &["--as", "alice", "cancel", unknown],
        &["--as", "bob", "recover", "--restore", unknown],
    ] {
        cases.push(case(
            format!("unknown id: {}", args[2..].join(" ")),
            args,
            Expect::Code(3),
        ));
    }

    cases.push(case(
        "cancel of read mail",
        &["--as", "alice", "cancel", &read],
        Expect::Code(4),
    ));
    cases.push(case(
        "cancel of someone else's mail",
        &["--as", "bob", "cancel", &unread],
        Expect::Code(4),
    ));
    cases.push(case(
        "edit of someone else's mail",
        &["--as", "bob", "edit", &unread, "-m", "mine now"],
        Expect::Code(4),
    ));
    cases.push(case(
        "send to an inactive member",
        &["--as", "alice", "send", "--to", "gone", "-m", "hi"],
        Expect::Code(4),
    ));
    cases.push(case(
        "unknown handle in a roster project",
        &[
            "--as",
            "frontend@shop",
            "send",
            "--to",
            "backend",
            "-m",
            "hi",
        ],
        Expect::Code(3),
    ));
    cases.push(case(
        "ambiguous bare handle",
        &["--as", "alice", "send", "--to", "sam", "-m", "hi"],
        Expect::Code(5),
    ));

    // Channels, broadcasts and their refusals.
    let broadcast = home
        .as_(
            "alice",
            ["--json", "send", "--broadcast", "-m", "freeze at 5"],
        )
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let entry = home
        .as_(
            "alice",
            ["--json", "channel", "post", "run-1", "-m", "step 1 done"],
        )
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (what, name) in bad_names {
        cases.push(case(
            format!("channel post {what}"),
            &["--as", "alice", "channel", "post", name, "-m", "x"],
            Expect::Code(2),
        ));
        cases.push(case(
            format!("send --channel {what}"),
            &["--as", "alice", "send", "--channel", name, "-m", "x"],
            Expect::Code(2),
        ));
    }
    for (label, args, code) in [
        (
            "retract of another's broadcast",
            &["--as", "bob", "retract", &broadcast][..],
            4,
        ),
        (
            "retract of an unknown broadcast",
            &["--as", "alice", "retract", unknown],
            3,
        ),
        (
            "retract of directed mail",
            &["--as", "alice", "retract", &unread],
            4,
        ),
        (
            "retract of a channel entry",
            &["--as", "alice", "retract", &entry],
            4,
        ),
        (
            "edit of a broadcast",
            &["--as", "alice", "edit", &broadcast, "-m", "y"],
            4,
        ),
        (
            "cancel of a broadcast",
            &["--as", "alice", "cancel", &broadcast],
            4,
        ),
        (
            "edit of a channel entry",
            &["--as", "alice", "edit", &entry, "-m", "y"],
            4,
        ),
        (
            "cancel of a channel entry",
            &["--as", "alice", "cancel", &entry],
            4,
        ),
        (
            "edit of another's channel entry",
            &["--as", "bob", "edit", &entry, "-m", "y"],
            4,
        ),
        (
            "done of a broadcast",
            &["--as", "bob", "done", &broadcast],
            4,
        ),
        (
            "edit with nothing to change",
            &["--as", "alice", "edit", &unread],
            2,
        ),
        (
            "restore of pending mail",
            &["--as", "bob", "recover", "--restore", &read],
            4,
        ),
        (
            "activate an unknown member",
            &[
                "--as",
                "HUMAN",
                "--project",
                "default",
                "roster",
                "activate",
                "nobody",
            ],
            3,
        ),
        (
            "deactivate in an unknown project",
            &[
                "--as",
                "HUMAN",
                "--project",
                "nowhere",
                "roster",
                "deactivate",
                "x",
            ],
            3,
        ),
        (
            "roster of an unknown project",
            &["--project", "nowhere", "roster"],
            3,
        ),
        (
            "add an existing member",
            &[
                "--as",
                "HUMAN",
                "--project",
                "shop",
                "roster",
                "add",
                "frontend",
            ],
            4,
        ),
        (
            "add HUMAN to a roster",
            &[
                "--as",
                "HUMAN",
                "--project",
                "shop",
                "roster",
                "add",
                "HUMAN",
            ],
            2,
        ),
        (
            "send into a roster project from outside it",
            &[
                "--as",
                "sam@web",
                "send",
                "--to",
                "frontend@shop",
                "-m",
                "x",
            ],
            4,
        ),
        (
            "roster add by a non-member of a roster project",
            &[
                "--as",
                "sam@web",
                "--project",
                "shop",
                "roster",
                "add",
                "sam",
            ],
            4,
        ),
        (
            "projects set by a non-member",
            &[
                "--as", "sam@web", "projects", "set", "shop", "--policy", "open",
            ],
            4,
        ),
        (
            "a typo of an existing mailbox",
            &["--as", "alice", "send", "--to", "bbo", "-m", "x"],
            3,
        ),
        (
            "projects add with another policy",
            &["projects", "add", "shop", "--policy", "open"],
            4,
        ),
        (
            "projects set of an unknown project",
            &[
                "--as", "HUMAN", "projects", "set", "nowhere", "--policy", "open",
            ],
            3,
        ),
        ("search for nothing", &["--as", "bob", "search", "  "], 2),
        (
            "import from a missing path",
            &["import", "m_ai_l", "/nonexistent/common"],
            2,
        ),
        (
            "import a missing mailbox.md",
            &["import", "mailbox-md", "/nonexistent/mailbox.md"],
            2,
        ),
        (
            "import an m_AI_l tree from a file",
            &["--as", "HUMAN", "import", "m_ai_l", "/dev/null"],
            2,
        ),
        (
            "import a repo-mailbox tree from a file",
            &["--as", "HUMAN", "import", "repo-mailbox", "/dev/null"],
            2,
        ),
    ] {
        cases.push(case(label, args, Expect::Code(code)));
    }
    let subject = "s".repeat(201);
    cases.push(case(
        "subject over 200 characters",
        &[
            "--as", "alice", "send", "--to", "bob", "-s", &subject, "-m", "x",
        ],
        Expect::Code(2),
    ));
    let key = "k".repeat(101);
    cases.push(case(
        "idempotency key over 100 bytes",
        &[
            "--as",
            "alice",
            "send",
            "--to",
            "bob",
            "-m",
            "x",
            "--idempotency-key",
            &key,
        ],
        Expect::Code(2),
    ));
    cases.push(case(
        "idempotency key with a control character",
        &[
            "--as",
            "alice",
            "send",
            "--to",
            "bob",
            "-m",
            "x",
            "--idempotency-key",
            "a\u{1}b",
        ],
        Expect::Code(2),
    ));
    // Files handed to importers: not UTF-8.
    let binary = home.path().with_file_name("binary.md");
    std::fs::write(&binary, b"---\n**From:** a\n\xff\xfe\n").unwrap();
    let binary = binary.to_string_lossy().into_owned();
    cases.push(case(
        "import mailbox-md of a file that is not UTF-8",
        &["import", "mailbox-md", &binary],
        Expect::Code(2),
    ));
    cases.push(case(
        "channel import of a file that is not UTF-8",
        &["--as", "alice", "channel", "import", "run-1", &binary],
        Expect::Code(2),
    ));
    // A file dropped in by hand that is not a message: asking for it by id is an error that
    // names the file; listing it is covered by the tolerant-read tests.
    let damaged_id = "01KZZZZZZZZZZZZZZZZZZZZZZZ";
    std::fs::write(
        home.path()
            .join(format!("projects/default/boxes/bob/unread/{damaged_id}.md")),
        "no frontmatter here\n",
    )
    .unwrap();
    cases.push(case(
        "read of a hand-dropped file that is not a message",
        &["--as", "bob", "read", damaged_id],
        Expect::Code(1),
    ));

    for args in [
        &["--as", "bob", "inbox", "--bogus"][..],
        &[
            "--as",
            "alice",
            "send",
            "--to",
            "bob",
            "--broadcast",
            "-m",
            "x",
        ],
        &[
            "--as",
            "alice",
            "send",
            "--broadcast",
            "--channel",
            "run-1",
            "-m",
            "x",
        ],
        &["--as", "alice", "channel", "post"],
        &["import", "maildir", "/tmp"],
        &["--bogus", "inbox"],
        &[
            "--as", "alice", "send", "--to", "bob", "-m", "x", "--cc", "carol",
        ],
        &["--as", "alice", "send", "-m", "no recipient"],
        &["frobnicate"],
        &["--as", "bob", "done"],
        &["--as", "bob", "done", "--all", &read],
        &["--as", "bob", "inbox", "--limit", "-1"],
        &[
            "--as", "HUMAN", "projects", "set", "web", "--policy", "closed",
        ],
    ] {
        cases.push(case(
            format!("usage: {}", args.join(" ")),
            args,
            Expect::Usage,
        ));
    }

    let mut report = String::new();
    let mut violations = Vec::new();
    for c in &cases {
        let before = home.tree();
        let mut cmd = home.cmd(&c.args);
        if let Some(bytes) = &c.stdin {
            cmd.stdin(bytes.clone());
        }
        let run = cmd.run();
        let (code, one_line) = match c.expect {
            Expect::Usage => (2, false),
            Expect::Code(code) => (code, true),
        };
        if run.code != code {
            violations.push(format!(
                "{}: exit {} (want {code})",
                printable(&c.label),
                run.code
            ));
        }
        if !run.stderr.starts_with("error: ") {
            violations.push(format!(
                "{}: stderr does not start with 'error: '",
                printable(&c.label)
            ));
        }
        if one_line && run.stderr.lines().count() != 1 {
            violations.push(format!(
                "{}: the error is {} lines, not one",
                c.label,
                run.stderr.lines().count()
            ));
        }
        if run.stderr.chars().any(|ch| ch.is_control() && ch != '\n') {
            violations.push(format!(
                "{}: stderr carries raw control characters",
                c.label
            ));
        }
        if !run.stdout.is_empty() {
            violations.push(format!("{}: stdout is not empty", printable(&c.label)));
        }
        let changes = before.changes(&home.tree());
        if !changes.is_empty() {
            violations.push(format!(
                "{}: the home changed: {}",
                printable(&c.label),
                changes.join(", ")
            ));
        }
        let first = if one_line {
            run.stderr.as_str()
        } else {
            run.stderr.lines().next().unwrap_or_default()
        };
        report.push_str(&format!(
            "{} [exit {}]\n  {}\n",
            printable(&c.label),
            run.code,
            printable(first.trim_end())
        ));
    }
    assert_snapshot!(home.redact(&report));
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn bad_input_with_json_reports_the_error_as_json_too() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let run = home
        .as_("alice", ["--json", "send", "--to", "../x", "-m", "hi"])
        .fails(2);
    let missing = home.as_("alice", ["read", "01ZZZZZZ", "--json"]).fails(3);
    assert_snapshot!(format!("{}{}", home.show(&run), home.show(&missing)));
    assert_eq!(home.tree().0.len(), 0);
}

#[test]
fn an_unreachable_postgresql_store_fails_and_never_falls_back_to_files() {
    let home = Home::new();
    home.send("alice", "bob", "before");
    let before = home.tree();
    let env = home
        .as_("alice", ["send", "--to", "bob", "-m", "x"])
        .env(
            "MAILROOM_URL",
            "postgres://mail:pw-never-shown@127.0.0.1:1/mail",
        )
        .fails(1);
    let flag = home
        .as_(
            "alice",
            [
                "--url",
                "postgres://mail:pw-never-shown@127.0.0.1:1/mail",
                "inbox",
            ],
        )
        .fails(1);
    for run in [&env, &flag] {
        assert_eq!(
            run.stderr,
            "error: cannot reach the PostgreSQL server at postgres://mail@127.0.0.1:1/mail: connection refused; start the server, or correct the host and port of the URL\n"
        );
    }
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

#[test]
fn doctor_json_finding_problems_prints_one_document_and_names_the_home_flag() {
    let home = Home::new();
    home.send("alice", "bob", "hi");
    let link = home
        .path()
        .join("projects/default/boxes/bob/unread/stray.md");
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    let h = home.path().display().to_string();
    let fix = format!("`mailroom --home {h} doctor --fix` repairs what is safe");
    let run = home
        .cmd(["--home", h.as_str(), "--json", "doctor"])
        .fails(1);
    let v: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("stdout is one JSON document");
    assert_eq!(v["remaining"], 1);
    assert_eq!(v["findings"][0]["location"], link.display().to_string());
    assert_eq!(
        v["error"],
        serde_json::json!({
            "code": 1,
            "kind": "failure",
            "message": format!("1 problem remains: see the findings; {fix}"),
        })
    );
    let text = home.cmd(["--home", h.as_str(), "doctor"]).fails(1);
    assert_eq!(
        text.stderr,
        format!("error: 1 problem remains: see the lines above; {fix}\n")
    );
}

#[test]
fn a_usage_error_under_json_prints_the_error_object() {
    let home = Home::new();
    let run = home
        .as_("a@b", ["--json", "send", "--to", "c@b", "--bogus"])
        .run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(
        v,
        serde_json::json!({"error": {"code": 2, "kind": "usage", "message": "unexpected argument '--bogus' found"}})
    );
    assert!(
        run.stderr
            .starts_with("error: unexpected argument '--bogus' found"),
        "{}",
        run.stderr
    );
    // Without --json, stdout stays empty.
    let plain = home.as_("a@b", ["send", "--bogus"]).run();
    assert_eq!((plain.code, plain.stdout.as_str()), (2, ""));
    assert!(!home.path().exists());
}

#[test]
fn a_home_flag_of_a_dash_or_nothing_is_refused_and_a_relative_one_is_the_shells() {
    let home = Home::new();
    let work = home.root().join("work");
    for (args, shown) in [(&["--home", "-"][..], "-"), (&["--home=-x"], "-x")] {
        let run = home
            .as_(
                "a",
                args.iter()
                    .copied()
                    .chain(["send", "--to", "b", "-m", "hi"]),
            )
            .fails(2);
        assert_eq!(
            run.stderr,
            format!(
                "error: --home '{shown}' is not a directory name; give a path (./{shown} if that is really the name)\n"
            )
        );
    }
    let empty = home
        .as_("a", ["--home", "", "send", "--to", "b", "-m", "hi"])
        .run();
    assert_eq!(empty.code, 2, "{}", empty.stderr);
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "nothing was created"
    );
    let sent = home
        .as_("a", ["--home", "rel", "send", "--to", "b", "-m", "hi"])
        .run();
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    assert!(work.join("rel/projects/default/boxes/b/unread").is_dir());
}
