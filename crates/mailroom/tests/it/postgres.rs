//! The same CLI on a PostgreSQL store: `MAILROOM_URL`, `--url` or `url` in `.mailroom.toml`
//! point every command at the database, and nothing is written to the file home. Each test has
//! a schema of its own on the test server (see `mailroom_store_pg::testing`).

use std::process::{Command, Stdio};

use mailroom_store_pg::testing::TestDb;
use serde_json::{Value, json};

use crate::support::{BIN, Home, Watchdog};

/// A temporary home whose commands all run against a fresh PostgreSQL mailroom.
struct PgHome {
    home: Home,
    db: TestDb,
}

impl PgHome {
    fn new(test: &str) -> Option<PgHome> {
        Some(PgHome {
            db: TestDb::create(test)?,
            home: Home::new(),
        })
    }

    fn as_(&self, who: &str, args: &[&str]) -> crate::support::TestCommand {
        let mut c = self.home.as_(who, args);
        c.env("MAILROOM_URL", self.db.url());
        c
    }

    fn send(&self, from: &str, to: &str, body: &str) -> String {
        let v = self
            .as_(from, &["--json", "send", "--to", to, "--message", body])
            .json();
        v["id"].as_str().expect("an id").to_owned()
    }

    fn assert_no_file_home(&self) {
        assert!(
            !self.home.path().exists(),
            "a PostgreSQL mailroom writes nothing to the file home"
        );
    }
}

fn ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn a_hook_against_a_server_that_does_not_answer_warns_once_and_lets_the_session_go_on() {
    let home = Home::new();
    let run = home
        .cmd(["hook", "claude", "SessionStart"])
        .env(
            "MAILROOM_URL",
            "postgres://mailroom_nobody:hunter2secret@127.0.0.1:1/test",
        )
        .stdin(json!({"hook_event_name": "SessionStart"}).to_string())
        .ok();
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr.trim_end(),
        "mailroom hook: warning: cannot reach the PostgreSQL server at postgres://mailroom_nobody@127.0.0.1:1/test: connection refused; start the server, or correct the host and port of the URL; the session goes on without mail"
    );
}

#[test]
fn the_url_comes_from_the_flag_or_the_checkouts_settings_too() {
    let Some(h) = PgHome::new("url_sources") else {
        return;
    };
    let id = h.send("alice@web", "bob", "through the environment");
    let by_flag = h
        .home
        .as_("bob@web", ["--json", "--url", &h.db.url(), "inbox"])
        .json();
    assert_eq!(ids(&by_flag), vec![id.clone()]);
    let second = h.send("alice@web", "bob", "through the settings");
    let repo = h.home.root().join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("a checkout");
    std::fs::write(
        repo.join(".mailroom.toml"),
        format!(
            "project = \"web\"\nhandle = \"bob\"\nurl = \"{}\"\n",
            h.db.url()
        ),
    )
    .expect("settings");
    let by_config = h
        .home
        .cmd(["--json", "inbox"])
        // MAILROOM_HOME would name a mailroom before the checkout's settings do.
        .env_remove("MAILROOM_HOME")
        .current_dir(&repo)
        .json();
    assert_eq!(ids(&by_config), vec![id, second], "read mail stays pending");
    h.assert_no_file_home();
    let both = h
        .home
        .as_(
            "bob@web",
            ["--url", &h.db.url(), "--home", "/tmp/x", "inbox"],
        )
        .fails(2);
    assert!(both.stderr.contains("pass one of them"), "{}", both.stderr);
}

#[test]
fn connection_failures_are_one_sentence_that_never_shows_the_password() {
    let home = Home::new();
    let server = mailroom_store_pg::testing::server_url();
    let config = mailroom_store_pg::parse_url(&server).expect("the test URL parses");
    let host = mailroom_store_pg::shown_url(&config);
    let host = host
        .trim_start_matches("postgres://")
        .split_once('@')
        .map_or(host.as_str(), |(_, h)| h)
        .split('/')
        .next()
        .expect("host")
        .to_owned();
    let cases = [
        (
            "postgres://mailroom_nobody:hunter2secret@127.0.0.1:1/test".to_owned(),
            1,
            "cannot reach the PostgreSQL server at postgres://mailroom_nobody@127.0.0.1:1/test: connection refused",
        ),
        (
            format!("postgres://mailroom_no_such_role:hunter2secret@{host}/test"),
            1,
            "refused the login",
        ),
        (
            format!("postgres://postgres:hunter2secret@{host}/mailroom_no_such_db"),
            1,
            "the database 'mailroom_no_such_db' does not exist",
        ),
        (
            "mysql://root:hunter2secret@db/mail".to_owned(),
            2,
            "is not a PostgreSQL URL",
        ),
        (
            format!(
                "postgres://postgres:hunter2secret@{host}/test?sslmode=verify-full&sslrootcert=/nonexistent/mailroom-ca.pem"
            ),
            2,
            "the root certificate file /nonexistent/mailroom-ca.pem named for sslmode=verify-full does not exist",
        ),
    ];
    for (url, code, says) in cases {
        if code == 1 && mailroom_store_pg::testing::skipped("connection_failures") {
            continue;
        }
        let run = home
            .as_("bob@web", ["inbox"])
            .env("MAILROOM_URL", &url)
            .fails(code);
        assert!(run.stderr.contains(says), "{url}: {}", run.stderr);
        assert!(!run.stderr.contains("hunter2secret"), "{}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // Without sslrootcert, the root file is PGSSLROOTCERT's, as in libpq.
    let run = home
        .as_("bob@web", ["inbox"])
        .env(
            "MAILROOM_URL",
            format!("postgres://postgres:hunter2secret@{host}/test?sslmode=verify-ca"),
        )
        .env("PGSSLROOTCERT", "/nonexistent/pg-root.crt")
        .fails(2);
    assert!(
        run.stderr.contains(
            "the root certificate file /nonexistent/pg-root.crt named for sslmode=verify-ca does not exist"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !home.path().exists(),
        "a failed connection falls back to nothing"
    );
}

#[test]
fn a_wait_in_one_process_is_woken_by_a_send_from_another() {
    let Some(h) = PgHome::new("wait_across_processes") else {
        return;
    };
    h.send("alice@web", "bob", "warm up");
    h.as_("bob@web", &["inbox"]).ok();
    let waiter = Command::new(BIN)
        .args(["--as", "bob@web", "--json", "wait", "--timeout", "120"])
        .env("MAILROOM_URL", h.db.url())
        .env("MAILROOM_HOME", h.home.path())
        .env_remove("MAILROOM_AS")
        .current_dir(h.home.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the waiter starts");
    // Sent once the waiter sleeps on LISTEN: its notification is what wakes it.
    h.db.wait_for_listener("bob@web");
    let id = h.send("alice@web", "bob", "are you there?");
    let out = waiter.wait_with_output().expect("the waiter ends");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(ids(&v), vec![id]);
}

/// Starts `mailroom ARGS` as a long-lived process of `home` against `url`, with a watchdog
/// that kills it after a minute so a broken wake-up fails the test instead of hanging it.
fn spawn_host(home: &Home, url: &str, args: &[&str]) -> (std::process::Child, Watchdog) {
    let child = Command::new(BIN)
        .args(args)
        .env("MAILROOM_URL", url)
        .env("MAILROOM_HOME", home.path())
        .env_remove("MAILROOM_AS")
        .current_dir(home.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the process starts");
    let watchdog = Watchdog::arm(&child);
    (child, watchdog)
}

#[test]
fn three_hosts_share_one_server_and_a_cut_connection_loses_and_doubles_nothing() {
    use std::io::{BufRead, BufReader};
    let Some(db) = TestDb::create("three_hosts") else {
        return;
    };
    // Three hosts: each its own home, identity, processes and connection name.
    let hosts: Vec<(Home, String, &str)> = ["alice", "bob", "carol"]
        .into_iter()
        .map(|who| {
            let url = format!("{}&application_name=host_{who}_{}", db.url(), db.schema());
            (Home::new(), url, who)
        })
        .collect();
    let run = |i: usize, args: &[&str]| {
        let (home, url, who) = &hosts[i];
        let mut c = home.as_(&format!("{who}@web"), args);
        c.env("MAILROOM_URL", url);
        c
    };
    for who in ["alice", "bob", "carol"] {
        hosts[0]
            .0
            .as_("HUMAN", ["--project", "web", "roster", "add", who])
            .env("MAILROOM_URL", &hosts[0].1)
            .ok();
    }
    let (mut watch, watchdog) = spawn_host(
        &hosts[2].0,
        &hosts[2].1,
        &["--as", "carol@web", "--json", "watch"],
    );
    db.wait_for_listener("carol@web");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let mut next = || {
        let line = lines.next().expect("a line").expect("readable");
        let v: Value = serde_json::from_str(&line).expect("JSON");
        v["id"].as_str().expect("id").to_owned()
    };
    let send = |i: usize, args: &[&str]| -> String {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let v = run(i, &all).json();
        v["id"].as_str().expect("an id").to_owned()
    };
    let mut expected = Vec::new();
    let mut shown = Vec::new();
    for n in 0..3 {
        expected.push(send(
            0,
            &["send", "--to", "carol", "-m", &format!("alice {n}")],
        ));
        shown.push(next());
        expected.push(send(
            1,
            &["send", "--to", "carol", "-m", &format!("bob {n}")],
        ));
        shown.push(next());
    }
    let broadcast = send(1, &["send", "--broadcast", "-m", "deploy at 5"]);
    shown.push(next());
    send(0, &["channel", "post", "run-1", "-m", "step 1"]);

    // Cut every connection of carol's host mid-run.
    let mut admin = db.admin();
    let cut: i64 = admin
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t",
            &[&format!("host_carol_{}", db.schema())],
        )
        .expect("terminate")
        .get(0);
    assert!(cut >= 1, "the watch's connection was cut");
    for n in 3..6 {
        expected.push(send(
            0,
            &["send", "--to", "carol", "-m", &format!("alice {n}")],
        ));
        expected.push(send(
            1,
            &["send", "--to", "carol", "-m", &format!("bob {n}")],
        ));
    }
    let broadcast2 = send(0, &["send", "--broadcast", "-m", "deploy moved to 6"]);
    for _ in 0..7 {
        shown.push(next());
    }
    watch.kill().expect("kill the watch");
    watch.wait().expect("the watch ends");
    watchdog.disarm();

    let mut want = expected.clone();
    want.push(broadcast.clone());
    want.push(broadcast2.clone());
    want.sort();
    let mut got = shown.clone();
    got.sort();
    assert_eq!(
        got, want,
        "the watch showed each message once, across the cut"
    );

    // Carol's inbox: every directed message once, each broadcast once.
    let inbox = run(2, &["--json", "inbox"]).json();
    let mut ids_in = ids(&inbox);
    ids_in.sort();
    assert_eq!(ids_in, want, "nothing lost or doubled: {inbox}");
    let again = run(2, &["--json", "inbox"]).json();
    assert_eq!(
        ids(&again).len(),
        expected.len(),
        "broadcasts were shown once"
    );
    let channel = run(2, &["--json", "channel", "read", "run-1"]).json();
    assert!(channel.to_string().contains("step 1"), "{channel}");
    for (home, _, _) in &hosts {
        assert!(!home.path().exists(), "no host wrote files");
    }
}

/// Three network namespaces, the hosts of one test run, each linked to the root namespace
/// (where the test server is) by a veth pair on a /30 of its own in 198.18.0.0/15, the range
/// set aside for network tests, chosen by the process id so parallel runs do not collide.
/// Dropping it removes them with everything in them, even when the test fails.
struct Hosts {
    /// Per host: its namespace, the root side's link and the two ends' addresses.
    hosts: Vec<NetHost>,
}

struct NetHost {
    ns: String,
    link: String,
    gateway: std::net::Ipv4Addr,
    addr: std::net::Ipv4Addr,
}

/// Runs `program ARGS`; what went wrong as one line.
fn admin_command(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

impl Hosts {
    fn create(count: u32) -> Result<Hosts, String> {
        let pid = std::process::id();
        let base = u32::from(std::net::Ipv4Addr::new(198, 18, 0, 0)) + (pid % 8192) * 16;
        let mut made = Hosts { hosts: Vec::new() };
        for i in 0..count {
            let ns = format!("mailroom-it-{pid}-{i}");
            // Link names have at most 15 bytes.
            let link = format!("mr{pid}r{i}");
            let peer = format!("mr{pid}h{i}");
            let gateway = std::net::Ipv4Addr::from(base + 4 * i + 1);
            let addr = std::net::Ipv4Addr::from(base + 4 * i + 2);
            admin_command("ip", &["netns", "add", &ns])?;
            made.hosts.push(NetHost {
                ns: ns.clone(),
                link: link.clone(),
                gateway,
                addr,
            });
            for args in [
                vec![
                    "link", "add", &link, "type", "veth", "peer", "name", &peer, "netns", &ns,
                ],
                vec!["addr", "add", &format!("{gateway}/30"), "dev", &link],
                vec!["link", "set", &link, "up"],
                vec![
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{addr}/30"),
                    "dev",
                    &peer,
                ],
                vec!["-n", &ns, "link", "set", &peer, "up"],
                vec!["-n", &ns, "link", "set", "lo", "up"],
            ] {
                admin_command("ip", &args)?;
            }
        }
        // The partition needs a queue that drops everything (see `silence`).
        if let Some(h) = made.hosts.first() {
            let link = h.link.clone();
            admin_command(
                "tc",
                &["qdisc", "add", "dev", &link, "root", "pfifo", "limit", "0"],
            )?;
            admin_command("tc", &["qdisc", "del", "dev", &link, "root"])?;
        }
        Ok(made)
    }

    /// Drops every packet the root namespace sends to host `i`: it hears nothing more (no
    /// reset, no error), as behind a partition. Dropped on the root side, not in the host's
    /// own queue, which its TCP would take for congestion and retry forever.
    fn silence(&self, i: usize) {
        admin_command(
            "tc",
            &[
                "qdisc",
                "add",
                "dev",
                &self.hosts[i].link,
                "root",
                "pfifo",
                "limit",
                "0",
            ],
        )
        .expect("silence the link");
    }

    /// The source ports of the connections host `i` has begun to `port` in the root
    /// namespace and that are still half-open there (`SYN_RECV`: the answer did not reach it).
    fn half_open(&self, i: usize, port: u16) -> std::collections::BTreeSet<u16> {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        let endpoint = |field: &str| {
            let (addr, port) = field.split_once(':')?;
            let addr = u32::from_str_radix(addr, 16).ok()?;
            Some((
                std::net::Ipv4Addr::from(addr.to_ne_bytes()),
                u16::from_str_radix(port, 16).ok()?,
            ))
        };
        table
            .lines()
            .skip(1)
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (local, remote) = (endpoint(fields.get(1)?)?, endpoint(fields.get(2)?)?);
                (*fields.get(3)? == "03" && local.1 == port && remote.0 == self.hosts[i].addr)
                    .then_some(remote.1)
            })
            .collect()
    }

    fn restore(&self, i: usize) {
        admin_command("tc", &["qdisc", "del", "dev", &self.hosts[i].link, "root"])
            .expect("restore the link");
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for h in &self.hosts {
            // Deleting one end of a veth pair deletes both.
            let _ = admin_command("ip", &["link", "del", &h.link]);
            let _ = admin_command("ip", &["netns", "del", &h.ns]);
        }
    }
}

/// Forwards every connection to `at` (port chosen here) on to `server`, both ways; when either
/// side ends or fails, both are closed, so a host's connection that gives up ends its server
/// session too. Returns the port.
fn forwarder(at: std::net::Ipv4Addr, server: String) -> u16 {
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind((at, 0)).expect("a port on the host's link");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(upstream) = TcpStream::connect(&server) else {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone(), upstream.try_clone()),
                (upstream.try_clone(), client.try_clone()),
            ]
            .into_iter()
            .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        }
    });
    port
}

