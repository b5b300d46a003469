//! What one connection may hold: a request head, an idle kept-alive connection and a body each
//! have a bound, after which the server answers or closes; connections beyond the cap are
//! answered 503 at once. Each test waits for the server's own move (a close, an answer), with a
//! read timeout as its bound, and never for a duration of its own.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use mailroom_console::{Console, Limits, Secret};
use mailroom_core::Mailroom;
use mailroom_store_fs::FsStore;

const TOKEN: &str = "t0ken";
const CSRF: &str = "csrf";

/// A console on a free loopback port, served on a thread of its own until dropped.
struct Served {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _home: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

fn serve(limits: Limits) -> Served {
    let home = tempfile::tempdir().unwrap();
    let store: Arc<dyn mailroom_core::Store> = Arc::new(FsStore::new(home.path().join("home")));
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        // As `mailroom serve` runs it: one thread for the sockets.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let console = Console::with_limits(
                Mailroom::shared(store),
                port,
                Secret::fixed(TOKEN, CSRF),
                limits,
            );
            port_tx.send(port).unwrap();
            mailroom_console::serve(listener, console, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    Served {
        port: port_rx.recv().unwrap(),
        stop: Some(stop),
        thread: Some(thread),
        _home: home,
    }
}

impl Served {
    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        // The bound on every wait below: far beyond the limits these tests set.
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    }

    fn head(&self, method: &str, path: &str) -> String {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: mailroom_console={TOKEN}\r\n",
            self.port
        )
    }
}

/// Everything the server sends until it closes the connection.
fn until_closed(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close the connection: {e}"),
    }
    String::from_utf8_lossy(&got).into_owned()
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

const SHORT: Limits = Limits {
    connections: 4,
    head: Duration::from_millis(300),
    body: Duration::from_millis(300),
};

#[test]
fn a_request_head_sent_slowly_is_cut_off() {
    let server = serve(SHORT);
    let mut s = server.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let answer = until_closed(&mut s);
    assert!(answer.is_empty() || status(&answer) == 408, "{answer:?}");
}

#[test]
fn an_idle_kept_alive_connection_is_closed() {
    let server = serve(SHORT);
    let mut s = server.connect();
    let request = format!("{}\r\n", server.head("GET", "/static/console.css"));
    s.write_all(request.as_bytes()).unwrap();
    let answer = until_closed(&mut s);
    assert_eq!(status(&answer), 200, "{answer:?}");
    assert!(
        !answer.contains("connection: close"),
        "kept alive, then closed: {answer}"
    );
}

#[test]
fn a_body_sent_slowly_is_answered_408_and_changes_nothing() {
    let server = serve(SHORT);
    let mut s = server.connect();
    let request = format!(
        "{}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncsrf={CSRF}&mode=to",
        server.head("POST", "/send")
    );
    s.write_all(request.as_bytes()).unwrap();
    let answer = until_closed(&mut s);
    assert_eq!(status(&answer), 408, "{answer}");
    assert!(answer.contains("refused: the request's body"), "{answer}");
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

/// A full server makes room by closing the oldest connection that never showed the token: a
/// program that merely holds connections open cannot keep the operator out. When every
/// connection has shown it, the next one is answered 503 at once.
#[test]
fn a_full_server_closes_a_stranger_for_a_newcomer_and_refuses_only_when_all_are_admitted() {
    let server = serve(SHORT);
    let mut strangers: Vec<TcpStream> = (0..SHORT.connections).map(|_| server.connect()).collect();
    // The operator's browser, one more: the oldest stranger is closed for it, and it is served.
    let mut browser = server.connect();
    let request = format!(
        "{}Connection: close\r\n\r\n",
        server.head("GET", "/static/console.css")
    );
    browser.write_all(request.as_bytes()).unwrap();
    assert_eq!(status(&until_closed(&mut browser)), 200);
    let oldest = strangers.remove(0);
    let mut oldest = oldest;
    assert_eq!(
        until_closed(&mut oldest),
        "",
        "the oldest stranger was closed unanswered"
    );
    drop(strangers);

    // Every place taken by a connection that showed the token and stays open: one more is 503.
    let mut admitted: Vec<TcpStream> = (0..SHORT.connections)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(format!("{}\r\n", server.head("GET", "/static/console.css")).as_bytes())
                .unwrap();
            assert_eq!(status(&one_answer(&mut s)), 200);
            s
        })
        .collect();
    let mut extra = server.connect();
    let answer = until_closed(&mut extra);
    assert_eq!(status(&answer), 503, "{answer}");
    assert!(answer.contains("4 open connections"), "{answer}");
    // One of them ends: its place is free again.
    let mut first = admitted.remove(0);
    let request = format!(
        "{}Connection: close\r\n\r\n",
        server.head("GET", "/static/console.css")
    );
    first.write_all(request.as_bytes()).unwrap();
    assert_eq!(status(&until_closed(&mut first)), 200);
    let mut next = server.connect();
    next.write_all(request.as_bytes()).unwrap();
    assert_eq!(status(&until_closed(&mut next)), 200);
    drop(admitted);
}
