//! mailroom's PostgreSQL store: the same model as the file store, in tables, so agents on many
//! machines share one mailroom through one server.
//!
//! Why the synchronous `postgres` crate: the core's `Store` is synchronous and every CLI
//! command is a fresh process, so one blocking connection is the cheapest thing that works (the
//! crate drives it on a small current-thread runtime of its own; no thread pool starts). A
//! long-lived process (the MCP server) calls the store from many threads: [`PgStore`] keeps a
//! few idle connections and opens another when all are busy, so calls never queue behind one
//! connection. `wait`/`watch` hold one more connection each, for `LISTEN`.
//!
//! Invariants:
//! - Every state change is one transaction; every conditional change (a move out of a state, an
//!   edit while unread, a seen mark, a key claim, a retraction, an origin claim) is one
//!   statement whose `WHERE` or `ON CONFLICT` decides it, so concurrent callers need no lock of
//!   ours: PostgreSQL re-checks the condition on the row it locks.
//! - The schema is created and upgraded by the embedded, append-only migrations in
//!   `migrations/`, under a transaction-scoped advisory lock; a schema newer than this binary is
//!   refused, never used.
//! - No message ever names the password: every URL shown goes through [`shown_url`].

mod codec;
mod imp;
mod pgpass;
mod role;
pub mod testing;
mod tls;
mod watch;

use std::sync::Mutex;
use std::time::Duration;

use mailroom_core::Error;
use postgres::error::SqlState;
use postgres::types::Type;
use postgres::{Client, Config, Statement, Transaction};

pub use pgpass::PasswordSources;

/// The embedded migrations, in order: version N is `MIGRATIONS[N - 1]`. Append only.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_initial.sql"),
    include_str!("../migrations/0002_strict.sql"),
    include_str!("../migrations/0003_deliver.sql"),
    include_str!("../migrations/0004_wake_waiters_only.sql"),
    include_str!("../migrations/0005_counts_per_slot.sql"),
    include_str!("../migrations/0006_slot_per_connection.sql"),
    include_str!("../migrations/0007_revisions_of_own_unread_copies.sql"),
    include_str!("../migrations/0008_copies_as_sent.sql"),
    include_str!("../migrations/0009_writes_through_checked_functions.sql"),
];

/// The schema version this binary writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Idle connections kept for reuse (a long-lived server); more are opened when all are busy.
const KEEP_IDLE: usize = 4;

/// How long a connection attempt may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection is idle before its first keepalive probe (`keepalives_idle`).
const KEEPALIVES_IDLE: Duration = Duration::from_secs(30);
/// How long between unanswered keepalive probes (`keepalives_interval`).
const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(10);
/// How many unanswered probes make the connection dead (`keepalives_count`): with the two
/// above, a server gone silent is found in about a minute.
const KEEPALIVES_COUNT: u32 = 3;
/// The longest `tcp_user_timeout` the system takes (milliseconds in a C int).
const MAX_USER_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// How often a transaction that lost a deadlock or a serialization race is tried again.
const ATTEMPTS: usize = 5;

/// A store on a PostgreSQL database.
pub struct PgStore {
    config: Config,
    /// How connections are encrypted and verified; `None`: as `config`'s `sslmode`, unverified.
    tls: Option<tls::Tls>,
    /// The URL without its password: the only form ever shown.
    shown: String,
    /// The schema the tables are in (`current_schema()`), which keeps notification channels of
    /// two mailrooms in one database apart.
    schema: String,
    idle: Mutex<Vec<Conn>>,
    /// Whether row-level security applies to this connection's role (strict mode: every role
    /// but the tables' owner), asked once, when first needed.
    strict: std::sync::OnceLock<bool>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// A message for a [`Error::Store`]'s source: the part of the sentence after the context.
#[derive(Debug)]
pub(crate) struct Msg(pub String);

impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Msg {}

fn sentence(context: String, rest: String) -> Error {
    Error::store(context, Msg(rest))
}

/// Whether `url` names a PostgreSQL store (rather than a directory).
pub fn is_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// `config` as a URL without its password: what every message shows. The `options` stay, so
/// that two mailrooms in different schemas of one database (`-c search_path=…`) read apart.
pub fn shown_url(config: &Config) -> String {
    use postgres::config::Host;
    let user = config.get_user().unwrap_or("");
    let ports = config.get_ports();
    let mut hosts = Vec::new();
    let mut socket = None;
    for (i, h) in config.get_hosts().iter().enumerate() {
        match h {
            Host::Tcp(name) => {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                if name.contains(':') {
                    hosts.push(format!("[{name}]:{port}"));
                } else {
                    hosts.push(format!("{name}:{port}"));
                }
            }
            Host::Unix(path) => socket = Some(path.display().to_string()),
        }
    }
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    let db = config.get_dbname().unwrap_or("");
    let mut s = format!("postgres://{at}{}/{db}", hosts.join(","));
    let mut query = Vec::new();
    if let Some(path) = socket {
        query.push(format!("host={path}"));
    }
    if let Some(options) = config.get_options().filter(|o| !o.trim().is_empty()) {
        query.push(format!("options={}", query_escaped(options)));
    }
    if !query.is_empty() {
        s.push('?');
        s.push_str(&query.join("&"));
    }
    s
}

/// `value` with the characters that would break a URL's query written as `%XX`, as a user
/// writes them (a whole percent-encoding crate is not needed for a message).
fn query_escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ' ' | '%' | '&' | '=' | '#' | '+' | '?' => out.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => out.push_str(&format!("%{:02X}", c as u32 & 0xff)),
            c => out.push(c),
        }
    }
    out
}

/// The password written in a raw URL or key=value string, if any, so that an error quoting the
/// input can be scrubbed of it.
fn password_in(raw: &str) -> Option<String> {
    if let Some(rest) = raw.split_once("://").map(|(_, r)| r) {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && let Some((_, pw)) = userinfo.split_once(':')
            && !pw.is_empty()
        {
            return Some(pw.to_owned());
        }
    }
    raw.split(['?', '&', ' '])
        .find_map(|kv| kv.strip_prefix("password="))
        .filter(|pw| !pw.is_empty())
        .map(str::to_owned)
}

/// `text` with every occurrence of the password of `raw` (and its percent-decoded form)
/// replaced.
fn scrub(text: &str, raw: &str) -> String {
    match password_in(raw) {
        Some(pw) => text.replace(&pw, "***"),
        None => text.to_owned(),
    }
}

/// `raw` (a URL as the user wrote it) with its password replaced by `***`: for messages that
/// must quote what was written.
pub fn redacted(raw: &str) -> String {
    scrub(raw, raw)
}

/// How long a connection attempt may take, when the URL does not say, for the commands that
/// must never hold a session up: the hooks and `setup --check`.
pub const QUICK_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A parsed URL: the driver's settings, and the TLS that verifies what its `sslmode` asks
/// (see `tls`). A [`Config`] built by hand converts into one that encrypts as its `sslmode`
/// says and verifies no certificate.
#[derive(Debug, Clone)]
pub struct Target {
    config: Config,
    /// `None`: as the driver's `sslmode` says, unverified.
    tls: Option<tls::Tls>,
}

