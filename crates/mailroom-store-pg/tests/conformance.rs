//! The store conformance suite run against PostgreSQL: one test per case, each in a schema of
//! its own on the test server (see `mailroom_store_pg::testing`).

#![allow(
    clippy::expect_used,
    reason = "a test: a store that does not open must fail it"
)]

use mailroom_store_pg::PgStore;
use mailroom_store_pg::testing::TestDb;

fn with_fresh_store(case: mailroom_conformance::Case) {
    let Some(db) = TestDb::create("conformance") else {
        return;
    };
    let store = PgStore::open(&db.url()).expect("the test mailroom opens");
    case(&store);
    drop(store);
    drop(db);
}

mailroom_conformance::store_tests!(with_fresh_store);
