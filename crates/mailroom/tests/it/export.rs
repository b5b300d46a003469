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

/// Hand-edited files in `revisions/`: the file name `<id>.r<N>.md` decides which message and
/// which revision a file is, as for every message file; a header that says otherwise is read
/// as the name says, with a warning. A name that is no revision's, a revision of a message the
/// mailbox holds no copy of, one from another sender than the copy's, and one not earlier than
/// the copy are each reported as not copied, never filed under another id or merged.
#[test]
fn revisions_are_what_their_file_names_say_and_strays_are_reported() {
    let home = Home::new();
    let id = home.send("a", "b", "v1");
    for v in 2..=8 {
        home.as_("a", ["edit", &id, "--message", &format!("v{v}")])
            .ok();
    }
    let boxes = home.path().join("projects/default/boxes");
    let r = boxes.join("b/revisions");
    let file = |n: &str| r.join(format!("{id}.{n}.md"));
    let rewrite = |n: &str, field: &str, value: &str| {
        let text = std::fs::read_to_string(file(n)).unwrap();
        let out: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with(&format!("{field}: ")) {
                    format!("{field}: {value}")
                } else {
                    l.to_owned()
                }
            })
            .collect();
        std::fs::write(file(n), out.join("\n") + "\n").unwrap();
    };
    let stranger = "01AAAAAAAAAAAAAAAAAAAAAAAA";
    rewrite("r5", "id", stranger);
    rewrite("r6", "from", "evil@default");
    for copy in ["r0", "r05", "r99", "duplicate-unread"] {
        std::fs::copy(file("r7"), file(copy)).unwrap();
    }
    std::fs::copy(file("r7"), r.join(format!("{stranger}.r1.md"))).unwrap();
    std::fs::copy(file("r3"), file("interrupted")).unwrap();
    std::fs::create_dir_all(boxes.join("a/revisions")).unwrap();
    std::fs::copy(file("r2"), boxes.join(format!("a/revisions/{id}.r2.md"))).unwrap();

    let to = home.root().join("copy");
    let run = home
        .as_("HUMAN", ["--json", "export", "--to"])
        .args([&to])
        .json();
    // r1 to r5 and r7: r5 under its file's id; r6 names another sender.
    assert_eq!(
        run["revisions"],
        serde_json::json!({"total": 6, "new": 6}),
        "{run}"
    );
    let not_copied: Vec<&str> = run["not_copied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let reported = |what: &str, why: &str| {
        assert!(
            not_copied
                .iter()
                .any(|l| l.contains(what) && l.contains(why)),
            "{what} ({why}) in {not_copied:#?}"
        );
    };
    reported(&format!("{id}.r0.md"), "not <id>.r<N>.md");
    reported(&format!("{id}.r05.md"), "not <id>.r<N>.md");
    reported(&format!("{id}.duplicate-unread.md"), "doctor --fix");
    reported(&format!("{id}.interrupted.md"), "is revision 3");
    reported(&format!("revision 99 of {id}"), "not earlier than the copy");
    reported(&format!("revision 6 of {id}"), "evil@default");
    reported(&format!("revision 1 of {stranger}"), "no copy");
    reported(&format!("a@default: revision 2 of {id}"), "no copy");
    assert_eq!(not_copied.len(), 8, "{not_copied:#?}");
    let warnings = run["warnings"].to_string();
    assert!(
        warnings.contains(&format!("{id}.r5.md"))
            && warnings.contains(&format!("the header says id {stranger}")),
        "{warnings}"
    );
    let copied = to.join("projects/default/boxes/b/revisions");
    let mut names: Vec<String> = std::fs::read_dir(&copied)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = [1, 2, 3, 4, 5, 7]
        .iter()
        .map(|n| format!("{id}.r{n}.md"))
        .collect();
    assert_eq!(names, expected);
    let r5 = std::fs::read_to_string(copied.join(format!("{id}.r5.md"))).unwrap();
    assert!(
        r5.contains(&format!("id: {id}")) && r5.contains("v5"),
        "{r5}"
    );
    assert!(!to.join("projects/default/boxes/a/revisions").exists());
    // doctor names the same files in the source, and leaves them as they are.
    let doctor = home.as_("HUMAN", ["doctor"]).fails(1);
    let finding = |what: &str, why: &str| {
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.contains(what) && l.contains(why)),
            "{what} ({why}) in {}",
            doctor.stdout
        );
    };
    finding(&format!("{id}.r0.md"), "not <id>.r<N>.md");
    finding(&format!("{id}.r05.md"), "not <id>.r<N>.md");
    finding(&format!("{id}.r5.md"), &format!("says id {stranger}"));
    finding(&format!("{id}.r99.md"), "says revision 7");
    finding(&format!("{stranger}.r1.md"), "holds no copy");
    finding(&format!("a/revisions/{id}.r2.md"), "holds no copy");
    assert!(
        !doctor.stdout.contains("duplicate-unread"),
        "what --fix sets aside is its own: {}",
        doctor.stdout
    );
    assert!(file("r0").is_file() && file("r5").is_file());
}
