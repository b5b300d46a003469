//! `mcp --listen`: MCP over Streamable HTTP through the real binary, with a raw HTTP client
//! (and rustls over it for HTTPS).

use std::io::{BufRead as _, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::Arc;

use serde_json::Value;

use crate::support::{Home, both_stores};

/// A running `mailroom mcp --listen`, killed when dropped.
struct Served {
    child: Child,
    /// The URL it printed on its first line.
    url: String,
    /// `IP:PORT`.
    addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(home: &Home, extra: &[&str]) -> Served {
        let mut child = home
            .process()
            .args(["mcp", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first.trim().to_owned();
        let addr = url
            .split_once("://")
            .and_then(|(_, rest)| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("not a URL: {url:?}"))
            .to_owned();
        Served { child, url, addr }
    }

    fn port(&self) -> &str {
        self.addr.rsplit_once(':').unwrap().1
    }
}

/// One HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.head, self.body))
    }
}

/// Writes one request on `s` (closing after it) and reads the whole answer.
fn exchange(
    s: &mut (impl Read + Write),
    host: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("host: {host}\r\n"));
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("mcp-protocol-version"))
    {
        req.push_str("mcp-protocol-version: 2025-06-18\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    // A TLS peer that closes without close_notify is still a whole answer here.
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {raw:?}"));
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// One request on a fresh plain connection.
fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    exchange(&mut s, addr, method, headers, body)
}

fn post(addr: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let a = request(addr, "POST", headers, body);
    (a.status, format!("{}\r\n\r\n{}", a.head, a.body))
}

fn call(tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

fn initialize(version: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
}

fn token(home: &Home, address: &str, name: &str) -> String {
    home.as_("HUMAN", ["token", "add", address, "--name", name])
        .stdout()
        .trim()
        .to_owned()
}

#[test]
fn mcp_over_http_acts_as_the_tokens_identity_and_refuses_everything_else() {
    let home = Home::new();
    let bob = token(&home, "bob@web", "bob");
    let served = Served::start(&home, &[]);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    let addr = served.addr.as_str();
    let auth = format!("Bearer {bob}");
    let init = initialize("2025-06-18");
    let init = init.as_str();

    let (status, answer) = post(addr, &[], init);
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{answer}"
    );
    let (status, _) = post(addr, &[("authorization", "Bearer mailroom_wrong")], init);
    assert_eq!(status, 401);
    let (status, answer) = post(addr, &[("authorization", &auth)], init);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");

    // A write acts as bob@web, the token's identity.
    let (status, answer) = post(
        addr,
        &[("authorization", &auth)],
        &call(
            "write_mail",
            r#"{"recipient":"alice@web","body":"over http"}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains("\"isError\":true"), "{answer}");
    let inbox = home.as_("alice@web", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["from"], "bob@web", "{inbox}");

    // DNS rebinding and foreign pages.
    let (status, _) = post(
        addr,
        &[("authorization", &auth), ("host", "evil.example:80")],
        init,
    );
    assert_eq!(status, 403);
    let (status, _) = post(
        addr,
        &[("authorization", &auth), ("origin", "http://evil.example")],
        init,
    );
    assert_eq!(status, 403);
    let big = "x".repeat(2 * 1024 * 1024 + 1);
    let (status, _) = post(addr, &[("authorization", &auth)], &big);
    assert_eq!(status, 413);

    // Revoked: refused at the next request, no restart.
    home.as_("HUMAN", ["token", "revoke", "bob"]).ok();
    let (status, _) = post(addr, &[("authorization", &auth)], init);
    assert_eq!(status, 401);
}

/// A self-signed certificate for `localhost`, written as PEM into the home's root; its paths
/// and the certificate's DER.
fn self_signed(home: &Home) -> (String, String, Vec<u8>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = home.root().join("cert.pem");
    let key = home.root().join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (
        cert.to_str().unwrap().to_owned(),
        key.to_str().unwrap().to_owned(),
        made.cert.der().to_vec(),
    )
}

/// A TLS connection to `addr` that trusts only `der`, verifying the name `localhost`.
fn tls_connect(addr: &str, der: &[u8]) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(der.to_vec()))
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    rustls::StreamOwned::new(conn, TcpStream::connect(addr).unwrap())
}

#[test]
fn mcp_over_https_serves_a_verifying_client_and_tells_a_plain_one_to_use_https() {
    let home = Home::new();
    let bob = token(&home, "bob@web", "bob");
    let (cert, key, der) = self_signed(&home);
    let served = Served::start(&home, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(
        served.url.starts_with("https://127.0.0.1:"),
        "{}",
        served.url
    );
    let host = format!("localhost:{}", served.port());
    let auth = format!("Bearer {bob}");

    // The certificate's name is a Host the server answers to, and its https origin an Origin.
    let origin = format!("https://{host}");
    let a = exchange(
        &mut tls_connect(&served.addr, &der),
        &host,
        "POST",
        &[("authorization", &auth), ("origin", &origin)],
        &call(
            "write_mail",
            r#"{"recipient":"alice@web","body":"over tls"}"#,
        ),
    );
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json()["result"]["isError"], false, "{a:?}");
    let inbox = home.as_("alice@web", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["body"], "over tls", "{inbox}");

    // An http origin is another origin than the https server's.
    let a = exchange(
        &mut tls_connect(&served.addr, &der),
        &host,
        "POST",
        &[
            ("authorization", &auth),
            ("origin", &format!("http://{host}")),
        ],
        &initialize("2025-06-18"),
    );
    assert_eq!(a.status, 403, "{a:?}");

    // Plain HTTP to the TLS port: a plain answer naming https, and the connection closed.
    let a = request(&served.addr, "POST", &[("authorization", &auth)], "{}");
    assert_eq!(a.status, 400, "{a:?}");
    assert_eq!(a.body, "this server speaks HTTPS: use an https:// URL\n");

    // A client that does not trust the certificate gets no answer at all.
    let stranger = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let mut s = tls_connect(&served.addr, stranger.cert.der());
    let sent = s.write_all(b"POST /mcp HTTP/1.1\r\n\r\n");
    let mut got = Vec::new();
    let read = s.read_to_end(&mut got);
    assert!(sent.is_err() || read.is_err(), "{got:?}");
    assert!(got.is_empty());

    // The server still serves the trusting client.
    let a = exchange(
        &mut tls_connect(&served.addr, &der),
        &host,
        "POST",
        &[("authorization", &auth)],
        &initialize("2025-06-18"),
    );
    assert_eq!(a.status, 200, "{a:?}");
}

#[test]
fn mcp_listen_refuses_unusable_tls_files_and_plain_http_beyond_loopback() {
    let home = Home::new();
    let (cert, key, _) = self_signed(&home);
    let other = home.root().join("other-key.pem");
    std::fs::write(&other, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let junk = home.root().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let missing = home.root().join("missing.pem");
    let root = home.root().to_str().unwrap().to_owned();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--tls-cert", missing.to_str().unwrap(), "--tls-key", &key],
            "error: cannot read the TLS certificate ROOT/missing.pem: No such file or directory (os error 2)\n",
        ),
        (
            &["--tls-cert", junk.to_str().unwrap(), "--tls-key", &key],
            "error: the TLS certificate ROOT/junk.pem holds no certificate: pass the certificate chain as PEM, the server's certificate first\n",
        ),
        (
            &["--tls-cert", &cert, "--tls-key", junk.to_str().unwrap()],
            "error: the TLS key ROOT/junk.pem holds no private key (no items found): pass the certificate's private key as PEM\n",
        ),
        (
            &["--tls-cert", &cert, "--tls-key", other.to_str().unwrap()],
            "error: the TLS key ROOT/other-key.pem does not go with the certificate ROOT/cert.pem: pass the key the certificate was made for\n",
        ),
        (
            &["--listen", "0.0.0.0:0", "--expose"],
            "error: 0.0.0.0:0 is beyond this machine: pass --tls-cert FILE --tls-key FILE to serve HTTPS, or --insecure-http to send tokens and mail unencrypted anyway\n",
        ),
    ];
    for (args, said) in cases {
        let mut line = vec!["mcp"];
        if !args.contains(&"--listen") {
            line.extend(["--listen", "127.0.0.1:0"]);
        }
        line.extend(args);
        let run = home.cmd(&line).fails(2);
        assert_eq!(run.stderr.replace(&root, "ROOT"), said, "{line:?}");
        assert_eq!(run.stdout, "");
    }
}

