//! The harness's quick sizes, run against the debug build of `mailroom` on every
//! `cargo test --workspace` (which builds every binary of the workspace, `mailroom` included,
//! into the same `target/debug/` as `mailroom-stress`). Each run uses a fresh seed and prints
//! it; a failure prints the problems and keeps the home and journal for a post-mortem.
//!
//! `cfg(test)` marks the helpers as test code for clippy's `allow-expect-in-tests`.
#![cfg(test)]

use std::path::PathBuf;
use std::process::Command;

const STRESS: &str = env!("CARGO_BIN_EXE_mailroom-stress");

/// `target/<profile>/mailroom`, next to the harness binary.
fn mailroom_bin() -> PathBuf {
    let bin = std::path::Path::new(STRESS)
        .parent()
        .expect("the harness binary is in a directory")
        .join("mailroom");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p mailroom-cli` first (`cargo test --workspace` builds it)",
        bin.display()
    );
    bin
}

/// Runs `mailroom-stress ARGS --bin <debug mailroom>` and returns its summary line.
fn stress(args: &[&str], summary_prefix: &str) -> String {
    let out = Command::new(STRESS)
        .args(args)
        .arg("--bin")
        .arg(mailroom_bin())
        .output()
        .expect("start mailroom-stress");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mailroom-stress {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let summary = stdout
        .lines()
        .rfind(|l| l.starts_with(summary_prefix))
        .unwrap_or_default()
        .to_owned();
    println!("{stdout}");
    summary
}

#[test]
fn quick_load_loses_doubles_tears_and_misdelivers_nothing() {
    let summary = stress(&["load", "--quick"], "load: operations=");
    assert!(
        summary.contains(" lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0 "),
        "{summary}"
    );
    // An MCP sender and an MCP reader were in the mix, and both got their work done.
    assert!(
        summary.contains(" mcp(servers=2 ") && summary.contains(" acknowledged=100 "),
        "{summary}"
    );
    assert!(!summary.contains(" listings=0)"), "{summary}");
}

#[test]
fn quick_crash_trials_lose_double_and_tear_nothing_and_doctor_cleans_up() {
    let summary = stress(&["crash", "--quick"], "crash: trials=");
    assert!(
        summary.contains(" lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0 "),
        "{summary}"
    );
    assert!(
        !summary.contains("faults_injected=0 "),
        "no kill landed mid-run: {summary}"
    );
    // MCP servers were among the processes killed (each trial picks one of seven victims,
    // two of them MCP: fifty trials without one are a chance of 1 in 20 million).
    assert!(!summary.contains(" mcp(trials=0 "), "{summary}");
}

/// The PostgreSQL server of the store's tests, or `None` when `scripts/test` said there is
/// none (`MAILROOM_TEST_PG=skip`; CI sets `MAILROOM_TEST_PG_REQUIRED=1` and never skips).
fn pg_url(test: &str) -> Option<String> {
    if mailroom_store_pg::testing::skipped(test) {
        return None;
    }
    Some(mailroom_store_pg::testing::server_url())
}

#[test]
fn pg_quick_load_loses_doubles_tears_and_misdelivers_nothing() {
    let Some(url) = pg_url("pg_quick_load") else {
        return;
    };
    // The harness makes its own schema on the server and drops it after a passing run.
    let summary = stress(&["load", "--quick", "--url", &url], "load: operations=");
    assert!(
        summary.contains(" lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0 "),
        "{summary}"
    );
    assert!(
        summary.contains(" mcp(servers=2 ") && summary.contains(" acknowledged=100 "),
        "{summary}"
    );
}

#[test]
fn pg_quick_crash_trials_with_killed_clients_and_cut_backends_lose_and_double_nothing() {
    let Some(url) = pg_url("pg_quick_crash") else {
        return;
    };
    let summary = stress(&["crash", "--quick", "--url", &url], "crash: trials=");
    assert!(
        summary.contains(" lost=0 doubled=0 torn=0 misdelivered=0 mismatched=0 failed=0 "),
        "{summary}"
    );
    assert!(
        !summary.contains("faults_injected=0 "),
        "no kill landed mid-run: {summary}"
    );
    // About half of the CLI trials cut the command's backend instead of killing it; how many
    // cuts found a backend is in the summary (`pg(backends_cut=…)`). It is not asserted: run
    // beside the other suites, a quick run has been seen to report none, cause not yet known.
    assert!(summary.contains(" pg(backends_cut="), "{summary}");
}
