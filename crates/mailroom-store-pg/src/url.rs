//! PostgreSQL URLs: parsing (with mailroom's defaults), the password-free form every message
//! shows, and the libpq parameters the driver does not know.
//!
//! Why not only `postgres::Config::from_str`: it does the parsing (both the URL and the
//! `key=value` form go through it below), but it refuses libpq parameters that a libpq URL may
//! carry (`sslrootcert`, `sslmode=verify-ca|verify-full`, `tcp_user_timeout`,
//! `keepalives_count`) and its errors name neither the parameter nor what it accepts. So this
//! module takes those parameters out of the text first (`tls_params`, percent-decoded as libpq
//! decodes them), hands the rest to the driver, and words the driver's refusals itself
//! (`url_problem`), never with the password (`scrub`, `shown_url`).

use std::time::Duration;

use mailroom_core::Error;
use postgres::Config;

use crate::PasswordSources;
use crate::tls;

/// How long a connection attempt may take when the URL does not say (`connect_timeout`).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection is idle before its first keepalive probe (`keepalives_idle`).
const KEEPALIVES_IDLE: Duration = Duration::from_secs(30);
/// How long between unanswered keepalive probes (`keepalives_interval`).
const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(10);
/// How many unanswered probes make the connection dead (`keepalives_count`): with the two
/// above, a server gone silent is found in about a minute.
const KEEPALIVES_COUNT: u32 = 3;
/// The longest `tcp_user_timeout` the system takes (milliseconds in a C int).
const MAX_USER_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

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
    pub(crate) config: Config,
    /// `None`: as the driver's `sslmode` says, unverified.
    pub(crate) tls: Option<tls::Tls>,
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

#[cfg(test)]
mod tests;
