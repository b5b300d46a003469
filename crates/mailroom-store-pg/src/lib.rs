//! mailroom's PostgreSQL store: the same model as the file store, in tables, so agents on many
//! machines share one mailroom through one server.
//!
//! Why the synchronous `postgres` crate: the core's `Store` is synchronous and every CLI
//! command is a fresh process, so one blocking connection is the cheapest thing that works (the
//! crate drives it on a small current-thread runtime of its own; no thread pool starts). A
//! long-lived process (the MCP server) calls the store from many threads: [`PgStore`] keeps a
//! few idle connections and opens another when all are busy, so calls never queue behind one
//! connection. `wait`/`watch` hold one more connection each, for `LISTEN`.
//!
//! Invariants:
//! - Every state change is one transaction; every conditional change (a move out of a state, an
//!   edit while unread, a seen mark, a key claim, a retraction, an origin claim) is one
//!   statement whose `WHERE` or `ON CONFLICT` decides it, so concurrent callers need no lock of
//!   ours: PostgreSQL re-checks the condition on the row it locks.
//! - The schema is created and upgraded by the embedded, append-only migrations in
//!   `migrations/`, under a transaction-scoped advisory lock; a schema newer than this binary is
//!   refused, never used.
//! - No message ever names the password: every URL shown goes through [`shown_url`].
//!
//! ## Its modules
//!
//! the same roles on PostgreSQL (`postgres`, the synchronous client: one connection per CLI
//! process, no runtime of ours; `PgStore` keeps up to four idle connections for a long-lived server
//! and opens more when all are busy). One file per concern, as in the file store: `lib` (`PgStore`,
//! `open*`, `impl Store`); `url` (URL parsing through the driver's `Config`, by hand only the libpq
//! parameters it lacks, and the one password-free form every message shows); `connect` (dialling,
//! bounded by `connect_timeout`; connection errors as sentences); `pool` (idle connections; `read`
//! retried on a fresh connection, `write` one transaction retried after a deadlock or a break
//! before the commit, unconfirmed when lost during it, `write_prepared` one statement safe to run
//! twice, e.g. a send's `mailroom_deliver`); `migrate` (embedded migrations under
//! `pg_advisory_xact_lock`); `doctor` (one pass over the tables); `roles` (a strict-mode role's
//! SQL, which `mailroom role` prints); `pgpass` (a password the URL leaves out, from `PGPASSWORD`
//! or the password file as libpq reads them); `codec` (rows ⇄ messages; a row that does not read is
//! a `Damaged` entry); `rows` (what the roles share: rows into core types, a mailbox's count and
//! wake-up); `directory`, `mailboxes`, `channels`, `sessions` (the four roles: each conditional
//! change one statement — `UPDATE … WHERE state = $from`, a listing's moves one `UPDATE … FROM
//! unnest(…)`, `INSERT … ON CONFLICT DO NOTHING` — a send's statements prepared once per
//! connection); `watch` (a `LISTEN` connection per watch, holding the channel's wake locks in share
//! mode so that senders know someone listens — taken without waiting: while one is held by someone
//! else the watch has its caller look every turn, so no session can hold a `wait` past its timeout;
//! after a broken connection, or one its TCP keepalives found dead, it listens again and reports a
//! wake-up, so the caller looks again, retrying every 2 s while the server cannot be reached rather
//! than ending the watch; every connection gets keepalives that find a silent peer in about a
//! minute unless the URL says otherwise, and its whole login is bounded by `connect_timeout`, on a
//! thread), `tls` (`sslmode` with libpq's meaning on rustls with `ring`: every connection is
//! dialled with it; `verify-ca`/`verify-full` check the certificate with rustls's WebPKI verifier
//! against a root file read once when the URL is parsed, or with `sslrootcert=system` the system's
//! authorities through `rustls-native-certs`), `testing` (a schema per test on the test server).
//! Migration 2 is strict mode: row-level security holding every role but the tables' owner to the
//! identities `identities` gives it, enforced by the database, not by mailroom (migrations 7 and 8
//! narrow what an agent role may write to what its own sends and edits write: a copy inserted only
//! unread at revision 1, a revision only of its unread copy, a copy's address, sender and dates
//! never changed; migration 9 takes copies, entries, channels, counters and mailbox rows out of a
//! role's direct reach: `mailroom_deliver`, `mailroom_post`, `mailroom_retract`, `mailroom_count`,
//! `mailroom_mark_injected` and `mailroom_claim_origin` run as the owner and check each argument
//! against the calling role, and `roles.rs` writes the role's grants, each on one of mailroom's
//! objects by name); `check_acts_as` and `check_roster_change` (`Directory` methods whose defaults
//! allow everything) only say so up front, in one sentence, before a command reads a silently
//! partial view or a send writes anything: the front ends ask the first once for the identity they
//! act as, the core's send asks the second before delivering to a mailbox that is not on a roster
//! yet. Schema: docs/POSTGRES.md.

