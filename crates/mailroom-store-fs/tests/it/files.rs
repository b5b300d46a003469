//! What only the file store promises: permissions, no symlink is ever followed, tolerant reads
//! of hand-edited and damaged files, pending reads that never touch the archive, races decided
//! by one rename, and a header no body can alter.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::thread;

use mailroom_core::ops::{Draft, EditOutcome, EditPatch, Inbox};
use mailroom_core::{
    Address, Error, ErrorKind, Kind, Mailboxes, Mailroom, MemberStatus, Message, MessageId, Name,
    Policy, Priority, Sessions, State,
};
use mailroom_store_fs::frontmatter::{self, Value};
use mailroom_store_fs::{FsStore, state_dir_name};
use tempfile::TempDir;

/// A store in a fresh temporary home, and room beside it for things outside the home.
struct Home {
    dir: TempDir,
    store: FsStore,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = FsStore::new(dir.path().join("home"));
        Home { dir, store }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A directory outside the home.
    fn outside(&self) -> PathBuf {
        let p = self.dir.path().join("outside");
        std::fs::create_dir_all(&p).expect("create outside");
        p
    }

    /// `<home>/projects/<project>/boxes/<handle>`.
    fn mailbox(&self, address: &str) -> PathBuf {
        let a = addr(address);
        let project = a.project().expect("a project address").to_string();
        self.path()
            .join("projects")
            .join(project)
            .join("boxes")
            .join(a.handle.as_str())
    }

    fn ops(&self) -> Mailroom<'_> {
        Mailroom::with_clock(&self.store, now)
    }
}

const NOW: &str = "2026-03-13T14:22:00Z";

fn now() -> jiff::Timestamp {
    NOW.parse().expect("NOW is RFC 3339")
}

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).expect("a canonical address")
}

fn draft(to: &str, body: &str) -> Draft {
    Draft {
        to: vec![to.to_owned()],
        body: body.to_owned(),
        ..Draft::default()
    }
}

fn send(home: &Home, from: &str, to: &str, body: &str) -> Message {
    home.ops()
        .send(&addr(from), draft(to, body))
        .expect("send")
        .message
}

/// Every path under `root`, `root` included, without following symlinks.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_owned()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        i += 1;
        let meta = std::fs::symlink_metadata(&p).expect("stat");
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).expect("read_dir") {
                out.push(e.expect("entry").path());
            }
        }
    }
    out
}

/// How many state directories of `mailbox` hold a file for `id`.
fn copies(home: &Home, mailbox: &str, id: MessageId) -> usize {
    State::ALL
        .iter()
        .filter(|s| {
            home.mailbox(mailbox)
                .join(state_dir_name(**s))
                .join(format!("{id}.md"))
                .exists()
        })
        .count()
}

/// An edit that replaces the body only.
fn body_patch(body: &str) -> EditPatch {
    EditPatch {
        body: Some(body.to_owned()),
        ..EditPatch::default()
    }
}

fn message_text(id: MessageId, from: &str, subject: &str) -> String {
    format!(
        "---\nid: {id}\nfrom: {from}\nto: [\"bob@web\"]\nsubject: {subject:?}\nkind: INFO\npriority: M\ndate: {NOW}\nthread: {id}\n---\nbody of {subject}\n"
    )
}

