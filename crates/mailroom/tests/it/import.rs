//! `import m_ai_l|repo-mailbox|mailbox-md` end to end, over fixture trees in
//! `tests/fixtures/`: what was imported lands in the right mailbox and state, every problem is
//! reported with file:line, and a second run imports nothing and says so.

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use serde_json::Value;

use crate::support::{Home, both_stores, settings};

/// Copies fixture `name` into the test's temporary directory (so reported paths redact to
/// `[TMP]`) and returns the copy's path.
fn fixture(home: &Home, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let to = home.root().join(name);
    copy_tree(&from, &to);
    to
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a fixture directory");
    for entry in std::fs::read_dir(from).expect("list a fixture directory") {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a fixture file");
        }
    }
}

/// (from, subject, state) of each message of a `--json` listing.
fn summary(v: &Value) -> Vec<(String, String, String)> {
    v["messages"]
        .as_array()
        .expect("a message listing")
        .iter()
        .map(|m| {
            (
                m["from"].as_str().unwrap_or_default().to_owned(),
                m["subject"].as_str().unwrap_or_default().to_owned(),
                m["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

fn import_m_ai_l_puts_each_mailbox_in_place_and_a_second_run_adds_nothing(home: &Home) {
    let _s = settings().bind_to_scope();
    let tree = fixture(home, "m_ai_l");
    let first = home.as_("HUMAN", ["import", "m_ai_l"]).args([&tree]).ok();
    assert_snapshot!("m_ai_l_first", home.show(&first));
    let second = home.as_("HUMAN", ["import", "m_ai_l"]).args([&tree]).ok();
    assert_snapshot!("m_ai_l_second", home.show(&second));

    let backend = home.as_("BACKEND@shop", ["--json", "inbox"]).json();
    assert_eq!(
        summary(&backend),
        owned(&[
            ("FRONTEND@shop", "API ready?", "unread"),
            ("FRONTEND@shop", "Cross-project style sender", "unread"),
            ("OLDBOT@shop", "Sentinel in text", "unread"),
        ])
    );
    let bodies: Vec<&str> = backend["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().expect("a body"))
        .collect();
    assert_eq!(
        bodies,
        vec![
            "Is the /orders endpoint up?\nI need it for the checkout page.\n\nThanks.",
            "One line only.",
            "The marker <!-- END --> ends a mailbox.",
        ],
        "multi-line bodies kept whole, the escape undone"
    );
    let archived = home.as_("FRONTEND@shop", ["--json", "recover"]).json();
    assert_snapshot!("m_ai_l_frontend_recover", home.redact_json(&archived));
    let outbox = home.as_("FRONTEND@shop", ["--json", "outbox"]).json();
    assert_snapshot!("m_ai_l_frontend_outbox", home.redact_json(&outbox));
}

/// Imports the m_AI_l fixture into a fresh home.
fn imported_m_ai_l() -> Home {
    let home = Home::new();
    let tree = fixture(&home, "m_ai_l");
    home.as_("HUMAN", ["import", "m_ai_l"]).args([&tree]).ok();
    home
}

#[test]
fn import_m_ai_l_sends_the_human_mailbox_from_the_project_the_sender_is_on() {
    let home = imported_m_ai_l();
    let human = home.as_("HUMAN", ["--json", "inbox"]).json();
    assert_eq!(
        summary(&human),
        owned(&[("BACKEND@shop", "Need a decision", "unread")])
    );
}

#[test]
fn import_m_ai_l_keeps_the_roles_and_statuses_of_roster_md() {
    let home = imported_m_ai_l();
    let roster = home.cmd(["--json", "--project", "shop", "roster"]).json();
    let members: Vec<(&str, &str, &str)> = roster["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["handle"].as_str().expect("handle"),
                m["role"].as_str().expect("role"),
                m["status"].as_str().expect("status"),
            )
        })
        .collect();
    assert_eq!(
        members,
        vec![
            ("BACKEND", "api and database", "active"),
            ("FRONTEND", "web client", "active"),
            ("OLDBOT", "retired helper", "inactive"),
        ],
        "roster.md's roles and statuses"
    );
}

fn import_m_ai_l_recovers_what_it_can_from_damaged_files_and_reports_the_rest_by_line(home: &Home) {
    let _s = settings().bind_to_scope();
    let tree = fixture(home, "damaged");
    let first = home.as_("HUMAN", ["import", "m_ai_l"]).args([&tree]).ok();
    assert_snapshot!("damaged_first", home.show(&first));
    let json = home
        .as_("HUMAN", ["--json", "import", "m_ai_l"])
        .args([&tree])
        .json();
    assert_snapshot!("damaged_second_json", home.redact_json(&json));

    let backend = home.as_("BACKEND@shop", ["--json", "inbox"]).json();
    let mut subjects: Vec<String> = summary(&backend).into_iter().map(|(_, s, _)| s).collect();
    subjects.sort();
    assert_eq!(
        subjects,
        vec![
            "Bad timestamp",
            "Good one",
            "Last one",
            "Marker inside text",
            "Missing priority"
        ],
        "every message that can be recovered is"
    );
    let marker = backend["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["subject"] == "Marker inside text")
        .expect("the message with the marker");
    assert_eq!(
        marker["body"],
        "The line below mentions the marker.\nDo not write <!-- END --> inside a message body.\nStill the same message."
    );
}

fn import_repo_mailbox_keeps_pending_archived_broadcasts_and_seen_sets(home: &Home) {
    let _s = settings().bind_to_scope();
    let tree = fixture(home, "repo-mailbox");
    let first = home.cmd(["import", "repo-mailbox"]).args([&tree]).ok();
    assert_snapshot!("repo_mailbox_first", home.show(&first));
    let second = home.cmd(["import", "repo-mailbox"]).args([&tree]).ok();
    assert_snapshot!("repo_mailbox_second", home.show(&second));

    let show = home.as_("api", ["--json", "channel", "show", "all"]).json();
    assert_eq!(
        summary(&show),
        owned(&[
            ("api@default", "Freeze on Friday (retracted)", "retracted"),
            ("api@default", "API v2 is the default", "read"),
            ("web@default", "Design tokens moved", "unread"),
        ]),
        "api saw its own two, not web's"
    );
    // (who, [(from, subject, state)]) each reader's inbox shows.
    type Expected<'a> = (&'a str, &'a [(&'a str, &'a str, &'a str)]);
    let cases: [Expected<'_>; 3] = [
        (
            "api",
            &[
                ("web@default", "Is the /orders endpoint live?", "unread"),
                ("web@default", "Design tokens moved", "unread"),
            ],
        ),
        ("web", &[("api@default", "Yes, it is live", "unread")]),
        (
            "newrepo",
            &[
                ("api@default", "API v2 is the default", "unread"),
                ("web@default", "Design tokens moved", "unread"),
            ],
        ),
    ];
    for (who, expected) in cases {
        let inbox = home.as_(who, ["--json", "inbox"]).json();
        assert_eq!(summary(&inbox), owned(expected), "{who}'s inbox");
    }
    let recover = home.as_("api", ["--json", "recover"]).json();
    assert_eq!(
        recover["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["subject"].as_str().expect("a subject"))
            .collect::<Vec<_>>(),
        vec!["Old question, handled"]
    );
}

fn import_mailbox_md_goes_to_the_run_channel_and_a_second_run_adds_nothing(home: &Home) {
    let _s = settings().bind_to_scope();
    let tree = fixture(home, "mailbox-md");
    let file = tree.join("run-42/mailbox.md");
    let first = home
        .as_("leader", ["import", "mailbox-md"])
        .args([&file])
        .ok();
    assert_snapshot!("mailbox_md_first", home.show(&first));
    let second = home
        .as_("leader", ["--json", "import", "mailbox-md"])
        .args([&file])
        .json();
    assert_eq!(
        (&second["imported"], &second["duplicates"]),
        (&serde_json::json!(0), &serde_json::json!(3))
    );
    let list = home.as_("leader", ["channel", "list"]).ok();
    assert_snapshot!("mailbox_md_list", home.show(&list));
    let search = home
        .as_("leader", ["--json", "search", "covariance"])
        .json();
    assert_eq!(
        summary(&search),
        owned(&[(
            "planner@default",
            "Undefined symbol in equation (3)",
            "unread"
        )]),
        "search covers channels"
    );
}

fn import_m_ai_l_reads_a_real_projects_config_with_windows_paths_into_roster_projects(home: &Home) {
    let _s = settings().bind_to_scope();
    let tree = fixture(home, "m_ai_l_windows");
    let first = home
        .as_("HUMAN", ["import", "m_ai_l"])
        .args([tree.join("common")])
        .ok();
    assert_snapshot!("m_ai_l_windows_first", home.show(&first));

    let projects = home.cmd(["--json", "projects"]).json();
    let policies: Vec<(&str, &str)> = projects["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name"),
                p["policy"].as_str().expect("policy"),
            )
        })
        .collect();
    assert_eq!(
        policies,
        vec![("ATORNAI", "roster"), ("COMMON", "roster")],
        "every project of the table, under m_AI_l's roster rule"
    );
    let backend = home.as_("BACKEND@ATORNAI", ["--json", "inbox"]).json();
    assert_eq!(
        summary(&backend),
        owned(&[("FRONTEND@ATORNAI", "Re: Repo layout agreed", "unread")])
    );
    let human = home.as_("HUMAN", ["--json", "inbox"]).json();
    assert_eq!(
        summary(&human),
        owned(&[("BACKEND@ATORNAI", "Need a decision", "unread")]),
        "HUMAN's mailbox read once, though COMMON_PATH is also project COMMON's folder"
    );
    let refused = home
        .as_("FRONTEND@ATORNAI", ["send", "--to", "NOBODY", "-m", "hi"])
        .fails(3);
    assert_snapshot!("m_ai_l_windows_roster_refusal", home.show(&refused));
}

