//! Stories of who can be written to: projects and their policies, rosters, member status, and
//! what a bare handle means from where.

use mailroom_core::ops::Draft;
use mailroom_core::{Address, Error, ErrorKind, MemberStatus, Policy, State, Store};

use crate::kit::{addr, draft, err, mailroom, name, now, pending, send};

fn join(m: &mailroom_core::Mailroom<'_>, project: &str, handle: &str) {
    m.add_member(
        &Address::human(),
        &name(project),
        handle,
        "",
        MemberStatus::Active,
    )
    .expect("add member");
}

pub fn send_to_an_inactive_member_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    join(&m, "web", "bob");
    let member = m
        .set_member_status(
            &Address::human(),
            &name("web"),
            "bob",
            MemberStatus::Inactive,
        )
        .expect("deactivate");
    assert_eq!(member.status, MemberStatus::Inactive);

    let e = err(m.send(&addr("alice@web"), draft(&["bob"], "hello")));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(&e, Error::Inactive { address } if *address == addr("bob@web")),
        "{e:?}"
    );
    assert!(pending(store, "bob@web").is_empty());
    assert!(
        m.outbox(&addr("alice@web"), None)
            .expect("outbox")
            .is_empty()
    );

    m.set_member_status(&Address::human(), &name("web"), "bob", MemberStatus::Active)
        .expect("reactivate");
    let msg = send(&m, "alice@web", &["bob"], "hello again");
    assert_eq!(pending(store, "bob@web"), vec![(msg.id, State::Unread)]);
}

pub fn unknown_handle_in_a_roster_project_suggests_close_names(store: &dyn Store) {
    let m = mailroom(store);
    m.add_project("web", Policy::Roster).expect("add project");
    for h in ["alice", "bob", "carol"] {
        join(&m, "web", h);
    }
    for to in ["bbo", "bbo@web"] {
        let e = err(m.send(&addr("alice@web"), draft(&[to], "hello")));
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let Error::UnknownHandle {
            handle,
            project,
            suggestions,
        } = &e
        else {
            panic!("expected UnknownHandle, got {e:?}");
        };
        assert_eq!((handle.as_str(), project.as_str()), ("bbo", "web"));
        assert_eq!(suggestions.first().map(String::as_str), Some("bob"), "{e}");
        assert!(e.to_string().contains("did you mean 'bob'"), "{e}");
    }
    assert_eq!(m.roster(&name("web")).expect("roster").len(), 3);
    assert_eq!(
        store.member(&name("web"), &name("bbo")).expect("member"),
        None
    );
    assert!(pending(store, "bbo@web").is_empty());
}

pub fn sender_off_the_roster_or_inactive_is_refused(store: &dyn Store) {
    let m = mailroom(store);
    m.add_project("web", Policy::Roster).expect("add project");
    join(&m, "web", "bob");
    let e = err(m.send(&addr("mallory@web"), draft(&["bob"], "hello")));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert!(
        matches!(e.fix(), Some(mailroom_core::Fix::AskFor(_))),
        "the fix is to ask for a place on the roster: {e:?}"
    );
    assert!(pending(store, "bob@web").is_empty());
    assert_eq!(
        store
            .member(&name("web"), &name("mallory"))
            .expect("member"),
        None
    );
    m.set_member_status(
        &Address::human(),
        &name("web"),
        "bob",
        MemberStatus::Inactive,
    )
    .expect("deactivate");
    let e = err(m.send(&addr("bob@web"), draft(&["HUMAN"], "still here?")));
    assert_eq!(
        e.kind(),
        ErrorKind::Refused,
        "an inactive sender is refused"
    );
    assert!(pending(store, "HUMAN").is_empty());
}

pub fn open_project_creates_an_unknown_mailbox_with_a_notice(store: &dyn Store) {
    let m = mailroom(store);
    m.add_project("web", Policy::Open).expect("add project");
    join(&m, "web", "alice");
    let sent = m
        .send(&addr("alice@web"), draft(&["newbie"], "welcome"))
        .expect("send");
    assert_eq!(sent.message.to, vec![addr("newbie@web")]);
    assert!(
        sent.notices.iter().any(|n| n.contains("newbie@web")),
        "{:?}",
        sent.notices
    );
    let member = store
        .member(&name("web"), &name("newbie"))
        .expect("member")
        .expect("newbie joined");
    assert_eq!(member.status, MemberStatus::Active);
    assert_eq!(member.joined, now());
    assert_eq!(
        pending(store, "newbie@web"),
        vec![(sent.message.id, State::Unread)]
    );

    let again = m
        .send(&addr("alice@web"), draft(&["newbie"], "second"))
        .expect("send");
    assert!(again.notices.is_empty(), "{:?}", again.notices);
}

