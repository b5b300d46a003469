//! What a shared server adds to the contract: migrations raced by several processes, a schema
//! newer than the binary, connections the server drops, and a send that is atomic across its
//! recipients. Each test has a schema of its own on the test server.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "tests: a failed step must fail the test"
)]

use std::time::Duration;

use mailroom_core::store::{Mailboxes, Sessions};
use mailroom_core::{Address, Kind, Message, MessageId, Priority, Store};
use mailroom_store_pg::PgStore;
use mailroom_store_pg::testing::TestDb;

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).unwrap()
}

fn message(from: &str, to: &[&str], body: &str) -> Message {
    let id = MessageId::generate();
    Message {
        id,
        from: addr(from),
        to: to.iter().map(|t| addr(t)).collect(),
        subject: body.into(),
        body: body.into(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date: id.timestamp(),
        reply_to: None,
        thread: id,
        revision: 1,
        edited: None,
        channel: None,
    }
}

/// This test's URL with a connection name of its own, so it can cut exactly its connections.
fn named_url(db: &TestDb, name: &str) -> String {
    format!("{}&application_name={name}_{}", db.url(), db.schema())
}

fn cut(db: &TestDb, name: &str) -> i64 {
    db.admin()
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t",
            &[&format!("{name}_{}", db.schema())],
        )
        .unwrap()
        .get(0)
}

#[test]
fn processes_starting_at_once_apply_each_migration_once() {
    let Some(db) = TestDb::create("migrations_race") else {
        return;
    };
    let url = db.url();
    let opened: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgStore::open(&url).map(|_| ()))
        })
        .collect();
    for t in opened {
        t.join().unwrap().expect("every starter opens the store");
    }
    let mut admin = db.admin();
    let rows = admin
        .query(
            &format!(
                "SELECT version FROM {}.mailroom_schema ORDER BY version",
                db.schema()
            ),
            &[],
        )
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        versions,
        (1..=mailroom_store_pg::SCHEMA_VERSION).collect::<Vec<_>>(),
        "each migration applied once"
    );
}

#[test]
fn a_schema_newer_than_the_binary_is_refused() {
    let Some(db) = TestDb::create("newer_schema") else {
        return;
    };
    PgStore::open(&db.url()).expect("first open creates the schema");
    db.admin()
        .batch_execute(&format!(
            "INSERT INTO {}.mailroom_schema (version) VALUES (999)",
            db.schema()
        ))
        .unwrap();
    let e = PgStore::open(&db.url()).expect_err("a newer schema is refused");
    let text = e.to_string();
    assert!(
        text.contains("schema version 999, newer than this mailroom's")
            && text.contains("upgrade mailroom"),
        "{text}"
    );
}

#[test]
fn a_connection_the_server_dropped_is_replaced_for_reads_and_writes() {
    let Some(db) = TestDb::create("dropped_connection") else {
        return;
    };
    let store = PgStore::open(&named_url(&db, "dropped")).unwrap();
    let first = message("alice@web", &["bob@web"], "before the cut");
    store.deliver_all(&first.to, &first).unwrap();
    assert!(cut(&db, "dropped") >= 1, "the idle connection was cut");
    let listing = store.pending(&addr("bob@web")).expect("a read reconnects");
    assert_eq!(listing.messages.len(), 1);
    assert!(cut(&db, "dropped") >= 1);
    let second = message("alice@web", &["bob@web", "carol@web"], "after the cut");
    let d = store
        .deliver_all(&second.to, &second)
        .expect("a send on a dropped connection runs again on a new one");
    assert_eq!(d.new, vec![true, true]);
    assert_eq!(store.pending(&addr("bob@web")).unwrap().messages.len(), 2);
    assert_eq!(store.pending(&addr("carol@web")).unwrap().messages.len(), 1);
}

#[test]
fn a_watch_whose_connection_was_cut_wakes_and_the_next_look_finds_the_mail() {
    let Some(db) = TestDb::create("watch_cut") else {
        return;
    };
    let store = PgStore::open(&named_url(&db, "watcher")).unwrap();
    let sender = PgStore::open(&named_url(&db, "sender")).unwrap();
    let bob = addr("bob@web");
    let mut watch = store.watch(&bob).unwrap();
    assert!(
        !watch.wait(Some(Duration::from_millis(50))).unwrap(),
        "nothing yet"
    );
    assert!(cut(&db, "watcher") >= 1, "the LISTEN connection was cut");
    // Sent while the watch is disconnected: its notification is lost, not its mail.
    let m = message("alice@web", &["bob@web"], "while you were away");
    sender.deliver_all(&m.to, &m).unwrap();
    assert!(
        watch.wait(Some(Duration::from_secs(30))).unwrap(),
        "a broken connection wakes the watch"
    );
    let pending = store.pending(&bob).unwrap();
    assert_eq!(pending.messages[0].message.id, m.id);
    // Listening again: the next send wakes it as usual.
    let n = message("alice@web", &["bob@web"], "and again");
    sender.deliver_all(&n.to, &n).unwrap();
    assert!(watch.wait(Some(Duration::from_secs(30))).unwrap());
    assert_eq!(store.describe(), store.url());
}

