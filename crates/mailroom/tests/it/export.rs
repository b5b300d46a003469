//! `export --to DIR` between file homes: what it refuses, and that a second run changes
//! nothing. (Exports to and from PostgreSQL are in `postgres.rs`.)

use crate::support::Home;

/// `export --to` never writes into the mailroom it reads: the home in another spelling (`..`,
/// a symbolic link) is refused as the source itself, and a directory inside it as well; both
/// leave the home as it was.
#[test]
fn export_refuses_a_target_that_is_the_source_or_inside_it() {
    let home = Home::new();
    home.send("a", "b", "x");
    let link = home.root().join("link");
    std::os::unix::fs::symlink(home.path(), &link).unwrap();
    let before = home.tree();
    let dotted = home.path().join("projects").join("..");
    for (to, says) in [
        (dotted.clone(), "this very mailroom"),
        (link.clone(), "this very mailroom"),
        (home.path().join("sub"), "is inside this mailroom"),
        (home.path().join("projects"), "is inside this mailroom"),
        (link.join("new").join("deeper"), "is inside this mailroom"),
    ] {
        let run = home.as_("HUMAN", ["export", "--to"]).args([&to]).fails(2);
        assert!(run.stderr.contains(says), "{to:?}: {}", run.stderr);
        assert_eq!(before.changes(&home.tree()), Vec::<String>::new(), "{to:?}");
    }
    let outside = home.root().join("copy");
    home.as_("HUMAN", ["export", "--to"]).args([&outside]).ok();
    assert!(outside.join("projects").is_dir());
}

/// A second export copies nothing: a copy the target already holds as read, done or cancelled
/// is left alone (it was once delivered again into `unread/` and moved back on every run, so
/// the target briefly held it twice).
#[test]
fn a_second_export_to_a_directory_changes_nothing() {
    let home = Home::new();
    home.send("a", "b", "u1");
    home.as_("b", ["inbox"]).ok();
    let edited = home.send("a", "b", "u2");
    home.as_("a", ["edit", &edited, "--message", "u2, edited"])
        .ok();
    let read = home.send("a", "b", "u3");
    let cancelled = home.send("a", "b", "u4");
    home.as_("a", ["cancel", &cancelled]).ok();
    home.as_("b", ["read", &read, "--archive"]).ok();
    let to = home.root().join("copy");
    let first = home
        .as_("HUMAN", ["--json", "export", "--to"])
        .args([&to])
        .json();
    assert_eq!(first["copies"]["new"], 4, "{first}");
    assert_eq!(first["revisions"]["new"], 1, "{first}");
    assert_eq!(first["archive_times"]["new"], 1, "{first}");
    let archived_at = |home: &std::path::Path| {
        let done = home
            .join("projects/default/boxes/b/done")
            .join(format!("{read}.md"));
        std::fs::metadata(&done).unwrap().modified().unwrap()
    };
    assert_eq!(
        archived_at(&to),
        archived_at(&home.path()),
        "the archive time is the source's"
    );
    let revision = |home: &std::path::Path| {
        std::fs::read_to_string(
            home.join("projects/default/boxes/b/revisions")
                .join(format!("{edited}.r1.md")),
        )
        .unwrap()
    };
    assert_eq!(revision(&to), revision(&home.path()));
    let tree = |dir: &std::path::Path| {
        let mut files = Vec::new();
        for entry in walk(dir) {
            use std::os::unix::fs::MetadataExt as _;
            let meta = std::fs::symlink_metadata(&entry).unwrap();
            files.push((entry, meta.ino()));
        }
        files.sort();
        files
    };
    let before = tree(&to);
    for _ in 0..2 {
        let again = home
            .as_("HUMAN", ["--json", "export", "--to"])
            .args([&to])
            .json();
        for part in ["copies", "revisions", "archive_times"] {
            assert_eq!(again[part]["new"], 0, "{part}: {again}");
        }
    }
    assert_eq!(tree(&to), before, "no file was rewritten");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A file in `revisions/` that does not read is reported as not copied; the export goes on and
/// copies the rest, and the file is left as it is.
#[test]
fn an_unreadable_revision_is_reported_and_the_rest_is_copied() {
    let home = Home::new();
    let id = home.send("a", "b", "v1");
    home.as_("a", ["edit", &id, "--message", "v2"]).ok();
    let revisions = home.path().join("projects/default/boxes/b/revisions");
    std::fs::write(
        revisions.join("01ARZ3NDEKTSV4RRFFQ69G5FAV.r1.md"),
        "not a message",
    )
    .unwrap();
    let to = home.root().join("copy");
    let run = home
        .as_("HUMAN", ["--json", "export", "--to"])
        .args([&to])
        .json();
    assert_eq!(
        run["revisions"],
        serde_json::json!({"total": 1, "new": 1}),
        "{run}"
    );
    let not_copied = run["not_copied"].to_string();
    assert!(
        not_copied.contains("01ARZ3NDEKTSV4RRFFQ69G5FAV.r1.md"),
        "{not_copied}"
    );
    let copied = to.join("projects/default/boxes/b/revisions");
    assert!(copied.join(format!("{id}.r1.md")).is_file());
    assert!(!copied.join("01ARZ3NDEKTSV4RRFFQ69G5FAV.r1.md").exists());
    let text = home.as_("HUMAN", ["export", "--to"]).args([&to]).run();
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stderr.contains("not copied: ") && text.stderr.contains(".r1.md"),
        "{}",
        text.stderr
    );
    assert!(
        text.stdout.contains("1 earlier revisions (0 new)"),
        "{}",
        text.stdout
    );
}

/// Run again after the target moved on (its agents read, archived or cancelled since the first
/// export), an export never moves a copy back: archived mail stays archived, a cancelled copy
/// is not delivered again, and each such copy is named as not copied.
#[test]
fn a_second_export_never_moves_a_copy_back() {
    let home = Home::new();
    let archived = home.send("a", "b", "archived in the target");
    let cancelled = home.send("a", "b", "cancelled in the target");
    let copy = Home::new();
    home.as_("HUMAN", ["export", "--to"])
        .args([copy.path()])
        .ok();
    copy.as_("b", ["read", &archived, "--archive"]).ok();
    copy.as_("a", ["cancel", &cancelled]).ok();
    let again = home
        .as_("HUMAN", ["--json", "export", "--to"])
        .args([copy.path()])
        .json();
    assert_eq!(again["copies"]["new"], 0, "{again}");
    let not_copied = again["not_copied"].to_string();
    for id in [&archived, &cancelled] {
        assert!(not_copied.contains(id.as_str()), "{id}: {again}");
    }
    let b = copy.as_("b", ["--json", "inbox"]).json();
    assert!(b["messages"].as_array().unwrap().is_empty(), "{b}");
    let recover = copy.as_("b", ["recover"]).stdout();
    assert!(recover.contains("archived in the target"), "{recover}");
}
