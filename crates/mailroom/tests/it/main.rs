//! mailroom's end-to-end tests: the real binary, a temporary home per test, whole outputs
//! compared as snapshots.
//!
//! `cfg(test)` marks every module, helpers included, as test code for clippy's
//! `allow-unwrap-in-tests` and friends (clippy.toml).
#![cfg(test)]

mod authority;
mod channels;
mod compaction;
mod concurrency;
mod demo;
mod errors;
mod export;
mod forgery;
mod git_hook;
mod hook;
mod hostile;
mod identity;
mod import;
mod inbox;
mod lifecycle;
mod mcp;
mod mcp_http;
mod postgres;
mod readers;
mod reserve;
mod roster;
mod search;
mod send;
mod serve;
mod setup;
mod support;
mod terminal;
mod tokens;
mod wait;
