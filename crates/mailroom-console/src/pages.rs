//! The pages (GET only, nothing changes state except opening one message, which marks it
//! read as `mailroom read` does): decisions, inbox, compose, projects (with their active file
//! reservations), channels, a channel's timeline, a thread, one message, search.

use std::collections::{BTreeMap, HashMap};

use axum::extract::State;
use axum::response::Response;
use jiff::Timestamp;
use mailroom_core::{
    Address, Kind, Lease, Mailroom, Member, MemberStatus, Message, MessageId, Name, Project,
    State as MsgState, Stored,
};
use maud::html;
use serde::Deserialize;

use crate::Console;
use crate::view::{
    self, Counts, Failure, Page, PagePath, PageQuery, age, answer_forms, content, kind_class, meta,
};

/// How far up a thread a decision shows what it answers.
const ANCESTORS: usize = 8;
/// Most hits one search page lists.
const SEARCH_SHOWN: usize = 200;

type PageResult = Result<Response, Failure>;

fn is_decision(s: &Stored) -> bool {
    matches!(s.message.kind, Kind::HoldRequest | Kind::Question)
}

fn counts(pending: &[Stored]) -> Counts {
    Counts {
        decisions: pending.iter().filter(|s| is_decision(s)).count(),
        pending: pending.len(),
    }
}

fn newest(pending: &[Stored]) -> Option<MessageId> {
    pending.iter().map(|s| s.message.id).max()
}

/// A decision and the earlier messages of its thread it answers, oldest first.
pub struct Decision {
    pub stored: Stored,
    pub before: Vec<Message>,
}

/// What the decisions page shows: computed on a blocking thread.
pub struct Decisions {
    pub decisions: Vec<Decision>,
    pub others: Vec<Stored>,
    pub counts: Counts,
    pub after: Option<MessageId>,
}

/// Open HOLD_REQUESTs first, then QUESTIONs, each oldest first, with what they answer; then the
/// rest of the pending mail.
pub fn load_decisions(mr: &Mailroom<'_>, me: &Address) -> mailroom_core::Result<Decisions> {
    let pending = mr.peek(me)?.messages;
    let counts = counts(&pending);
    let after = newest(&pending);
    let by_id: HashMap<MessageId, &Message> =
        pending.iter().map(|s| (s.message.id, &s.message)).collect();
    let (mut decisions, mut others): (Vec<Stored>, Vec<Stored>) =
        pending.iter().cloned().partition(is_decision);
    // Most urgent first, as the inbox orders them: hold requests, then by priority.
    decisions.sort_by(mailroom_core::ops::urgency_order);
    others.sort_by(mailroom_core::ops::urgency_order);
    let decisions = decisions
        .into_iter()
        .map(|stored| {
            let before = ancestors(mr, me, &stored.message, &by_id)?;
            Ok(Decision { stored, before })
        })
        .collect::<mailroom_core::Result<_>>()?;
    Ok(Decisions {
        decisions,
        others,
        counts,
        after,
    })
}

/// The messages `m` answers, up the thread, by point lookups: the pending listing, then the
/// mailbox (any state), then what `me` sent.
fn ancestors(
    mr: &Mailroom<'_>,
    me: &Address,
    m: &Message,
    pending: &HashMap<MessageId, &Message>,
) -> mailroom_core::Result<Vec<Message>> {
    let mut chain = Vec::new();
    let mut next = m.reply_to;
    while let Some(id) = next {
        if chain.len() == ANCESTORS {
            break;
        }
        let found = match pending.get(&id) {
            Some(m) => Some((*m).clone()),
            None => mr.message(me, id)?.map(|(m, _)| m),
        };
        let Some(found) = found else { break };
        next = found.reply_to;
        chain.push(found);
    }
    chain.reverse();
    Ok(chain)
}

pub async fn decisions(State(c): State<Console>) -> PageResult {
    let d = c.blocking(|mr, me| load_decisions(mr, me)).await??;
    Ok(render_decisions(&d, c.secret().csrf(), Timestamp::now()))
}

