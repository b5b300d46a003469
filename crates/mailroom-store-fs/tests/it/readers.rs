//! Readers that cannot be hung or blinded: only regular files are read, every read is bounded,
//! a listing holds each id once, and `doctor` reports what it finds instead of stopping.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use mailroom_core::message::BROADCAST;
use mailroom_core::ops::Draft;
use mailroom_core::{
    Address, Directory, Finding, Kind, Mailboxes, Mailroom, MessageId, Name, Sessions, State,
};
use mailroom_store_fs::FsStore;
use tempfile::TempDir;

/// Runs `f` on its own thread and fails the test when it has not returned within 20 s, so a
/// read that blocks fails the test instead of hanging the run.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what} did not return within 20 s"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).expect("a canonical address")
}

fn web() -> Name {
    Name::parse("web").expect("a valid name")
}

/// A home with one message from alice to bob (`real`) and one broadcast to project `web`.
struct Home {
    _dir: TempDir,
    path: PathBuf,
    real: MessageId,
    broadcast: MessageId,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("home");
        let store = FsStore::new(&path);
        let m = Mailroom::new(&store);
        let real = m
            .send(
                &addr("alice@web"),
                Draft {
                    to: vec!["bob@web".into()],
                    body: "real".into(),
                    ..Draft::default()
                },
            )
            .expect("send")
            .message
            .id;
        let broadcast = m
            .post(
                &addr("alice@web"),
                &web(),
                BROADCAST,
                Draft {
                    body: "to everyone".into(),
                    kind: Kind::Info,
                    ..Draft::default()
                },
            )
            .expect("post")
            .message
            .id;
        Home {
            _dir: dir,
            path,
            real,
            broadcast,
        }
    }

    fn project(&self) -> PathBuf {
        self.path.join("projects/web")
    }

    fn bob(&self) -> PathBuf {
        self.project().join("boxes/bob")
    }
}

fn mkfifo(path: &Path) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create the parent");
    }
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

fn fifo_name() -> String {
    format!("{}.md", MessageId::generate())
}

fn ids(listing: &[mailroom_core::Stored]) -> Vec<MessageId> {
    listing.iter().map(|s| s.message.id).collect()
}

#[test]
fn a_fifo_in_a_mailbox_a_channel_or_the_cache_is_reported_and_never_waited_on() {
    let home = Home::new();
    let bob = home.bob();
    let planted = [
        bob.join("unread").join(fifo_name()),
        bob.join("read").join(fifo_name()),
        home.project()
            .join("channels")
            .join(BROADCAST)
            .join("entries")
            .join(fifo_name()),
    ];
    for p in &planted {
        mkfifo(p);
    }
    let archived = bob.join("done").join(fifo_name());
    mkfifo(&archived);
    let _ = std::fs::remove_file(bob.join("pending.cache"));
    mkfifo(&bob.join("pending.cache"));
    mkfifo(&bob.join("injected"));

    let path = home.path.clone();
    let (inbox, everything, injected) = within("reading a mailbox with FIFOs in it", move || {
        let store = FsStore::new(&path);
        let inbox = Mailroom::new(&store).inbox(&addr("bob@web"), None);
        let everything = store.everything(&addr("bob@web"));
        let injected = store.last_injected(&addr("bob@web"));
        (inbox, everything, injected)
    });
    let inbox = inbox.expect("inbox lists around the FIFOs");
    assert_eq!(ids(&inbox.messages), vec![home.real, home.broadcast]);
    let mut reported: Vec<&str> = inbox.damaged.iter().map(|d| d.location.as_str()).collect();
    reported.sort();
    let mut want: Vec<String> = planted.iter().map(|p| p.display().to_string()).collect();
    want.sort();
    assert_eq!(reported, want, "{:?}", inbox.damaged);
    for d in &inbox.damaged {
        assert!(
            d.problem
                .ends_with("it is a FIFO (named pipe), not a regular file; mailroom reads only regular files in its home"),
            "{}",
            d.problem
        );
    }
    let everything = everything.expect("everything lists around the FIFOs");
    assert!(
        everything
            .damaged
            .iter()
            .any(|d| d.location == archived.display().to_string() && d.state == Some(State::Done)),
        "{:?}",
        everything.damaged
    );
    assert_eq!(injected.expect("an unreadable token is no token"), None);

    // Files that are not mail: a clear error naming the file, never a wait.
    let roster = home.project().join("roster/alice.md");
    std::fs::remove_file(&roster).expect("remove the roster file");
    mkfifo(&roster);
    let path = home.path.clone();
    let member = within("reading a member that is a FIFO", move || {
        FsStore::new(&path)
            .member(&web(), &Name::parse("alice").expect("a name"))
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    });
    let err = member.expect_err("a FIFO is no member file");
    assert!(
        err.contains(&roster.display().to_string()) && err.contains("FIFO"),
        "{err}"
    );
}