pub fn send_into_a_new_project_creates_it_open(store: &dyn Store) {
    let m = mailroom(store);
    let sent = m
        .send(&addr("alice@web"), draft(&["bob@api"], "hello"))
        .expect("send");
    assert!(
        sent.notices.iter().any(|n| n.contains("'api'")),
        "{:?}",
        sent.notices
    );
    let api = store.project(&name("api")).expect("project").expect("api");
    assert_eq!((api.policy, api.created), (Policy::Open, now()));
    let names: Vec<String> = m
        .projects()
        .expect("projects")
        .into_iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(names, ["api", "web"], "the sender's project exists too");
}

pub fn bare_handle_active_in_two_other_projects_is_ambiguous(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    join(&m, "api", "bob");
    join(&m, "db", "bob");
    let e = err(m.send(&addr("alice@web"), draft(&["bob"], "which one?")));
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let Error::AmbiguousHandle {
        name: n,
        candidates,
    } = &e
    else {
        panic!("expected AmbiguousHandle, got {e:?}");
    };
    assert_eq!(n, "bob");
    assert_eq!(candidates, &["bob@api", "bob@db"]);
    assert!(pending(store, "bob@api").is_empty());
    assert!(pending(store, "bob@db").is_empty());
    assert_eq!(
        store.member(&name("web"), &name("bob")).expect("member"),
        None
    );
}

pub fn bare_handle_prefers_the_current_project(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    join(&m, "web", "bob");
    join(&m, "api", "bob");
    join(&m, "db", "bob");
    let msg = send(&m, "alice@web", &["bob"], "local");
    assert_eq!(msg.to, vec![addr("bob@web")]);
    assert!(pending(store, "bob@api").is_empty());
}

pub fn bare_handle_skips_projects_where_it_is_inactive(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    join(&m, "api", "bob");
    m.add_member(
        &Address::human(),
        &name("db"),
        "bob",
        "",
        MemberStatus::Inactive,
    )
    .expect("add inactive");
    let msg = send(&m, "alice@web", &["bob"], "hello");
    assert_eq!(msg.to, vec![addr("bob@api")]);
}

pub fn cross_project_send_records_the_origin(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    join(&m, "api", "bob");
    let msg = send(&m, "alice@web", &["bob"], "from another project");
    assert_eq!(msg.to, vec![addr("bob@api")]);
    let copy = store
        .get(&addr("bob@api"), msg.id)
        .expect("get")
        .expect("bob's copy");
    assert_eq!(copy.message.from, addr("alice@web"), "handle@origin");
    let (reply, _) = m
        .reply(
            &addr("bob@api"),
            &msg.id.to_string(),
            draft(&[], "ok"),
            false,
        )
        .expect("reply");
    assert_eq!(reply.message.to, vec![addr("alice@web")]);
    assert_eq!(
        pending(store, "alice@web"),
        vec![(reply.message.id, State::Unread)]
    );
    assert_eq!(
        store.member(&name("api"), &name("alice")).expect("member"),
        None,
        "writing across projects joins no roster"
    );
}

pub fn human_is_reachable_from_every_project(store: &dyn Store) {
    let m = mailroom(store);
    let a = send(&m, "alice@web", &["HUMAN"], "from web");
    let b = send(&m, "carol@api", &["HUMAN@api"], "from api");
    for msg in [&a, &b] {
        assert_eq!(msg.to, vec![addr("HUMAN")]);
    }
    let listing = m.peek(&addr("HUMAN")).expect("peek");
    let mut got: Vec<_> = listing
        .messages
        .iter()
        .map(|s| (s.message.id, s.message.from.to_string()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (a.id, "alice@web".to_owned()),
            (b.id, "carol@api".to_owned())
        ]
    );
    let (reply, _) = m
        .reply(
            &addr("HUMAN"),
            &a.id.to_string(),
            draft(&[], "go ahead"),
            false,
        )
        .expect("the operator replies");
    assert_eq!(reply.message.from, addr("HUMAN"));
    assert_eq!(reply.message.to, vec![addr("alice@web")]);
}

