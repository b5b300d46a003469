//! The SQL that makes a strict-mode role: the grants it needs on mailroom's own objects, named
//! one by one, and nothing on anything else in the schema.

use mailroom_core::Address;

use crate::PgStore;

/// What a strict-mode role reads: every table of mailroom's (row-level security narrows the rows).
const READ: &[&str] = &[
    "mailroom_schema",
    "identities",
    "projects",
    "members",
    "mailboxes",
    "mailbox_counts",
    "copies",
    "revisions",
    "outbox",
    "keys",
    "channels",
    "entries",
    "seen",
    "leases",
];

/// What it writes directly, each narrowed by policies and triggers to what mailroom's own
/// operations write (migrations 0002, 0007, 0008, 0009 and 0010). Everything else it writes goes
/// through [`FUNCTIONS`].
const WRITE: &[(&str, &str)] = &[
    ("copies", "UPDATE"),
    ("revisions", "INSERT"),
    ("outbox", "INSERT, UPDATE"),
    ("keys", "INSERT"),
    ("seen", "INSERT"),
    ("leases", "INSERT, UPDATE, DELETE"),
];

/// Mailroom's functions a role runs: the policies' helpers, the connection's slot, and the
/// checked writes of migration 0009.
const FUNCTIONS: &[&str] = &[
    "mailroom_mine(text)",
    "mailroom_in_project(text)",
    "mailroom_slot()",
    "mailroom_deliver(text[], text[], text[], text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text, boolean)",
    "mailroom_count(text, text, text)",
    "mailroom_mark_injected(text, text, text)",
    "mailroom_claim_origin(text, text, text)",
    "mailroom_post(text, text, text, text, text, text[], text, text, text, text, text, text, text, bigint, text, text, text)",
    "mailroom_retract(text, text, text)",
];

impl PgStore {
    /// The whole script `mailroom role` prints for the login role `role` acting only as
    /// `address`: how the agent connects (its URL names this schema too, as the operator's
    /// does: without it the role would look for mailroom's tables in its own search path),
    /// then [`PgStore::role_sql`].
    pub fn role_script(&self, address: &Address, role: &str) -> String {
        let (schema, db) = (self.schema(), self.database());
        let key = address.to_string().to_ascii_lowercase();
        let options = if schema == "public" {
            String::new()
        } else {
            format!("?options=-c%20search_path%3D{schema}")
        };
        format!(
            "-- A PostgreSQL role that acts only as {address} in the mailroom at {url} (schema {schema}).
-- Run it as the owner of mailroom's tables, e.g. psql URL -f FILE; then give the agent
-- postgres://{role}@HOST:PORT/{db}{options} and a password (ALTER ROLE \"{role}\" PASSWORD '...').
{grants}",
            url = self.url(),
            grants = self.role_sql(role, &key)
        )
    }

    /// The statements that create the login role `role` acting only as the mailbox `identity`
    /// (its key: `handle@project`, lower case) in this mailroom, to be run by the tables'
    /// owner.
    ///
    /// Names follow `[A-Za-z0-9][A-Za-z0-9._-]*` (the caller checks `role` and `identity`; the
    /// schema and database come from a URL mailroom opened), so they sit safely inside double
    /// and single quotes.
    pub fn role_sql(&self, role: &str, identity: &str) -> String {
        let (schema, db) = (self.schema(), self.database());
        let mut sql = format!(
            "CREATE ROLE \"{role}\" LOGIN;\n\
             GRANT CONNECT ON DATABASE \"{db}\" TO \"{role}\";\n\
             GRANT USAGE ON SCHEMA \"{schema}\" TO \"{role}\";\n"
        );
        let tables = READ
            .iter()
            .map(|t| format!("\"{schema}\".{t}"))
            .collect::<Vec<_>>()
            .join(", ");
        sql.push_str(&format!("GRANT SELECT ON {tables} TO \"{role}\";\n"));
        for (table, rights) in WRITE {
            sql.push_str(&format!(
                "GRANT {rights} ON \"{schema}\".{table} TO \"{role}\";\n"
            ));
        }
        sql.push_str(&format!(
            "GRANT USAGE ON SEQUENCE \"{schema}\".moves TO \"{role}\";\n"
        ));
        for f in FUNCTIONS {
            sql.push_str(&format!(
                "GRANT EXECUTE ON FUNCTION \"{schema}\".{f} TO \"{role}\";\n"
            ));
        }
        sql.push_str(&format!(
            "INSERT INTO \"{schema}\".identities (role, mailbox) VALUES ('{role}', '{identity}') ON CONFLICT DO NOTHING;"
        ));
        sql
    }
}
