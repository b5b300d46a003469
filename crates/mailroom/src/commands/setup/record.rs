//! What setup wrote into each config file, kept where no repository sees it: `--uninstall`
//! takes out only what a record says setup wrote, and gives a file it finds as setup left it
//! its bytes from before setup back, byte for byte.
//!
//! One record per config file, named by a hash of the file's absolute path, in
//! `$XDG_STATE_HOME/mailroom/setup/` (default `~/.local/state/mailroom/setup/`). A file changed
//! since setup wrote it is edited instead: setup's entries out, the entries setup's took the
//! place of back in.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most a record may take (it holds a config's text twice).
const MAX_RECORD_BYTES: u64 = 2 * super::MAX_CONFIG_BYTES + 64 * 1024;

/// An entry that was in a config before setup's took its place, to be put back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Replaced {
    /// `CONTAINER.mailroom`, as its raw JSON text.
    Server { container: String, raw: String },
    /// One hook of `hooks.EVENT` (a group holding only that command, or a flat command).
    Hook { event: String, value: Value },
    /// Codex's `[mcp_servers.mailroom]`, as a TOML document holding that table.
    Table { raw: String },
}

/// What setup did to one config file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub path: PathBuf,
    /// The file's text before setup first wrote it; None: there was no file.
    pub before: Option<String>,
    /// What setup last wrote.
    pub after: String,
    /// Folders setup created for the file, outermost first.
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
    /// Entries setup's took the place of.
    #[serde(default)]
    pub replaced: Vec<Replaced>,
    /// Hooks setup wrote (their JSON values), to tell them from the user's own.
    #[serde(default)]
    pub hooks: Vec<Value>,
    /// Whether setup wrote the `mailroom` server entry.
    #[serde(default)]
    pub server: bool,
}

/// Where the records are.
#[derive(Debug)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(home: &Path) -> Records {
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".local").join("state"));
        Records {
            dir: state.join("mailroom").join("setup"),
        }
    }

    fn file(&self, config: &Path) -> PathBuf {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(config.as_os_str().as_encoded_bytes());
        let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// The record of `config`, if setup keeps one and it reads. A record that does not read
    /// (damaged, or of another config whose path hashed alike) counts as none: setup then
    /// edits only what it can tell is its own.
    pub fn get(&self, config: &Path) -> Option<Record> {
        let path = self.file(config);
        let bytes = crate::files::read_regular(&path, MAX_RECORD_BYTES, false).ok()?;
        let record: Record = serde_json::from_slice(&bytes.bytes).ok()?;
        (record.path == config).then_some(record)
    }

    /// Keeps `record` (written through a temporary file and a rename).
    pub fn put(&self, record: &Record) -> Result<()> {
        let text = serde_json::to_string_pretty(record)?;
        super::write::write_file(&self.file(&record.path), Some(&text), 0o600)
            .with_context(|| format!("cannot keep setup's record in {}", self.dir.display()))
    }

    pub fn remove(&self, config: &Path) -> Result<()> {
        super::write::write_file(&self.file(config), None, 0o600)
    }
}