#[test]
fn every_directory_is_0700_and_every_file_0600() {
    let home = Home::new();
    let m = home.ops();
    let (alice, bob) = (addr("alice@web"), addr("bob@web"));
    m.add_project("ops", Policy::Roster).expect("add project");
    m.add_member(
        &Address::human(),
        &Name::parse("ops").expect("name"),
        "carol",
        "qa",
        MemberStatus::Active,
    )
    .expect("add member");
    m.set_policy(&Address::human(), "ops", Policy::Open)
        .expect("set policy");
    let read = send(&home, "alice@web", "bob@web", "one");
    let unread = send(&home, "alice@web", "bob@web", "two");
    m.read(&bob, &read.id.to_string(), false).expect("read");
    m.edit(&alice, &read.id.to_string(), body_patch("correction"))
        .expect("edit read mail");
    m.edit(&alice, &unread.id.to_string(), body_patch("in place"))
        .expect("edit unread mail");
    let cancelled = send(&home, "alice@web", "bob@web", "three");
    m.cancel(&alice, &cancelled.id.to_string()).expect("cancel");
    m.send(
        &alice,
        Draft {
            idempotency_key: Some("k-1".into()),
            ..draft("HUMAN", "keyed")
        },
    )
    .expect("keyed send");
    m.handover(&alice, "next steps".into(), None, Priority::Low)
        .expect("handover");
    m.done_all(&bob).expect("archive");
    home.store
        .claim_origin(&alice, "/src/web")
        .expect("claim origin");

    let mut wrong = Vec::new();
    let all = walk(&home.path());
    for p in &all {
        let meta = std::fs::symlink_metadata(p).expect("stat");
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() {
            0o700
        } else if meta.is_file() {
            0o600
        } else {
            0
        };
        if mode != want {
            wrong.push(format!("{} is {mode:o}", p.display()));
        }
    }
    assert!(all.len() > 30, "the operations wrote a tree: {all:?}");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_symlinked_directory_in_a_mailbox_is_refused_not_followed() {
    for planted in ["", "unread", "tmp"] {
        let home = Home::new();
        let m = home.ops();
        m.add_member(
            &Address::human(),
            &Name::parse("web").expect("name"),
            "bob",
            "",
            MemberStatus::Active,
        )
        .expect("add member");
        let bx = home.mailbox("bob@web");
        if planted.is_empty() {
            std::fs::create_dir_all(bx.parent().expect("boxes")).expect("boxes");
        } else {
            m.send(&addr("alice@web"), draft("bob@web", "first"))
                .expect("create the mailbox");
            for state in ["unread", "tmp"] {
                let _ = std::fs::remove_dir_all(bx.join(state));
            }
            let _ = std::fs::remove_dir(bx.join(planted));
        }
        let outside = home.outside();
        let link = if planted.is_empty() {
            bx.clone()
        } else {
            bx.join(planted)
        };
        symlink(&outside, &link).expect("plant the symlink");

        let e = m
            .send(&addr("alice@web"), draft("bob@web", "hello"))
            .expect_err("a send through a symlink is refused");
        assert_eq!(e.kind(), ErrorKind::Store, "{planted}: {e}");
        assert!(
            e.to_string().contains(&bx.display().to_string()),
            "the error names the path: {e}"
        );
        assert_eq!(
            std::fs::read_dir(&outside).expect("outside").count(),
            0,
            "{planted}: nothing written through the link"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("the link")
                .file_type()
                .is_symlink(),
            "the link is left as it was"
        );
    }
}

#[test]
fn a_symlinked_mailbox_is_never_listed_through() {
    let home = Home::new();
    home.ops()
        .add_member(
            &Address::human(),
            &Name::parse("web").expect("name"),
            "bob",
            "",
            MemberStatus::Active,
        )
        .expect("add member");
    let outside = home.outside();
    let id = MessageId::generate();
    std::fs::create_dir_all(outside.join("unread")).expect("outside unread");
    std::fs::write(
        outside.join("unread").join(format!("{id}.md")),
        message_text(id, "mallory@evil", "SECRET"),
    )
    .expect("write");
    symlink(&outside, home.mailbox("bob@web")).expect("plant");

    match home.store.pending(&addr("bob@web")) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Store, "{e}"),
        Ok(listing) => panic!("listed through a symlink: {listing:?}"),
    }
    let e = home
        .ops()
        .inbox(&addr("bob@web"), None)
        .expect_err("inbox through a symlink");
    assert_eq!(e.kind(), ErrorKind::Store);
    assert!(
        outside.join("unread").join(format!("{id}.md")).exists(),
        "nothing moved out of the target"
    );
}

#[test]
fn a_symlinked_message_file_is_refused_not_followed() {
    let home = Home::new();
    let real = send(&home, "alice@web", "bob@web", "real");
    let outside = home.outside();
    let secret = outside.join("secret.md");
    let id = MessageId::generate();
    let text = message_text(id, "mallory@evil", "SECRET");
    std::fs::write(&secret, &text).expect("write the target");
    let link = home
        .mailbox("bob@web")
        .join("unread")
        .join(format!("{id}.md"));
    symlink(&secret, &link).expect("plant");

    // Refused: an error, or reported as damaged; never the target's content.
    match home.store.pending(&addr("bob@web")) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Store, "{e}"),
        Ok(listing) => {
            assert!(
                listing.messages.iter().all(|s| s.message.id == real.id),
                "{listing:?}"
            );
            assert_eq!(listing.damaged.len(), 1, "{listing:?}");
        }
    }
    match home.store.get(&addr("bob@web"), id) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Store, "{e}"),
        Ok(got) => assert_eq!(got, None),
    }
    let m = home.ops();
    let _ = m.inbox(&addr("bob@web"), None);
    let _ = m.done_all(&addr("bob@web"));
    let msg = Message { id, ..real.clone() };
    assert!(
        !home
            .store
            .deliver(&addr("bob@web"), &msg)
            .expect("deliver onto a symlink's name"),
        "an existing name, link or not, is never replaced"
    );
    assert_eq!(
        std::fs::read_to_string(&secret).expect("the target"),
        text,
        "the target is untouched"
    );
}