pub fn resolve_lists_every_candidate_in_order(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "bob");
    join(&m, "api", "bob");
    m.add_member(
        &Address::human(),
        &name("db"),
        "bob",
        "",
        MemberStatus::Inactive,
    )
    .expect("add inactive");

    let r = m.resolve(Some(&name("web")), "bob").expect("resolve");
    let found: Vec<String> = r.candidates.iter().map(|c| c.address.to_string()).collect();
    assert_eq!(found, ["bob@web", "bob@api"]);
    assert_eq!(
        r.chosen.map(|c| c.address),
        Some(addr("bob@web")),
        "the current project first"
    );

    let human = m.resolve(Some(&name("web")), "HUMAN").expect("resolve");
    assert_eq!(human.chosen.map(|c| c.address), Some(addr("HUMAN")));

    let fresh = m.resolve(Some(&name("web")), "newbie").expect("resolve");
    assert!(fresh.chosen.is_none());
    assert!(
        fresh
            .note
            .as_deref()
            .is_some_and(|n| n.contains("newbie@web")),
        "{fresh:?}"
    );
    assert_eq!(
        store.member(&name("web"), &name("newbie")).expect("member"),
        None,
        "resolving creates nothing"
    );

    let e = err(m.resolve(None, "../x"));
    assert_eq!(e.kind(), ErrorKind::Invalid);
}

pub fn malformed_and_reserved_names_are_invalid_and_change_nothing(store: &dyn Store) {
    let m = mailroom(store);
    join(&m, "web", "alice");
    let long = "x".repeat(65);
    for to in [
        "../x", "a/b", "", "_x", &long, "a\nb", "a b", "bob@_p", "bob@../x", "bob@", ".hidden",
    ] {
        let e = err(m.send(&addr("alice@web"), draft(&[to], "hello")));
        assert_eq!(e.kind(), ErrorKind::Invalid, "to {to:?}");
        assert!(
            matches!(e, Error::InvalidAddress { .. }),
            "to {to:?}: {e:?}"
        );
    }
    for p in ["_x", "a/b", "", "..", &long] {
        let e = err(m.add_project(p, Policy::Open));
        assert!(
            matches!(e, Error::InvalidName { .. }),
            "project {p:?}: {e:?}"
        );
    }
    for h in ["_x", "a/b", ""] {
        let e = err(m.add_member(&Address::human(), &name("web"), h, "", MemberStatus::Active));
        assert!(
            matches!(e, Error::InvalidName { .. }),
            "handle {h:?}: {e:?}"
        );
    }
    let e = err(m.add_member(
        &Address::human(),
        &name("web"),
        "HUMAN",
        "",
        MemberStatus::Active,
    ));
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = err(m.set_policy(&Address::human(), "../x", Policy::Roster));
    assert_eq!(e.kind(), ErrorKind::Invalid);

    let projects: Vec<String> = m
        .projects()
        .expect("projects")
        .into_iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(projects, ["web"]);
    let roster: Vec<String> = m
        .roster(&name("web"))
        .expect("roster")
        .into_iter()
        .map(|mb| mb.handle.to_string())
        .collect();
    assert_eq!(roster, ["alice"]);
    assert!(
        m.outbox(&addr("alice@web"), None)
            .expect("outbox")
            .is_empty()
    );
}

pub fn add_project_reports_creation_and_refuses_another_policy(store: &dyn Store) {
    let m = mailroom(store);
    let (p, created) = m.add_project("web", Policy::Roster).expect("add");
    assert!(created);
    assert_eq!(
        (p.name, p.policy, p.created),
        (name("web"), Policy::Roster, now())
    );
    let (_, created) = m.add_project("web", Policy::Roster).expect("add again");
    assert!(!created);
    let e = err(m.add_project("web", Policy::Open));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(
        store
            .project(&name("web"))
            .expect("project")
            .map(|p| p.policy),
        Some(Policy::Roster)
    );

    m.set_policy(&Address::human(), "web", Policy::Open)
        .expect("set policy");
    assert_eq!(
        store
            .project(&name("web"))
            .expect("project")
            .map(|p| p.policy),
        Some(Policy::Open)
    );
    let e = err(m.set_policy(&Address::human(), "nope", Policy::Open));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(matches!(e, Error::ProjectNotFound(_)), "{e:?}");
    assert_eq!(store.project(&name("nope")).expect("project"), None);
}

