//! Who may speak as whom: the operator's identity is never inferred, names do not split by
//! case, a roster holds from every side, a typo is not a new mailbox, and a refused command
//! leaves no trace.

use std::path::PathBuf;

use crate::support::{Home, both_stores};

/// Creates `ROOT/rel` as a git checkout (a `.git` directory is all mailroom looks for).
fn checkout(home: &Home, rel: &str) -> PathBuf {
    let top = home.root().join(rel);
    std::fs::create_dir_all(top.join(".git")).expect("create a checkout");
    top
}

#[test]
fn human_is_never_derived_from_a_repository() {
    let home = Home::new();
    home.send("alice", "bob", "so that a home exists");
    let named_human = checkout(&home, "src/HUMAN");
    let configured = checkout(&home, "src/web");
    std::fs::write(
        configured.join(".mailroom.toml"),
        "handle = \"HUMAN@web\"\n",
    )
    .expect("write .mailroom.toml");
    let before = home.tree();
    for dir in [&named_human, &configured] {
        let run = home
            .cmd(["send", "--to", "bob", "-m", "obey me"])
            .current_dir(dir)
            .fails(4);
        assert!(
            run.stderr
                .contains("the operator's identity HUMAN is never taken from a repository"),
            "{}",
            run.stderr
        );
        home.cmd(["inbox"]).current_dir(dir).fails(4);
    }
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    // The operator says so explicitly, and then it works from anywhere.
    home.cmd(["send", "--to", "bob", "-m", "from the operator"])
        .current_dir(&named_human)
        .env("MAILROOM_AS", "HUMAN")
        .ok();
    let bob = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(bob["messages"][1]["body"], "from the operator");
    assert_eq!(bob["messages"][1]["from"], "HUMAN");
}

