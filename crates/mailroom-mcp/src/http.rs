//! MCP over Streamable HTTP at `/mcp`: rmcp's server transport behind a front door of our own.
//!
//! Every request passes, in order: the path (`/mcp`, else 404), `Host` (one of the names the
//! server was bound as, or a DNS name of its certificate, with its port, else 403: DNS
//! rebinding), `Origin` when present (the same names over the server's scheme, else 403),
//! `Authorization: Bearer TOKEN` (checked against the store on every request, so a revoked or
//! expired token fails on the next one; else 401 with `WWW-Authenticate: Bearer`), the token's
//! share of the server ([`Limits::per_token`] requests at once, else 429 with `Retry-After`),
//! then the body, read whole within [`Limits::body`] time and 2 MiB (408, 413). Only then does
//! rmcp see it, served statelessly by the server of the token's identity, exactly as
//! `--as ADDRESS mcp` serves over stdio.
//!
//! Stateless: no `Mcp-Session-Id` is issued (the revisions that have sessions let a server go
//! without), so every request stands alone and is authorised by its own token: there is no
//! session to outlive its token or change hands, and a `GET` (a server stream, which only a
//! session would feed) is answered 405.
//!
//! Connections: at most [`Limits::connections`], one task each; beyond that 503 and close.
//! With TLS ([`Tls`]), the handshake must end within [`Limits::head`], and a client that speaks
//! plain HTTP to it gets a plain 400 naming `https`. hyper bounds a request head and an idle
//! keep-alive by [`Limits::head`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
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

/// Threads running store calls at once.
pub const BLOCKING_THREADS: usize = 16;

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
    /// Requests of one token served at once; more are answered 429.
    pub per_token: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 128,
            head: Duration::from_secs(10),
            body: Duration::from_secs(30),
            per_token: 16,
        }
    }
}

/// A live token: its id (never the secret) and the identity it acts as.
#[derive(Clone, Debug)]
pub struct Holder {
    pub token: String,
    pub address: Address,
}

/// Checks a bearer token: who holds it while it is live, `None` when it is unknown, revoked or
/// expired, `Err` when the store could not say. Called on a blocking thread.
pub type Authenticate = dyn Fn(&str) -> Result<Option<Holder>, String> + Send + Sync;

/// Makes the server that acts as one identity (one per identity, made on its first request).
pub type ServerFor = dyn Fn(&Address) -> Server + Send + Sync;

type Service = StreamableHttpService<Server, NeverSessionManager>;

struct Front {
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    /// Accepted `Host` values, lower case, each with the port.
    hosts: Vec<String>,
    /// `http` or `https`: what an accepted `Origin` starts with.
    scheme: &'static str,
    limits: Limits,
    services: Mutex<HashMap<Address, Service>>,
    /// Each token's requests in progress, by token id.
    busy: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
}

/// The certificate and key an `https` server presents, read from PEM files.
#[derive(Clone)]
pub struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    /// The certificate's DNS names, lower case: `Host` values the server answers to.
    names: Vec<String>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("names", &self.names).finish()
    }
}

/// Why a certificate or key cannot be served, in one sentence naming the file.
#[derive(Debug)]
pub struct TlsError(String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// The largest certificate or key file read: a chain is a few KiB.
const MAX_PEM: u64 = 1024 * 1024;

fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>, TlsError> {
    use std::io::Read as _;
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| TlsError(format!("cannot read the TLS {what} {shown}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TlsError(format!("cannot read the TLS {what} {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_PEM {
        return Err(TlsError(format!(
            "the TLS {what} {shown} is over 1 MiB: pass a PEM file"
        )));
    }
    Ok(bytes)
}

impl Tls {
    /// Reads a PEM certificate chain (the server's certificate first) and its PEM private key.
    pub fn load(cert: &Path, key: &Path) -> Result<Tls, TlsError> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(&read_pem(cert, "certificate")?)
                .collect::<Result<_, _>>()
                .map_err(|e| {
                    TlsError(format!(
                        "the TLS certificate {} is not PEM ({e}): pass the certificate chain as PEM, the server's certificate first",
                        cert.display()
                    ))
                })?;
        let Some(first) = chain.first() else {
            return Err(TlsError(format!(
                "the TLS certificate {} holds no certificate: pass the certificate chain as PEM, the server's certificate first",
                cert.display()
            )));
        };
        let names = webpki::EndEntityCert::try_from(first)
            .map_err(|e| {
                TlsError(format!(
                    "the TLS certificate {} cannot be read ({e}): pass an X.509 certificate as PEM",
                    cert.display()
                ))
            })?
            .valid_dns_names()
            .map(str::to_ascii_lowercase)
            .collect();
        let key_der = PrivateKeyDer::from_pem_slice(&read_pem(key, "key")?).map_err(|e| {
            TlsError(format!(
                "the TLS key {} holds no private key ({e}): pass the certificate's private key as PEM",
                key.display()
            ))
        })?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key_der))
        .map_err(|e| {
            let why = match e {
                rustls::Error::InconsistentKeys(_) => String::new(),
                other => format!(" ({other})"),
            };
            TlsError(format!(
                "the TLS key {} does not go with the certificate {}{why}: pass the key the certificate was made for",
                key.display(),
                cert.display()
            ))
        })?;
        Ok(Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            names,
        })
    }
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
    /// The semaphore counting `token`'s requests in progress. One per token ever seen: tokens
    /// are few, each issued by the operator.
    fn turn(&self, token: &str) -> Arc<tokio::sync::Semaphore> {
        let mut busy = self
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        busy.entry(token.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(self.limits.per_token)))
            .clone()
    }

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
            .with_allowed_origins(self.hosts.iter().map(|h| format!("{}://{h}", self.scheme)));
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
                    .any(|h| o.eq_ignore_ascii_case(&format!("{}://{h}", self.scheme)))
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
        let holder = match tokio::task::spawn_blocking(move || check(&secret)).await {
            Ok(Ok(Some(holder))) => holder,
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
        let Ok(_turn) = self.turn(&holder.token).try_acquire_owned() else {
            let mut r = plain(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "this token already has {} requests in progress; retry when one has returned\n",
                    self.limits.per_token
                ),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            return r;
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
        let service = self.service(&holder.address);
        service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    }
}