fn import_m_ai_l_reads_outbox_lines_in_the_short_shape(home: &Home) {
    let tree = fixture(home, "m_ai_l_windows");
    home.as_("HUMAN", ["import", "m_ai_l"])
        .args([tree.join("common")])
        .ok();
    let outbox = home.as_("FRONTEND@ATORNAI", ["--json", "outbox"]).json();
    let sent: Vec<(&str, &str)> = outbox["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["subject"].as_str().expect("subject"),
                m["recipients"][0]["address"].as_str().expect("recipient"),
            )
        })
        .collect();
    assert_eq!(
        sent,
        vec![
            ("Re: Repo layout agreed", "BACKEND@ATORNAI"),
            ("Review done: migration 0007", "BACKEND@ATORNAI"),
        ],
        "`YYYYMMDD-HHMM // RECIPIENT // SUBJECT` lines are messages sent"
    );
}

#[test]
fn import_repo_mailbox_skips_and_reports_dot_named_temp_files() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let tree = fixture(&home, "repo-mailbox");
    // repo-mailbox writes under a dot name, then renames: a crash leaves these behind.
    std::fs::write(
        tree.join("api/inbox/.20260313T160000Z-ffff-from-web.md"),
        "---\nfrom: web\nto: api\nsubject: Half written\ndate: 2026-03-13T16:00:00Z\n---\nnot sent yet\n",
    )
    .expect("write a temp file");
    std::fs::write(tree.join("_broadcast/seen/.api.tmp"), "").expect("write a temp file");
    let run = home.cmd(["import", "repo-mailbox"]).args([&tree]).ok();
    assert_snapshot!("repo_mailbox_temp_files", home.show(&run));
    let inbox = home.as_("api", ["--json", "inbox"]).json();
    assert_eq!(
        summary(&inbox),
        owned(&[
            ("web@default", "Is the /orders endpoint live?", "unread"),
            ("web@default", "Design tokens moved", "unread"),
        ]),
        "the half-written message is not mail"
    );
}

