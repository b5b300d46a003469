//! The four store roles on the tables of `migrations/`.

use jiff::Timestamp;
use mailroom_core::message::{BROADCAST, ChannelRef};
use mailroom_core::store::{
    Channels, Delivery, Directory, Found, KeyClaim, Mailboxes, OriginClaim, Revisions, Sessions,
    Watch, matches_query,
};
use mailroom_core::{
    Address, Error, Listing, Member, MemberStatus, Message, MessageId, Name, Policy, Project,
    Result, State, Store, Stored,
};
use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Row};

use crate::codec::{
    Cols, MSG_COLS, damaged, key, mailbox_key, message, msg_placeholders, parse_state, parse_time,
    state_str,
};
use crate::{PgStore, fnv};

type Param<'a> = (&'a (dyn ToSql + Sync), Type);

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

fn now_ns() -> i64 {
    i64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX)
}

fn name_of(s: String) -> Result<Name> {
    Name::parse(&s).map_err(|e| Error::store(format!("the stored name '{s}'"), e))
}

fn project_of(row: &Row) -> Result<Project> {
    let name: String = row.get("name");
    let policy: String = row.get("policy");
    let created: String = row.get("created");
    Ok(Project {
        name: name_of(name)?,
        policy: Policy::parse(&policy).unwrap_or_default(),
        created: parse_time(&created).unwrap_or(Timestamp::UNIX_EPOCH),
    })
}