mod channels;
mod codec;
mod connect;
mod directory;
mod doctor;
mod leases;
mod mailboxes;
mod migrate;
mod pgpass;
mod pool;
mod roles;
mod rows;
mod sessions;
pub mod testing;
mod tls;
mod tokens;
mod url;
mod watch;

use std::sync::Mutex;

use mailroom_core::{Error, Store};
use postgres::Config;

pub use connect::connect;
pub(crate) use connect::{connect_error, dial, is_lost, said};
pub use migrate::SCHEMA_VERSION;
pub use pgpass::PasswordSources;
pub use url::{
    DEFAULT_CONNECT_TIMEOUT, QUICK_CONNECT_TIMEOUT, Target, is_url, parse_url, parse_url_for,
    parse_url_with, redacted, shown_url,
};

use migrate::migrate;
use pool::Conn;
use url::CONNECT_TIMEOUT;

/// A store on a PostgreSQL database.
pub struct PgStore {
    config: Config,
    /// How connections are encrypted and verified; `None`: as `config`'s `sslmode`, unverified.
    tls: Option<tls::Tls>,
    /// The URL without its password: the only form ever shown.
    shown: String,
    /// The schema the tables are in (`current_schema()`), which keeps notification channels of
    /// two mailrooms in one database apart.
    schema: String,
    idle: Mutex<Vec<Conn>>,
    /// Whether row-level security applies to this connection's role (strict mode: every role
    /// but the tables' owner), asked once, when first needed.
    strict: std::sync::OnceLock<bool>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// A message for a [`Error::Store`]'s source: the part of the sentence after the context.
#[derive(Debug)]
pub(crate) struct Msg(pub String);

impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Msg {}

fn sentence(context: String, rest: String) -> Error {
    Error::store(context, Msg(rest))
}

impl PgStore {
    /// Opens the store at `url`: connects once, checks (and if needed creates or upgrades) the
    /// schema, and keeps the connection for the first call.
    ///
    /// Reads no environment: a verifying `sslmode` needs the URL's `sslrootcert` (the binary
    /// opens with [`parse_url_for`], which also looks where libpq looks).
    pub fn open(url: &str) -> Result<PgStore, Error> {
        PgStore::open_config(parse_url_for(url, CONNECT_TIMEOUT, &PasswordSources::default())?.0)
    }

    /// [`PgStore::open`] giving up on connecting after [`QUICK_CONNECT_TIMEOUT`] unless the URL
    /// sets its own `connect_timeout`: for the hooks and `setup --check`, which run at a
    /// session's start and must not hold it for long when the server is unreachable.
    pub fn open_quick(url: &str) -> Result<PgStore, Error> {
        PgStore::open_config(
            parse_url_for(url, QUICK_CONNECT_TIMEOUT, &PasswordSources::default())?.0,
        )
    }

    /// Opens the store at `target` (a [`Target`] from [`parse_url_for`], or a [`Config`]).
    pub fn open_config(target: impl Into<Target>) -> Result<PgStore, Error> {
        let Target { config, tls } = target.into();
        let shown = shown_url(&config);
        let mut client = dial(&config, tls.as_ref(), &shown)?;
        let schema = migrate(&mut client, &shown)?;
        Ok(PgStore {
            config,
            tls,
            shown,
            schema,
            idle: Mutex::new(vec![Conn::new(client)]),
            strict: std::sync::OnceLock::new(),
        })
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The schema the tables are in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The database's name.
    pub fn database(&self) -> &str {
        self.config.get_dbname().unwrap_or("")
    }

    /// Whether `other` is the very same mailroom (server, database and schema).
    pub fn same_as(&self, other: &PgStore) -> bool {
        self.shown == other.shown && self.schema == other.schema
    }
}

impl Store for PgStore {
    fn describe(&self) -> String {
        self.shown.clone()
    }
}

/// A stable 64-bit hash (FNV-1a): the same on every machine and every build, for names
/// derived from data (notification channels, the advisory lock).
pub(crate) fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