/// Clients of each protocol revision in use negotiate it and list the tools with it; the
/// server issues no session, and a server stream (GET) or a session's end (DELETE) is 405.
fn mcp_over_http_serves_each_protocol_revision_statelessly(home: &Home) {
    let bob = token(home, "bob@web", "bob");
    let served = Served::start(home, &[]);
    let auth = format!("Bearer {bob}");
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let a = request(
            &served.addr,
            "POST",
            &[("authorization", &auth), ("mcp-protocol-version", version)],
            &initialize(version),
        );
        assert_eq!(a.status, 200, "{version}: {a:?}");
        assert_eq!(a.json()["result"]["protocolVersion"], version, "{a:?}");
        assert_eq!(a.header("mcp-session-id"), None, "{a:?}");
        let a = request(
            &served.addr,
            "POST",
            &[("authorization", &auth), ("mcp-protocol-version", version)],
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        );
        assert_eq!(a.status, 200, "{version}: {a:?}");
        let tools = a.json()["result"]["tools"].as_array().unwrap().len();
        assert_eq!(tools, 25, "{version}: {a:?}");
    }
    for method in ["GET", "DELETE"] {
        let a = request(&served.addr, method, &[("authorization", &auth)], "");
        assert_eq!(a.status, 405, "{method}: {a:?}");
        assert_eq!(a.header("allow"), Some("POST"), "{method}: {a:?}");
    }
}

