-- mailroom schema, version 1. Append-only: a later change is a new file, never an edit here.
-- Names (projects, handles, channels) compare case-insensitively and keep their first spelling:
-- each table keeps the spelling beside a lower-case key the unique indexes are on.
-- Text compares byte by byte (COLLATE "C"): ids sort as ULIDs do, keys as names do, whatever
-- the database's locale.
-- Timestamps are RFC 3339 text, exact to the nanosecond as mailroom keeps them; `moved_ns` (when a
-- copy last changed state) is nanoseconds since the Unix epoch, and `moved` orders those changes.

CREATE TABLE projects (
    key        text COLLATE "C" PRIMARY KEY CHECK (key = lower(name)),
    name       text COLLATE "C" NOT NULL,
    policy     text COLLATE "C" NOT NULL CHECK (policy IN ('open', 'roster')),
    created    text COLLATE "C" NOT NULL
);

CREATE TABLE members (
    project_key text COLLATE "C" NOT NULL REFERENCES projects (key),
    handle_key  text COLLATE "C" NOT NULL CHECK (handle_key = lower(handle)),
    handle      text COLLATE "C" NOT NULL,
    role        text COLLATE "C" NOT NULL,
    status      text COLLATE "C" NOT NULL CHECK (status IN ('active', 'inactive')),
    joined      text COLLATE "C" NOT NULL,
    since       text COLLATE "C",
    PRIMARY KEY (project_key, handle_key)
);
CREATE INDEX members_by_handle ON members (handle_key);

-- One row per mailbox that was ever written to: `human` or `handle@project`, lower case.
-- `generation` counts deliveries: the hooks' change token.
CREATE TABLE mailboxes (
    key        text COLLATE "C" PRIMARY KEY CHECK (key = lower(address)),
    address    text COLLATE "C" NOT NULL,
    generation bigint NOT NULL DEFAULT 0,
    injected   text COLLATE "C",
    origin     text COLLATE "C"
);

CREATE SEQUENCE moves;

-- One row per recipient's copy of a directed message, with the content as that copy reads
-- (an edit changes only the copies still unread).
CREATE TABLE copies (
    mailbox     text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    state       text COLLATE "C" NOT NULL CHECK (state IN ('unread', 'read', 'done', 'cancelled')),
    moved       bigint NOT NULL DEFAULT nextval('moves'),
    moved_ns    bigint,
    sender      text COLLATE "C" NOT NULL,
    recipients  text[] NOT NULL,
    subject     text COLLATE "C" NOT NULL,
    body        text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    priority    text COLLATE "C" NOT NULL,
    date        text COLLATE "C" NOT NULL,
    reply_to    text COLLATE "C",
    thread      text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,
    edited      text COLLATE "C",
    channel     text COLLATE "C",
    words       tsvector GENERATED ALWAYS AS (
        strip(to_tsvector('simple', regexp_replace(lower(left(subject || ' ' || body, 600000)), '[^[:alnum:]]+', ' ', 'g')))
    ) STORED,
    PRIMARY KEY (mailbox, id)
);
-- The inbox: pending copies only, so a listing costs O(pending) whatever the archive holds.
CREATE INDEX copies_pending ON copies (mailbox, id) WHERE state IN ('unread', 'read');
CREATE INDEX copies_archived ON copies (mailbox, moved DESC) WHERE state = 'done';
CREATE INDEX copies_by_id ON copies (id);
CREATE INDEX copies_words ON copies USING gin (words);

-- Earlier revisions of edited copies.
CREATE TABLE revisions (
    mailbox     text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,
    sender      text COLLATE "C" NOT NULL,
    recipients  text[] NOT NULL,
    subject     text COLLATE "C" NOT NULL,
    body        text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    priority    text COLLATE "C" NOT NULL,
    date        text COLLATE "C" NOT NULL,
    reply_to    text COLLATE "C",
    thread      text COLLATE "C" NOT NULL,
    edited      text COLLATE "C",
    channel     text COLLATE "C",
    PRIMARY KEY (mailbox, id, revision)
);

-- The senders' traces.
CREATE TABLE outbox (
    sender_key  text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    sender      text COLLATE "C" NOT NULL,
    recipients  text[] NOT NULL,
    subject     text COLLATE "C" NOT NULL,
    body        text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    priority    text COLLATE "C" NOT NULL,
    date        text COLLATE "C" NOT NULL,
    reply_to    text COLLATE "C",
    thread      text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,
    edited      text COLLATE "C",
    channel     text COLLATE "C",
    words       tsvector GENERATED ALWAYS AS (
        strip(to_tsvector('simple', regexp_replace(lower(left(subject || ' ' || body, 600000)), '[^[:alnum:]]+', ' ', 'g')))
    ) STORED,
    PRIMARY KEY (sender_key, id)
);
CREATE INDEX outbox_words ON outbox USING gin (words);

-- Idempotency keys, per sender.
CREATE TABLE keys (
    sender_key text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    PRIMARY KEY (sender_key, key)
);

-- Channels of a project; `generation` counts entries appended (the broadcast part of the token).
CREATE TABLE channels (
    project_key text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL CHECK (key = lower(name)),
    name        text COLLATE "C" NOT NULL,
    generation  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_key, key)
);

-- Channel entries: append-only; a retracted entry stays, flagged.
CREATE TABLE entries (
    project_key text COLLATE "C" NOT NULL,
    channel_key text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    retracted   boolean NOT NULL DEFAULT false,
    sender      text COLLATE "C" NOT NULL,
    recipients  text[] NOT NULL,
    subject     text COLLATE "C" NOT NULL,
    body        text COLLATE "C" NOT NULL,
    kind        text COLLATE "C" NOT NULL,
    priority    text COLLATE "C" NOT NULL,
    date        text COLLATE "C" NOT NULL,
    reply_to    text COLLATE "C",
    thread      text COLLATE "C" NOT NULL,
    revision    bigint NOT NULL,
    edited      text COLLATE "C",
    channel     text COLLATE "C",
    words       tsvector GENERATED ALWAYS AS (
        strip(to_tsvector('simple', regexp_replace(lower(left(subject || ' ' || body, 600000)), '[^[:alnum:]]+', ' ', 'g')))
    ) STORED,
    PRIMARY KEY (project_key, channel_key, id)
);
CREATE INDEX entries_words ON entries USING gin (words);

-- Who has seen which entry: a seen mark is one insert that either happens or conflicts.
CREATE TABLE seen (
    project_key text COLLATE "C" NOT NULL,
    channel_key text COLLATE "C" NOT NULL,
    reader_key  text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    PRIMARY KEY (project_key, channel_key, reader_key, id)
);
