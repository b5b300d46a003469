//! MCP over Streamable HTTP at `/mcp`: rmcp's server transport behind a front door of our own.
//!
//! Every request passes, in order: the path (`/mcp`, else 404), `Host` (one of the names the
//! server was bound as, with its port, else 403: DNS rebinding), `Origin` when present (the
//! same names over `http`, else 403), `Authorization: Bearer TOKEN` (checked against the store
//! on every request, so a revoked or expired token fails on the next one; else 401 with
//! `WWW-Authenticate: Bearer`), then the body, read whole within [`Limits::body`] time and
//! 2 MiB (408, 413). Only then does rmcp see it, served statelessly (no `Mcp-Session-Id`: no
//! session can outlive or change hands between tokens) by the server of the token's identity,
//! exactly as `--as ADDRESS mcp` serves over stdio.
//!
//! Connections: at most [`Limits::connections`], one task each; beyond that 503 and close.
//! hyper bounds a request head and an idle keep-alive by [`Limits::head`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode, header};
use mailroom_core::Address;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::Server;

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The largest request body taken.
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// How a server is bounded.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open connections at once.
    pub connections: usize,
    /// A request head, and an idle keep-alive connection, must come within this.
    pub head: Duration,
    /// A request body must arrive whole within this.
    pub body: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 128,
            head: Duration::from_secs(10),
            body: Duration::from_secs(30),
        }
    }
}

/// Checks a bearer token: the identity it acts as while it is live, `None` when it is unknown,
/// revoked or expired, `Err` when the store could not say. Called on a blocking thread.
pub type Authenticate = dyn Fn(&str) -> Result<Option<Address>, String> + Send + Sync;

/// Makes the server that acts as one identity (one per identity, made on its first request).
pub type ServerFor = dyn Fn(&Address) -> Server + Send + Sync;

type Service = StreamableHttpService<Server, NeverSessionManager>;

struct Front {
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    /// Accepted `Host` values, lower case, each with the port.
    hosts: Vec<String>,
    limits: Limits,
    services: Mutex<HashMap<Address, Service>>,
}

/// The `Host` values a server bound to `bound` answers to: its own address and, on loopback,
/// `localhost`, each with the port.
pub fn host_names(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts = vec![match bound {
        SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
        SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
    }];
    if bound.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
    }
    hosts
}

impl Front {
    fn service(&self, address: &Address) -> Service {
        let mut services = self
            .services
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = services.get(address) {
            return s.clone();
        }
        let server = (self.server_for)(address);
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_max_request_body_bytes(MAX_BODY)
            .with_allowed_hosts(self.hosts.clone())
            .with_allowed_origins(self.hosts.iter().map(|h| format!("http://{h}")));
        config = config.enforce_origin_validation();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        services.insert(address.clone(), service.clone());
        service
    }

    async fn answer(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != "/mcp" {
            return plain(StatusCode::NOT_FOUND, "not found: MCP is served at /mcp\n");
        }
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !host.is_some_and(|h| self.hosts.contains(&h)) {
            return plain(
                StatusCode::FORBIDDEN,
                "forbidden: the Host header does not name this server\n",
            );
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let ok = origin.to_str().ok().is_some_and(|o| {
                self.hosts
                    .iter()
                    .any(|h| o.eq_ignore_ascii_case(&format!("http://{h}")))
            });
            if !ok {
                return plain(
                    StatusCode::FORBIDDEN,
                    "forbidden: the Origin header does not name this server\n",
                );
            }
        }
        let secret = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_owned())
            })
            .filter(|t| !t.is_empty() && t.len() <= 256);
        let Some(secret) = secret else {
            return unauthorized("a bearer token is required (Authorization: Bearer TOKEN)\n");
        };
        let check = self.authenticate.clone();
        let address = match tokio::task::spawn_blocking(move || check(&secret)).await {
            Ok(Ok(Some(address))) => address,
            Ok(Ok(None)) => {
                return unauthorized("the token is unknown, revoked or expired\n");
            }
            Ok(Err(e)) => {
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("the store could not check the token: {e}\n"),
                );
            }
            Err(_) => {
                return plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the token check failed (a bug: please report it)\n",
                );
            }
        };
        let (parts, body) = request.into_parts();
        let read = tokio::time::timeout(self.limits.body, Limited::new(body, MAX_BODY).collect());
        let bytes = match read.await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e))
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is over 2 MiB\n",
                );
            }
            Ok(Err(_)) => return plain(StatusCode::BAD_REQUEST, "the request body broke off\n"),
            Err(_) => {
                return plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body did not arrive in time\n",
                );
            }
        };
        let service = self.service(&address);
        service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn unauthorized(text: &str) -> Response<Body> {
    let mut r = plain(StatusCode::UNAUTHORIZED, text);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"mailroom\""),
    );
    r
}

/// Serves MCP on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    let front = Arc::new(Front {
        authenticate,
        server_for,
        hosts: host_names(bound),
        limits,
        services: Mutex::default(),
    });
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections));
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
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            turn_away(&stream, limits.connections);
            continue;
        };
        let front = front.clone();
        let service = hyper::service::service_fn(move |request| {
            let front = front.clone();
            async move { Ok::<_, Infallible>(front.answer(request).await) }
        });
        let connection =
            graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A connection that failed (reset, late head) has nothing more to say to anyone.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Errors of one connection, not of the listener.
fn connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// Answers a connection beyond the limit with 503, unread, and closes it.
fn turn_away(stream: &tokio::net::TcpStream, limit: usize) {
    let why = format!("refused: the server already has {limit} open connections; try again.\n");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}",
        why.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// Serves MCP over HTTP on `listen` until SIGINT or SIGTERM: starts the runtime, binds, tells
/// `ready` the address bound, and returns once open requests ended.
pub fn run(
    listen: SocketAddr,
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        ready(listener.local_addr()?);
        serve(
            listener,
            authenticate,
            server_for,
            Limits::default(),
            stop_signal(),
        )
        .await
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