both_stores!(mcp_over_http_serves_each_protocol_revision_statelessly);

/// Asks `ask` until it answers `status`, for at most ten seconds.
fn until_status(status: u16, mut ask: impl FnMut() -> Answer) -> Answer {
    let start = std::time::Instant::now();
    loop {
        let a = ask();
        if a.status == status || start.elapsed() > std::time::Duration::from_secs(10) {
            return a;
        }
        std::thread::yield_now();
    }
}

/// A request whose head is sent and whose body never comes: it holds one of its token's turns
/// until the connection closes (or the body's time runs out).
fn stalled(addr: &str, auth: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: {auth}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{"
    )
    .unwrap();
    s
}

#[test]
fn a_token_with_16_requests_in_progress_is_answered_429_while_others_are_served() {
    let home = Home::new();
    let bob = format!("Bearer {}", token(&home, "bob@web", "bob"));
    let alice = format!("Bearer {}", token(&home, "alice@web", "alice"));
    let served = Served::start(&home, &[]);
    let init = initialize("2025-06-18");
    let held: Vec<TcpStream> = (0..16).map(|_| stalled(&served.addr, &bob)).collect();
    let a = until_status(429, || {
        request(&served.addr, "POST", &[("authorization", &bob)], &init)
    });
    assert_eq!(a.status, 429, "{a:?}");
    assert_eq!(a.header("retry-after"), Some("1"), "{a:?}");
    // The reason as a JSON-RPC error, which every client shows.
    assert_eq!(
        a.json()["error"]["message"],
        "this token already has 16 requests in progress; retry when one has returned"
    );
    let a = request(&served.addr, "POST", &[("authorization", &alice)], &init);
    assert_eq!(a.status, 200, "{a:?}");
    // Clients that leave give their turns back.
    drop(held);
    let a = until_status(200, || {
        request(&served.addr, "POST", &[("authorization", &bob)], &init)
    });
    assert_eq!(a.status, 200, "{a:?}");
}

/// How many inotify instances a process holds.
fn inotify_instances(pid: u32) -> usize {
    fd_targets(pid)
        .iter()
        .filter(|t| t.as_str() == "anon_inode:inotify")
        .count()
}

fn fd_targets(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .collect()
}

