//! Making a connection, and the one sentence for each way one fails.

use mailroom_core::Error;
use postgres::error::SqlState;
use postgres::{Client, Config};

use crate::url::CONNECT_TIMEOUT;
use crate::{PasswordSources, parse_url_for, sentence, shown_url, tls};

/// A plain client for `url`, connected as the store connects (TLS as `sslmode` says): for
/// tools and tests that look behind the store.
///
/// Reads no environment: a verifying `sslmode` needs the URL's `sslrootcert`.
pub fn connect(url: &str) -> Result<Client, Error> {
    let (target, _) = parse_url_for(url, CONNECT_TIMEOUT, &PasswordSources::default())?;
    dial(
        &target.config,
        target.tls.as_ref(),
        &shown_url(&target.config),
    )
}

/// A new connection to the server of `config`, encrypted as its `sslmode` says and verified as
/// `tls` says (see `tls`; `None`: unverified); its failure is one sentence naming `shown`.
pub(crate) fn dial(config: &Config, tls: Option<&tls::Tls>, shown: &str) -> Result<Client, Error> {
    let unverified;
    let tls = match tls {
        Some(tls) => tls,
        None => {
            unverified = tls::Tls::unverified(tls::SslMode::of_driver(config)).map_err(|e| {
                sentence(
                    format!("cannot set up TLS for the PostgreSQL server at {shown}"),
                    e,
                )
            })?;
            &unverified
        }
    };
    let Some(&limit) = config.get_connect_timeout() else {
        return config
            .connect(tls.connector())
            .map_err(|e| connect_error(shown, config, Some(tls), &e));
    };
    // The driver bounds only the TCP connect by connect_timeout: a server (or anything between)
    // that accepts and then never answers the TLS request, the handshake or the login would
    // hang the command, a hook or the MCP server for good. The whole setup runs on a thread of
    // its own, bounded by the same limit for each host, as libpq bounds it; a thread given up
    // on ends with its socket (keepalives, `tcp_user_timeout`) or with the process.
    let hosts = u32::try_from(config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let (setup, connector) = (config.clone(), tls.connector());
    std::thread::Builder::new()
        .name("mailroom-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(setup.connect(connector));
        })
        .map_err(|e| {
            sentence(
                format!("cannot connect to the PostgreSQL server at {shown}"),
                format!("no thread could be started for it ({e})"),
            )
        })?;
    match rx.recv_timeout(limit.saturating_mul(hosts)) {
        Ok(connected) => connected.map_err(|e| connect_error(shown, config, Some(tls), &e)),
        Err(_) => Err(sentence(
            format!("the PostgreSQL server at {shown} did not answer"),
            format!(
                "it took the connection but had not finished the login after {} s; check that the address is a PostgreSQL server that is up, or give it longer with connect_timeout=SECONDS in the URL",
                limit.saturating_mul(hosts).as_secs()
            ),
        )),
    }
}

/// The rustls error under a failed TLS handshake, if that is what it was.
fn rustls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(r) = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(r);
        }
        source = s.source();
    }
    None
}

/// The sentence for a connection that could not be made.
///
/// `tls` is what the connection was to verify (`None`: nothing, as `config`'s `sslmode` says).
pub(crate) fn connect_error(
    shown: &str,
    config: &Config,
    tls: Option<&tls::Tls>,
    e: &postgres::Error,
) -> Error {
    let mode = tls.map_or_else(|| tls::SslMode::of_driver(config), tls::Tls::mode);
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            return sentence(
                format!("the PostgreSQL server at {shown} refused the login"),
                format!(
                    "{}; check the user and password of the URL (and the server's pg_hba.conf)",
                    db.message()
                ),
            );
        }
        if *code == SqlState::INVALID_CATALOG_NAME {
            let name = config.get_dbname().unwrap_or("");
            return sentence(
                format!("the database '{name}' does not exist on the PostgreSQL server at {shown}"),
                format!("create it (createdb {name}) or correct the URL"),
            );
        }
        return sentence(
            format!("the PostgreSQL server at {shown} refused the connection"),
            db.message().to_owned(),
        );
    }
    if e.to_string().starts_with("error performing TLS handshake") {
        let cause = std::error::Error::source(e).map_or_else(String::new, ToString::to_string);
        if cause.contains("does not support TLS") {
            return sentence(
                format!(
                    "the PostgreSQL server at {shown} does not offer TLS, and the URL asks for sslmode={}",
                    mode.name()
                ),
                "turn ssl on in the server's postgresql.conf, or write sslmode=prefer (encrypt when offered) or sslmode=disable in the URL".to_owned(),
            );
        }
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.as_str(),
            _ => "",
        };
        if let Some((what, fix)) = rustls_error(e).and_then(|r| {
            tls::certificate_problem(r, host, tls.map_or(tls::Roots::None, tls::Tls::roots))
        }) {
            return sentence(
                format!(
                    "the PostgreSQL server at {shown} showed a certificate that failed verification, so nothing was sent to it"
                ),
                format!("{what}; {fix}"),
            );
        }
        return sentence(
            format!("the TLS handshake with the PostgreSQL server at {shown} failed"),
            format!(
                "{cause}; check the server's certificate and ssl settings, or write sslmode=disable in the URL"
            ),
        );
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            let what = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                std::io::ErrorKind::TimedOut => "no answer in time".to_owned(),
                _ => io.to_string(),
            };
            return sentence(
                format!("cannot reach the PostgreSQL server at {shown}"),
                format!("{what}; start the server, or correct the host and port of the URL"),
            );
        }
        source = s.source();
    }
    sentence(
        format!("cannot connect to the PostgreSQL server at {shown}"),
        format!("{e}; check that it runs and that the URL is right"),
    )
}

/// Whether an error says the connection is gone: closed under us, or the server ending the
/// session (`pg_terminate_backend`, a shutdown: its FATAL can arrive as the answer to the next
/// query, before the client sees the socket close), or a connection failure (class 08).
pub(crate) fn is_lost(e: &postgres::Error) -> bool {
    e.is_closed()
        || e.code().is_some_and(|c| {
            *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || c.code().starts_with("08")
        })
}

/// What the server said, for a message: a database error's own text (the driver's display of
/// one is only "db error"), otherwise the error's.
pub(crate) fn said(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => e.to_string(),
    }
}

/// Whether an error says the transaction lost a race PostgreSQL resolved by aborting it.
pub(crate) fn is_retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}
