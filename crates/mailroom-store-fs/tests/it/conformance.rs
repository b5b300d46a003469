//! The store conformance suite run against the file store: one test per case, each in a fresh
//! temporary home.

use mailroom_store_fs::FsStore;

fn with_fresh_store(case: mailroom_conformance::Case) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    case(&FsStore::new(dir.path().join("home")));
}

mailroom_conformance::store_tests!(with_fresh_store);
