-- mailroom schema, version 6: each connection claims a slot of its own, and a send does less.
--
-- Version 5 took a connection's slot (its row in `mailbox_counts`, its wake lock) from its
-- backend pid modulo 8: of 8 connections, two often had the same slot, and then waited for each
-- other's commit on the counts row and notified each other as if the other were a waiter. Now a
-- connection claims the lowest slot no other connection of this schema holds (a session-level
-- advisory lock, (1835100523, hashtext(schema) # slot), held until the connection ends) the
-- first time it needs one, and keeps it in the session setting `mailroom.slot`. With more than
-- 8 connections at once, the ninth and later fall back to pid modulo 8, as before.
--
-- Every guarantee of version 5 is kept, because none of them ever depended on two connections
-- having different slots: the change token is still `mailboxes.generation` plus the sum of the
-- mailbox's counts, and grows by one with every delivery committed; a waiter still holds all 8
-- wake locks in share mode, so a send finds its own slot's taken whichever slot it is, and
-- notifies (version 4's rule). Distinct slots only remove needless waits and notifications.
--
-- A claim made in a transaction that then rolls back loses the setting but not the lock (a
-- session lock outlives its transaction): the next claim takes the lowest slot free or already
-- this connection's (advisory locks are re-entrant), so it is usually the same one, and at
-- worst the connection holds one more slot until it ends.
--
-- The delivery does less: the counts row is bumped with an UPDATE first, and only a mailbox
-- this slot never counted goes through the two inserts (its `mailboxes` row, its counts row);
-- a send to one recipient runs no query to order its recipients.
--
-- No new privilege: advisory locks and a custom setting need none, and functions are executable
-- by PUBLIC unless the operator revoked that.

CREATE FUNCTION mailroom_slot() RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    s integer := nullif(current_setting('mailroom.slot', true), '')::integer;
    n integer;
BEGIN
    IF s IS NOT NULL THEN
        RETURN s;
    END IF;
    FOR n IN 0..7 LOOP
        IF pg_try_advisory_lock(1835100523, hashtext(current_schema()) # n) THEN
            s := n;
            EXIT;
        END IF;
    END LOOP;
    s := coalesce(s, pg_backend_pid() % 8);
    PERFORM set_config('mailroom.slot', s::text, false);
    RETURN s;
END
$$;

CREATE OR REPLACE FUNCTION mailroom_deliver(
    p_keys       text[],  -- each recipient's mailbox key, in the caller's order
    p_spelled    text[],  -- each recipient's address as first spelled
    p_channels   text[],  -- each recipient's notification channel
    p_id         text,
    p_sender_key text,
    p_sender     text,
    p_recipients text[],
    p_subject    text,
    p_body       text,
    p_kind       text,
    p_priority   text,
    p_date       text,
    p_reply_to   text,
    p_thread     text,
    p_revision   bigint,
    p_edited     text,
    p_channel    text
) RETURNS boolean[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    -- Whether this call put the copy in place, for each recipient in the caller's order (a key
    -- named twice: the first time only).
    fresh boolean[] := array_fill(false, ARRAY[cardinality(p_keys)]);
    -- The recipients' positions in key order, so that two sends to the same recipients lock
    -- their rows in one order.
    ordered bigint[];
    i bigint;
    previous text := NULL;
    -- This connection's slot: its counters and wake locks (claimed by its first change).
    my_slot integer := coalesce(nullif(current_setting('mailroom.slot', true), '')::integer,
                                mailroom_slot());
BEGIN
    IF cardinality(p_keys) = 1 THEN
        ordered := ARRAY[1];
    ELSE
        SELECT array_agg(n ORDER BY k COLLATE "C", n) INTO ordered
        FROM unnest(p_keys) WITH ORDINALITY AS u(k, n);
    END IF;
    FOREACH i IN ARRAY ordered LOOP
        CONTINUE WHEN p_keys[i] IS NOT DISTINCT FROM previous;
        previous := p_keys[i];
        INSERT INTO copies (mailbox, id, state, sender, recipients, subject, body, kind, priority,
                            date, reply_to, thread, revision, edited, channel)
        VALUES (p_keys[i], p_id, 'unread', p_sender, p_recipients, p_subject, p_body, p_kind,
                p_priority, p_date, p_reply_to, p_thread, p_revision, p_edited, p_channel)
        ON CONFLICT DO NOTHING;
        fresh[i] := FOUND;
    END LOOP;
    INSERT INTO outbox (sender_key, id, sender, recipients, subject, body, kind, priority, date,
                        reply_to, thread, revision, edited, channel)
    VALUES (p_sender_key, p_id, p_sender, p_recipients, p_subject, p_body, p_kind, p_priority,
            p_date, p_reply_to, p_thread, p_revision, p_edited, p_channel)
    ON CONFLICT (sender_key, id) DO UPDATE SET
        (sender, recipients, subject, body, kind, priority, date, reply_to, thread, revision,
         edited, channel)
        = (EXCLUDED.sender, EXCLUDED.recipients, EXCLUDED.subject, EXCLUDED.body, EXCLUDED.kind,
           EXCLUDED.priority, EXCLUDED.date, EXCLUDED.reply_to, EXCLUDED.thread,
           EXCLUDED.revision, EXCLUDED.edited, EXCLUDED.channel);
    -- The counters last, so that two sends to one recipient from connections of the same slot
    -- wait on its row only for the rest of this statement and its commit. A counts row is only
    -- ever made together with its mailbox's row, so when the bump finds one the mailbox's row
    -- is there.
    FOREACH i IN ARRAY ordered LOOP
        CONTINUE WHEN NOT fresh[i];
        UPDATE mailbox_counts SET generation = generation + 1
        WHERE key = p_keys[i] AND slot = my_slot;
        IF NOT FOUND THEN
            INSERT INTO mailboxes (key, address) VALUES (p_keys[i], p_spelled[i])
            ON CONFLICT (key) DO NOTHING;
            INSERT INTO mailbox_counts AS c (key, slot, generation) VALUES (p_keys[i], my_slot, 1)
            ON CONFLICT (key, slot) DO UPDATE SET generation = c.generation + 1;
        END IF;
        -- A waiter holds this lock shared while it listens: a send notifies only then.
        IF NOT pg_try_advisory_xact_lock(1835100524 + my_slot, hashtext(p_channels[i])) THEN
            PERFORM pg_notify(p_channels[i], '');
        END IF;
    END LOOP;
    RETURN fresh;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION mailroom_slot() SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
