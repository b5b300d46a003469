-- mailroom schema: access tokens, one identity each, kept as the SHA-256 of the secret (never
-- the secret).
--
-- Only the operator (the tables' owner) issues, lists, revokes or checks a token: row-level
-- security is on with no policy and no role is granted anything on the table, so a strict-mode
-- agent role reads no row (not even its own token's hash) and writes none.
CREATE TABLE tokens (
    id       text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
    name     text COLLATE "C",
    address  text COLLATE "C" NOT NULL,
    hash     text COLLATE "C" NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),
    created  text COLLATE "C" NOT NULL,
    expires  text COLLATE "C"
);
CREATE UNIQUE INDEX tokens_name ON tokens (lower(name));

ALTER TABLE tokens ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON tokens FROM PUBLIC;