#[test]
fn hand_written_message_files_are_listed_with_warnings() {
    let home = Home::new();
    let real = send(&home, "alice@web", "bob@web", "real");
    let unread = home.mailbox("bob@web").join("unread");
    let yaml = MessageId::generate();
    std::fs::write(
        unread.join(format!("{yaml}.md")),
        "---\nfrom: alice@web\nto:\n  - bob@web\nsubject: 'it''s written by hand'\nkind: URGENT_THING\ndate: sometime yesterday\n---\nHand-written body.\n",
    )
    .expect("write");
    let plain = MessageId::generate();
    std::fs::write(
        unread.join(format!("{plain}.md")),
        "---\r\nfrom: carol@web\r\nsubject: Re: plain words\r\ndate: 2026-03-13 14:22 UTC\r\n---\r\nplain\r\n",
    )
    .expect("write");

    let listing = home.ops().peek(&addr("bob@web")).expect("peek");
    assert!(listing.damaged.is_empty(), "{listing:?}");
    assert_eq!(listing.messages.len(), 3);
    let get = |id: MessageId| {
        listing
            .messages
            .iter()
            .find(|s| s.message.id == id)
            .expect("listed")
    };
    assert!(get(real.id).warnings.is_empty());

    let y = get(yaml);
    assert_eq!(y.message.subject, "it's written by hand");
    assert_eq!(y.message.from, addr("alice@web"));
    assert_eq!(y.message.to, vec![addr("bob@web")]);
    assert_eq!(
        y.message.kind,
        Kind::Info,
        "an unknown kind takes the default"
    );
    assert_eq!(y.message.priority, Priority::Medium, "missing: the default");
    assert_eq!(
        y.message.date,
        yaml.timestamp(),
        "a bad date: the id's time"
    );
    assert_eq!(y.message.body, "Hand-written body.\n");
    assert_eq!(y.warnings.len(), 2, "{:?}", y.warnings);
    assert!(
        y.warnings.iter().any(|w| w.contains("kind")),
        "{:?}",
        y.warnings
    );
    assert!(
        y.warnings.iter().any(|w| w.contains("date")),
        "{:?}",
        y.warnings
    );

    let p = get(plain);
    assert_eq!(p.message.subject, "Re: plain words");
    assert_eq!(p.message.to, vec![addr("bob@web")], "the mailbox's owner");
    assert_eq!(p.message.thread, plain);
    assert_eq!(p.message.date, now());
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);

    let inbox = home.ops().inbox(&addr("bob@web"), None).expect("inbox");
    assert_eq!(inbox.messages.len(), 3);
    assert!(
        home.store
            .pending(&addr("bob@web"))
            .expect("pending")
            .messages
            .iter()
            .all(|s| s.state == State::Read),
        "hand-written mail moves like any other"
    );
}

#[test]
fn damaged_files_are_reported_and_hide_no_other_message() {
    let home = Home::new();
    let real = send(&home, "alice@web", "bob@web", "real");
    let bx = home.mailbox("bob@web");
    std::fs::create_dir_all(bx.join("read")).expect("read dir");
    let damaged: Vec<(PathBuf, Vec<u8>, &str)> = vec![
        (bx.join("unread"), b"just some text\n".to_vec(), "'---'"),
        (
            bx.join("unread"),
            b"---\nfrom: alice@web\nsubject: torn".to_vec(),
            "closing",
        ),
        (
            bx.join("unread"),
            b"---\nfrom: alice@web\nsubject: \xff\xfe\n---\nx".to_vec(),
            "UTF-8",
        ),
        (
            bx.join("read"),
            b"---\nsubject: no sender\n---\n".to_vec(),
            "from",
        ),
    ];
    let mut names = Vec::new();
    for (dir, bytes, _) in &damaged {
        let name = format!("{}.md", MessageId::generate());
        std::fs::write(dir.join(&name), bytes).expect("write");
        names.push(name);
    }

    let inbox = home.ops().inbox(&addr("bob@web"), None).expect("inbox");
    let shown: Vec<MessageId> = inbox.messages.iter().map(|s| s.message.id).collect();
    assert_eq!(shown, vec![real.id], "the good message is shown");
    assert_eq!(inbox.damaged.len(), damaged.len(), "{:?}", inbox.damaged);
    for ((_, _, says), name) in damaged.iter().zip(&names) {
        let d = inbox
            .damaged
            .iter()
            .find(|d| d.location.ends_with(name.as_str()))
            .unwrap_or_else(|| panic!("{name} is reported: {:?}", inbox.damaged));
        assert!(d.problem.contains(says), "{name}: {}", d.problem);
    }
    let everything = home.store.everything(&addr("bob@web")).expect("everything");
    assert_eq!(everything.damaged.len(), damaged.len());
    assert_eq!(everything.messages.len(), 1);
    let search = home.ops().search(&addr("bob@web"), "real").expect("search");
    assert_eq!(search.hits.len(), 1);
    assert_eq!(
        home.ops().done_all(&addr("bob@web")).expect("done --all"),
        1
    );
}

