//! The guard every request passes: a `Host` that no DNS name can rebind, the secret token (once
//! in the URL, then as an HttpOnly SameSite=Strict cookie), same-origin POSTs, and headers that
//! keep the page inert (a strict Content-Security-Policy, no framing, no referrer to other
//! sites, no caching).
//! Invariant: no handler runs for a request that failed any of these checks.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::Console;

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "mailroom_console";

/// The page's Content-Security-Policy: scripts and styles only from the console's own files, no
/// inline script, nothing fetched from elsewhere, no forms posting elsewhere, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The two secrets of one server run: the token that admits a browser, and the CSRF token its
/// forms carry.
#[derive(Clone)]
pub struct Secret {
    token: String,
    csrf: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// Two fresh random 256-bit secrets from the operating system.
    pub fn generate() -> std::io::Result<Secret> {
        Ok(Secret {
            token: random_hex()?,
            csrf: random_hex()?,
        })
    }

    /// Fixed secrets, for tests that need to know them.
    pub fn fixed(token: &str, csrf: &str) -> Secret {
        Secret {
            token: token.to_owned(),
            csrf: csrf.to_owned(),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether a form's CSRF field is this run's.
    pub fn csrf_matches(&self, given: &str) -> bool {
        same(given, &self.csrf)
    }
}

fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares secrets in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Checks one request; answers refused ones itself.
pub async fn guard(State(console): State<Console>, request: Request, next: Next) -> Response {
    let verdict = check(&console, &request);
    if !matches!(verdict, Verdict::Refuse(..))
        && let Some(admitted) = request.extensions().get::<crate::Admitted>()
    {
        // This connection showed the token: a full server no longer closes it for another.
        admitted.mark();
    }
    let mut response = match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::SetCookie(location) => {
            let cookie = format!(
                "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                console.secret().token()
            );
            let mut r = admission(&location);
            if let Ok(c) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            r
        }
        Verdict::Refuse(status, why) => refusal(status, why),
    };
    harden(response.headers_mut());
    response
}

enum Verdict {
    Pass,
    /// The token came in the URL: set the cookie and send the browser on to the same page
    /// without it, so the token leaves the address bar.
    SetCookie(String),
    Refuse(StatusCode, &'static str),
}

fn check(console: &Console, request: &Request) -> Verdict {
    let headers = request.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Verdict::Refuse(
            StatusCode::BAD_REQUEST,
            "the request needs exactly one Host header.",
        );
    };
    let Ok(host) = host.to_str() else {
        return Verdict::Refuse(StatusCode::BAD_REQUEST, "the request's Host is not text.");
    };
    // An absolute-form target (`GET http://other/ HTTP/1.1`) names the host HTTP says counts:
    // it must be the Host checked below.
    if let Some(authority) = request.uri().authority()
        && !authority.as_str().eq_ignore_ascii_case(host)
    {
        return Verdict::Refuse(
            StatusCode::BAD_REQUEST,
            "the request's target names another host than its Host header.",
        );
    }
    if !host_allowed(host, console.inner.port) {
        return Verdict::Refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "the request's Host is not this console's address: open it by the address `mailroom serve` printed (an IP address or localhost).",
        );
    }
    let token = console.secret().token();
    if request.method() == Method::GET
        && let Some(given) = query_token(request.uri().query())
    {
        if same(given, token) {
            return Verdict::SetCookie(without_token(request.uri()));
        }
        return Verdict::Refuse(
            StatusCode::FORBIDDEN,
            "the token in this address is not this server's: open the address `mailroom serve` printed when it started.",
        );
    }
    if !cookie_token(headers).is_some_and(|c| same(c, token)) {
        return Verdict::Refuse(
            StatusCode::FORBIDDEN,
            "this browser has not been admitted: open the address with the token that `mailroom serve` printed when it started.",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if request.method() != Method::POST {
            return Verdict::Refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "only GET and POST are served.",
            );
        }
        if !same_origin(headers, host) {
            return Verdict::Refuse(
                StatusCode::FORBIDDEN,
                "a form from another site cannot post here: use the console's own page.",
            );
        }
    }
    Verdict::Pass
}

