//! The page's shared pieces: the layout, one message as an article, ages, failures, and the
//! static script and style. Invariant: agent text (subjects, bodies, roles, names) only ever
//! enters the page through maud's escaping, as text, never as markup or a link.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use mailroom_core::{Error, ErrorKind, Fix, Kind, Message, MessageId, State};
use maud::{DOCTYPE, Markup, html};

/// The navigation's pages: path, label, and the key that opens it.
const NAV: [(&str, &str); 6] = [
    ("/", "Decisions"),
    ("/inbox", "Inbox"),
    ("/compose", "Compose"),
    ("/projects", "Projects"),
    ("/channels", "Channels"),
    ("/search", "Search"),
];

/// What the header shows on every page.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub decisions: usize,
    pub pending: usize,
}

/// A whole page. `live` pages refresh themselves when new mail reaches HUMAN; `after` is the
/// newest id the page already shows, so the event stream skips what is on screen.
pub struct Page<'a> {
    pub title: &'a str,
    pub path: &'a str,
    pub counts: Counts,
    pub live: bool,
    pub after: Option<MessageId>,
}

impl Page<'_> {
    pub fn render(&self, main: Markup) -> Response {
        let after = self.after.map(|id| id.to_string()).unwrap_or_default();
        let doc = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    meta name="color-scheme" content="light dark";
                    meta name="referrer" content="same-origin";
                    title { (self.title) " · mailroom" }
                    link rel="stylesheet" href="/static/console.css";
                    script src="/static/console.js" defer {}
                }
                body data-live=(if self.live { "1" } else { "0" }) data-after=(after) {
                    header.top {
                        a.brand href="/" { "mailroom" }
                        nav {
                            @for (path, label) in NAV {
                                a href=(path) aria-current=[(path == self.path).then_some("page")] {
                                    (label)
                                    @if path == "/" && self.counts.decisions > 0 {
                                        " " span.count data-count="decisions" { (self.counts.decisions) }
                                    }
                                    @if path == "/inbox" && self.counts.pending > 0 {
                                        " " span.count data-count="pending" { (self.counts.pending) }
                                    }
                                }
                            }
                        }
                        span #live.live title="live updates" {}
                    }
                    main { (main) }
                    footer {
                        "Acting as HUMAN. Keys on Decisions and Inbox: "
                        kbd { "j" } "/" kbd { "k" } " move, " kbd { "r" } " reply, " kbd { "d" } " done, "
                        kbd { "o" } " open, " kbd { "/" } " search."
                    }
                }
            }
        };
        html_response(StatusCode::OK, doc)
    }
}