impl Target {
    /// The driver's settings (`sslmode` there is `require` for the verifying modes).
    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl From<Config> for Target {
    fn from(config: Config) -> Target {
        Target { config, tls: None }
    }
}

/// [`parse_url_with`], then a password from `passwords` when the URL has none (see
/// [`PasswordSources`]) and the root certificates its `sslmode` needs (the URL's
/// `sslrootcert`, else `PGSSLROOTCERT`, else `~/.postgresql/root.crt`, read now: a verifying
/// mode without them is refused here); also returns a warning to show the user when the
/// password file was ignored.
pub fn parse_url_for(
    raw: &str,
    connect_timeout: Duration,
    passwords: &PasswordSources,
) -> Result<(Target, Option<String>), Error> {
    let parsed = parse_parts(raw, connect_timeout)?;
    let mut config = parsed.config;
    let warning = passwords.fill(&mut config);
    // As in libpq, a URL that names the system's authorities wants them checked: a mode that
    // would go on in clear text when a server declines TLS is refused with it.
    let weak = tls::SslMode::of_driver(&config);
    if parsed
        .root_cert
        .as_ref()
        .is_some_and(|p| p.as_os_str() == "system")
        && parsed.sslmode_given
        && matches!(weak, tls::SslMode::Disable | tls::SslMode::Prefer)
    {
        return Err(Error::Invalid(format!(
            "the PostgreSQL URL names sslrootcert=system with sslmode={}, which would go on in clear text when a server declines TLS; write sslmode=verify-full (or leave sslmode out)",
            weak.name()
        )));
    }
    let roots = match parsed.root_cert {
        Some(path) => tls::RootSource::Named(path),
        None => passwords.root_source(),
    };
    let roots = match roots {
        tls::RootSource::Named(p) if p.as_os_str() == "system" => tls::RootSource::System,
        other => other,
    };
    let mode = match parsed.verify {
        Some(mode) => mode,
        // As in libpq: the system's authorities make verify-full the default.
        None if !parsed.sslmode_given && roots == tls::RootSource::System => {
            tls::SslMode::VerifyFull
        }
        None => tls::SslMode::of_driver(&config),
    };
    // A verifying mode refuses a server that declines TLS: the driver must require it (an
    // implied verify-full would otherwise keep the driver's `prefer`, and a man in the middle
    // answering "no TLS" would be sent the login in clear text).
    if matches!(mode, tls::SslMode::VerifyCa | tls::SslMode::VerifyFull) {
        config.ssl_mode(postgres::config::SslMode::Require);
    }
    let tls = tls::Tls::for_mode(mode, &roots).map_err(Error::Invalid)?;
    Ok((
        Target {
            config,
            tls: Some(tls),
        },
        warning,
    ))
}

/// How long a connection attempt may take when the URL does not say, for a command that is
/// not a hook.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = CONNECT_TIMEOUT;

/// Parses a PostgreSQL URL (or `key=value` string), adding mailroom's defaults. The driver's
/// settings only: `verify-ca` and `verify-full` become `require` and `sslrootcert` is left
/// out, so a connection made with it verifies no certificate (see [`parse_url_for`]).
pub fn parse_url(raw: &str) -> Result<Config, Error> {
    parse_url_with(raw, CONNECT_TIMEOUT)
}

/// [`parse_url`] with `connect_timeout` as the connection timeout when the URL gives none.
pub fn parse_url_with(raw: &str, connect_timeout: Duration) -> Result<Config, Error> {
    parse_parts(raw, connect_timeout).map(|p| p.config)
}

/// A URL taken apart: the driver's settings and the TLS parameters the driver does not know.
struct Parsed {
    config: Config,
    /// `verify-ca` or `verify-full` when the URL's (last) `sslmode` says so.
    verify: Option<tls::SslMode>,
    /// Whether the URL has an `sslmode` at all.
    sslmode_given: bool,
    /// The URL's `sslrootcert`.
    root_cert: Option<std::path::PathBuf>,
}

fn parse_parts(raw: &str, connect_timeout: Duration) -> Result<Parsed, Error> {
    let split = tls_params(raw);
    let verify = match split.sslmode.as_deref() {
        Some(value) => tls::SslMode::parse(value)
            .filter(|m| matches!(m, tls::SslMode::VerifyCa | tls::SslMode::VerifyFull)),
        None => None,
    };
    let root_cert = match split.root_cert.as_deref() {
        Some("") => {
            return Err(Error::Invalid(
                "the PostgreSQL URL's parameter 'sslrootcert' is empty; write the path of a PEM file of root certificates".to_owned(),
            ));
        }
        Some(path) => Some(std::path::PathBuf::from(path)),
        None => None,
    };
    let mut config: Config = split
        .rest
        .parse()
        .map_err(|e: postgres::Error| Error::Invalid(url_problem(&e, raw)))?;
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("mailroom");
    }
    keepalives(&mut config, &split)?;
    Ok(Parsed {
        config,
        verify,
        sslmode_given: split.sslmode.is_some(),
        root_cert,
    })
}