fn member_of(row: &Row) -> Result<Member> {
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
fn copies_listing(owner: &str, rows: &[Row]) -> Listing {
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

fn entries_listing(owner: &str, rows: &[Row]) -> Listing {
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
fn messages_of(rows: &[Row]) -> Vec<Message> {
    rows.iter().filter_map(|r| message(r).ok()).collect()
}

/// The candidates' filter for a search: each word of the query as a prefix of a word of the
/// text (the `words` columns split text where the query is split), or `None` when the query
/// has no word to look up (then every row is a candidate).
fn tsquery(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("'{}':*", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" & "))
}

const COPY_COLS: &str = "id, state, sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision, edited, channel";
const ENTRY_COLS: &str = "id, retracted, sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision, edited, channel";

/// Counts a change to the mailbox in its change token and wakes its waiters, as a delivery
/// does (migration 0009: through `mailroom_count`, which a strict-mode role may run only for
/// its own mailboxes).
fn bump_mailbox(
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

impl Store for PgStore {
    fn describe(&self) -> String {
        self.shown.clone()
    }
}

impl Directory for PgStore {
    fn check_acts_as(&self, identity: &Address) -> Result<()> {
        if !self.strict()? {
            return Ok(());
        }
        let k = mailbox_key(identity);
        let row = self.read("check the role's identities", |c| {
            c.query_typed_one("SELECT mailroom_mine($1)", &[(&k, Type::TEXT)])
        })?;
        if row.get::<_, bool>(0) {
            return Ok(());
        }
        Err(Error::Refused(format!(
            "the PostgreSQL role '{}' may not act as {identity} here: in strict mode a role acts only as the identities given to it; connect with that identity's role (see `mailroom role`)",
            self.role()
        )))
    }

    fn check_roster_change(&self, project: &Name) -> Result<()> {
        if !self.strict()? {
            return Ok(());
        }
        Err(Error::Refused(format!(
            "the PostgreSQL role '{}' may not add a member or a project here ('{project}'): in strict mode only the operator's role changes projects and rosters; ask the operator to add the member (`mailroom --as HUMAN --project {project} roster add HANDLE`)",
            self.role()
        )))
    }

    fn projects(&self) -> Result<Vec<Project>> {
        let rows = self.read("list the projects", |c| {
            c.query_typed(
                "SELECT name, policy, created FROM projects ORDER BY key",
                &[],
            )
        })?;
        rows.iter().map(project_of).collect()
    }

    fn project(&self, name: &Name) -> Result<Option<Project>> {
        let k = key(name);
        let row = self.read("look up a project", |c| {
            c.query_typed_opt(
                "SELECT name, policy, created FROM projects WHERE key = $1",
                &[(&k, Type::TEXT)],
            )
        })?;
        row.as_ref().map(project_of).transpose()
    }

    fn ensure_project(&self, project: &Project) -> Result<(Project, bool)> {
        let k = key(&project.name);
        let name = project.name.as_str();
        let policy = project.policy.as_str();
        let created = project.created.to_string();
        // Looked up first: a role that may not create projects (strict mode) still gets the
        // one that exists.
        if let Some(p) = self.project(&project.name)? {
            return Ok((p, false));
        }
        let (row, made) = self.write("create a project", |tx| {
            if let Some(row) = tx.query_typed_opt(
                "INSERT INTO projects (key, name, policy, created) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (key) DO NOTHING RETURNING name, policy, created",
                &[
                    (&k, Type::TEXT),
                    (&name, Type::TEXT),
                    (&policy, Type::TEXT),
                    (&created, Type::TEXT),
                ],
            )? {
                return Ok((row, true));
            }
            let row = tx.query_typed_one(
                "SELECT name, policy, created FROM projects WHERE key = $1",
                &[(&k, Type::TEXT)],
            )?;
            Ok((row, false))
        })?;
        Ok((project_of(&row)?, made))
    }

    fn set_policy(&self, name: &Name, policy: Policy) -> Result<bool> {
        let k = key(name);
        let p = policy.as_str();
        let n = self.write("change a project's policy", |tx| {
            tx.execute_typed(
                "UPDATE projects SET policy = $2 WHERE key = $1",
                &[(&k, Type::TEXT), (&p, Type::TEXT)],
            )
        })?;
        Ok(n > 0)
    }

    fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        let k = key(project);
        let rows = self.read("list a roster", |c| {
            c.query_typed(
                "SELECT handle, role, status, joined, since FROM members WHERE project_key = $1 ORDER BY handle_key",
                &[(&k, Type::TEXT)],
            )
        })?;
        rows.iter().map(member_of).collect()
    }

    fn member(&self, project: &Name, handle: &Name) -> Result<Option<Member>> {
        let (p, h) = (key(project), key(handle));
        let row = self.read("look up a member", |c| {
            c.query_typed_opt(
                "SELECT handle, role, status, joined, since FROM members WHERE project_key = $1 AND handle_key = $2",
                &[(&p, Type::TEXT), (&h, Type::TEXT)],
            )
        })?;
        row.as_ref().map(member_of).transpose()
    }

    fn add_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let (p, h) = (key(project), key(&member.handle));
        let handle = member.handle.as_str();
        let status = member.status.as_str();
        let joined = member.joined.to_string();
        let since = member.since.map(|s| s.to_string());
        if self.member(project, &member.handle)?.is_some() {
            return Ok(false);
        }
        let n = self.write("add a member", |tx| {
            tx.execute_typed(
                "INSERT INTO members (project_key, handle_key, handle, role, status, joined, since) \
                 SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM projects WHERE key = $1) \
                 ON CONFLICT DO NOTHING",
                &[
                    (&p, Type::TEXT),
                    (&h, Type::TEXT),
                    (&handle, Type::TEXT),
                    (&member.role, Type::TEXT),
                    (&status, Type::TEXT),
                    (&joined, Type::TEXT),
                    (&since, Type::TEXT),
                ],
            )
        })?;
        Ok(n > 0)
    }

    fn update_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let (p, h) = (key(project), key(&member.handle));
        let status = member.status.as_str();
        let joined = member.joined.to_string();
        let since = member.since.map(|s| s.to_string());
        let n = self.write("change a member", |tx| {
            tx.execute_typed(
                "UPDATE members SET role = $3, status = $4, joined = $5, since = $6 \
                 WHERE project_key = $1 AND handle_key = $2",
                &[
                    (&p, Type::TEXT),
                    (&h, Type::TEXT),
                    (&member.role, Type::TEXT),
                    (&status, Type::TEXT),
                    (&joined, Type::TEXT),
                    (&since, Type::TEXT),
                ],
            )
        })?;
        Ok(n > 0)
    }

    fn lookup(&self, projects: &[Name], members: &[(Name, Name)]) -> Result<Found> {
        let pk: Vec<String> = projects.iter().map(key).collect();
        let mp: Vec<String> = members.iter().map(|(p, _)| key(p)).collect();
        let mh: Vec<String> = members.iter().map(|(_, h)| key(h)).collect();
        // One round trip: the projects found, then the entries found, each with its position.
        let rows = self.read("look up projects and members", |c| {
            Ok(c.call(
                LOOKUP,
                &[Type::TEXT_ARRAY, Type::TEXT_ARRAY, Type::TEXT_ARRAY],
                &[&pk, &mp, &mh],
            )?)
        })?;
        let mut found = vec![None; projects.len()];
        let mut entries = vec![None; members.len()];
        for row in &rows {
            let part: i32 = row.get("part");
            let n: i64 = row.get("n");
            let at = usize::try_from(n - 1).unwrap_or(usize::MAX);
            if part == 0 {
                if let Some(slot) = found.get_mut(at) {
                    *slot = Some(project_of(row)?);
                }
            } else if let Some(slot) = entries.get_mut(at) {
                *slot = Some(member_of(row)?);
            }
        }
        Ok(Found {
            projects: found,
            members: entries,
        })
    }

    fn memberships(&self, handle: &Name) -> Result<Vec<(Project, Member)>> {
        let h = key(handle);
        let rows = self.read("list memberships", |c| {
            c.query_typed(
                "SELECT p.name, p.policy, p.created, m.handle, m.role, m.status, m.joined, m.since \
                 FROM members m JOIN projects p ON p.key = m.project_key \
                 WHERE m.handle_key = $1 ORDER BY p.key",
                &[(&h, Type::TEXT)],
            )
        })?;
        rows.iter()
            .map(|r| Ok((project_of(r)?, member_of(r)?)))
            .collect()
    }
}

