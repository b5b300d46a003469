//! The connections a store keeps and the ways it runs statements on them: reads retried on a
//! fresh connection, transactions retried after a lost race, prepared statements per connection.

use mailroom_core::Error;
use postgres::error::SqlState;
use postgres::types::Type;
use postgres::{Client, Statement, Transaction};

use crate::connect::is_retryable;
use crate::{PgStore, dial, is_lost, said, sentence};

/// Idle connections kept for reuse (a long-lived server); more are opened when all are busy.
const KEEP_IDLE: usize = 4;

/// How often a transaction that lost a deadlock or a serialization race is tried again.
const ATTEMPTS: usize = 5;

/// What a failed transaction may have left.
enum Failure {
    /// Nothing was committed: the whole transaction is gone.
    NotDone(postgres::Error),
    /// The connection broke while the commit was in flight: it may or may not have happened.
    Unconfirmed(postgres::Error),
}

impl PgStore {
    fn connect(&self) -> Result<Conn, Error> {
        dial(&self.config, self.tls.as_ref(), &self.shown).map(Conn::new)
    }

    fn take(&self) -> Result<Conn, Error> {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        match idle {
            Some(c) if !c.is_closed() => Ok(c),
            _ => self.connect(),
        }
    }

    fn give(&self, client: Conn) {
        if client.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < KEEP_IDLE
        {
            idle.push(client);
        }
    }

    pub(crate) fn failed(&self, what: &str, e: &postgres::Error) -> Error {
        if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            let user = self.config.get_user().unwrap_or("");
            // A function the role may not run is a missing grant, not a wrong identity.
            if let Some(function) = e
                .as_db_error()
                .and_then(|db| db.message().strip_prefix("permission denied for function "))
            {
                return Error::Refused(format!(
                    "the PostgreSQL role '{user}' may not {what} here: it may not run mailroom's function {function}; the operator grants it with GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA \"{}\" TO \"{user}\" (see the least privilege in docs/POSTGRES.md)",
                    self.schema
                ));
            }
            return Error::RefusedWith {
                reason: format!(
                    "the PostgreSQL role '{user}' may not {what} here: in strict mode a role acts only as the identities given to it"
                ),
                fix: Box::new(mailroom_core::Fix::IdentityRole),
            };
        }
        if is_lost(e) {
            return sentence(
                format!(
                    "the connection to the PostgreSQL server at {} broke while it was asked to {what}",
                    self.shown
                ),
                "nothing was changed; check the server and run the command again".to_owned(),
            );
        }
        sentence(
            format!("the PostgreSQL server at {} failed to {what}", self.shown),
            said(e),
        )
    }

    /// Runs a read, again on a fresh connection when the one it had turned out to be closed (a
    /// pooled connection the server dropped while idle).
    pub(crate) fn read<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let mut client = self.take()?;
        match f(&mut client) {
            Ok(v) => {
                self.give(client);
                Ok(v)
            }
            Err(e) if client.is_closed() || is_lost(&e) => {
                let mut fresh = self.connect()?;
                let v = f(&mut fresh).map_err(|e| self.failed(what, &e))?;
                self.give(fresh);
                Ok(v)
            }
            Err(e) => {
                self.give(client);
                Err(self.failed(what, &e))
            }
        }
    }

    /// Runs `f` in one transaction and commits it. A transaction PostgreSQL aborted to resolve
    /// a deadlock or serialization race is run again; so is one whose connection broke before
    /// the commit was sent (the server rolled it back). A connection lost during the commit is
    /// reported as unconfirmed: the change may or may not have happened.
    pub(crate) fn write<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
    ) -> Result<T, Error> {
        let mut reconnected = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut client = self.take()?;
            match run_transaction(&mut client, &mut f) {
                Ok(v) => {
                    self.give(client);
                    return Ok(v);
                }
                Err(Failure::NotDone(e)) if (is_lost(&e) || client.is_closed()) && !reconnected => {
                    reconnected = true;
                }
                Err(Failure::NotDone(e)) if is_retryable(&e) && attempt < ATTEMPTS => {
                    self.give(client);
                }
                Err(Failure::NotDone(e)) => {
                    self.give(client);
                    return Err(self.failed(what, &e));
                }
                Err(Failure::Unconfirmed(e)) => return Err(unconfirmed(&self.shown, what, &e)),
            }
        }
    }
}

