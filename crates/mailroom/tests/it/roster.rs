//! `roster`, `projects` and `resolve`: who exists, who may be written to, and what a name means.

use insta::assert_snapshot;

use crate::support::{Home, settings};

#[test]
fn roster_adds_lists_activates_and_deactivates_members() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let mut out = String::new();
    for args in [
        &[
            "--as",
            "HUMAN",
            "--project",
            "web",
            "roster",
            "add",
            "api",
            "--role",
            "backend",
        ][..],
        &[
            "--as",
            "HUMAN",
            "--project",
            "web",
            "roster",
            "add",
            "ui",
            "--inactive",
        ],
        &["--project", "web", "roster"],
        &[
            "--as",
            "HUMAN",
            "--project",
            "web",
            "roster",
            "deactivate",
            "api",
        ],
        &[
            "--as",
            "HUMAN",
            "--project",
            "web",
            "roster",
            "activate",
            "ui",
        ],
        &["--project", "web", "roster", "list"],
    ] {
        out.push_str(&format!("$ {}\n", args.join(" ")));
        out.push_str(&home.show(&home.cmd(args).ok()));
    }
    let v = home.cmd(["--project", "web", "--json", "roster"]).json();
    let added = home
        .cmd([
            "--as",
            "HUMAN",
            "--json",
            "roster",
            "add",
            "ops",
            "--project",
            "web",
        ])
        .json();
    assert_snapshot!(format!(
        "{out}{}\n{}",
        home.redact_json(&v),
        home.redact_json(&added)
    ));
    let twice = home
        .cmd(["--as", "HUMAN", "--project", "web", "roster", "add", "api"])
        .run();
    assert_snapshot!("roster_add_twice", home.show(&twice));
    let missing = home.cmd(["--project", "nowhere", "roster"]).fails(3);
    assert_snapshot!("roster_unknown_project", home.show(&missing));
}

#[test]
fn send_to_an_inactive_member_is_refused() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    home.cmd([
        "--as",
        "HUMAN",
        "--project",
        "web",
        "roster",
        "add",
        "api",
        "--inactive",
    ])
    .ok();
    let before = home.tree();
    let run = home
        .as_("ui@web", ["send", "--to", "api", "-m", "hello?"])
        .fails(4);
    assert_snapshot!(home.show(&run));
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    home.cmd([
        "--as",
        "HUMAN",
        "--project",
        "web",
        "roster",
        "activate",
        "api",
    ])
    .ok();
    home.as_("ui@web", ["send", "--to", "api", "-m", "hello?"])
        .ok();
}

#[test]
fn unknown_handle_in_a_roster_project_is_not_found_with_did_you_mean() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    home.cmd(["projects", "add", "shop", "--policy", "roster"])
        .ok();
    for h in ["frontend", "backend"] {
        home.cmd(["--as", "HUMAN", "--project", "shop", "roster", "add", h])
            .ok();
    }
    let before = home.tree();
    let typo = home
        .as_("backend@shop", ["send", "--to", "frontent", "-m", "hi"])
        .fails(3);
    let far = home
        .as_("backend@shop", ["send", "--to", "zz", "-m", "hi"])
        .fails(3);
    let outsider = home
        .as_("stranger@shop", ["send", "--to", "frontend", "-m", "hi"])
        .fails(4);
    assert_snapshot!(format!(
        "{}{}{}",
        home.show(&typo),
        home.show(&far),
        home.show(&outsider)
    ));
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

#[test]
fn projects_lists_adds_and_sets_policy() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    let mut out = String::new();
    for args in [
        &["projects"][..],
        &["projects", "add", "web"],
        &["projects", "add", "ops", "--policy", "roster"],
        &["projects", "add", "ops", "--policy", "roster"],
        &[
            "--as", "HUMAN", "projects", "set", "web", "--policy", "roster",
        ],
        &["projects", "list"],
    ] {
        out.push_str(&format!("$ {}\n", args.join(" ")));
        out.push_str(&home.show(&home.cmd(args).ok()));
    }
    let v = home.cmd(["--json", "projects"]).json();
    let added = home.cmd(["projects", "add", "run-42", "--json"]).json();
    let set = home
        .cmd([
            "--as", "HUMAN", "--json", "projects", "set", "run-42", "--policy", "roster",
        ])
        .json();
    assert_snapshot!(format!(
        "{out}{}\n{}\n{}",
        home.redact_json(&v),
        home.redact_json(&added),
        home.redact_json(&set)
    ));
    let clash = home
        .cmd(["projects", "add", "ops", "--policy", "open"])
        .fails(4);
    let missing = home
        .cmd([
            "--as", "HUMAN", "projects", "set", "nowhere", "--policy", "open",
        ])
        .fails(3);
    assert_snapshot!(
        "projects_refused",
        format!("{}{}", home.show(&clash), home.show(&missing))
    );
}

#[test]
fn a_bare_handle_active_in_two_projects_is_ambiguous() {
    let _s = settings().bind_to_scope();
    let home = Home::new();
    for p in ["web", "ops"] {
        home.cmd(["--as", "HUMAN", "--project", p, "roster", "add", "sam"])
            .ok();
    }
    home.send("alice", "bob", "make alice and bob exist in default");
    let mut out = String::new();
    for name in ["sam", "bob", "sam@ops", "HUMAN", "newcomer"] {
        out.push_str(&home.show(&home.as_("alice", ["resolve", name]).run()));
    }
    // An ambiguous name lists its candidates (it is no new mailbox), and the exit code is the
    // conflict's.
    assert!(
        out.starts_with("[exit 5]\nsam -> one of 2 mailboxes:\n"),
        "{out}"
    );
    let json = home.as_("alice", ["--json", "resolve", "sam"]).fails(5);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    assert_snapshot!("resolve", format!("{out}{}", home.redact_json(&v)));
    let before = home.tree();
    let run = home
        .as_("alice", ["send", "--to", "sam", "-m", "which one?"])
        .fails(5);
    assert_snapshot!("resolve_send_ambiguous", home.show(&run));
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
    home.as_("alice", ["send", "--to", "sam@ops", "-m", "this one"])
        .ok();
    // In a project where sam is a member, the bare handle means that one.
    home.as_("lee@web", ["send", "--to", "sam", "-m", "local"])
        .ok();
}