/// The decisions page from its data (a function of its own so the benchmark can time it).
pub fn render_decisions(d: &Decisions, csrf: &str, now: Timestamp) -> Response {
    let main = html! {
        h1 { "Decisions" }
        @if d.decisions.is_empty() {
            p.empty { "Nothing waits for a decision. New hold requests and questions to HUMAN appear here as they arrive." }
        }
        ol.queue {
            @for (i, dec) in d.decisions.iter().enumerate() {
                @let m = &dec.stored.message;
                li.item.decision data-id=(m.id) tabindex="-1" aria-selected=[(i == 0).then_some("true")] {
                    @if !dec.before.is_empty() {
                        details.thread {
                            summary { "In a thread of " (dec.before.len() + 1) " — " a href={ "/thread/" (m.thread) } { "whole thread" } }
                            @for earlier in &dec.before {
                                div.earlier { (meta(earlier, None, now)) h4 { (view::line(&earlier.subject)) } (view::body_excerpt(&earlier.body, &view::message_page(earlier.id))) }
                            }
                        }
                    }
                    (meta(m, Some(dec.stored.state), now))
                    (content(m, &view::message_page(m.id)))
                    (answer_forms(m.id, "/", csrf, "Your answer (reaches the sender, closes HUMAN's copy)"))
                }
            }
        }
        @if !d.others.is_empty() {
            h2 { "Other pending mail (" (d.others.len()) ")" }
            ul.compact {
                @for s in &d.others {
                    li data-id=(s.message.id) {
                        span class=(kind_class(s.message.kind)) { (s.message.kind.as_str()) }
                        " " a href={ "/m/" (s.message.id) } { (view::line(&s.message.subject)) }
                        " " span.from { (s.message.from.to_string()) }
                        " " span.age { (age(s.message.date, now)) }
                    }
                }
            }
        }
    };
    Page {
        title: "Decisions",
        path: "/",
        counts: d.counts.clone(),
        live: true,
        after: d.after,
    }
    .render(main)
}

pub async fn inbox(State(c): State<Console>) -> PageResult {
    let pending = c.blocking(|mr, me| mr.peek(me)).await??.messages;
    let csrf = c.secret().csrf();
    let now = Timestamp::now();
    let main = html! {
        h1 { "Inbox of HUMAN" }
        @if pending.is_empty() { p.empty { "No pending mail." } }
        ol.queue {
            @for (i, s) in pending.iter().enumerate() {
                li.item data-id=(s.message.id) tabindex="-1" aria-selected=[(i == 0).then_some("true")] {
                    (meta(&s.message, Some(s.state), now))
                    (content(&s.message, &view::message_page(s.message.id)))
                    (answer_forms(s.message.id, "/inbox", csrf, "Reply to the sender"))
                }
            }
        }
    };
    Ok(Page {
        title: "Inbox",
        path: "/inbox",
        counts: counts(&pending),
        live: true,
        after: newest(&pending),
    }
    .render(main))
}

/// The projects with their rosters, for pickers and the projects page.
fn rosters(mr: &Mailroom<'_>) -> mailroom_core::Result<Vec<(Project, Vec<Member>)>> {
    mr.projects()?
        .into_iter()
        .map(|p| {
            let roster = mr.roster(&p.name)?;
            Ok((p, roster))
        })
        .collect()
}

#[derive(Debug, Deserialize, Default)]
pub struct ComposeQuery {
    pub to: Option<String>,
    pub sent: Option<String>,
}

