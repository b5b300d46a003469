//! The schema: embedded, append-only migrations applied under an advisory lock.

use mailroom_core::Error;
use postgres::Client;

use crate::{fnv, said, sentence};

/// The embedded migrations, in order: version N is `MIGRATIONS[N - 1]`. Append only.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_initial.sql"),
    include_str!("../migrations/0002_strict.sql"),
    include_str!("../migrations/0003_deliver.sql"),
    include_str!("../migrations/0004_wake_waiters_only.sql"),
    include_str!("../migrations/0005_counts_per_slot.sql"),
    include_str!("../migrations/0006_slot_per_connection.sql"),
    include_str!("../migrations/0007_revisions_of_own_unread_copies.sql"),
    include_str!("../migrations/0008_copies_as_sent.sql"),
    include_str!("../migrations/0009_writes_through_checked_functions.sql"),
    include_str!("../migrations/0010_leases.sql"),
    include_str!("../migrations/0011_tokens.sql"),
    include_str!("../migrations/0012_leases_as_operations_write_them.sql"),
];

/// The schema version this binary writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings the schema to [`SCHEMA_VERSION`] and returns the schema's name. The quick path (the
/// schema is current) is one query; otherwise every step runs in one transaction holding an
/// advisory lock, so two processes starting at once apply each migration once.
pub(crate) fn migrate(client: &mut Client, shown: &str) -> Result<String, Error> {
    let failed = |e: postgres::Error| {
        sentence(
            format!("the PostgreSQL server at {shown} failed to check mailroom's schema"),
            said(&e),
        )
    };
    let row = client
        .query_one(
            "SELECT current_schema(), CASE WHEN to_regclass('mailroom_schema') IS NULL THEN NULL \
             ELSE (SELECT 0) END",
            &[],
        )
        .map_err(failed)?;
    let schema: Option<String> = row.get(0);
    let Some(schema) = schema else {
        return Err(sentence(
            format!("the database at {shown} has no schema to create mailroom's tables in"),
            "create one (CREATE SCHEMA) or set the search_path of the role".to_owned(),
        ));
    };
    let has_table: Option<i32> = row.get(1);
    if has_table.is_some() {
        let version: Option<i32> = client
            .query_one("SELECT max(version) FROM mailroom_schema", &[])
            .map_err(failed)?
            .get(0);
        let version = version.unwrap_or(0);
        if version == SCHEMA_VERSION {
            return Ok(schema);
        }
        check_not_newer(version, shown)?;
    }
    let lock = i64::from_ne_bytes(fnv(&format!("mailroom schema {schema}")).to_ne_bytes());
    let mut tx = client.transaction().map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
        .map_err(failed)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mailroom_schema (
            version integer PRIMARY KEY,
            applied timestamptz NOT NULL DEFAULT now()
        )",
    )
    .map_err(|e| {
        sentence(
            format!("the PostgreSQL server at {shown} refused to create mailroom's tables"),
            format!(
                "{}; the role needs CREATE on schema {schema} (see the least privilege in docs/POSTGRES.md)",
                said(&e)
            ),
        )
    })?;
    let version: Option<i32> = tx
        .query_one("SELECT max(version) FROM mailroom_schema", &[])
        .map_err(failed)?
        .get(0);
    let version = version.unwrap_or(0);
    check_not_newer(version, shown)?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let n = i as i32 + 1;
        tx.batch_execute(sql).map_err(|e| {
            sentence(
                format!("the PostgreSQL server at {shown} refused mailroom's schema migration {n}"),
                said(&e),
            )
        })?;
        tx.execute("INSERT INTO mailroom_schema (version) VALUES ($1)", &[&n])
            .map_err(failed)?;
    }
    tx.commit().map_err(failed)?;
    Ok(schema)
}

fn check_not_newer(version: i32, shown: &str) -> Result<(), Error> {
    if version > SCHEMA_VERSION {
        return Err(sentence(
            format!(
                "the database at {shown} holds mailroom schema version {version}, newer than this mailroom's {SCHEMA_VERSION}"
            ),
            "upgrade mailroom on this machine; it will not read or write a schema it does not know"
                .to_owned(),
        ));
    }
    Ok(())
}
