//! The operator's console: a local web page where `HUMAN` sees what waits for a decision and
//! answers it. Invariant: every request passes the guard (Host, token, same-origin POST with the
//! form's CSRF token) before any handler runs, and every piece of agent text reaches the page
//! escaped by the templates.
//!
//! The console holds one `Mailroom::shared` and calls the synchronous core from blocking tasks,
//! like the MCP server; the tokio runtime exists only while `mailroom serve` runs.
//!
//! ## Its modules
//!
//! the operator's console (`mailroom serve`): `lib` (the accept loop: one task per connection under
//! a semaphore of `Limits::connections`; when full, the oldest connection that never showed the
//! token (the guard marks each that does) is closed for the newcomer, else 503 and close; hyper's
//! HTTP/1 builder with a timer bounds each request head and idle keep-alive by `Limits::head`;
//! graceful shutdown through hyper-util), `guard` (the one middleware every request passes: `Host`
//! an IP literal or `localhost` with the port, the run's token from the URL turned into an HttpOnly
//! SameSite=Strict cookie, same-origin POSTs; the CSP and hardening headers on every answer; then
//! `whole_body`, which reads a POST's body within `Limits::body` and 2 MiB before its handler
//! runs), `pages` (GET handlers: decisions, inbox, compose, projects with their active file
//! reservations, channels, a channel, one channel entry, a thread, one message of HUMAN's
//! mailbox or outbox, search; a subject links to
//! the page that shows its message whole: `/m/ID` for HUMAN's copies and sent mail,
//! `/channel/PROJECT/NAME/ID` for a channel entry; each one blocking task over the core), every
//! handler driven on a blocking thread (`off_the_runtime`), so the one-thread runtime only moves
//! bytes and a long page never holds up another request or an event stream, `actions` (POST
//! handlers behind `PageForm`, which checks the form's CSRF token before reading any other field,
//! 403, then deserializes the rest, 400, both in the console's words; each calling one operation:
//! `reply`, `done`, `send`/`post`, `release` of a file reservation); pages and actions call only `Mailroom`'s operations, never the
//! store, `live` (server-sent events: one `Mailroom::watch` of `HUMAN` per server on a blocking
//! thread, started by the first open stream and cancelled when the last one closes or the server
//! stops, fanned out through a `broadcast` channel; each stream first announces what is pending and
//! newer than its page; at most `MAX_STREAMS` (32) streams, 503 beyond), `view` (layout, one
//! message, a list's excerpt of a body (the first 500 characters, and a link to the whole), ages,
//! the console's wording of `Error::fix()`, the static script and style, built in with
//! `include_str!`). Identity: always `HUMAN`. *Never* puts agent text into the page other than
//! through maud's escaping, and has no inline script (the CSP forbids it).

mod actions;
mod guard;
mod live;
mod pages;
mod view;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use mailroom_core::{Address, Mailroom};

pub use guard::Secret;

/// What every handler shares: the operations, the operator's address and the secrets.
#[derive(Clone, Debug)]
pub struct Console {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mr: Mailroom<'static>,
    human: Address,
    secret: Secret,
    port: u16,
    hub: live::Hub,
    limits: Limits,
}

impl Console {
    /// A console over `mr` for the server listening on `port`, with a fresh secret.
    pub fn new(mr: Mailroom<'static>, port: u16) -> std::io::Result<Console> {
        Ok(Console::with_secret(mr, port, Secret::generate()?))
    }

    pub fn with_secret(mr: Mailroom<'static>, port: u16, secret: Secret) -> Console {
        Console::with_limits(mr, port, secret, Limits::SERVE)
    }

    /// A console that holds its connections to `limits` (tests set small ones).
    pub fn with_limits(
        mr: Mailroom<'static>,
        port: u16,
        secret: Secret,
        limits: Limits,
    ) -> Console {
        Console {
            inner: Arc::new(Inner {
                mr,
                human: Address::human(),
                secret,
                port,
                hub: live::Hub::default(),
                limits,
            }),
        }
    }

    /// The address to open first: it carries the token, which the page turns into a cookie.
    pub fn first_url(&self, listen: SocketAddr) -> String {
        let host = if listen.ip().is_unspecified() {
            // Reachable on every interface; loopback is the one that surely answers here.
            format!("127.0.0.1:{}", listen.port())
        } else {
            listen.to_string()
        };
        format!("http://{host}/?token={}", self.inner.secret.token())
    }

