-- mailroom schema, version 2: strict mode. Row-level security on every table, so that a role
-- other than the tables' owner acts only as the identities `identities` gives it: it reads only
-- its own mailboxes (and the copies of what it sent), sends and posts only as itself, and
-- changes no project or roster. The owner (the role that created the tables: the operator's)
-- is not subject to these policies, so a deployment where everyone connects as the owner works
-- as before. See docs/POSTGRES.md, "Strict mode".

CREATE TABLE identities (
    role    name NOT NULL,
    mailbox text COLLATE "C" NOT NULL,
    PRIMARY KEY (role, mailbox)
);

-- Whether the current role may act as the mailbox `k` (`human` or `handle@project`).
CREATE FUNCTION mailroom_mine(k text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT EXISTS (SELECT 1 FROM identities WHERE role = current_user AND mailbox = lower(k)) $$;

-- Whether the current role acts as some member of project `p`.
CREATE FUNCTION mailroom_in_project(p text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT EXISTS (SELECT 1 FROM identities WHERE role = current_user
                         AND (split_part(mailbox, '@', 2) = lower(p) OR mailbox = 'human')) $$;

-- The functions look their tables up in this schema only: a role could otherwise shadow
-- `identities` with a temporary table of its own (pg_temp is searched first).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION mailroom_mine(text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION mailroom_in_project(text) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;

-- The schema's version is the owner's to write: a role that could raise it would make every
-- mailroom refuse the database.
ALTER TABLE mailroom_schema ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON mailroom_schema FOR SELECT USING (true);

ALTER TABLE identities ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON identities FOR SELECT USING (role = current_user);

-- Projects and rosters: everyone reads them; only the owner changes them.
ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON projects FOR SELECT USING (true);
ALTER TABLE members ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON members FOR SELECT USING (true);

-- Mailbox rows carry the change token (bumped by whoever delivers) and the mailbox's own marks.
ALTER TABLE mailboxes ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON mailboxes FOR SELECT USING (true);
CREATE POLICY deliver ON mailboxes FOR INSERT WITH CHECK (injected IS NULL AND origin IS NULL OR mailroom_mine(key));
CREATE POLICY bump ON mailboxes FOR UPDATE USING (true)
    WITH CHECK (true);

-- Copies: the recipient's, and the sender's view of what it sent; written only as the sender.
ALTER TABLE copies ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON copies FOR SELECT USING (mailroom_mine(mailbox) OR mailroom_mine(sender));
CREATE POLICY send ON copies FOR INSERT WITH CHECK (mailroom_mine(sender));
-- The recipient moves its copy; the sender may only edit it (it stays unread) or cancel it,
-- and only while it is unread.
CREATE POLICY move ON copies FOR UPDATE
    USING (mailroom_mine(mailbox) OR (mailroom_mine(sender) AND state = 'unread'))
    WITH CHECK (mailroom_mine(mailbox) OR (mailroom_mine(sender) AND state IN ('unread', 'cancelled')));

ALTER TABLE revisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON revisions FOR SELECT USING (mailroom_mine(mailbox) OR mailroom_mine(sender));
CREATE POLICY keep ON revisions FOR INSERT WITH CHECK (mailroom_mine(sender));

ALTER TABLE outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON outbox FOR ALL USING (mailroom_mine(sender_key)) WITH CHECK (mailroom_mine(sender_key) AND mailroom_mine(sender));

ALTER TABLE keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON keys FOR ALL USING (mailroom_mine(sender_key)) WITH CHECK (mailroom_mine(sender_key));

-- Channels: members of the project read them; entries are posted and retracted only as their
-- sender; seen marks are each reader's own.
ALTER TABLE channels ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON channels FOR SELECT USING (mailroom_in_project(project_key));
CREATE POLICY post ON channels FOR INSERT WITH CHECK (mailroom_in_project(project_key));
CREATE POLICY bump ON channels FOR UPDATE USING (mailroom_in_project(project_key));

ALTER TABLE entries ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON entries FOR SELECT USING (mailroom_in_project(project_key));
CREATE POLICY post ON entries FOR INSERT WITH CHECK (mailroom_mine(sender));
CREATE POLICY retract ON entries FOR UPDATE USING (mailroom_mine(sender)) WITH CHECK (mailroom_mine(sender));

ALTER TABLE seen ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON seen FOR ALL
    USING (mailroom_mine(reader_key || '@' || project_key) OR (reader_key = 'human' AND mailroom_mine('human')))
    WITH CHECK (mailroom_mine(reader_key || '@' || project_key) OR (reader_key = 'human' AND mailroom_mine('human')));
