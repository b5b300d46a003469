//! Stories of channels as their members live them: broadcasts delivered once per member and
//! never to their sender, retraction as un-send, run channels read once and shown whole, hold
//! requests that reach the operator, and `mailbox.md` round trips that duplicate nothing.

use jiff::Timestamp;
use mailroom_core::interchange::{Disposition, IdKey};
use mailroom_core::message::{BROADCAST, ChannelRef};
use mailroom_core::ops::{Draft, EditPatch};
use mailroom_core::{Error, ErrorKind, Kind, Mailroom, Message, MessageId, Priority, State, Store};

use crate::kit::{addr, err, mailroom, name, now, pending, send, state};

/// Posts `body` as `from` to `channel` of `from`'s project.
fn post(m: &Mailroom<'_>, from: &str, channel: &str, kind: Kind, body: &str) -> Message {
    let me = addr(from);
    let project = me.project().expect("a project member").clone();
    m.post(
        &me,
        &project,
        channel,
        Draft {
            body: body.to_owned(),
            kind,
            ..Draft::default()
        },
    )
    .expect("the post succeeds")
    .message
}

/// Posts `body` as `from` to the broadcast channel of `from`'s project.
pub(crate) fn broadcast(m: &Mailroom<'_>, from: &str, body: &str) -> Message {
    post(m, from, BROADCAST, Kind::Info, body)
}

fn channel(project: &str, channel: &str) -> ChannelRef {
    ChannelRef {
        project: name(project),
        name: name(channel),
    }
}

/// The ids `who`'s inbox shows now (marking them read or seen).
fn inbox_ids(m: &Mailroom<'_>, who: &str) -> Vec<MessageId> {
    m.inbox(&addr(who), None)
        .expect("inbox")
        .messages
        .iter()
        .map(|s| s.message.id)
        .collect()
}

fn read_ids(m: &Mailroom<'_>, who: &str, name: &str) -> Vec<MessageId> {
    let me = addr(who);
    let project = me.project().expect("a project member").clone();
    m.channel_read(&me, &project, name, None)
        .expect("channel read")
        .messages
        .iter()
        .map(|s| s.message.id)
        .collect()
}

fn show(m: &Mailroom<'_>, who: &str, name: &str) -> Vec<(MessageId, State)> {
    let me = addr(who);
    let project = me.project().expect("a project member").clone();
    m.channel_show(&me, &project, name)
        .expect("channel show")
        .1
        .messages
        .iter()
        .map(|s| (s.message.id, s.state))
        .collect()
}

fn retract(m: &Mailroom<'_>, who: &str, id: MessageId) -> mailroom_core::Result<Message> {
    let me = addr(who);
    let project = me.project().expect("a project member").clone();
    m.retract(&me, &project, &id.to_string())
}