#[test]
fn leftover_temp_files_are_never_listed() {
    let home = Home::new();
    let real = send(&home, "alice@web", "bob@web", "real");
    let bx = home.mailbox("bob@web");
    let stray = |dir: PathBuf, name: String| {
        let id = MessageId::generate();
        std::fs::write(
            dir.join(name.replace("ID", &id.to_string())),
            message_text(id, "alice@web", "leftover"),
        )
        .expect("write");
    };
    stray(bx.join("tmp"), "123.0.0.tmp".into());
    stray(bx.join("tmp"), "ID.md".into());
    stray(bx.join("unread"), ".ID.md".into());
    stray(bx.join("unread"), "ID.md.tmp".into());
    stray(
        home.path().join("projects").join("web").join("tmp"),
        "ID.md".into(),
    );
    std::fs::create_dir_all(bx.join("done")).expect("done dir");
    stray(bx.join("done"), "9.1.2.tmp".into());

    let listing = home.ops().peek(&addr("bob@web")).expect("peek");
    let ids: Vec<MessageId> = listing.messages.iter().map(|s| s.message.id).collect();
    assert_eq!(ids, vec![real.id]);
    assert!(listing.damaged.is_empty(), "{listing:?}");
    let everything = home.store.everything(&addr("bob@web")).expect("everything");
    assert_eq!(everything.messages.len(), 1);
    assert!(everything.damaged.is_empty(), "{everything:?}");
    let search = home
        .ops()
        .search(&addr("bob@web"), "leftover")
        .expect("search");
    assert!(search.hits.is_empty(), "{search:?}");
    assert!(
        home.ops()
            .recover(&addr("bob@web"), 10)
            .expect("recover")
            .is_empty()
    );
}

#[test]
fn reading_pending_mail_never_opens_the_archive() {
    let home = Home::new();
    let real = send(&home, "alice@web", "bob@web", "real");
    let bx = home.mailbox("bob@web");
    for state in ["done", "cancelled"] {
        std::fs::create_dir_all(bx.join(state)).expect("state dir");
        std::fs::write(
            bx.join(state).join(format!("{}.md", MessageId::generate())),
            "damaged",
        )
        .expect("write");
    }
    assert_eq!(
        home.store
            .everything(&addr("bob@web"))
            .expect("everything")
            .damaged
            .len(),
        2,
        "a full scan would report them"
    );
    let pending = home.store.pending(&addr("bob@web")).expect("pending");
    assert!(pending.damaged.is_empty(), "{pending:?}");
    let inbox = home.ops().inbox(&addr("bob@web"), None).expect("inbox");
    assert!(inbox.damaged.is_empty(), "{inbox:?}");

    // Archive directories that cannot even be opened do not matter to pending mail.
    for state in ["done", "cancelled"] {
        std::fs::remove_dir_all(bx.join(state)).expect("remove");
        std::fs::write(bx.join(state), "not a directory").expect("write");
    }
    let pending = home.store.pending(&addr("bob@web")).expect("pending");
    assert_eq!(pending.messages.len(), 1);
    assert_eq!(pending.messages[0].message.id, real.id);
    let e = home
        .store
        .everything(&addr("bob@web"))
        .expect_err("a full scan does open the archive");
    assert_eq!(e.kind(), ErrorKind::Store);
}

const RACE_ROUNDS: usize = 100;

/// Work (never a sleep) that delays the reader by a different amount each round, so the rounds
/// sweep the reader's move across the whole of the other side's operation.
fn stagger(store: &FsStore, mailbox: &Address, round: usize) {
    for _ in 0..(round % 25) * 4 {
        store.pending(mailbox).expect("pending");
    }
}

/// Runs `reader`'s inbox and `other` at once (the reader staggered by `round`) and returns
/// what each returned.
fn race_inbox<T: Send>(
    home: &Home,
    reader: &Address,
    round: usize,
    other: impl FnOnce() -> T + Send,
) -> (mailroom_core::Result<Inbox>, T) {
    let barrier = Barrier::new(2);
    thread::scope(|s| {
        let inbox = s.spawn(|| {
            barrier.wait();
            stagger(&home.store, reader, round);
            Mailroom::new(&home.store).inbox(reader, None)
        });
        let other = s.spawn(|| {
            barrier.wait();
            other()
        });
        (
            inbox.join().expect("the reader"),
            other.join().expect("the other thread"),
        )
    })
}