/// Why network namespaces cannot be made here, if they cannot.
fn netns_missing(probe: Result<Hosts, String>) -> Result<Hosts, String> {
    let reason = match probe {
        Ok(hosts) => return Ok(hosts),
        Err(reason) => reason,
    };
    let required = |var: &str| std::env::var(var).as_deref() == Ok("1");
    assert!(
        !(required("MAILROOM_TEST_PG_REQUIRED") && required("MAILROOM_TEST_NETNS")),
        "network namespaces are required here (MAILROOM_TEST_NETNS=1) but cannot be made: {reason}"
    );
    Err(reason)
}

#[test]
fn netns_three_hosts_behind_a_silent_partition_catch_up_with_nothing_lost_or_doubled() {
    use std::io::{BufRead, BufReader};
    let Some(db) = TestDb::create("netns_partition") else {
        return;
    };
    let test = "netns_three_hosts_behind_a_silent_partition_catch_up_with_nothing_lost_or_doubled";
    let net = match netns_missing(Hosts::create(3)) {
        Ok(net) => net,
        Err(reason) => {
            eprintln!(
                "{test}: NOT RUN: network namespaces cannot be made here ({reason}); run as root with iproute2, and set MAILROOM_TEST_NETNS=1 to require it"
            );
            return;
        }
    };
    // The test server's host:port, which each host reaches through a forwarder on its link.
    let shown = mailroom_store_pg::shown_url(
        &mailroom_store_pg::parse_url(&mailroom_store_pg::testing::server_url())
            .expect("the test server's URL"),
    );
    let server = shown
        .split_once('@')
        .map_or(shown.as_str(), |(_, r)| r)
        .trim_start_matches("postgres://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    let base = db.url();
    assert!(base.contains(&server), "{base} names {server}");
    // Each host: its own home, identity, namespace, processes and connection name, with
    // keepalives short enough that a dead connection is found in seconds.
    let ports: Vec<u16> = net
        .hosts
        .iter()
        .map(|h| forwarder(h.gateway, server.clone()))
        .collect();
    let hosts: Vec<(Home, String, &str, &str)> = ["alice", "bob", "carol"]
        .into_iter()
        .zip(net.hosts.iter().zip(&ports))
        .map(|(who, (h, port))| {
            let url = format!(
                "{}&application_name=net_{who}_{}&keepalives_idle=1&keepalives_interval=1&keepalives_count=2&connect_timeout=2",
                base.replacen(&server, &format!("{}:{port}", h.gateway), 1),
                db.schema()
            );
            (Home::new(), url, who, h.ns.as_str())
        })
        .collect();
    let run = |i: usize, args: &[&str]| {
        let (home, url, who, ns) = &hosts[i];
        let mut c = home.as_(&format!("{who}@web"), args);
        c.env("MAILROOM_URL", url).inside(ns);
        c
    };
    let spawn = |i: usize, args: &[&str]| {
        let (home, url, who, ns) = &hosts[i];
        let child = Command::new("ip")
            .args(["netns", "exec", ns, BIN, "--as", &format!("{who}@web")])
            .args(args)
            .env("MAILROOM_URL", url)
            .env("MAILROOM_HOME", home.path())
            .env_remove("MAILROOM_AS")
            .current_dir(home.root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the process starts");
        let watchdog = Watchdog::arm(&child);
        (child, watchdog)
    };
    let send = |i: usize, args: &[&str]| -> String {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let v = run(i, &all).json();
        v["id"].as_str().expect("an id").to_owned()
    };
    for who in ["alice", "bob", "carol"] {
        hosts[0]
            .0
            .as_("HUMAN", ["--project", "web", "roster", "add", who])
            .env("MAILROOM_URL", &hosts[0].1)
            .inside(hosts[0].3)
            .ok();
    }

    // A wait on bob's host is woken by a send from alice's.
    let (waiter, watchdog) = spawn(1, &["--json", "wait", "--timeout", "120"]);
    db.wait_for_listener("bob@web");
    let id = send(0, &["send", "--to", "bob", "-m", "are you there?"]);
    let out = waiter.wait_with_output().expect("the waiter ends");
    watchdog.disarm();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(ids(&v), vec![id]);

    // Carol watches; directed mail, a broadcast and a channel entry reach her.
    let (mut watch, watchdog) = spawn(2, &["--json", "watch"]);
    db.wait_for_listener("carol@web");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let mut next = || {
        let line = lines.next().expect("a line").expect("readable");
        let v: Value = serde_json::from_str(&line).expect("JSON");
        v["id"].as_str().expect("id").to_owned()
    };
    let mut expected = Vec::new();
    let mut shown = Vec::new();
    expected.push(send(0, &["send", "--to", "carol", "-m", "alice 0"]));
    shown.push(next());
    expected.push(send(1, &["send", "--to", "carol", "-m", "bob 0"]));
    shown.push(next());
    let broadcast = send(1, &["send", "--broadcast", "-m", "deploy at 5"]);
    shown.push(next());
    send(0, &["channel", "post", "run-1", "-m", "step 1"]);

    // Carol's host hears nothing more, without a word: her watch's notifications are lost
    // on the way while the others go on sending.
    net.silence(2);
    for n in 1..3 {
        expected.push(send(
            0,
            &["send", "--to", "carol", "-m", &format!("alice {n}")],
        ));
        expected.push(send(
            1,
            &["send", "--to", "carol", "-m", &format!("bob {n}")],
        ));
    }
    // Her keepalives go unanswered and her side gives the connection up: the forwarder then
    // closes the server's side, whose session ends. PostgreSQL says so by no event, only by
    // pg_stat_activity, so this polls for that condition.
    let mut admin = db.admin();
    let name = format!("net_carol_{}", db.schema());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .expect("sessions")
            .get(0);
        if n == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "carol's host gave up no connection within 30 s of going silent"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    expected.push(send(0, &["send", "--to", "carol", "-m", "alice 3"]));
    expected.push(send(1, &["send", "--to", "carol", "-m", "bob 3"]));
    let broadcast2 = send(0, &["send", "--broadcast", "-m", "deploy moved to 6"]);
    // The outage outlasts a reconnection: her host tries again and again (two attempts seen
    // half-open here), its watch still running.
    let mut tried = std::collections::BTreeSet::new();
    while tried.len() < 2 {
        tried.extend(net.half_open(2, ports[2]));
        assert!(
            std::time::Instant::now() < deadline,
            "carol's host did not try twice to reconnect within 30 s of going silent"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // Back on the network, her watch catches up: each message once (the watchdog fails the
    // test if it never does).
    net.restore(2);
    let back = std::time::Instant::now();
    for _ in 0..7 {
        shown.push(next());
    }
    let caught_up = back.elapsed();
    watch.kill().expect("kill the watch");
    watch.wait().expect("the watch ends");
    watchdog.disarm();
    let extra: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(extra.is_empty(), "the watch showed more: {extra:?}");
    eprintln!("{test}: carol's watch caught up {caught_up:?} after her link came back");

    let mut want = expected.clone();
    want.push(broadcast);
    want.push(broadcast2);
    want.sort();
    let mut got = shown;
    got.sort();
    assert_eq!(
        got, want,
        "the watch showed each message once, across the partition"
    );
    let inbox = run(2, &["--json", "inbox"]).json();
    let mut ids_in = ids(&inbox);
    ids_in.sort();
    assert_eq!(ids_in, want, "nothing lost or doubled: {inbox}");
    let channel = run(2, &["--json", "channel", "read", "run-1"]).json();
    assert!(channel.to_string().contains("step 1"), "{channel}");
    for (home, _, _, _) in &hosts {
        assert!(!home.path().exists(), "no host wrote files");
    }
}

/// Everything a mailroom holds that `export` copies, in a comparable form.
fn dump(store: &dyn mailroom_core::Store) -> String {
    use mailroom_core::message::ChannelRef;
    use mailroom_core::{Address, Name};
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut mailboxes = vec![Address::human()];
    let mut readers = Vec::new();
    for p in store.projects().unwrap() {
        writeln!(out, "project {} {}", p.name, p.policy.as_str()).unwrap();
        let mut names = vec![Name::parse("HUMAN").unwrap()];
        for m in store.roster(&p.name).unwrap() {
            writeln!(out, "  member {} {:?} {:?}", m.handle, m.role, m.status).unwrap();
            mailboxes.push(Address::in_project(m.handle.clone(), p.name.clone()));
            names.push(m.handle);
        }
        readers.push((p.name, names));
    }
    for mb in &mailboxes {
        // Compared by id: the file store lists by state, then id.
        let mut all = store.everything(mb).unwrap().messages;
        all.sort_by_key(|s| s.message.id);
        for s in all {
            let m = &s.message;
            writeln!(
                out,
                "{mb}: {} {} r{} thread {} re {:?} {:?} {:?}",
                m.id, s.state, m.revision, m.thread, m.reply_to, m.subject, m.body
            )
            .unwrap();
        }
        let archived: Vec<String> = store
            .recently_archived(mb, 100)
            .unwrap()
            .into_iter()
            .map(|(s, at)| format!("{} at {at}", s.message.id))
            .collect();
        writeln!(out, "{mb}: recover order {archived:?}").unwrap();
        let revisions = store.revisions(mb).unwrap();
        assert_eq!(revisions.damaged, vec![], "{mb}");
        for m in revisions.messages {
            writeln!(
                out,
                "{mb}: earlier {} r{} {:?} edited {:?}",
                m.id, m.revision, m.body, m.edited
            )
            .unwrap();
        }
        if let Some(path) = store.origin(mb).unwrap() {
            writeln!(out, "{mb}: claimed by {path}").unwrap();
        }
        for m in store.outbox(mb).unwrap() {
            writeln!(out, "{mb}: sent {} r{} to {:?}", m.id, m.revision, m.to).unwrap();
        }
        for (key, id) in store.keys(mb).unwrap() {
            writeln!(out, "{mb}: key {key:?} claimed {id}").unwrap();
        }
    }
    for (project, names) in readers {
        for name in store.channels(&project).unwrap() {
            let c = ChannelRef {
                project: project.clone(),
                name,
            };
            for s in store.entries(&c, true).unwrap().messages {
                writeln!(
                    out,
                    "#{c}: {} {} {:?}",
                    s.message.id, s.state, s.message.body
                )
                .unwrap();
            }
            for r in &names {
                let mut seen = store.seen(&c, r).unwrap();
                seen.sort();
                writeln!(out, "#{c}: seen by {r}: {seen:?}").unwrap();
            }
        }
    }
    out
}

#[test]
fn export_copies_a_whole_mailroom_to_postgresql_and_back_and_again_adds_nothing() {
    let Some(db) = TestDb::create("export_round_trip") else {
        return;
    };
    let home = Home::new();
    for who in ["alice", "bob", "carol"] {
        home.as_(
            "HUMAN",
            ["--project", "web", "roster", "add", who, "--role", "dev"],
        )
        .ok();
    }
    let unread = home.send("alice@web", "bob", "still unread");
    let read = home.send("alice@web", "bob", "to be read");
    home.as_("bob@web", ["read", &read]).ok();
    let done = home.send("alice@web", "bob", "to be done");
    home.as_("bob@web", ["done", &done]).ok();
    let later = home.send("carol@web", "bob", "done later");
    home.as_("bob@web", ["done", &later]).ok();
    let cancelled = home.send("alice@web", "carol", "never mind");
    home.as_("alice@web", ["cancel", &cancelled]).ok();
    home.as_(
        "alice@web",
        ["edit", &unread, "--message", "still unread, edited"],
    )
    .ok();
    let question = home.send("bob@web", "alice", "a question");
    home.as_("alice@web", ["reply", &question, "--message", "an answer"])
        .ok();
    home.send("bob@web", "HUMAN", "for the operator");
    home.as_("alice@web", ["send", "--broadcast", "-m", "deploy at 5"])
        .ok();
    home.as_("bob@web", ["inbox"]).ok();
    let gone = home
        .as_("alice@web", ["--json", "send", "--broadcast", "-m", "oops"])
        .json();
    home.as_("alice@web", ["retract", gone["id"].as_str().unwrap()])
        .ok();
    home.as_("carol@web", ["channel", "post", "run-1", "-m", "step 1"])
        .ok();
    home.as_(
        "carol@web",
        [
            "send",
            "--to",
            "alice",
            "--idempotency-key",
            "deploy:42",
            "-m",
            "keyed",
        ],
    )
    .ok();
    let files = mailroom_store_fs::FsStore::new(home.path());
    let before = dump(&files);

    let url = db.url();
    let refused = home.as_("alice@web", ["export", "--to", &url]).fails(4);
    assert!(
        refused.stderr.contains("only the operator"),
        "{}",
        refused.stderr
    );
    let first = home.as_("HUMAN", ["--json", "export", "--to", &url]).json();
    assert!(first["copies"]["new"].as_u64().unwrap() > 0, "{first}");
    let pg = mailroom_store_pg::PgStore::open(&url).unwrap();
    assert_eq!(dump(&pg), before, "files → PostgreSQL keeps everything");

    let again = home.as_("HUMAN", ["--json", "export", "--to", &url]).json();
    assert_eq!(first["keys"]["new"], 1, "{first}");
    assert_eq!(first["revisions"]["new"], 1, "{first}");
    // bob's two done copies, and alice's question closed by her reply.
    assert_eq!(first["archive_times"]["new"], 3, "{first}");
    for part in [
        "projects",
        "members",
        "copies",
        "outbox",
        "entries",
        "seen",
        "keys",
        "revisions",
        "archive_times",
        "marks",
        "origins",
    ] {
        assert_eq!(again[part]["new"], 0, "{part}: {again}");
    }
    assert_eq!(dump(&pg), before, "a second export adds nothing");

    let back = home.root().join("back");
    let out = home
        .as_("HUMAN", ["export", "--to", back.to_str().unwrap()])
        .env("MAILROOM_URL", &url)
        .env_remove("MAILROOM_HOME")
        .stdout();
    assert!(out.starts_with("exported to "), "{out}");
    let returned = mailroom_store_fs::FsStore::new(&back);
    assert_eq!(
        dump(&returned),
        before,
        "PostgreSQL → files keeps everything"
    );
    let same = home
        .as_("HUMAN", ["export", "--to", home.path().to_str().unwrap()])
        .fails(2);
    assert!(
        same.stderr.contains("this very mailroom"),
        "{}",
        same.stderr
    );
}

/// What a session left in a file home survives the move to PostgreSQL and back: a message edited
/// twice then read keeps its earlier revisions, `recover` lists the archive in the same order
/// with the same times, the checkout's claim on its identity stays, and the hooks' mark is
/// carried over, so a mid-session hook against the copy says nothing new. Each export run
/// again changes nothing.
#[test]
fn export_carries_revisions_archive_times_marks_and_claims_both_ways() {
    let Some(db) = TestDb::create("export_session_state") else {
        return;
    };
    let url = db.url();
    let home = Home::new();
    let checkout = home.root().join("src").join("web");
    std::fs::create_dir_all(checkout.join(".git")).expect("a checkout");
    let hook = |event: &str, url: Option<&str>, dir: Option<&std::path::Path>| {
        let mut c = home.cmd(["hook", "claude", event]);
        c.stdin(json!({"hook_event_name": event, "cwd": checkout}).to_string());
        if let Some(url) = url {
            c.env("MAILROOM_URL", url);
        }
        if let Some(dir) = dir {
            c.env("MAILROOM_HOME", dir);
        }
        c.ok()
    };
    let edited = home.send("api@default", "web", "first draft");
    home.as_(
        "api@default",
        ["edit", &edited, "--message", "second draft"],
    )
    .ok();
    home.as_("api@default", ["edit", &edited, "--message", "final"])
        .ok();
    home.as_("web@default", ["read", &edited]).ok();
    let [a, b, c] = ["a", "b", "c"].map(|body| home.send("api@default", "web", body));
    for id in [&c, &a, &b] {
        home.as_("web@default", ["done", id]).ok();
    }
    home.send("api@default", "web", "still pending");
    // A command run in the checkout claims the name for it.
    home.cmd(["send", "--to", "api", "-m", "on it"])
        .current_dir(&checkout)
        .ok();
    let start = hook("SessionStart", None, None);
    assert!(start.stdout.contains("still pending"), "{start:?}");
    assert_eq!(hook("PostToolUse", None, None).stdout, "");
    let files = mailroom_store_fs::FsStore::new(home.path());
    let before = dump(&files);
    assert!(before.contains(" r1 \"first draft\""), "{before}");
    assert!(before.contains(" r2 \"second draft\""), "{before}");
    assert!(before.contains("claimed by "), "{before}");

    let first = home.as_("HUMAN", ["--json", "export", "--to", &url]).json();
    for (part, total) in [
        ("revisions", 2),
        ("archive_times", 3),
        ("marks", 1),
        ("origins", 1),
    ] {
        assert_eq!(
            first[part],
            json!({"total": total, "new": total}),
            "{part}: {first}"
        );
    }
    let pg = mailroom_store_pg::PgStore::open(&url).unwrap();
    assert_eq!(dump(&pg), before, "files → PostgreSQL");
    let quiet = hook("PostToolUse", Some(&url), None);
    assert_eq!(
        (quiet.stdout.as_str(), quiet.stderr.as_str()),
        ("", ""),
        "the carried mark: nothing new"
    );
    let again = home.as_("HUMAN", ["--json", "export", "--to", &url]).json();
    let nothing_new = |run: &Value| {
        for part in [
            "projects",
            "members",
            "copies",
            "outbox",
            "entries",
            "seen",
            "keys",
            "revisions",
            "archive_times",
            "marks",
            "origins",
        ] {
            assert_eq!(run[part]["new"], 0, "{part}: {run}");
        }
    };
    nothing_new(&again);
    assert_eq!(dump(&pg), before, "a second export changes nothing");

    let back = home.root().join("back");
    let export_back = || {
        home.as_(
            "HUMAN",
            ["--json", "export", "--to", back.to_str().unwrap()],
        )
        .env("MAILROOM_URL", &url)
        .json()
    };
    let returned = export_back();
    assert_eq!(
        returned["marks"],
        json!({"total": 1, "new": 1}),
        "{returned}"
    );
    let copy = mailroom_store_fs::FsStore::new(&back);
    assert_eq!(dump(&copy), before, "PostgreSQL → files");
    let quiet = hook("PostToolUse", None, Some(&back));
    assert_eq!(
        (quiet.stdout.as_str(), quiet.stderr.as_str()),
        ("", ""),
        "carried again: nothing new"
    );
    nothing_new(&export_back());
    assert_eq!(dump(&copy), before, "a second export back changes nothing");

    // Mail that arrives after the mark: the mark no longer holds, and is not carried.
    home.send("api@default", "web", "after the mark");
    let stale = home.root().join("stale");
    let run = home
        .as_(
            "HUMAN",
            ["--json", "export", "--to", stale.to_str().unwrap()],
        )
        .json();
    assert_eq!(run["marks"], json!({"total": 1, "new": 0}), "{run}");
    let news = hook("PostToolUse", None, Some(&stale));
    assert!(news.stdout.contains("after the mark"), "{news:?}");
}

/// Roles made for one test, dropped at its end whatever happens.
/// Role SQL (`CREATE ROLE`, grants on the database, `DROP OWNED`) of tests running at once
/// would update the same catalog rows ("tuple concurrently updated"): one at a time.
static ROLE_SQL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_role_sql(db: &TestDb, sql: &str) -> Result<(), String> {
    let _one = ROLE_SQL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    db.admin().batch_execute(sql).map_err(|e| e.to_string())
}

struct Roles<'a> {
    db: &'a TestDb,
    names: Vec<String>,
}

impl<'a> Roles<'a> {
    fn new(db: &'a TestDb) -> Roles<'a> {
        Roles { db, names: vec![] }
    }

    /// A strict-mode role acting as `who@web`, made by running the SQL `mailroom role` prints
    /// (as the tables' owner), dropped with the others: its name and its URL.
    fn agent(&mut self, h: &PgHome, who: &str) -> (String, String) {
        let tag = h.db.schema().trim_start_matches("mailroom_test_");
        let name = format!("mr_{who}_{tag}");
        let sql = h
            .as_("HUMAN", &["role", &format!("{who}@web"), "--name", &name])
            .stdout();
        assert!(sql.contains("CREATE ROLE"), "{sql}");
        assert!(
            sql.contains(&format!("?options=-c%20search_path%3D{}", h.db.schema())),
            "the agent's URL names the schema: {sql}"
        );
        run_role_sql(self.db, &sql).expect("the printed SQL runs");
        self.names.push(name.clone());
        let url = h.db.url_as(&name);
        (name, url)
    }
}

/// `mailroom --as WHO ARGS` in `h`'s home, connected with `url` (an agent role's).
fn as_role(h: &PgHome, url: &str, who: &str, args: &[&str]) -> crate::support::TestCommand {
    let mut c = h.home.as_(who, args);
    c.env("MAILROOM_URL", url);
    c
}

impl Drop for Roles<'_> {
    fn drop(&mut self) {
        for r in &self.names {
            let _ = run_role_sql(
                self.db,
                &format!("DROP OWNED BY \"{r}\"; DROP ROLE IF EXISTS \"{r}\""),
            );
        }
    }
}

/// Exporting is the operator's: into an agent role's connection it is refused before anything
/// is written, not half-way through with part of the home copied in the wrong state.
#[test]
fn export_into_a_strict_agent_role_is_refused_before_it_writes() {
    let Some(h) = PgHome::new("export_strict") else {
        return;
    };
    h.as_("HUMAN", &["--project", "web", "roster", "add", "alice"])
        .ok();
    h.as_("HUMAN", &["--project", "web", "roster", "add", "bob"])
        .ok();
    let mut roles = Roles::new(&h.db);
    let (_, alice_url) = roles.agent(&h, "alice");
    // A file home where bob has read and archived alice's message.
    let files = Home::new();
    files
        .as_(
            "alice@web",
            ["send", "--to", "bob", "-m", "archived in files"],
        )
        .ok();
    files.as_("bob@web", ["inbox"]).ok();
    files.as_("bob@web", ["archive"]).ok();
    let count = || -> i64 {
        h.db.admin()
            .query_one(
                &format!("SELECT count(*) FROM {}.copies", h.db.schema()),
                &[],
            )
            .expect("count")
            .get(0)
    };
    let before = count();
    let refused = files.as_("HUMAN", ["export", "--to", &alice_url]).fails(4);
    assert!(
        refused.stderr.contains("may not act as HUMAN"),
        "{}",
        refused.stderr
    );
    assert_eq!(count(), before, "nothing was written");
}

#[test]
fn strict_mode_roles_can_neither_read_nor_forge_each_others_mail() {
    let Some(h) = PgHome::new("strict_mode") else {
        return;
    };
    // The operator (the tables' owner) sets up the project and the roster.
    for who in ["alice", "bob"] {
        h.as_("HUMAN", &["--project", "web", "roster", "add", who])
            .ok();
    }
    let mut roles = Roles::new(&h.db);
    let (_, alice_url) = roles.agent(&h, "alice");
    let (_, bob_url) = roles.agent(&h, "bob");
    let as_role = |url: &str, who: &str, args: &[&str]| as_role(&h, url, who, args);
    // Each speaks as itself.
    let to_bob = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--to", "bob", "-m", "for bob only"],
    )
    .json();
    let to_bob = to_bob["id"].as_str().unwrap().to_owned();
    as_role(
        &bob_url,
        "bob@web",
        &["send", "--to", "alice", "-m", "for alice only"],
    )
    .ok();
    let secret = h.send("HUMAN", "bob@web", "operator secret for bob");
    // Alice's role reads nothing of bob's mailbox but the copy of what she sent herself, and
    // moves nothing in it.
    let peeked = as_role(&alice_url, "bob@web", &["--json", "inbox"]).run();
    assert_eq!(peeked.code, 4, "{peeked:?}");
    assert!(
        !peeked.stdout.contains("operator secret") && !peeked.stderr.contains("operator secret"),
        "{peeked:?}"
    );
    let read = as_role(&alice_url, "bob@web", &["read", &secret]).fails(4);
    assert!(
        read.stderr.contains("may not act as bob@web"),
        "{}",
        read.stderr
    );
    let bob = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    let states: Vec<(&str, &str)> = bob["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![(to_bob.as_str(), "unread"), (secret.as_str(), "unread")],
        "bob's mail is all there and still unread: alice's role moved nothing"
    );
    // Neither can forge the other, nor speak as the operator, nor change the roster.
    let forged = as_role(
        &alice_url,
        "bob@web",
        &["send", "--to", "alice", "-m", "I am bob"],
    )
    .fails(4);
    assert!(forged.stderr.contains("strict mode"), "{}", forged.stderr);
    let human = as_role(
        &bob_url,
        "HUMAN",
        &["send", "--to", "alice@web", "-m", "from the operator"],
    )
    .fails(4);
    assert!(human.stderr.contains("mr_bob_"), "{}", human.stderr);
    let roster = as_role(&bob_url, "bob@web", &["roster", "add", "mallory"]).run();
    assert_ne!(roster.code, 0, "a role does not change rosters");
    let alice = as_role(&alice_url, "alice@web", &["--json", "inbox"]).json();
    let bodies: Vec<&str> = alice["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        bodies,
        vec!["for alice only"],
        "no forged mail reached alice"
    );
    // A send that would put a new mailbox on the roster is the operator's to make; nothing
    // is delivered.
    let newcomer = as_role(
        &bob_url,
        "bob@web",
        &["send", "--to", "newguy", "-m", "hello"],
    )
    .fails(4);
    assert!(
        newcomer.stderr.contains("may not add a member"),
        "{}",
        newcomer.stderr
    );
    // Nobody acts as another through an operation that only reads or retracts either: the
    // identity is checked up front, not left to rows that silently do not match.
    let broadcast = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--broadcast", "-m", "news"],
    )
    .json();
    let broadcast = broadcast["id"].as_str().unwrap().to_owned();
    let retract = as_role(&bob_url, "alice@web", &["retract", &broadcast]).fails(4);
    assert!(retract.stderr.contains("strict mode"), "{}", retract.stderr);
    let backup = h.home.root().join("partial-backup");
    let export = as_role(&bob_url, "HUMAN", &["export", "--to"])
        .args([&backup])
        .fails(4);
    assert!(
        export.stderr.contains("may not act as HUMAN"),
        "{}",
        export.stderr
    );
    assert!(!backup.exists(), "a refused export writes nothing");
    let members = h
        .as_("HUMAN", &["--project", "web", "--json", "roster"])
        .json();
    assert!(!members.to_string().contains("mallory"), "{members}");
    assert!(!members.to_string().contains("newguy"), "{members}");
    let news = h
        .as_(
            "HUMAN",
            &["--project", "web", "--json", "channel", "show", "all"],
        )
        .json();
    assert!(
        news.to_string().contains("news"),
        "the broadcast stands: {news}"
    );
    // What only an export writes stays the operator's: a role keeps no revision in another's
    // name and sets no archive time on a copy it may not move.
    use mailroom_core::{Address, Mailboxes as _, Message, MessageId};
    as_role(&bob_url, "bob@web", &["done", &to_bob]).ok();
    let bob_box = Address::parse_canonical("bob@web").unwrap();
    let owner = mailroom_store_pg::PgStore::open(&h.db.url()).unwrap();
    let alice_store = mailroom_store_pg::PgStore::open(&alice_url).unwrap();
    let id = MessageId::parse(&to_bob).unwrap();
    let archived = owner.recently_archived(&bob_box, 10).unwrap();
    assert_eq!(archived.len(), 1);
    assert!(
        !alice_store
            .set_archived_at(&bob_box, id, "2001-01-01T00:00:00Z".parse().unwrap())
            .unwrap(),
        "the sender of a done copy may not move it"
    );
    assert_eq!(owner.recently_archived(&bob_box, 10).unwrap(), archived);
    let forged = Message {
        from: bob_box.clone(),
        body: "bob never wrote this".into(),
        ..archived[0].0.message.clone()
    };
    // Refused by the database, or (no copy of that message from that sender) kept nowhere.
    assert!(
        !alice_store
            .keep_revision(&bob_box, &forged)
            .unwrap_or(false)
    );
    let own_but_done = Message {
        body: "a history alice never had".into(),
        ..archived[0].0.message.clone()
    };
    assert!(
        alice_store.keep_revision(&bob_box, &own_but_done).is_err(),
        "a revision only of a copy still unread, as an edit keeps"
    );
    let secret_copy = owner
        .get(&bob_box, MessageId::parse(&secret).unwrap())
        .unwrap()
        .unwrap()
        .message;
    let not_hers = Message {
        from: Address::parse_canonical("alice@web").unwrap(),
        ..secret_copy
    };
    assert!(
        !alice_store
            .keep_revision(&bob_box, &not_hers)
            .unwrap_or(false),
        "a revision only of a copy she sent"
    );
    assert!(owner.revisions(&bob_box).unwrap().messages.is_empty());
    let draft = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--to", "bob", "-m", "draft"],
    )
    .json();
    let draft = draft["id"].as_str().unwrap().to_owned();
    as_role(
        &alice_url,
        "alice@web",
        &["edit", &draft, "--message", "final"],
    )
    .ok();
    let kept: Vec<(String, u32)> = owner
        .revisions(&bob_box)
        .unwrap()
        .messages
        .iter()
        .map(|m| (m.id.to_string(), m.revision))
        .collect();
    assert_eq!(kept, vec![(draft, 1)], "her own edit keeps its revision");
    // The operator exports it all, strict mode or not.
    let full = h.home.root().join("full-backup");
    let run = h
        .as_(
            "HUMAN",
            &["--json", "export", "--to", full.to_str().unwrap()],
        )
        .json();
    assert_eq!(run["archive_times"], json!({"total": 1, "new": 1}), "{run}");
    assert_eq!(run["revisions"], json!({"total": 1, "new": 1}), "{run}");
}