/// A channel entry built by hand with an id minted at `at`, for appending through the store.
fn entry_at(from: &str, ch: &ChannelRef, at: &str, body: &str) -> Message {
    let date: Timestamp = at.parse().expect("RFC 3339");
    let id = MessageId::derived(date, mailroom_core::interchange::stable_hash(&[body]));
    Message {
        id,
        from: addr(from),
        to: vec![],
        subject: body.to_owned(),
        body: body.to_owned(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date,
        reply_to: None,
        thread: id,
        revision: 1,
        edited: None,
        channel: Some(ch.clone()),
    }
}

pub fn broadcast_is_shown_once_to_each_member_and_never_to_its_sender(store: &dyn Store) {
    let m = mailroom(store);
    let directed = send(&m, "carol@web", &["bob@web"], "directed first");
    let b = broadcast(&m, "alice@web", "the spec changed");
    assert_eq!(b.to, vec![], "a broadcast has no recipients of its own");
    assert_eq!(b.channel, Some(channel("web", BROADCAST)));

    assert_eq!(inbox_ids(&m, "alice@web"), vec![], "never to its sender");
    let bob = m.inbox(&addr("bob@web"), None).expect("inbox");
    let shown: Vec<_> = bob
        .messages
        .iter()
        .map(|s| (s.message.id, s.state, s.message.channel.is_some()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (directed.id, State::Unread, false),
            (b.id, State::Unread, true),
        ],
        "directed mail first, then the broadcast, labelled by its channel"
    );
    assert_eq!(
        inbox_ids(&m, "bob@web"),
        vec![directed.id],
        "the broadcast is shown once; directed mail stays pending"
    );
    assert_eq!(inbox_ids(&m, "carol@web"), vec![b.id]);
    assert_eq!(inbox_ids(&m, "carol@web"), vec![]);
    assert_eq!(
        inbox_ids(&m, "dave@api"),
        vec![],
        "another project's members do not get it"
    );
    assert_eq!(
        pending(store, "bob@web"),
        vec![(directed.id, State::Read)],
        "a broadcast never lands in a mailbox"
    );
}

pub fn peek_shows_unseen_broadcasts_without_marking_them(store: &dyn Store) {
    let m = mailroom(store);
    let b = broadcast(&m, "alice@web", "news");
    for _ in 0..2 {
        let ids: Vec<_> = m
            .peek(&addr("bob@web"))
            .expect("peek")
            .messages
            .iter()
            .map(|s| s.message.id)
            .collect();
        assert_eq!(ids, vec![b.id]);
    }
    assert_eq!(inbox_ids(&m, "bob@web"), vec![b.id]);
    assert!(m.peek(&addr("bob@web")).expect("peek").messages.is_empty());
}

pub fn inbox_limit_counts_broadcasts_and_leaves_them_unseen(store: &dyn Store) {
    let m = mailroom(store);
    let directed = send(&m, "carol@web", &["bob@web"], "directed");
    let b = broadcast(&m, "alice@web", "news");
    let first = m.inbox(&addr("bob@web"), Some(1)).expect("inbox");
    assert_eq!(first.messages.len(), 1);
    assert_eq!(first.messages[0].message.id, directed.id);
    assert_eq!(first.more, 1, "the broadcast left out by the limit");
    assert_eq!(
        inbox_ids(&m, "bob@web"),
        vec![directed.id, b.id],
        "left out is still unseen"
    );
}

pub fn a_late_joiner_gets_the_standing_broadcasts_but_not_retracted_ones(store: &dyn Store) {
    let m = mailroom(store);
    let kept = broadcast(&m, "alice@web", "standing news");
    let gone = broadcast(&m, "alice@web", "no longer true");
    assert_eq!(inbox_ids(&m, "bob@web"), vec![kept.id, gone.id]);
    retract(&m, "alice@web", gone.id).expect("retract");
    let later = broadcast(&m, "bob@web", "after the retract");

    assert_eq!(
        inbox_ids(&m, "newcomer@web"),
        vec![kept.id, later.id],
        "the standing backlog, oldest first, without the retracted one"
    );
    assert_eq!(inbox_ids(&m, "newcomer@web"), vec![]);
    assert_eq!(
        inbox_ids(&m, "bob@web"),
        vec![],
        "bob saw both before, and never gets his own"
    );
}

pub fn retract_unsends_for_those_who_have_not_seen_it(store: &dyn Store) {
    let m = mailroom(store);
    let b = broadcast(&m, "alice@web", "oops");
    assert_eq!(inbox_ids(&m, "bob@web"), vec![b.id], "bob sees it first");
    let retracted = retract(&m, "alice@web", b.id).expect("retract");
    assert_eq!(retracted.id, b.id);

    assert_eq!(inbox_ids(&m, "carol@web"), vec![], "nobody new gets it");
    assert!(read_ids(&m, "carol@web", BROADCAST).is_empty());
    assert_eq!(
        show(&m, "bob@web", BROADCAST),
        vec![(b.id, State::Retracted)],
        "who saw it keeps it, marked retracted"
    );
    assert_eq!(
        show(&m, "alice@web", BROADCAST),
        vec![(b.id, State::Retracted)],
        "its sender still sees what it retracted"
    );
    assert_eq!(show(&m, "carol@web", BROADCAST), vec![]);
    let all = channel("web", BROADCAST);
    assert!(
        store
            .entries(&all, false)
            .expect("entries")
            .messages
            .is_empty()
    );
    let with_retracted = store.entries(&all, true).expect("entries");
    assert_eq!(with_retracted.messages.len(), 1, "kept, never deleted");
    assert_eq!(with_retracted.messages[0].state, State::Retracted);
    // The same entry appended again (a keyed retry of the post, an export run twice) is not
    // published again: a retracted id stays retracted.
    assert!(!store.append(&all, &b).expect("append again"));
    assert!(
        store
            .entries(&all, false)
            .expect("entries")
            .messages
            .is_empty(),
        "a retracted broadcast does not come back"
    );
    assert_eq!(inbox_ids(&m, "carol@web"), vec![]);
}

pub fn retract_of_what_is_not_ones_own_standing_broadcast_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let alices = broadcast(&m, "alice@web", "alice's news");
    let retracted = broadcast(&m, "alice@web", "retracted already");
    retract(&m, "alice@web", retracted.id).expect("the first retract");
    let run_entry = post(&m, "alice@web", "run-42", Kind::Info, "a run entry");
    let directed = send(&m, "alice@web", &["bob@web"], "directed mail");
    let unknown = MessageId::generate();

    let cases: [(&str, &str, MessageId, ErrorKind); 5] = [
        (
            "another's broadcast",
            "bob@web",
            alices.id,
            ErrorKind::Refused,
        ),
        ("an unknown id", "alice@web", unknown, ErrorKind::NotFound),
        (
            "a retracted one",
            "alice@web",
            retracted.id,
            ErrorKind::Refused,
        ),
        (
            "a run channel entry",
            "alice@web",
            run_entry.id,
            ErrorKind::Refused,
        ),
        (
            "directed mail",
            "alice@web",
            directed.id,
            ErrorKind::Refused,
        ),
    ];
    for (what, who, id, kind) in cases {
        let before = store
            .entries(&channel("web", BROADCAST), true)
            .expect("entries");
        let e = err(retract(&m, who, id));
        assert_eq!(e.kind(), kind, "retract of {what}: {e}");
        assert!(!e.to_string().is_empty());
        let after = store
            .entries(&channel("web", BROADCAST), true)
            .expect("entries");
        assert_eq!(before, after, "retract of {what} changed the channel");
    }
    assert!(
        matches!(
            err(retract(&m, "bob@web", alices.id)),
            Error::NotSender { id, .. } if id == alices.id
        ),
        "another's broadcast names its sender"
    );
    assert_eq!(
        inbox_ids(&m, "bob@web"),
        vec![directed.id, alices.id],
        "alice's broadcast still stands"
    );
    assert_eq!(
        store
            .entries(&channel("web", "run-42"), false)
            .expect("entries")
            .messages
            .len(),
        1
    );
}