/// Sets what `split`'s own parameters say, and keepalives where the URL says nothing: a peer
/// that vanished without a word (a partition, a sleeping laptop, a NAT that forgot the flow)
/// is found dead in about a minute, not the system's two hours, so a `watch` listening on an
/// idle connection reconnects and looks again rather than waiting forever.
fn keepalives(config: &mut Config, split: &TlsParams) -> Result<(), Error> {
    let mut user_timeout = None;
    for (name, value) in &split.own {
        let Ok(number) = value.parse::<u32>() else {
            let accepts = PARAMETERS
                .iter()
                .find(|(n, _)| n == name)
                .map_or("a whole number", |(_, a)| a);
            return Err(Error::Invalid(format!(
                "the PostgreSQL URL's parameter '{name}' has a value it does not accept; write {accepts}"
            )));
        };
        match name.as_str() {
            "keepalives_count" => {
                config.keepalives_retries(number);
            }
            // `tcp_user_timeout`; 0 is libpq's "the system's own" (see below).
            _ => user_timeout = Some(Duration::from_millis(u64::from(number))),
        }
    }
    // The kernel's own bounds (TCP_KEEPIDLE and TCP_KEEPINTVL at most 32767 s, TCP_KEEPCNT 1 to
    // 127, TCP_USER_TIMEOUT an int of ms): a value past them would be refused by the socket, as
    // if the server could not be reached.
    let out_of_range = |name: &str, range: &str| {
        Error::Invalid(format!(
            "the PostgreSQL URL's parameter '{name}' has a value it does not accept; write {range}"
        ))
    };
    let keepalive_secs = 1..=32_767;
    if !keepalive_secs.contains(&config.get_keepalives_idle().as_secs()) {
        return Err(out_of_range(
            "keepalives_idle",
            "a whole number of seconds from 1 to 32767 (or keepalives=0 to send none)",
        ));
    }
    if config
        .get_keepalives_interval()
        .is_some_and(|i| !keepalive_secs.contains(&i.as_secs()))
    {
        return Err(out_of_range(
            "keepalives_interval",
            "a whole number of seconds from 1 to 32767",
        ));
    }
    if config
        .get_keepalives_retries()
        .is_some_and(|c| !(1..=127).contains(&c))
    {
        return Err(out_of_range(
            "keepalives_count",
            "a whole number of probes from 1 to 127",
        ));
    }
    if user_timeout.is_some_and(|t| t > MAX_USER_TIMEOUT) {
        return Err(out_of_range(
            "tcp_user_timeout",
            "a whole number of milliseconds up to 2147483647 (0: the system's own)",
        ));
    }
    if !config.get_keepalives() {
        if let Some(t) = user_timeout.filter(|t| !t.is_zero()) {
            config.tcp_user_timeout(t);
        }
        return Ok(());
    }
    if !split.idle_given {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    let interval = config
        .get_keepalives_interval()
        .unwrap_or(KEEPALIVES_INTERVAL);
    config.keepalives_interval(interval);
    let count = config.get_keepalives_retries().unwrap_or(KEEPALIVES_COUNT);
    config.keepalives_retries(count);
    // Linux closes a connection whose keepalive probes go unanswered after the user timeout
    // when one is set (not after the count of probes), and one whose sent data goes
    // unacknowledged that long (a query in flight when the network went): by default, the time
    // the keepalives take to give up.
    let probing = interval
        .checked_mul(count)
        .and_then(|p| p.checked_add(config.get_keepalives_idle()))
        .map_or(MAX_USER_TIMEOUT, |p| p.min(MAX_USER_TIMEOUT));
    match user_timeout {
        Some(t) if t.is_zero() => {}
        Some(t) => {
            config.tcp_user_timeout(t);
        }
        None => {
            config.tcp_user_timeout(probing);
        }
    }
    Ok(())
}

/// A raw URL with the TLS parameters the driver does not take out or rewritten.
#[derive(Debug, PartialEq)]
struct TlsParams {
    /// The URL for the driver: `sslrootcert` removed, `sslmode=verify-…` written `require`.
    rest: String,
    /// The value of the last `sslmode`, decoded.
    sslmode: Option<String>,
    /// The value of the last `sslrootcert`, decoded.
    root_cert: Option<String>,
    /// The parameters mailroom reads itself (see `OWN_PARAMETERS`), taken out, decoded.
    own: Vec<(String, String)>,
    /// Whether the URL has a `keepalives_idle` (the driver's default cannot be told apart).
    idle_given: bool,
}

/// The parameters the driver reads otherwise than libpq, or not at all, which mailroom takes
/// out of the URL and applies itself: libpq's `tcp_user_timeout` is in milliseconds (the
/// driver's, in seconds), and its `keepalives_count` is the driver's `keepalives_retries`.
const OWN_PARAMETERS: &[&str] = &["tcp_user_timeout", "keepalives_count"];

/// Takes `sslrootcert` and mailroom's own parameters (`OWN_PARAMETERS`) out of `raw`, notes
/// whether it sets `keepalives_idle`, and writes `sslmode=verify-ca|verify-full` as `require`,
/// in both of libpq's forms: a URL's query (`?a=b&c=d`, percent-encoded) and `key=value` words
/// (values quoted with `'…'`, `\` escaping). What it cannot read is left for the driver to
/// refuse.
fn tls_params(raw: &str) -> TlsParams {
    let mut sslmode = None;
    let mut root_cert = None;
    let mut own = Vec::new();
    let verifying = |v: &str| v == "verify-ca" || v == "verify-full";
    if is_url(raw) {
        let Some((base, query)) = raw.split_once('?') else {
            return TlsParams {
                rest: raw.to_owned(),
                sslmode,
                root_cert,
                own,
                idle_given: false,
            };
        };
        let mut kept = Vec::new();
        let mut idle = false;
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            idle |= key == "keepalives_idle";
            match key {
                "sslrootcert" => root_cert = Some(percent_decoded(value)),
                k if OWN_PARAMETERS.contains(&k) => {
                    own.push((k.to_owned(), percent_decoded(value)))
                }
                "sslmode" => {
                    let value = percent_decoded(value);
                    if verifying(&value) {
                        kept.push("sslmode=require");
                    } else {
                        kept.push(pair);
                    }
                    sslmode = Some(value);
                }
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return TlsParams {
            rest,
            sslmode,
            root_cert,
            own,
            idle_given: idle,
        };
    }
    let Some(words) = key_values(raw) else {
        return TlsParams {
            rest: raw.to_owned(),
            sslmode,
            root_cert,
            own,
            idle_given: false,
        };
    };
    let mut rest = String::with_capacity(raw.len());
    let mut at = 0;
    let idle_given = words.iter().any(|(_, key, _)| key == "keepalives_idle");
    for (span, key, value) in words {
        match key.as_str() {
            k if OWN_PARAMETERS.contains(&k) => {
                rest.push_str(&raw[at..span.start]);
                at = span.end;
                own.push((key, value));
            }
            "sslrootcert" => {
                rest.push_str(&raw[at..span.start]);
                at = span.end;
                root_cert = Some(value);
            }
            "sslmode" => {
                if verifying(&value) {
                    rest.push_str(&raw[at..span.start]);
                    rest.push_str("sslmode=require");
                    at = span.end;
                }
                sslmode = Some(value);
            }
            _ => {}
        }
    }
    rest.push_str(&raw[at..]);
    TlsParams {
        rest,
        sslmode,
        root_cert,
        own,
        idle_given,
    }
}

/// The `key=value` words of a libpq connection string, each with its byte span; `None` when it
/// is not one (the driver then says what is wrong).
fn key_values(raw: &str) -> Option<Vec<(std::ops::Range<usize>, String, String)>> {
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= bytes.len() {
            return Some(out);
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = raw.get(start..i)?.to_owned();
        i = skip_space(i);
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_space(i + 1);
        let mut value = Vec::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i)? {
                    b'\'' => {
                        i += 1;
                        break;
                    }
                    b'\\' => {
                        value.push(*bytes.get(i + 1)?);
                        i += 2;
                    }
                    b => {
                        value.push(*b);
                        i += 1;
                    }
                }
            }
        } else {
            while let Some(&b) = bytes.get(i) {
                if b.is_ascii_whitespace() {
                    break;
                }
                if b == b'\\' {
                    value.push(*bytes.get(i + 1)?);
                    i += 2;
                } else {
                    value.push(b);
                    i += 1;
                }
            }
        }
        out.push((start..i, key, String::from_utf8(value).ok()?));
    }
}

/// `value` with its `%XX` escapes decoded (an invalid one is kept as written).
fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The connection parameters a URL may set, with what each accepts: the driver's, which are
/// libpq's that it supports.
const PARAMETERS: &[(&str, &str)] = &[
    ("user", "a role name"),
    ("password", "the role's password"),
    ("dbname", "a database name"),
    ("options", "server options, as -c name=value"),
    ("application_name", "a name shown in pg_stat_activity"),
    (
        "sslmode",
        "disable, prefer, require, verify-ca or verify-full",
    ),
    ("sslrootcert", "the path of a PEM file of root certificates"),
    ("sslnegotiation", "postgres or direct"),
    ("host", "a host name, an address or a socket directory"),
    ("hostaddr", "an IP address"),
    ("port", "a port number"),
    ("connect_timeout", "a whole number of seconds"),
    ("tcp_user_timeout", "a whole number of milliseconds"),
    ("keepalives", "1 (on) or 0 (off)"),
    ("keepalives_idle", "a whole number of seconds"),
    ("keepalives_interval", "a whole number of seconds"),
    ("keepalives_count", "a whole number of probes"),
    (
        "keepalives_retries",
        "a whole number of probes (the same as keepalives_count)",
    ),
    ("target_session_attrs", "any, read-write or read-only"),
    ("channel_binding", "disable, prefer or require"),
    ("load_balance_hosts", "disable or random"),
];