    fn mr(&self) -> &Mailroom<'static> {
        &self.inner.mr
    }

    fn human(&self) -> &Address {
        &self.inner.human
    }

    fn secret(&self) -> &Secret {
        &self.inner.secret
    }

    /// Runs `f` over the operations on a blocking thread: the core is synchronous.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Mailroom<'static>, &Address) -> T + Send + 'static,
    ) -> Result<T, view::Failure> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(me.mr(), me.human()))
            .await
            .map_err(|e| view::Failure::internal(format!("the request's task stopped: {e}")))
    }
}

/// The console's routes behind the guard.
pub fn router(console: Console) -> Router {
    Router::new()
        .route("/", get(pages::decisions))
        .route("/inbox", get(pages::inbox))
        .route("/compose", get(pages::compose))
        .route("/projects", get(pages::projects))
        .route("/channels", get(pages::channels))
        .route("/channel/{project}/{name}", get(pages::channel))
        .route("/channel/{project}/{name}/{id}", get(pages::entry))
        .route("/thread/{id}", get(pages::thread))
        .route("/m/{id}", get(pages::message))
        .route("/search", get(pages::search))
        .route("/events", get(live::events))
        .route("/static/console.js", get(view::script))
        .route("/static/console.css", get(view::style))
        .route("/reply", post(actions::reply))
        .route("/done", post(actions::done))
        .route("/send", post(actions::send))
        .route("/release", post(actions::release))
        .fallback(view::not_found)
        .layer(axum::middleware::from_fn(off_the_runtime))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            guard::whole_body,
        ))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            guard::guard,
        ))
        .with_state(console)
}

/// Runs the handler (its store calls and the page it renders) on a blocking thread, driving it
/// there with the runtime's handle, so the runtime's own thread only moves bytes: a page of
/// thousands of messages takes a while to render, and no other request or event stream waits
/// for it. (The runtime's thread keeps the sockets and timers, whichever thread awaits them.)
async fn off_the_runtime(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let runtime = tokio::runtime::Handle::current();
    match tokio::task::spawn_blocking(move || runtime.block_on(next.run(request))).await {
        Ok(response) => response,
        Err(e) => {
            view::Failure::internal(format!("the request's task stopped: {e}")).into_response()
        }
    }
}

/// The bounds every connection lives within; docs/CLI.md states the ones `mailroom serve` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once: one more is answered 503 and closed at once.
    pub connections: usize,
    /// How long a connection may take to send a whole request head, counted from when it
    /// opened or its previous answer ended, so an idle kept-alive connection closes after it too.
    pub head: Duration,
    /// How long a request's body may take to arrive, once its head has.
    pub body: Duration,
}

impl Limits {
    /// What `mailroom serve` uses.
    pub const SERVE: Limits = Limits {
        connections: 128,
        head: Duration::from_secs(15),
        body: Duration::from_secs(30),
    };
}

/// Whether a connection has shown this run's token (set by the guard, read by the accept loop).
#[derive(Clone, Debug, Default)]
pub(crate) struct Admitted(Arc<std::sync::atomic::AtomicBool>);

