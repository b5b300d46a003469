//! The console served in process on port 0 with small limits, over real sockets.
//!
//! `cfg(test)` marks every module, helpers included, as test code for clippy's
//! `allow-unwrap-in-tests` and friends (clippy.toml).
#![cfg(test)]

mod limits;
