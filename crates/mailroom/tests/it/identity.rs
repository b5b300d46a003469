//! `whoami` and where an identity comes from: `--as`, `MAILROOM_AS`, `.mailroom.toml`, the git
//! top-level, or nowhere; and claims of one git-derived identity by two checkouts.

use std::path::PathBuf;

use insta::assert_snapshot;

use crate::support::{Home, settings};

/// Creates `ROOT/rel` as a git checkout (a `.git` directory is all mailroom looks for).
fn checkout(home: &Home, rel: &str) -> PathBuf {
    let top = home.root().join(rel);
    std::fs::create_dir_all(top.join(".git")).expect("create a checkout");
    top
}

#[test]
fn whoami_takes_the_flag_then_the_environment() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    home.send("alice", "bob", "so that alice is on the roster");
    let flag = home.as_("alice", ["whoami"]).stdout();
    let env = home.cmd(["whoami"]).env("MAILROOM_AS", "zed@web").stdout();
    let both = home
        .as_("alice", ["whoami", "--json"])
        .env("MAILROOM_AS", "zed@web")
        .json();
    let human = home.as_("HUMAN", ["--project", "web", "whoami"]).stdout();
    assert_snapshot!(format!(
        "{}{}{}\n{}",
        home.redact(&flag),
        home.redact(&env),
        home.redact_json(&both),
        home.redact(&human)
    ));
}

#[test]
fn whoami_reads_mailroom_toml_at_the_git_top_level() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let top = checkout(&home, "src/shop-api");
    std::fs::write(
        top.join(".mailroom.toml"),
        "project = \"shop\"\nhandle = \"api\"\n",
    )
    .expect("write .mailroom.toml");
    let deep = top.join("src/bin");
    std::fs::create_dir_all(&deep).expect("create a subdirectory");
    let text = home.cmd(["whoami"]).current_dir(&deep).stdout();
    let v = home.cmd(["--json", "whoami"]).current_dir(&deep).json();
    assert_snapshot!(format!("{}{}", home.redact(&text), home.redact_json(&v)));
    // The flag still wins, and takes the project from the file.
    let v = home
        .cmd(["--as", "other", "--json", "whoami"])
        .current_dir(&deep)
        .json();
    assert_eq!(v["identity"], "other@shop");
}

#[test]
fn whoami_falls_back_to_the_git_top_level_basename() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let top = checkout(&home, "src/billing");
    let text = home.cmd(["whoami"]).current_dir(&top).stdout();
    let sent = home
        .cmd(["send", "--to", "HUMAN", "-m", "hello from git"])
        .current_dir(&top)
        .ok();
    assert_snapshot!(format!("{}{}", home.redact(&text), home.show(&sent)));
    let human = home.as_("HUMAN", ["--json", "inbox"]).json();
    assert_eq!(human["messages"][0]["from"], "billing@default");
}

#[test]
fn outside_git_with_nothing_there_is_no_identity_and_writes_refuse() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let text = home.cmd(["whoami"]).stdout();
    let v = home.cmd(["whoami", "--json"]).json();
    let refused = home.cmd(["send", "--to", "bob", "-m", "hi"]).fails(2);
    let empty_env = home
        .cmd(["handover", "-m", "note"])
        .env("MAILROOM_AS", "")
        .fails(2);
    assert_snapshot!(format!(
        "{}{}\n{}{}",
        home.redact(&text),
        home.redact_json(&v),
        home.show(&refused),
        home.show(&empty_env)
    ));
    assert_eq!(home.tree().0.len(), 0, "nothing was written to the home");
}

#[test]
fn a_second_checkout_with_the_same_basename_gets_a_warning() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let first = checkout(&home, "one/app");
    let second = checkout(&home, "two/app");
    let a = home
        .cmd(["send", "--to", "HUMAN", "-m", "from one"])
        .current_dir(&first)
        .ok();
    let again = home.cmd(["whoami"]).current_dir(&first).ok();
    let b = home
        .cmd(["send", "--to", "HUMAN", "-m", "from two"])
        .current_dir(&second)
        .ok();
    assert_snapshot!(format!(
        "{}{}{}",
        home.show(&a),
        home.show(&again),
        home.show(&b)
    ));
    assert_eq!(again.stderr, "", "the first checkout is not warned");
}

#[test]
fn empty_as_flag_is_refused_not_replaced_by_the_git_identity() {
    let home = Home::new();
    let top = checkout(&home, "src/web");
    home.cmd(["--as", "", "send", "--to", "bob", "-m", "who sent this?"])
        .current_dir(&top)
        .fails(2);
    assert_eq!(home.tree().0.len(), 0, "nothing was sent");
}

#[test]
fn copied_hints_and_advice_act_as_the_reader_whose_project_came_from_the_flag() {
    let home = Home::new();
    let top = checkout(&home, "src/bob");
    let id = home.send("alice@api", "bob@api", "ship it");
    let inbox = home
        .cmd(["--project", "api", "inbox"])
        .current_dir(&top)
        .stdout();
    let done = format!("mailroom --project api done {id}");
    assert!(
        inbox.contains(&format!(
            "-> reply: mailroom --project api reply {id} --message \"...\" | done: {done}\n"
        )),
        "{inbox}"
    );
    // The copied command, typed in the same checkout, marks bob@api's copy done.
    home.cmd(done.split(' ').skip(1)).current_dir(&top).ok();
    let done_copy = home
        .path()
        .join(format!("projects/api/boxes/bob/done/{id}.md"));
    assert!(done_copy.exists(), "bob@api's copy is not done");
    let missing = home
        .cmd(["--project", "api", "read", "01ZZZZZZZZ"])
        .current_dir(&top)
        .fails(3);
    assert_eq!(
        missing.stderr,
        "error: no message matching '01ZZZZZZZZ' for bob@api; list them with `mailroom --project api inbox`\n"
    );
}