pub fn channel_read_shows_the_unseen_once_and_show_shows_everything(store: &dyn Store) {
    let m = mailroom(store);
    let a = post(&m, "alice@web", "run-42", Kind::Info, "first");
    let b = post(&m, "alice@web", "run-42", Kind::InterfaceChange, "second");

    assert_eq!(read_ids(&m, "bob@web", "run-42"), vec![a.id, b.id]);
    assert_eq!(read_ids(&m, "bob@web", "run-42"), vec![], "marked seen");
    let c = post(&m, "carol@web", "run-42", Kind::Info, "third");
    assert_eq!(read_ids(&m, "bob@web", "run-42"), vec![c.id]);
    assert_eq!(
        read_ids(&m, "alice@web", "run-42"),
        vec![c.id],
        "not its own"
    );

    assert_eq!(
        show(&m, "bob@web", "run-42"),
        vec![
            (a.id, State::Read),
            (b.id, State::Read),
            (c.id, State::Read)
        ]
    );
    assert_eq!(
        show(&m, "dave@web", "run-42"),
        vec![
            (a.id, State::Unread),
            (b.id, State::Unread),
            (c.id, State::Unread)
        ],
        "show changes nothing"
    );
    assert_eq!(read_ids(&m, "dave@web", "run-42"), vec![a.id, b.id, c.id]);
    assert_eq!(
        inbox_ids(&m, "dave@web"),
        vec![],
        "a run channel is not in the inbox"
    );
}

