//! The `Channels` role: entries, seen marks and retractions.

use mailroom_core::message::ChannelRef;
use mailroom_core::store::{Channels, matches_query};
use mailroom_core::{Listing, Message, MessageId, Name, Result, Stored};
use postgres::types::Type;

use crate::PgStore;
use crate::codec::{Cols, key, msg_placeholders};
use crate::rows::{
    ENTRY_COLS, Param, broadcast_key, entries_listing, name_of, notify_channel, tsquery,
};

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
