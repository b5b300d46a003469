-- mailroom schema, version 4: a send notifies a mailbox only while someone waits on it.
--
-- A transaction that calls pg_notify holds one lock for the whole database from just before
-- its commit until the commit is flushed to disk, so every send used to wait for the previous
-- send's flush: concurrent sends could never share a flush, and the WAL flush per send bounded
-- the throughput of the whole server. Now a waiter (`wait`, `watch`: src/watch.rs) holds an
-- advisory lock in share mode on each channel it listens on (taken before LISTEN, for as long
-- as it listens), and a send takes that lock exclusively and without waiting: when it gets it,
-- nobody listens and it does not notify; a waiter that starts meanwhile waits for the send's
-- commit before it listens and looks, so it sees the copy. When the lock is taken (by a waiter,
-- or by another send to the same mailbox in flight) the send notifies as before. The lock's key
-- is (1835100524, hashtext(channel)): a collision of two channels only costs a notification
-- nobody needed.
--
-- The function is otherwise version 3's.
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
    i bigint;
    previous text := NULL;
BEGIN
    -- In key order, so that two sends to the same recipients lock their rows in one order.
    FOR i IN SELECT n FROM unnest(p_keys) WITH ORDINALITY AS u(k, n) ORDER BY k COLLATE "C", n LOOP
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
    -- The mailbox rows last, so that concurrent sends to one recipient wait on its row only
    -- for the rest of this statement and its commit.
    FOR i IN SELECT n FROM unnest(p_keys) WITH ORDINALITY AS u(k, n) ORDER BY k COLLATE "C", n LOOP
        CONTINUE WHEN NOT fresh[i];
        INSERT INTO mailboxes AS m (key, address, generation) VALUES (p_keys[i], p_spelled[i], 1)
        ON CONFLICT (key) DO UPDATE SET generation = m.generation + 1;
        -- A waiter holds this lock shared while it listens: a send notifies only then.
        IF NOT pg_try_advisory_xact_lock(1835100524, hashtext(p_channels[i])) THEN
            PERFORM pg_notify(p_channels[i], '');
        END IF;
    END LOOP;
    RETURN fresh;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