#[test]
fn import_mailbox_md_names_the_channel_after_any_other_file_and_reports_a_missing_subject() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let file = home.root().join("design-review.md");
    std::fs::write(
        &file,
        "---\n**Timestamp:** 2026-03-13 14:22 UTC\n**From:** builder\n**Type:** INFO\n\nThe schema is frozen.\n",
    )
    .expect("write a mailbox file");
    let run = home
        .as_("leader", ["import", "mailbox-md"])
        .args([&file])
        .ok();
    assert_snapshot!("mailbox_md_no_subject", home.show(&run));
    let show = home
        .as_("leader", ["--json", "channel", "show", "design-review"])
        .json();
    assert_eq!(
        summary(&show),
        owned(&[("builder@default", "The schema is frozen.", "unread")]),
        "the file's stem is the channel"
    );
}

/// Regression: m_AI_l lists HUMAN in every roster.md, and each import made the operator a
/// member named HUMAN of each project.
fn import_m_ai_l_never_makes_human_a_roster_member(home: &Home) {
    let tree = fixture(home, "m_ai_l_windows");
    let run = home
        .as_("HUMAN", ["--json", "import", "m_ai_l"])
        .args([tree.join("common")])
        .json();
    let reported: Vec<(String, u64)> = run["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| {
            p["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("HUMAN")
        })
        .map(|p| {
            (
                p["file"].as_str().unwrap_or_default().replace('\\', "/"),
                p["line"].as_u64().unwrap_or_default(),
            )
        })
        .filter_map(|(f, l)| {
            f.rsplit_once("m_ai_l_windows/")
                .map(|(_, f)| (f.to_owned(), l))
        })
        .collect();
    assert_eq!(
        reported,
        vec![
            ("common/roster.md".to_owned(), 3),
            ("atornai/roster.md".to_owned(), 3)
        ],
        "each HUMAN row is reported by file and line"
    );
    for project in ["ATORNAI", "COMMON"] {
        let roster = home.cmd(["--json", "--project", project, "roster"]).json();
        let handles: Vec<&str> = roster["members"]
            .as_array()
            .expect("members")
            .iter()
            .filter_map(|m| m["handle"].as_str())
            .collect();
        assert!(
            !handles.contains(&"HUMAN"),
            "{project}'s roster holds {handles:?}"
        );
    }
}