/// The sentence for a URL the driver would not parse: which parameter is wrong and what it
/// accepts, when the driver says which (its own message names neither), never the password.
fn url_problem(e: &postgres::Error, raw: &str) -> String {
    let cause = std::error::Error::source(e).map_or_else(String::new, ToString::to_string);
    let named = |prefix: &str| {
        cause
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix('`'))
            .map(str::to_owned)
    };
    if let Some(name) = named("unknown option `") {
        let known: Vec<&str> = PARAMETERS.iter().map(|(n, _)| *n).collect();
        return scrub(
            &format!(
                "the PostgreSQL URL has the parameter '{name}', which is not a connection parameter mailroom knows; remove it or use one of: {}",
                known.join(", ")
            ),
            raw,
        );
    }
    if let Some(name) = named("invalid value for option `") {
        let accepts = PARAMETERS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("another value", |(_, a)| a);
        return format!(
            "the PostgreSQL URL's parameter '{name}' has a value it does not accept; write {accepts}"
        );
    }
    format!(
        "the PostgreSQL URL is not valid ({}); write it as postgres://USER@HOST:PORT/DATABASE",
        scrub(&format!("{e}: {cause}"), raw)
    )
}

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
fn connect_error(
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
fn is_retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// What a failed transaction may have left.
enum Failure {
    /// Nothing was committed: the whole transaction is gone.
    NotDone(postgres::Error),
    /// The connection broke while the commit was in flight: it may or may not have happened.
    Unconfirmed(postgres::Error),
}

impl PgStore {
    /// Opens the store at `url`: connects once, checks (and if needed creates or upgrades) the
    /// schema, and keeps the connection for the first call.
    ///
    /// Reads no environment: a verifying `sslmode` needs the URL's `sslrootcert` (the binary
    /// opens with [`parse_url_for`], which also looks where libpq looks).
    pub fn open(url: &str) -> Result<PgStore, Error> {
        PgStore::open_config(parse_url_for(url, CONNECT_TIMEOUT, &PasswordSources::default())?.0)
    }

    /// [`PgStore::open`] giving up on connecting after [`QUICK_CONNECT_TIMEOUT`] unless the URL
    /// sets its own `connect_timeout`: for the hooks and `setup --check`, which run at a
    /// session's start and must not hold it for long when the server is unreachable.
    pub fn open_quick(url: &str) -> Result<PgStore, Error> {
        PgStore::open_config(
            parse_url_for(url, QUICK_CONNECT_TIMEOUT, &PasswordSources::default())?.0,
        )
    }

    /// Opens the store at `target` (a [`Target`] from [`parse_url_for`], or a [`Config`]).
    pub fn open_config(target: impl Into<Target>) -> Result<PgStore, Error> {
        let Target { config, tls } = target.into();
        let shown = shown_url(&config);
        let mut client = dial(&config, tls.as_ref(), &shown)?;
        let schema = migrate(&mut client, &shown)?;
        Ok(PgStore {
            config,
            tls,
            shown,
            schema,
            idle: Mutex::new(vec![Conn::new(client)]),
            strict: std::sync::OnceLock::new(),
        })
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The schema the tables are in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The database's name.
    pub fn database(&self) -> &str {
        self.config.get_dbname().unwrap_or("")
    }

    /// `doctor` on PostgreSQL: what the constraints cannot hold and one pass over the tables
    /// finds. The connection and the schema version were checked when the store opened.
    /// With `fix`, the first kind is repaired; each other finding says what to do.
    ///
    /// - a mailbox holding mail that is not on its project's roster (a send whose roster entry
    ///   could not be recorded after the delivery, or was killed between the two): the mail is
    ///   there, but resolution and rosters do not know the mailbox. The fix finishes what that
    ///   send began: the project (open, as a first send makes it) if it is missing, and the
    ///   mailbox as an active member;
    /// - a mailbox holding mail without its row in `mailboxes`: its change token and waits do
    ///   not see that mail;
    /// - a strict-mode grant in `identities` to a role that does not exist.
    pub fn doctor(&self, fix: bool) -> Result<Vec<mailroom_core::Finding>, Error> {
        let rows = self.read("check the mailroom", |c| {
            c.query_typed(
                "SELECT 'roster' AS what, c.mailbox AS subject, count(*) AS n FROM copies c \
                 WHERE c.mailbox <> 'human' AND NOT EXISTS (SELECT 1 FROM members m \
                   WHERE m.project_key = split_part(c.mailbox, '@', 2) \
                   AND m.handle_key = split_part(c.mailbox, '@', 1)) \
                 GROUP BY c.mailbox \
                 UNION ALL \
                 SELECT 'token', c.mailbox, count(*) FROM copies c \
                 WHERE NOT EXISTS (SELECT 1 FROM mailboxes b WHERE b.key = c.mailbox) \
                 GROUP BY c.mailbox \
                 UNION ALL \
                 SELECT 'role', i.role::text, count(*) FROM identities i \
                 WHERE NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = i.role) \
                 GROUP BY i.role \
                 ORDER BY 1, 2",
                &[],
            )
        })?;
        let messages = |n: i64| {
            if n == 1 {
                "1 message".to_owned()
            } else {
                format!("{n} messages")
            }
        };
        let mut findings = Vec::with_capacity(rows.len());
        for row in &rows {
            let what: &str = row.get("what");
            let subject: String = row.get("subject");
            let n: i64 = row.get("n");
            let (handle, project) = subject.split_once('@').unwrap_or((&subject, ""));
            let mut fixed = false;
            let (location, problem, advice) = match what {
                "roster" => {
                    if fix {
                        self.add_to_roster(handle, project)?;
                        fixed = true;
                    }
                    (
                        subject.clone(),
                        format!(
                            "holds {} but is not on the roster of project '{project}'",
                            messages(n)
                        ),
                        if fixed {
                            "added to the roster as an active member, as the send that delivered it would have"
                                .to_owned()
                        } else {
                            format!("as HUMAN: mailroom --project {project} roster add {handle}")
                        },
                    )
                }
                "token" => (
                    subject.clone(),
                    format!(
                        "holds {} but has no row in mailboxes, so its change token and waits do not see them",
                        messages(n)
                    ),
                    "send it a message (a delivery creates the row)".to_owned(),
                ),
                _ => (
                    "identities".to_owned(),
                    format!("grants {n} mailbox(es) to the role '{subject}', which does not exist"),
                    "create the role (mailroom role prints its SQL) or delete its rows from identities"
                        .to_owned(),
                ),
            };
            findings.push(mailroom_core::Finding {
                location: format!("{} {location}", self.shown),
                problem,
                fix: advice,
                fixed,
            });
        }
        Ok(findings)
    }

    /// Records `handle@project`, a mailbox holding mail, on its project's roster: the project
    /// first if it is missing (open, as a first send creates it), then the member, active.
    fn add_to_roster(&self, handle: &str, project: &str) -> Result<(), Error> {
        use mailroom_core::store::Directory as _;
        use mailroom_core::{Member, MemberStatus, Name, Policy, Project};
        let (Ok(handle), Ok(project)) = (Name::parse(handle), Name::parse(project)) else {
            return Err(Error::store(
                format!("the mailbox {handle}@{project}"),
                "its name is not a mailroom name, so it cannot join a roster",
            ));
        };
        let now = jiff::Timestamp::now();
        self.ensure_project(&Project {
            name: project.clone(),
            policy: Policy::Open,
            created: now,
        })?;
        self.add_member(
            &project,
            &Member {
                handle,
                role: String::new(),
                status: MemberStatus::Active,
                joined: now,
                since: None,
            },
        )?;
        Ok(())
    }

    /// Whether `other` is the very same mailroom (server, database and schema).
    pub fn same_as(&self, other: &PgStore) -> bool {
        self.shown == other.shown && self.schema == other.schema
    }

    fn connect(&self) -> Result<Conn, Error> {
        dial(&self.config, self.tls.as_ref(), &self.shown).map(Conn::new)
    }

    fn take(&self) -> Result<Conn, Error> {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        match idle {
            Some(c) if !c.is_closed() => Ok(c),
            _ => self.connect(),
        }
    }

    fn give(&self, client: Conn) {
        if client.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < KEEP_IDLE
        {
            idle.push(client);
        }
    }

    pub(crate) fn failed(&self, what: &str, e: &postgres::Error) -> Error {
        if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            let user = self.config.get_user().unwrap_or("");
            // A function the role may not run is a missing grant, not a wrong identity.
            if let Some(function) = e
                .as_db_error()
                .and_then(|db| db.message().strip_prefix("permission denied for function "))
            {
                return Error::Refused(format!(
                    "the PostgreSQL role '{user}' may not {what} here: it may not run mailroom's function {function}; the operator grants it with GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA \"{}\" TO \"{user}\" (see the least privilege in docs/POSTGRES.md)",
                    self.schema
                ));
            }
            return Error::Refused(format!(
                "the PostgreSQL role '{user}' may not {what} here: in strict mode a role acts only as the identities given to it; connect with that identity's role (see `mailroom role`)"
            ));
        }
        if is_lost(e) {
            return sentence(
                format!(
                    "the connection to the PostgreSQL server at {} broke while it was asked to {what}",
                    self.shown
                ),
                "nothing was changed; check the server and run the command again".to_owned(),
            );
        }
        sentence(
            format!("the PostgreSQL server at {} failed to {what}", self.shown),
            said(e),
        )
    }

    /// Runs a read, again on a fresh connection when the one it had turned out to be closed (a
    /// pooled connection the server dropped while idle).
    pub(crate) fn read<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let mut client = self.take()?;
        match f(&mut client) {
            Ok(v) => {
                self.give(client);
                Ok(v)
            }
            Err(e) if client.is_closed() || is_lost(&e) => {
                let mut fresh = self.connect()?;
                let v = f(&mut fresh).map_err(|e| self.failed(what, &e))?;
                self.give(fresh);
                Ok(v)
            }
            Err(e) => {
                self.give(client);
                Err(self.failed(what, &e))
            }
        }
    }

    /// Runs `f` in one transaction and commits it. A transaction PostgreSQL aborted to resolve
    /// a deadlock or serialization race is run again; so is one whose connection broke before
    /// the commit was sent (the server rolled it back). A connection lost during the commit is
    /// reported as unconfirmed: the change may or may not have happened.
    pub(crate) fn write<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let mut reconnected = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut client = self.take()?;
            match run_transaction(&mut client, &mut f) {
                Ok(v) => {
                    self.give(client);
                    return Ok(v);
                }
                Err(Failure::NotDone(e)) if (is_lost(&e) || client.is_closed()) && !reconnected => {
                    reconnected = true;
                }
                Err(Failure::NotDone(e)) if is_retryable(&e) && attempt < ATTEMPTS => {
                    self.give(client);
                }
                Err(Failure::NotDone(e)) => {
                    self.give(client);
                    return Err(self.failed(what, &e));
                }
                Err(Failure::Unconfirmed(e)) => return Err(unconfirmed(&self.shown, what, &e)),
            }
        }
    }
}

