//! What the four roles share: rows read into the core's types, column lists, and the wake-up
//! of a mailbox's waiters.

use jiff::Timestamp;
use mailroom_core::message::BROADCAST;
use mailroom_core::{
    Error, Listing, Member, MemberStatus, Message, Name, Policy, Project, Result, State, Stored,
};
use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Row};

use crate::codec::{damaged, key, message, parse_state, parse_time};
use crate::fnv;

pub(crate) type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// The notification channel of a mailbox or a project's broadcasts (`LISTEN` names are
/// identifiers of at most 63 bytes, so a hash of the schema and the key).
pub(crate) fn notify_channel(schema: &str, what: &str) -> String {
    format!("mailroom_{:016x}", fnv(&format!("{schema}\n{what}")))
}

/// The wake locks of a channel: a waiter holds all of them in share mode for as long as it
/// listens; a change takes its connection's slot's (`WAKE_LOCK + SLOT`, `hashtext(channel)`)
/// exclusively without waiting, and notifies the channel only when it cannot: otherwise nobody
/// listens, and a notification would only make concurrent commits wait for each other (see
/// migrations 0004 and 0005).
pub(crate) const WAKE_LOCK: i32 = 1_835_100_524;

/// How many slots a mailbox's delivery count and wake lock are split into (migration 0005).
pub(crate) const SLOTS: i32 = 8;

pub(crate) fn broadcast_key(project: &Name) -> String {
    format!("#{BROADCAST}@{}", key(project))
}

pub(crate) fn now_ns() -> i64 {
    i64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX)
}

pub(crate) fn name_of(s: String) -> Result<Name> {
    Name::parse(&s).map_err(|e| Error::store(format!("the stored name '{s}'"), e))
}

pub(crate) fn project_of(row: &Row) -> Result<Project> {
    let name: String = row.get("name");
    let policy: String = row.get("policy");
    let created: String = row.get("created");
    Ok(Project {
        name: name_of(name)?,
        policy: Policy::parse(&policy).unwrap_or_default(),
        created: parse_time(&created).unwrap_or(Timestamp::UNIX_EPOCH),
    })
}

pub(crate) fn member_of(row: &Row) -> Result<Member> {
    let handle: String = row.get("handle");
    let status: String = row.get("status");
    let joined: String = row.get("joined");
    let since: Option<String> = row.get("since");
    Ok(Member {
        handle: name_of(handle)?,
        role: row.get("role"),
        status: MemberStatus::parse(&status).unwrap_or(MemberStatus::Active),
        joined: parse_time(&joined).unwrap_or(Timestamp::UNIX_EPOCH),
        since: since.and_then(|s| parse_time(&s).ok()),
    })
}

/// Rows of copies (with `state`) as a listing; a row that does not read is reported damaged.
pub(crate) fn copies_listing(owner: &str, rows: &[Row]) -> Listing {
    let mut out = Listing::default();
    for row in rows {
        let state = row
            .try_get::<_, String>("state")
            .ok()
            .and_then(|s| parse_state(&s));
        match (message(row), state) {
            (Ok(m), Some(state)) => out.messages.push(Stored {
                message: m,
                state,
                warnings: vec![],
            }),
            (Err(problem), state) => out
                .damaged
                .push(damaged("copies", owner, row, state, problem)),
            (Ok(_), None) => out.damaged.push(damaged(
                "copies",
                owner,
                row,
                None,
                "its state does not read".into(),
            )),
        }
    }
    out
}

pub(crate) fn entries_listing(owner: &str, rows: &[Row]) -> Listing {
    let mut out = Listing::default();
    for row in rows {
        let retracted: bool = row.try_get("retracted").unwrap_or(false);
        let state = if retracted {
            State::Retracted
        } else {
            State::Unread
        };
        match message(row) {
            Ok(m) => out.messages.push(Stored {
                message: m,
                state,
                warnings: vec![],
            }),
            Err(problem) => out
                .damaged
                .push(damaged("entries", owner, row, Some(state), problem)),
        }
    }
    out
}

/// Outbox traces; one that does not read is left out, as traces are best effort.
pub(crate) fn messages_of(rows: &[Row]) -> Vec<Message> {
    rows.iter().filter_map(|r| message(r).ok()).collect()
}

/// The candidates' filter for a search: each word of the query as a prefix of a word of the
/// text (the `words` columns split text where the query is split), or `None` when the query
/// has no word to look up (then every row is a candidate).
pub(crate) fn tsquery(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("'{}':*", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" & "))
}

pub(crate) const COPY_COLS: &str = "id, state, sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision, edited, channel";
pub(crate) const ENTRY_COLS: &str = "id, retracted, sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision, edited, channel";

/// Counts a change to the mailbox in its change token and wakes its waiters, as a delivery
/// does (migration 0009: through `mailroom_count`, which a strict-mode role may run only for
/// its own mailboxes).
pub(crate) fn bump_mailbox(
    tx: &mut impl GenericClient,
    schema: &str,
    mkey: &str,
    spelled: &str,
) -> std::result::Result<(), postgres::Error> {
    let channel = notify_channel(schema, mkey);
    tx.execute_typed(
        "SELECT mailroom_count($1, $2, $3)",
        &[
            (&mkey, Type::TEXT),
            (&spelled, Type::TEXT),
            (&channel, Type::TEXT),
        ],
    )?;
    Ok(())
}