impl Admitted {
    pub(crate) fn mark(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The open connections that may be closed to make room: when every slot is taken, a new
/// connection closes the oldest one that has never shown the token, so that anyone who can
/// merely connect (another program of the machine, holding connections open without a
/// request) cannot keep the operator's browser out.
#[derive(Default)]
struct Open {
    next: u64,
    list: std::collections::VecDeque<(u64, Admitted, Arc<tokio::sync::Notify>)>,
}

impl Open {
    fn add(&mut self, admitted: Admitted, close: Arc<tokio::sync::Notify>) -> u64 {
        self.next += 1;
        self.list.push_back((self.next, admitted, close));
        self.next
    }

    fn remove(&mut self, id: u64) {
        self.list.retain(|(i, ..)| *i != id);
    }

    /// Closes the oldest connection that never showed the token; false when there is none.
    fn close_oldest_stranger(&mut self) -> bool {
        match self.list.iter().position(|(_, a, _)| !a.is_set()) {
            Some(at) => {
                if let Some((_, _, close)) = self.list.remove(at) {
                    close.notify_one();
                }
                true
            }
            None => false,
        }
    }
}

/// Serves the console on `listener` until `shutdown` completes.
///
/// One task per connection, at most `Limits::connections` of them; hyper closes a connection
/// whose request head is late (or that idles past the same bound), and `whole_body` answers a
/// late body 408.
pub async fn serve(
    listener: tokio::net::TcpListener,
    console: Console,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = console.inner.limits;
    let hub = console.inner.hub.clone();
    let app = router(console);
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    let open = Arc::new(std::sync::Mutex::new(Open::default()));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.head);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) if connection_error(&e) => continue,
                // Out of descriptors or memory: try again in a moment rather than spin.
                Err(_) => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // Full: room is made only by closing a connection that never showed the token.
                let made = lock(&open).close_oldest_stranger();
                let freed = if made {
                    tokio::time::timeout(Duration::from_secs(1), permits.clone().acquire_owned())
                        .await
                        .ok()
                        .and_then(Result::ok)
                } else {
                    None
                };
                match freed {
                    Some(permit) => permit,
                    None => {
                        turn_away(&stream, limits.connections);
                        continue;
                    }
                }
            }
        };
        let admitted = Admitted::default();
        let close = Arc::new(tokio::sync::Notify::new());
        let id = lock(&open).add(admitted.clone(), close.clone());
        let service = hyper_util::service::TowerToHyperService::new(
            app.clone().layer(axum::Extension(admitted)),
        );
        let connection =
            graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
        let open = open.clone();
        tokio::spawn(async move {
            tokio::select! {
                // A connection that failed (reset, late head) has nothing more to say to anyone.
                _ = connection => {}
                // Closed to make room: dropping the connection closes its socket.
                () = close.notified() => {}
            }
            lock(&open).remove(id);
            drop(permit);
        });
    }
    drop(listener);
    // Open event streams end now, or a graceful shutdown would wait for them forever.
    hub.stop();
    graceful.shutdown().await;
    Ok(())
}

/// The open connections, whatever a panicking holder left (the list stays consistent: each
/// change is one push or removal).
fn lock(open: &std::sync::Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Errors of one connection, not of the listener.
fn connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// Answers a connection beyond the limit with 503, unread, and closes it. The answer fits any
/// fresh socket's send buffer, so writing it never waits.
fn turn_away(stream: &tokio::net::TcpStream, limit: usize) {
    let why = format!(
        "refused: the console already has {limit} open connections; close some of its tabs and try again.\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}",
        why.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// Why `run` could not serve.
#[derive(Debug)]
pub enum ServeError {
    /// Another program listens on the address.
    InUse(SocketAddr),
    /// Binding or serving failed otherwise.
    Io(SocketAddr, std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::InUse(a) => write!(
                f,
                "{a} is in use by another program: pass --listen {}:0 for any free port, or another port",
                a.ip()
            ),
            ServeError::Io(a, e) => write!(f, "cannot serve on {a}: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Serves the console on `listen` until SIGINT or SIGTERM: starts the runtime, binds, hands
/// `ready` the first address to open (with the token) and the address bound, and returns once
/// open requests ended.
pub fn run(
    mr: Mailroom<'static>,
    listen: SocketAddr,
    ready: impl FnOnce(&str, SocketAddr),
) -> Result<(), ServeError> {
    let io = |e| ServeError::Io(listen, e);
    // One thread for the sockets: every handler runs on a blocking thread (see
    // `off_the_runtime`). The multi-thread scheduler would also link `libm` into the binary,
    // which every hook and send would then pay to load.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AddrInUse => ServeError::InUse(listen),
                _ => ServeError::Io(listen, e),
            })?;
        let bound = listener.local_addr().map_err(io)?;
        let console = Console::new(mr, bound.port()).map_err(io)?;
        ready(&console.first_url(bound), bound);
        serve(listener, console, stop_signal())
            .await
            .map_err(|e| ServeError::Io(bound, e))
    })
}

/// Completes at the first SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        // Without signal handlers the default action (ending the process) still applies.
        _ => std::future::pending().await,
    }
}