fn threads(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Checks `ok` until it holds, for at most ten seconds; whether it held.
fn until(mut ok: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while !ok() {
        if start.elapsed() > std::time::Duration::from_secs(10) {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// Fifty wait_mail calls of ten agents at once: all wake on one write to the ten, each with
/// the message; on files, the server meanwhile holds one inotify instance and no thread per
/// waiter, and none once they are answered.
fn fifty_waits_over_http_share_one_watch_and_all_wake_on_one_write(home: &Home) {
    let agents: Vec<String> = (0..10).map(|i| format!("agent{i}@web")).collect();
    let tokens: Vec<String> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| format!("Bearer {}", token(home, a, &format!("t{i}"))))
        .collect();
    let served = Served::start(home, &[]);
    let pid = served.child.id();
    let wait = call("wait_mail", r#"{"timeout_seconds":60}"#);
    let waiting: Vec<_> = (0..50)
        .map(|i| {
            let (addr, auth, wait) = (served.addr.clone(), tokens[i % 10].clone(), wait.clone());
            std::thread::spawn(move || request(&addr, "POST", &[("authorization", &auth)], &wait))
        })
        .collect();
    // The listener and fifty connections.
    let sockets = || {
        fd_targets(pid)
            .iter()
            .filter(|t| t.starts_with("socket:"))
            .count()
    };
    assert!(until(|| sockets() >= 51), "{} sockets", sockets());
    if !home.is_postgres() {
        assert!(until(|| inotify_instances(pid) == 1));
        assert!(threads(pid) < 50, "{} threads", threads(pid));
    }
    let mut send = vec!["send", "--subject", "wake", "--message", "wake up"];
    for a in &agents {
        send.extend(["--to", a]);
    }
    home.as_("HUMAN", send).ok();
    for (i, w) in waiting.into_iter().enumerate() {
        let a = w.join().unwrap();
        assert_eq!(a.status, 200, "{a:?}");
        let result = &a.json()["result"];
        assert_eq!(result["structuredContent"]["timed_out"], false, "{a:?}");
        let messages = result["structuredContent"]["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1, "{a:?}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let heading = format!("=== mailroom: 1 new message for {} ===", agents[i % 10]);
        assert!(text.starts_with(&heading), "{a:?}");
        assert_eq!(messages[0]["body"], "wake up");
    }
    if !home.is_postgres() {
        assert!(until(|| inotify_instances(pid) == 0));
    }
}

both_stores!(fifty_waits_over_http_share_one_watch_and_all_wake_on_one_write);

/// A client that leaves in the middle of a wait_mail frees its place: the watch it alone held
/// is closed, and the server serves the next client.
#[test]
fn a_client_that_vanishes_mid_wait_is_freed() {
    let home = Home::new();
    let bob = format!("Bearer {}", token(&home, "bob@web", "bob"));
    let served = Served::start(&home, &[]);
    let pid = served.child.id();
    let wait = call("wait_mail", r#"{"timeout_seconds":300}"#);
    let mut s = TcpStream::connect(&served.addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: {bob}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n\r\n{wait}",
        served.addr,
        wait.len()
    )
    .unwrap();
    assert!(
        until(|| inotify_instances(pid) == 1),
        "the wait never began"
    );
    drop(s);
    assert!(
        until(|| inotify_instances(pid) == 0),
        "the wait outlived its client"
    );
    let a = request(
        &served.addr,
        "POST",
        &[("authorization", &bob)],
        &call("wait_mail", r#"{"timeout_seconds":0}"#),
    );
    assert_eq!(
        a.json()["result"]["structuredContent"]["timed_out"],
        true,
        "{a:?}"
    );
}

/// A keep-alive connection of one client, answering each request's JSON.
struct Client {
    stream: Option<BufReader<TcpStream>>,
    auth: String,
}

impl Client {
    fn call(&mut self, addr: &str, body: &str) -> std::io::Result<Value> {
        if self.stream.is_none() {
            self.stream = Some(BufReader::new(TcpStream::connect(addr)?));
        }
        let Some(s) = self.stream.as_mut() else {
            unreachable!("connected above")
        };
        let sent = write!(
            s.get_mut(),
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n\r\n{body}",
            self.auth,
            body.len()
        );
        let answer = sent.and_then(|()| {
            let mut length = 0;
            let mut status = String::new();
            s.read_line(&mut status)?;
            loop {
                let mut line = String::new();
                if s.read_line(&mut line)? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                if line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().map_err(std::io::Error::other)?;
                }
            }
            let mut body = vec![0; length];
            s.read_exact(&mut body)?;
            if !status.starts_with("HTTP/1.1 200") {
                return Err(std::io::Error::other(format!(
                    "{status}{}",
                    String::from_utf8_lossy(&body)
                )));
            }
            serde_json::from_slice(&body).map_err(std::io::Error::other)
        });
        if answer.is_err() {
            self.stream = None;
        }
        answer
    }
}

/// Fifty agents make 200 keyed write_mail calls each over HTTP, and the server is killed
/// (SIGKILL) in the middle: each agent retries its unanswered call with the same key on the
/// restarted server and goes on. Every mailbox then holds each of its 200 messages exactly once.
#[test]
fn fifty_agents_times_200_writes_over_http_survive_a_kill_9_with_nothing_lost_or_doubled() {
    const AGENTS: usize = 50;
    const CALLS: usize = 200;
    let home = Home::new();
    let tokens: Vec<String> = (0..AGENTS)
        .map(|i| {
            format!(
                "Bearer {}",
                token(&home, &format!("a{i}@default"), &format!("t{i}"))
            )
        })
        .collect();
    let first = Served::start(&home, &[]);
    // The server's address, and a signal when it changes (the restart).
    let addr = Arc::new((
        std::sync::Mutex::new(first.addr.clone()),
        std::sync::Condvar::new(),
    ));
    let (answered, answers) = std::sync::mpsc::channel::<()>();
    let clients: Vec<_> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, auth)| {
            let (addr, answered) = (addr.clone(), answered.clone());
            std::thread::spawn(move || {
                let mut client = Client { stream: None, auth };
                let mut j = 0;
                while j < CALLS {
                    let body = call(
                        "write_mail",
                        &format!(r#"{{"recipient":"box{i}","subject":"m{j}","body":"from a{i}","idempotency_key":"a{i}-{j}"}}"#),
                    );
                    let at = addr.0.lock().unwrap().clone();
                    match client.call(&at, &body) {
                        Ok(v) => {
                            assert_eq!(v["result"]["isError"], false, "{v}");
                            j += 1;
                            let _ = answered.send(());
                        }
                        // The server is down: the same call again, once it is back.
                        Err(e) => {
                            let (now, _) = addr
                                .1
                                .wait_timeout_while(
                                    addr.0.lock().unwrap(),
                                    std::time::Duration::from_secs(60),
                                    |now| *now == at,
                                )
                                .unwrap();
                            assert_ne!(*now, at, "a{i}: {e}, and no server came back");
                        }
                    }
                }
            })
        })
        .collect();
    drop(answered);
    for _ in 0..AGENTS * CALLS / 3 {
        answers
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the load goes on");
    }
    drop(first);
    let second = Served::start(&home, &[]);
    *addr.0.lock().unwrap() = second.addr.clone();
    addr.1.notify_all();
    for c in clients {
        c.join().unwrap();
    }
    for i in 0..AGENTS {
        let inbox = home
            .as_(
                &format!("box{i}@default"),
                ["--json", "inbox", "--limit", "1000"],
            )
            .json();
        let mut subjects: Vec<String> = inbox["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["subject"].as_str().unwrap().to_owned())
            .collect();
        subjects.sort_by_key(|s| s[1..].parse::<usize>().unwrap());
        let expected: Vec<String> = (0..CALLS).map(|j| format!("m{j}")).collect();
        assert_eq!(subjects, expected, "box{i}");
    }
}

/// An expired token stops at its expiry, without a restart; a call naming another identity is
/// refused; neither changes anything.
fn expired_tokens_and_anothers_identity_are_refused_and_change_nothing(home: &Home) {
    let bob = format!("Bearer {}", token(home, "bob@web", "bob"));
    let brief = home
        .as_(
            "HUMAN",
            [
                "token",
                "add",
                "carol@web",
                "--name",
                "carol",
                "--expires",
                "1",
            ],
        )
        .stdout();
    let brief = format!("Bearer {}", brief.trim());
    let served = Served::start(home, &[]);
    let write = call("write_mail", r#"{"recipient":"alice@web","body":"hello"}"#);
    let init = initialize("2025-06-18");
    let a = until_status(401, || {
        request(&served.addr, "POST", &[("authorization", &brief)], &init)
    });
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(
        a.header("www-authenticate"),
        Some("Bearer realm=\"mailroom\"")
    );
    let a = request(&served.addr, "POST", &[("authorization", &brief)], &write);
    assert_eq!(a.status, 401, "{a:?}");

    for args in [
        r#"{"recipient":"alice@web","body":"as carol","sender":"carol"}"#,
        r#"{"recipient":"alice@web","body":"as carol","sender":"carol","sender_project_handle":"web"}"#,
        r#"{"recipient":"alice@web","body":"as HUMAN","sender":"HUMAN"}"#,
    ] {
        let a = request(
            &served.addr,
            "POST",
            &[("authorization", &bob)],
            &call("write_mail", args),
        );
        assert_eq!(a.status, 200, "{a:?}");
        let result = &a.json()["result"];
        assert_eq!(result["isError"], true, "{args}: {a:?}");
        assert_eq!(
            result["structuredContent"]["error"]["kind"], "refused",
            "{args}: {a:?}"
        );
    }
    let inbox = home.as_("alice@web", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"], serde_json::json!([]), "{inbox}");
}

both_stores!(expired_tokens_and_anothers_identity_are_refused_and_change_nothing);

/// A request that dribbles in, `pace` apart: `head` first, then `rest` byte by byte, for as
/// long as the server takes it. What the server answered before it closed the connection.
fn dribble(addr: &str, head: String, rest: &'static [u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    // Far beyond the server's bounds (10 s for a head, 30 s for a body): a server that never
    // cuts the client off fails the test here.
    s.set_read_timeout(Some(std::time::Duration::from_secs(90)))
        .unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut reader = s.try_clone().unwrap();
    let reading = std::thread::spawn(move || {
        let mut got = Vec::new();
        let read = reader.read_to_end(&mut got);
        (
            read.map_err(|e| e.kind()),
            String::from_utf8_lossy(&got).into_owned(),
        )
    });
    for byte in rest.iter().cycle() {
        if reading.is_finished() || s.write_all(&[*byte]).is_err() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (read, got) = reading.join().unwrap();
    assert!(
        !matches!(
            read,
            Err(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
        ),
        "the server never cut the slow client off"
    );
    got
}

/// Slow clients (a head dribbled, a body dribbled) are cut off at the server's bounds, while
/// another client is served throughout.
#[test]
fn slow_clients_are_cut_off_while_another_is_served() {
    let home = Home::new();
    let bob = format!("Bearer {}", token(&home, "bob@web", "bob"));
    let served = Served::start(&home, &[]);
    let addr = served.addr.clone();
    let slow_head = {
        let addr = addr.clone();
        let head = format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-slow: ");
        std::thread::spawn(move || dribble(&addr, head, b"abcdefgh"))
    };
    let slow_body = {
        let (addr, bob) = (addr.clone(), bob.clone());
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: {bob}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n"
        );
        std::thread::spawn(move || dribble(&addr, head, b"          "))
    };
    let mut served_meanwhile = 0;
    while !(slow_head.is_finished() && slow_body.is_finished()) {
        let a = request(
            &addr,
            "POST",
            &[("authorization", &bob)],
            &initialize("2025-06-18"),
        );
        assert_eq!(a.status, 200, "{a:?}");
        served_meanwhile += 1;
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(served_meanwhile > 0);
    // hyper closes a late head without an answer; a late body is answered 408.
    assert_eq!(slow_head.join().unwrap(), "");
    let body = slow_body.join().unwrap();
    assert!(body.starts_with("HTTP/1.1 408"), "{body}");
    assert!(
        body.ends_with("\"message\":\"the request body did not arrive in time\"},\"id\":null,\"jsonrpc\":\"2.0\"}\n"),
        "{body}"
    );
}

/// `--allow-host` adds the names clients reach an exposed server by: a request naming one gets
/// past the Host check (to the token's), any other name is still refused, and a name that is
/// not one is refused before anything listens.
#[test]
fn allow_host_adds_the_names_clients_reach_the_server_by() {
    let home = Home::new();
    let bob = token(&home, "bob@web", "bob");
    let served = Served::start(
        &home,
        &[
            "--allow-host",
            "Mail.Example.internal",
            "--allow-host",
            "[::1]",
        ],
    );
    let addr = served.addr.as_str();
    let port = served.port();
    let auth = format!("Bearer {bob}");
    let init = initialize("2025-06-18");
    for host in [
        format!("mail.example.internal:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, answer) = post(addr, &[("authorization", &auth), ("host", &host)], &init);
        assert_eq!(status, 200, "{host}: {answer}");
        let origin = format!("http://{host}");
        let (status, answer) = post(
            addr,
            &[
                ("authorization", &auth),
                ("host", &host),
                ("origin", &origin),
            ],
            &init,
        );
        assert_eq!(status, 200, "{origin}: {answer}");
    }
    let other = format!("other.example.internal:{port}");
    let (status, _) = post(addr, &[("authorization", &auth), ("host", &other)], &init);
    assert_eq!(status, 403);

    for bad in ["mail.example.internal:80", "http://mail", "", "a/b", "::1"] {
        let run = home
            .cmd(["mcp", "--listen", "127.0.0.1:0", "--allow-host", bad])
            .fails(2);
        assert!(
            run.stderr
                .starts_with(&format!("error: --allow-host '{bad}' is not a host name")),
            "{bad}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "");
    }
}
