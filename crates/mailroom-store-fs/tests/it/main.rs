//! The file store's tests, in one binary: the shared store conformance suite, and what only
//! the file store promises.

// The whole binary is test code: this lets clippy's allow-expect-in-tests cover helpers too.
#![cfg(test)]

mod channels;
mod conformance;
mod files;
mod readers;
mod search;