/// What the database itself refuses a strict-mode role: a copy not as a send delivers it
/// (already read, or archived with an archive time of its choosing, or at a revision it never
/// had), and re-addressing or re-dating a copy it sent. Everything the CLI does as an agent still
/// works, and the owner's export and doctor too.
/// A listing's moves are one statement on PostgreSQL: row-level security and the trigger of
/// migration 0009 let a role move its own copies that way, a whole inbox at once, and never
/// another's.
#[test]
fn strict_mode_roles_move_a_whole_listing_of_their_own_copies_at_once() {
    use mailroom_core::{Address, Mailboxes as _, MessageId, State};
    let Some(h) = PgHome::new("strict_listing") else {
        return;
    };
    for who in ["alice", "bob"] {
        h.as_("HUMAN", &["--project", "web", "roster", "add", who])
            .ok();
    }
    let mut roles = Roles::new(&h.db);
    let (_, alice_url) = roles.agent(&h, "alice");
    let (_, bob_url) = roles.agent(&h, "bob");
    let as_role = |url: &str, who: &str, args: &[&str]| as_role(&h, url, who, args);
    let sent: Vec<MessageId> = (0..5)
        .map(|i| {
            let note = format!("note {i}");
            let v = as_role(
                &alice_url,
                "alice@web",
                &["--json", "send", "--to", "bob", "-m", &note],
            )
            .json();
            MessageId::parse(v["id"].as_str().unwrap()).unwrap()
        })
        .collect();
    let bob_box = Address::parse_canonical("bob@web").unwrap();
    let owner = mailroom_store_pg::PgStore::open(&h.db.url()).unwrap();
    let states = || {
        let copies: Vec<(&Address, MessageId)> = sent.iter().map(|id| (&bob_box, *id)).collect();
        owner.states(&copies).unwrap()
    };
    // The sender's role moves none of them, though it may read them and cancel each.
    let alice_store = mailroom_store_pg::PgStore::open(&alice_url).unwrap();
    let listing: Vec<(MessageId, State)> = sent.iter().map(|id| (*id, State::Unread)).collect();
    let refused = alice_store.transition(&bob_box, &listing, State::Read);
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(states(), vec![Some(State::Unread); 5]);

    let inbox = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    let shown: Vec<&str> = inbox["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap())
        .collect();
    assert_eq!(shown, vec!["unread"; 5], "{inbox}");
    assert_eq!(states(), vec![Some(State::Read); 5]);
    as_role(&bob_url, "bob@web", &["done", "--all"]).ok();
    assert_eq!(states(), vec![Some(State::Done); 5]);
    assert_eq!(owner.recently_archived(&bob_box, 10).unwrap().len(), 5);
}

#[test]
fn strict_mode_roles_deliver_copies_only_as_sent_and_never_readdress_them() {
    let Some(h) = PgHome::new("strict_copies") else {
        return;
    };
    for who in ["alice", "bob", "carol"] {
        h.as_("HUMAN", &["--project", "web", "roster", "add", who])
            .ok();
    }
    let schema = h.db.schema().to_owned();
    let mut roles = Roles::new(&h.db);
    let (alice_role, alice_url) = roles.agent(&h, "alice");
    let (_, bob_url) = roles.agent(&h, "bob");
    let as_role = |url: &str, who: &str, args: &[&str]| as_role(&h, url, who, args);
    let to_bob = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--to", "bob", "-m", "hello b"],
    )
    .json();
    let to_bob = to_bob["id"].as_str().unwrap().to_owned();
    let from_carol = h.send("carol@web", "bob@web", "from c");
    // The review's statements, as alice's role.
    let mut alice_sql = h.db.admin();
    alice_sql
        .batch_execute(&format!(
            "SET search_path = {schema}; SET ROLE \"{alice_role}\""
        ))
        .unwrap();
    let plant = |state: &str, moved_ns: &str, revision: u32, id: &str| {
        format!(
            "INSERT INTO copies (mailbox, id, state, moved_ns, sender, recipients, subject, body, kind, priority, date, thread, revision) \
             VALUES ('bob@web', '{id}', '{state}', {moved_ns}, 'alice@web', '{{bob@web}}', 'planted', 'x', 'INFO', 'M', \
             '2026-12-01T06:13:24Z', '{id}', {revision})"
        )
    };
    for (sql, what) in [
        (
            plant(
                "done",
                "4102444800000000000",
                1,
                "01M8R3S3JW7WMVYAHK197XDJJ9",
            ),
            "an archived copy with an archive time in 2100",
        ),
        (
            plant("read", "NULL", 1, "01M8R3S3JW7WMVYAHK197XDJJ8"),
            "a copy already read",
        ),
        (
            plant(
                "unread",
                "4102444800000000000",
                1,
                "01M8R3S3JW7WMVYAHK197XDJJ7",
            ),
            "an unread copy with an archive time",
        ),
        (
            plant("unread", "NULL", 5, "01M8R3S3JW7WMVYAHK197XDJJ6"),
            "a copy at a revision never sent",
        ),
        (
            format!(
                "UPDATE copies SET mailbox = 'carol@web' WHERE mailbox = 'bob@web' AND id = '{to_bob}'"
            ),
            "re-addressing an unread copy",
        ),
        (
            format!(
                "UPDATE copies SET recipients = '{{carol@web}}' WHERE mailbox = 'bob@web' AND id = '{to_bob}'"
            ),
            "changing its recipients",
        ),
        (
            format!(
                "UPDATE copies SET date = '2001-01-01T00:00:00Z' WHERE mailbox = 'bob@web' AND id = '{to_bob}'"
            ),
            "re-dating it",
        ),
        (
            format!(
                "UPDATE copies SET id = '01M8R3S3JW7WMVYAHK197XDJJ5' WHERE mailbox = 'bob@web' AND id = '{to_bob}'"
            ),
            "changing its id",
        ),
    ] {
        let refused = alice_sql.batch_execute(&sql);
        assert!(refused.is_err(), "refused: {what}");
        alice_sql.batch_execute("ROLLBACK").ok();
    }
    drop(alice_sql);
    let bob = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    let states: Vec<(&str, &str)> = bob["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![(to_bob.as_str(), "unread"), (from_carol.as_str(), "unread")],
        "nothing planted, nothing moved away"
    );
    let recover = as_role(&bob_url, "bob@web", &["--json", "recover"]).run();
    assert!(!recover.stdout.contains("planted"), "{}", recover.stdout);
    // What the agents do still works: an edit in place, an edit after reading (a
    // correction), a cancel, a reply, an archive and a restore. (Bob's inbox above read his
    // mail.)
    let draft = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--to", "bob", "-m", "draft"],
    )
    .json();
    let draft = draft["id"].as_str().unwrap().to_owned();
    let edited = as_role(
        &alice_url,
        "alice@web",
        &["--json", "edit", &draft, "--message", "final"],
    )
    .json();
    assert!(edited.to_string().contains("edited"), "{edited}");
    as_role(
        &alice_url,
        "alice@web",
        &["edit", &to_bob, "--message", "hello b, corrected"],
    )
    .ok();
    let dropped = as_role(
        &alice_url,
        "alice@web",
        &["--json", "send", "--to", "bob", "-m", "never mind"],
    )
    .json();
    let dropped = dropped["id"].as_str().unwrap().to_owned();
    as_role(&alice_url, "alice@web", &["cancel", &dropped]).ok();
    as_role(&bob_url, "bob@web", &["reply", &to_bob, "-m", "thanks"]).ok();
    as_role(&bob_url, "bob@web", &["done", &to_bob]).ok();
    as_role(&bob_url, "bob@web", &["recover", "--restore", &to_bob]).ok();
    let bob = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    let bodies: Vec<(&str, &str)> = bob["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["body"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(bodies.len(), 4, "{bob}");
    assert!(bodies.contains(&("hello b", "read")), "restored: {bob}");
    assert!(bodies.contains(&("from c", "read")), "{bob}");
    assert!(
        bodies.contains(&("final", "unread")),
        "edited in place: {bob}"
    );
    assert!(
        bodies
            .iter()
            .any(|(b, s)| b.contains("hello b, corrected") && *s == "unread"),
        "the correction arrived: {bob}"
    );
    let alice = as_role(&alice_url, "alice@web", &["--json", "inbox"]).json();
    assert!(alice.to_string().contains("thanks"), "{alice}");
    // The owner's export and doctor are not held to any of it.
    let full = h.home.root().join("full-backup");
    let run = h
        .as_(
            "HUMAN",
            &["--json", "export", "--to", full.to_str().unwrap()],
        )
        .json();
    assert_eq!(run["not_copied"], json!([]), "{run}");
    assert_eq!(run["revisions"], json!({"total": 1, "new": 1}), "{run}");
    let healthy = h.as_("HUMAN", &["doctor"]).ok();
    assert!(
        healthy.stdout.ends_with(": healthy\n"),
        "{}",
        healthy.stdout
    );
    drop(roles);
}