impl PgStore {
    /// Runs the prepared statement `sql`, one statement that is its own transaction and may
    /// safely run twice (its effect is keyed, like a send's copies by message id): one round
    /// trip where [`PgStore::write`] takes three or more. A statement PostgreSQL aborted to
    /// resolve a deadlock is run again. So is one whose connection broke, on a new connection:
    /// it may have committed before the break, and running it again then changes nothing.
    /// When the new connection breaks too, the change is reported as unconfirmed (it may or
    /// may not have happened) unless no attempt got as far as running it: a break while
    /// preparing is an ordinary failure, nothing was changed.
    pub(crate) fn write_prepared(
        &self,
        what: &str,
        sql: &'static str,
        types: &[Type],
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, Error> {
        let mut broken = false;
        // Whether an attempt may have run the statement: one that broke while running it.
        let mut maybe_ran = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            // After a break, a fresh connection: the idle ones may have broken with it.
            let mut client = if broken {
                self.connect()?
            } else {
                self.take()?
            };
            let (e, running) = match client.call(sql, types, params) {
                Ok(rows) => {
                    self.give(client);
                    return Ok(rows);
                }
                Err(CallError::Preparing(e)) => (e, false),
                Err(CallError::Running(e)) => (e, true),
            };
            if is_lost(&e) || client.is_closed() {
                maybe_ran |= running;
                if broken {
                    if maybe_ran {
                        return Err(unconfirmed(&self.shown, what, &e));
                    }
                    return Err(self.failed(what, &e));
                }
                broken = true;
            } else if is_retryable(&e) && attempt < ATTEMPTS {
                self.give(client);
            } else {
                self.give(client);
                return Err(self.failed(what, &e));
            }
        }
    }
}

/// Where a call of a prepared statement failed ([`Conn::call`]).
pub(crate) enum CallError {
    /// While preparing it: it was not run.
    Preparing(postgres::Error),
    /// While running it: on a broken connection, it may have run.
    Running(postgres::Error),
}

impl From<CallError> for postgres::Error {
    fn from(e: CallError) -> postgres::Error {
        match e {
            CallError::Preparing(e) | CallError::Running(e) => e,
        }
    }
}

/// Whether the server refused a prepared statement because what it returns changed since it
/// was prepared (a migration altered a table or function it reads): prepared again, it runs.
fn is_stale_plan(e: &postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::FEATURE_NOT_SUPPORTED
            && db
                .message()
                .starts_with("cached plan must not change result type")
    })
}

/// A connection of the pool, with the statements prepared on it: the statements a send runs
/// (the lookup and the delivery) are parsed and analysed once per connection rather than at
/// every call, which is most of what the server spent on a send.
pub(crate) struct Conn {
    client: Client,
    prepared: Vec<(&'static str, Statement)>,
}

impl Conn {
    fn new(client: Client) -> Conn {
        Conn {
            client,
            prepared: Vec::new(),
        }
    }