pub fn roster_is_sorted_and_refuses_duplicates(store: &dyn Store) {
    let m = mailroom(store);
    for (h, role) in [("carol", "qa"), ("alice", "backend"), ("bob", "front\nend")] {
        m.add_member(
            &Address::human(),
            &name("web"),
            h,
            role,
            MemberStatus::Active,
        )
        .expect("add");
    }
    let roster = m.roster(&name("web")).expect("roster");
    let got: Vec<(String, String)> = roster
        .iter()
        .map(|mb| (mb.handle.to_string(), mb.role.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("alice".to_owned(), "backend".to_owned()),
            ("bob".to_owned(), "front end".to_owned()),
            ("carol".to_owned(), "qa".to_owned()),
        ]
    );
    assert!(
        roster
            .iter()
            .all(|mb| mb.status == MemberStatus::Active && mb.joined == now())
    );

    let e = err(m.add_member(
        &Address::human(),
        &name("web"),
        "alice",
        "",
        MemberStatus::Active,
    ));
    assert_eq!(e.kind(), ErrorKind::Refused);

    let e = err(m.roster(&name("nope")));
    assert!(matches!(e, Error::ProjectNotFound(_)), "{e:?}");

    let e = err(m.set_member_status(
        &Address::human(),
        &name("web"),
        "alcie",
        MemberStatus::Inactive,
    ));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        matches!(&e, Error::UnknownHandle { suggestions, .. } if suggestions.first().map(String::as_str) == Some("alice")),
        "{e:?}"
    );
}

pub fn member_context_counts_pending_mail(store: &dyn Store) {
    let m = mailroom(store);
    m.add_member(
        &Address::human(),
        &name("web"),
        "bob",
        "backend",
        MemberStatus::Active,
    )
    .expect("add");
    send(&m, "alice@web", &["bob@web"], "one");
    m.inbox(&addr("bob@web"), None).expect("inbox");
    send(&m, "alice@web", &["bob@web"], "two");
    m.send(
        &addr("alice@web"),
        Draft {
            subject: Some("three".into()),
            ..draft(&["bob@web"], "")
        },
    )
    .expect("send with only a subject");
    let ctx = m.member_context(&addr("bob@web")).expect("context");
    assert_eq!(ctx.address, addr("bob@web"));
    assert_eq!(ctx.pending, Some((2, 1)));
    assert_eq!(ctx.member.map(|mb| mb.role), Some("backend".to_owned()));
    assert_eq!(ctx.project.map(|p| p.name), Some(name("web")));
    // Another member sees the roster's facts, not how much waits in the mailbox; HUMAN does.
    let seen = m
        .member_context_seen_by(Some(&addr("alice@web")), &addr("bob@web"))
        .expect("context seen by another");
    assert_eq!(seen.pending, None);
    assert_eq!(seen.member.map(|mb| mb.role), Some("backend".to_owned()));
    let operator = m
        .member_context_seen_by(Some(&Address::human()), &addr("bob@web"))
        .expect("context seen by HUMAN");
    assert_eq!(operator.pending, Some((2, 1)));
}

pub fn names_match_in_any_case_and_keep_the_first_spelling(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "Api@Shop", &["Web@Shop"], "first spelling");
    let project = store.project(&name("SHOP")).expect("project");
    assert_eq!(
        project.map(|p| p.name.to_string()),
        Some("Shop".into()),
        "a project is found in any case, under its first spelling"
    );
    let member = store.member(&name("shop"), &name("WEB")).expect("member");
    assert_eq!(member.map(|m| m.handle.to_string()), Some("Web".into()));
    let again = mailroom_core::Member {
        handle: name("web"),
        role: String::new(),
        status: MemberStatus::Active,
        joined: now(),
        since: None,
    };
    assert!(
        !store.add_member(&name("shop"), &again).expect("add"),
        "another spelling of a member is that member"
    );
    send(&m, "web@shop", &["API@SHOP"], "any spelling reaches it");
    let api = store.pending(&addr("api@shop")).expect("pending");
    assert_eq!(api.messages.len(), 1);
    assert_eq!(api.messages[0].message.to[0].to_string(), "Api@Shop");
    assert_eq!(store.roster(&name("shop")).expect("roster").len(), 2);
    let human = send(&m, "api@shop", &["human"], "to the operator");
    assert_eq!(human.to[0].to_string(), "HUMAN");
}

