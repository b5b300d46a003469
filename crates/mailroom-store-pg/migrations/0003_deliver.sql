-- mailroom schema, version 3: a send in one round trip. `mailroom_deliver` does what a send
-- writes (each recipient's copy unless it has one, the sender's outbox trace, the generation
-- bump and notification of each mailbox that got a new copy) as one statement, which is its
-- own transaction. It decides nothing: the checks were made before it is called, and every
-- condition it keeps is the same `ON CONFLICT` as before. It runs as its caller
-- (SECURITY INVOKER), so strict mode's row-level security applies to each write, and its
-- statements are planned once per connection.
CREATE FUNCTION mailroom_deliver(
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
        PERFORM pg_notify(p_channels[i], '');
    END LOOP;
    RETURN fresh;
END
$$;

-- It finds its tables in this schema only (as the policy functions of version 2 do).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
