-- mailroom schema: in strict mode, a copy a role puts in place is one as a send delivers it, and
-- a copy keeps its address and origin for good.
--
-- Version 2 let a role insert any copy naming itself as the sender: one already read (which no
-- hook or `wait` would surface) or archived with any archive time (pinned at the top of
-- `recover`), into any mailbox. And the sender of an unread copy could rewrite every column of
-- it, its mailbox too: re-addressing it to a third mailbox, uncounted and unnotified. The owner
-- (an export, doctor's repairs) is not subject to policies nor to the trigger below.

-- A send delivers a copy unread, never moved, as the message's first revision. A keyed send's
-- retry that finishes a send cut short delivers the outbox trace, which an edit may have taken
-- past revision 1: such a copy is the sender's own trace, revision and edit time alike.
DROP POLICY send ON copies;
CREATE POLICY send ON copies FOR INSERT WITH CHECK (
    mailroom_mine(sender) AND state = 'unread' AND moved_ns IS NULL AND (
        (revision = 1 AND edited IS NULL) OR EXISTS (
            SELECT 1 FROM outbox o
            WHERE o.id = copies.id AND o.sender = copies.sender
              AND o.revision = copies.revision AND o.edited IS NOT DISTINCT FROM copies.edited
        )
    )
);

-- What no UPDATE by a role changes: where a copy is, which message it is, who sent it to whom,
-- when, and in which thread. An edit changes the subject, body, priority, revision and edit
-- time; a move the state and the move's order and time. A policy's WITH CHECK sees only the
-- new row, hence a trigger. `row_security_active` is false for the owner (and for a role that
-- bypasses row-level security), who may repair anything.
CREATE FUNCTION mailroom_copy_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF row_security_active('copies')
       AND (NEW.mailbox IS DISTINCT FROM OLD.mailbox OR NEW.id IS DISTINCT FROM OLD.id
            OR NEW.sender IS DISTINCT FROM OLD.sender OR NEW.recipients IS DISTINCT FROM OLD.recipients
            OR NEW.date IS DISTINCT FROM OLD.date OR NEW.kind IS DISTINCT FROM OLD.kind
            OR NEW.thread IS DISTINCT FROM OLD.thread OR NEW.reply_to IS DISTINCT FROM OLD.reply_to) THEN
        RAISE EXCEPTION 'a copy''s mailbox, id, sender, recipients, date, kind, thread and reply are not changed in strict mode'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION mailroom_copy_fixed() SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;

CREATE TRIGGER fixed BEFORE UPDATE ON copies FOR EACH ROW EXECUTE FUNCTION mailroom_copy_fixed();