/// Blocks until this test's connection `name` waits for a lock of a kind in `events`
/// (`wait_event`s such as `tuple`, `transactionid`, `advisory`).
fn until_waiting(db: &TestDb, name: &str, events: &[&str]) {
    let mut admin = db.admin();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
                 AND wait_event_type = 'Lock' AND wait_event = ANY($2)",
                &[&format!("{name}_{}", db.schema()), &events],
            )
            .unwrap()
            .get(0);
        if n > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} is not waiting for a lock ({events:?}) within a minute"
        );
        // PostgreSQL announces no lock wait: its row in pg_stat_activity is the only sign, so
        // this polls for that condition (never a fixed wait).
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_watch_that_starts_while_a_send_is_in_flight_finds_its_mail() {
    // A send notifies only mailboxes someone listens on (migration 0004). This is the race
    // that rule must survive: the send has found nobody listening for bob and not committed
    // yet when bob's watch starts; the watch's first look must still see the copy.
    let Some(db) = TestDb::create("watch_in_flight") else {
        return;
    };
    let sender = PgStore::open(&named_url(&db, "sender")).unwrap();
    let store = PgStore::open(&named_url(&db, "watcher")).unwrap();
    let first = message("alice@web", &["zed@web"], "zed has a mailbox row");
    sender.deliver_all(&first.to, &first).unwrap();
    // Holding zed's delivery counts stops the next send (over the same connection, so the
    // same slot) after bob's part (keys in order: bob, then zed), with bob's copy written and
    // bob's wake lock taken.
    let mut admin = db.admin();
    let mut hold = admin.transaction().unwrap();
    hold.execute(
        &format!(
            "SELECT 1 FROM {}.mailbox_counts WHERE key = 'zed@web' FOR UPDATE",
            db.schema()
        ),
        &[],
    )
    .unwrap();
    let m = message("alice@web", &["bob@web", "zed@web"], "in flight");
    let sending = {
        let m = m.clone();
        std::thread::spawn(move || sender.deliver_all(&m.to, &m).map(|d| d.new))
    };
    until_waiting(&db, "sender", &["transactionid", "tuple"]);
    let bob = addr("bob@web");
    // The watch does not wait for the send (a lock held exclusively might never be let go):
    // it listens, finds bob's wake lock of the sender's slot taken, and looks too early.
    let mut watch = store.watch(&bob).unwrap();
    assert!(store.pending(&bob).unwrap().messages.is_empty());
    hold.commit().unwrap();
    assert_eq!(sending.join().unwrap().unwrap(), vec![true, true]);
    // The send found nobody listening and notified nobody: the watch still wakes its caller
    // (it takes the lock now, and has it look once more), and that look finds the mail.
    let started = std::time::Instant::now();
    assert!(watch.wait(Some(Duration::from_secs(30))).unwrap(), "woken");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let ids: Vec<MessageId> = store
        .pending(&bob)
        .unwrap()
        .messages
        .iter()
        .map(|s| s.message.id)
        .collect();
    assert_eq!(
        ids,
        vec![m.id],
        "the next look finds the mail sent meanwhile"
    );
}

/// Anyone who can connect may hold a mailbox's wake locks exclusively, on purpose: a `wait`
/// then still ends at its timeout, and still wakes for mail, by looking at every turn.
#[test]
fn a_wake_lock_held_on_purpose_neither_blocks_a_wait_nor_hides_mail() {
    use mailroom_core::State;
    let Some(db) = TestDb::create("wake_lock_held") else {
        return;
    };
    let sender = PgStore::open(&named_url(&db, "sender")).unwrap();
    let store = PgStore::open(&named_url(&db, "watcher")).unwrap();
    let bob = addr("bob@web");
    let first = message("alice@web", &["bob@web"], "bob has a mailbox row");
    sender.deliver_all(&first.to, &first).unwrap();
    store
        .transition(&bob, &[(first.id, State::Unread)], State::Read)
        .unwrap();
    let mut hostile = db.admin();
    for slot in 0..8 {
        let (k1, channel) =
            mailroom_store_pg::testing::wake_lock_keys(db.schema(), "bob@web", slot);
        hostile
            .execute(
                "SELECT pg_advisory_lock($1, hashtext($2))",
                &[&k1, &channel],
            )
            .unwrap();
    }
    let started = std::time::Instant::now();
    let mut watch = store.watch(&bob).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the watch started"
    );
    // Nothing arrives: each turn wakes the caller to look, and the look finds nothing new.
    let turn = std::time::Instant::now();
    watch.wait(Some(Duration::from_millis(300))).unwrap();
    assert!(
        turn.elapsed() < Duration::from_secs(5),
        "{:?}",
        turn.elapsed()
    );
    // A send while the locks are held (it cannot take its own, so it notifies) is seen.
    let m = message("alice@web", &["bob@web"], "despite the held locks");
    sender.deliver_all(&m.to, &m).unwrap();
    assert!(watch.wait(Some(Duration::from_secs(10))).unwrap(), "woken");
    let unread: Vec<MessageId> = store
        .pending(&bob)
        .unwrap()
        .messages
        .iter()
        .filter(|s| s.state == State::Unread)
        .map(|s| s.message.id)
        .collect();
    assert_eq!(unread, vec![m.id]);
    // Let go: the watch takes the locks at a next turn, has its caller look once more, and
    // then sleeps until notified (a turn without mail is a timeout again).
    drop(hostile);
    let quiet = (0..40).any(|_| !watch.wait(Some(Duration::from_millis(250))).unwrap());
    assert!(
        quiet,
        "the watch stopped looking at every turn once it held the locks"
    );
    let later = message("alice@web", &["bob@web"], "after the locks were let go");
    sender.deliver_all(&later.to, &later).unwrap();
    assert!(
        watch.wait(Some(Duration::from_secs(10))).unwrap(),
        "notified"
    );
}

