//! The state-changing requests, each a POST from the console's own forms carrying this run's
//! CSRF token: reply (reaches the sender, closes HUMAN's copy), done, send, release (another
//! agent's file reservation, as HUMAN may). Invariant: a form without the token changes nothing;
//! each action is one core operation.

use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use mailroom_core::ops::{Draft, Release};
use mailroom_core::{Address, Kind, MemberStatus, MessageId, Name, Priority};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::Console;
use crate::view::Failure;

fn check_csrf(c: &Console, given: &str) -> Result<(), Failure> {
    if c.secret().csrf_matches(given) {
        Ok(())
    } else {
        Err(Failure::forbidden(
            "this form is not from the console's current page: reload the page and try again.",
        ))
    }
}

/// A form of the console's own page. This run's CSRF token is checked before anything else is
/// read from it, so a form without it (or one that is no form at all) is 403; then its fields,
/// 400 in the console's words when they are not the page's. Never axum's own rejection text.
pub struct PageForm<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Console> for PageForm<T> {
    type Rejection = Failure;

    async fn from_request(request: Request, c: &Console) -> Result<Self, Failure> {
        // `whole_body` has read the body already, within its bounds.
        let bytes = axum::body::to_bytes(request.into_body(), crate::guard::MAX_BODY)
            .await
            .map_err(|_| Failure::bad("the form could not be read: try again."))?;
        let fields: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
        let token = fields
            .iter()
            .find_map(|(k, v)| (k == "csrf").then_some(v.as_str()))
            .unwrap_or_default();
        check_csrf(c, token)?;
        serde_urlencoded::from_bytes(&bytes).map(PageForm).map_err(|e| {
            Failure::bad(format!(
                "this form is not one the console's page sends ({e}): reload the page and try again."
            ))
        })
    }
}

/// Where to go after an action: one of the console's own pages, never another site.
fn back_to(back: &str) -> String {
    let local = back.starts_with('/')
        && !back.starts_with("//")
        && !back.starts_with("/\\")
        // Only what a Location header carries as it is: printable ASCII.
        && back.chars().all(|c| c.is_ascii_graphic());
    if local {
        back.to_owned()
    } else {
        "/".to_owned()
    }
}

/// A 303 to `back` after a POST, so a reload does not post again.
fn see_other(back: &str) -> Response {
    Redirect::to(&back_to(back)).into_response()
}

#[derive(Debug, Deserialize)]
pub struct ReplyForm {
    id: String,
    body: String,
    #[serde(default)]
    back: String,
}

pub async fn reply(
    State(c): State<Console>,
    PageForm(f): PageForm<ReplyForm>,
) -> Result<Response, Failure> {
    let body = f.body.replace("\r\n", "\n");
    let id = f.id;
    c.blocking(move |mr, me| {
        let draft = Draft {
            body,
            ..Draft::default()
        };
        mr.reply(me, &id, draft, false)
    })
    .await??;
    Ok(see_other(&f.back))
}

#[derive(Debug, Deserialize)]
pub struct DoneForm {
    id: String,
    #[serde(default)]
    back: String,
}

pub async fn done(
    State(c): State<Console>,
    PageForm(f): PageForm<DoneForm>,
) -> Result<Response, Failure> {
    let id = f.id;
    c.blocking(move |mr, me| mr.done(me, &[id])).await??;
    Ok(see_other(&f.back))
}

#[derive(Debug, Deserialize)]
pub struct ReleaseForm {
    project: String,
    id: String,
    #[serde(default)]
    back: String,
}

/// Releases one lease by its whole id, as `mailroom --as HUMAN release ID` does.
pub async fn release(
    State(c): State<Console>,
    PageForm(f): PageForm<ReleaseForm>,
) -> Result<Response, Failure> {
    let project = Name::parse(f.project.trim()).map_err(|e| {
        Failure::bad(format!(
            "this form names no valid project ({e}): reload the page and try again."
        ))
    })?;
    // The page sends a lease's whole id: a part of one could name another lease.
    let id = MessageId::parse(f.id.trim())
        .ok_or_else(|| {
            Failure::bad("this form names no whole lease id: reload the page and try again.")
        })?
        .to_string();
    c.blocking(move |mr, me| mr.release(me, &project, &Release::Id(id)))
        .await??;
    Ok(see_other(&f.back))
}

#[derive(Debug, Deserialize)]
pub struct SendForm {
    mode: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    project: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    subject: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    priority: String,
    body: String,
}

pub async fn send(
    State(c): State<Console>,
    PageForm(f): PageForm<SendForm>,
) -> Result<Response, Failure> {
    let kind: Kind = if f.kind.is_empty() {
        Kind::Info
    } else {
        f.kind.parse().map_err(Failure::bad)?
    };
    let priority: Priority = if f.priority.is_empty() {
        Priority::Medium
    } else {
        f.priority.parse().map_err(Failure::bad)?
    };
    let subject = Some(f.subject.trim().to_owned()).filter(|s| !s.is_empty());
    let draft = Draft {
        to: vec![],
        subject,
        body: f.body.replace("\r\n", "\n"),
        kind,
        priority,
        idempotency_key: None,
    };
    let project = || {
        Name::parse(f.project.trim())
            .map_err(|e| Failure::bad(format!("choose a project for this kind of send ({e})")))
    };
    let sent = match f.mode.as_str() {
        "to" => {
            let to: Vec<String> =
                f.to.split([',', ' ', '\n'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
            if to.is_empty() {
                return Err(Failure::bad(
                    "name at least one recipient (handle or handle@project) in To.",
                ));
            }
            c.blocking(move |mr, me| mr.send(me, Draft { to, ..draft }))
                .await??
        }
        "members" => {
            let project = project()?;
            c.blocking(move |mr, me| {
                let to: Vec<String> = mr
                    .roster(&project)?
                    .into_iter()
                    .filter(|m| m.status == MemberStatus::Active)
                    .map(|m| Address::in_project(m.handle, project.clone()).to_string())
                    .collect();
                if to.is_empty() {
                    return Err(mailroom_core::Error::Invalid(format!(
                        "project {project} has no active member to write to"
                    )));
                }
                mr.send(me, Draft { to, ..draft })
            })
            .await??
        }
        "channel" => {
            let project = project()?;
            let channel = f.channel.trim().to_owned();
            if channel.is_empty() {
                return Err(Failure::bad(
                    "name the channel to post to (e.g. all or run-42).",
                ));
            }
            c.blocking(move |mr, me| mr.post(me, &project, &channel, draft))
                .await??
        }
        other => {
            return Err(Failure::bad(format!(
                "unknown kind of send '{other}': choose handles, a project's members or a channel."
            )));
        }
    };
    let mut r = Redirect::to(&format!("/compose?sent={}", sent.message.id)).into_response();
    *r.status_mut() = StatusCode::SEE_OTHER;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_only_ever_returns_to_a_page_of_the_console() {
        for (given, to) in [
            ("/inbox", "/inbox"),
            ("/thread/01ABC", "/thread/01ABC"),
            ("//evil.example/", "/"),
            ("/\\evil.example", "/"),
            ("https://evil.example/", "/"),
            ("javascript:alert(1)", "/"),
            ("", "/"),
            ("/x\r\nSet-Cookie: a=b", "/"),
            ("/caf\u{e9}", "/"),
            ("/a b", "/"),
        ] {
            assert_eq!(back_to(given), to, "{given}");
        }
    }
}