#[test]
fn an_edit_racing_a_read_is_either_in_place_or_a_correction() {
    let home = Home::new();
    let (alice, bob) = (addr("alice@web"), addr("bob@web"));
    let (mut in_place, mut corrected) = (0, 0);
    for round in 0..RACE_ROUNDS {
        let orig = send(&home, "alice@web", "bob@web", &format!("v1 #{round}"));
        let v2 = format!("v2 #{round}");
        let (inbox, edit) = race_inbox(&home, &bob, round, || {
            Mailroom::new(&home.store).edit(&alice, &orig.id.to_string(), body_patch(&v2))
        });
        let inbox = inbox.expect("inbox");
        let edit = edit.expect("edit");
        let shown = inbox
            .messages
            .iter()
            .find(|s| s.message.id == orig.id)
            .unwrap_or_else(|| panic!("round {round}: pending mail not shown: {inbox:?}"));
        let copy = home
            .store
            .get(&bob, orig.id)
            .expect("get")
            .expect("the copy");
        assert_eq!(copy.state, State::Read, "round {round}");
        let corrections: Vec<MessageId> = home
            .store
            .pending(&bob)
            .expect("pending")
            .messages
            .iter()
            .filter(|s| s.message.kind == Kind::Correction && s.message.reply_to == Some(orig.id))
            .map(|s| s.message.id)
            .collect();
        match edit.outcomes.as_slice() {
            [(_, EditOutcome::Edited)] => {
                in_place += 1;
                assert_eq!(copy.message.body, v2, "round {round}");
                assert_eq!(copy.message.revision, 2, "round {round}");
                assert_eq!(shown.message.body, v2, "round {round}: shown the old text");
                assert!(corrections.is_empty(), "round {round}: both outcomes");
            }
            [(_, EditOutcome::Corrected(cid))] => {
                corrected += 1;
                assert_eq!(copy.message.body, orig.body, "round {round}");
                assert_eq!(copy.message.revision, 1, "round {round}");
                assert_eq!(shown.message.body, orig.body, "round {round}");
                assert_eq!(corrections, vec![*cid], "round {round}");
            }
            other => panic!("round {round}: unexpected outcome {other:?}"),
        }
        assert_eq!(copies(&home, "bob@web", orig.id), 1, "round {round}");
        Mailroom::new(&home.store).done_all(&bob).expect("archive");
    }
    assert_eq!(in_place + corrected, RACE_ROUNDS);
}

#[test]
fn a_cancel_racing_a_read_is_either_cancelled_or_read() {
    let home = Home::new();
    let (alice, bob) = (addr("alice@web"), addr("bob@web"));
    let (mut cancelled, mut read) = (0, 0);
    for round in 0..RACE_ROUNDS {
        let orig = send(&home, "alice@web", "bob@web", &format!("#{round}"));
        let (inbox, cancel) = race_inbox(&home, &bob, round, || {
            Mailroom::new(&home.store).cancel(&alice, &orig.id.to_string())
        });
        let inbox = inbox.expect("inbox");
        let shown = inbox.messages.iter().find(|s| s.message.id == orig.id);
        let now = home.store.state_of(&bob, orig.id).expect("state");
        match cancel {
            Ok(report) => {
                cancelled += 1;
                assert_eq!(report.outcomes, vec![(bob.clone(), State::Cancelled)]);
                assert_eq!(now, Some(State::Cancelled), "round {round}");
                assert!(
                    shown.is_none_or(|s| s.state == State::Cancelled),
                    "round {round}: shown as pending although cancelled: {shown:?}"
                );
            }
            Err(e) => {
                read += 1;
                assert!(
                    matches!(
                        e,
                        Error::NotCancellable {
                            state: State::Read,
                            ..
                        }
                    ),
                    "round {round}: {e:?}"
                );
                assert_eq!(now, Some(State::Read), "round {round}");
                assert_eq!(
                    shown.map(|s| s.state),
                    Some(State::Unread),
                    "round {round}: read, so the reader saw it"
                );
            }
        }
        assert_eq!(copies(&home, "bob@web", orig.id), 1, "round {round}");
        Mailroom::new(&home.store).done_all(&bob).expect("archive");
    }
    assert_eq!(cancelled + read, RACE_ROUNDS);
}

