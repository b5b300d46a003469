//! Runs the real `mailroom` binary as a separate process against one home, and records what
//! each run printed and how it ended.
//!
//! Invariant: every run gets `--json`, an explicit `--as` when it acts for someone, the home in
//! `MAILROOM_HOME`, no `MAILROOM_AS` from the environment, `MAILROOM_URL` only when the harness
//! runs against PostgreSQL (this mailroom's own schema), and a working
//! directory outside any git checkout, so nothing but its arguments decides what it does.

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::disk::Snapshot;
use crate::journal::Journal;

/// The `mailroom` binary to drive: `--bin`, else the one next to this executable (Cargo puts
/// every binary of a workspace in the same `target/<profile>/`).
pub fn locate_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()
            .context("cannot find this executable's path; pass --bin PATH")?
            .parent()
            .map(|dir| dir.join("mailroom"))
            .context("this executable has no parent directory; pass --bin PATH")?,
    };
    if !path.is_file() {
        bail!(
            "no mailroom binary at {}: build it (`cargo build -p mailroom-cli`, with --release for full runs) or pass --bin PATH",
            path.display()
        );
    }
    Ok(path)
}

/// How one run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    fn from_output(out: Output) -> Outcome {
        Outcome {
            code: out.status.code(),
            signal: out.status.signal(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// The JSON it printed, if it printed JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.stdout).ok()
    }

    /// One line describing how it ended, for problem reports.
    pub fn describe(&self) -> String {
        let end = match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "unknown end".into(),
        };
        let err = self.stderr.trim();
        if err.is_empty() {
            end
        } else {
            format!("{end}: {}", err.lines().last().unwrap_or(err))
        }
    }
}

/// One home, the binary that works on it, and the journal its runs go to.
#[derive(Debug)]
pub struct Mailroom<'j> {
    bin: PathBuf,
    home: PathBuf,
    cwd: PathBuf,
    journal: &'j Journal,
    runs: AtomicU64,
    /// The PostgreSQL mailroom (a schema of its own) when the run is against a server.
    url: Option<String>,
    exports: AtomicU64,
}

impl<'j> Mailroom<'j> {
    /// `home` is created by the binary on its first write; `cwd` must exist and must not be in
    /// a git checkout.
    pub fn new(
        bin: &Path,
        home: PathBuf,
        cwd: PathBuf,
        journal: &'j Journal,
        url: Option<String>,
    ) -> Mailroom<'j> {
        Mailroom {
            bin: bin.to_path_buf(),
            home,
            cwd,
            journal,
            runs: AtomicU64::new(0),
            url,
            exports: AtomicU64::new(0),
        }
    }

    /// The PostgreSQL URL of this mailroom, when it is on a server.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// Every copy in this mailroom as it is now. A file home is read directly; a PostgreSQL
    /// one is read through the store: `mailroom export --to DIR` into a fresh directory (the
    /// core's own export, so ids, states, outboxes and bodies come out as the store holds them),
    /// which is then read like a home and removed.
    pub fn snapshot(&self) -> Result<Snapshot> {
        if self.url.is_none() {
            return Snapshot::scan(&self.home);
        }
        let n = self.exports.fetch_add(1, Ordering::Relaxed);
        let mut dir = self.home.clone().into_os_string();
        dir.push(format!("-export-{n}"));
        let dir = PathBuf::from(dir);
        let Some(to) = dir.to_str() else {
            bail!("{} is not UTF-8", dir.display());
        };
        let o = self.run(
            Some("HUMAN"),
            &["export", "--to", to],
            None,
            "check: export",
        )?;
        if !o.ok() {
            bail!(
                "the checker's export of the PostgreSQL mailroom failed: {}",
                o.describe()
            );
        }
        let snap = Snapshot::scan(&dir)?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(snap)
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// How many processes this has started.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    fn command(&self, who: Option<&str>, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.env_remove("MAILROOM_AS")
            .env_remove("MAILROOM_URL")
            .env("MAILROOM_HOME", &self.home)
            .current_dir(&self.cwd)
            .arg("--json");
        if let Some(url) = &self.url {
            cmd.env("MAILROOM_URL", url);
        }
        if let Some(w) = who {
            cmd.args(["--as", w]);
        }
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    /// Starts `mailroom --json [--as WHO] ARGS`, with `stdin` (if any) written and closed.
    pub fn spawn(&self, who: Option<&str>, args: &[&str], stdin: Option<&str>) -> Result<Child> {
        let mut cmd = self.command(who, args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        self.runs.fetch_add(1, Ordering::Relaxed);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A child killed early closes its end: that broken pipe is part of the fault.
            let _ = pipe.write_all(text.as_bytes());
        }
        Ok(child)
    }

    /// Starts `mailroom --json --as WHO ARGS` as a long-lived server the harness talks to
    /// (`mcp`): its stdin, stdout and stderr stay pipes for the caller to drive and drain.
    pub fn serve(&self, who: &str, args: &[&str]) -> Result<Child> {
        let mut cmd = self.command(Some(who), args);
        cmd.stdin(Stdio::piped());
        self.runs.fetch_add(1, Ordering::Relaxed);
        cmd.spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))
    }

    pub fn journal(&self) -> &Journal {
        self.journal
    }

    /// Runs to completion and records the run.
    pub fn run(
        &self,
        who: Option<&str>,
        args: &[&str],
        stdin: Option<&str>,
        note: &str,
    ) -> Result<Outcome> {
        let child = self.spawn(who, args, stdin)?;
        self.finish(child, who, args, note)
    }

    /// Waits for a started (perhaps killed) run, collects what it printed and records it.
    pub fn finish(
        &self,
        child: Child,
        who: Option<&str>,
        args: &[&str],
        note: &str,
    ) -> Result<Outcome> {
        let out = child
            .wait_with_output()
            .context("cannot wait for a mailroom process")?;
        let outcome = Outcome::from_output(out);
        self.journal.record(who, args, note, &outcome)?;
        Ok(outcome)
    }
}