impl PgStore {
    /// Whether row-level security applies to this connection's role: strict mode.
    fn strict(&self) -> Result<bool> {
        if let Some(strict) = self.strict.get() {
            return Ok(*strict);
        }
        let row = self.read("check the role's rights", |c| {
            c.query_typed_one("SELECT row_security_active('copies')", &[])
        })?;
        let strict: bool = row.get(0);
        Ok(*self.strict.get_or_init(|| strict))
    }

    fn role(&self) -> &str {
        self.config.get_user().unwrap_or("")
    }
}

impl PgStore {
    fn copies(
        &self,
        what: &str,
        mailbox: &Address,
        filter: &str,
        extra: &[Param<'_>],
    ) -> Result<Listing> {
        let mkey = mailbox_key(mailbox);
        let sql = format!("SELECT {COPY_COLS} FROM copies WHERE mailbox = $1 {filter}");
        let rows = self.read(what, |c| {
            let mut params: Vec<Param<'_>> = vec![(&mkey, Type::TEXT)];
            params.extend_from_slice(extra);
            c.query_typed(&sql, &params)
        })?;
        Ok(copies_listing(&mailbox.to_string(), &rows))
    }
}

/// The projects and roster entries a send's checks need, in one round trip: the projects
/// found, then the entries found, each with its position. Prepared once per connection.
const LOOKUP: &str = "SELECT 0 AS part, q.n, p.name, p.policy, p.created, \
     NULL AS handle, NULL AS role, NULL AS status, NULL AS joined, NULL AS since \
     FROM unnest($1::text[]) WITH ORDINALITY AS q(k, n) JOIN projects p ON p.key = q.k \
     UNION ALL \
     SELECT 1, q.n, NULL, NULL, NULL, m.handle, m.role, m.status, m.joined, m.since \
     FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS q(p, h, n) \
     JOIN members m ON m.project_key = q.p AND m.handle_key = q.h";

/// A send's writes (migrations 0003 and 0009): the recipients' keys, spellings and
/// notification channels, the id, the sender's key, the message's columns, then whether to
/// write the outbox trace too. Prepared once per connection.
const DELIVER: &str = "SELECT mailroom_deliver($1, $2, $3, $4, $5, \
     $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)";

impl PgStore {
    /// Runs `mailroom_deliver` (the only way a strict-mode role puts a copy in place): whether
    /// each recipient got its copy now, in `recipients`' order.
    fn call_deliver(
        &self,
        what: &str,
        recipients: &[Address],
        message: &Message,
        trace: bool,
    ) -> Result<Vec<bool>> {
        let cols = Cols::of(message);
        let id = message.id.to_string();
        let sender = mailbox_key(&message.from);
        let keys: Vec<String> = recipients.iter().map(mailbox_key).collect();
        let spelled: Vec<String> = recipients.iter().map(ToString::to_string).collect();
        let channels: Vec<String> = keys
            .iter()
            .map(|k| notify_channel(&self.schema, k))
            .collect();
        // The copies, the trace, the generation bumps and the notifications are one statement
        // (migration 0003), so one round trip and its own transaction.
        let mut params: Vec<Param<'_>> = vec![
            (&keys, Type::TEXT_ARRAY),
            (&spelled, Type::TEXT_ARRAY),
            (&channels, Type::TEXT_ARRAY),
            (&id, Type::TEXT),
            (&sender, Type::TEXT),
        ];
        params.extend(cols.params());
        params.push((&trace, Type::BOOL));
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let values: Vec<_> = params.iter().map(|(v, _)| *v).collect();
        let rows = self.write_prepared(what, DELIVER, &types, &values)?;
        let fresh: Vec<bool> = match rows.first().map(|r| r.try_get(0)) {
            Some(Ok(fresh)) => fresh,
            _ => vec![],
        };
        // The function answers one flag per recipient; anything else is not this schema.
        if fresh.len() != recipients.len() {
            return Err(Error::store(
                format!("the PostgreSQL server at {}", self.shown),
                crate::Msg(format!(
                    "answered a delivery to {} recipients with {} delivery flags",
                    recipients.len(),
                    fresh.len()
                )),
            ));
        }
        Ok(fresh)
    }
}

/// Moves the copies `($4[n], from $5[n])` of mailbox `$1` to state `$2` at time `$3`, in one
/// statement, and answers the `n` of each copy it moved. Each takes its place in the order of
/// moves in the order given (the sequence drawn in a materialized CTE, row by row), as one
/// statement per copy did; in strict mode the trigger of migration 0009 draws it itself.
const MOVE: &str = "WITH m AS (SELECT u.id, u.from_state, u.n, nextval('moves') AS seq \
     FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS u(id, from_state, n)) \
     UPDATE copies c SET state = $2, moved = m.seq, moved_ns = $3 \
     FROM m WHERE c.mailbox = $1 AND c.id = m.id AND c.state = m.from_state \
     RETURNING m.n";