    /// `sql` prepared on this connection, the first time only. `sql` is a constant of this
    /// crate (a few of them), so a list is the whole cache.
    pub(crate) fn prepared(
        &mut self,
        sql: &'static str,
        types: &[Type],
    ) -> Result<Statement, postgres::Error> {
        if let Some((_, st)) = self.prepared.iter().find(|(s, _)| *s == sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare_typed(sql, types)?;
        self.prepared.push((sql, st.clone()));
        Ok(st)
    }

    /// Runs `sql`, prepared on this connection ([`Conn::prepared`]). A statement the server
    /// refuses because its result type changed since it was prepared (it refuses before
    /// running anything) is dropped, prepared again and run once more.
    pub(crate) fn call(
        &mut self,
        sql: &'static str,
        types: &[Type],
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, CallError> {
        let st = self.prepared(sql, types).map_err(CallError::Preparing)?;
        match self.client.query(&st, params) {
            Err(e) if is_stale_plan(&e) => {
                self.prepared.retain(|(s, _)| *s != sql);
                drop(st);
                let st = self.prepared(sql, types).map_err(CallError::Preparing)?;
                self.client.query(&st, params).map_err(CallError::Running)
            }
            result => result.map_err(CallError::Running),
        }
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// The sentence for a change whose request reached the server but whose answer never came.
fn unconfirmed(shown: &str, what: &str, e: &postgres::Error) -> Error {
    sentence(
        format!(
            "the connection to the PostgreSQL server at {shown} broke while it was asked to {what}"
        ),
        format!(
            "the request reached it but no answer came back ({e}), so it may or may not have happened; look before doing it again (a send: check the outbox, or send again with the same --key)"
        ),
    )
}

fn run_transaction<T>(
    client: &mut Conn,
    f: &mut impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
) -> Result<T, Failure> {
    let mut tx = client.transaction().map_err(Failure::NotDone)?;
    let v = f(&mut tx).map_err(Failure::NotDone)?;
    match tx.commit() {
        Ok(()) => Ok(v),
        Err(e) if is_lost(&e) || e.code().is_none() => Err(Failure::Unconfirmed(e)),
        Err(e) => Err(Failure::NotDone(e)),
    }
}

/// A stable 64-bit hash (FNV-1a): the same on every machine and every build, for names
/// derived from data (notification channels, the advisory lock).
pub(crate) fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Brings the schema to [`SCHEMA_VERSION`] and returns the schema's name. The quick path (the
/// schema is current) is one query; otherwise every step runs in one transaction holding an
/// advisory lock, so two processes starting at once apply each migration once.
fn migrate(client: &mut Client, shown: &str) -> Result<String, Error> {
    let failed = |e: postgres::Error| {
        sentence(
            format!("the PostgreSQL server at {shown} failed to check mailroom's schema"),
            said(&e),
        )
    };
    let row = client
        .query_one(
            "SELECT current_schema(), CASE WHEN to_regclass('mailroom_schema') IS NULL THEN NULL \
             ELSE (SELECT 0) END",
            &[],
        )
        .map_err(failed)?;
    let schema: Option<String> = row.get(0);
    let Some(schema) = schema else {
        return Err(sentence(
            format!("the database at {shown} has no schema to create mailroom's tables in"),
            "create one (CREATE SCHEMA) or set the search_path of the role".to_owned(),
        ));
    };
    let has_table: Option<i32> = row.get(1);
    if has_table.is_some() {
        let version: Option<i32> = client
            .query_one("SELECT max(version) FROM mailroom_schema", &[])
            .map_err(failed)?
            .get(0);
        let version = version.unwrap_or(0);
        if version == SCHEMA_VERSION {
            return Ok(schema);
        }
        check_not_newer(version, shown)?;
    }
    let lock = i64::from_ne_bytes(fnv(&format!("mailroom schema {schema}")).to_ne_bytes());
    let mut tx = client.transaction().map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
        .map_err(failed)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mailroom_schema (
            version integer PRIMARY KEY,
            applied timestamptz NOT NULL DEFAULT now()
        )",
    )
    .map_err(|e| {
        sentence(
            format!("the PostgreSQL server at {shown} refused to create mailroom's tables"),
            format!(
                "{}; the role needs CREATE on schema {schema} (see the least privilege in docs/POSTGRES.md)",
                said(&e)
            ),
        )
    })?;
    let version: Option<i32> = tx
        .query_one("SELECT max(version) FROM mailroom_schema", &[])
        .map_err(failed)?
        .get(0);
    let version = version.unwrap_or(0);
    check_not_newer(version, shown)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let n = i as i32 + 1;
        tx.batch_execute(sql).map_err(|e| {
            sentence(
                format!("the PostgreSQL server at {shown} refused mailroom's schema migration {n}"),
                said(&e),
            )
        })?;
        tx.execute("INSERT INTO mailroom_schema (version) VALUES ($1)", &[&n])
            .map_err(failed)?;
    }
    tx.commit().map_err(failed)?;
    Ok(schema)
}

fn check_not_newer(version: i32, shown: &str) -> Result<(), Error> {
    if version > SCHEMA_VERSION {
        return Err(sentence(
            format!(
                "the database at {shown} holds mailroom schema version {version}, newer than this mailroom's {SCHEMA_VERSION}"
            ),
            "upgrade mailroom on this machine; it will not read or write a schema it does not know"
                .to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_never_carry_the_password() {
        let c = parse_url("postgres://alice:s3cret@db.example:6543/mail?sslmode=disable").unwrap();
        assert_eq!(shown_url(&c), "postgres://alice@db.example:6543/mail");
        let c = parse_url("host=h user=u password=pw dbname=d").unwrap();
        assert_eq!(shown_url(&c), "postgres://u@h:5432/d");
    }

    #[test]
    fn shown_urls_keep_the_schema_that_tells_two_mailrooms_apart() {
        let c = parse_url("postgres://u:pw@h/d?options=-c%20search_path%3Dteam_a").unwrap();
        assert_eq!(
            shown_url(&c),
            "postgres://u@h:5432/d?options=-c%20search_path%3Dteam_a"
        );
    }

    #[test]
    fn a_bad_url_is_invalid_without_its_password() {
        let e = parse_url("postgres://alice:s3cret@host:notaport/db").unwrap_err();
        let text = e.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert_eq!(
            text,
            "the PostgreSQL URL's parameter 'port' has a value it does not accept; write a port number"
        );
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
    }

    #[test]
    fn a_bad_parameter_is_named_with_what_it_accepts() {
        let cases = [
            (
                "postgres://u:s3cret@h/d?sslmode=bogus",
                "the PostgreSQL URL's parameter 'sslmode' has a value it does not accept; write disable, prefer, require, verify-ca or verify-full",
            ),
            (
                "postgres://u:s3cret@h/d?target_session_attrs=primary",
                "the PostgreSQL URL's parameter 'target_session_attrs' has a value it does not accept; write any, read-write or read-only",
            ),
            (
                "postgres://u:s3cret@h/d?connect_timeout=soon",
                "the PostgreSQL URL's parameter 'connect_timeout' has a value it does not accept; write a whole number of seconds",
            ),
        ];
        for (url, sentence) in cases {
            let e = parse_url(url).unwrap_err();
            assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
            assert_eq!(e.to_string(), sentence, "{url}");
        }
        let e = parse_url("postgres://u:s3cret@h/d?sslmdoe=require").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("the PostgreSQL URL has the parameter 'sslmdoe', which is not a connection parameter mailroom knows; remove it or use one of: user, password, dbname, options, application_name, sslmode,"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
    }

    #[test]
    fn the_quick_open_waits_two_seconds_unless_the_url_says_otherwise() {
        let c = parse_url_with("postgres://u@10.255.255.1/d", QUICK_CONNECT_TIMEOUT).unwrap();
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(2)));
        let c = parse_url("postgres://u@10.255.255.1/d").unwrap();
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(10)));
        let c = parse_url_with(
            "postgres://u@10.255.255.1/d?connect_timeout=7",
            QUICK_CONNECT_TIMEOUT,
        )
        .unwrap();
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(7)));
    }