pub fn a_roster_project_takes_mail_and_changes_only_from_members_and_human(store: &dyn Store) {
    let m = mailroom(store);
    m.add_project("shop", Policy::Roster).expect("add project");
    join(&m, "shop", "frontend");
    join(&m, "other", "eve");
    let eve = addr("eve@other");
    let e = err(m.send(&eve, draft(&["frontend@shop"], "let me in")));
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    let e = err(m.post(&eve, &name("shop"), "design", draft(&[], "x")));
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    let e = err(m.add_member(&eve, &name("shop"), "eve", "", MemberStatus::Active));
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    let e = err(m.set_policy(&eve, "shop", Policy::Open));
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    assert_eq!(store.roster(&name("shop")).expect("roster").len(), 1);
    assert!(
        store
            .pending(&addr("frontend@shop"))
            .expect("pending")
            .messages
            .is_empty()
    );
    let frontend = addr("frontend@shop");
    m.add_member(
        &frontend,
        &name("shop"),
        "backend",
        "",
        MemberStatus::Active,
    )
    .expect("a member may add one");
    m.set_policy(&Address::human(), "shop", Policy::Open)
        .expect("the operator may change the policy");
}

pub fn a_close_new_name_is_refused_unless_its_owner_creates_it(store: &dyn Store) {
    let m = mailroom(store);
    send(&m, "api@shop", &["web@shop"], "web exists");
    let e = err(m.send(&addr("api@shop"), draft(&["wbe@shop"], "typo")));
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("did you mean 'web@shop'?"), "{e}");
    assert_eq!(
        store.member(&name("shop"), &name("wbe")).expect("member"),
        None
    );
    send(&m, "wbe@shop", &["api@shop"], "its owner may");
}

/// Importing is writing: a roster project takes an import only from its members and HUMAN
/// (refused before any write), and only HUMAN imports mail from HUMAN. Joining an open project
/// oneself is not governing it.
pub fn imports_follow_the_roster_and_only_human_imports_human_mail(store: &dyn Store) {
    let m = mailroom(store);
    m.add_project("sec", Policy::Roster).expect("add project");
    join(&m, "sec", "alice");
    let text = "---\n**Timestamp:** 2026-03-13 14:22 UTC\n**From:** HUMAN\n**Type:** HOLD_REQUEST\n**Subject:** stop\n\nSigned.\n";
    let e = err(m.import_channel(Some(&addr("eve@other")), &name("sec"), "all", text, now()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    let e = err(m.import_channel(None, &name("sec"), "all", text, now()));
    assert_eq!(e.kind(), ErrorKind::Refused);
    assert_eq!(store.channels(&name("sec")).expect("channels"), vec![]);
    let by_member = m
        .import_channel(Some(&addr("alice@sec")), &name("sec"), "all", text, now())
        .expect("a member imports");
    assert_eq!(
        (by_member.imported, by_member.problems.len()),
        (0, 1),
        "the entry from HUMAN is skipped and reported"
    );
    let by_human = m
        .import_channel(Some(&Address::human()), &name("sec"), "all", text, now())
        .expect("HUMAN imports");
    assert_eq!((by_human.imported, by_human.problems.len()), (1, 0));

    m.add_project("web", Policy::Open).expect("add project");
    join(&m, "web", "lead");
    m.add_member(
        &addr("newbie@web"),
        &name("web"),
        "newbie",
        "",
        MemberStatus::Active,
    )
    .expect("an identity joins an open project itself");
    let e = err(m.add_member(
        &addr("stranger@web"),
        &name("web"),
        "friend",
        "",
        MemberStatus::Active,
    ));
    assert_eq!(
        e.kind(),
        ErrorKind::Refused,
        "adding another, unless a member, is governing"
    );
    let e = err(m.add_member(
        &addr("eve@sec"),
        &name("sec"),
        "eve",
        "",
        MemberStatus::Active,
    ));
    assert_eq!(
        e.kind(),
        ErrorKind::Refused,
        "a roster project is not joined"
    );
}
