//! The record of every command a run started: who ran it, its arguments, how it ended and
//! what it printed, one JSON line each, kept beside the home for a post-mortem.
//!
//! Invariant: a line is written for every finished or killed process; bodies are summarised
//! (their length and first line), never elided silently, so the journal stays small.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

use crate::runner::Outcome;

#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl Journal {
    pub fn create(path: &Path) -> Result<Journal> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Journal {
            path: path.to_path_buf(),
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records one run; `note` says what the harness meant by it.
    pub fn record(&self, who: Option<&str>, args: &[&str], note: &str, o: &Outcome) -> Result<()> {
        let stdout = o
            .json()
            .map(summarise)
            .unwrap_or_else(|| Value::String(o.stdout.clone()));
        let line = json!({
            "as": who,
            "args": args.iter().map(|a| short(a)).collect::<Vec<_>>(),
            "note": note,
            "code": o.code,
            "signal": o.signal,
            "stdout": stdout,
            "stderr": o.stderr.trim(),
        });
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        writeln!(out, "{line}").with_context(|| format!("cannot write {}", self.path.display()))
    }

    pub fn flush(&self) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.flush()
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// A long argument (a body) as its first line and length.
fn short(a: &str) -> String {
    if a.len() <= 80 {
        a.to_owned()
    } else {
        format!("{}… ({} bytes)", a.lines().next().unwrap_or(""), a.len())
    }
}

/// JSON output with every `body` replaced by its first line and length.
fn summarise(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| match (k.as_str(), &v) {
                    ("body", Value::String(s)) => (k, Value::String(short(s))),
                    _ => (k, summarise(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(summarise).collect()),
        other => other,
    }
}