/// Regression: an imported message bigger than the body limit was stored, and the store then
/// could not read it back.
#[test]
fn import_skips_and_reports_a_message_over_the_body_limit() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let huge = "x".repeat(mailroom_core::text::MAX_BODY_BYTES + 1);
    let tree = fixture(&home, "repo-mailbox");
    std::fs::write(
        tree.join("api/inbox/20260313T160000Z-ffff-from-web.md"),
        format!("---\nfrom: web\nto: api\nsubject: Huge\ndate: 2026-03-13T16:00:00Z\n---\n{huge}"),
    )
    .expect("write a huge message");
    let run = home.cmd(["import", "repo-mailbox"]).args([&tree]).ok();
    assert_snapshot!("body_limit_repo_mailbox", home.show(&run));
    let inbox = home.as_("api", ["--json", "inbox"]).json();
    assert!(
        summary(&inbox)
            .iter()
            .all(|(_, subject, _)| subject != "Huge"),
        "the huge message is not imported"
    );

    let file = home.root().join("run-7.md");
    std::fs::write(
        &file,
        format!("---\n**Timestamp:** 2026-03-13 14:22 UTC\n**From:** builder\n**Type:** INFO\n**Subject:** Huge\n\n{huge}\n---\n**Timestamp:** 2026-03-13 14:23 UTC\n**From:** builder\n**Type:** INFO\n**Subject:** Small\n\nfits\n"),
    )
    .expect("write a mailbox file");
    let run = home
        .as_("leader", ["import", "mailbox-md"])
        .args([&file])
        .ok();
    assert_snapshot!("body_limit_mailbox_md", home.show(&run));
}

/// A tree importer given something that is not one of its trees (a plain file, a FIFO, an
/// empty folder) refuses in one sentence and makes nothing: a mistaken path must not create
/// the project `default` as a roster project, which would refuse the next git-derived send.
#[test]
fn a_tree_importer_refuses_what_is_not_its_tree_and_makes_nothing() {
    let home = Home::new();
    let plain = home.root().join("notes.txt");
    std::fs::write(&plain, "hi\n").unwrap();
    let empty = home.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let fifo = home.root().join("fifo.md");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (format, path, says) in [
        ("m_ai_l", &plain, "is not a folder"),
        ("m_ai_l", &fifo, "is not a folder"),
        ("m_ai_l", &empty, "holds no projects_config.md"),
        ("repo-mailbox", &plain, "is not a folder"),
        ("repo-mailbox", &fifo, "is not a folder"),
    ] {
        let run = home.as_("HUMAN", ["import", format]).args([path]).fails(2);
        assert!(
            run.stderr.contains(says),
            "{format} {path:?}: {}",
            run.stderr
        );
        assert!(
            !home.path().exists(),
            "{format} {path:?} made the home: {:?}",
            home.tree()
        );
    }
    home.as_("web", ["send", "--to", "api", "-m", "x"]).ok();
}

both_stores!(
    import_m_ai_l_puts_each_mailbox_in_place_and_a_second_run_adds_nothing,
    import_m_ai_l_recovers_what_it_can_from_damaged_files_and_reports_the_rest_by_line,
    import_repo_mailbox_keeps_pending_archived_broadcasts_and_seen_sets,
    import_mailbox_md_goes_to_the_run_channel_and_a_second_run_adds_nothing,
    import_m_ai_l_reads_a_real_projects_config_with_windows_paths_into_roster_projects,
    import_m_ai_l_reads_outbox_lines_in_the_short_shape,
    import_m_ai_l_never_makes_human_a_roster_member,
);