impl PgStore {
    /// Runs the prepared statement `sql`, one statement that is its own transaction and may
    /// safely run twice (its effect is keyed, like a send's copies by message id): one round
    /// trip where [`PgStore::write`] takes three or more. A statement PostgreSQL aborted to
    /// resolve a deadlock is run again. So is one whose connection broke, on a new connection:
    /// it may have committed before the break, and running it again then changes nothing.
    /// When the new connection breaks too, the change is reported as unconfirmed (it may or
    /// may not have happened) unless no attempt got as far as running it: a break while
    /// preparing is an ordinary failure, nothing was changed.
    pub(crate) fn write_prepared(
        &self,
        what: &str,
        sql: &'static str,
        types: &[Type],
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, Error> {
        let mut broken = false;
        // Whether an attempt may have run the statement: one that broke while running it.
        let mut maybe_ran = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            // After a break, a fresh connection: the idle ones may have broken with it.
            let mut client = if broken {
                self.connect()?
            } else {
                self.take()?
            };
            let (e, running) = match client.call(sql, types, params) {
                Ok(rows) => {
                    self.give(client);
                    return Ok(rows);
                }
                Err(CallError::Preparing(e)) => (e, false),
                Err(CallError::Running(e)) => (e, true),
            };
            if is_lost(&e) || client.is_closed() {
                maybe_ran |= running;
                if broken {
                    if maybe_ran {
                        return Err(unconfirmed(&self.shown, what, &e));
                    }
                    return Err(self.failed(what, &e));
                }
                broken = true;
            } else if is_retryable(&e) && attempt < ATTEMPTS {
                self.give(client);
            } else {
                self.give(client);
                return Err(self.failed(what, &e));
            }
        }
    }
}

/// Where a call of a prepared statement failed ([`Conn::call`]).
pub(crate) enum CallError {
    /// While preparing it: it was not run.
    Preparing(postgres::Error),
    /// While running it: on a broken connection, it may have run.
    Running(postgres::Error),
}

impl From<CallError> for postgres::Error {
    fn from(e: CallError) -> postgres::Error {
        match e {
            CallError::Preparing(e) | CallError::Running(e) => e,
        }
    }
}

/// Whether the server refused a prepared statement because what it returns changed since it
/// was prepared (a migration altered a table or function it reads): prepared again, it runs.
fn is_stale_plan(e: &postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::FEATURE_NOT_SUPPORTED
            && db
                .message()
                .starts_with("cached plan must not change result type")
    })
}

/// A connection of the pool, with the statements prepared on it: the statements a send runs
/// (the lookup and the delivery) are parsed and analysed once per connection rather than at
/// every call, which is most of what the server spent on a send.
pub(crate) struct Conn {
    client: Client,
    prepared: Vec<(&'static str, Statement)>,
}

impl Conn {
    pub(crate) fn new(client: Client) -> Conn {
        Conn {
            client,
            prepared: Vec::new(),
        }
    }

    /// `sql` prepared on this connection, the first time only. `sql` is a constant of this
    /// crate (a few of them), so a list is the whole cache.
    pub(crate) fn prepared(
        &mut self,
        sql: &'static str,
        types: &[Type],
    ) -> Result<Statement, postgres::Error> {
        if let Some((_, st)) = self.prepared.iter().find(|(s, _)| *s == sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare_typed(sql, types)?;
        self.prepared.push((sql, st.clone()));
        Ok(st)
    }

    /// Runs `sql`, prepared on this connection ([`Conn::prepared`]). A statement the server
    /// refuses because its result type changed since it was prepared (it refuses before
    /// running anything) is dropped, prepared again and run once more.
    pub(crate) fn call(
        &mut self,
        sql: &'static str,
        types: &[Type],
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, CallError> {
        let st = self.prepared(sql, types).map_err(CallError::Preparing)?;
        match self.client.query(&st, params) {
            Err(e) if is_stale_plan(&e) => {
                self.prepared.retain(|(s, _)| *s != sql);
                drop(st);
                let st = self.prepared(sql, types).map_err(CallError::Preparing)?;
                self.client.query(&st, params).map_err(CallError::Running)
            }
            result => result.map_err(CallError::Running),
        }
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// The sentence for a change whose request reached the server but whose answer never came.
fn unconfirmed(shown: &str, what: &str, e: &postgres::Error) -> Error {
    sentence(
        format!(
            "the connection to the PostgreSQL server at {shown} broke while it was asked to {what}"
        ),
        format!(
            "the request reached it but no answer came back ({e}), so it may or may not have happened; look before doing it again (a send: check the outbox, or send again with the same --key)"
        ),
    )
}

fn run_transaction<T>(
    client: &mut Conn,
    f: &mut impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
) -> Result<T, Failure> {
    let mut tx = client.transaction().map_err(Failure::NotDone)?;
    let v = f(&mut tx).map_err(Failure::NotDone)?;
    match tx.commit() {
        Ok(()) => Ok(v),
        Err(e) if is_lost(&e) || e.code().is_none() => Err(Failure::Unconfirmed(e)),
        Err(e) => Err(Failure::NotDone(e)),
    }
}