pub fn html_response(status: StatusCode, markup: Markup) -> Response {
    let mut r = (status, markup.into_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// How long ago `at` was, as people say it: `40s`, `12m`, `3h`, `5d`.
pub fn age(at: Timestamp, now: Timestamp) -> String {
    let s = now.as_second().saturating_sub(at.as_second()).max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

pub fn kind_class(kind: Kind) -> &'static str {
    match kind {
        Kind::HoldRequest => "kind hold",
        Kind::Question => "kind question",
        Kind::Correction => "kind correction",
        Kind::Handover => "kind handover",
        Kind::InterfaceChange => "kind interface",
        Kind::Info => "kind info",
    }
}

/// The one line above a message: kind, priority, sender, recipients, age, state.
pub fn meta(m: &Message, state: Option<State>, now: Timestamp) -> Markup {
    html! {
        div.meta {
            span class=(kind_class(m.kind)) { (m.kind.as_str()) }
            @if m.priority != mailroom_core::Priority::Medium {
                " " span class={ "prio prio-" (m.priority.as_str()) } { (m.priority.as_str()) }
            }
            " " span.from { (m.from.to_string()) }
            " → "
            span.to {
                @for (i, to) in m.to.iter().enumerate() {
                    @if i > 0 { ", " }
                    (to.to_string())
                }
                @if let Some(c) = &m.channel { "#" (c.project.as_str()) "/" (c.name.as_str()) }
            }
            " " time datetime=(m.date.to_string()) title=(m.date.to_string()) { (age(m.date, now)) " ago" }
            @if let Some(s) = state { " " span class={ "state state-" (s.as_str()) } { (s.as_str()) } }
            @if m.revision > 1 { " " span.edited { "edited (rev " (m.revision) ")" } }
        }
    }
}

/// One line of agent text as the page shows it: control, invisible and reordering characters
/// (a right-to-left override that would turn a subject around, an escape) written out as
/// `\u{202e}`, as the command line shows them.
pub fn line(s: &str) -> String {
    mailroom_core::text::escape_controls(s)
}

/// A body as the page shows it: line breaks and tabs kept, other controls and invisibles
/// written out as [`line`] writes them.
pub fn body(s: &str) -> String {
    s.split('\n')
        .map(|l| {
            l.split('\t')
                .map(mailroom_core::text::escape_controls)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The page of one message in HUMAN's mailbox or outbox.
pub fn message_page(id: MessageId) -> String {
    format!("/m/{id}")
}

/// The page of one channel entry (a message without a channel: its page in HUMAN's mailbox).
pub fn entry_page(m: &Message) -> String {
    match &m.channel {
        Some(c) => format!(
            "/channel/{}/{}/{}",
            c.project.as_str(),
            c.name.as_str(),
            m.id
        ),
        None => message_page(m.id),
    }
}

/// Most characters of a body a list shows: one message of 300 KB without a space took a browser
/// 13 s to lay out in a list, so the rest is on the message's own page.
pub const EXCERPT: usize = 500;

/// The first [`EXCERPT`] characters of `text`, cut on a character boundary, and whether any
/// were left out.
pub fn excerpt(text: &str) -> (&str, bool) {
    match text.char_indices().nth(EXCERPT) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

/// The start of a body as inert text (see [`excerpt`]), with a link to `page` for the rest.
pub fn body_excerpt(text: &str, page: &str) -> Markup {
    let (shown, cut) = excerpt(text);
    html! {
        div.body { (body(shown)) @if cut { "…" } }
        @if cut {
            p.more { a href=(page) { "Whole message (" (text.chars().count()) " characters)" } }
        }
    }
}

/// A message's subject and the start of its body as inert text, the subject linking to
/// `page`, the message's own page: the body keeps its line breaks through CSS.
pub fn content(m: &Message, page: &str) -> Markup {
    html! {
        h3.subject { a href=(page) { (line(&m.subject)) } }
        (body_excerpt(&m.body, page))
    }
}

/// The reply and done forms under a pending message; the done button sits beside the reply
/// button and belongs to its own form.
pub fn answer_forms(id: MessageId, back: &str, csrf: &str, label: &str) -> Markup {
    html! {
        form.reply method="post" action="/reply" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="id" value=(id);
            input type="hidden" name="back" value=(back);
            label.sr for={ "reply-" (id) } { "Answer" }
            textarea id={ "reply-" (id) } name="body" rows="3" required placeholder=(label) {}
            div.buttons {
                button type="submit" { "Reply and close" }
                button.secondary type="submit" form={ "done-" (id) } { "Done" }
            }
        }
        form.done id={ "done-" (id) } method="post" action="/done" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="id" value=(id);
            input type="hidden" name="back" value=(back);
        }
    }
}

/// A page's path parameters, refused in the console's words (400) when they do not read
/// (`/channel/x/%FF`), never in axum's own rejection text.
#[derive(Debug)]
pub struct PagePath<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for PagePath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Failure> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(t)| PagePath(t))
            .map_err(|_| {
                Failure::bad(
                    "this address is not one of the console's pages: follow a link from the console instead.",
                )
            })
    }
}

/// A page's query parameters, refused in the console's words (400) when they do not read.
#[derive(Debug)]
pub struct PageQuery<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for PageQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Failure> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(t)| PageQuery(t))
            .map_err(|_| {
                Failure::bad(
                    "this address asks the console for something its pages never ask: follow a link from the console instead.",
                )
            })
    }
}

/// A failed page: the core's sentence, or the console's.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    message: String,
}

impl Failure {
    pub fn internal(message: String) -> Failure {
        Failure {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message,
        }
    }

    pub fn bad(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// The server cannot take this request now (too many open streams, stopping).
    pub fn unavailable(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let status = match e.kind() {
            ErrorKind::Invalid => StatusCode::BAD_REQUEST,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Refused => StatusCode::FORBIDDEN,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::Store => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut message = e.to_string();
        if let Some(advice) = e.fix().and_then(|f| fix_advice(&f)) {
            message.push_str("; ");
            message.push_str(&advice);
        }
        Failure { status, message }
    }
}

/// The console's words for what would help: a page to look at, or a command to run.
fn fix_advice(fix: &Fix) -> Option<String> {
    Some(match fix {
        Fix::Inbox | Fix::WaitAgain => "look at the Inbox page".into(),
        Fix::Projects | Fix::AddProject { .. } => "look at the Projects page".into(),
        Fix::Roster { project } => format!("see {project}'s roster on the Projects page"),
        Fix::Channels { .. } => "look at the Channels page".into(),
        Fix::AddMember { handle, project } => {
            format!("add it with `mailroom roster add {handle} --project {project}`")
        }
        Fix::Activate { handle, project } => {
            format!("run `mailroom roster activate {handle} --project {project}`")
        }
        Fix::Anyway(_) => {
            "check the spelling; to start a new name on purpose, use the command line".into()
        }
        _ => return None,
    })
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let doc = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { "mailroom: " (self.status.as_u16()) }
                    link rel="stylesheet" href="/static/console.css";
                }
                body {
                    main {
                        p.error role="alert" { (self.message) }
                        p { a href="/" { "Back to the decisions" } }
                    }
                }
            }
        };
        html_response(self.status, doc)
    }
}

pub async fn not_found() -> Failure {
    Failure {
        status: StatusCode::NOT_FOUND,
        message: "there is no such page in the console.".into(),
    }
}

pub async fn script() -> Response {
    asset(
        include_str!("../static/console.js"),
        "text/javascript; charset=utf-8",
    )
}

pub async fn style() -> Response {
    asset(
        include_str!("../static/console.css"),
        "text/css; charset=utf-8",
    )
}

fn asset(text: &'static str, kind: &'static str) -> Response {
    let mut r = text.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}