/// The moves of one `transition` as rounds of indices, each id at most once a round: the first
/// mention of every id, then the second, and so on. One statement can move a row only once, and
/// a copy named twice must be moved by its first mention, as one statement per move did.
fn rounds(moves: &[(MessageId, State)]) -> Vec<Vec<usize>> {
    let mut seen: std::collections::HashMap<MessageId, usize> =
        std::collections::HashMap::with_capacity(moves.len());
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, (id, _)) in moves.iter().enumerate() {
        let k = seen.entry(*id).or_insert(0);
        if rounds.len() <= *k {
            rounds.push(Vec::new());
        }
        if let Some(round) = rounds.get_mut(*k) {
            round.push(i);
        }
        *k += 1;
    }
    rounds
}

impl Mailboxes for PgStore {
    fn deliver(&self, recipient: &Address, message: &Message) -> Result<bool> {
        // One copy without its trace (a correction, HUMAN's copy of a hold request): the
        // caller records the trace it wants.
        let fresh = self.call_deliver(
            "deliver a message",
            std::slice::from_ref(recipient),
            message,
            false,
        )?;
        Ok(fresh.first().copied().unwrap_or(false))
    }

    fn deliver_all(&self, recipients: &[Address], message: &Message) -> Result<Delivery> {
        let fresh = self.call_deliver("confirm the send", recipients, message, true)?;
        Ok(Delivery {
            new: fresh,
            trace_error: None,
        })
    }

    fn record_sent(&self, message: &Message) -> Result<()> {
        let cols = Cols::of(message);
        let id = message.id.to_string();
        let sender = mailbox_key(&message.from);
        self.write("record the sent message", |tx| {
            upsert_trace(tx, &sender, &id, &cols)
        })
    }

    fn claim_key(&self, sender: &Address, k: &str, id: MessageId) -> Result<KeyClaim> {
        let s = mailbox_key(sender);
        let id = id.to_string();
        let first: String = self.write("claim the idempotency key", |tx| {
            if tx.execute_typed(
                "INSERT INTO keys (sender_key, key, id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[(&s, Type::TEXT), (&k, Type::TEXT), (&id, Type::TEXT)],
            )? > 0
            {
                return Ok(id.clone());
            }
            Ok(tx
                .query_typed_one(
                    "SELECT id FROM keys WHERE sender_key = $1 AND key = $2",
                    &[(&s, Type::TEXT), (&k, Type::TEXT)],
                )?
                .get(0))
        })?;
        Ok(if first == id {
            KeyClaim::Claimed
        } else {
            match MessageId::parse(&first) {
                Some(f) => KeyClaim::Existing(f),
                None => KeyClaim::Claimed,
            }
        })
    }