#[test]
fn a_message_file_round_trips_through_frontmatter_exactly() {
    let home = Home::new();
    let body =
        "---\nfrom: mallory@evil\nsubject: forged\n---\n> quoted line\n> ---\n---\nReal text\n---";
    let sent = home
        .ops()
        .send(
            &addr("alice@web"),
            Draft {
                subject: Some("He said: \"---\" \\ ok".into()),
                kind: Kind::InterfaceChange,
                priority: Priority::High,
                ..draft("bob@web", body)
            },
        )
        .expect("send")
        .message;
    let file = home
        .mailbox("bob@web")
        .join("unread")
        .join(format!("{}.md", sent.id));
    let bytes = std::fs::read(&file).expect("the message file");
    assert!(bytes.starts_with(b"---\n"));
    let doc = frontmatter::parse(&bytes).expect("parse");
    assert_eq!(doc.body, body, "the body is exactly what was sent");
    let id = sent.id.to_string();
    let text = |s: &str| Value::Text(s.to_owned());
    assert_eq!(
        doc.fields,
        vec![
            ("id".to_owned(), text(&id)),
            ("from".to_owned(), text("alice@web")),
            ("to".to_owned(), Value::List(vec!["bob@web".to_owned()])),
            ("subject".to_owned(), text("He said: \"---\" \\ ok")),
            ("kind".to_owned(), text("INTERFACE_CHANGE")),
            ("priority".to_owned(), text("H")),
            ("date".to_owned(), text(NOW)),
            ("thread".to_owned(), text(&id)),
        ],
        "the body altered no header field"
    );
    let copy = home
        .store
        .get(&addr("bob@web"), sent.id)
        .expect("get")
        .expect("the copy");
    assert_eq!(copy.message, sent);
    assert!(copy.warnings.is_empty());

    let (reply, _) = home
        .ops()
        .reply(
            &addr("bob@web"),
            &id,
            draft("", "---\nfrom: HUMAN\n---\n"),
            false,
        )
        .expect("reply");
    let reply_file = home
        .mailbox("alice@web")
        .join("unread")
        .join(format!("{}.md", reply.message.id));
    let doc = frontmatter::parse(&std::fs::read(reply_file).expect("reply file")).expect("parse");
    assert_eq!(doc.text("from").as_deref(), Some("bob@web"));
    assert_eq!(doc.text("reply_to"), Some(id.clone()));
    assert_eq!(doc.text("thread"), Some(id));
    assert_eq!(doc.body, "---\nfrom: HUMAN\n---\n");
}

#[test]
fn an_edited_message_file_records_its_revision() {
    let home = Home::new();
    let sent = send(&home, "alice@web", "bob@web", "v1");
    let report = home
        .ops()
        .edit(
            &addr("alice@web"),
            &sent.id.to_string(),
            body_patch("v2\n---\nsubject: forged\n---\n"),
        )
        .expect("edit");
    let bytes = std::fs::read(
        home.mailbox("bob@web")
            .join("unread")
            .join(format!("{}.md", sent.id)),
    )
    .expect("the message file");
    let doc = frontmatter::parse(&bytes).expect("parse");
    assert_eq!(doc.text("revision").as_deref(), Some("2"));
    assert_eq!(doc.text("edited").as_deref(), Some(NOW));
    assert_eq!(doc.text("subject").as_deref(), Some("v1"));
    assert_eq!(doc.body, "v2\n---\nsubject: forged\n---\n");
    let copy = home
        .store
        .get(&addr("bob@web"), sent.id)
        .expect("get")
        .expect("the copy");
    assert_eq!(copy.message, report.message);
}

#[test]
fn a_home_that_is_a_symlink_is_refused_for_writes() {
    let dir = TempDir::new().expect("a temporary directory");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("the link's target");
    let home = dir.path().join("home");
    symlink(&elsewhere, &home).expect("plant the home as a link");
    let store = FsStore::new(&home);
    let sent = Mailroom::new(&store).send(
        &addr("alice@web"),
        Draft {
            to: vec!["bob".into()],
            body: "hello".into(),
            ..Draft::default()
        },
    );
    let err = sent.expect_err("a linked home is not followed");
    assert_eq!(err.kind(), ErrorKind::Store);
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("the target").count(),
        0,
        "nothing was written through the link"
    );
}