pub fn channel_read_with_a_limit_leaves_the_rest_for_the_next_read(store: &dyn Store) {
    let m = mailroom(store);
    let ids: Vec<_> = (0..3)
        .map(|i| post(&m, "alice@web", "run-42", Kind::Info, &format!("entry {i}")).id)
        .collect();
    let me = addr("bob@web");
    let first = m
        .channel_read(&me, &name("web"), "run-42", Some(2))
        .expect("read");
    let shown: Vec<_> = first.messages.iter().map(|s| s.message.id).collect();
    assert_eq!(shown, ids[..2]);
    assert_eq!(first.more, 1);
    assert_eq!(read_ids(&m, "bob@web", "run-42"), ids[2..]);
}

pub fn channel_list_counts_entries_and_what_the_reader_has_not_seen(store: &dyn Store) {
    let m = mailroom(store);
    broadcast(&m, "alice@web", "news");
    post(&m, "alice@web", "run-42", Kind::Info, "one");
    post(&m, "alice@web", "run-42", Kind::Info, "two");
    post(&m, "alice@api", "elsewhere", Kind::Info, "other project");
    read_ids(&m, "bob@web", "run-42");
    let list: Vec<(String, usize, usize)> = m
        .channel_list(&addr("bob@web"), &name("web"))
        .expect("list")
        .iter()
        .map(|c| (c.channel.name.to_string(), c.entries, c.unseen))
        .collect();
    assert_eq!(
        list,
        vec![("all".into(), 1, 1), ("run-42".into(), 2, 0)],
        "sorted by name, this project only"
    );
}

pub fn entries_appended_out_of_time_order_are_each_shown_once(store: &dyn Store) {
    let m = mailroom(store);
    let run = channel("web", "run-42");
    let all = channel("web", BROADCAST);
    for ch in [&run, &all] {
        let newer = entry_at("alice@web", ch, "2026-03-13T14:00:00Z", "newer clock");
        let older = entry_at("carol@web", ch, "2026-03-13T09:00:00Z", "skewed clock");
        let oldest = entry_at("carol@web", ch, "2020-01-01T00:00:00Z", "very skewed");
        assert!(store.append(ch, &newer).expect("append"));
        let first = if ch.is_broadcast() {
            inbox_ids(&m, "bob@web")
        } else {
            read_ids(&m, "bob@web", "run-42")
        };
        assert_eq!(first, vec![newer.id], "{ch}");
        // Appended after bob read, with ids older than what he has seen.
        assert!(store.append(ch, &older).expect("append"));
        assert!(store.append(ch, &oldest).expect("append"));
        let read = |m: &Mailroom<'_>| {
            if ch.is_broadcast() {
                inbox_ids(m, "bob@web")
            } else {
                read_ids(m, "bob@web", "run-42")
            }
        };
        assert_eq!(read(&m), vec![oldest.id, older.id], "{ch}: late but shown");
        assert_eq!(read(&m), vec![], "{ch}: each once");
        assert_eq!(
            show(&m, "bob@web", ch.name.as_str()),
            vec![
                (oldest.id, State::Read),
                (older.id, State::Read),
                (newer.id, State::Read)
            ],
            "{ch}: listed by id"
        );
    }
}