/// A refusal before rmcp sees the request: `status`, and as the body a JSON-RPC error (id
/// null) whose message is `text`, so that a client which shows only JSON-RPC errors (the
/// Python SDK) still shows why, and one that shows the body (the TypeScript SDK) shows it too.
fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32000, "message": text.trim_end() },
    });
    let mut bytes = body.to_string().into_bytes();
    bytes.push(b'\n');
    let mut r = Response::new(Full::new(Bytes::from(bytes)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
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

/// Serves MCP on `listener` until `shutdown` completes, over TLS when `tls` is given.
/// `also` names more `Host` values (lower case, without the port) the server answers to: the
/// names and addresses clients reach an exposed server by.
pub async fn serve(
    listener: tokio::net::TcpListener,
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    tls: Option<Tls>,
    also: &[String],
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    let mut hosts = host_names(bound);
    if let Some(tls) = &tls {
        hosts.extend(tls.names.iter().map(|n| format!("{n}:{}", bound.port())));
    }
    hosts.extend(also.iter().map(|n| format!("{n}:{}", bound.port())));
    let front = Arc::new(Front {
        authenticate,
        server_for,
        hosts,
        scheme: if tls.is_some() { "https" } else { "http" },
        limits,
        services: Mutex::default(),
        busy: Mutex::default(),
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
        let http = http.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            // A connection that failed (reset, late head) has nothing more to say to anyone.
            match tls {
                None => {
                    let connection =
                        http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                    let _ = watcher.watch(connection).await;
                }
                Some(tls) => {
                    let Some(stream) = handshake(stream, &tls, limits.head).await else {
                        return;
                    };
                    let connection =
                        http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                    let _ = watcher.watch(connection).await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The TLS side of a connection, once its handshake ended within `head`. A client that opened
/// with anything but a TLS handshake record is answered a plain 400 naming `https`.
async fn handshake(
    stream: tokio::net::TcpStream,
    tls: &Tls,
    head: Duration,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    /// The first byte of every TLS connection: a handshake record.
    const HANDSHAKE: u8 = 0x16;
    let mut first = [0u8; 1];
    match tokio::time::timeout(head, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == HANDSHAKE => {}
        Ok(Ok(1)) => {
            let why = "this server speaks HTTPS: use an https:// URL\n";
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{why}",
                why.len()
            );
            let mut stream = stream;
            let _ = tokio::time::timeout(head, async {
                use tokio::io::AsyncWriteExt as _;
                stream.write_all(answer.as_bytes()).await?;
                stream.shutdown().await
            })
            .await;
            return None;
        }
        _ => return None,
    }
    tokio::time::timeout(head, tls.acceptor.accept(stream))
        .await
        .ok()?
        .ok()
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

/// Serves MCP over HTTP (HTTPS with `tls`) on `listen` until SIGINT or SIGTERM: starts the
/// runtime, binds, tells `ready` the address bound, and returns once open requests ended.
pub fn run(
    listen: SocketAddr,
    authenticate: Arc<Authenticate>,
    server_for: Arc<ServerFor>,
    tls: Option<Tls>,
    also: Vec<String>,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Store calls are short (a waiting call holds no thread: see `Waits`); beyond these,
        // calls queue rather than start a thread each.
        .max_blocking_threads(BLOCKING_THREADS)
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        ready(listener.local_addr()?);
        serve(
            listener,
            authenticate,
            server_for,
            tls,
            &also,
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