#[test]
fn a_send_that_fails_in_its_middle_leaves_no_copy_and_no_trace() {
    let Some(db) = TestDb::create("atomic_send") else {
        return;
    };
    let store = PgStore::open(&db.url()).unwrap();
    // A constraint the server enforces on the second recipient only: its mailbox row refuses
    // the generation bump, so the transaction fails after the first copy was inserted.
    db.admin()
        .batch_execute(&format!(
            "ALTER TABLE {s}.mailboxes ADD CONSTRAINT no_zed CHECK (key <> 'zed@web')",
            s = db.schema()
        ))
        .unwrap();
    let m = message("alice@web", &["bob@web", "zed@web"], "all or nothing");
    let e = store.deliver_all(&m.to, &m).expect_err("the send fails");
    assert!(e.to_string().contains("failed to confirm the send"), "{e}");
    // The server's own words, naming what refused it (not the driver's bare "db error").
    assert!(
        e.to_string()
            .ends_with(r#"violates check constraint "no_zed""#),
        "{e}"
    );
    assert!(store.pending(&addr("bob@web")).unwrap().messages.is_empty());
    assert!(store.outbox(&addr("alice@web")).unwrap().is_empty());
}

/// Runs `f(i)` on `n` threads at once, each with its own connection, and returns the results.
fn race<T: Send + 'static>(
    url: &str,
    n: usize,
    f: impl Fn(&PgStore, usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let f = std::sync::Arc::new(f);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (url, f, barrier) = (url.to_owned(), f.clone(), barrier.clone());
            std::thread::spawn(move || {
                let store = PgStore::open(&url).unwrap();
                barrier.wait();
                f(&store, i)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn racing_connections_each_win_a_conditional_change_at_most_once() {
    use mailroom_core::State;
    use mailroom_core::message::ChannelRef;
    use mailroom_core::store::{Channels, KeyClaim};
    let Some(db) = TestDb::create("races") else {
        return;
    };
    let url = db.url();
    let store = PgStore::open(&url).unwrap();
    let bob = addr("bob@web");
    let m = message("alice@web", &["bob@web"], "contended");
    store.deliver_all(&m.to, &m).unwrap();
    let id = m.id;

    // Readers moving it to read race senders cancelling it and editing it: one move wins.
    let outcomes = race(&url, 8, move |s, i| {
        let bob = addr("bob@web");
        match i % 3 {
            0 => (
                "read",
                s.transition(&bob, &[(id, State::Unread)], State::Read)
                    .unwrap()[0],
            ),
            1 => (
                "cancel",
                s.transition(&bob, &[(id, State::Unread)], State::Cancelled)
                    .unwrap()[0],
            ),
            _ => {
                let mut edited = s.get(&bob, id).unwrap().unwrap().message;
                edited.revision += 1;
                edited.body = format!("edit {i}");
                ("edit", s.replace_unread(&bob, &edited).unwrap())
            }
        }
    });
    let moves = outcomes
        .iter()
        .filter(|(k, won)| *k != "edit" && *won)
        .count();
    assert_eq!(moves, 1, "exactly one move out of unread: {outcomes:?}");
    let now = store.get(&bob, id).unwrap().unwrap();
    assert_ne!(now.state, State::Unread);

    // Seen marks: of 8 readers as one member, exactly one marks each entry.
    let all = ChannelRef::parse_canonical("all@web").unwrap();
    let mut post = message("alice@web", &[], "broadcast");
    post.to.clear();
    post.channel = Some(all.clone());
    store.append(&all, &post).unwrap();
    let pid = post.id;
    let marks = race(&url, 8, move |s, _| {
        let all = ChannelRef::parse_canonical("all@web").unwrap();
        let carol = mailroom_core::Name::parse("carol").unwrap();
        s.mark_seen(&all, &carol, &[pid]).unwrap()[0]
    });
    assert_eq!(marks.iter().filter(|&&b| b).count(), 1, "{marks:?}");

    // Idempotency keys: one claimant, every other learns its id.
    let claims = race(&url, 8, move |s, i| {
        let me = addr("alice@web");
        let mine = MessageId::generate();
        (mine, s.claim_key(&me, "deploy-42", mine).unwrap(), i)
    });
    let winners: Vec<MessageId> = claims
        .iter()
        .filter(|(_, c, _)| *c == KeyClaim::Claimed)
        .map(|(id, _, _)| *id)
        .collect();
    assert_eq!(winners.len(), 1, "{claims:?}");
    assert!(
        claims
            .iter()
            .all(|(_, c, _)| matches!(c, KeyClaim::Claimed) || *c == KeyClaim::Existing(winners[0]))
    );

    // Sends naming the same recipients in opposite orders do not deadlock and lose nothing.
    let sent = race(&url, 8, |s, i| {
        let to: &[&str] = if i % 2 == 0 {
            &["x@web", "y@web", "z@web"]
        } else {
            &["z@web", "y@web", "x@web"]
        };
        let mut ok = 0;
        for n in 0..20 {
            let m = message("alice@web", to, &format!("{i} {n}"));
            if s.deliver_all(&m.to, &m).is_ok() {
                ok += 1;
            }
        }
        ok
    });
    assert_eq!(sent.iter().sum::<i32>(), 160);
    for r in ["x@web", "y@web", "z@web"] {
        assert_eq!(store.pending(&addr(r)).unwrap().messages.len(), 160, "{r}");
    }
}

#[test]
fn a_strict_role_cannot_widen_its_identities_with_tables_of_its_own() {
    let Some(db) = TestDb::create("strict_shadowing") else {
        return;
    };
    let store = PgStore::open(&db.url()).unwrap();
    let secret = message("HUMAN", &["bob@web"], "for bob only");
    store.deliver_all(&secret.to, &secret).unwrap();
    let role = format!(
        "mr_shadow_{}",
        db.schema().trim_start_matches("mailroom_test_")
    );
    let s = db.schema();
    let mut admin = db.admin();
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{role}\" LOGIN;
             GRANT USAGE ON SCHEMA \"{s}\" TO \"{role}\";
             GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA \"{s}\" TO \"{role}\";
             GRANT USAGE ON SEQUENCE \"{s}\".moves TO \"{role}\";
             INSERT INTO \"{s}\".identities (role, mailbox) VALUES ('{role}', 'alice@web');"
        ))
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let config = mailroom_store_pg::parse_url(&db.url_as(&role)).unwrap();
        let mut agent = config.connect(postgres::NoTls).unwrap();
        // A temporary `identities` claiming bob's mailbox, searched before the schema's.
        agent
            .batch_execute(
                "CREATE TEMP TABLE identities (role name, mailbox text);
                 INSERT INTO identities VALUES (current_user, 'bob@web'), (current_user, 'human');",
            )
            .unwrap();
        let seen: i64 = agent
            .query_one("SELECT count(*) FROM copies", &[])
            .unwrap()
            .get(0);
        assert_eq!(seen, 0, "bob's mail stays invisible");
        let raised = agent.batch_execute("INSERT INTO mailroom_schema (version) VALUES (999)");
        assert!(raised.is_err(), "the schema version is the owner's");
        let widened = agent.batch_execute(&format!(
            "INSERT INTO \"{s}\".identities VALUES (current_user, 'bob@web')"
        ));
        assert!(widened.is_err(), "identities are the owner's");
    }));
    let _ = admin.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// A server that answers every SSLRequest with `N` (no TLS here), as PostgreSQL does with
/// `ssl = off`; returns its port. It serves one connection per attempt, then stops.
fn server_without_tls(attempts: usize) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for _ in 0..attempts {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            // SSLRequest: length 8, code 80877103.
            let mut request = [0u8; 8];
            if s.read_exact(&mut request).is_ok() && request == [0, 0, 0, 8, 4, 210, 22, 47] {
                let _ = s.write_all(b"N");
            }
            // Whatever comes next (a clear-text startup under `prefer`) is left unanswered
            // and the connection closed.
        }
    });
    port
}

#[test]
fn sslmode_require_against_a_server_without_tls_fails_in_one_sentence() {
    let port = server_without_tls(1);
    let e = PgStore::open(&format!(
        "postgres://alice:hunter2@127.0.0.1:{port}/mail?sslmode=require"
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail does not offer TLS, and the URL asks for sslmode=require: turn ssl on in the server's postgresql.conf, or write sslmode=prefer (encrypt when offered) or sslmode=disable in the URL"
        )
    );
}

/// A certificate authority and server certificates made for one test with the `openssl`
/// command, in a directory of their own that is removed at the end.
struct Pki {
    dir: std::path::PathBuf,
}

impl Pki {
    /// # Panics
    /// When `openssl` is missing or fails: these tests need it (it is on every machine that
    /// runs them; install the `openssl` package otherwise).
    fn new(test: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "mailroom-pki-{test}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki { dir };
        pki.authority("ca");
        pki
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.join(name)
    }