/// Edits and cancels every way of `who` against a run entry and a broadcast; each must be
/// refused and change nothing.
fn edits_and_cancels_are_refused(store: &dyn Store, who: &str) {
    let m = mailroom(store);
    let entry = post(&m, "alice@web", "run-42", Kind::Info, "a run entry");
    let b = broadcast(&m, "alice@web", "a broadcast");
    let me = addr(who);
    for (what, id) in [("run entry", entry.id), ("broadcast", b.id)] {
        let p = id.to_string();
        let patch = EditPatch {
            body: Some("changed".into()),
            ..EditPatch::default()
        };
        for (action, e) in [
            ("edit", err(m.edit(&me, &p, patch))),
            ("cancel", err(m.cancel(&me, &p))),
        ] {
            assert_eq!(
                e.kind(),
                ErrorKind::Refused,
                "{action} of a {what} by {who}: {e}"
            );
        }
    }
    let bodies: Vec<String> = ["run-42", BROADCAST]
        .iter()
        .flat_map(|c| {
            store
                .entries(&channel("web", c), true)
                .expect("entries")
                .messages
        })
        .map(|s| s.message.body)
        .collect();
    assert_eq!(bodies, vec!["a run entry", "a broadcast"]);
    assert_eq!(pending(store, "bob@web"), vec![], "no correction was sent");
}

pub fn channel_entries_are_never_edited_or_cancelled_by_their_sender(store: &dyn Store) {
    edits_and_cancels_are_refused(store, "alice@web");
}

pub fn edit_or_cancel_of_anothers_channel_entry_is_refused_not_unknown(store: &dyn Store) {
    edits_and_cancels_are_refused(store, "bob@web");
}

pub fn done_of_a_channel_entry_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    let b = broadcast(&m, "alice@web", "news");
    let entry = post(&m, "alice@web", "run-42", Kind::Info, "entry");
    inbox_ids(&m, "bob@web");
    for id in [b.id, entry.id] {
        let e = err(m.done(&addr("bob@web"), &[id.to_string()]));
        assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
        assert!(e.to_string().contains("no done step"), "{e}");
    }
}

pub fn a_hold_request_sent_or_posted_reaches_human_and_comes_first(store: &dyn Store) {
    let m = mailroom(store);
    let info = send(&m, "carol@web", &["HUMAN"], "just so you know");
    let urgent = m
        .send(
            &addr("carol@web"),
            Draft {
                to: vec!["HUMAN".into()],
                body: "high priority info".into(),
                priority: Priority::High,
                ..Draft::default()
            },
        )
        .expect("send")
        .message;
    let directed = m
        .send(
            &addr("alice@web"),
            Draft {
                to: vec!["bob@web".into()],
                body: "may I drop the table?".into(),
                kind: Kind::HoldRequest,
                priority: Priority::Low,
                ..Draft::default()
            },
        )
        .expect("send");
    assert!(
        directed.notices.iter().any(|n| n.contains("HUMAN")),
        "{:?}",
        directed.notices
    );
    let posted = post(&m, "dave@api", "run-7", Kind::HoldRequest, "which schema?");

    assert_eq!(
        state(store, "bob@web", directed.message.id),
        Some(State::Unread)
    );
    let human = m.inbox(&addr("HUMAN"), None).expect("inbox");
    let shown: Vec<_> = human
        .messages
        .iter()
        .map(|s| (s.message.id, s.message.kind))
        .collect();
    assert_eq!(
        shown,
        vec![
            (posted.id, Kind::HoldRequest),
            (directed.message.id, Kind::HoldRequest),
            (urgent.id, Kind::Info),
            (info.id, Kind::Info),
        ],
        "open hold requests first (by priority among them), whatever their priority"
    );
    let copy = &human.messages[0].message;
    assert_eq!(copy.from, addr("dave@api"));
    assert_eq!(
        read_ids(&m, "erin@api", "run-7"),
        vec![posted.id],
        "the channel keeps its entry too"
    );
}

