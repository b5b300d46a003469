//! Nothing planted in the home or a checkout hangs or blinds a command: FIFOs and oversized
//! files are reported with their reason, quickly, and every other message is still shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::Home;

/// Long enough for a loaded machine, far shorter than a blocked read (forever).
const LIMIT: Duration = Duration::from_secs(30);

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

fn mailbox(home: &Home, handle: &str) -> PathBuf {
    home.path().join("projects/default/boxes").join(handle)
}

/// A git checkout named `web`, so commands run there act as `web@default`.
fn repo(home: &Home) -> PathBuf {
    let dir = home.root().join("src").join("web");
    std::fs::create_dir_all(dir.join(".git")).expect("a checkout");
    dir
}

fn unread_name() -> String {
    format!("{}.md", mailroom_core::MessageId::generate())
}

#[test]
fn a_fifo_in_the_mailbox_hangs_neither_inbox_nor_doctor_nor_the_session_start_hook() {
    let home = Home::new();
    let cwd = repo(&home);
    home.send("api", "web", "users.email is now unique");
    home.as_("api", ["send", "--broadcast", "-m", "deploy at 5"])
        .ok();
    let web = mailbox(&home, "web");
    let fifo = web.join("unread").join(unread_name());
    mkfifo(&fifo);
    let entry = home
        .path()
        .join("projects/default/channels/all/entries")
        .join(unread_name());
    mkfifo(&entry);
    let _ = std::fs::remove_file(web.join("pending.cache"));
    mkfifo(&web.join("pending.cache"));
    mkfifo(&web.join("injected"));

    let start = home
        .cmd(["hook", "claude", "SessionStart"])
        .stdin(json!({"hook_event_name": "SessionStart", "cwd": cwd}).to_string())
        .run_within(LIMIT);
    assert_eq!(start.code, 0, "{}", start.stderr);
    let v: Value = serde_json::from_str(&start.stdout)
        .unwrap_or_else(|e| panic!("hook output is not JSON ({e}): {start:?}"));
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("users.email is now unique") && context.contains("deploy at 5"),
        "{context}"
    );

    let inbox = home.as_("web", ["--json", "inbox"]).run_within(LIMIT);
    assert_eq!(inbox.code, 0, "{}", inbox.stderr);
    let v: Value = serde_json::from_str(&inbox.stdout).expect("inbox output is JSON");
    let mut damaged: Vec<(String, String)> = v["damaged"]
        .as_array()
        .expect("a damaged list")
        .iter()
        .map(|d| {
            let at = d["location"].as_str().unwrap_or_default().to_owned();
            let why = d["problem"].as_str().unwrap_or_default();
            (at, why.rsplit(": ").next().unwrap_or_default().to_owned())
        })
        .collect();
    damaged.sort();
    let why = "it is a FIFO (named pipe), not a regular file; mailroom reads only regular files in its home".to_owned();
    let mut want = vec![
        (fifo.display().to_string(), why.clone()),
        (entry.display().to_string(), why),
    ];
    want.sort();
    assert_eq!(damaged, want);

    let doctor = home.cmd(["--json", "doctor"]).run_within(LIMIT);
    assert_eq!(doctor.code, 1, "problems remain: {}", doctor.stderr);
    let v: Value =
        serde_json::from_str(&doctor.stdout).expect("doctor output is one JSON document");
    let mut special: Vec<String> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["problem"] == "is a symbolic link or special file; mailroom never follows it")
        .map(|f| f["location"].as_str().unwrap_or_default().to_owned())
        .collect();
    special.sort();
    let mut want = vec![entry.display().to_string(), fifo.display().to_string()];
    want.sort();
    assert_eq!(special, want, "{}", doctor.stdout);
    // The cache and the token are only copies: the hook replaced both with regular files.
    for copy in ["pending.cache", "injected"] {
        let meta = std::fs::symlink_metadata(web.join(copy)).expect("stat");
        assert!(meta.file_type().is_file(), "{copy} is a regular file again");
    }
}

#[test]
fn a_fifo_as_mailroom_toml_is_a_clear_error_not_a_hang() {
    let home = Home::new();
    let cwd = repo(&home);
    let config = cwd.join(".mailroom.toml");
    mkfifo(&config);
    let run = home.cmd(["whoami"]).current_dir(&cwd).run_within(LIMIT);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            format!(
                "error: {} is not a regular file (a FIFO, device or directory); mailroom reads its settings only from a regular file\n",
                config.display()
            )
            .as_str()
        )
    );
}

#[test]
fn a_2_gib_file_in_unread_costs_inbox_limit_1_nothing() {
    let home = Home::new();
    let id = home.send("api", "web", "the one real message");
    let huge = mailbox(&home, "web").join("unread").join(unread_name());
    // Sparse: 2 GiB long, nothing on disk. Read whole, it took 50 s and 8 GB.
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(2 << 30))
        .expect("a 2 GiB file");
    let run = home
        .as_("web", ["--json", "inbox", "--limit", "1"])
        .run_within(LIMIT);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).expect("inbox output is JSON");
    let shown: Vec<&str> = v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(shown, vec![id.as_str()]);
    assert_eq!(
        v["damaged"],
        json!([{
            "location": huge.display().to_string(),
            "state": "unread",
            "problem": format!(
                "cannot read {}: it is 2147483648 bytes, more than a message file can be (1310720 bytes); move it out of the home",
                huge.display()
            ),
        }])
    );
}