/// A TCP proxy to the test server that lets everything through until the client sends a
/// statement containing `marker`: it forwards that, swallows the server's answer and closes
/// the client's side, as a network that fails at the worst moment would. Every connection
/// through it is cut so. Returns the port to connect to.
fn proxy_cutting_at(server: String, marker: &'static [u8]) -> u16 {
    use std::io::{Read as _, Write as _};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut upstream) = TcpStream::connect(&server) else {
                return;
            };
            let cut = Arc::new(AtomicBool::new(false));
            let (mut c_read, mut u_write) = (
                client.try_clone().expect("clone"),
                upstream.try_clone().expect("clone"),
            );
            let seen = cut.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = c_read.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if buf[..n].windows(marker.len()).any(|w| w == marker) {
                        seen.store(true, Ordering::SeqCst);
                    }
                    if u_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
            let mut buf = [0u8; 65536];
            while let Ok(n) = upstream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if cut.load(Ordering::SeqCst) {
                    // The server answered (the statement is done); the client never hears it.
                    let _ = client.shutdown(Shutdown::Both);
                    let _ = upstream.shutdown(Shutdown::Both);
                    break;
                }
                if client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    });
    port
}

#[test]
fn a_send_whose_commit_cannot_be_confirmed_says_so_and_never_claims_success() {
    let Some(h) = PgHome::new("unconfirmed_send") else {
        return;
    };
    // Everything the send needs exists, so its one transaction is the send itself.
    h.send("alice@web", "bob", "warm up");
    let config = mailroom_store_pg::parse_url(&h.db.url()).expect("the URL parses");
    let server = mailroom_store_pg::shown_url(&config)
        .trim_start_matches("postgres://")
        .split_once('@')
        .map(|(_, rest)| rest.split('/').next().unwrap_or("").to_owned())
        .expect("host:port");
    // A send is one statement, committed as it ends: the proxy cuts at it (at its message's
    // body, which travels with the statement's execution: the statement itself is prepared
    // before), on the first connection and on the new one the store opens to run it again.
    let port = proxy_cutting_at(server.clone(), b"did this arrive?");
    // In clear text, so that the proxy sees the statement go by (the default `prefer` would
    // encrypt where the test server has TLS on).
    let through_proxy = format!(
        "{}&sslmode=disable",
        h.db.url()
            .replacen(&server, &format!("127.0.0.1:{port}"), 1)
    );
    let run = h
        .home
        .as_(
            "alice@web",
            ["send", "--to", "bob", "-m", "did this arrive?"],
        )
        .env("MAILROOM_URL", &through_proxy)
        .fails(1);
    assert!(
        run.stderr
            .contains("broke while it was asked to confirm the send")
            && run.stderr.contains("may or may not have happened"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("sent"),
        "no success reported: {}",
        run.stdout
    );
    // Here the commit did happen: looking, as the message says, finds it once.
    let bob = h.as_("bob@web", &["--json", "inbox"]).json();
    let bodies: Vec<&str> = bob["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().expect("body"))
        .collect();
    assert_eq!(bodies, vec!["warm up", "did this arrive?"]);
}

#[test]
fn a_password_file_others_may_read_is_ignored_with_a_warning() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(h) = PgHome::new("pgpass_shared") else {
        return;
    };
    let file = h.home.root().join("pgpass");
    std::fs::write(&file, "*:*:*:*:s3cret-from-file\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = h.as_("alice@web", &["whoami"]);
    cmd.env("PGPASSFILE", &file).env_remove("PGPASSWORD");
    let run = cmd.ok();
    assert_eq!(
        run.stderr,
        format!(
            "mailroom: warning: the password file {} may be read by its group or others, so it is ignored; make it private with chmod 600 {}\n",
            file.display(),
            file.display()
        )
    );
    // Private, it is read (the test server trusts loopback, so any password logs in), and no
    // output ever shows the password.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = h.as_("alice@web", &["whoami"]);
    cmd.env("PGPASSFILE", &file).env_remove("PGPASSWORD");
    let run = cmd.ok();
    assert_eq!(run.stderr, "");
    assert!(!run.stdout.contains("s3cret"), "{}", run.stdout);
}

#[test]
fn doctor_on_postgres_finds_mail_off_the_roster_and_grants_to_missing_roles() {
    let Some(h) = PgHome::new("pg_doctor") else {
        return;
    };
    h.send("alice@web", "bob", "hello");
    let healthy = h.as_("HUMAN", &["doctor"]).ok();
    assert!(
        healthy.stdout.ends_with(": healthy\n"),
        "{}",
        healthy.stdout
    );
    let s = h.db.schema().to_owned();
    h.db.admin()
        .batch_execute(&format!(
            "DELETE FROM {s}.members WHERE handle_key = 'bob'; \
             INSERT INTO {s}.identities (role, mailbox) VALUES ('mr_nobody_{s}', 'carol@web')"
        ))
        .unwrap();
    let run = h.as_("HUMAN", &["doctor"]).fails(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(
        lines[0].ends_with(&format!(
            " identities: grants 1 mailbox(es) to the role 'mr_nobody_{s}', which does not exist (fix: create the role (mailroom role prints its SQL) or delete its rows from identities)"
        )),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(
            " bob@web: holds 1 message but is not on the roster of project 'web' (fix: as HUMAN: mailroom --project web roster add bob)"
        ),
        "{}",
        lines[1]
    );
    assert!(run.stderr.contains("2 problems remain"), "{}", run.stderr);
    // --fix finishes the send that was cut short: bob joins the roster again (a kill -9
    // between a delivery and its roster entry leaves exactly this); the grant stays to fix.
    let fixed = h.as_("HUMAN", &["doctor", "--fix"]).fails(1);
    assert!(
        fixed.stdout.contains(
            " bob@web: holds 1 message but is not on the roster of project 'web' (fixed: added to the roster as an active member, as the send that delivered it would have)"
        ),
        "{}",
        fixed.stdout
    );
    assert!(
        fixed.stderr.contains("1 problem remains"),
        "{}",
        fixed.stderr
    );
    let roster = h.as_("HUMAN", &["--project", "web", "roster"]).ok();
    assert!(roster.stdout.contains("bob"), "{}", roster.stdout);
    let inbox = h.as_("bob@web", &["inbox"]).ok();
    assert!(inbox.stdout.contains("hello"), "{}", inbox.stdout);
}

/// What a strict-mode role does, logged in as itself, to each table of mailroom's (and to
/// another application's table in the same schema): the database refuses (42501) everything
/// mailroom's own operations would not do, and what they do is allowed only for the role's own
/// rows. Each statement runs in a transaction rolled back after it, so the table reads row by
/// row; after it the CLI's whole flow still works as the role.
#[test]
fn strict_mode_attack_table_every_table_and_statement_as_an_agent_role() {
    let Some(h) = PgHome::new("strict_attacks") else {
        return;
    };
    for who in ["alice", "bob", "carol"] {
        h.as_("HUMAN", &["--project", "web", "roster", "add", who])
            .ok();
    }
    h.as_(
        "HUMAN",
        &["projects", "add", "secretp", "--policy", "roster"],
    )
    .ok();
    h.as_("HUMAN", &["--project", "secretp", "roster", "add", "boss"])
        .ok();
    let schema = h.db.schema().to_owned();
    // Another application's table, there before the role is made.
    h.db.admin()
        .batch_execute(&format!(
            "CREATE TABLE \"{schema}\".app_notes (note text); INSERT INTO \"{schema}\".app_notes VALUES ('private')"
        ))
        .unwrap();
    let mut roles = Roles::new(&h.db);
    let (alice_role, alice_url) = roles.agent(&h, "alice");
    let (_, bob_url) = roles.agent(&h, "bob");
    let as_role = |url: &str, who: &str, args: &[&str]| as_role(&h, url, who, args);
    let id_of = |v: Value| v["id"].as_str().unwrap().to_owned();
    let to_bob = id_of(
        as_role(
            &alice_url,
            "alice@web",
            &["--json", "send", "--to", "bob", "-m", "hello b"],
        )
        .json(),
    );
    let to_alice = id_of(
        as_role(
            &bob_url,
            "bob@web",
            &["--json", "send", "--to", "alice", "-m", "hello a"],
        )
        .json(),
    );
    let from_carol = h.send("carol@web", "bob@web", "from c");
    h.as_("HUMAN", &["--project", "web", "roster", "add", "dave"])
        .ok();
    h.as_(
        "HUMAN",
        &["--project", "web", "roster", "deactivate", "dave"],
    )
    .ok();
    let bobs_broadcast = id_of(
        as_role(
            &bob_url,
            "bob@web",
            &["--json", "send", "--broadcast", "-m", "all hands"],
        )
        .json(),
    );
    let alices_post = id_of(
        as_role(
            &alice_url,
            "alice@web",
            &["--json", "channel", "post", "general", "-m", "status"],
        )
        .json(),
    );
    // Leases: alice's and bob's, taken through the CLI as their roles, and an expired one of
    // carol's, as a lease left to run out stays; and a token of alice's, the operator's.
    as_role(&alice_url, "alice@web", &["reserve", "src/alice/**"]).ok();
    as_role(&bob_url, "bob@web", &["reserve", "src/bob/**"]).ok();
    h.db.admin()
        .batch_execute(&format!(
            "INSERT INTO \"{schema}\".leases VALUES ('web', '01KBEXP1RED000000000000000', 'carol@web', 'carol@web', 'old/**', true, NULL, 1, 2)"
        ))
        .unwrap();
    h.as_("HUMAN", &["token", "add", "alice@web"]).ok();

    let mut alice = h.db.client_as(&alice_role);
    let now_ns = "(extract(epoch FROM now()) * 1e9)::bigint";
    let now_date = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";
    let fresh_id = "01KBFAKE0000000000000000AA";
    // A send through mailroom's delivery function, as alice, with one argument replaced.
    let deliver = |keys: &str,
                   recipients: &str,
                   id: &str,
                   date: &str,
                   reply: &str,
                   thread: &str| {
        format!(
            "SELECT mailroom_deliver({keys}, {keys}, {keys}, '{id}', 'alice@web', 'alice@web', \
             {recipients}, 's', 'b', 'INFO', 'normal', {date}, {reply}, '{thread}', 1, NULL, NULL, true)"
        )
    };
    let ok_send = deliver(
        "ARRAY['bob@web']",
        "ARRAY['bob@web']",
        fresh_id,
        now_date,
        "NULL",
        fresh_id,
    );
    let post = |project: &str, sender: &str| {
        format!(
            "SELECT mailroom_post('{project}', 'general', 'general', '{fresh_id}', '{sender}', '{{}}', \
             's', 'b', 'INFO', 'normal', {now_date}, NULL, '{fresh_id}', 1, NULL, 'general@{project}', NULL)"
        )
    };
    let tables = [
        "mailroom_schema",
        "identities",
        "projects",
        "members",
        "mailboxes",
        "mailbox_counts",
        "copies",
        "revisions",
        "outbox",
        "keys",
        "channels",
        "entries",
        "seen",
        "leases",
        "tokens",
        "app_notes",
    ];
    let mut rows: Vec<(String, String)> = Vec::new();
    // Every table × every statement: what is not the role's to do at all. Tokens, even the
    // hashes, are the operator's alone. Of the leases a blanket DELETE takes alice's own and
    // the expired one, and a blanket UPDATE touches only hers.
    for t in tables {
        let readable = !["app_notes", "tokens"].contains(&t);
        rows.push((
            format!("SELECT count(*) FROM {t}"),
            if readable { "rows" } else { "refused" }.into(),
        ));
        rows.push((
            format!("DELETE FROM {t}"),
            if t == "leases" { "2 rows" } else { "refused" }.into(),
        ));
        rows.push((format!("TRUNCATE {t}"), "refused".into()));
        let insertable = ["revisions", "outbox", "keys", "seen"].contains(&t);
        if !insertable {
            rows.push((format!("INSERT INTO {t} DEFAULT VALUES"), "refused".into()));
        }
        if !["copies", "outbox"].contains(&t) {
            let col = match t {
                "mailroom_schema" => "version = version",
                "identities" => "mailbox = mailbox",
                "projects" | "channels" => "name = name",
                "members" => "status = status",
                "mailboxes" | "mailbox_counts" => "generation = generation",
                "app_notes" => "note = note",
                _ => "id = id",
            };
            rows.push((
                format!("UPDATE {t} SET {col}"),
                if t == "leases" { "1 row" } else { "refused" }.into(),
            ));
        }
    }
    let expect = |rows: &mut Vec<(String, String)>, sql: String, outcome: &str| {
        rows.push((sql, outcome.to_owned()));
    };
    // 7: copies and entries into a roster project alice is not on, and as another sender.
    expect(
        &mut rows,
        format!(
            "INSERT INTO copies (mailbox, id, state, sender, recipients, subject, body, kind, priority, date, thread, revision) VALUES ('boss@secretp', '{fresh_id}', 'unread', 'alice@web', '{{boss@secretp}}', 's', 'b', 'INFO', 'normal', {now_date}, '{fresh_id}', 1)"
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['boss@secretp']",
            "ARRAY['boss@secretp']",
            fresh_id,
            now_date,
            "NULL",
            fresh_id,
        ),
        "refused",
    );
    expect(
        &mut rows,
        format!(
            "INSERT INTO entries (project_key, channel_key, id, sender, recipients, subject, body, kind, priority, date, thread, revision) VALUES ('secretp', 'all', '{fresh_id}', 'alice@web', '{{}}', 's', 'b', 'INFO', 'normal', {now_date}, '{fresh_id}', 1)"
        ),
        "refused",
    );
    expect(&mut rows, post("secretp", "alice@web"), "refused");
    expect(&mut rows, post("web", "bob@web"), "refused");
    expect(
        &mut rows,
        ok_send.replace("'alice@web', 'alice@web'", "'bob@web', 'bob@web'"),
        "refused",
    );
    // 8: entries are append-only; a retraction only of one's own broadcast, by the function.
    expect(
        &mut rows,
        format!(
            "UPDATE entries SET body = 'rewritten', date = '2001-01-01T00:00:00Z' WHERE id = '{bobs_broadcast}'"
        ),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE entries SET body = 'rewritten' WHERE id = '{alices_post}'"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE entries SET retracted = true WHERE id = '{bobs_broadcast}'"),
        "refused",
    );
    expect(
        &mut rows,
        format!("SELECT mailroom_retract('web', 'all', '{bobs_broadcast}')"),
        "refused",
    );
    expect(
        &mut rows,
        format!("SELECT mailroom_retract('web', 'general', '{alices_post}')"),
        "refused",
    );
    expect(
        &mut rows,
        "SELECT mailroom_retract('secretp', 'all', '01KBFAKE0000000000000000AB')".into(),
        "refused",
    );
    // 9: counters and mailbox rows, channels.
    expect(
        &mut rows,
        "UPDATE mailbox_counts SET generation = generation - 1 WHERE key = 'bob@web'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE mailboxes SET key = 'x@web', address = 'x@web' WHERE key = 'bob@web'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE mailboxes SET generation = 0".into(),
        "refused",
    );
    expect(
        &mut rows,
        "INSERT INTO mailbox_counts VALUES ('bob@web', 9, -100)".into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE channels SET name = 'ALL', generation = 0 WHERE key = 'all'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "SELECT mailroom_count('bob@web', 'bob@web', 'x')".into(),
        "refused",
    );
    expect(
        &mut rows,
        "SELECT mailroom_mark_injected('bob@web', 'bob@web', 'g0')".into(),
        "refused",
    );
    expect(
        &mut rows,
        "SELECT mailroom_claim_origin('bob@web', 'bob@web', '/elsewhere')".into(),
        "refused",
    );
    // Her own mailbox's marks and count, through the same functions.
    for own in [
        "SELECT mailroom_count('alice@web', 'alice@web', 'x')",
        "SELECT mailroom_mark_injected('alice@web', 'alice@web', 'g1')",
        "SELECT mailroom_claim_origin('alice@web', 'alice@web', '/checkout')",
    ] {
        expect(&mut rows, own.into(), "ok");
    }
    // 10: a copy only as a send makes it.
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['HUMAN', 'carol@web']",
            fresh_id,
            now_date,
            "NULL",
            fresh_id,
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web', 'carol@web']",
            fresh_id,
            now_date,
            "NULL",
            fresh_id,
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web']",
            fresh_id,
            now_date,
            &format!("'{from_carol}'"),
            &from_carol,
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web']",
            fresh_id,
            now_date,
            "NULL",
            &from_carol,
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web']",
            fresh_id,
            "'2100-01-01T00:00:00Z'",
            "NULL",
            fresh_id,
        ),
        "refused",
    );
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web']",
            &from_carol,
            now_date,
            "NULL",
            &from_carol,
        ),
        "refused",
    );
    expect(
        &mut rows,
        ok_send.replace(", 1, NULL, NULL, true)", ", 4, NULL, NULL, true)"),
        "refused",
    );
    // An inactive member, and a handle on no roster (a send would add it).
    for nobody in ["dave@web", "erin@web"] {
        let to = format!("ARRAY['{nobody}']");
        expect(
            &mut rows,
            deliver(&to, &to, fresh_id, now_date, "NULL", fresh_id),
            "refused",
        );
    }
    expect(&mut rows, ok_send.clone(), "ok");
    expect(
        &mut rows,
        deliver(
            "ARRAY['bob@web']",
            "ARRAY['bob@web']",
            fresh_id,
            now_date,
            &format!("'{to_alice}'"),
            &to_alice,
        ),
        "ok",
    );
    // A copy in alice's own mailbox: she moves it, and changes nothing else.
    let mine = format!("WHERE mailbox = 'alice@web' AND id = '{to_alice}'");
    expect(
        &mut rows,
        format!(
            "UPDATE copies SET state = 'read', moved = nextval('moves'), moved_ns = {now_ns} {mine}"
        ),
        "1 row",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET channel = 'general@web' {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET moved = 1 {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET moved_ns = 0 {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET revision = 7, edited = {now_date} {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET body = 'not what bob wrote' {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET state = 'cancelled', moved_ns = {now_ns} {mine}"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET state = 'read', moved_ns = 4102444800000000000 {mine}"),
        "refused",
    );
    // Alice's unread copy in bob's mailbox: she cancels it, or edits it keeping the revision.
    let sent = format!("WHERE mailbox = 'bob@web' AND id = '{to_bob}'");
    expect(
        &mut rows,
        format!(
            "UPDATE copies SET state = 'cancelled', moved = nextval('moves'), moved_ns = {now_ns} {sent}"
        ),
        "1 row",
    );
    expect(
        &mut rows,
        format!("UPDATE copies SET state = 'read', moved_ns = {now_ns} {sent}"),
        "refused",
    );
    expect(
        &mut rows,
        format!(
            "UPDATE copies SET body = 'silently rewritten', revision = 2, edited = {now_date} {sent}"
        ),
        "refused",
    );
    expect(
        &mut rows,
        format!(
            "INSERT INTO revisions SELECT mailbox, id, revision, sender, recipients, subject, body, kind, priority, date, reply_to, thread, edited, channel FROM copies {sent}; UPDATE copies SET body = 'edited', revision = 2, edited = {now_date} {sent}"
        ),
        "1 row",
    );
    // Carol's copy in bob's mailbox is not alice's to see or touch.
    expect(
        &mut rows,
        format!("UPDATE copies SET state = 'done' WHERE id = '{from_carol}'"),
        "0 rows",
    );
    // Outbox traces, keys and seen marks: her own, as her operations write them.
    expect(
        &mut rows,
        format!("UPDATE outbox SET date = '2001-01-01T00:00:00Z' WHERE id = '{to_bob}'"),
        "refused",
    );
    expect(
        &mut rows,
        format!("UPDATE outbox SET thread = '{from_carol}' WHERE id = '{to_bob}'"),
        "refused",
    );
    expect(
        &mut rows,
        format!(
            "INSERT INTO outbox (sender_key, id, sender, recipients, subject, body, kind, priority, date, thread, revision) VALUES ('alice@web', '{fresh_id}', 'alice@web', '{{bob@web}}', 's', 'b', 'INFO', 'normal', '2100-01-01T00:00:00Z', '{fresh_id}', 1)"
        ),
        "refused",
    );
    expect(
        &mut rows,
        format!(
            "INSERT INTO outbox (sender_key, id, sender, recipients, subject, body, kind, priority, date, thread, revision) VALUES ('bob@web', '{fresh_id}', 'bob@web', '{{alice@web}}', 's', 'b', 'INFO', 'normal', {now_date}, '{fresh_id}', 1)"
        ),
        "refused",
    );
    expect(
        &mut rows,
        format!("INSERT INTO keys VALUES ('bob@web', 'k', '{fresh_id}')"),
        "refused",
    );
    expect(
        &mut rows,
        format!("INSERT INTO keys VALUES ('alice@web', 'k', '{fresh_id}')"),
        "1 row",
    );
    expect(
        &mut rows,
        format!("UPDATE keys SET id = '{fresh_id}'"),
        "refused",
    );
    expect(
        &mut rows,
        format!("INSERT INTO seen VALUES ('web', 'all', 'bob', '{bobs_broadcast}')"),
        "refused",
    );
    expect(
        &mut rows,
        format!("INSERT INTO seen VALUES ('web', 'all', 'alice', '{bobs_broadcast}')"),
        "1 row",
    );
    expect(
        &mut rows,
        format!(
            "INSERT INTO revisions SELECT mailbox, id, revision, sender, recipients, subject, body, kind, priority, date, reply_to, thread, edited, channel FROM copies WHERE id = '{to_alice}'"
        ),
        "refused",
    );
    // Leases: taken, renewed and released only as mailroom's operations do, in her own name
    // and project, for at most a day; another's active lease is not hers to touch.
    let lease = |project: &str, holder: &str, holder_key: &str, until: &str| {
        format!(
            "INSERT INTO leases (project_key, id, holder, holder_key, pattern, exclusive, since, until) VALUES ('{project}', '{fresh_id}', '{holder}', '{holder_key}', 'src/**', true, extract(epoch FROM now())::bigint, {until})"
        )
    };
    let in_an_hour = "extract(epoch FROM now())::bigint + 3600";
    expect(
        &mut rows,
        lease("web", "alice@web", "alice@web", in_an_hour),
        "1 row",
    );
    expect(
        &mut rows,
        lease("web", "bob@web", "bob@web", in_an_hour),
        "refused",
    );
    expect(
        &mut rows,
        lease("web", "bob@web", "alice@web", in_an_hour),
        "refused",
    );
    expect(
        &mut rows,
        lease("secretp", "alice@web", "alice@web", in_an_hour),
        "refused",
    );
    expect(
        &mut rows,
        lease(
            "web",
            "alice@web",
            "alice@web",
            "extract(epoch FROM now())::bigint + 10 * 365 * 86400",
        ),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE leases SET until = until + 3600 WHERE holder_key = 'alice@web'".into(),
        "1 row",
    );
    expect(
        &mut rows,
        "UPDATE leases SET until = until + 86400 * 365 WHERE holder_key = 'alice@web'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE leases SET until = until + 3600 WHERE holder_key = 'bob@web'".into(),
        "0 rows",
    );
    expect(
        &mut rows,
        "UPDATE leases SET holder = 'bob@web', holder_key = 'bob@web' WHERE holder_key = 'alice@web'"
            .into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE leases SET holder = 'bob@web' WHERE holder_key = 'alice@web'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE leases SET project_key = 'secretp' WHERE holder_key = 'alice@web'".into(),
        "refused",
    );
    expect(
        &mut rows,
        "DELETE FROM leases WHERE holder_key = 'bob@web'".into(),
        "0 rows",
    );
    expect(
        &mut rows,
        "DELETE FROM leases WHERE holder_key = 'carol@web'".into(),
        "1 row",
    );
    // Tokens: no hash to read, none to plant for HUMAN, none to move to herself.
    expect(&mut rows, "SELECT hash FROM tokens".into(), "refused");
    expect(
        &mut rows,
        format!(
            "INSERT INTO tokens VALUES ('0123456789ab', NULL, 'HUMAN', repeat('a', 64), {now_date}, NULL)"
        ),
        "refused",
    );
    expect(
        &mut rows,
        "UPDATE tokens SET address = 'alice@web'".into(),
        "refused",
    );
    // The CLI's refusals, replayed: roster and projects, acting as another, HUMAN.
    expect(&mut rows, "INSERT INTO members VALUES ('web', 'mallory', 'mallory', '', 'active', '2026-01-01T00:00:00Z', NULL)".into(), "refused");
    expect(
        &mut rows,
        "UPDATE projects SET policy = 'open' WHERE key = 'secretp'".into(),
        "refused",
    );
    expect(
        &mut rows,
        format!("INSERT INTO identities VALUES ('{alice_role}', 'bob@web')"),
        "refused",
    );
    expect(&mut rows, "SELECT note FROM app_notes".into(), "refused");
    expect(
        &mut rows,
        "INSERT INTO app_notes VALUES ('planted')".into(),
        "refused",
    );

    let mut mismatches = Vec::new();
    for (sql, want) in &rows {
        let mut tx = alice.transaction().unwrap();
        // The rows the last statement changed.
        let mut outcome = Ok(0);
        for statement in sql.split("; ") {
            outcome = tx.execute(statement, &[]);
            if outcome.is_err() {
                break;
            }
        }
        let got = match outcome {
            Err(e) if e.code().map(|c| c.code()) == Some("42501") => "refused".to_owned(),
            Err(e) => format!("failed: {e}"),
            Ok(_) if sql.starts_with("SELECT") => "rows".to_owned(),
            Ok(n) => format!("{n} row{}", if n == 1 { "" } else { "s" }),
        };
        drop(tx);
        let want = match want.as_str() {
            "ok" => "rows",
            w => w,
        };
        if got != want {
            mismatches.push(format!("{sql}\n  want {want}, got {got}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} statements:\n{}",
        mismatches.len(),
        rows.len(),
        mismatches.join("\n")
    );
    let carols: i64 = alice
        .query_one("SELECT count(*) FROM copies WHERE id = $1", &[&from_carol])
        .unwrap()
        .get(0);
    assert_eq!(carols, 0, "carol's mail to bob is not alice's to see");
    drop(alice);

    // Nothing of it stayed, and the whole flow still works as the roles.
    let bob_inbox = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    assert!(bob_inbox.to_string().contains("hello b"), "{bob_inbox}");
    as_role(&bob_url, "bob@web", &["read", &to_bob]).ok();
    as_role(&bob_url, "bob@web", &["reply", &to_bob, "-m", "got it"]).ok();
    let draft = id_of(
        as_role(
            &alice_url,
            "alice@web",
            &["--json", "send", "--to", "bob", "-m", "draft"],
        )
        .json(),
    );
    as_role(
        &alice_url,
        "alice@web",
        &["edit", &draft, "--message", "final"],
    )
    .ok();
    let dropped = id_of(
        as_role(
            &alice_url,
            "alice@web",
            &["--json", "send", "--to", "bob", "-m", "never mind"],
        )
        .json(),
    );
    as_role(&alice_url, "alice@web", &["cancel", &dropped]).ok();
    let refused = as_role(&alice_url, "alice@web", &["retract", &alices_post]).run();
    assert_ne!(refused.code, 0, "a channel's entries are never retracted");
    as_role(&bob_url, "bob@web", &["retract", &bobs_broadcast]).ok();
    let channel = as_role(
        &bob_url,
        "bob@web",
        &["--json", "channel", "read", "general"],
    )
    .json();
    assert!(channel.to_string().contains("status"), "{channel}");
    let waited = as_role(
        &alice_url,
        "alice@web",
        &["--json", "wait", "--reply-to", &to_bob, "--timeout", "5"],
    )
    .run();
    assert_eq!(waited.code, 0, "{}{}", waited.stdout, waited.stderr);
    assert!(waited.stdout.contains("got it"), "{}", waited.stdout);
    // A hook as the role shows new mail once: its injection mark is written by the role.
    let cwd = h.home.root().to_string_lossy().into_owned();
    let hook = |event: &str| {
        as_role(&bob_url, "bob@web", &["hook", "claude", event])
            .stdin(json!({ "cwd": cwd }).to_string())
            .ok()
            .stdout
    };
    hook("SessionStart");
    as_role(
        &alice_url,
        "alice@web",
        &["send", "--to", "bob", "-m", "news for the hook"],
    )
    .ok();
    assert!(
        hook("UserPromptSubmit").contains("news for the hook"),
        "the hook shows the new mail"
    );
    assert_eq!(hook("UserPromptSubmit"), "", "and only once");
    let bob_inbox = as_role(&bob_url, "bob@web", &["--json", "inbox"]).json();
    let bodies = bob_inbox.to_string();
    assert!(
        bodies.contains("final") && !bodies.contains("never mind"),
        "{bob_inbox}"
    );
    let healthy = h.as_("HUMAN", &["doctor"]).ok();
    assert!(
        healthy.stdout.ends_with(": healthy\n"),
        "{}",
        healthy.stdout
    );
    drop(roles);
}