    #[test]
    fn connections_find_a_silent_server_dead_in_about_a_minute_by_default() {
        let c = parse_url("postgres://u@h/d").unwrap();
        assert!(c.get_keepalives());
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(30));
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(10)));
        assert_eq!(c.get_keepalives_retries(), Some(3));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(60)));
        let c = parse_url("host=h user=u dbname=d").unwrap();
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(60)));
    }

    #[test]
    fn keepalives_take_libpq_parameters_in_both_forms_of_url() {
        for url in [
            "postgres://u@h/d?keepalives_idle=1&keepalives_interval=2&keepalives_count=4&tcp_user_timeout=2500",
            "host=h user=u keepalives_idle=1 keepalives_interval=2 keepalives_count='4' tcp_user_timeout=2500",
        ] {
            let c = parse_url(url).unwrap();
            assert_eq!(c.get_keepalives_idle(), Duration::from_secs(1), "{url}");
            assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(2)));
            assert_eq!(c.get_keepalives_retries(), Some(4));
            assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_millis(2500)));
        }
        // Without a user timeout, the time the keepalives take: idle + interval × count.
        let c = parse_url(
            "postgres://u@h/d?keepalives_idle=5&keepalives_interval=1&keepalives_retries=2",
        )
        .unwrap();
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(7)));
        // 0 is the system's own user timeout, as in libpq.
        let c = parse_url("postgres://u@h/d?tcp_user_timeout=0").unwrap();
        assert_eq!(c.get_tcp_user_timeout(), None);
        // Keepalives off: nothing of mailroom's own.
        let c = parse_url("postgres://u@h/d?keepalives=0").unwrap();
        assert!(!c.get_keepalives());
        assert_eq!(c.get_tcp_user_timeout(), None);
    }

    #[test]
    fn sslrootcert_system_with_a_mode_that_falls_back_to_clear_text_is_refused() {
        for mode in ["disable", "prefer"] {
            let e = parse_url_for(
                &format!("postgres://u:pw@h/d?sslrootcert=system&sslmode={mode}"),
                CONNECT_TIMEOUT,
                &PasswordSources::default(),
            )
            .unwrap_err();
            assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
            assert_eq!(
                e.to_string(),
                format!(
                    "the PostgreSQL URL names sslrootcert=system with sslmode={mode}, which would go on in clear text when a server declines TLS; write sslmode=verify-full (or leave sslmode out)"
                )
            );
        }
    }

    #[test]
    fn keepalive_values_past_the_kernels_bounds_are_refused_at_parse_time() {
        for (url, name) in [
            (
                "postgres://u@h/d?keepalives_idle=99999999999",
                "keepalives_idle",
            ),
            ("postgres://u@h/d?keepalives_idle=32768", "keepalives_idle"),
            (
                "postgres://u@h/d?keepalives_interval=40000",
                "keepalives_interval",
            ),
            ("postgres://u@h/d?keepalives_count=0", "keepalives_count"),
            ("postgres://u@h/d?keepalives_count=128", "keepalives_count"),
            (
                "postgres://u@h/d?tcp_user_timeout=4294967295",
                "tcp_user_timeout",
            ),
        ] {
            let e = parse_url(url).unwrap_err();
            assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
            assert!(
                e.to_string().starts_with(&format!(
                    "the PostgreSQL URL's parameter '{name}' has a value it does not accept"
                )),
                "{url}: {e}"
            );
        }
        for url in [
            "postgres://u@h/d?keepalives_idle=32767&keepalives_interval=32767&keepalives_count=127",
            "postgres://u@h/d?tcp_user_timeout=2147483647",
        ] {
            parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }

    #[test]
    fn a_bad_keepalive_parameter_is_named_with_what_it_accepts() {
        let cases = [
            (
                "postgres://u:s3cret@h/d?keepalives_count=many",
                "the PostgreSQL URL's parameter 'keepalives_count' has a value it does not accept; write a whole number of probes",
            ),
            (
                "host=h password=s3cret tcp_user_timeout=-1",
                "the PostgreSQL URL's parameter 'tcp_user_timeout' has a value it does not accept; write a whole number of milliseconds",
            ),
            (
                "postgres://u:s3cret@h/d?keepalives_idle=soon",
                "the PostgreSQL URL's parameter 'keepalives_idle' has a value it does not accept; write a whole number of seconds",
            ),
            (
                "postgres://u:s3cret@h/d?keepalives=yes",
                "the PostgreSQL URL's parameter 'keepalives' has a value it does not accept; write 1 (on) or 0 (off)",
            ),
        ];
        for (url, sentence) in cases {
            let e = parse_url(url).unwrap_err();
            assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
            assert_eq!(e.to_string(), sentence, "{url}");
        }
    }

    #[test]
    fn tls_parameters_are_taken_out_of_both_forms_of_url() {
        let p = tls_params(
            "postgres://u:pw@h/d?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy%20ca.pem&options=x",
        );
        assert_eq!(
            p,
            TlsParams {
                rest: "postgres://u:pw@h/d?sslmode=require&options=x".into(),
                sslmode: Some("verify-full".into()),
                root_cert: Some("/tmp/my ca.pem".into()),

                own: Vec::new(),
                idle_given: false,
            }
        );
        let p = tls_params("postgres://u@h/d?sslrootcert=ca.pem");
        assert_eq!(p.rest, "postgres://u@h/d");
        assert_eq!(p.root_cert.as_deref(), Some("ca.pem"));
        let p = tls_params("host=h sslmode = verify-ca sslrootcert='/a b/c\\'d.pem' user=u");
        assert_eq!(
            p,
            TlsParams {
                rest: "host=h sslmode=require  user=u".into(),
                sslmode: Some("verify-ca".into()),
                root_cert: Some("/a b/c'd.pem".into()),

                own: Vec::new(),
                idle_given: false,
            }
        );
        let p = tls_params("postgres://u@h/d?sslmode=disable");
        assert_eq!(p.rest, "postgres://u@h/d?sslmode=disable");
        assert_eq!(p.sslmode.as_deref(), Some("disable"));
    }

    #[test]
    fn verifying_modes_parse_to_an_encrypted_connection_of_the_driver() {
        let c = parse_url("postgres://u@h/d?sslmode=verify-full&sslrootcert=/nowhere.pem").unwrap();
        assert_eq!(c.get_ssl_mode(), postgres::config::SslMode::Require);
        // The last sslmode wins, as in libpq.
        let parsed = parse_parts(
            "postgres://u@h/d?sslmode=verify-full&sslmode=disable",
            CONNECT_TIMEOUT,
        )
        .unwrap();
        assert_eq!(parsed.verify, None);
        assert_eq!(
            parsed.config.get_ssl_mode(),
            postgres::config::SslMode::Disable
        );
    }

    #[test]
    fn a_verifying_mode_without_its_root_file_is_refused_naming_where_it_looked() {
        let nowhere = std::env::temp_dir().join(format!("mailroom-no-home-{}", std::process::id()));
        let sources = PasswordSources {
            home: Some(nowhere.clone()),
            ..PasswordSources::default()
        };
        let e = parse_url_for(
            "postgres://u@h/d?sslmode=verify-full",
            CONNECT_TIMEOUT,
            &sources,
        )
        .unwrap_err();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
        let expected = nowhere.join(".postgresql").join("root.crt");
        assert_eq!(
            e.to_string(),
            format!(
                "sslmode=verify-full needs the certificate of the authority that signed the server's certificate, and there is none at {}; put it there, or name its file with sslrootcert=PATH in the URL (or PGSSLROOTCERT)",
                expected.display()
            )
        );
        // require without a root file encrypts without verifying, as in libpq.
        let (target, _) = parse_url_for(
            "postgres://u@h/d?sslmode=require",
            CONNECT_TIMEOUT,
            &sources,
        )
        .unwrap();
        assert_eq!(
            target.tls.as_ref().map(tls::Tls::roots),
            Some(tls::Roots::None)
        );
        // A file named by PGSSLROOTCERT must exist, whatever the mode that would use it.
        let named = PasswordSources {
            root_cert: Some(nowhere.join("ca.pem")),
            ..sources
        };
        let e =
            parse_url_for("postgres://u@h/d?sslmode=require", CONNECT_TIMEOUT, &named).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = parse_url_for(
            "postgres://u@h/d?sslmode=verify-ca&sslrootcert=system",
            CONNECT_TIMEOUT,
            &named,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("sslrootcert=system"), "{e}");
        // disable and prefer never look for one, even where PGSSLROOTCERT names "system".
        let system = PasswordSources {
            root_cert: Some("system".into()),
            ..PasswordSources::default()
        };
        for mode in ["disable", "prefer"] {
            for sources in [&named, &system] {
                parse_url_for(
                    &format!("postgres://u@h/d?sslmode={mode}"),
                    CONNECT_TIMEOUT,
                    sources,
                )
                .unwrap();
            }
        }
    }

    /// A self-signed authority (P-256, valid until 2126), only ever parsed here.
    const TEST_CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBjDCCATOgAwIBAgIUBiR+GGHj60EkUd6sJpCEIcJHfhYwCgYIKoZIzj0EAwIw\nGzEZMBcGA1UEAwwQbWFpbHJvb20tdGVzdC1jYTAgFw0yNjEyMDEwNjI0NTJaGA8y\nMTI2MTEwNzA2MjQ1MlowGzEZMBcGA1UEAwwQbWFpbHJvb20tdGVzdC1jYTBZMBMG\nByqGSM49AgEGCCqGSM49AwEHA0IABEZvF500eKpqdiptfjwcSxBbmHjWd3pKD0is\nJJTdQcVepPbkPorcQOv6O3ABMqkFaYlrB2cbPRMkaAfhBbN/L2ajUzBRMB0GA1Ud\nDgQWBBSE+60hZZcol7yNFRQWoHWlKn3J0TAfBgNVHSMEGDAWgBSE+60hZZcol7yN\nFRQWoHWlKn3J0TAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIFjD\nGWUzGNzX9jn9ROPyCU2586v0Fzz0AUx943YZOjwCAiBWf3rWI4PZZF8L2jI4BgVy\nO8yzK22j8E9Yy3Jc4FcKEw==\n-----END CERTIFICATE-----\n";

    #[test]
    fn the_default_root_file_serves_every_mode_that_verifies() {
        let home = std::env::temp_dir().join(format!("mailroom-ca-home-{}", std::process::id()));
        let file = home.join(".postgresql").join("root.crt");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, TEST_CA).unwrap();
        let sources = PasswordSources {
            home: Some(home.clone()),
            ..PasswordSources::default()
        };
        for mode in ["require", "verify-ca", "verify-full"] {
            let (target, _) = parse_url_for(
                &format!("postgres://u@h/d?sslmode={mode}"),
                CONNECT_TIMEOUT,
                &sources,
            )
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
            assert_eq!(
                target.tls.as_ref().map(tls::Tls::roots),
                Some(tls::Roots::File(&file)),
                "{mode}"
            );
        }
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_root_file_that_is_not_a_small_regular_file_is_refused_unread() {
        let dir = std::env::temp_dir().join(format!("mailroom-odd-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let big = dir.join("big.pem");
        std::fs::write(&big, TEST_CA.repeat(8 * 1024)).unwrap();
        let cases = [
            (fifo.clone(), "is not a regular file"),
            ("/dev/zero".into(), "is not a regular file"),
            (dir.clone(), "is not a regular file"),
            (big, "holds more than 4 MiB"),
        ];
        for (path, why) in cases {
            // On a thread: a read that blocks (a FIFO without a writer) fails the test, not
            // hangs it.
            let url = format!(
                "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
                path.display()
            );
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let got = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default())
                    .map(|_| ())
                    .map_err(|e| (e.kind(), e.to_string()));
                let _ = tx.send(got);
            });
            let got = rx
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("{} was read and blocked", path.display()));
            let (kind, text) = got.expect_err("refused");
            assert_eq!(kind, mailroom_core::ErrorKind::Invalid);
            assert_eq!(
                text,
                format!(
                    "the root certificate file {} {why}{}",
                    path.display(),
                    if why.starts_with("holds") {
                        ", more than any set of root certificates; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH"
                    } else {
                        "; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH"
                    }
                )
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_root_file_with_a_cut_off_block_is_refused_in_words() {
        let file = std::env::temp_dir().join(format!("mailroom-cut-ca-{}.pem", std::process::id()));
        let cut: String = TEST_CA.lines().take(3).map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, cut).unwrap();
        let url = format!(
            "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
            file.display()
        );
        let e = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default()).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "the root certificate file {} is not valid PEM (a block has no -----END CERTIFICATE----- line); give a file of -----BEGIN CERTIFICATE----- blocks",
                file.display()
            )
        );
    }

    #[test]
    fn a_root_file_without_certificates_is_refused() {
        let file =
            std::env::temp_dir().join(format!("mailroom-empty-ca-{}.pem", std::process::id()));
        std::fs::write(&file, "not a certificate\n").unwrap();
        let url = format!(
            "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
            file.display()
        );
        let e = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default()).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
        assert_eq!(
            e.to_string(),
            format!(
                "the root certificate file {} cannot serve as roots: it holds no -----BEGIN CERTIFICATE----- block; give the PEM file of the authority that signed the server's certificate",
                file.display()
            )
        );
    }

    #[test]
    fn scrub_finds_passwords_in_both_forms() {
        assert_eq!(
            password_in("postgres://u:p%40ss@h/d").as_deref(),
            Some("p%40ss")
        );
        assert_eq!(
            password_in("host=h password=x1 user=u").as_deref(),
            Some("x1")
        );
        assert_eq!(password_in("postgres://u@h/d"), None);
    }
}
