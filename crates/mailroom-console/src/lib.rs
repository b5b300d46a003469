//! The operator's console: a local web page where `HUMAN` sees what waits for a decision and
//! answers it. Invariant: every request passes the guard (Host, token, same-origin POST with the
//! form's CSRF token) before any handler runs, and every piece of agent text reaches the page
//! escaped by the templates.
//!
//! The console holds one `Mailroom::shared` and calls the synchronous core from blocking tasks,
//! like the MCP server; the tokio runtime exists only while `mailroom serve` runs.

mod actions;
mod guard;
mod live;
mod pages;
mod view;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

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
}

impl Console {
    /// A console over `mr` for the server listening on `port`, with a fresh secret.
    pub fn new(mr: Mailroom<'static>, port: u16) -> std::io::Result<Console> {
        Ok(Console::with_secret(mr, port, Secret::generate()?))
    }

    pub fn with_secret(mr: Mailroom<'static>, port: u16, secret: Secret) -> Console {
        Console {
            inner: Arc::new(Inner {
                mr,
                human: Address::human(),
                secret,
                port,
                hub: live::Hub::default(),
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
        .route("/thread/{id}", get(pages::thread))
        .route("/m/{id}", get(pages::message))
        .route("/search", get(pages::search))
        .route("/events", get(live::events))
        .route("/static/console.js", get(view::script))
        .route("/static/console.css", get(view::style))
        .route("/reply", post(actions::reply))
        .route("/done", post(actions::done))
        .route("/send", post(actions::send))
        .fallback(view::not_found)
        .layer(axum::middleware::from_fn(off_the_runtime))
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

/// Serves the console on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    console: Console,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hub = console.inner.hub.clone();
    axum::serve(listener, router(console))
        .with_graceful_shutdown(async move {
            shutdown.await;
            // Open event streams end now, or a graceful shutdown would wait for them forever.
            hub.stop();
        })
        .await
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
