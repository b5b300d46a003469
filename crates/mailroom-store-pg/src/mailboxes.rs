//! The `Mailboxes` role: copies, their states, the outbox and idempotency keys.

use jiff::Timestamp;
use mailroom_core::store::{Delivery, KeyClaim, Mailboxes, Revisions, matches_query};
use mailroom_core::{Address, Error, Listing, Message, MessageId, Result, State, Stored};
use postgres::GenericClient;
use postgres::types::Type;

use crate::PgStore;
use crate::codec::{
    Cols, MSG_COLS, damaged, mailbox_key, message, msg_placeholders, parse_state, state_str,
};
use crate::rows::{
    COPY_COLS, Param, bump_mailbox, copies_listing, messages_of, notify_channel, now_ns, tsquery,
};

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
