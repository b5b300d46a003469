//! `token add | list | revoke`: the operator's access tokens, end to end through the binary.

use std::os::unix::fs::PermissionsExt as _;

use crate::support::{Home, both_stores};

fn token_add_prints_the_secret_once_and_list_never_shows_it(home: &Home) {
    let added = home
        .as_(
            "HUMAN",
            [
                "--json",
                "token",
                "add",
                "bob@web",
                "--name",
                "ci",
                "--expires",
                "30d",
            ],
        )
        .json();
    let secret = added["token"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("mailroom_") && secret.len() == 9 + 64,
        "{added}"
    );
    assert_eq!(added["address"], "bob@web");
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 12);
    let expires: jiff::Timestamp = added["expires"].as_str().unwrap().parse().unwrap();
    let days = expires.duration_since(jiff::Timestamp::now()).as_hours() / 24;
    assert!((29..=30).contains(&days), "{days}");

    // Plain output: the secret alone on stdout, the rest on stderr.
    let plain = home.as_("HUMAN", ["token", "add", "HUMAN"]).ok();
    let operator = plain.stdout.trim().to_owned();
    assert!(operator.starts_with("mailroom_"), "{}", plain.stdout);
    assert_eq!(plain.stdout.lines().count(), 1);
    assert!(plain.stderr.contains("acts as HUMAN"), "{}", plain.stderr);

    let listed = home.as_("HUMAN", ["--json", "token", "list"]).json();
    let tokens = listed["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2);
    let ci = tokens.iter().find(|t| t["id"] == id.as_str()).unwrap();
    assert_eq!(ci["name"], "ci");
    assert_eq!(ci["address"], "bob@web");
    let text = listed.to_string();
    assert!(
        !text.contains(&secret) && !text.contains(&operator),
        "{text}"
    );
    let table = home.as_("HUMAN", ["token", "list"]).stdout();
    assert!(table.contains(&id) && table.contains("bob@web") && table.contains("never"));
    assert!(!table.contains(&secret), "{table}");

    let revoked = home
        .as_("HUMAN", ["--json", "token", "revoke", "ci"])
        .json();
    assert_eq!(revoked["revoked"]["id"], id.as_str());
    let listed = home.as_("HUMAN", ["--json", "token", "list"]).json();
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 1);
    let gone = home.as_("HUMAN", ["token", "revoke", &id]).fails(3);
    assert!(
        gone.stderr.contains("no token has the id or name"),
        "{}",
        gone.stderr
    );
}

fn only_the_operator_manages_tokens_and_bad_input_changes_nothing(home: &Home) {
    home.as_("HUMAN", ["token", "add", "bob@web", "--name", "laptop"])
        .ok();
    for args in [
        vec!["token", "add", "bob@web"],
        vec!["token", "list"],
        vec!["token", "revoke", "laptop"],
    ] {
        let refused = home.as_("bob@web", &args).fails(4);
        assert!(
            refused.stderr.contains("only the operator manages tokens"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    home.as_("HUMAN", ["token", "add", "bob"]).fails(2);
    home.as_("HUMAN", ["token", "add", "not an address"])
        .fails(2);
    home.as_("HUMAN", ["token", "add", "bob@web", "--expires", "soon"])
        .fails(2);
    home.as_("HUMAN", ["token", "add", "bob@web", "--expires", "0d"])
        .fails(2);
    home.as_("HUMAN", ["token", "add", "bob@web", "--name", "a b"])
        .fails(2);
    let taken = home
        .as_("HUMAN", ["token", "add", "alice@web", "--name", "LAPTOP"])
        .fails(5);
    assert!(taken.stderr.contains("exists already"), "{}", taken.stderr);
    let listed = home.as_("HUMAN", ["--json", "token", "list"]).json();
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 1);
}

#[test]
fn token_files_hold_a_hash_only_and_are_private() {
    let home = Home::new();
    let secret = home
        .as_("HUMAN", ["token", "add", "bob@web"])
        .stdout()
        .trim()
        .to_owned();
    let dir = home.path().join("tokens");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(files.len(), 1);
    let meta = files[0].metadata().unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(!text.contains(&secret), "{text}");
    assert!(text.contains("address: bob@web"), "{text}");
    // doctor knows the layout.
    let doctor = home.as_("HUMAN", ["doctor"]).ok();
    assert!(!doctor.stdout.contains("tokens"), "{}", doctor.stdout);
}

both_stores!(
    token_add_prints_the_secret_once_and_list_never_shows_it,
    only_the_operator_manages_tokens_and_bad_input_changes_nothing,
);
