//! Strict mode over leases: a role takes, renews and releases only its own, reads its
//! projects' leases, and cannot drop another's lease even by calling the store directly.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed step must fail it"
)]

use std::time::Duration;

use mailroom_core::lease::{LeaseChange, Reservations};
use mailroom_core::ops::Reserve;
use mailroom_core::{Address, ErrorKind, Mailroom, Name};
use mailroom_store_pg::PgStore;
use mailroom_store_pg::testing::TestDb;

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).unwrap()
}

fn reserve(pattern: &str) -> Reserve {
    Reserve {
        patterns: vec![pattern.to_owned()],
        exclusive: true,
        ttl: Duration::from_secs(3600),
        reason: None,
    }
}

#[test]
fn a_strict_role_holds_and_releases_only_its_own_leases() {
    let Some(db) = TestDb::create("strict_leases") else {
        return;
    };
    let s = db.schema().to_owned();
    let operator = PgStore::open(&db.url()).unwrap();
    let role = format!("mr_lease_{}", s.trim_start_matches("mailroom_test_"));
    let mut admin = db.admin();
    // The grants `mailroom role alice@web` prints.
    admin
        .batch_execute(&operator.role_sql(&role, "alice@web"))
        .unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let web = Name::parse("web").unwrap();
        let bobs = Mailroom::new(&operator)
            .reserve(&addr("bob@web"), &web, &reserve("docs/**"))
            .unwrap();
        let agent = PgStore::open(&db.url_as(&role)).unwrap();
        let m = Mailroom::new(&agent);
        m.reserve(&addr("alice@web"), &web, &reserve("src/**"))
            .unwrap();
        m.reserve(&addr("alice@web"), &web, &reserve("src/**"))
            .unwrap();
        assert_eq!(
            m.reservations(&web).unwrap().len(),
            2,
            "it reads its project's leases"
        );
        // Taking a lease in another's name is refused by the database.
        let mut forged = bobs[0].clone();
        forged.id = mailroom_core::MessageId::generate();
        forged.pattern = "lib/**".to_owned();
        let e = agent
            .change_leases(&web, &mut |_| {
                Ok(LeaseChange {
                    remove: Vec::new(),
                    add: vec![forged.clone()],
                })
            })
            .expect_err("a lease in bob's name is refused");
        assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
        // Dropping bob's lease changes nothing.
        agent
            .change_leases(&web, &mut |_| {
                Ok(LeaseChange {
                    remove: vec![bobs[0].id],
                    add: Vec::new(),
                })
            })
            .unwrap();
        assert_eq!(operator.leases(&web).unwrap().len(), 2);
        let gone = m
            .release(&addr("alice@web"), &web, &mailroom_core::ops::Release::All)
            .unwrap();
        assert_eq!(gone.len(), 1);
        assert_eq!(operator.leases(&web).unwrap().len(), 1);
    }));
    let _ = admin.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\""));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