#[test]
fn a_file_too_large_to_be_a_message_is_reported_without_being_read() {
    let home = Home::new();
    let huge = home.bob().join("unread").join(fifo_name());
    // Sparse: 2 GiB long, nothing on disk; reading it whole would take seconds and 2 GiB.
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(2 << 30))
        .expect("a 2 GiB file");
    let cache = home.bob().join("pending.cache");
    std::fs::File::create(&cache)
        .and_then(|f| f.set_len(1 << 30))
        .expect("a 1 GiB cache");
    let roster = home.project().join("roster/alice.md");
    std::fs::File::create(&roster)
        .and_then(|f| f.set_len(1 << 20))
        .expect("a 1 MiB member file");

    let path = home.path.clone();
    let (inbox, member) = within("listing a mailbox with a 2 GiB file", move || {
        let store = FsStore::new(&path);
        let inbox = Mailroom::new(&store).inbox(&addr("bob@web"), Some(1));
        let member = store
            .member(&web(), &Name::parse("alice").expect("a name"))
            .map(|_| ())
            .map_err(|e| format!("{e:#}"));
        (inbox, member)
    });
    let inbox = inbox.expect("inbox");
    assert_eq!(ids(&inbox.messages), vec![home.real]);
    assert_eq!(inbox.damaged.len(), 1, "{:?}", inbox.damaged);
    assert_eq!(inbox.damaged[0].location, huge.display().to_string());
    assert!(
        inbox.damaged[0].problem.ends_with(
            "it is 2147483648 bytes, more than a message file can be (1310720 bytes); move it out of the home"
        ),
        "{}",
        inbox.damaged[0].problem
    );
    let err = member.expect_err("a 1 MiB member file is refused");
    assert!(
        err.contains("it is 1048576 bytes, more than a roster file can be (65536 bytes)"),
        "{err}"
    );
    assert!(
        std::fs::metadata(&cache).expect("the cache").len() < 1 << 20,
        "the oversized cache was replaced by a small one"
    );
}

#[test]
fn a_copy_seen_in_two_pending_states_is_listed_once_in_the_later_one() {
    // What a listing sees when a copy moves from unread/ to read/ between the two directory
    // reads: the same file in both. Made here with a hard link, so no timing is involved.
    let home = Home::new();
    let name = format!("{}.md", home.real);
    let read = home.bob().join("read");
    std::fs::create_dir_all(&read).expect("read/");
    std::fs::hard_link(home.bob().join("unread").join(&name), read.join(&name)).expect("link");
    let store = FsStore::new(&home.path);
    for round in ["without a cache", "with the cache"] {
        let pending = store.pending(&addr("bob@web")).expect("pending");
        let states: Vec<(MessageId, State)> = pending
            .messages
            .iter()
            .map(|s| (s.message.id, s.state))
            .collect();
        assert_eq!(states, vec![(home.real, State::Read)], "{round}");
    }
    let everything = store.everything(&addr("bob@web")).expect("everything");
    assert_eq!(ids(&everything.messages), vec![home.real]);
    let found = store
        .find(&addr("bob@web"), &home.real.to_string()[..12])
        .expect("find");
    assert_eq!(
        ids(&found),
        vec![home.real],
        "a prefix is not ambiguous with itself"
    );
}

fn findings(home: &Path) -> Vec<Finding> {
    let path = home.to_owned();
    within("doctor", move || FsStore::new(&path).doctor(false))
        .expect("doctor reports instead of stopping")
}

/// Each finding as `path below the home: problem`.
fn described(home: &Path, found: &[Finding]) -> Vec<String> {
    let root = format!("{}/", home.display());
    let mut out: Vec<String> = found
        .iter()
        .map(|f| format!("{}: {}", f.location.replace(&root, ""), f.problem))
        .collect();
    out.sort();
    out
}

