//! A run's working directory: the homes it creates, a plain working directory outside any git
//! checkout, and the journal. Removed after a clean run, kept (and named) after a failed one.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::journal::Journal;
use crate::rng::Rng;
use crate::runner::locate_binary;

/// Options both subcommands take.
#[derive(Debug, Args)]
pub struct Common {
    /// The mailroom binary (default: `mailroom` next to this executable).
    #[arg(long)]
    pub bin: Option<PathBuf>,
    /// Replays a run's choices (printed at the start of every run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the working directory (homes and journal) even when the run passes.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug)]
pub struct Work {
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub bin: PathBuf,
    pub seed: u64,
    pub journal: Journal,
    keep: bool,
}

impl Work {
    pub fn new(common: &Common, label: &str) -> Result<Work> {
        let bin = locate_binary(common.bin.as_deref())?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("mailroom-stress-{label}-"))
            .tempdir()
            .context("cannot create a temporary directory")?;
        let root = dir.path().to_path_buf();
        let cwd = root.join("work");
        std::fs::create_dir(&cwd).with_context(|| format!("cannot create {}", cwd.display()))?;
        let journal = Journal::create(&root.join("journal.jsonl"))?;
        Ok(Work {
            dir: Some(dir),
            root,
            cwd,
            bin,
            seed: common.seed.unwrap_or_else(Rng::fresh_seed),
            journal,
            keep: common.keep,
        })
    }

    /// A fresh home path under the working directory.
    pub fn home(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Flushes the journal; keeps the directory when the run failed or `--keep` asked for it.
    pub fn close(mut self, passed: bool) -> Result<()> {
        self.journal.flush()?;
        if (!passed || self.keep)
            && let Some(dir) = self.dir.take()
        {
            let kept = dir.keep();
            eprintln!(
                "kept the homes and the journal in {} (journal: {})",
                kept.display(),
                self.journal.path().display()
            );
        }
        Ok(())
    }
}
