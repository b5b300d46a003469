-- mailroom schema, version 5: concurrent sends to one mailbox no longer wait for each other.
--
-- Each delivery added one to its mailbox's row in `mailboxes` (the change token), and that row
-- stayed locked until the commit was flushed: sends to one recipient committed one after the
-- other, one WAL flush each. The count is now kept in up to 8 rows per mailbox
-- (`mailbox_counts`), one per slot (the connection's backend pid modulo 8), and the token is
-- `mailboxes.generation` (what was counted before this version) plus their sum: it still grows
-- by one with every delivery committed, and only sends from connections of the same slot wait
-- for each other. The wake lock of version 4 is split the same way, so that two sends in
-- flight to one mailbox do not take each other for a waiter: a waiter holds all 8 in share
-- mode, a send tries its slot's.
--
-- Whoever may write `mailboxes` may write `mailbox_counts` (the grants of `mailroom role`,
-- made before this version, name the tables that existed then), and strict mode lets every
-- role count a delivery, as it lets every role bump a mailbox's row.

CREATE TABLE mailbox_counts (
    key        text COLLATE "C" NOT NULL,
    slot       integer NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (key, slot)
);

ALTER TABLE mailbox_counts ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON mailbox_counts FOR SELECT USING (true);
CREATE POLICY count ON mailbox_counts FOR INSERT WITH CHECK (true);
CREATE POLICY bump ON mailbox_counts FOR UPDATE USING (true) WITH CHECK (true);

DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT a.grantee, a.privilege_type
             FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'mailboxes'::regclass AND a.grantee <> c.relowner
               AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE')
    LOOP
        IF g.grantee = 0 THEN
            EXECUTE format('GRANT %s ON mailbox_counts TO PUBLIC', g.privilege_type);
        ELSE
            EXECUTE format('GRANT %s ON mailbox_counts TO %s', g.privilege_type, g.grantee::regrole);
        END IF;
    END LOOP;
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
    i bigint;
    previous text := NULL;
    -- This connection's slot: its counters and wake locks.
    my_slot integer := pg_backend_pid() % 8;
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
    -- The counters last, so that two sends to one recipient from connections of the same slot
    -- wait on its row only for the rest of this statement and its commit.
    FOR i IN SELECT n FROM unnest(p_keys) WITH ORDINALITY AS u(k, n) ORDER BY k COLLATE "C", n LOOP
        CONTINUE WHEN NOT fresh[i];
        INSERT INTO mailboxes (key, address) VALUES (p_keys[i], p_spelled[i])
        ON CONFLICT (key) DO NOTHING;
        INSERT INTO mailbox_counts AS c (key, slot, generation) VALUES (p_keys[i], my_slot, 1)
        ON CONFLICT (key, slot) DO UPDATE SET generation = c.generation + 1;
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
    EXECUTE format('ALTER FUNCTION mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