pub async fn compose(
    State(c): State<Console>,
    PageQuery(q): PageQuery<ComposeQuery>,
) -> PageResult {
    let (rosters, pending) = c
        .blocking(|mr, me| Ok::<_, mailroom_core::Error>((rosters(mr)?, mr.peek(me)?.messages)))
        .await??;
    let csrf = c.secret().csrf();
    let main = html! {
        h1 { "Compose" }
        @if let Some(id) = &q.sent {
            p.notice role="status" { "Sent " a href={ "/m/" (id) } { (id) } "." }
        }
        form.compose method="post" action="/send" {
            input type="hidden" name="csrf" value=(csrf);
            fieldset.mode {
                legend { "Send to" }
                label { input type="radio" name="mode" value="to" checked; " handles" }
                label { input type="radio" name="mode" value="members"; " a project's active members" }
                label { input type="radio" name="mode" value="channel"; " a channel" }
            }
            label { "To (handle or handle@project, separated by commas)"
                input type="text" name="to" list="handles" value=[q.to.as_deref()] autocomplete="off";
            }
            datalist #handles {
                @for (p, members) in &rosters {
                    @for m in members { option value={ (m.handle.as_str()) "@" (p.name.as_str()) } {} }
                }
            }
            div.row {
                label { "Project"
                    select name="project" {
                        option value="" { "—" }
                        @for (p, _) in &rosters { option value=(p.name.as_str()) { (p.name.as_str()) } }
                    }
                }
                label { "Channel" input type="text" name="channel" placeholder="all, run-42, …" autocomplete="off"; }
            }
            label { "Subject" input type="text" name="subject" maxlength="200"; }
            div.row {
                label { "Kind"
                    select name="kind" {
                        @for k in Kind::ALL { option value=(k.as_str()) selected[k == Kind::Info] { (k.as_str()) } }
                    }
                }
                label { "Priority"
                    select name="priority" {
                        option value="H" { "high" }
                        option value="M" selected { "medium" }
                        option value="L" { "low" }
                    }
                }
            }
            label { "Message" textarea name="body" rows="8" required {} }
            button type="submit" { "Send as HUMAN" }
        }
    };
    Ok(Page {
        title: "Compose",
        path: "/compose",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

/// One member's row on the projects page.
struct MemberRow {
    member: Member,
    pending: usize,
    oldest: Option<Timestamp>,
    last_sent: Option<Timestamp>,
    waiting_on_human: usize,
}

pub async fn projects(State(c): State<Console>) -> PageResult {
    let (projects, pending) = c
        .blocking(|mr, me| {
            let human_pending = mr.peek(me)?.messages;
            let mut from: HashMap<Address, usize> = HashMap::new();
            for s in &human_pending {
                *from.entry(s.message.from.clone()).or_default() += 1;
            }
            let mut out = Vec::new();
            for (p, roster) in rosters(mr)? {
                let mut rows = Vec::new();
                for member in roster {
                    let addr = Address::in_project(member.handle.clone(), p.name.clone());
                    let activity = mr.activity(&addr)?;
                    rows.push(MemberRow {
                        pending: activity.pending,
                        oldest: activity.oldest_pending,
                        last_sent: activity.last_sent,
                        waiting_on_human: from.get(&addr).copied().unwrap_or(0),
                        member,
                    });
                }
                let leases = mr.reservations(&p.name)?;
                out.push((p, rows, leases));
            }
            Ok::<_, mailroom_core::Error>((out, human_pending))
        })
        .await??;
    let now = Timestamp::now();
    let csrf = c.secret().csrf();
    let main = html! {
        h1 { "Projects" }
        @if projects.is_empty() { p.empty { "No projects yet: the first send creates one." } }
        @for (p, rows, leases) in &projects {
            section.project {
                h2 { (p.name.as_str()) " " span.policy { (p.policy.as_str()) } }
                div.scroll {
                    table {
                        thead { tr {
                            th { "Member" } th { "Role" } th { "Status" } th { "Last sent" }
                            th { "Pending" } th { "Oldest pending" } th { "Waiting on HUMAN" }
                        } }
                        tbody {
                            @for r in rows {
                                tr class=(if r.member.status == MemberStatus::Active { "active" } else { "inactive" }) {
                                    td { a href={ "/compose?to=" (r.member.handle.as_str()) "@" (p.name.as_str()) } { (r.member.handle.as_str()) } }
                                    td { (view::line(&r.member.role)) }
                                    td { (r.member.status.as_str()) }
                                    td { @if let Some(t) = r.last_sent { (age(t, now)) " ago" } @else { "—" } }
                                    td.num { (r.pending) }
                                    td { @if let Some(t) = r.oldest { span class=(if now.as_second() - t.as_second() > 3600 { "late" } else { "" }) { (age(t, now)) } } @else { "—" } }
                                    td.num { (r.waiting_on_human) }
                                }
                            }
                        }
                    }
                }
                @if !leases.is_empty() {
                    (reservations(&p.name, leases, csrf, now))
                }
            }
        }
    };
    Ok(Page {
        title: "Projects",
        path: "/projects",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

/// A project's active file reservations, each with the operator's release button.
fn reservations(project: &Name, leases: &[Lease], csrf: &str, now: Timestamp) -> maud::Markup {
    html! {
        h3 { "Reserved files (" (leases.len()) ")" }
        div.scroll {
            table.leases {
                thead { tr {
                    th { "Holder" } th { "Pattern" } th { "Kind" } th { "Reason" } th { "Until" }
                    th { span.sr { "Release" } }
                } }
                tbody {
                    @for l in leases {
                        tr data-lease=(l.id) {
                            td { a href={ "/compose?to=" (l.holder.to_string()) } { (l.holder.to_string()) } }
                            td { code { (view::line(&l.pattern)) } }
                            td { (if l.exclusive { "exclusive" } else { "shared" }) }
                            td { @if let Some(r) = &l.reason { (view::line(r)) } @else { "—" } }
                            td { time datetime=(l.until) { (l.until.strftime("%Y-%m-%d %H:%M UTC")) } " " span.age { "(in " (age(now, l.until)) ")" } }
                            td {
                                form.release method="post" action="/release" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="project" value=(project.as_str());
                                    input type="hidden" name="id" value=(l.id);
                                    input type="hidden" name="back" value="/projects";
                                    button.secondary type="submit" aria-label={ "Release " (l.pattern) " held by " (l.holder.to_string()) } { "Release" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub async fn channels(State(c): State<Console>) -> PageResult {
    let (lists, pending) = c
        .blocking(|mr, me| {
            let mut out = Vec::new();
            for p in mr.projects()? {
                let list = mr.channel_list(me, &p.name)?;
                out.push((p, list));
            }
            Ok::<_, mailroom_core::Error>((out, mr.peek(me)?.messages))
        })
        .await??;
    let main = html! {
        h1 { "Channels" }
        @if lists.iter().all(|(_, l)| l.is_empty()) { p.empty { "No channel has entries yet." } }
        @for (p, list) in &lists {
            @if !list.is_empty() {
                section {
                    h2 { (p.name.as_str()) }
                    ul.compact {
                        @for ch in list {
                            li {
                                a href={ "/channel/" (p.name.as_str()) "/" (ch.channel.name.as_str()) } { "#" (ch.channel.name.as_str()) }
                                " " span.age { (ch.entries) " entries" }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Page {
        title: "Channels",
        path: "/channels",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

#[derive(Debug, Deserialize, Default)]
pub struct KindQuery {
    pub kind: Option<String>,
}

pub async fn channel(
    State(c): State<Console>,
    PagePath((project, name)): PagePath<(String, String)>,
    PageQuery(q): PageQuery<KindQuery>,
) -> PageResult {
    let project_name = Name::parse(&project).map_err(|e| {
        Failure::bad(format!(
            "the project name in this address is not valid: {e}"
        ))
    })?;
    let kind: Option<Kind> = match q.kind.as_deref().filter(|k| !k.is_empty()) {
        Some(k) => Some(k.parse().map_err(Failure::bad)?),
        None => None,
    };
    let (listing, pending) = c
        .blocking(move |mr, me| {
            let (_, listing) = mr.channel_show(me, &project_name, &name)?;
            Ok::<_, mailroom_core::Error>((listing, mr.peek(me)?.messages))
        })
        .await??;
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &listing.messages {
        *by_kind.entry(s.message.kind.as_str()).or_default() += 1;
    }
    let now = Timestamp::now();
    let title = listing
        .messages
        .first()
        .and_then(|s| s.message.channel.as_ref())
        .map(|c| format!("#{}/{}", c.project.as_str(), c.name.as_str()))
        .unwrap_or_else(|| "channel".into());
    let base = listing
        .messages
        .first()
        .and_then(|s| s.message.channel.as_ref())
        .map(|c| format!("/channel/{}/{}", c.project.as_str(), c.name.as_str()))
        .unwrap_or_default();
    let main = html! {
        h1 { (title) }
        nav.kinds aria-label="entries by kind" {
            a href=(base) aria-current=[kind.is_none().then_some("page")] { "all " (listing.messages.len()) }
            @for (k, n) in &by_kind {
                " " a href={ (base) "?kind=" (k) } aria-current=[(kind.map(|x| x.as_str()) == Some(*k)).then_some("page")] { (k) " " (n) }
            }
        }
        ol.timeline {
            @for s in listing.messages.iter().filter(|s| kind.is_none_or(|k| s.message.kind == k)) {
                li.entry data-id=(s.message.id) {
                    (meta(&s.message, (s.state == MsgState::Retracted).then_some(s.state), now))
                    (content(&s.message, &view::entry_page(&s.message)))
                }
            }
        }
    };
    Ok(Page {
        title: &title,
        path: "/channels",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

/// One entry of a channel, whole: the page a channel entry's subject links to.
pub async fn entry(
    State(c): State<Console>,
    PagePath((project, name, id)): PagePath<(String, String, String)>,
) -> PageResult {
    let project_name = Name::parse(&project).map_err(|e| {
        Failure::bad(format!(
            "the project name in this address is not valid: {e}"
        ))
    })?;
    let id = parse_id(&id)?;
    let (found, pending) = c
        .blocking(move |mr, me| {
            let (_, listing) = mr.channel_show(me, &project_name, &name)?;
            let found = listing.messages.into_iter().find(|s| s.message.id == id);
            Ok::<_, mailroom_core::Error>((found, mr.peek(me)?.messages))
        })
        .await??;
    let Some(s) = found else {
        return Err(Failure::not_found(
            "this channel has no entry with this id: it may have been retracted.",
        ));
    };
    let m = &s.message;
    let now = Timestamp::now();
    let main = html! {
        article.item.single data-id=(m.id) {
            (meta(m, (s.state == MsgState::Retracted).then_some(s.state), now))
            h1.subject { (view::line(&m.subject)) }
            div.body { (view::body(&m.body)) }
            @if let Some(ch) = &m.channel {
                p.links {
                    a href={ "/channel/" (ch.project.as_str()) "/" (ch.name.as_str()) } {
                        "#" (ch.project.as_str()) "/" (ch.name.as_str())
                    }
                }
            }
        }
    };
    Ok(Page {
        title: "Channel entry",
        path: "/channels",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

fn parse_id(id: &str) -> Result<MessageId, Failure> {
    MessageId::parse(id).ok_or_else(|| {
        Failure::bad("the message id in this address is not a full message id (26 characters)")
    })
}

pub async fn thread(State(c): State<Console>, PagePath(id): PagePath<String>) -> PageResult {
    let thread = parse_id(&id)?;
    let (messages, pending) = c
        .blocking(move |mr, me| {
            Ok::<_, mailroom_core::Error>((mr.thread(me, thread)?, mr.peek(me)?.messages))
        })
        .await??;
    let now = Timestamp::now();
    let csrf = c.secret().csrf();
    let back = format!("/thread/{thread}");
    let main = html! {
        h1 { "Thread" }
        @if messages.is_empty() { p.empty { "HUMAN has no message of this thread." } }
        ol.timeline {
            @for (m, state) in &messages {
                li.entry data-id=(m.id) {
                    (meta(m, *state, now))
                    (content(m, &view::message_page(m.id)))
                    @if state.is_some_and(|s| s.is_pending()) {
                        (answer_forms(m.id, &back, csrf, "Reply to the sender"))
                    }
                }
            }
        }
    };
    Ok(Page {
        title: "Thread",
        path: "",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

pub async fn message(State(c): State<Console>, PagePath(id): PagePath<String>) -> PageResult {
    let (shown, pending) = c
        .blocking(move |mr, me| {
            let shown = match mr.read(me, &id, false) {
                Ok(r) => (r.stored.message, Some(r.stored.state)),
                Err(e @ mailroom_core::Error::MessageNotFound { .. }) => {
                    // Perhaps one HUMAN sent.
                    match MessageId::parse(&id).map(|i| mr.sent_message(me, i)) {
                        Some(Ok(Some(m))) => (m, None),
                        Some(Err(e)) => return Err(e),
                        _ => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            };
            Ok((shown, mr.peek(me)?.messages))
        })
        .await??;
    let (m, state) = shown;
    let now = Timestamp::now();
    let csrf = c.secret().csrf();
    let main = html! {
        article.item.single data-id=(m.id) {
            (meta(&m, state, now))
            h1.subject { (view::line(&m.subject)) }
            div.body { (view::body(&m.body)) }
            p.links { a href={ "/thread/" (m.thread) } { "Whole thread" } }
            @if state.is_some_and(|s| s.is_pending()) {
                (answer_forms(m.id, "/", csrf, "Reply to the sender"))
            }
        }
    };
    Ok(Page {
        title: "Message",
        path: "",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

#[derive(Debug, Deserialize, Default)]
pub struct SearchQuery {
    pub q: Option<String>,
}

pub async fn search(State(c): State<Console>, PageQuery(q): PageQuery<SearchQuery>) -> PageResult {
    let query = q.q.unwrap_or_default();
    let asked = query.trim().to_owned();
    let (hits, pending) = c
        .blocking(move |mr, me| {
            // Each hit with whether HUMAN sent it, and the page that shows it whole.
            let mut hits: Vec<(Stored, bool, String)> = Vec::new();
            if !asked.is_empty() {
                // The operator's search, as `mailroom --as HUMAN search` makes it (every
                // project's channels included), newest first.
                hits.extend(mr.search(me, &asked)?.hits.into_iter().map(|h| {
                    let page = if h.stored.message.is_channel_entry() {
                        view::entry_page(&h.stored.message)
                    } else {
                        view::message_page(h.stored.message.id)
                    };
                    (h.stored, h.sent, page)
                }));
                hits.sort_by_key(|(s, ..)| std::cmp::Reverse(s.message.id));
                hits.dedup_by_key(|(s, ..)| s.message.id);
            }
            Ok::<_, mailroom_core::Error>((hits, mr.peek(me)?.messages))
        })
        .await??;
    let now = Timestamp::now();
    let main = html! {
        h1 { "Search" }
        form.search method="get" action="/search" role="search" {
            input type="search" name="q" value=(query) placeholder="words in a subject or body" autofocus;
            button type="submit" { "Search" }
        }
        @if !query.trim().is_empty() {
            p.found { (hits.len()) " found, newest first" @if hits.len() > SEARCH_SHOWN { "; the first " (SEARCH_SHOWN) " shown" } "." }
        }
        ol.timeline {
            @for (s, sent, page) in hits.iter().take(SEARCH_SHOWN) {
                li.entry data-id=(s.message.id) {
                    (meta(&s.message, (!sent).then_some(s.state), now))
                    (content(&s.message, page))
                }
            }
        }
    };
    Ok(Page {
        title: "Search",
        path: "/search",
        counts: counts(&pending),
        live: false,
        after: newest(&pending),
    }
    .render(main))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_say_them() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        for (ago, said) in [
            (0, "0s"),
            (59, "59s"),
            (60, "1m"),
            (7200, "2h"),
            (200_000, "2d"),
        ] {
            let at = Timestamp::from_second(1_000_000 - ago).unwrap();
            assert_eq!(age(at, now), said);
        }
    }
}
