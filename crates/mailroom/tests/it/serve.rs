//! `mailroom serve`, the operator's console, over real HTTP: the guard refuses requests
//! without the token, with a Host a DNS name could rebind, and cross-site POSTs, and changes
//! nothing when it refuses; the admitted page answers a hold request and shows agent text inert.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{Home, both_stores};

/// A running `mailroom serve` on a free loopback port.
struct Console {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

impl Console {
    fn start(home: &Home) -> Console {
        let mut child = home
            .process()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first.trim();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("{url:?}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Console {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn cookie(&self) -> String {
        format!("mailroom_console={}", self.token)
    }

    /// Sends one request with `headers` (Host included by the caller) and reads the answer.
    fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if !body.is_empty() {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        s.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Answer {
            status,
            head: head.to_owned(),
            body: body.to_owned(),
        }
    }

    /// A GET from the admitted browser.
    fn get(&self, path: &str) -> Answer {
        let (host, cookie) = (self.host(), self.cookie());
        self.raw("GET", path, &[("Host", &host), ("Cookie", &cookie)], "")
    }

    /// A form POST as the console's own page sends it.
    fn post(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        let (host, cookie) = (self.host(), self.cookie());
        let origin = format!("http://{host}");
        self.raw(
            "POST",
            path,
            &[
                ("Host", &host),
                ("Cookie", &cookie),
                ("Origin", &origin),
                ("Sec-Fetch-Site", "same-origin"),
            ],
            &encode(form),
        )
    }

    /// The CSRF token the page's forms carry.
    fn csrf(&self) -> String {
        let page = self.get("/compose").body;
        let at = page.find("name=\"csrf\" value=\"").unwrap() + 19;
        page[at..at + 64].to_owned()
    }
}

fn encode(form: &[(&str, &str)]) -> String {
    form.iter()
        .map(|(k, v)| {
            let v: String = v
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn hold_request(home: &Home, subject: &str, body: &str) -> String {
    let v = home
        .as_(
            "alice@proj",
            [
                "--json",
                "send",
                "--to",
                "HUMAN",
                "--kind",
                "HOLD_REQUEST",
                "--subject",
                subject,
                "--message",
                body,
            ],
        )
        .json();
    v["id"].as_str().unwrap().to_owned()
}

fn human_pending(home: &Home) -> usize {
    let v = home.as_("HUMAN", ["--json", "inbox"]).json();
    v["messages"].as_array().unwrap().len()
}

fn serve_refuses_every_request_without_the_token(home: &Home) {
    hold_request(home, "deploy secret-subject", "body");
    let c = Console::start(home);
    let host = c.host();
    for (path, headers) in [
        ("/", vec![("Host", host.as_str())]),
        ("/inbox", vec![("Host", host.as_str())]),
        ("/static/console.js", vec![("Host", host.as_str())]),
        (
            "/",
            vec![("Host", host.as_str()), ("Cookie", "mailroom_console=0000")],
        ),
        ("/?token=0123456789", vec![("Host", host.as_str())]),
    ] {
        let a = c.raw("GET", path, &headers, "");
        assert_eq!(a.status, 403, "{path} {headers:?}: {a:?}");
        assert!(!a.body.contains("secret-subject"), "{a:?}");
        assert!(a.header("set-cookie").is_none(), "{a:?}");
    }
}

fn serve_admits_the_printed_token_once_as_an_httponly_strict_cookie(home: &Home) {
    let c = Console::start(home);
    let host = c.host();
    let a = c.raw(
        "GET",
        &format!("/search?token={}&q=x", c.token),
        &[("Host", &host)],
        "",
    );
    assert_eq!(a.status, 200, "{a:?}");
    assert!(
        a.body
            .contains(r#"<meta http-equiv="refresh" content="0;url=/search?q=x">"#),
        "the page moves on without the token: {}",
        a.body
    );
    assert!(!a.body.contains(&c.token));
    assert_eq!(
        a.header("set-cookie"),
        Some(
            format!(
                "mailroom_console={}; HttpOnly; SameSite=Strict; Path=/",
                c.token
            )
            .as_str()
        )
    );
    let page = c.get("/");
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
}

fn serve_refuses_a_host_a_dns_name_could_rebind(home: &Home) {
    hold_request(home, "deploy secret-subject", "body");
    let c = Console::start(home);
    let cookie = c.cookie();
    let other_port = format!("127.0.0.1:{}", c.port.wrapping_add(1));
    for host in [
        format!("attacker.example:{}", c.port),
        format!("localhost.attacker.example:{}", c.port),
        other_port,
        "127.0.0.1".to_owned(),
    ] {
        let a = c.raw("GET", "/", &[("Host", &host), ("Cookie", &cookie)], "");
        assert_eq!(a.status, 421, "{host}: {a:?}");
        assert!(!a.body.contains("secret-subject"));
    }
    let a = c.raw("GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(a.status, 400, "no Host: {a:?}");
    let localhost = format!("localhost:{}", c.port);
    let a = c.raw("GET", "/", &[("Host", &localhost), ("Cookie", &cookie)], "");
    assert_eq!(a.status, 200, "localhost is this machine: {a:?}");
}

fn serve_refuses_a_cross_site_post_and_changes_nothing(home: &Home) {
    let id = hold_request(home, "deploy now?", "may I?");
    let c = Console::start(home);
    let csrf = c.csrf();
    let (host, cookie) = (c.host(), c.cookie());
    let form = encode(&[("csrf", &csrf), ("id", &id), ("body", "yes"), ("back", "/")]);
    for headers in [
        // A page elsewhere posting with the browser's cookie (were SameSite not honoured).
        vec![
            ("Host", host.as_str()),
            ("Cookie", cookie.as_str()),
            ("Origin", "http://attacker.example"),
        ],
        vec![
            ("Host", host.as_str()),
            ("Cookie", cookie.as_str()),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        vec![
            ("Host", host.as_str()),
            ("Cookie", cookie.as_str()),
            ("Sec-Fetch-Site", "same-site"),
        ],
        // No cookie at all: what a strict SameSite cookie makes of a cross-site form.
        vec![
            ("Host", host.as_str()),
            ("Origin", "http://attacker.example"),
        ],
    ] {
        let a = c.raw("POST", "/reply", &headers, &form);
        assert_eq!(a.status, 403, "{headers:?}: {a:?}");
    }
    // The page's own origin without this run's CSRF token.
    let a = c.post("/reply", &[("csrf", "0"), ("id", &id), ("body", "yes")]);
    assert_eq!(a.status, 403, "{a:?}");
    let a = c.post("/done", &[("id", &id)]);
    assert_eq!(a.status, 403, "{a:?}");
    assert_eq!(human_pending(home), 1, "a refused POST changed nothing");
    let inbox = home.as_("alice@proj", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"].as_array().unwrap().len(), 0, "{inbox}");
}

fn serve_reply_reaches_the_requester_and_closes_humans_copy(home: &Home) {
    let id = hold_request(home, "deploy now?", "may I deploy?");
    let c = Console::start(home);
    let page = c.get("/");
    assert!(
        page.body.contains(&format!("data-id=\"{id}\"")),
        "{}",
        page.body
    );
    let a = c.post(
        "/reply",
        &[
            ("csrf", &c.csrf()),
            ("id", &id),
            ("body", "Yes, go ahead."),
            ("back", "/"),
        ],
    );
    assert_eq!((a.status, a.header("location")), (303, Some("/")), "{a:?}");
    let inbox = home.as_("alice@proj", ["--json", "inbox"]).json();
    let m = &inbox["messages"][0];
    assert_eq!(
        (&m["from"], &m["body"], &m["reply_to"]),
        (
            &"HUMAN".into(),
            &"Yes, go ahead.".into(),
            &id.clone().into()
        ),
        "{inbox}"
    );
    assert_eq!(human_pending(home), 0, "HUMAN's copy is closed");
    assert!(!c.get("/").body.contains(&format!("data-id=\"{id}\"")));
}

fn serve_shows_agent_text_as_inert_text(home: &Home) {
    hold_request(
        home,
        "deploy <script>alert(1)</script>",
        "<img src=x onerror=alert(2)> <a href=\"javascript:alert(3)\">x</a> &lt;b&gt;",
    );
    let c = Console::start(home);
    let body = c.get("/").body;
    assert!(
        body.contains("deploy &lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );
    assert!(
        body.contains("&lt;img src=x onerror=alert(2)&gt;"),
        "{body}"
    );
    assert!(body.contains("&amp;lt;b&amp;gt;"), "{body}");
    for raw in [
        "<script>alert",
        "<img",
        "href=\"javascript:",
        "<a href=\"javascript",
    ] {
        assert!(!body.contains(raw), "{raw} reached the page: {body}");
    }
}

fn serve_streams_new_mail_to_an_open_page(home: &Home) {
    hold_request(home, "deploy first", "one");
    let c = Console::start(home);
    let mut s = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
        c.host(),
        c.cookie()
    )
    .unwrap();
    let mut lines = BufReader::new(s).lines();
    // What was pending before the page connected is announced first, then what arrives.
    let mut seen = Vec::new();
    let mut sent = None;
    while let Some(Ok(line)) = lines.next() {
        if let Some(data) = line.strip_prefix("data: ") {
            seen.push(data.to_owned());
            if sent.is_none() {
                sent = Some(hold_request(home, "deploy second", "two"));
            }
            if sent.as_deref().is_some_and(|id| data.starts_with(id)) {
                break;
            }
        }
    }
    let id = sent.unwrap();
    assert_eq!(
        seen.last().unwrap(),
        &format!("{id} HOLD_REQUEST"),
        "{seen:?}"
    );
}

#[test]
fn serve_on_a_public_address_needs_expose() {
    let home = Home::new();
    hold_request(&home, "deploy", "x");
    let before = home.tree();
    let run = home.cmd(["serve", "--listen", "0.0.0.0:0"]).fails(2);
    assert_eq!(
        run.stderr,
        "error: 0.0.0.0:0 is not a loopback address: the console reads every project's mail and sends as HUMAN, so it listens on 127.0.0.1 unless you pass --expose as well\n"
    );
    assert_eq!(before.changes(&home.tree()), Vec::<String>::new());
}

#[test]
fn serve_stops_on_sigterm_with_a_page_open_and_exits_0() {
    let home = Home::new();
    hold_request(&home, "deploy", "x");
    let mut c = Console::start(&home);
    let mut s = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
        c.host(),
        c.cookie()
    )
    .unwrap();
    let mut lines = BufReader::new(s).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "HTTP/1.1 200 OK");
    // The stream is open once the pending hold request is announced on it.
    assert!(lines.any(|l| l.unwrap().starts_with("data: ")));
    let status = Command::new("kill")
        .args(["-TERM", &c.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = std::mem::replace(&mut c.child, Command::new("true").spawn().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || drop(tx.send(child.wait())));
    let exit = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("serve stopped within 20 s of SIGTERM with a page open")
        .unwrap();
    assert_eq!(exit.code(), Some(0));
}

/// The admission page moves on to the address it was opened at, never to another site:
/// `//host/?token=...` lands on the console's own front page.
fn serve_admission_never_sends_the_browser_to_another_site(home: &Home) {
    let c = Console::start(home);
    let host = c.host();
    for path in ["//evil.example/", "/\\evil.example/"] {
        let a = c.raw(
            "GET",
            &format!("{path}?token={}", c.token),
            &[("Host", &host)],
            "",
        );
        assert_eq!(a.status, 200, "{a:?}");
        assert!(!a.body.contains("evil.example"), "{path}: {}", a.body);
        assert!(
            a.body.contains(r#"content="0;url=/""#),
            "{path}: {}",
            a.body
        );
    }
}

/// A right-to-left override in a subject, an escape or a bell in a body: the page writes them
/// out (`\u{202e}`) as the command line does, and keeps the body's line breaks.
fn serve_writes_out_control_and_reordering_characters(home: &Home) {
    hold_request(
        home,
        "invoice \u{202e}fdp.exe",
        "line one \u{1b}[31mred\u{7}\nline two\u{200b}",
    );
    let c = Console::start(home);
    for path in ["/", "/inbox"] {
        let body = c.get(path).body;
        assert!(body.contains("invoice \\u{202e}fdp.exe"), "{path}: {body}");
        assert!(
            body.contains("line one \\u{1b}[31mred\\u{7}\nline two\\u{200b}"),
            "{path}: {body}"
        );
        for raw in ['\u{202e}', '\u{1b}', '\u{7}', '\u{200b}'] {
            assert!(!body.contains(raw), "{path}: {raw:?} reached the page");
        }
    }
}

/// Opens `GET /events` as an admitted page and reads the answer's status line.
fn open_events(c: &Console) -> (u16, std::io::Lines<BufReader<TcpStream>>) {
    let mut s = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        c.host(),
        c.cookie()
    )
    .unwrap();
    let mut lines = BufReader::new(s).lines();
    let status = lines.next().unwrap().unwrap();
    let code = status.split(' ').nth(1).unwrap().parse().unwrap();
    (code, lines)
}

/// Reads an event stream until the event announcing `id`.
fn until_announced(lines: &mut std::io::Lines<BufReader<TcpStream>>, id: &str) {
    let wanted = format!("data: {id} ");
    for line in lines.by_ref() {
        if line.unwrap().starts_with(&wanted) {
            return;
        }
    }
    panic!("the stream ended before announcing {id}");
}

/// How many inotify instances a process holds.
fn inotify_instances(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_str() == Some("anon_inode:inotify"))
        .count()
}

/// Each open page once held an inotify instance of its own: 130 pages used up the user's 128,
/// and then every `mailroom wait` of that user failed with "Too many open files". Now the
/// server keeps one watch for all pages, admits at most 32 streams (503 beyond), and one send
/// wakes every open page.
#[test]
fn serve_event_streams_share_one_watch_and_leave_inotify_to_other_programs() {
    let home = Home::new();
    let first = hold_request(&home, "deploy first", "one");
    let c = Console::start(&home);
    let mut open = Vec::new();
    let mut refused = 0;
    for _ in 0..130 {
        let (status, mut lines) = open_events(&c);
        match status {
            200 => {
                until_announced(&mut lines, &first);
                open.push(lines);
            }
            503 => refused += 1,
            other => panic!("GET /events answered {other}"),
        }
    }
    assert_eq!((open.len(), refused), (32, 98));
    if cfg!(target_os = "linux") && !home.is_postgres() {
        assert_eq!(inotify_instances(c.child.id()), 1, "one watch for 32 pages");
    }
    let waiter = home
        .process()
        .args(["--as", "bob@proj", "--json", "wait", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let to_bob = home.send("alice@proj", "bob@proj", "still there?");
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&to_bob));
    let second = hold_request(&home, "deploy second", "two");
    for lines in &mut open {
        until_announced(lines, &second);
    }
}

/// One answer on a kept-alive connection: its head, then as many body bytes as it says.
fn one_answer(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the server closed mid-head");
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).unwrap();
    head + &String::from_utf8_lossy(&body)
}

/// 20,000 idle connections once took the server to 243 MB, and each stayed open for minutes.
/// Now 128 are served at once. Another program of the machine that merely holds 128
/// connections open cannot keep the operator out: a newcomer closes the oldest connection that
/// never showed the token. Only when all 128 have shown it is the next one answered 503, at
/// once and unread; the console serves again as soon as one of them is gone.
fn serve_holds_128_connections_and_strangers_cannot_keep_the_operator_out(home: &Home) {
    let c = Console::start(home);
    let mut strangers: Vec<TcpStream> = (0..128)
        .map(|_| TcpStream::connect(("127.0.0.1", c.port)).unwrap())
        .collect();
    assert_eq!(c.get("/").status, 200, "the operator's browser is served");
    let mut oldest = strangers.remove(0);
    oldest
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut said = String::new();
    let _ = oldest.read_to_string(&mut said);
    assert_eq!(said, "", "the oldest stranger was closed, unanswered");
    drop(strangers);

    let request = format!(
        "GET /static/console.css HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
        c.host(),
        c.cookie()
    );
    let mut admitted: Vec<TcpStream> = (0..128)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            assert!(one_answer(&mut s).starts_with("HTTP/1.1 200 OK\r\n"));
            s
        })
        .collect();
    let mut extra = TcpStream::connect(("127.0.0.1", c.port)).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = String::new();
    extra.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(
        answer.ends_with(
            "\r\n\r\nrefused: the console already has 128 open connections; close some of its tabs and try again.\n"
        ),
        "{answer}"
    );
    // One of the 128 asks for a page and the server closes it: the next browser is served.
    let mut first = admitted.remove(0);
    write!(
        first,
        "GET /static/console.css HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        c.host(),
        c.cookie()
    )
    .unwrap();
    let mut page = String::new();
    first.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert_eq!(c.get("/").status, 200);
    drop(admitted);
}

/// A POST without the `csrf` field got axum's 422 "Failed to deserialize form body": every form
/// that is not this run's page's gets the documented status and the console's sentence, a
/// missing or wrong token 403 before anything else is read, other broken forms 400.
fn serve_answers_a_malformed_form_with_the_documented_status_and_changes_nothing(home: &Home) {
    let id = hold_request(home, "deploy now?", "may I?");
    let c = Console::start(home);
    let csrf = c.csrf();
    let (host, cookie) = (c.host(), c.cookie());
    let origin = format!("http://{host}");
    let page = [
        ("Host", host.as_str()),
        ("Cookie", cookie.as_str()),
        ("Origin", origin.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let not_this_page =
        "this form is not from the console's current page: reload the page and try again.";
    for (path, body, status, says) in [
        (
            "/reply",
            encode(&[("id", &id), ("body", "yes")]),
            403,
            not_this_page,
        ),
        ("/done", encode(&[("id", &id)]), 403, not_this_page),
        ("/send", String::new(), 403, not_this_page),
        ("/done", "%%%&csrf".to_owned(), 403, not_this_page),
        (
            "/done",
            format!("{{\"csrf\":\"{csrf}\"}}"),
            403,
            not_this_page,
        ),
        (
            "/reply",
            encode(&[("csrf", &csrf), ("id", &id)]),
            400,
            "this form is not one the console's page sends (missing field `body`): reload the page and try again.",
        ),
        (
            "/send",
            encode(&[("csrf", &csrf), ("body", "x")]),
            400,
            "this form is not one the console's page sends (missing field `mode`): reload the page and try again.",
        ),
    ] {
        let a = c.raw("POST", path, &page, &body);
        assert_eq!(a.status, status, "{path} {body}: {a:?}");
        assert!(a.body.contains(says), "{path} {body}: {}", a.body);
        assert!(!a.body.contains("Failed to deserialize"), "{}", a.body);
    }
    assert_eq!(human_pending(home), 1, "a refused POST changed nothing");
}

/// Two Host headers, or an absolute-form target naming another host than the Host header: the
/// request does not say which host it is for, so it is 400.
fn serve_refuses_a_request_that_names_two_hosts(home: &Home) {
    hold_request(home, "deploy secret-subject", "body");
    let c = Console::start(home);
    let (host, cookie) = (c.host(), c.cookie());
    let a = c.raw(
        "GET",
        "/",
        &[
            ("Host", &host),
            ("Host", "attacker.example"),
            ("Cookie", &cookie),
        ],
        "",
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert!(a.body.contains("exactly one Host header"), "{}", a.body);
    let elsewhere = format!("http://attacker.example:{}/", c.port);
    let a = c.raw(
        "GET",
        &elsewhere,
        &[("Host", &host), ("Cookie", &cookie)],
        "",
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert!(!a.body.contains("secret-subject"), "{}", a.body);
    let here = format!("http://{host}/");
    let a = c.raw("GET", &here, &[("Host", &host), ("Cookie", &cookie)], "");
    assert_eq!(
        a.status, 200,
        "the console's own address, in absolute form: {a:?}"
    );
}

/// Every local `href` and `src` in a page, `&amp;` read back as `&`.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        let mut rest = page;
        while let Some(at) = rest.find(attr) {
            rest = &rest[at + attr.len()..];
            let end = rest.find('"').unwrap();
            let link = rest[..end].replace("&amp;", "&");
            if link.starts_with('/') {
                out.push(link);
            }
            rest = &rest[end..];
        }
    }
    out
}

/// A channel entry's subject linked to `/m/ID`, which only knows HUMAN's mailbox and outbox:
/// 404. Every link of every page, in a home with mail of every kind, leads to a page.
#[test]
fn serve_every_link_of_every_page_leads_to_a_page() {
    let home = Home::new();
    let hold = hold_request(&home, "deploy now?", "may I?");
    let question = home
        .as_(
            "bob@proj",
            [
                "--json",
                "send",
                "--to",
                "HUMAN",
                "--kind",
                "QUESTION",
                "-m",
                "which port?",
            ],
        )
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    home.as_("HUMAN", ["reply", &question, "-m", "8080"]).ok();
    home.as_(
        "alice@proj",
        ["channel", "post", "run-42", "-m", "started the deploy"],
    )
    .ok();
    home.as_(
        "alice@proj",
        [
            "channel",
            "post",
            "run-42",
            "--kind",
            "HOLD_REQUEST",
            "-m",
            "deploy step two?",
        ],
    )
    .ok();
    let post = home
        .as_(
            "HUMAN",
            [
                "--json",
                "--project",
                "proj",
                "channel",
                "post",
                "run-42",
                "-m",
                "go on",
            ],
        )
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    home.send("alice@proj", "HUMAN", "an update");
    let c = Console::start(&home);
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![
        "/".to_owned(),
        "/search?q=deploy".to_owned(),
        format!("/compose?sent={post}"),
        format!("/thread/{hold}"),
    ];
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let a = c.get(&path);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        if a.header("content-type") == Some("text/html; charset=utf-8") {
            todo.extend(links(&a.body).into_iter().filter(|l| !seen.contains(l)));
        }
    }
    let entry_pages = seen.iter().filter(|p| p.matches('/').count() == 4).count();
    assert_eq!(entry_pages, 3, "every channel entry has a page: {seen:#?}");
}

/// One message of 300 KB without a space made `/inbox` take 13 s to lay out in a browser. A
/// list shows the first 500 characters of a body, cut between characters, and links to the
/// message's own page, which shows all of it.
fn serve_lists_show_the_start_of_a_long_body_and_link_to_the_whole_message(home: &Home) {
    let long = format!("{}\u{e9}{}", "a".repeat(499), "x".repeat(300_000));
    // Through stdin: one argument of 300 KB is more than the kernel passes.
    let id = home
        .as_(
            "alice@proj",
            [
                "--json",
                "send",
                "--to",
                "HUMAN",
                "--kind",
                "HOLD_REQUEST",
                "--subject",
                "deploy long",
            ],
        )
        .stdin(long.clone())
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    home.as_("alice@proj", ["channel", "post", "run-42"])
        .stdin(long.clone())
        .ok();
    let c = Console::start(home);
    let excerpt = format!("{}\u{e9}\u{2026}</div>", "a".repeat(499));
    let link = "characters)</a>";
    for path in [
        "/",
        "/inbox",
        "/search?q=aaaa",
        &format!("/thread/{id}"),
        "/channel/proj/run-42",
    ] {
        let page = c.get(path);
        assert_eq!(page.status, 200, "{path}");
        assert!(page.body.contains(&excerpt), "{path}: {}", page.body);
        assert!(
            page.body.contains("Whole message (300500 characters)"),
            "{path}"
        );
        assert!(
            !page.body.contains("xxxxxxxxxx"),
            "{path}: the whole body is not in a list"
        );
        assert!(
            page.body.len() < 20_000,
            "{path}: {} bytes",
            page.body.len()
        );
        assert!(page.body.contains(link), "{path}");
    }
    let whole = c.get(&format!("/m/{id}"));
    assert_eq!(whole.status, 200);
    assert!(
        whole.body.contains(&long),
        "the message's page shows it all"
    );
}

/// The Decisions page orders what waits as the inbox does: hold requests, then by priority,
/// then oldest first.
fn serve_decisions_come_most_urgent_first_as_in_the_inbox(home: &Home) {
    let ask = |subject: &str, priority: &str| -> String {
        let v = home
            .as_(
                "alice@proj",
                [
                    "--json",
                    "send",
                    "--to",
                    "HUMAN",
                    "--kind",
                    "QUESTION",
                    "--priority",
                    priority,
                    "--subject",
                    subject,
                    "--message",
                    "?",
                ],
            )
            .json();
        v["id"].as_str().unwrap().to_owned()
    };
    let low = ask("low first", "L");
    let high = ask("high later", "H");
    let hold = hold_request(home, "hold", "may I?");
    let c = Console::start(home);
    let page = c.get("/").body;
    let at = |id: &str| page.find(&format!("data-id=\"{id}\"")).unwrap();
    assert!(at(&hold) < at(&high) && at(&high) < at(&low), "{page}");
    let inbox = home.as_("HUMAN", ["--json", "inbox"]).json();
    let order: Vec<&str> = inbox["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [hold.as_str(), high.as_str(), low.as_str()]);
}

/// An address whose path or query does not read is refused in the console's words (400),
/// never with the web framework's own rejection text.
fn serve_refuses_an_unreadable_address_in_its_own_words(home: &Home) {
    let c = Console::start(home);
    for path in [
        "/channel/x/%FF",
        "/channel/x/y/%FF",
        "/m/%FF",
        "/thread/%FF",
    ] {
        let a = c.get(path);
        assert_eq!(a.status, 400, "{path}: {a:?}");
        assert!(
            a.body.contains("follow a link from the console instead"),
            "{path}: {}",
            a.body
        );
        assert!(
            !a.body.contains("Invalid URL") && !a.body.contains("Failed to deserialize"),
            "{path}: {}",
            a.body
        );
    }
}

/// The project's active leases, as `reservations --json` lists them.
fn lease_ids(home: &Home) -> Vec<String> {
    home.as_("ops@shop", ["--json", "reservations"]).json()["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

fn serve_projects_page_lists_leases_and_the_operator_releases_one(home: &Home) {
    // The page lists the projects the directory knows: a first send makes `shop` one.
    home.as_(
        "web@shop",
        ["send", "--to", "db", "--message", "taking the API"],
    )
    .ok();
    home.as_(
        "web@shop",
        [
            "reserve",
            "src/api/**",
            "--ttl",
            "30m",
            "--reason",
            "moving the users endpoint",
        ],
    )
    .ok();
    home.as_("db@shop", ["reserve", "--shared", "docs/**"]).ok();
    home.as_("db@shop", ["check", "src/api/users.rs"]).fails(4);
    let ids = lease_ids(home);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let web = home.as_("ops@shop", ["--json", "reservations"]).json()["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["holder"] == "web@shop")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let c = Console::start(home);

    let page = c.get("/projects");
    assert_eq!(page.status, 200, "{page:?}");
    let rows: Vec<&str> = page.body.split("<tr data-lease=").skip(1).collect();
    assert_eq!(rows.len(), 2, "{}", page.body);
    let row = rows.iter().find(|r| r.contains("web@shop")).unwrap();
    for needle in [
        "<code>src/api/**</code>",
        "<td>exclusive</td>",
        "<td>moving the users endpoint</td>",
        " UTC</time>",
        "<span class=\"age\">(in ",
        "action=\"/release\"",
        &format!("name=\"id\" value=\"{web}\""),
        "name=\"project\" value=\"shop\"",
    ] {
        assert!(row.contains(needle), "{needle}: {row}");
    }
    let shared = rows.iter().find(|r| r.contains("db@shop")).unwrap();
    assert!(shared.contains("<td>shared</td>"), "{shared}");

    // Refused, changing nothing: without this run's CSRF token, with a part of the id, with no
    // valid project.
    let csrf = c.csrf();
    let a = c.post(
        "/release",
        &[("csrf", "0"), ("project", "shop"), ("id", &web)],
    );
    assert_eq!(a.status, 403, "{a:?}");
    let a = c.post(
        "/release",
        &[("csrf", &csrf), ("project", "shop"), ("id", &web[..8])],
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert!(a.body.contains("no whole lease id"), "{}", a.body);
    let a = c.post(
        "/release",
        &[("csrf", &csrf), ("project", "../shop"), ("id", &web)],
    );
    assert_eq!(a.status, 400, "{a:?}");
    assert_eq!(
        lease_ids(home).len(),
        2,
        "a refused release changed nothing"
    );

    let a = c.post(
        "/release",
        &[
            ("csrf", &csrf),
            ("project", "shop"),
            ("id", &web),
            ("back", "/projects"),
        ],
    );
    assert_eq!(a.status, 303, "{a:?}");
    assert_eq!(a.header("location"), Some("/projects"), "{a:?}");
    assert!(!lease_ids(home).contains(&web));
    assert_eq!(lease_ids(home).len(), 1);
    home.as_("db@shop", ["check", "src/api/users.rs"]).ok();
    let page = c.get("/projects").body;
    assert!(!page.contains(&web), "{page}");
    assert_eq!(page.matches("<tr data-lease=").count(), 1, "{page}");

    // Released already: the console says so and changes nothing more.
    let a = c.post(
        "/release",
        &[("csrf", &csrf), ("project", "shop"), ("id", &web)],
    );
    assert_eq!(a.status, 404, "{a:?}");
    assert_eq!(lease_ids(home).len(), 1);
}

both_stores!(
    serve_refuses_every_request_without_the_token,
    serve_admits_the_printed_token_once_as_an_httponly_strict_cookie,
    serve_refuses_a_host_a_dns_name_could_rebind,
    serve_refuses_a_cross_site_post_and_changes_nothing,
    serve_reply_reaches_the_requester_and_closes_humans_copy,
    serve_shows_agent_text_as_inert_text,
    serve_streams_new_mail_to_an_open_page,
    serve_admission_never_sends_the_browser_to_another_site,
    serve_writes_out_control_and_reordering_characters,
    serve_holds_128_connections_and_strangers_cannot_keep_the_operator_out,
    serve_answers_a_malformed_form_with_the_documented_status_and_changes_nothing,
    serve_refuses_a_request_that_names_two_hosts,
    serve_lists_show_the_start_of_a_long_body_and_link_to_the_whole_message,
    serve_decisions_come_most_urgent_first_as_in_the_inbox,
    serve_refuses_an_unreadable_address_in_its_own_words,
    serve_projects_page_lists_leases_and_the_operator_releases_one,
);