pub fn humans_answer_to_a_hold_request_reaches_the_requester_and_closes_it(store: &dyn Store) {
    let m = mailroom(store);
    let directed = m
        .send(
            &addr("alice@web"),
            Draft {
                to: vec!["bob@web".into()],
                body: "may I drop the table?".into(),
                kind: Kind::HoldRequest,
                ..Draft::default()
            },
        )
        .expect("send")
        .message;
    let posted = post(&m, "dave@api", "run-7", Kind::HoldRequest, "which schema?");
    for (request, requester) in [(&directed, "alice@web"), (&posted, "dave@api")] {
        let (reply, closed) = m
            .reply(
                &addr("HUMAN"),
                &request.id.to_string(),
                Draft {
                    body: "go ahead".into(),
                    ..Draft::default()
                },
                false,
            )
            .expect("reply");
        assert!(closed, "HUMAN's copy is closed by the answer");
        assert_eq!(reply.message.to, vec![addr(requester)]);
        assert_eq!(reply.message.reply_to, Some(request.id));
        assert_eq!(state(store, "HUMAN", request.id), Some(State::Done));
        assert_eq!(
            pending(store, requester),
            vec![(reply.message.id, State::Unread)],
            "the requester gets the answer"
        );
    }
    assert_eq!(
        state(store, "bob@web", directed.id),
        Some(State::Unread),
        "the directed recipient's own copy is its own business"
    );
    assert!(m.peek(&addr("HUMAN")).expect("peek").messages.is_empty());
}

pub fn another_agents_answer_to_a_hold_request_leaves_humans_copy_open(store: &dyn Store) {
    let m = mailroom(store);
    let directed = m
        .send(
            &addr("alice@web"),
            Draft {
                to: vec!["bob@web".into()],
                body: "may I drop the table?".into(),
                kind: Kind::HoldRequest,
                ..Draft::default()
            },
        )
        .expect("send")
        .message;
    let posted = post(&m, "dave@web", "run-7", Kind::HoldRequest, "which schema?");
    let broadcast = post(&m, "dave@web", BROADCAST, Kind::HoldRequest, "drop prod?");
    m.inbox(&addr("HUMAN"), None).expect("HUMAN reads them");
    for (request, keep_open) in [(&directed, false), (&posted, false), (&broadcast, true)] {
        m.reply(
            &addr("bob@web"),
            &request.id.to_string(),
            Draft {
                body: "sure".into(),
                ..Draft::default()
            },
            keep_open,
        )
        .expect("reply");
        assert_eq!(
            state(store, "HUMAN", request.id),
            Some(State::Read),
            "an agent's answer is no permission: the operator's copy stays open"
        );
    }
    assert_eq!(
        state(store, "bob@web", directed.id),
        Some(State::Done),
        "the replier's own copy is closed"
    );
    assert_eq!(m.peek(&addr("HUMAN")).expect("peek").messages.len(), 3);
}

pub fn search_finds_broadcasts_and_channel_entries(store: &dyn Store) {
    let m = mailroom(store);
    let b = broadcast(&m, "alice@web", "Migration window on Friday");
    let entry = post(&m, "alice@web", "run-42", Kind::Info, "migration plan v2");
    let gone = broadcast(&m, "alice@web", "migration cancelled");
    retract(&m, "alice@web", gone.id).expect("retract");
    post(&m, "alice@api", "run-1", Kind::Info, "migration elsewhere");
    let hits: Vec<_> = m
        .search(&addr("bob@web"), "MIGRATION")
        .expect("search")
        .hits
        .iter()
        .map(|h| h.stored.message.id)
        .collect();
    assert_eq!(
        hits,
        vec![b.id, entry.id],
        "this project's standing entries, oldest first"
    );
    let mine: Vec<_> = m
        .search(&addr("alice@web"), "migration")
        .expect("search")
        .hits
        .iter()
        .map(|h| h.stored.message.id)
        .collect();
    assert!(
        mine.contains(&b.id) && mine.contains(&entry.id),
        "its sender finds them too: {mine:?}"
    );
    let mut dedup = mine.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), mine.len(), "each hit once: {mine:?}");
}