    /// Runs `openssl` with `args`, words separated by spaces (none holds one), in the directory.
    fn openssl(&self, args: &str) {
        let out = std::process::Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(&self.dir)
            .output()
            .expect("these tests make certificates with the openssl command: install openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A self-signed authority: `NAME.pem` and `NAME.key`.
    fn authority(&self, name: &str) {
        self.openssl(&format!(
            "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
             -keyout {name}.key -out {name}.pem -days 3650 -subj /CN=mailroom-test-{name} \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"
        ));
    }

    /// A key `NAME.key`, a request `NAME.csr` and the extensions `NAME.ext` of a server
    /// certificate for `san` (`DNS:…` or `IP:…`, comma-separated).
    fn request(&self, name: &str, san: &str) {
        self.openssl(&format!(
            "req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
             -keyout {name}.key -out {name}.csr -subj /CN={name}"
        ));
        std::fs::write(
            self.path(&format!("{name}.ext")),
            format!(
                "subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .unwrap();
    }

    /// A server certificate signed by the authority `ca` for `san`: `NAME.pem` and
    /// `NAME.key`, valid for ten years from now.
    fn server(&self, name: &str, san: &str) {
        self.request(name, san);
        self.openssl(&format!(
            "x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -set_serial {} -days 3650 \
             -extfile {name}.ext -out {name}.pem",
            std::process::id()
        ));
    }
}

impl Pki {
    /// As [`Pki::server`], but valid for one day of 2020 only: expired.
    fn expired_server(&self, name: &str, san: &str) {
        self.request(name, san);
        // `openssl x509` cannot back-date; `openssl ca` can, with a minimal configuration.
        std::fs::write(
            self.path("ca.cnf"),
            "[ca]\ndefault_ca = here\n[here]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n",
        )
        .unwrap();
        std::fs::write(self.path("index.txt"), "").unwrap();
        std::fs::write(self.path("serial"), "1000\n").unwrap();
        self.openssl(&format!(
            "ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in {name}.csr \
             -out {name}.pem -notext -startdate 20200101000000Z -enddate 20200102000000Z \
             -extfile {name}.ext"
        ));
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A PostgreSQL endpoint that answers the SSLRequest with `S`, does the TLS handshake with the
/// certificate `cert` and key `key` (PEM files), and answers the startup message that follows
/// with an error saying [`PAST_TLS`]: as far as a client can get without a real server. Serves
/// `attempts` connections; returns its port.
fn server_with_tls(cert: &std::path::Path, key: &std::path::Path, attempts: usize) -> u16 {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for _ in 0..attempts {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let mut request = [0u8; 8];
            if s.read_exact(&mut request).is_err() || request != [0, 0, 0, 8, 4, 210, 22, 47] {
                continue;
            }
            if s.write_all(b"S").is_err() {
                continue;
            }
            let Ok(mut tls) = rustls::ServerConnection::new(config.clone()) else {
                return;
            };
            // The handshake, as far as the client lets it go.
            while tls.is_handshaking() {
                if tls.complete_io(&mut s).is_err() {
                    break;
                }
            }
            if tls.is_handshaking() {
                continue;
            }
            // Past TLS: read the startup message and refuse it with an error of our own, which
            // tells the test that the client got this far.
            let mut stream = rustls::Stream::new(&mut tls, &mut s);
            let mut length = [0u8; 4];
            if stream.read_exact(&mut length).is_err() {
                continue;
            }
            let mut startup = vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
            if stream.read_exact(&mut startup).is_err() {
                continue;
            }
            let mut fields = Vec::new();
            for (code, text) in [
                (b'S', "FATAL"),
                (b'V', "FATAL"),
                (b'C', "08P01"),
                (b'M', PAST_TLS),
            ] {
                fields.push(code);
                fields.extend_from_slice(text.as_bytes());
                fields.push(0);
            }
            fields.push(0);
            let mut error = vec![b'E'];
            error.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
            error.extend_from_slice(&fields);
            let _ = stream.write_all(&error);
            let _ = stream.flush();
            tls.send_close_notify();
            let _ = tls.complete_io(&mut s);
        }
    });
    port
}

/// The error of opening `url`, as text, with the test's directory for `{dir}`.
fn open_error(url: &str) -> (mailroom_core::ErrorKind, String) {
    let e = PgStore::open(url).unwrap_err();
    (e.kind(), e.to_string())
}

const CERTIFICATE_FAILED: &str = "showed a certificate that failed verification";

/// What the fake TLS server answers a startup message with, once the handshake passed.
const PAST_TLS: &str = "the fake server got the startup message over TLS";

/// The sentence of a connection refused by the fake server after a verified handshake.
fn past_tls(port: u16) -> String {
    format!(
        "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail refused the connection: {PAST_TLS}"
    )
}

#[test]
fn verify_full_passes_tls_with_the_right_root_and_host_name() {
    let pki = Pki::new("verify_full_ok");
    pki.server("local", "IP:127.0.0.1");
    let port = server_with_tls(&pki.path("local.pem"), &pki.path("local.key"), 2);
    for mode in ["verify-full", "verify-ca"] {
        let (_, text) = open_error(&format!(
            "postgres://alice:hunter2@127.0.0.1:{port}/mail?sslmode={mode}&sslrootcert={}",
            pki.path("ca.pem").display()
        ));
        assert_eq!(text, past_tls(port), "{mode}");
    }
}

#[test]
fn verify_full_with_the_wrong_root_names_the_unknown_issuer_and_the_fix() {
    let pki = Pki::new("verify_full_wrong_root");
    pki.server("local", "IP:127.0.0.1");
    pki.authority("other");
    let port = server_with_tls(&pki.path("local.pem"), &pki.path("local.key"), 3);
    let other = pki.path("other.pem");
    for mode in ["verify-full", "verify-ca", "require"] {
        let (kind, text) = open_error(&format!(
            "postgres://alice:hunter2@127.0.0.1:{port}/mail?sslmode={mode}&sslrootcert={}",
            other.display()
        ));
        assert_eq!(kind, mailroom_core::ErrorKind::Store, "{text}");
        assert_eq!(
            text,
            format!(
                "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail {CERTIFICATE_FAILED}, so nothing was sent to it: its issuer is unknown (no certificate in {} signed it); give the certificate of the authority that signed it with sslrootcert=PATH in the URL (or PGSSLROOTCERT)",
                other.display()
            ),
            "{mode}"
        );
    }
}

#[test]
fn an_expired_certificate_is_named_as_such_under_every_verifying_mode() {
    let pki = Pki::new("verify_expired");
    pki.expired_server("old", "IP:127.0.0.1");
    let port = server_with_tls(&pki.path("old.pem"), &pki.path("old.key"), 2);
    for mode in ["verify-full", "verify-ca"] {
        let (kind, text) = open_error(&format!(
            "postgres://alice@127.0.0.1:{port}/mail?sslmode={mode}&sslrootcert={}",
            pki.path("ca.pem").display()
        ));
        assert_eq!(kind, mailroom_core::ErrorKind::Store, "{text}");
        assert_eq!(
            text,
            format!(
                "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail {CERTIFICATE_FAILED}, so nothing was sent to it: it has expired; renew the server's certificate (or correct this machine's clock)"
            ),
            "{mode}"
        );
    }
}

#[test]
fn a_host_name_the_certificate_does_not_name_fails_verify_full_and_passes_verify_ca() {
    let pki = Pki::new("verify_name");
    pki.server("db", "DNS:db.example");
    let port = server_with_tls(&pki.path("db.pem"), &pki.path("db.key"), 2);
    let url = |mode: &str| {
        format!(
            "postgres://alice@127.0.0.1:{port}/mail?sslmode={mode}&sslrootcert={}",
            pki.path("ca.pem").display()
        )
    };
    let (_, text) = open_error(&url("verify-full"));
    assert_eq!(
        text,
        format!(
            "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail {CERTIFICATE_FAILED}, so nothing was sent to it: its name does not match the host name '127.0.0.1' (it names db.example); connect with a host name the certificate names, or write sslmode=verify-ca to check the chain only"
        )
    );
    let (_, text) = open_error(&url("verify-ca"));
    assert_eq!(text, past_tls(port));
}

#[test]
fn the_systems_authorities_verify_the_full_name_and_do_not_know_a_private_authority() {
    let pki = Pki::new("verify_system");
    pki.server("local", "IP:127.0.0.1");
    let port = server_with_tls(&pki.path("local.pem"), &pki.path("local.key"), 2);
    // Without sslmode, sslrootcert=system means verify-full, as in libpq.
    for query in [
        "sslrootcert=system",
        "sslmode=verify-full&sslrootcert=system",
    ] {
        let (kind, text) = open_error(&format!("postgres://alice@127.0.0.1:{port}/mail?{query}"));
        let unknown = format!(
            "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail {CERTIFICATE_FAILED}, so nothing was sent to it: its issuer is unknown (none of the system's trusted authorities signed it); give the certificate of the authority that signed it with sslrootcert=PATH in the URL (or PGSSLROOTCERT)"
        );
        // A machine without the system's CA certificates says so instead, before connecting.
        let none = "sslrootcert=system found no trusted certificate authority on this system";
        assert!(
            (kind == mailroom_core::ErrorKind::Store && text == unknown)
                || (kind == mailroom_core::ErrorKind::Invalid && text.starts_with(none)),
            "{query}: {text}"
        );
    }
    // A weaker mode would accept a certificate any of them signed for another name.
    let (kind, text) = open_error(&format!(
        "postgres://alice@127.0.0.1:{port}/mail?sslmode=verify-ca&sslrootcert=system"
    ));
    assert_eq!(kind, mailroom_core::ErrorKind::Invalid);
    assert!(
        text.starts_with("sslrootcert=system trusts every authority of the system, so it needs sslmode=verify-full"),
        "{text}"
    );
}

#[test]
fn a_verifying_mode_whose_root_file_is_missing_is_refused_before_connecting() {
    let pki = Pki::new("verify_missing");
    let missing = pki.path("nowhere.pem");
    // Port 1: nothing listens there; the refusal must come before any attempt.
    let (kind, text) = open_error(&format!(
        "postgres://alice@127.0.0.1:1/mail?sslmode=verify-full&sslrootcert={}",
        missing.display()
    ));
    assert_eq!(kind, mailroom_core::ErrorKind::Invalid);
    assert_eq!(
        text,
        format!(
            "the root certificate file {} named for sslmode=verify-full does not exist; give the file of the certificate authority that signed the server's certificate (sslrootcert=PATH in the URL, or PGSSLROOTCERT)",
            missing.display()
        )
    );
    let (kind, text) = open_error("postgres://alice@127.0.0.1:1/mail?sslmode=verify-ca");
    assert_eq!(kind, mailroom_core::ErrorKind::Invalid);
    assert_eq!(
        text,
        "sslmode=verify-ca needs the certificate of the authority that signed the server's certificate; name its file with sslrootcert=PATH in the URL (or PGSSLROOTCERT)"
    );
}

/// A private PostgreSQL cluster with `ssl = on` and the server certificate `local` of `pki`,
/// on a free port of 127.0.0.1, trusting every local login; stopped and removed when dropped.
/// When this process is root (as CI is), the cluster runs as the `postgres` account, since
/// PostgreSQL refuses to run as root.
struct Cluster {
    bin: std::path::PathBuf,
    base: std::path::PathBuf,
    as_postgres: bool,
    port: u16,
}

impl Cluster {
    /// `None`, having said so, when no `initdb` is installed under /usr/lib/postgresql.
    fn start(pki: &Pki) -> Option<Cluster> {
        let mut bins: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
            .collect();
        bins.sort();
        let Some(bin) = bins.pop() else {
            // CI installs the package (`.ci/run`): there, a missing initdb is a failure.
            assert!(
                std::env::var("MAILROOM_TEST_PG_REQUIRED").as_deref() != Ok("1"),
                "verify_full_end_to_end: no initdb under /usr/lib/postgresql/*/bin, and MAILROOM_TEST_PG_REQUIRED=1; install Debian's postgresql package"
            );
            eprintln!(
                "verify_full_end_to_end: SKIPPED, no initdb under /usr/lib/postgresql/*/bin to start a private cluster with ssl=on (install Debian's postgresql package); the verifying modes were checked against the fake TLS server only"
            );
            return None;
        };
        let base = pki.path("cluster");
        std::fs::create_dir_all(&base).unwrap();
        for name in ["local.pem", "local.key"] {
            std::fs::copy(pki.path(name), base.join(name)).unwrap();
        }
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        std::fs::set_permissions(
            base.join("local.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let as_postgres = std::fs::metadata(&base).unwrap().uid() == 0;
        if as_postgres {
            let out = std::process::Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(&base)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "chown: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Cluster {
            bin,
            base,
            as_postgres,
            port,
        };
        cluster.run(
            "initdb",
            &["-D", "data", "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={base} -c ssl=on -c ssl_cert_file={base}/local.pem -c ssl_key_file={base}/local.key -c fsync=off",
            base = cluster.base.display()
        );
        cluster.run(
            "pg_ctl",
            &[
                "-D", "data", "-l", "data/log", "-w", "-o", &options, "start",
            ],
        );
        Some(cluster)
    }

    fn run(&self, program: &str, args: &[&str]) {
        let mut command = if self.as_postgres {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(self.bin.join(program));
            c
        } else {
            std::process::Command::new(self.bin.join(program))
        };
        let out = command.args(args).current_dir(&self.base).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut command = if self.as_postgres {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            c
        } else {
            std::process::Command::new(self.bin.join("pg_ctl"))
        };
        let _ = command
            .args(["-D", "data", "-m", "immediate", "-w", "stop"])
            .current_dir(&self.base)
            .output();
    }
}

#[test]
fn verify_full_end_to_end() {
    let pki = Pki::new("verify_full_end_to_end");
    pki.server("local", "IP:127.0.0.1,DNS:localhost");
    pki.authority("other");
    let Some(cluster) = Cluster::start(&pki) else {
        return;
    };
    let url = |mode: &str, root: &str| {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode={mode}&sslrootcert={}",
            cluster.port,
            pki.path(root).display()
        )
    };
    assert!(encrypted(&url("verify-full", "ca.pem")));
    let store = PgStore::open(&url("verify-full", "ca.pem")).unwrap();
    let sent = message("alice@web", &["bob@web"], "verified");
    store.deliver_all(&sent.to, &sent).unwrap();
    let pending = store.pending(&addr("bob@web")).unwrap().messages;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].message.body, "verified");
    // The same server, with a root that did not sign its certificate: refused before login.
    let e = PgStore::open(&url("verify-full", "other.pem")).unwrap_err();
    assert!(e.to_string().contains("its issuer is unknown"), "{e}");
}

/// Whether the server says this connection is encrypted.
fn encrypted(url: &str) -> bool {
    let mut c = mailroom_store_pg::connect(url).unwrap();
    c.query_one(
        "SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)",
        &[],
    )
    .unwrap()
    .get(0)
}

#[test]
fn sslmode_decides_whether_the_connection_is_encrypted_when_the_server_offers_tls() {
    let Some(db) = TestDb::create("sslmode") else {
        return;
    };
    let mut admin = db.admin();
    let ssl: String = admin.query_one("SHOW ssl", &[]).unwrap().get(0);
    let with = |mode: &str| format!("{}&sslmode={mode}", db.url());
    assert!(!encrypted(&with("disable")));
    if ssl != "on" {
        eprintln!("sslmode: the test server has ssl off; only sslmode=disable was checked here");
        return;
    }
    assert!(encrypted(&with("require")));
    assert!(encrypted(&with("prefer")));
    // And a mailroom works end to end over it.
    let store = PgStore::open(&with("require")).unwrap();
    let sent = message("alice@web", &["bob@web"], "over TLS");
    store.deliver_all(&sent.to, &sent).unwrap();
    assert_eq!(store.pending(&addr("bob@web")).unwrap().messages.len(), 1);
}

/// A TCP proxy to the test server that shows `inspect` each message the client sends (its type
/// byte and body) and forwards it, or cuts the connection (both ways) when `inspect` says
/// false. Returns the port to connect to (in clear text: `inspect` reads the messages).
fn proxy(
    server: (String, u16),
    inspect: impl Fn(u8, &[u8]) -> bool + Send + Sync + 'static,
) -> u16 {
    use std::io::{Read as _, Write as _};
    let inspect = std::sync::Arc::new(inspect);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut upstream) = std::net::TcpStream::connect((server.0.as_str(), server.1))
            else {
                return;
            };
            let (mut from_server, mut to_client) = (
                upstream.try_clone().expect("clone"),
                client.try_clone().expect("clone"),
            );
            std::thread::spawn(move || std::io::copy(&mut from_server, &mut to_client));
            let inspect = inspect.clone();
            std::thread::spawn(move || {
                // The startup message has no type byte; every later one is a type and a length.
                let mut len = [0u8; 4];
                if client.read_exact(&mut len).is_err() {
                    return;
                }
                let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
                if client.read_exact(&mut body).is_err()
                    || upstream.write_all(&len).is_err()
                    || upstream.write_all(&body).is_err()
                {
                    return;
                }
                loop {
                    let mut head = [0u8; 5];
                    if client.read_exact(&mut head).is_err() {
                        return;
                    }
                    let n = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
                    let mut body = vec![0u8; n.saturating_sub(4)];
                    if client.read_exact(&mut body).is_err() {
                        return;
                    }
                    if !inspect(head[0], &body) {
                        let _ = client.shutdown(std::net::Shutdown::Both);
                        let _ = upstream.shutdown(std::net::Shutdown::Both);
                        return;
                    }
                    if upstream.write_all(&head).is_err() || upstream.write_all(&body).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A TCP proxy to the test server that counts the client's round trips: each `Sync` (the end of
/// an extended-protocol request) and each simple `Query` is one wait for the server's answer.
fn counting_proxy(
    server: (String, u16),
    trips: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> u16 {
    proxy(server, move |kind, _| {
        if kind == b'S' || kind == b'Q' {
            trips.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        true
    })
}

/// The test server's host and port, or `None` when it is reached through a Unix socket.
fn tcp_server(db: &TestDb) -> Option<((String, u16), postgres::Config)> {
    let direct = mailroom_store_pg::parse_url(&db.url()).unwrap();
    let server = match (direct.get_hosts(), direct.get_ports()) {
        ([postgres::config::Host::Tcp(host), ..], ports) => {
            (host.clone(), ports.first().copied().unwrap_or(5432))
        }
        _ => return None,
    };
    Some((server, direct))
}

/// A configuration for this test's mailroom through a proxy on `port`, in clear text.
fn through(port: u16, direct: &postgres::Config) -> postgres::Config {
    let mut config = postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user(direct.get_user().unwrap_or("postgres"))
        .dbname(direct.get_dbname().unwrap_or("test"))
        .options(direct.get_options().unwrap_or(""))
        .ssl_mode(postgres::config::SslMode::Disable);
    config
}

/// The throughput of sends over kept connections is bound by their round trips: the core's
/// checks are one (`Directory::lookup`), the send's writes and commit another
/// (`mailroom_deliver`). It was about eighteen, one per check and per statement.
#[test]
fn a_send_over_a_kept_connection_is_two_round_trips() {
    use mailroom_core::Mailroom;
    use mailroom_core::ops::Draft;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let Some(db) = TestDb::create("round_trips") else {
        return;
    };
    let Some((server, direct)) = tcp_server(&db) else {
        return; // a Unix socket: nothing to proxy
    };
    let trips = Arc::new(AtomicUsize::new(0));
    let port = counting_proxy(server, trips.clone());
    let store = PgStore::open_config(through(port, &direct)).unwrap();
    let mr = Mailroom::new(&store);
    let send = |to: &[&str], body: &str| {
        let draft = Draft {
            to: to.iter().map(|t| (*t).to_owned()).collect(),
            body: body.to_owned(),
            ..Draft::default()
        };
        mr.send(&addr("alice@web"), draft).unwrap();
    };
    // The first send creates the project and the mailboxes: more to check and write.
    send(&["bob", "carol"], "hello");
    for to in [&["bob"][..], &["bob", "carol"], &["carol@web", "HUMAN"]] {
        let before = trips.load(Ordering::SeqCst);
        send(to, "again");
        assert_eq!(trips.load(Ordering::SeqCst) - before, 2, "a send to {to:?}");
    }
    assert_eq!(store.pending(&addr("bob@web")).unwrap().messages.len(), 3);
}

/// A send whose connection breaks while its statement is being prepared, on the first
/// connection and on the new one, never ran: it is an ordinary failure that changed nothing,
/// not a send that "may or may not have happened".
#[test]
fn a_send_cut_while_preparing_did_not_happen() {
    let Some(db) = TestDb::create("cut_preparing") else {
        return;
    };
    let Some((server, direct)) = tcp_server(&db) else {
        return;
    };
    // Cut every connection at the moment it asks to prepare the delivery (`Parse`).
    let port = proxy(server, |kind, body| {
        !(kind == b'P' && body.windows(16).any(|w| w == b"mailroom_deliver"))
    });
    let store = PgStore::open_config(through(port, &direct)).unwrap();
    let m = message("alice@web", &["bob@web"], "never prepared");
    let e = store.deliver_all(&m.to, &m).expect_err("the send fails");
    let text = e.to_string();
    assert!(text.contains("nothing was changed"), "{text}");
    assert!(!text.contains("may or may not"), "{text}");
    let direct = PgStore::open(&db.url()).unwrap();
    assert!(
        direct
            .pending(&addr("bob@web"))
            .unwrap()
            .messages
            .is_empty()
    );
    assert!(direct.outbox(&addr("alice@web")).unwrap().is_empty());
}

/// A statement kept prepared on a connection whose result type a later schema change altered
/// is prepared again, not failed ("cached plan must not change result type").
#[test]
fn a_prepared_statement_whose_result_type_changed_is_prepared_again() {
    use mailroom_core::store::Directory;
    use mailroom_core::{Member, MemberStatus, Name, Policy, Project};
    let Some(db) = TestDb::create("stale_plan") else {
        return;
    };
    let store = PgStore::open(&db.url()).unwrap();
    let web = Name::parse("web").unwrap();
    let bob = Name::parse("bob").unwrap();
    store
        .ensure_project(&Project {
            name: web.clone(),
            policy: Policy::Open,
            created: jiff::Timestamp::now(),
        })
        .unwrap();
    store
        .add_member(
            &web,
            &Member {
                handle: bob.clone(),
                role: "reviewer".into(),
                status: MemberStatus::Active,
                joined: jiff::Timestamp::now(),
                since: None,
            },
        )
        .unwrap();
    let members = [(web.clone(), bob.clone())];
    let before = store.lookup(std::slice::from_ref(&web), &members).unwrap();
    assert_eq!(before.members[0].as_ref().unwrap().role, "reviewer");
    // The lookup is prepared on the store's kept connection; a schema change alters the type
    // of a column it returns.
    db.admin()
        .batch_execute(&format!(
            "ALTER TABLE {}.members ALTER COLUMN role TYPE varchar COLLATE \"C\"",
            db.schema()
        ))
        .unwrap();
    let after = store
        .lookup(std::slice::from_ref(&web), &members)
        .expect("the lookup is prepared again");
    assert_eq!(after.members[0].as_ref().unwrap().role, "reviewer");
    assert_eq!(after.projects[0].as_ref().unwrap().name, web);
}

/// The change token is `mailboxes.generation` plus one count per slot: deliveries from
/// connections of different slots each change it.
#[test]
fn the_change_token_changes_with_each_delivery_from_connections_of_different_slots() {
    let Some(db) = TestDb::create("token_slots") else {
        return;
    };
    let a = PgStore::open(&db.url()).unwrap();
    let b = PgStore::open(&db.url()).unwrap();
    let bob = addr("bob@web");
    let mut tokens = vec![a.change_token(&bob).unwrap()];
    for (n, store) in [&a, &b, &a, &b, &b].into_iter().enumerate() {
        let m = message("alice@web", &["bob@web"], &format!("delivery {n}"));
        assert_eq!(store.deliver_all(&m.to, &m).unwrap().new, vec![true]);
        let token = a.change_token(&bob).unwrap();
        assert!(
            !tokens.contains(&token),
            "delivery {n} changed the token: {token} after {tokens:?}"
        );
        assert_eq!(b.change_token(&bob).unwrap(), token, "both read one token");
        tokens.push(token);
    }
    assert_eq!(tokens.last().unwrap(), "g5:-");
    // The two connections counted in two slots of their own (migration 0006).
    let slots: Vec<(i32, i64)> = db
        .admin()
        .query(
            &format!(
                "SELECT slot, generation FROM {}.mailbox_counts WHERE key = 'bob@web' ORDER BY slot",
                db.schema()
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(slots, vec![(0, 2), (1, 3)]);
}

/// Migration 0005 added `mailbox_counts`, which a delivery writes: a role made from
/// `mailroom role`'s SQL before it (granted the tables that existed then) still sends after
/// the upgrade, because the migration copies the grants of `mailboxes`.
#[test]
fn a_role_granted_before_the_counts_table_still_sends_after_the_upgrade() {
    let Some(db) = TestDb::create("grant_copy") else {
        return;
    };
    let s = db.schema();
    let mut admin = db.admin();
    // The schema as a version-4 mailroom left it.
    let old = [
        include_str!("../migrations/0001_initial.sql"),
        include_str!("../migrations/0002_strict.sql"),
        include_str!("../migrations/0003_deliver.sql"),
        include_str!("../migrations/0004_wake_waiters_only.sql"),
    ];
    let mut tx = admin.transaction().unwrap();
    tx.batch_execute(&format!(
        "SET LOCAL search_path = \"{s}\";
         CREATE TABLE mailroom_schema (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now());"
    ))
    .unwrap();
    for (n, sql) in old.iter().enumerate() {
        tx.batch_execute(sql).unwrap();
        let v = i32::try_from(n + 1).unwrap();
        tx.execute("INSERT INTO mailroom_schema (version) VALUES ($1)", &[&v])
            .unwrap();
    }
    tx.commit().unwrap();
    let role = format!("mr_alice_{}", s.trim_start_matches("mailroom_test_"));
    // What `mailroom role alice@web` printed then.
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{role}\" LOGIN;
             GRANT USAGE ON SCHEMA \"{s}\" TO \"{role}\";
             GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA \"{s}\" TO \"{role}\";
             GRANT USAGE ON SEQUENCE \"{s}\".moves TO \"{role}\";
             INSERT INTO \"{s}\".identities (role, mailbox) VALUES ('{role}', 'alice@web');"
        ))
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The operator's mailroom upgrades the schema, and puts alice and bob on web's roster
        // (since version 9 a role sends only as and to active members).
        let operator = PgStore::open(&db.url()).unwrap();
        db.admin()
            .batch_execute(&format!(
                "INSERT INTO \"{s}\".projects VALUES ('web', 'web', 'open', '2026-01-01T00:00:00Z');
                 INSERT INTO \"{s}\".members VALUES ('web', 'bob', 'bob', '', 'active', '2026-01-01T00:00:00Z', NULL), ('web', 'alice', 'alice', '', 'active', '2026-01-01T00:00:00Z', NULL);"
            ))
            .unwrap();
        let agent = PgStore::open(&db.url_as(&role)).unwrap();
        let bob = addr("bob@web");
        let mut last = operator.change_token(&bob).unwrap();
        for n in 0..2 {
            let m = message("alice@web", &["bob@web"], &format!("after the upgrade {n}"));
            let d = agent
                .deliver_all(&m.to, &m)
                .expect("the role counts its delivery");
            assert_eq!(d.new, vec![true]);
            let token = operator.change_token(&bob).unwrap();
            assert_ne!(token, last, "delivery {n} changed the token");
            last = token;
        }
        assert_eq!(operator.pending(&bob).unwrap().messages.len(), 2);
    }));
    let _ = admin.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// A role that may not run mailroom's functions (a deployment that revoked `EXECUTE` from
/// `PUBLIC`) is told which grant it lacks, not that it acts as someone else.
#[test]
fn a_role_without_execute_is_told_the_grant_it_lacks() {
    let Some(db) = TestDb::create("no_execute") else {
        return;
    };
    let s = db.schema();
    PgStore::open(&db.url()).unwrap();
    let role = format!("mr_noexec_{}", s.trim_start_matches("mailroom_test_"));
    let mut admin = db.admin();
    admin
        .batch_execute(&format!(
            "CREATE ROLE \"{role}\" LOGIN;
             GRANT USAGE ON SCHEMA \"{s}\" TO \"{role}\";
             GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA \"{s}\" TO \"{role}\";
             GRANT USAGE ON SEQUENCE \"{s}\".moves TO \"{role}\";
             INSERT INTO \"{s}\".identities (role, mailbox) VALUES ('{role}', 'alice@web');
             REVOKE EXECUTE ON FUNCTION \"{s}\".mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text, boolean) FROM PUBLIC;
             INSERT INTO \"{s}\".projects VALUES ('web', 'web', 'open', '2026-01-01T00:00:00Z');
             INSERT INTO \"{s}\".members VALUES ('web', 'bob', 'bob', '', 'active', '2026-01-01T00:00:00Z', NULL), ('web', 'alice', 'alice', '', 'active', '2026-01-01T00:00:00Z', NULL);"
        ))
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let agent = PgStore::open(&db.url_as(&role)).unwrap();
        let m = message("alice@web", &["bob@web"], "no grant");
        let e = agent
            .deliver_all(&m.to, &m)
            .expect_err("the send is refused");
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Refused);
        assert_eq!(
            e.to_string(),
            format!(
                "the PostgreSQL role '{role}' may not confirm the send here: it may not run mailroom's function mailroom_deliver; the operator grants it with GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA \"{s}\" TO \"{role}\" (see the least privilege in docs/POSTGRES.md)"
            )
        );
        // With the grant it names, the same role sends.
        db.admin()
            .batch_execute(&format!(
                "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA \"{s}\" TO \"{role}\""
            ))
            .unwrap();
        assert_eq!(agent.deliver_all(&m.to, &m).unwrap().new, vec![true]);
    }));
    let _ = admin.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// A server that takes connections and never says a word (a hung postmaster, a proxy that
/// black-holes): the whole login is bounded by `connect_timeout`, not only the TCP connect.
#[test]
fn a_server_that_takes_the_connection_and_never_answers_is_given_up_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept() {
            held.push(s);
        }
    });
    for mode in ["disable", "require"] {
        let url = format!(
            "postgres://alice:hunter2@127.0.0.1:{port}/mail?sslmode={mode}&connect_timeout=1"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(PgStore::open(&url).map(|_| ()).map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("sslmode={mode}: still connecting after 20 s"));
        assert_eq!(
            got.unwrap_err(),
            format!(
                "the PostgreSQL server at postgres://alice@127.0.0.1:{port}/mail did not answer: it took the connection but had not finished the login after 1 s; check that the address is a PostgreSQL server that is up, or give it longer with connect_timeout=SECONDS in the URL"
            ),
            "sslmode={mode}"
        );
    }
}

/// `sslrootcert=system` without `sslmode` is verify-full: a server (or a man in the middle)
/// that declines TLS gets nothing more, not a login in clear text.
#[test]
fn an_implied_verify_full_sends_nothing_to_a_server_that_declines_tls() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let port = listener.local_addr().expect("its address").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 8];
        if s.read_exact(&mut request).is_ok() && request == [0, 0, 0, 8, 4, 210, 22, 47] {
            let _ = s.write_all(b"N");
        }
        // What the client sends after being told "no TLS": nothing, then the close.
        let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let mut after = Vec::new();
        let _ = s.read_to_end(&mut after);
        let _ = tx.send(after);
    });
    let e = PgStore::open(&format!(
        "postgres://alice:hunter2@127.0.0.1:{port}/mail?sslrootcert=system"
    ))
    .unwrap_err();
    assert!(e.to_string().contains("does not offer TLS"), "{e}");
    let after = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the server saw the client go");
    assert!(
        after.is_empty(),
        "sent after the server declined TLS: {:?}",
        String::from_utf8_lossy(&after)
    );
}