    fn keys(&self, sender: &Address) -> Result<Vec<(String, MessageId)>> {
        let s = mailbox_key(sender);
        let rows = self.read("list idempotency keys", |c| {
            c.query_typed(
                "SELECT key, id FROM keys WHERE sender_key = $1 ORDER BY key",
                &[(&s, Type::TEXT)],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.get("key"), MessageId::parse(r.get("id"))?)))
            .collect())
    }

    fn pending(&self, mailbox: &Address) -> Result<Listing> {
        self.copies(
            "list pending mail",
            mailbox,
            "AND state IN ('unread', 'read') ORDER BY id",
            &[],
        )
    }

    fn find(&self, mailbox: &Address, prefix: &str) -> Result<Vec<Stored>> {
        let prefix = prefix.to_ascii_uppercase();
        if let Some(id) = MessageId::parse(&prefix) {
            return Ok(self.get(mailbox, id)?.into_iter().collect());
        }
        let pending = self.copies(
            "look up a message",
            mailbox,
            "AND state IN ('unread', 'read') AND starts_with(id, $2) ORDER BY id",
            &[(&prefix, Type::TEXT)],
        )?;
        if !pending.messages.is_empty() {
            return Ok(pending.messages);
        }
        Ok(self
            .copies(
                "look up a message",
                mailbox,
                "AND state NOT IN ('unread', 'read') AND starts_with(id, $2) ORDER BY id",
                &[(&prefix, Type::TEXT)],
            )?
            .messages)
    }

    fn get(&self, mailbox: &Address, id: MessageId) -> Result<Option<Stored>> {
        let id = id.to_string();
        Ok(self
            .copies(
                "look up a message",
                mailbox,
                "AND id = $2",
                &[(&id, Type::TEXT)],
            )?
            .messages
            .pop())
    }

    fn get_many(&self, mailbox: &Address, ids: &[MessageId]) -> Result<Vec<Option<Stored>>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let keys: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let found = self.copies(
            "look up messages",
            mailbox,
            "AND id = ANY($2)",
            &[(&keys, Type::TEXT_ARRAY)],
        )?;
        let found: std::collections::HashMap<MessageId, Stored> = found
            .messages
            .into_iter()
            .map(|s| (s.message.id, s))
            .collect();
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    fn state_of(&self, mailbox: &Address, id: MessageId) -> Result<Option<State>> {
        let (m, id) = (mailbox_key(mailbox), id.to_string());
        let row = self.read("look up a message's state", |c| {
            c.query_typed_opt(
                "SELECT state FROM copies WHERE mailbox = $1 AND id = $2",
                &[(&m, Type::TEXT), (&id, Type::TEXT)],
            )
        })?;
        Ok(row.and_then(|r| parse_state(&r.get::<_, String>(0))))
    }

    fn transition(
        &self,
        mailbox: &Address,
        moves: &[(MessageId, State)],
        to: State,
    ) -> Result<Vec<bool>> {
        if moves.is_empty() {
            return Ok(vec![]);
        }
        let m = mailbox_key(mailbox);
        let spelled = mailbox.to_string();
        let to_s = state_str(to);
        let rounds = rounds(moves);
        self.write("move messages", |tx| {
            let now = now_ns();
            let mut out = vec![false; moves.len()];
            for round in &rounds {
                let ids: Vec<String> = round.iter().map(|&i| moves[i].0.to_string()).collect();
                let froms: Vec<&str> = round.iter().map(|&i| state_str(moves[i].1)).collect();
                let rows = tx.query_typed(
                    MOVE,
                    &[
                        (&m, Type::TEXT),
                        (&to_s, Type::TEXT),
                        (&now, Type::INT8),
                        (&ids, Type::TEXT_ARRAY),
                        (&froms, Type::TEXT_ARRAY),
                    ],
                )?;
                for row in rows {
                    let n: i64 = row.try_get(0)?;
                    // `n` is an ordinal of `ids`, 1-based: the statement answers nothing else.
                    let at = usize::try_from(n - 1).ok().and_then(|k| round.get(k));
                    if let Some(&i) = at {
                        out[i] = true;
                    }
                }
            }
            if to == State::Unread && out.iter().any(|&b| b) {
                bump_mailbox(tx, &self.schema, &m, &spelled)?;
            }
            Ok(out)
        })
    }

    fn replace_unread(&self, mailbox: &Address, message: &Message) -> Result<bool> {
        let m = mailbox_key(mailbox);
        let id = message.id.to_string();
        let cols = Cols::of(message);
        self.write("edit a message", |tx| {
            // The row lock: a reader's move out of unread waits for this edit, then sees the
            // new revision (or this edit finds the copy read and does nothing).
            tx.execute_typed(
                                    "INSERT INTO revisions (mailbox, id, revision, sender, recipients, subject, body, kind, priority, date, reply_to, thread, edited, channel) \
                     SELECT mailbox, id, revision, sender, recipients, subject, body, kind, priority, date, reply_to, thread, edited, channel \
                     FROM copies WHERE mailbox = $1 AND id = $2 AND state = 'unread' FOR UPDATE \
                     ON CONFLICT DO NOTHING",
                &[(&m, Type::TEXT), (&id, Type::TEXT)],
            )?;
            let sql = format!(
                "UPDATE copies SET ({MSG_COLS}) = ({}) WHERE mailbox = $1 AND id = $2 AND state = 'unread'",
                msg_placeholders(3)
            );
            let mut params: Vec<Param<'_>> = vec![(&m, Type::TEXT), (&id, Type::TEXT)];
            params.extend(cols.params());
            Ok(tx.execute_typed(&sql, &params)? > 0)
        })
    }

    fn outbox(&self, sender: &Address) -> Result<Vec<Message>> {
        let s = mailbox_key(sender);
        let rows = self.read("list the outbox", |c| {
            c.query_typed(
                &format!("SELECT id, {MSG_COLS} FROM outbox WHERE sender_key = $1 ORDER BY id"),
                &[(&s, Type::TEXT)],
            )
        })?;
        Ok(messages_of(&rows))
    }

    fn recently_archived(
        &self,
        mailbox: &Address,
        limit: usize,
    ) -> Result<Vec<(Stored, Timestamp)>> {
        let m = mailbox_key(mailbox);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.read("list archived mail", |c| {
            c.query_typed(
                &format!(
                    "SELECT {COPY_COLS}, moved_ns FROM copies WHERE mailbox = $1 AND state = 'done' \
                     ORDER BY moved DESC LIMIT $2"
                ),
                &[(&m, Type::TEXT), (&limit, Type::INT8)],
            )
        })?;
        let listing = copies_listing(&mailbox.to_string(), &rows);
        let mut out = Vec::new();
        let mut at = rows.iter().map(|r| r.get::<_, Option<i64>>("moved_ns"));
        for s in listing.messages {
            let when = at
                .next()
                .flatten()
                .and_then(|ns| Timestamp::from_nanosecond(i128::from(ns)).ok())
                .unwrap_or(s.message.date);
            out.push((s, when));
        }
        Ok(out)
    }

    fn everything(&self, mailbox: &Address) -> Result<Listing> {
        self.copies("list a mailbox", mailbox, "ORDER BY id", &[])
    }

    fn set_archived_at(&self, mailbox: &Address, id: MessageId, at: Timestamp) -> Result<bool> {
        let (m, id) = (mailbox_key(mailbox), id.to_string());
        let ns = i64::try_from(at.as_nanosecond()).unwrap_or(i64::MAX);
        // A new place in the order of moves too: `recently_archived` orders by it.
        self.write("set an archive time", |tx| {
            Ok(tx.execute_typed(
                "UPDATE copies SET moved = nextval('moves'), moved_ns = $3 \
                 WHERE mailbox = $1 AND id = $2 AND state = 'done'",
                &[(&m, Type::TEXT), (&id, Type::TEXT), (&ns, Type::INT8)],
            )? > 0)
        })
    }

    fn revisions(&self, mailbox: &Address) -> Result<Revisions> {
        let m = mailbox_key(mailbox);
        let rows = self.read("list earlier revisions", |c| {
            c.query_typed(
                &format!(
                    "SELECT id, {MSG_COLS} FROM revisions WHERE mailbox = $1 ORDER BY id, revision"
                ),
                &[(&m, Type::TEXT)],
            )
        })?;
        let owner = mailbox.to_string();
        let mut out = Revisions::default();
        for row in &rows {
            match message(row) {
                Ok(m) => out.messages.push(m),
                Err(problem) => out
                    .damaged
                    .push(damaged("revisions", &owner, row, None, problem)),
            }
        }
        Ok(out)
    }

    fn keep_revision(&self, mailbox: &Address, message: &Message) -> Result<bool> {
        let m = mailbox_key(mailbox);
        let id = message.id.to_string();
        let cols = Cols::of(message);
        // A revision belongs to a copy in this mailbox, from the same sender (`sender` is
        // the first of the message's columns: $3).
        let sql = format!(
            "INSERT INTO revisions (mailbox, id, {MSG_COLS}) SELECT $1, $2, {} \
             WHERE EXISTS (SELECT 1 FROM copies WHERE mailbox = $1 AND id = $2 AND sender = $3) \
             ON CONFLICT DO NOTHING",
            msg_placeholders(3)
        );
        self.write("keep an earlier revision", |tx| {
            let mut params: Vec<Param<'_>> = vec![(&m, Type::TEXT), (&id, Type::TEXT)];
            params.extend(cols.params());
            Ok(tx.execute_typed(&sql, &params)? > 0)
        })
    }

    fn sent(&self, sender: &Address, id: MessageId) -> Result<Option<Message>> {
        let (s, id) = (mailbox_key(sender), id.to_string());
        let rows = self.read("look up a sent message", |c| {
            c.query_typed(
                &format!("SELECT id, {MSG_COLS} FROM outbox WHERE sender_key = $1 AND id = $2"),
                &[(&s, Type::TEXT), (&id, Type::TEXT)],
            )
        })?;
        Ok(messages_of(&rows).pop())
    }

    fn states(&self, copies: &[(&Address, MessageId)]) -> Result<Vec<Option<State>>> {
        if copies.is_empty() {
            return Ok(vec![]);
        }
        let keys: Vec<String> = copies.iter().map(|(m, _)| mailbox_key(m)).collect();
        let ids: Vec<String> = copies.iter().map(|(_, id)| id.to_string()).collect();
        let rows = self.read("look up messages' states", |c| {
            c.query_typed(
                "SELECT q.n, c.state FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(mailbox, id, n) \
                 JOIN copies c ON c.mailbox = q.mailbox AND c.id = q.id",
                &[(&keys, Type::TEXT_ARRAY), (&ids, Type::TEXT_ARRAY)],
            )
        })?;
        let mut out = vec![None; copies.len()];
        for row in &rows {
            let n: i64 = row.get(0);
            let state: String = row.get(1);
            // `n` is an ordinal of the copies asked for, 1-based.
            if let Some(slot) = usize::try_from(n - 1).ok().and_then(|k| out.get_mut(k)) {
                *slot = parse_state(&state);
            }
        }
        Ok(out)
    }

    fn search(&self, mailbox: &Address, query: &str) -> Result<Listing> {
        let mut listing = match tsquery(query) {
            Some(q) => self.copies(
                "search a mailbox",
                mailbox,
                "AND words @@ to_tsquery('simple', $2) ORDER BY id",
                &[(&q, Type::TEXT)],
            )?,
            None => self.everything(mailbox)?,
        };
        listing
            .messages
            .retain(|s| matches_query(&s.message, query));
        Ok(listing)
    }

    fn search_sent(&self, sender: &Address, query: &str) -> Result<Vec<Message>> {
        let Some(q) = tsquery(query) else {
            let mut all = self.outbox(sender)?;
            all.retain(|m| matches_query(m, query));
            return Ok(all);
        };
        let s = mailbox_key(sender);
        let rows = self.read("search the outbox", |c| {
            c.query_typed(
                &format!(
                    "SELECT id, {MSG_COLS} FROM outbox WHERE sender_key = $1 \
                     AND words @@ to_tsquery('simple', $2) ORDER BY id"
                ),
                &[(&s, Type::TEXT), (&q, Type::TEXT)],
            )
        })?;
        let mut out = messages_of(&rows);
        out.retain(|m| matches_query(m, query));
        Ok(out)
    }
}

