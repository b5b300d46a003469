//! The `Reservations` role: the `leases` table (migration 0010). A change is one transaction
//! that first takes a transaction-scoped advisory lock on the project, then reads, decides and
//! writes, so two reservations of one project never decide from the same rows.

use mailroom_core::lease::{Lease, LeaseChange, Reservations};
use mailroom_core::{Address, Error, MessageId, Name, Result};
use postgres::types::Type;

use crate::PgStore;
use crate::codec::{key, mailbox_key};

const COLUMNS: &str = "id, holder, pattern, exclusive, reason, since, until";

fn lease_of(row: &postgres::Row) -> Option<Lease> {
    let seconds = |i: usize| jiff::Timestamp::from_second(row.get::<_, i64>(i)).ok();
    Some(Lease {
        id: MessageId::parse(row.get::<_, &str>(0))?,
        holder: Address::parse_canonical(row.get::<_, &str>(1)).ok()?,
        pattern: row.get::<_, String>(2),
        exclusive: row.get(3),
        reason: row.get(4),
        since: seconds(5)?,
        until: seconds(6)?,
    })
}

impl Reservations for PgStore {
    fn leases(&self, project: &Name) -> Result<Vec<Lease>> {
        let p = key(project);
        let rows = self.read("read the leases", |c| {
            c.query_typed(
                &format!("SELECT {COLUMNS} FROM leases WHERE project_key = $1"),
                &[(&p, Type::TEXT)],
            )
        })?;
        Ok(rows.iter().filter_map(lease_of).collect())
    }

    fn change_leases(
        &self,
        project: &Name,
        decide: &mut dyn FnMut(&[Lease]) -> Result<LeaseChange>,
    ) -> Result<()> {
        let p = key(project);
        let lock = i64::from_ne_bytes(
            crate::fnv(&format!("mailroom leases {} {p}", self.schema)).to_ne_bytes(),
        );
        let mut refused: Option<Error> = None;
        self.write("change the leases", |tx| {
            refused = None;
            tx.execute_typed("SELECT pg_advisory_xact_lock($1)", &[(&lock, Type::INT8)])?;
            let rows = tx.query_typed(
                &format!("SELECT {COLUMNS} FROM leases WHERE project_key = $1"),
                &[(&p, Type::TEXT)],
            )?;
            let leases: Vec<Lease> = rows.iter().filter_map(lease_of).collect();
            let change = match decide(&leases) {
                Ok(c) => c,
                Err(e) => {
                    // Nothing written yet: the transaction commits no change.
                    refused = Some(e);
                    return Ok(());
                }
            };
            let gone: Vec<String> = change.remove.iter().map(ToString::to_string).collect();
            if !gone.is_empty() {
                tx.execute_typed(
                    "DELETE FROM leases WHERE project_key = $1 AND id = ANY($2)",
                    &[(&p, Type::TEXT), (&gone, Type::TEXT_ARRAY)],
                )?;
            }
            for l in &change.add {
                let id = l.id.to_string();
                let holder = l.holder.to_string();
                let holder_key = mailbox_key(&l.holder);
                let (since, until) = (l.since.as_second(), l.until.as_second());
                tx.execute_typed(
                    "INSERT INTO leases (project_key, id, holder, holder_key, pattern, exclusive, reason, since, until) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                     ON CONFLICT (project_key, id) DO UPDATE SET holder = EXCLUDED.holder, \
                     holder_key = EXCLUDED.holder_key, pattern = EXCLUDED.pattern, \
                     exclusive = EXCLUDED.exclusive, reason = EXCLUDED.reason, \
                     since = EXCLUDED.since, until = EXCLUDED.until",
                    &[
                        (&p, Type::TEXT),
                        (&id, Type::TEXT),
                        (&holder, Type::TEXT),
                        (&holder_key, Type::TEXT),
                        (&l.pattern, Type::TEXT),
                        (&l.exclusive, Type::BOOL),
                        (&l.reason, Type::TEXT),
                        (&since, Type::INT8),
                        (&until, Type::INT8),
                    ],
                )?;
            }
            Ok(())
        })?;
        match refused {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
