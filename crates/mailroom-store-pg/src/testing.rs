//! Test support: a fresh, empty mailroom on the test server, in a schema of its own that is
//! dropped afterwards. Used by this crate's conformance run and the CLI's end-to-end tests.
//!
//! The server is `MAILROOM_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! When it does not answer, a test fails, loudly, naming the URL: a PostgreSQL test never
//! passes without PostgreSQL. The one exception is `MAILROOM_TEST_PG=skip`, which `scripts/test`
//! sets on a machine without a server after saying so plainly; there each such test returns at
//! once and prints that it did not run.

use std::sync::atomic::{AtomicU64, Ordering};

use postgres::{Config, NoTls};

/// The server the tests use when `MAILROOM_TEST_PG_URL` is not set.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A schema created for one test and dropped when this is dropped.
#[derive(Debug)]
pub struct TestDb {
    admin: Config,
    base: String,
    schema: String,
}

/// The test server's URL.
pub fn server_url() -> String {
    std::env::var("MAILROOM_TEST_PG_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TEST_URL.to_owned())
}

/// Whether the PostgreSQL tests were told not to run (`MAILROOM_TEST_PG=skip`).
pub fn skipped(test: &str) -> bool {
    if std::env::var("MAILROOM_TEST_PG").as_deref() == Ok("skip") {
        eprintln!("{test}: NOT RUN: MAILROOM_TEST_PG=skip (no PostgreSQL server on this machine)");
        return true;
    }
    false
}

impl TestDb {
    /// A new empty schema on the test server, or `None` when PostgreSQL tests are skipped.
    ///
    /// # Panics
    /// When the server cannot be reached or refuses: the test must fail, not pass.
    #[allow(
        clippy::panic,
        reason = "test support: a missing server must fail the test"
    )]
    pub fn create(test: &str) -> Option<TestDb> {
        if skipped(test) {
            return None;
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = server_url();
        let admin = crate::parse_url(&base)
            .unwrap_or_else(|e| panic!("MAILROOM_TEST_PG_URL is not a PostgreSQL URL: {e}"));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let schema = format!(
            "mailroom_test_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = admin.connect(NoTls).unwrap_or_else(|e| {
            panic!(
                "{test}: the PostgreSQL test server at {} does not answer ({}); start it, point MAILROOM_TEST_PG_URL at one, or run scripts/test (which says when the PostgreSQL half did not run)",
                crate::shown_url(&admin),
                crate::connect_error(&crate::shown_url(&admin), &admin, None, &e)
            )
        });
        client
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap_or_else(|e| panic!("{test}: cannot create the test schema {schema}: {e}"));
        Some(TestDb {
            admin,
            base,
            schema,
        })
    }

    /// The URL of this test's mailroom: the server's, with its `search_path` set to the schema.
    pub fn url(&self) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.base, self.schema
        )
    }

    /// This test's URL, connecting as `role` instead of the server URL's user.
    pub fn url_as(&self, role: &str) -> String {
        let url = self.url();
        match url.split_once("://") {
            Some((scheme, rest)) => {
                let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
                format!("{scheme}://{role}@{rest}")
            }
            None => url,
        }
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// A connection to the test server logged in as `role` (a strict-mode role the test
    /// made), with the test schema as its search path, as an agent's psql would have.
    ///
    /// # Panics
    /// When the role cannot log in.
    #[allow(clippy::panic, reason = "test support")]
    pub fn client_as(&self, role: &str) -> postgres::Client {
        let mut config = self.admin.clone();
        config.user(role);
        config.options(&format!("-c search_path={}", self.schema));
        config
            .connect(NoTls)
            .unwrap_or_else(|e| panic!("the role {role} cannot log in: {e}"))
    }

    /// A connection to the test server as its administrator (for tests that look behind the
    /// store, cut connections or create roles).
    ///
    /// # Panics
    /// When the server cannot be reached.
    #[allow(clippy::panic, reason = "test support")]
    pub fn admin(&self) -> postgres::Client {
        self.admin
            .connect(NoTls)
            .unwrap_or_else(|e| panic!("the PostgreSQL test server does not answer: {e}"))
    }
}

impl TestDb {
    /// Blocks until some connection listens for mail to `address` (`handle@project` or
    /// `HUMAN`) in this test's mailroom and is idle in that wait: the moment a `wait` started
    /// in another process is asleep, so a send after this must wake it.
    ///
    /// # Panics
    /// When no such listener appears within a minute.
    #[allow(clippy::panic, reason = "test support")]
    pub fn wait_for_listener(&self, address: &str) {
        let address = mailroom_core::Address::parse_canonical(address)
            .unwrap_or_else(|e| panic!("{address} is not an address: {e}"));
        let channel =
            crate::rows::notify_channel(&self.schema, &crate::codec::mailbox_key(&address));
        let pattern = format!("%LISTEN {channel};%");
        let mut admin = self.admin();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let n: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle' AND query LIKE $1",
                    &[&pattern],
                )
                .map(|r| r.get(0))
                .unwrap_or(0);
            if n > 0 {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nobody listens for mail to {address} within a minute"
            );
            // PostgreSQL sends no event when a session starts to LISTEN: the only sign is its
            // row in pg_stat_activity, so this polls for that condition (never a fixed wait).
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = self.admin.connect(NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// The wake lock of `mailbox`'s notification channel in `schema` for `slot`, as the two keys
/// of `pg_advisory_lock(int4, int4)`: for tests that hold it as a send in flight, or a hostile
/// session, would.
pub fn wake_lock_keys(schema: &str, mailbox: &str, slot: i32) -> (i32, String) {
    (
        crate::rows::WAKE_LOCK + slot,
        crate::rows::notify_channel(schema, &mailbox.to_ascii_lowercase()),
    )
}