fn upsert_trace(
    tx: &mut impl GenericClient,
    sender: &str,
    id: &str,
    cols: &Cols<'_>,
) -> std::result::Result<(), postgres::Error> {
    let sql = format!(
        "INSERT INTO outbox (sender_key, id, {MSG_COLS}) VALUES ($1, $2, {}) \
         ON CONFLICT (sender_key, id) DO UPDATE SET ({MSG_COLS}) = ({})",
        msg_placeholders(3),
        msg_placeholders(3)
    );
    let mut params: Vec<Param<'_>> = vec![(&sender, Type::TEXT), (&id, Type::TEXT)];
    params.extend(cols.params());
    tx.execute_typed(&sql, &params)?;
    Ok(())
}

impl PgStore {
    fn entries_where(
        &self,
        what: &str,
        channel: &ChannelRef,
        filter: &str,
        extra: &[Param<'_>],
    ) -> Result<Listing> {
        let (p, c) = (key(&channel.project), key(&channel.name));
        let sql = format!(
            "SELECT {ENTRY_COLS} FROM entries e WHERE project_key = $1 AND channel_key = $2 {filter}"
        );
        let rows = self.read(what, |cl| {
            let mut params: Vec<Param<'_>> = vec![(&p, Type::TEXT), (&c, Type::TEXT)];
            params.extend_from_slice(extra);
            cl.query_typed(&sql, &params)
        })?;
        Ok(entries_listing(&channel.to_string(), &rows))
    }
}

impl Channels for PgStore {
    fn append(&self, channel: &ChannelRef, message: &Message) -> Result<bool> {
        let (p, c) = (key(&channel.project), key(&channel.name));
        let name = channel.name.as_str();
        let id = message.id.to_string();
        let cols = Cols::of(message);
        let notify = channel
            .is_broadcast()
            .then(|| notify_channel(&self.schema, &broadcast_key(&channel.project)));
        // The entry, the channel's listing and count, and the wake-up are one function
        // (migration 0009), the only way a strict-mode role posts.
        let sql = format!(
            "SELECT mailroom_post($1, $2, $3, $4, {}, $17)",
            msg_placeholders(5)
        );
        self.write("post to a channel", |tx| {
            let mut params: Vec<Param<'_>> = vec![
                (&p, Type::TEXT),
                (&c, Type::TEXT),
                (&name, Type::TEXT),
                (&id, Type::TEXT),
            ];
            params.extend(cols.params());
            params.push((&notify, Type::TEXT));
            Ok(tx.query_typed_one(&sql, &params)?.get::<_, bool>(0))
        })
    }