pub fn export_then_import_into_the_same_channel_duplicates_nothing(store: &dyn Store) {
    let m = mailroom(store);
    post(
        &m,
        "alice@web",
        "run-42",
        Kind::Info,
        "Line one\n\nline three",
    );
    post(
        &m,
        "bob@web",
        "run-42",
        Kind::HoldRequest,
        "Which schema?\n---\nnot a separator",
    );
    m.post(
        &addr("carol@api"),
        &name("web"),
        "run-42",
        Draft {
            body: "renamed, from another project".into(),
            kind: Kind::InterfaceChange,
            ..Draft::default()
        },
    )
    .expect("a post from another project");
    let text = m
        .export_channel(&addr("x@web"), &name("web"), "run-42")
        .expect("export");
    assert!(text.contains("**From:** carol@api\n"), "{text}");
    let report = m
        .import_channel(Some(&addr("bob@web")), &name("web"), "run-42", &text, now())
        .expect("import");
    assert_eq!(
        (report.imported, report.duplicates, report.problems),
        (0, 3, vec![])
    );
    assert_eq!(
        m.export_channel(&addr("x@web"), &name("web"), "run-42")
            .expect("export"),
        text,
        "the channel is unchanged"
    );

    let copy = m
        .import_channel(Some(&addr("bob@web")), &name("web"), "copy", &text, now())
        .expect("import into another channel");
    assert_eq!((copy.imported, copy.duplicates), (3, 0));
    assert_eq!(
        m.export_channel(&addr("x@web"), &name("web"), "copy")
            .expect("export"),
        text,
        "export → import → export is the identity"
    );
}

pub fn importing_a_mailbox_md_twice_duplicates_nothing(store: &dyn Store) {
    let m = mailroom(store);
    let text = "# run 42\n\n---\n**Timestamp:** 2026-03-13 14:22 UTC\n**From:** builder\n**Type:** INTERFACE_CHANGE\n**Subject:** Renamed calc_stats\n\nBody one.\n---\n**Timestamp:** not a time\n**From:** planner\n**Type:** HOLD_REQUEST\n**Subject:** Undefined symbol\n\nIs it (a) or (b)?\n---\n**Timestamp:** 2026-03-13 15:00 UTC\n**Type:** INFO\n**Subject:** nobody wrote this\n";
    let first = m
        .import_channel(Some(&addr("bob@web")), &name("web"), "run-42", text, now())
        .expect("import");
    assert_eq!((first.imported, first.duplicates), (2, 0));
    let lines: Vec<usize> = first.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![11, 17], "the bad time and the missing sender");
    let second = m
        .import_channel(Some(&addr("bob@web")), &name("web"), "run-42", text, now())
        .expect("import");
    assert_eq!((second.imported, second.duplicates), (0, 2));
    assert_eq!(second.problems, first.problems, "reported again");
    let entries = store
        .entries(&channel("web", "run-42"), true)
        .expect("entries")
        .messages;
    let got: Vec<_> = entries
        .iter()
        .map(|s| (s.message.from.to_string(), s.message.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("builder@web".to_owned(), Kind::InterfaceChange),
            ("planner@web".to_owned(), Kind::HoldRequest),
        ]
    );
}