/// The largest request body read: axum's own limit for forms, as before.
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// Reads a POST's whole body, at most [`MAX_BODY`] bytes within `Limits::body`, before its
/// handler runs: a body sent slowly is answered 408 and cannot hold a connection (hyper bounds
/// only the head), and no handler waits on a client. Runs after the guard, so only an admitted
/// page's body is read at all.
pub async fn whole_body(State(console): State<Console>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY);
    match tokio::time::timeout(console.inner.limits.body, read).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(e)) if too_large(&e) => refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the form is larger than the console takes (2 MiB).",
        ),
        Ok(Err(_)) => refusal(
            StatusCode::BAD_REQUEST,
            "the request's body could not be read.",
        ),
        Err(_) => refusal(
            StatusCode::REQUEST_TIMEOUT,
            "the request's body did not arrive in time.",
        ),
    }
}

fn too_large(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// A Host the browser only sends for this server: an IP literal or `localhost`, with this port.
/// A DNS name could be rebound to 127.0.0.1 by a hostile page, so no other name is accepted.
pub fn host_allowed(host: &str, port: u16) -> bool {
    let Some((name, given_port)) = host.rsplit_once(':') else {
        return false;
    };
    if given_port.parse::<u16>().ok() != Some(port) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    bare.parse::<std::net::IpAddr>().is_ok()
}

/// Whether a POST comes from this console's own page: `Sec-Fetch-Site` (sent by every current
/// browser) says same-origin, and `Origin`, when sent, is this host.
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    let site_ok = match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some(site) => site == "same-origin",
        None => true,
    };
    let origin_ok = match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => origin == format!("http://{host}"),
        None => true,
    };
    site_ok && origin_ok
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

fn without_token(uri: &axum::http::Uri) -> String {
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token="))
        .collect();
    // `//host/...` or `/\host/...` would send the admitted browser to another site: the
    // admission page only ever moves within this console.
    let path = uri.path();
    let path = if path.starts_with("//") || path.starts_with("/\\") {
        "/"
    } else {
        path
    };
    if rest.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", rest.join("&"))
    }
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// The answer that sets the cookie: a page that moves on to `location` itself. A redirect would
/// not do: when the printed address is followed from another site (a chat, a web mail), the
/// browser counts a redirect as part of that cross-site navigation and withholds the new
/// SameSite=Strict cookie; a refresh started by this page is same-site.
fn admission(location: &str) -> Response {
    let page = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content={ "0;url=" (location) };
                title { "mailroom" }
            }
            body { p { a href=(location) { "Open the console" } } }
        }
    };
    crate::view::html_response(StatusCode::OK, page)
}

fn refusal(status: StatusCode, why: &'static str) -> Response {
    let mut r = Response::new(Body::from(format!("refused: {why}\n")));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn harden(headers: &mut HeaderMap) {
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ip_literals_and_localhost_with_the_port_are_hosts_of_this_console() {
        for (host, ok) in [
            ("127.0.0.1:8080", true),
            ("localhost:8080", true),
            ("LocalHost:8080", true),
            ("[::1]:8080", true),
            ("192.168.1.2:8080", true),
            ("127.0.0.1:8081", false),
            ("127.0.0.1", false),
            ("evil.example:8080", false),
            ("localhost.evil.example:8080", false),
            ("127.0.0.1.nip.io:8080", false),
            ("", false),
        ] {
            assert_eq!(host_allowed(host, 8080), ok, "{host}");
        }
    }

    #[test]
    fn the_token_leaves_the_address_and_the_rest_of_the_query_stays() {
        let uri: axum::http::Uri = "/search?token=abc&q=x".parse().unwrap();
        assert_eq!(without_token(&uri), "/search?q=x");
        let uri: axum::http::Uri = "/?token=abc".parse().unwrap();
        assert_eq!(without_token(&uri), "/");
        for other_site in ["//evil.example/?token=abc", "/\\evil.example/?token=abc"] {
            let uri: axum::http::Uri = other_site.parse().unwrap();
            assert_eq!(without_token(&uri), "/", "{other_site}");
        }
    }
}