    fn entries(&self, channel: &ChannelRef, retracted: bool) -> Result<Listing> {
        self.entries_where(
            "list a channel",
            channel,
            "AND (NOT retracted OR $3) ORDER BY id",
            &[(&retracted, Type::BOOL)],
        )
    }

    fn unseen(&self, channel: &ChannelRef, reader: &Name) -> Result<Listing> {
        let r = key(reader);
        self.entries_where(
            "list a channel",
            channel,
            "AND NOT retracted AND NOT EXISTS (SELECT 1 FROM seen s WHERE s.project_key = e.project_key \
             AND s.channel_key = e.channel_key AND s.reader_key = $3 AND s.id = e.id) ORDER BY id",
            &[(&r, Type::TEXT)],
        )
    }

    fn seen(&self, channel: &ChannelRef, reader: &Name) -> Result<Vec<MessageId>> {
        let (p, c, r) = (key(&channel.project), key(&channel.name), key(reader));
        let rows = self.read("list seen marks", |cl| {
            cl.query_typed(
                "SELECT id FROM seen WHERE project_key = $1 AND channel_key = $2 AND reader_key = $3 ORDER BY id",
                &[(&p, Type::TEXT), (&c, Type::TEXT), (&r, Type::TEXT)],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|row| MessageId::parse(&row.get::<_, String>(0)))
            .collect())
    }

    fn mark_seen(
        &self,
        channel: &ChannelRef,
        reader: &Name,
        ids: &[MessageId],
    ) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let (p, c, r) = (key(&channel.project), key(&channel.name), key(reader));
        let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let rows = self.write("mark entries seen", |tx| {
            tx.query_typed(
                "INSERT INTO seen (project_key, channel_key, reader_key, id) \
                 SELECT $1, $2, $3, i FROM unnest($4::text[]) AS i ON CONFLICT DO NOTHING RETURNING id",
                &[
                    (&p, Type::TEXT),
                    (&c, Type::TEXT),
                    (&r, Type::TEXT),
                    (&list, Type::TEXT_ARRAY),
                ],
            )
        })?;
        let mut marked: std::collections::HashSet<String> =
            rows.iter().map(|row| row.get::<_, String>(0)).collect();
        Ok(list.iter().map(|id| marked.remove(id)).collect())
    }

    fn retract(&self, channel: &ChannelRef, id: MessageId) -> Result<bool> {
        let (p, c, id) = (key(&channel.project), key(&channel.name), id.to_string());
        // Entries are append-only to a strict-mode role: the flag is set by mailroom's function
        // (migration 0009), which checks whose broadcast it is.
        let row = self.write("retract an entry", |tx| {
            tx.query_typed_one(
                "SELECT mailroom_retract($1, $2, $3)",
                &[(&p, Type::TEXT), (&c, Type::TEXT), (&id, Type::TEXT)],
            )
        })?;
        Ok(row.get(0))
    }