pub fn store_channel_contract_appends_once_and_marks_seen_once(store: &dyn Store) {
    let ch = channel("web", "run-42");
    let reader = name("bob");
    let e1 = entry_at("alice@web", &ch, "2026-03-13T14:00:00Z", "one");
    let e2 = entry_at("alice@web", &ch, "2026-03-13T13:00:00Z", "two");
    assert!(store.append(&ch, &e1).expect("append"));
    assert!(
        !store
            .append(
                &ch,
                &Message {
                    body: "another body, same id".into(),
                    ..e1.clone()
                }
            )
            .expect("append")
    );
    assert!(store.append(&ch, &e2).expect("append"));
    let listed: Vec<_> = store
        .entries(&ch, false)
        .expect("entries")
        .messages
        .iter()
        .map(|s| (s.message.id, s.message.body.clone(), s.state))
        .collect();
    assert_eq!(
        listed,
        vec![
            (e2.id, "two".to_owned(), State::Unread),
            (e1.id, "one".to_owned(), State::Unread)
        ],
        "oldest by id first; the first copy of an id kept"
    );
    assert_eq!(
        store
            .mark_seen(&ch, &reader, &[e1.id, e1.id])
            .expect("mark"),
        vec![true, false]
    );
    assert_eq!(
        store.mark_seen(&ch, &reader, &[]).expect("mark"),
        Vec::<bool>::new()
    );
    assert_eq!(store.seen(&ch, &reader).expect("seen"), vec![e1.id]);
    let unseen: Vec<_> = store
        .unseen(&ch, &reader)
        .expect("unseen")
        .messages
        .iter()
        .map(|s| s.message.id)
        .collect();
    assert_eq!(unseen, vec![e2.id]);
    assert!(store.retract(&ch, e2.id).expect("retract"));
    assert!(!store.retract(&ch, e2.id).expect("retract twice"));
    assert!(
        !store
            .retract(&ch, MessageId::generate())
            .expect("retract unknown")
    );
    assert!(
        store
            .unseen(&ch, &reader)
            .expect("unseen")
            .messages
            .is_empty()
    );
    assert_eq!(
        store
            .unseen(&ch, &name("carol"))
            .expect("unseen")
            .messages
            .len(),
        1
    );
    assert_eq!(
        store.channels(&name("web")).expect("channels"),
        vec![name("run-42")]
    );
    assert_eq!(store.channels(&name("nowhere")).expect("channels"), vec![]);
    let missing = channel("web", "missing");
    assert!(
        store
            .entries(&missing, true)
            .expect("entries")
            .messages
            .is_empty()
    );
    assert!(store.seen(&missing, &reader).expect("seen").is_empty());
    assert!(!store.retract(&missing, e1.id).expect("retract"));
}

/// Regression: an import killed between delivering and archiving (or between appending and
/// retracting) left the copy unread (or the broadcast live), and importing again skipped it.
pub fn a_re_import_finishes_what_an_interrupted_import_left(store: &dyn Store) {
    let m = mailroom(store);
    let project = name("web");
    let bob = addr("bob@web");
    let record = mailroom_core::ops::Foreign {
        id_key: IdKey::Place("test:archived".into()),
        disposition: Disposition::Archived,
        from: "alice".into(),
        to: Some("bob".into()),
        subject: "old".into(),
        body: "archived at the source".into(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date: now(),
        line: 1,
    };
    let message = m
        .foreign_message(&record, Some(&project), vec![bob.clone()], None)
        .expect("a message");
    // The interrupted first import got as far as delivering it.
    m.import_mail(&bob, &message, State::Unread)
        .expect("deliver");
    assert!(
        !m.import_mail(&bob, &message, State::Done)
            .expect("re-import")
    );
    assert_eq!(state(store, "bob@web", message.id), Some(State::Done));
    // Nothing a person did is undone: a restored copy stays restored.
    m.restore(&bob, &message.id.to_string()).expect("restore");
    m.import_mail(&bob, &message, State::Done)
        .expect("re-import again");
    assert_eq!(state(store, "bob@web", message.id), Some(State::Read));

    let all = ChannelRef {
        project: project.clone(),
        name: name(BROADCAST),
    };
    let news = mailroom_core::ops::Foreign {
        id_key: IdKey::Place("test:retracted".into()),
        disposition: Disposition::Retracted,
        to: None,
        ..record
    };
    let entry = m
        .foreign_message(&news, Some(&project), vec![], Some(all.clone()))
        .expect("an entry");
    m.import_entry(&all, &entry, false)
        .expect("appended, not yet retracted");
    assert!(!m.import_entry(&all, &entry, true).expect("re-import"));
    let states: Vec<State> = store
        .entries(&all, true)
        .expect("entries")
        .messages
        .iter()
        .map(|s| s.state)
        .collect();
    assert_eq!(states, vec![State::Retracted]);
}