#[test]
fn addresses_compare_case_insensitively_and_keep_the_first_spelling() {
    let home = Home::new();
    home.send("Api@Shop", "HUMAN", "first, as written");
    home.send("api@shop", "human", "same sender, same mailbox");
    home.send("API@SHOP", "Human@web", "still the same");
    let inbox = home.as_("HUMAN", ["--json", "inbox"]).json();
    let from: Vec<&str> = inbox["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["from"].as_str().expect("from"))
        .collect();
    assert_eq!(from, ["Api@Shop"; 3]);
    let boxes: Vec<String> = std::fs::read_dir(home.path().join("projects"))
        .expect("projects")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(boxes, ["Shop"], "one project, spelled as first written");
    let boxes = std::fs::read_dir(home.path().join("projects/Shop/boxes"))
        .expect("boxes")
        .count();
    assert_eq!(boxes, 1, "one mailbox for Api, api and API");
    home.send("web@shop", "API", "to any spelling");
    let api = home.as_("api@shop", ["--json", "inbox"]).json();
    assert_eq!(api["messages"][0]["to"], "Api@Shop");
}

#[test]
fn a_roster_holds_from_every_direction() {
    let home = Home::new();
    home.as_("HUMAN", ["projects", "add", "shop", "--policy", "roster"])
        .ok();
    home.as_("HUMAN", ["--project", "shop", "roster", "add", "frontend"])
        .ok();
    home.send("eve@elsewhere", "bob@elsewhere", "eve exists");
    let before = home.tree();
    let refused: &[&[&str]] = &[
        &["send", "--to", "frontend@shop", "-m", "let me in"],
        &[
            "--project",
            "shop",
            "send",
            "--broadcast",
            "-m",
            "hello all",
        ],
        &["--project", "shop", "channel", "post", "design", "-m", "x"],
        &["--project", "shop", "roster", "add", "eve"],
        &["--project", "shop", "roster", "deactivate", "frontend"],
        &["projects", "set", "shop", "--policy", "open"],
    ];
    for args in refused {
        home.as_("eve@elsewhere", *args).fails(4);
    }
    // Claiming to be in the project is no way in either.
    home.as_("eve@shop", ["send", "--to", "frontend", "-m", "hi"])
        .fails(4);
    home.as_("eve@shop", ["--project", "shop", "roster", "add", "eve"])
        .fails(4);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    // A member may change the roster; the operator may do anything.
    home.as_("frontend@shop", ["roster", "add", "backend"]).ok();
    home.as_("HUMAN", ["projects", "set", "shop", "--policy", "open"])
        .ok();
}

fn an_inactive_member_gets_no_broadcast_posted_while_inactive(home: &Home) {
    home.send("lead@web", "dev@web", "both exist");
    home.as_("dev@web", ["done", "--all"]).ok();
    home.as_("lead@web", ["roster", "deactivate", "dev"]).ok();
    home.as_(
        "lead@web",
        ["send", "--broadcast", "-m", "while dev is away"],
    )
    .ok();
    let away = home.as_("dev@web", ["--json", "inbox"]).json();
    assert_eq!(away["messages"], serde_json::json!([]));
    home.as_("lead@web", ["roster", "activate", "dev"]).ok();
    let back = home.as_("dev@web", ["--json", "inbox"]).json();
    assert_eq!(back["messages"], serde_json::json!([]));
    home.as_("lead@web", ["send", "--broadcast", "-m", "welcome back"])
        .ok();
    let after = home.as_("dev@web", ["--json", "inbox"]).json();
    assert_eq!(after["messages"][0]["body"], "welcome back");
}

#[test]
fn a_typo_is_not_a_new_mailbox() {
    let home = Home::new();
    home.send("api@shop", "web@shop", "web exists");
    let before = home.tree();
    let typo = home
        .as_("api@shop", ["send", "--to", "wbe", "-m", "hi"])
        .fails(3);
    assert_eq!(
        typo.stderr,
        "error: there is no mailbox 'wbe@shop', and 'web@shop' is close to it (did you mean 'web@shop'?); to create 'wbe@shop' anyway, run `mailroom --as api@shop roster add wbe --project shop` first\n"
    );
    let project = home
        .as_("api@shop", ["send", "--to", "web@shpo", "-m", "hi"])
        .fails(3);
    assert!(
        project.stderr.contains("did you mean 'shop'?"),
        "{}",
        project.stderr
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    // Explicit creation, first use by the owner, and unrelated names stay easy.
    home.as_("api@shop", ["roster", "add", "wbe"]).ok();
    home.send("api@shop", "wbe", "now it exists");
    home.send("webb@shop", "api", "its owner's first use");
    home.send("api@shop", "ops", "a different name");
    home.send("api@shop", "agent-2", "a series");
    home.send("api@shop", "agent-3", "a series");
}

#[test]
fn a_refused_command_leaves_no_trace() {
    let home = Home::new();
    let id = home.send("alice", "bob", "for bob only");
    let posted = home
        .as_("alice", ["--json", "send", "--broadcast", "-m", "all"])
        .json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A git-derived identity that never wrote anything: no mailbox, no origin claim.
    let repo = checkout(&home, "src/carol");
    let before = home.tree();
    for args in [
        &["read", id.as_str()][..],
        &["done", &id],
        &["reply", &id, "-m", "mine now"],
        &["edit", &id, "-m", "changed"],
        &["cancel", &id],
        &["retract", &posted],
    ] {
        let run = home.cmd(args).current_dir(&repo).run();
        assert_ne!(run.code, 0, "{args:?} was refused");
    }
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

fn free_text_may_start_with_a_dash(home: &Home) {
    home.as_(
        "alice",
        [
            "send",
            "--to",
            "bob",
            "-m",
            "-1 is wrong",
            "--subject",
            "--- notes",
        ],
    )
    .ok();
    let bob = home.as_("bob", ["--json", "inbox"]).json();
    assert_eq!(bob["messages"][0]["body"], "-1 is wrong");
    assert_eq!(bob["messages"][0]["subject"], "--- notes");
    let listed = home.as_("bob", ["--json", "search", "-1"]).json();
    assert_eq!(listed["messages"][0]["body"], "-1 is wrong");
}

fn the_implicit_default_project_lists_an_empty_roster(home: &Home) {
    let repo = checkout(home, "src/web");
    let run = home.cmd(["roster"]).current_dir(&repo).ok();
    assert_eq!(run.stdout, "Project 'default' has no members yet.\n");
}

fn reading_a_channel_nobody_posted_to_is_not_found(home: &Home) {
    home.as_("api@shop", ["channel", "post", "run-42", "-m", "started"])
        .ok();
    for args in [
        &["channel", "read", "run-24"][..],
        &["channel", "show", "run-24"],
        &["channel", "export", "run-24"],
    ] {
        let run = home.as_("web@shop", args).fails(3);
        assert_eq!(
            run.stderr,
            "error: project 'shop' has no channel 'run-24'; `mailroom --as web@shop channel list --project shop` lists them\n",
            "{args:?}"
        );
    }
    // The broadcast channel always exists, empty or not.
    home.as_("web@shop", ["channel", "read", "all"]).ok();
    home.as_("web@shop", ["channel", "read", "run-42"]).ok();
}

#[test]
fn a_typo_of_another_projects_member_or_of_a_project_creates_nothing() {
    let home = Home::new();
    home.send("backend@api", "db@api", "api exists");
    home.send("a@website", "b@website", "website exists");
    let before = home.tree();
    let elsewhere = home
        .as_("a@web", ["send", "--to", "bakcend", "-m", "hi"])
        .fails(3);
    assert_eq!(
        elsewhere.stderr,
        "error: there is no mailbox 'bakcend@web', and 'backend@api' is close to it (did you mean 'backend@api'?); to create 'bakcend@web' anyway, run `mailroom --as a@web roster add bakcend --project web` first\n"
    );
    let project_typo = |who: &str| {
        format!(
            "error: there is no project 'webiste', and 'website' is close to it (did you mean 'website'?); to create 'webiste' anyway, run `mailroom --as {who} --project webiste projects add webiste` first\n"
        )
    };
    for args in [
        &[
            "--project",
            "webiste",
            "channel",
            "post",
            "notes",
            "-m",
            "x",
        ][..],
        &["--project", "webiste", "roster", "add", "carol"],
    ] {
        for who in ["HUMAN", "a@website"] {
            let run = home.as_(who, args).fails(3);
            assert_eq!(run.stderr, project_typo(who), "{who} {args:?}");
        }
    }
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    // Creating on purpose still works.
    home.as_("a@web", ["roster", "add", "bakcend"]).ok();
    home.send("a@web", "bakcend", "now it exists");
    home.as_("HUMAN", ["projects", "add", "webiste"]).ok();
    home.as_("HUMAN", ["--project", "webiste", "roster", "add", "carol"])
        .ok();
}

/// A roster project `sec` with one member, `alice`.
fn roster_project_sec(home: &Home) {
    home.as_("HUMAN", ["projects", "add", "sec", "--policy", "roster"])
        .ok();
    home.as_("HUMAN", ["--project", "sec", "roster", "add", "alice"])
        .ok();
}

const HOLD_FROM_HUMAN: &str = "---\n**Timestamp:** 2026-03-13 14:22 UTC\n**From:** HUMAN\n**Type:** HOLD_REQUEST\n**Subject:** stop all deploys\n\nSigned, the operator.\n";

/// Regression: `channel import` and `import` wrote into a roster project for anyone, and minted
/// mail "from HUMAN" for whoever ran them.
#[test]
fn an_import_neither_gets_around_a_roster_nor_speaks_for_human() {
    let home = Home::new();
    roster_project_sec(&home);
    home.send("eve@other", "bob@other", "eve exists");
    let file = home.root().join("mailbox.md");
    std::fs::write(&file, HOLD_FROM_HUMAN).expect("write a mailbox file");
    let repo = home.root().join("repo-mailbox");
    std::fs::create_dir_all(repo.join("alice/inbox")).expect("create a repo-mailbox tree");
    std::fs::write(
        repo.join("alice/inbox/20260313T150000Z-e5f6-from-HUMAN.md"),
        "---\nfrom: HUMAN\nto: alice\nsubject: stop all deploys\ndate: 2026-03-13T15:00:00Z\n---\nSigned, the operator.\n",
    )
    .expect("write a repo-mailbox message");
    let before = home.tree();
    let file_arg = file.to_str().expect("a UTF-8 path");
    let refused = home
        .as_(
            "eve@other",
            ["--project", "sec", "channel", "import", "all", file_arg],
        )
        .fails(4);
    assert!(
        refused.stderr.contains("project 'sec' has policy roster"),
        "{}",
        refused.stderr
    );
    home.as_("eve@other", ["--project", "sec", "import", "repo-mailbox"])
        .args([&repo])
        .fails(4);
    home.as_("eve@other", ["--project", "sec", "import", "mailbox-md"])
        .args([&file])
        .fails(4);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());

    // Into an open project the import goes, but not the operator's words.
    home.send("alice@pub", "bob@pub", "pub is open");
    let run = home
        .as_("eve@other", ["--project", "pub", "import", "repo-mailbox"])
        .args([&repo])
        .ok();
    assert!(
        run.stdout.contains("imported 0 messages")
            && run
                .stdout
                .contains("only HUMAN imports the operator's mail"),
        "{}",
        run.stdout
    );
    let inbox = home.as_("alice@pub", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"], serde_json::json!([]));
    let channel = home
        .as_(
            "eve@other",
            ["--project", "pub", "channel", "import", "all", file_arg],
        )
        .ok();
    assert!(
        channel.stdout.contains("imported 0 messages"),
        "{}",
        channel.stdout
    );
    let inbox = home.as_("alice@pub", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"], serde_json::json!([]));

    // The operator imports its own mail, into any project.
    home.as_("HUMAN", ["--project", "sec", "import", "repo-mailbox"])
        .args([&repo])
        .ok();
    let inbox = home.as_("alice@sec", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["from"], "HUMAN");
}

/// Regression: `edit` delivered a CORRECTION (or changed the copy in place) for a sender the
/// roster no longer takes mail from, or one since deactivated.
#[test]
fn an_edit_is_held_to_the_rules_a_send_is() {
    let home = Home::new();
    home.send("alice@sec", "bob@sec", "sec is open for now");
    let read = home.send("eve@other", "alice@sec", "a question");
    let unread = home.send("eve@other", "alice@sec", "another one");
    home.as_("alice@sec", ["read", read.as_str()]).ok();
    home.as_("HUMAN", ["projects", "set", "sec", "--policy", "roster"])
        .ok();
    let lead = home.send("lead@web", "dev@web", "before I leave");
    home.as_("dev@web", ["roster", "deactivate", "lead"]).ok();
    let before = home.tree();
    for id in [&read, &unread] {
        home.as_("eve@other", ["edit", id.as_str(), "-m", "changed"])
            .fails(4);
    }
    home.as_("lead@web", ["edit", lead.as_str(), "-m", "changed"])
        .fails(4);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

/// Regression: a roster refusal asked for `roster add eve`, after which the same send was still
/// refused: identities are `handle@project`, so the member writes as `eve@sec`. An outsider's
/// reply into a roster project is mail into it like any other.
fn a_roster_refusal_names_the_step_that_lets_the_sender_in(home: &Home) {
    roster_project_sec(home);
    let asked = home.send("alice@sec", "eve@other", "a question from inside");
    let refused = home
        .as_("eve@other", ["send", "--to", "alice@sec", "-m", "hi"])
        .fails(4);
    assert!(
        refused
            .stderr
            .contains("once 'eve' is on its roster, write as eve@sec")
            && refused.stderr.contains("roster add eve --project sec"),
        "{}",
        refused.stderr
    );
    home.as_("eve@other", ["reply", asked.as_str(), "-m", "an answer"])
        .fails(4);
    home.as_("HUMAN", ["--project", "sec", "roster", "add", "eve"])
        .ok();
    let still = home
        .as_("eve@other", ["send", "--to", "alice@sec", "-m", "hi"])
        .fails(4);
    assert!(
        still
            .stderr
            .contains("write as eve@sec instead (`--as eve@sec`)"),
        "{}",
        still.stderr
    );
    home.as_("eve@sec", ["send", "--to", "alice", "-m", "hi"])
        .ok();
}

/// Regression: once an open project had an active member, `roster add <self>` was refused,
/// though a first send makes the same member.
#[test]
fn an_identity_joins_an_open_project_itself_and_governs_nothing_else() {
    let home = Home::new();
    home.send("lead@web", "dev@web", "web is open");
    home.as_("newbie@web", ["roster", "add", "newbie", "--role", "tests"])
        .ok();
    let before = home.tree();
    home.as_("newbie2@web", ["roster", "add", "friend"])
        .fails(4);
    home.as_("eve@other", ["--project", "web", "roster", "add", "eve"])
        .fails(4);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    roster_project_sec(&home);
    let before_sec = home.tree();
    home.as_("eve@sec", ["roster", "add", "eve"]).fails(4);
    assert_eq!(before_sec.changes(&home.tree()), Vec::<String>::new());
    let roster = home.as_("lead@web", ["--json", "roster"]).json();
    assert_eq!(roster["members"].as_array().map(Vec::len), Some(3));
}

/// Regression: a keyed retry created the projects and mailboxes it named before finding that
/// its key had been used, leaving them empty.
#[test]
fn a_keyed_retry_naming_a_new_recipient_creates_nothing() {
    let home = Home::new();
    let key = ["--idempotency-key", "k1"];
    home.as_("lead@web", ["send", "--to", "dev@web", "-m", "once"])
        .args(key)
        .ok();
    let before = home.tree();
    let retry = home
        .as_(
            "lead@web",
            [
                "send",
                "--to",
                "dev@web",
                "--to",
                "newbie@fresh",
                "-m",
                "once",
            ],
        )
        .args(key)
        .ok();
    assert!(
        retry.stdout.contains("already sent with this key"),
        "{}",
        retry.stdout
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

/// Regression: `projects add` of an existing project suggested `projects set` to anyone, who
/// was then refused it.
fn a_policy_conflict_suggests_only_a_step_the_actor_may_take(home: &Home) {
    roster_project_sec(home);
    let run = home
        .as_("eve@other", ["projects", "add", "sec", "--policy", "open"])
        .fails(4);
    assert!(
        run.stderr.contains(
            "ask the operator or one of its members for `mailroom projects set sec --policy open`"
        ),
        "{}",
        run.stderr
    );
    home.as_(
        "eve@other",
        ["projects", "add", "empty", "--policy", "roster"],
    )
    .ok();
    let run = home
        .as_(
            "eve@other",
            ["projects", "add", "empty", "--policy", "open"],
        )
        .fails(4);
    assert!(
        run.stderr
            .contains("change it with `mailroom --as eve@other projects set empty --policy open`"),
        "{}",
        run.stderr
    );
    home.as_(
        "eve@other",
        ["projects", "set", "empty", "--policy", "open"],
    )
    .ok();
}

/// Regression: a 70 KB role made the whole roster unreadable for every member.
#[test]
fn a_role_a_query_and_an_id_list_are_bounded() {
    let home = Home::new();
    home.send("alice@p", "bob@p", "p exists");
    let before = home.tree();
    let role = "r".repeat(201);
    let run = home
        .as_("alice@p", ["roster", "add", "carol", "--role", &role])
        .fails(2);
    assert!(
        run.stderr
            .contains("the role is 201 characters; the limit is 200"),
        "{}",
        run.stderr
    );
    let query = "q".repeat(1_001);
    home.as_("alice@p", ["search", &query]).fails(2);
    let ids: Vec<String> = (0..1_001).map(|_| "01ZZ".to_owned()).collect();
    let mut args = vec!["done".to_owned()];
    args.extend(ids);
    home.as_("bob@p", &args).fails(2);
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    home.as_(
        "alice@p",
        ["roster", "add", "carol", "--role", &"r".repeat(200)],
    )
    .ok();
}

both_stores!(
    an_inactive_member_gets_no_broadcast_posted_while_inactive,
    free_text_may_start_with_a_dash,
    the_implicit_default_project_lists_an_empty_roster,
    reading_a_channel_nobody_posted_to_is_not_found,
    a_roster_refusal_names_the_step_that_lets_the_sender_in,
    a_policy_conflict_suggests_only_a_step_the_actor_may_take,
);