    fn channels(&self, project: &Name) -> Result<Vec<Name>> {
        let p = key(project);
        let rows = self.read("list channels", |c| {
            c.query_typed(
                "SELECT name FROM channels WHERE project_key = $1 ORDER BY key",
                &[(&p, Type::TEXT)],
            )
        })?;
        rows.iter().map(|r| name_of(r.get(0))).collect()
    }

    fn search_entries(&self, project: &Name, query: &str) -> Result<Listing> {
        let p = key(project);
        let q = tsquery(query);
        let rows = self.read("search channels", |c| match &q {
            Some(q) => c.query_typed(
                &format!(
                    "SELECT {ENTRY_COLS} FROM entries WHERE project_key = $1 AND NOT retracted \
                     AND words @@ to_tsquery('simple', $2) ORDER BY channel_key, id"
                ),
                &[(&p, Type::TEXT), (q, Type::TEXT)],
            ),
            None => c.query_typed(
                &format!(
                    "SELECT {ENTRY_COLS} FROM entries WHERE project_key = $1 AND NOT retracted ORDER BY channel_key, id"
                ),
                &[(&p, Type::TEXT)],
            ),
        })?;
        let mut listing = entries_listing(project.as_str(), &rows);
        listing
            .messages
            .retain(|s| matches_query(&s.message, query));
        Ok(listing)
    }

    fn entry(&self, channel: &ChannelRef, id: MessageId) -> Result<Option<Stored>> {
        let id = id.to_string();
        Ok(self
            .entries_where(
                "look up an entry",
                channel,
                "AND id = $3",
                &[(&id, Type::TEXT)],
            )?
            .messages
            .pop())
    }
}

impl Sessions for PgStore {
    fn watch(&self, mailbox: &Address) -> Result<Box<dyn Watch + Send>> {
        let mut channels = vec![notify_channel(&self.schema, &mailbox_key(mailbox))];
        if let Some(p) = mailbox.project() {
            channels.push(notify_channel(&self.schema, &broadcast_key(p)));
        }
        Ok(Box::new(crate::watch::PgWatch::start(self, channels)?))
    }

    fn change_token(&self, mailbox: &Address) -> Result<String> {
        let m = mailbox_key(mailbox);
        let p = mailbox.project().map(key);
        let row = self.read("read the change token", |c| {
            c.query_typed_one(
                "SELECT (SELECT generation FROM mailboxes WHERE key = $1) \
                 + (SELECT coalesce(sum(generation), 0)::bigint FROM mailbox_counts WHERE key = $1), \
                 (SELECT generation FROM channels WHERE project_key = $2 AND key = 'all')",
                &[(&m, Type::TEXT), (&p, Type::TEXT)],
            )
        })?;
        let part = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |g| g.to_string());
        let mut token = format!("g{}", part(row.get(0)));
        if p.is_some() {
            token.push(':');
            token.push_str(&part(row.get(1)));
        }
        Ok(token)
    }

    fn last_injected(&self, mailbox: &Address) -> Result<Option<String>> {
        let m = mailbox_key(mailbox);
        let row = self.read("read the injection mark", |c| {
            c.query_typed_opt(
                "SELECT injected FROM mailboxes WHERE key = $1",
                &[(&m, Type::TEXT)],
            )
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }

    fn set_last_injected(&self, mailbox: &Address, token: &str) -> Result<()> {
        let m = mailbox_key(mailbox);
        let spelled = mailbox.to_string();
        // Mailbox rows change only through mailroom's functions (migration 0009).
        self.write("save the injection mark", |tx| {
            tx.execute_typed(
                "SELECT mailroom_mark_injected($1, $2, $3)",
                &[
                    (&m, Type::TEXT),
                    (&spelled, Type::TEXT),
                    (&token, Type::TEXT),
                ],
            )
        })?;
        Ok(())
    }

    fn claim_origin(&self, identity: &Address, path: &str) -> Result<OriginClaim> {
        let m = mailbox_key(identity);
        let spelled = identity.to_string();
        // An identity has a mailbox once mail was delivered to it or sent by it (as in the
        // file store, where a send makes the sender's mailbox for its outbox): a sender that
        // never received any has no `mailboxes` row yet, and gets one with its claim
        // (`mailroom_claim_origin`, migration 0009).
        let row = self.write("record the checkout of an identity", |tx| {
            tx.query_typed_one(
                "SELECT mailroom_claim_origin($1, $2, $3)",
                &[
                    (&m, Type::TEXT),
                    (&spelled, Type::TEXT),
                    (&path, Type::TEXT),
                ],
            )
        })?;
        Ok(match row.get::<_, Option<String>>(0) {
            Some(first) if first != path => OriginClaim::Other(first),
            _ => OriginClaim::Same,
        })
    }

    fn origin(&self, identity: &Address) -> Result<Option<String>> {
        let m = mailbox_key(identity);
        let row = self.read("read the checkout of an identity", |c| {
            c.query_typed_opt(
                "SELECT origin FROM mailboxes WHERE key = $1",
                &[(&m, Type::TEXT)],
            )
        })?;
        Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
    }
}