#[test]
fn doctor_reports_links_unknown_entries_and_misnamed_ids_instead_of_stopping() {
    let home = Home::new();
    let bob = home.bob();
    let outside = home.path.parent().expect("a parent").join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::os::unix::fs::symlink(&outside, bob.join("done")).expect("a linked done/");
    std::os::unix::fs::symlink(&outside, home.project().join("channels/linked"))
        .expect("a linked channel");
    let fifo = fifo_name();
    mkfifo(&bob.join("unread").join(&fifo));
    std::fs::write(home.path.join("notes.txt"), "mine").expect("an unknown file");
    std::fs::create_dir_all(bob.join("drafts")).expect("an unknown directory");
    std::fs::write(bob.join("drafts/x.md"), "inside an unknown directory").expect("write");
    std::fs::write(bob.join("unread/notes.txt"), "not mail").expect("a stray file");
    let other = MessageId::generate();
    let misnamed = MessageId::generate();
    let header = bob.join("unread").join(format!("{misnamed}.md"));
    std::fs::write(
        &header,
        format!("---\nid: {other}\nfrom: alice@web\n---\nbody\n"),
    )
    .expect("a header id that is not the name");
    let big = fifo_name();
    std::fs::File::create(bob.join("unread").join(&big))
        .and_then(|f| f.set_len(2 << 20))
        .expect("a 2 MiB file");
    for f in [&header, &bob.join("unread").join(&big)] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }

    let found = findings(&home.path);
    let unread = "projects/web/boxes/bob/unread";
    let not_in_layout = "mailroom's layout does not have (docs/FORMAT.md); mailroom ignores it";
    let special = "is a symbolic link or special file; mailroom never follows it";
    let mut want = vec![
        format!("notes.txt: is a file {not_in_layout}"),
        format!("projects/web/boxes/bob/done: {special}"),
        format!("projects/web/boxes/bob/drafts: is a directory {not_in_layout}"),
        format!(
            "{unread}/{big}: cannot be read: it is 2097152 bytes, more than a message file can be (1310720 bytes); move it out of the home"
        ),
        format!(
            "{unread}/{misnamed}.md: says id {other} in its header but is named {misnamed}; mailroom goes by the name"
        ),
        format!("{unread}/{fifo}: {special}"),
        format!("{unread}/notes.txt: is a file {not_in_layout}"),
        format!("projects/web/channels/linked: {special}"),
    ];
    want.sort();
    assert_eq!(described(&home.path, &found), want);
    assert!(found.iter().all(|f| !f.fixed));
}

#[test]
fn doctor_finds_nothing_in_a_home_mailroom_wrote() {
    let home = Home::new();
    let store = FsStore::new(&home.path);
    let m = Mailroom::new(&store);
    m.inbox(&addr("bob@web"), None).expect("inbox");
    m.done_all(&addr("bob@web")).expect("done --all");
    let sent = m
        .send(
            &addr("bob@web"),
            Draft {
                to: vec!["alice@web".into()],
                body: "hello".into(),
                idempotency_key: Some("k1".into()),
                ..Draft::default()
            },
        )
        .expect("send");
    m.edit(
        &addr("bob@web"),
        &sent.message.id.to_string(),
        mailroom_core::ops::EditPatch {
            body: Some("hello again".into()),
            ..mailroom_core::ops::EditPatch::default()
        },
    )
    .expect("edit");
    m.channel_read(&addr("bob@web"), &web(), BROADCAST, None)
        .expect("channel read");
    store
        .set_last_injected(&addr("bob@web"), "token")
        .expect("a token");
    store
        .claim_origin(&addr("bob@web"), "/src/web")
        .expect("origin");
    assert_eq!(
        described(&home.path, &findings(&home.path)),
        Vec::<String>::new()
    );
}

#[test]
fn doctor_reports_one_name_in_two_cases() {
    let home = Home::new();
    let store = FsStore::new(&home.path);
    let m = Mailroom::new(&store);
    m.send(
        &addr("bob@web"),
        Draft {
            to: vec!["api@web".into()],
            body: "hello".into(),
            ..Draft::default()
        },
    )
    .expect("send");
    // An older mailroom compared names by case: it could leave `API` beside `api`.
    let boxes = home.path.join("projects/web/boxes");
    std::fs::create_dir(boxes.join("API")).expect("plant a second spelling");
    std::fs::set_permissions(boxes.join("API"), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    let found = described(&home.path, &findings(&home.path));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("projects/web/boxes/api")
            && found[0].contains("is the same name as 'API' in another case"),
        "{found:#?}"
    );
    // Until they are merged, every spelling reaches the same one of the two.
    let seen: Vec<usize> = ["api@web", "API@web", "Api@web"]
        .iter()
        .map(|a| m.peek(&addr(a)).expect("peek").messages.len())
        .collect();
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
}

/// A project directory without its project.md is no project (its mail is never reached):
/// doctor says so, and `--fix` writes it, policy open, created when the directory last changed.
#[test]
fn doctor_writes_the_project_file_a_project_directory_lacks() {
    let home = Home::new();
    let store = FsStore::new(&home.path);
    let dir = home.path.join("projects/web");
    std::fs::remove_file(dir.join("project.md")).expect("remove project.md");
    assert_eq!(store.project(&web()).expect("project"), None);
    let then = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::open(&dir)
        .and_then(|d| d.set_modified(then))
        .expect("age the directory");
    let found = described(&home.path, &findings(&home.path));
    assert_eq!(
        found,
        vec![
            "projects/web/project.md: is missing, so mailroom sees no project here and never reads its mail or roster"
        ]
    );
    let fixed = within("doctor --fix", {
        let path = home.path.clone();
        move || FsStore::new(&path).doctor(true)
    })
    .expect("doctor --fix");
    assert!(fixed.iter().all(|f| f.fixed), "{fixed:#?}");
    let project = store
        .project(&web())
        .expect("project")
        .expect("a project again");
    assert_eq!(project.policy, mailroom_core::Policy::Open);
    let then = jiff::Timestamp::try_from(then).expect("a timestamp");
    assert_eq!(project.created.as_second(), then.as_second());
    assert_eq!(findings(&home.path), vec![]);
}
