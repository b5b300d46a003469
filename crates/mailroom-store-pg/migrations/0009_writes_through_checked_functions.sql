-- mailroom schema: in strict mode, what a role writes is what mailroom's own operations write,
-- checked by the database.
--
-- Before this version a role could insert any copy naming itself as the sender (to a roster
-- project it may not write into, with recipients nobody got, a far-off date, another message's
-- id, or into another thread), post into any project's channels, rewrite or backdate entries,
-- and write the counters and mailbox rows every mailbox's hooks and `wait` rely on (a change
-- token lowered, another's mailbox renamed or re-keyed, a channel renamed or reset). Now:
--
-- - copies are delivered, entries posted and retracted, counters bumped and a mailbox's marks
--   written only by the functions below. They run as the tables' owner (SECURITY DEFINER, their
--   `search_path` pinned) and check their arguments against the role that called them: a copy
--   is one as a send delivers it, an entry one as a post appends it;
-- - a role keeps direct INSERT only on revisions, keys and seen marks, INSERT and UPDATE on its
--   outbox traces and UPDATE on copies, each narrowed by the policies and the triggers below to
--   what mailroom's own operations do; no role of an agent updates or deletes an entry, a
--   channel, a mailbox row or a counter, and none deletes or truncates anything.
--
-- The owner (the operator: an export, doctor's repairs, an import) is checked by none of this.
-- Grants other roles held on mailroom's tables beyond the above are taken back.

-- The role a statement acts for. Inside a SECURITY DEFINER function `current_user` is the
-- owner; the caller is the role set with SET ROLE, else the one that logged in.
CREATE FUNCTION mailroom_caller() RETURNS name
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce(nullif(current_setting('role'), 'none'), session_user)::name $$;

-- Whether the caller is held to none of strict mode's rules, as row-level security holds it
-- to none: a superuser, a role that bypasses row-level security, or the tables' owner.
CREATE FUNCTION mailroom_caller_exempt() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT coalesce((SELECT r.rolsuper OR r.rolbypassrls OR r.oid = c.relowner
                           FROM pg_roles r, pg_class c
                           WHERE r.rolname = mailroom_caller() AND c.oid = 'copies'::regclass), false) $$;

-- Whether the caller may act as the mailbox `k`.
CREATE FUNCTION mailroom_caller_is(k text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT EXISTS (SELECT 1 FROM identities WHERE role = mailroom_caller() AND mailbox = lower(k)) $$;

-- Whether the caller acts as some member of project `p` (or as HUMAN).
CREATE FUNCTION mailroom_caller_in(p text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT EXISTS (SELECT 1 FROM identities WHERE role = mailroom_caller()
                         AND (split_part(mailbox, '@', 2) = lower(p) OR mailbox = 'human')) $$;

-- Whether a timestamp a role writes is the present, as the server's clock reads it (within the
-- few minutes two machines' clocks may differ by).
CREATE FUNCTION mailroom_is_now(t text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT abs(extract(epoch FROM (t::timestamptz - now()))) <= 300 $$;

-- Whether `sender` may write into project `p`: HUMAN and the project's own identities always,
-- others only into a project that is not `roster` (a send's rule).
CREATE FUNCTION mailroom_may_write_into(sender text, p text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT lower(sender) = 'human' OR split_part(lower(sender), '@', 2) = lower(p)
                 OR EXISTS (SELECT 1 FROM projects WHERE key = lower(p) AND policy <> 'roster') $$;

-- Whether the mailbox `k` may send and be sent to: HUMAN, or an active member of its project
-- (a send's rule: an inactive member neither sends nor is sent to, and a role adds no member).
CREATE FUNCTION mailroom_active(k text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT lower(k) = 'human' OR EXISTS (SELECT 1 FROM members
                 WHERE project_key = split_part(lower(k), '@', 2)
                   AND handle_key = split_part(lower(k), '@', 1) AND status = 'active') $$;

-- Refuses, in the words a role's refusal is reported with.
CREATE FUNCTION mailroom_refuse(what text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'strict mode: %', what USING ERRCODE = 'insufficient_privilege';
END
$$;

-- A copy a role delivers is one as a send makes it: from one of its identities, an active
-- member of its project, to the message's own recipients (and HUMAN for a hold request), each
-- an active member of a project the sender may write into, under an id no other sender's copy has, dated now, at revision 1 and
-- never edited, starting a thread or replying in the thread of a message the role has. A
-- keyed send's retry delivers its outbox trace as it was written.
CREATE FUNCTION mailroom_check_delivery(
    p_keys text[], p_spelled text[], p_id text, p_sender_key text, p_sender text,
    p_recipients text[], p_kind text, p_date text, p_reply_to text, p_thread text,
    p_revision bigint, p_edited text, p_channel text, p_trace boolean
) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    k text;
    i integer;
    retry boolean;
BEGIN
    IF p_sender_key IS DISTINCT FROM lower(p_sender) OR NOT mailroom_caller_is(p_sender_key) THEN
        PERFORM mailroom_refuse('a role sends only as its own identities');
    END IF;
    IF NOT mailroom_active(p_sender_key) THEN
        PERFORM mailroom_refuse('a role sends only as an active member of its project');
    END IF;
    IF cardinality(p_keys) IS DISTINCT FROM cardinality(p_spelled) THEN
        PERFORM mailroom_refuse('each recipient needs its key and spelling');
    END IF;
    FOR i IN 1 .. coalesce(cardinality(p_keys), 0) LOOP
        k := p_keys[i];
        IF k IS DISTINCT FROM lower(p_spelled[i]) THEN
            PERFORM mailroom_refuse('a mailbox key is its address in lower case');
        END IF;
        IF NOT (EXISTS (SELECT 1 FROM unnest(p_recipients) r WHERE lower(r) = k)
                OR (k = 'human' AND p_kind = 'HOLD_REQUEST')) THEN
            PERFORM mailroom_refuse('a copy goes only to the message''s own recipients');
        END IF;
        IF k <> 'human' THEN
            -- A send goes to active members only; one copy (a correction, HUMAN's copy of a
            -- hold request) to a member whatever its status since.
            IF NOT EXISTS (SELECT 1 FROM members WHERE project_key = split_part(k, '@', 2)
                           AND handle_key = split_part(k, '@', 1))
               OR (p_trace AND NOT mailroom_active(k)) THEN
                PERFORM mailroom_refuse('a role sends only to active members of a project''s roster');
            END IF;
            IF NOT mailroom_may_write_into(p_sender_key, split_part(k, '@', 2)) THEN
                PERFORM mailroom_refuse('a roster project takes mail only from its own members and HUMAN');
            END IF;
        END IF;
    END LOOP;
    IF p_trace AND EXISTS (SELECT 1 FROM unnest(p_recipients) r WHERE NOT lower(r) = ANY (p_keys)) THEN
        PERFORM mailroom_refuse('a message names only the recipients it is delivered to');
    END IF;
    IF p_channel IS NOT NULL AND NOT (p_keys = ARRAY['human'] AND p_kind = 'HOLD_REQUEST') THEN
        PERFORM mailroom_refuse('only HUMAN''s copy of a hold request posted to a channel names it');
    END IF;
    IF EXISTS (SELECT 1 FROM copies WHERE id = p_id AND lower(sender) <> p_sender_key) THEN
        PERFORM mailroom_refuse('a message''s id is its own');
    END IF;
    retry := EXISTS (SELECT 1 FROM outbox o WHERE o.sender_key = p_sender_key AND o.id = p_id
                     AND o.date = p_date AND o.thread = p_thread
                     AND o.reply_to IS NOT DISTINCT FROM p_reply_to
                     AND o.revision = p_revision AND o.edited IS NOT DISTINCT FROM p_edited);
    IF retry THEN
        RETURN;
    END IF;
    IF p_revision <> 1 OR p_edited IS NOT NULL THEN
        PERFORM mailroom_refuse('a copy is delivered as its message''s first revision');
    END IF;
    IF NOT mailroom_is_now(p_date) THEN
        PERFORM mailroom_refuse('a message is dated when it is sent');
    END IF;
    IF p_reply_to IS NULL THEN
        IF p_thread IS DISTINCT FROM p_id THEN
            PERFORM mailroom_refuse('a message that replies to nothing starts its own thread');
        END IF;
    ELSIF NOT (
        EXISTS (SELECT 1 FROM copies c WHERE c.id = p_reply_to AND c.thread = p_thread
                AND (mailroom_caller_is(c.mailbox) OR mailroom_caller_is(c.sender)))
        OR EXISTS (SELECT 1 FROM outbox o WHERE o.id = p_reply_to AND o.thread = p_thread
                   AND mailroom_caller_is(o.sender_key))
        OR EXISTS (SELECT 1 FROM entries e WHERE e.id = p_reply_to AND e.thread = p_thread
                   AND mailroom_caller_in(e.project_key))) THEN
        PERFORM mailroom_refuse('a reply answers a message its sender has, in that message''s thread');
    END IF;
END
$$;

-- Version 6's delivery, checked, run as the owner, and with the outbox trace optional (a
-- correction and HUMAN's copy of a hold request are one copy each, their traces the
-- caller's). The version-6 function is dropped: a binary that called it refuses this schema.
DROP FUNCTION mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text);
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
    p_channel    text,
    p_trace      boolean  -- whether to write the sender's outbox trace too
) RETURNS boolean[]
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
DECLARE
    fresh boolean[] := array_fill(false, ARRAY[cardinality(p_keys)]);
    ordered bigint[];
    i bigint;
    previous text := NULL;
    my_slot integer := coalesce(nullif(current_setting('mailroom.slot', true), '')::integer,
                                mailroom_slot());
BEGIN
    IF NOT mailroom_caller_exempt() THEN
        PERFORM mailroom_check_delivery(p_keys, p_spelled, p_id, p_sender_key, p_sender,
                                        p_recipients, p_kind, p_date, p_reply_to, p_thread,
                                        p_revision, p_edited, p_channel, p_trace);
    END IF;
    IF cardinality(p_keys) = 1 THEN
        ordered := ARRAY[1];
    ELSE
        SELECT array_agg(n ORDER BY k COLLATE "C", n) INTO ordered
        FROM unnest(p_keys) WITH ORDINALITY AS u(k, n);
    END IF;
    FOREACH i IN ARRAY coalesce(ordered, '{}') LOOP
        CONTINUE WHEN p_keys[i] IS NOT DISTINCT FROM previous;
        previous := p_keys[i];
        INSERT INTO copies (mailbox, id, state, sender, recipients, subject, body, kind, priority,
                            date, reply_to, thread, revision, edited, channel)
        VALUES (p_keys[i], p_id, 'unread', p_sender, p_recipients, p_subject, p_body, p_kind,
                p_priority, p_date, p_reply_to, p_thread, p_revision, p_edited, p_channel)
        ON CONFLICT DO NOTHING;
        fresh[i] := FOUND;
    END LOOP;
    IF p_trace THEN
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
    END IF;
    FOREACH i IN ARRAY coalesce(ordered, '{}') LOOP
        CONTINUE WHEN NOT fresh[i];
        UPDATE mailbox_counts SET generation = generation + 1
        WHERE key = p_keys[i] AND slot = my_slot;
        IF NOT FOUND THEN
            INSERT INTO mailboxes (key, address) VALUES (p_keys[i], p_spelled[i])
            ON CONFLICT (key) DO NOTHING;
            INSERT INTO mailbox_counts AS c (key, slot, generation) VALUES (p_keys[i], my_slot, 1)
            ON CONFLICT (key, slot) DO UPDATE SET generation = c.generation + 1;
        END IF;
        IF NOT pg_try_advisory_xact_lock(1835100524 + my_slot, hashtext(p_channels[i])) THEN
            PERFORM pg_notify(p_channels[i], '');
        END IF;
    END LOOP;
    RETURN fresh;
END
$$;

-- Counts a change to the caller's own mailbox (a copy moved back to unread) in its change
-- token, and wakes its waiters, as a delivery does.
CREATE FUNCTION mailroom_count(p_key text, p_spelled text, p_channel text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
DECLARE
    my_slot integer := coalesce(nullif(current_setting('mailroom.slot', true), '')::integer,
                                mailroom_slot());
BEGIN
    IF NOT mailroom_caller_exempt() AND (p_key IS DISTINCT FROM lower(p_spelled) OR NOT mailroom_caller_is(p_key)) THEN
        PERFORM mailroom_refuse('a role counts changes only to its own mailboxes');
    END IF;
    INSERT INTO mailboxes (key, address) VALUES (p_key, p_spelled) ON CONFLICT (key) DO NOTHING;
    INSERT INTO mailbox_counts AS c (key, slot, generation) VALUES (p_key, my_slot, 1)
    ON CONFLICT (key, slot) DO UPDATE SET generation = c.generation + 1;
    IF NOT pg_try_advisory_xact_lock(1835100524 + my_slot, hashtext(p_channel)) THEN
        PERFORM pg_notify(p_channel, '');
    END IF;
END
$$;

-- The injection mark of the caller's own mailbox (what its hooks showed last).
CREATE FUNCTION mailroom_mark_injected(p_key text, p_spelled text, p_token text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
BEGIN
    IF NOT mailroom_caller_exempt() AND (p_key IS DISTINCT FROM lower(p_spelled) OR NOT mailroom_caller_is(p_key)) THEN
        PERFORM mailroom_refuse('a role marks only its own mailboxes');
    END IF;
    INSERT INTO mailboxes (key, address, injected) VALUES (p_key, p_spelled, p_token)
    ON CONFLICT (key) DO UPDATE SET injected = EXCLUDED.injected;
END
$$;

-- The checkout an identity of the caller's was first used from: claimed once, then kept. An
-- identity has a mailbox once mail was delivered to it or sent by it; without one, nothing is
-- recorded and NULL is answered.
CREATE FUNCTION mailroom_claim_origin(p_key text, p_spelled text, p_path text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
DECLARE
    first text;
BEGIN
    IF NOT mailroom_caller_exempt() AND (p_key IS DISTINCT FROM lower(p_spelled) OR NOT mailroom_caller_is(p_key)) THEN
        PERFORM mailroom_refuse('a role claims a checkout only for its own identities');
    END IF;
    INSERT INTO mailboxes (key, address, origin) SELECT p_key, p_spelled, p_path
    WHERE EXISTS (SELECT 1 FROM mailboxes WHERE key = p_key)
       OR EXISTS (SELECT 1 FROM outbox WHERE sender_key = p_key)
    ON CONFLICT (key) DO UPDATE SET origin = coalesce(mailboxes.origin, EXCLUDED.origin)
    RETURNING origin INTO first;
    RETURN first;
END
$$;

-- Appends an entry to a channel (listing the channel, counting the entry in its generation and
-- waking a broadcast's waiters when `p_notify` names their channel); false when the channel
-- had the entry already. A role posts only as its own identity (an active member of its
-- project), into a project it may write into, an entry as a post makes it: to no mailbox, starting its own thread, at revision 1,
-- never edited, dated now (a keyed post's retry: as its outbox trace reads).
CREATE FUNCTION mailroom_post(
    p_project      text,
    p_channel_key  text,
    p_channel_name text,
    p_id           text,
    p_sender       text,
    p_recipients   text[],
    p_subject      text,
    p_body         text,
    p_kind         text,
    p_priority     text,
    p_date         text,
    p_reply_to     text,
    p_thread       text,
    p_revision     bigint,
    p_edited       text,
    p_channel      text,
    p_notify       text
) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
BEGIN
    IF NOT mailroom_caller_exempt() THEN
        IF NOT mailroom_caller_is(p_sender) THEN
            PERFORM mailroom_refuse('a role posts only as its own identities');
        END IF;
        IF NOT mailroom_active(p_sender) THEN
            PERFORM mailroom_refuse('a role posts only as an active member of its project');
        END IF;
        IF NOT EXISTS (SELECT 1 FROM projects WHERE key = p_project) THEN
            PERFORM mailroom_refuse('a role posts only into a project that exists');
        END IF;
        IF NOT mailroom_may_write_into(p_sender, p_project) THEN
            PERFORM mailroom_refuse('a roster project takes posts only from its own members and HUMAN');
        END IF;
        IF p_channel_key IS DISTINCT FROM lower(p_channel_name)
           OR lower(p_channel) IS DISTINCT FROM p_channel_key || '@' || p_project
           OR cardinality(p_recipients) <> 0 OR p_reply_to IS NOT NULL
           OR p_thread IS DISTINCT FROM p_id OR p_revision <> 1 OR p_edited IS NOT NULL THEN
            PERFORM mailroom_refuse('an entry is posted as a post makes it');
        END IF;
        IF NOT mailroom_is_now(p_date)
           AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.sender_key = lower(p_sender)
                           AND o.id = p_id AND o.date = p_date)
           AND NOT EXISTS (SELECT 1 FROM entries WHERE project_key = p_project
                           AND channel_key = p_channel_key AND id = p_id) THEN
            PERFORM mailroom_refuse('an entry is dated when it is posted');
        END IF;
    END IF;
    INSERT INTO entries (project_key, channel_key, id, sender, recipients, subject, body, kind,
                         priority, date, reply_to, thread, revision, edited, channel)
    VALUES (p_project, p_channel_key, p_id, p_sender, p_recipients, p_subject, p_body, p_kind,
            p_priority, p_date, p_reply_to, p_thread, p_revision, p_edited, p_channel)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        -- The channel is listed even when the entry was there already.
        INSERT INTO channels (project_key, key, name) VALUES (p_project, p_channel_key, p_channel_name)
        ON CONFLICT DO NOTHING;
        RETURN false;
    END IF;
    INSERT INTO channels AS c (project_key, key, name, generation)
    VALUES (p_project, p_channel_key, p_channel_name, 1)
    ON CONFLICT (project_key, key) DO UPDATE SET generation = c.generation + 1;
    IF p_notify IS NOT NULL AND NOT pg_try_advisory_xact_lock(
        1835100524 + coalesce(nullif(current_setting('mailroom.slot', true), '')::integer, mailroom_slot()),
        hashtext(p_notify)) THEN
        PERFORM pg_notify(p_notify, '');
    END IF;
    RETURN true;
END
$$;

-- Retracts a broadcast (an entry of the channel `all`; other channels' entries are never
-- retracted); false when it is not there or already retracted. A role retracts only what one
-- of its identities posted.
CREATE FUNCTION mailroom_retract(p_project text, p_channel_key text, p_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    AS $$
DECLARE
    who text;
BEGIN
    -- Asked first, so that a role learns nothing of another project's channels.
    IF NOT mailroom_caller_exempt() AND NOT mailroom_caller_in(p_project) THEN
        PERFORM mailroom_refuse('a role retracts only in the projects it is in');
    END IF;
    SELECT sender INTO who FROM entries
    WHERE project_key = p_project AND channel_key = p_channel_key AND id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF NOT mailroom_caller_exempt() AND (p_channel_key <> 'all' OR NOT mailroom_caller_is(who)) THEN
        PERFORM mailroom_refuse('a role retracts only its own broadcasts');
    END IF;
    UPDATE entries SET retracted = true
    WHERE project_key = p_project AND channel_key = p_channel_key AND id = p_id AND NOT retracted;
    RETURN FOUND;
END
$$;

-- What a role's UPDATE of a copy may change, beyond version 8's fixed columns (now with the
-- channel): its sender edits it while it is unread (subject, body, priority, a later revision,
-- an edit time of now), having kept the earlier revision; its recipient moves it between
-- unread, read and done; its sender cancels it while unread. A move takes a new place in the
-- order of moves and is timed now; nothing else moves a copy.
CREATE OR REPLACE FUNCTION mailroom_copy_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    recipient boolean;
    sender boolean;
BEGIN
    IF NOT row_security_active('copies') THEN
        RETURN NEW;
    END IF;
    IF NEW.mailbox IS DISTINCT FROM OLD.mailbox OR NEW.id IS DISTINCT FROM OLD.id
       OR NEW.sender IS DISTINCT FROM OLD.sender OR NEW.recipients IS DISTINCT FROM OLD.recipients
       OR NEW.date IS DISTINCT FROM OLD.date OR NEW.kind IS DISTINCT FROM OLD.kind
       OR NEW.thread IS DISTINCT FROM OLD.thread OR NEW.reply_to IS DISTINCT FROM OLD.reply_to
       OR NEW.channel IS DISTINCT FROM OLD.channel THEN
        RAISE EXCEPTION 'a copy''s mailbox, id, sender, recipients, date, kind, thread, reply and channel are not changed in strict mode'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    recipient := mailroom_mine(OLD.mailbox);
    sender := mailroom_mine(OLD.sender);
    IF (NEW.subject, NEW.body, NEW.priority, NEW.revision, NEW.edited)
       IS DISTINCT FROM (OLD.subject, OLD.body, OLD.priority, OLD.revision, OLD.edited) THEN
        IF NOT (sender AND OLD.state = 'unread' AND NEW.state = 'unread'
                AND NEW.revision > OLD.revision AND NEW.edited IS NOT NULL
                AND mailroom_is_now(NEW.edited)
                AND EXISTS (SELECT 1 FROM revisions r WHERE r.mailbox = OLD.mailbox
                            AND r.id = OLD.id AND r.revision = OLD.revision)) THEN
            RAISE EXCEPTION 'only a copy''s sender edits it in strict mode, while it is unread, as a later revision, keeping the earlier one'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        IF NOT ((recipient AND OLD.state IN ('unread', 'read', 'done')
                 AND NEW.state IN ('unread', 'read', 'done'))
                OR (sender AND OLD.state = 'unread' AND NEW.state = 'cancelled')) THEN
            RAISE EXCEPTION 'in strict mode a copy''s recipient moves it between unread, read and done, and its sender cancels it while unread'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.moved_ns IS NULL OR abs(NEW.moved_ns - (extract(epoch FROM now()) * 1e9)::bigint) > 300000000000 THEN
            RAISE EXCEPTION 'in strict mode a copy is moved now'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.moved := nextval('moves');
    ELSIF NEW.moved IS DISTINCT FROM OLD.moved OR NEW.moved_ns IS DISTINCT FROM OLD.moved_ns THEN
        RAISE EXCEPTION 'in strict mode a copy''s place in the order of moves changes only when it moves'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

-- A role's outbox trace is one its own operations write: a new one is a fresh message's (dated
-- now, at revision 1, starting its thread) or a delivered copy's; an edit changes only the
-- text, priority, a later revision and its edit time.
CREATE FUNCTION mailroom_trace_checked() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT row_security_active('outbox') THEN
        RETURN NEW;
    END IF;
    IF NEW.sender_key IS DISTINCT FROM lower(NEW.sender) THEN
        PERFORM mailroom_refuse('a trace is kept under its sender''s key');
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NOT (
            (NEW.revision = 1 AND NEW.edited IS NULL AND NEW.reply_to IS NULL
             AND NEW.thread = NEW.id AND mailroom_is_now(NEW.date))
            OR EXISTS (SELECT 1 FROM copies c WHERE c.id = NEW.id AND lower(c.sender) = NEW.sender_key
                       AND c.date = NEW.date AND c.thread = NEW.thread
                       AND c.reply_to IS NOT DISTINCT FROM NEW.reply_to AND c.kind = NEW.kind)) THEN
            PERFORM mailroom_refuse('a trace is one of a message its sender sends or sent');
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.sender_key IS DISTINCT FROM OLD.sender_key
       OR NEW.sender IS DISTINCT FROM OLD.sender OR NEW.recipients IS DISTINCT FROM OLD.recipients
       OR NEW.date IS DISTINCT FROM OLD.date OR NEW.kind IS DISTINCT FROM OLD.kind
       OR NEW.thread IS DISTINCT FROM OLD.thread OR NEW.reply_to IS DISTINCT FROM OLD.reply_to THEN
        PERFORM mailroom_refuse('a trace''s id, sender, recipients, date, kind, thread and reply are not changed');
    END IF;
    IF NEW.revision < OLD.revision
       OR (NEW.revision > OLD.revision AND (NEW.edited IS NULL OR NOT mailroom_is_now(NEW.edited))) THEN
        PERFORM mailroom_refuse('a trace is edited to a later revision, now');
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER checked BEFORE INSERT OR UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION mailroom_trace_checked();

DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'mailroom_caller()', 'mailroom_caller_exempt()', 'mailroom_caller_is(text)',
        'mailroom_caller_in(text)', 'mailroom_is_now(text)', 'mailroom_may_write_into(text, text)',
        'mailroom_active(text)',
        'mailroom_refuse(text)',
        'mailroom_check_delivery(text[], text[], text, text, text, text[], text, text, text, text, bigint, text, text, boolean)',
        'mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text, boolean)',
        'mailroom_count(text, text, text)', 'mailroom_mark_injected(text, text, text)',
        'mailroom_claim_origin(text, text, text)',
        'mailroom_post(text, text, text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text, text)',
        'mailroom_retract(text, text, text)', 'mailroom_copy_fixed()', 'mailroom_trace_checked()'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_catalog, pg_temp', f, current_schema());
    END LOOP;
END
$$;

-- What other roles hold on mailroom's tables comes down to what the above leaves them: reading,
-- and the few direct writes the policies and triggers narrow. (`mailroom role` grants exactly
-- these, by name, from this version on.)
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT c.relname, a.grantee, a.privilege_type
             FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
               AND c.relname IN ('mailroom_schema', 'identities', 'projects', 'members',
                                 'mailboxes', 'mailbox_counts', 'copies', 'revisions', 'outbox',
                                 'keys', 'channels', 'entries', 'seen')
               AND a.grantee <> c.relowner AND a.privilege_type <> 'SELECT'
               AND (c.relname, a.privilege_type) NOT IN (
                   ('copies', 'UPDATE'), ('revisions', 'INSERT'), ('outbox', 'INSERT'),
                   ('outbox', 'UPDATE'), ('keys', 'INSERT'), ('seen', 'INSERT'))
    LOOP
        IF g.grantee = 0 THEN
            EXECUTE format('REVOKE %s ON %I FROM PUBLIC', g.privilege_type, g.relname);
        ELSE
            EXECUTE format('REVOKE %s ON %I FROM %s', g.privilege_type, g.relname, g.grantee::regrole);
        END IF;
    END LOOP;
END
$$;