#[test]
fn an_import_reports_fifos_and_links_instead_of_hanging_on_them() {
    let home = Home::new();
    let root = home.root();
    let not_regular =
        "it is a FIFO (named pipe), not a regular file; mailroom reads only regular files; skipped";

    // A FIFO named on the command line is refused, and nothing is written.
    let fifo = root.join("mailbox.md");
    mkfifo(&fifo);
    let named = home
        .as_("a@b", ["import", "mailbox-md", &fifo.display().to_string()])
        .run_within(LIMIT);
    assert_eq!(named.code, 2, "{}", named.stderr);
    assert_eq!(
        named.stderr,
        format!(
            "error: {} is a FIFO (named pipe), not a regular file; mailroom reads only regular files\n",
            fifo.display()
        )
    );
    assert!(!home.path().exists(), "the refused import wrote nothing");

    // Inside a repo-mailbox tree: the FIFO and the link are reported, the message imported.
    let inbox = root.join("rm/bob/inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(
        inbox.join("2025-01-02T03-04-05Z_alice_hello.md"),
        "---\nfrom: alice\nto: bob\nsubject: hello\ndate: 2025-01-02T03:04:05Z\n---\nhi bob\n",
    )
    .unwrap();
    mkfifo(&inbox.join("2025-01-02T03-04-06Z_alice_pipe.md"));
    std::os::unix::fs::symlink(
        "/etc/passwd",
        inbox.join("2025-01-02T03-04-07Z_alice_link.md"),
    )
    .unwrap();
    let tree = home
        .as_(
            "a@b",
            [
                "--json",
                "import",
                "repo-mailbox",
                &root.join("rm").display().to_string(),
            ],
        )
        .run_within(LIMIT);
    assert_eq!(tree.code, 0, "{}", tree.stderr);
    let v: Value = serde_json::from_str(&tree.stdout).expect("one JSON document");
    let problems: Vec<(String, String)> = v["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            let file = p["file"].as_str().unwrap_or_default();
            let name = file.rsplit('/').next().unwrap_or_default().to_owned();
            (name, p["message"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(
        problems,
        vec![
            ("2025-01-02T03-04-06Z_alice_pipe.md".to_owned(), not_regular.to_owned()),
            (
                "2025-01-02T03-04-07Z_alice_link.md".to_owned(),
                "it is a symbolic link, not a regular file; mailroom reads only regular files; skipped".to_owned()
            ),
        ],
        "{}",
        tree.stdout
    );
    assert_eq!(v["imported"], 1, "{}", tree.stdout);

    // An m_AI_l registry that is a FIFO is reported, not mistaken for a project folder.
    let common = root.join("common");
    std::fs::create_dir(&common).unwrap();
    mkfifo(&common.join("projects_config.md"));
    let registry = home
        .as_(
            "a@b",
            ["--json", "import", "m_ai_l", &common.display().to_string()],
        )
        .run_within(LIMIT);
    assert_eq!(registry.code, 0, "{}", registry.stderr);
    let v: Value = serde_json::from_str(&registry.stdout).expect("one JSON document");
    assert_eq!(
        v["problems"],
        json!([{"file": common.join("projects_config.md").display().to_string(), "line": 1, "message": not_regular}])
    );
}

/// A hand-written message named with its ULID in lower case is listed with a warning (it
/// cannot be moved under that name), and `doctor --fix` gives it its canonical name, after
/// which `done` archives it.
#[test]
fn a_message_named_in_lower_case_is_flagged_and_doctor_fix_names_it() {
    let home = Home::new();
    home.send("a", "b", "first");
    let id = mailroom_core::MessageId::generate().to_string();
    let lower = format!("{}.md", id.to_ascii_lowercase());
    std::fs::write(
        mailbox(&home, "b").join("unread").join(&lower),
        "---\nfrom: eve@default\nsubject: lower\n---\nhello\n",
    )
    .unwrap();
    let inbox = home.as_("b", ["--json", "inbox"]).json();
    let listed = inbox["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subject"] == "lower")
        .expect("the hand-written message is listed");
    assert_eq!(listed["id"], id.as_str());
    assert!(
        listed["warnings"].to_string().contains("is not <id>.md"),
        "{listed}"
    );
    let report = home.as_("b", ["doctor"]).run();
    assert!(
        report.stdout.contains("is not named <id>.md"),
        "{}",
        report.stdout
    );
    home.as_("b", ["doctor", "--fix"]).run();
    assert!(
        mailbox(&home, "b")
            .join("unread")
            .join(format!("{id}.md"))
            .exists()
    );
    home.as_("b", ["done", &id]).ok();
    assert_eq!(home.count("b", "done"), 1);
}

/// A directory where a search index belongs is reported by `doctor`, and `doctor --fix`
/// leaves it and goes on (it once stopped with a storage error).
#[test]
fn doctor_fix_goes_on_past_a_directory_named_like_an_index() {
    let home = Home::new();
    home.send("a", "b", "first");
    std::fs::create_dir(mailbox(&home, "b").join("search.index")).unwrap();
    let fix = home.as_("b", ["doctor", "--fix"]).run();
    assert!(!fix.stderr.contains("Is a directory"), "{}", fix.stderr);
    assert!(fix.stdout.contains("search.index"), "{}", fix.stdout);
    assert!(mailbox(&home, "b").join("search.index").is_dir());
}