#[test]
fn one_shared_mailroom_serves_many_threads() {
    fn shareable<T: Send + Sync + Clone + 'static>(_: &T) {}
    let home = Home::new();
    let shared = Mailroom::shared(std::sync::Arc::new(FsStore::new(home.path())));
    shareable(&shared);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let m = shared.clone();
            thread::spawn(move || {
                for i in 0..10 {
                    m.send(
                        &addr(&format!("s{t}@web")),
                        draft("bob@web", &format!("{t}-{i}")),
                    )
                    .expect("send");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a sender thread");
    }
    let bob = shared.peek(&addr("bob@web")).expect("pending");
    assert_eq!(
        bob.messages.len(),
        40,
        "every send from every thread arrived once"
    );
}

/// Two writers first using one project, handle and recipient in different cases at the same
/// instant end with one project, one mailbox per person and one roster entry each: both
/// messages reach the recipient under every spelling.
#[test]
fn one_name_created_at_once_in_two_cases_is_one_directory() {
    let home = Home::new();
    const ROUNDS: usize = 40;
    for round in 0..ROUNDS {
        let barrier = Barrier::new(2);
        let (a, b) = (
            (format!("a@Proj{round}"), format!("Bob@Proj{round}")),
            (format!("A@proj{round}"), format!("bob@PROJ{round}")),
        );
        thread::scope(|s| {
            for (from, to) in [&a, &b] {
                let barrier = &barrier;
                // A store of its own, as another process would have.
                let store = FsStore::new(home.path());
                s.spawn(move || {
                    barrier.wait();
                    Mailroom::new(&store)
                        .send(&addr(from), draft(to, "hi"))
                        .expect("send");
                });
            }
        });
    }
    let projects: Vec<String> = std::fs::read_dir(home.path().join("projects"))
        .expect("list projects")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(projects.len(), ROUNDS, "{projects:?}");
    for round in 0..ROUNDS {
        let project = Name::parse(&format!("pRoJ{round}")).expect("a name");
        let roster = home.ops().roster(&project).expect("roster");
        let handles: Vec<&str> = roster.iter().map(|m| m.handle.as_str()).collect();
        assert_eq!(handles.len(), 2, "round {round}: {handles:?}");
        for bob in [format!("bob@proj{round}"), format!("BOB@Proj{round}")] {
            let pending = home.ops().peek(&addr(&bob)).expect("peek");
            assert_eq!(pending.messages.len(), 2, "{bob} sees both messages");
        }
    }
}

/// Takes every wake-up already queued, so the next `wait` says whether something new came.
fn drain(watch: &mut dyn mailroom_core::store::Watch) {
    for _ in 0..100 {
        if !watch.wait(Some(std::time::Duration::ZERO)).expect("wait") {
            return;
        }
    }
    panic!("the watch kept waking with nothing new");
}

/// Watching a mailbox creates nothing, not even the home, yet each level created later is
/// followed down, so the first mail delivered after the watch started still wakes it.
#[test]
fn watching_creates_nothing_and_still_wakes_on_the_first_mail() {
    use mailroom_core::Sessions as _;
    let home = Home::new();
    let bob = addr("bob@web");
    let mut watch = home.store.watch(&bob).expect("watch");
    assert!(!home.path().exists(), "the watch created the home");
    // Mail for someone else makes the home and the project, not bob's mailbox.
    send(&home, "alice@web", "carol@web", "not for bob");
    drain(watch.as_mut());
    assert!(!home.mailbox("bob@web").exists());
    send(&home, "alice@web", "bob@web", "for bob");
    assert!(
        watch
            .wait(Some(std::time::Duration::from_secs(10)))
            .expect("wait"),
        "bob's first mail woke the watch"
    );
    // So does the project's first broadcast.
    drain(watch.as_mut());
    let web = Name::parse("web").expect("a name");
    home.ops()
        .post(&addr("alice@web"), &web, "all", draft("", "everyone"))
        .expect("broadcast");
    assert!(
        watch
            .wait(Some(std::time::Duration::from_secs(10)))
            .expect("wait"),
        "the first broadcast woke the watch"
    );
}

/// Regression: `done --all` left pending mail behind when a reader moved a copy from unread/
/// to read/ between the listing of the directories and the reading of the file. The window is
/// narrow in one process; the load suite (two `r0` listers racing `done --all`) is where it
/// showed, as "listed …, archived before it started".
#[test]
fn done_all_archives_every_copy_a_racing_reader_moves_on() {
    let home = Home::new();
    let m = home.ops();
    let bob = addr("bob@web");
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                m.inbox(&bob, None).expect("a racing inbox");
            }
        });
        for round in 0..60 {
            let sent: Vec<MessageId> = (0..5)
                .map(|i| {
                    m.send(
                        &addr("alice@web"),
                        draft("bob@web", &format!("{round}-{i}")),
                    )
                    .expect("send")
                    .message
                    .id
                })
                .collect();
            m.done_all(&bob).expect("done --all");
            for id in sent {
                assert_eq!(
                    home.store.state_of(&bob, id).expect("state"),
                    Some(State::Done),
                    "round {round}: a copy pending before done --all was left behind"
                );
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

/// A process remembers the spellings it found, and never trusts that memory: a mailbox another
/// process creates after a lookup found none is found, and one renamed by hand to another case
/// after it was found is found under its new spelling (its mail with it).
#[test]
fn remembered_spellings_never_hide_a_name_made_or_changed_elsewhere() {
    let home = Home::new();
    let store = FsStore::new(home.path());
    let mine = Mailroom::with_clock(&store, now);
    send(&home, "a@proj", "b@proj", "first");
    // This store looks up c, which is not there (nor remembered as missing)...
    assert!(
        mine.peek(&addr("c@proj"))
            .expect("peek")
            .messages
            .is_empty()
    );
    // ...another store (another process) creates it...
    let other = FsStore::new(home.path());
    Mailroom::with_clock(&other, now)
        .send(&addr("a@proj"), draft("C@proj", "to c"))
        .expect("send to C");
    // ...and this one finds it.
    let pending = mine.peek(&addr("c@proj")).expect("peek c");
    assert_eq!(pending.messages.len(), 1, "c's mail is found");

    // b's mailbox is found (and remembered), then renamed by hand to another spelling.
    assert_eq!(
        mine.peek(&addr("b@proj")).expect("peek b").messages.len(),
        1
    );
    let boxes = home.path().join("projects/proj/boxes");
    std::fs::rename(boxes.join("b"), boxes.join("B")).expect("rename b to B");
    let pending = mine.peek(&addr("b@proj")).expect("peek b again");
    assert_eq!(pending.messages.len(), 1, "b's mail is found under B");
    // A send reaches the renamed mailbox, never a new `b/` beside it.
    mine.send(&addr("a@proj"), draft("b@proj", "second"))
        .expect("send to b");
    assert!(!boxes.join("b").exists(), "no second spelling was created");
    assert_eq!(mine.peek(&addr("b@proj")).expect("peek").messages.len(), 2);
}

/// A roster entry doubled by hand in another case is listed once, as the first spelling in
/// byte order, the one a lookup of the handle finds.
#[test]
fn a_roster_entry_doubled_by_hand_is_listed_once() {
    let home = Home::new();
    send(&home, "a@proj", "bob@proj", "hi");
    let roster = home.path().join("projects/proj/roster");
    std::fs::copy(roster.join("bob.md"), roster.join("Bob.md")).expect("copy the entry");
    let project = Name::parse("proj").expect("a name");
    let members = home.ops().roster(&project).expect("roster");
    let handles: Vec<&str> = members.iter().map(|m| m.handle.as_str()).collect();
    assert_eq!(handles, ["a", "Bob"], "one entry per handle");
}

/// One store sends again after its mailbox and project directories were moved, removed or
/// replaced by hand between sends: the directories it keeps open are never trusted past that.
#[test]
fn a_directory_moved_by_hand_between_sends_is_noticed() {
    let home = Home::new();
    let m = home.ops();
    let count = |dir: &Path| std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);

    let first = send(&home, "alice@web", "bob@web", "first");
    let bx = home.mailbox("bob@web");
    assert_eq!(copies(&home, "bob@web", first.id), 1);

    // The mailbox renamed away: the next copy goes to a new mailbox at its path.
    let moved = bx.with_file_name("bob-old");
    std::fs::rename(&bx, &moved).expect("move the mailbox");
    let second = send(&home, "alice@web", "bob@web", "second");
    assert_eq!(copies(&home, "bob@web", second.id), 1, "a new mailbox");
    assert_eq!(
        count(&moved.join("unread")),
        1,
        "the moved one keeps only its own copy"
    );

    // The mailbox replaced by a symlink: refused, nothing written through it.
    std::fs::remove_dir_all(&bx).expect("remove the mailbox");
    let outside = home.outside();
    symlink(&outside, &bx).expect("plant the symlink");
    let e = m
        .send(&addr("alice@web"), draft("bob@web", "third"))
        .expect_err("a send through a symlink is refused");
    assert_eq!(e.kind(), ErrorKind::Store, "{e}");
    assert_eq!(count(&outside), 0, "nothing written through the link");
    std::fs::remove_file(&bx).expect("remove the symlink");

    // The whole project renamed away: the sender's mailbox and the recipient's are made anew
    // at their paths, and the moved project gets nothing.
    let project = home.path().join("projects").join("web");
    let old_project = home.path().join("projects").join("web-old");
    let old_outbox = old_project.join("boxes").join("alice").join("outbox");
    std::fs::rename(&project, &old_project).expect("move the project");
    let traces = count(&old_outbox);
    assert_eq!(traces, 2, "the first two sends left their traces");
    let fourth = send(&home, "alice@web", "bob@web", "fourth");
    assert_eq!(copies(&home, "bob@web", fourth.id), 1);
    assert!(
        home.mailbox("alice@web")
            .join("outbox")
            .join(format!("{}.md", fourth.id))
            .exists(),
        "the trace is in the sender's new outbox"
    );
    assert_eq!(count(&old_outbox), traces, "the moved project gets nothing");
}
