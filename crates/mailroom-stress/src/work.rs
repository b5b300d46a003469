//! A run's working directory: the homes it creates, a plain working directory outside any git
//! checkout, and the journal. Removed after a clean run, kept (and named) after a failed one.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::journal::Journal;
use crate::rng::Rng;
use crate::runner::{Mailroom, locate_binary};

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
    /// Run against a PostgreSQL server (postgres://USER@HOST:PORT/DATABASE) instead of
    /// directories: each home is a schema of its own there, created for the run and dropped
    /// after a passing one, and the checker reads it through `mailroom export --to DIR`.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
}

/// The PostgreSQL server a run uses, and the schemas it created there.
pub struct PgServer {
    base: String,
    admin: postgres::Config,
    schemas: std::sync::Mutex<Vec<String>>,
    /// The connection [`PgServer::cut`] uses, kept so that a volley of cuts is quick.
    cutter: std::sync::Mutex<Option<postgres::Client>>,
}

impl std::fmt::Debug for PgServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgServer")
            .field("server", &mailroom_store_pg::shown_url(&self.admin))
            .finish_non_exhaustive()
    }
}

impl PgServer {
    fn new(url: &str) -> Result<PgServer> {
        let admin = mailroom_store_pg::parse_url(url).map_err(|e| anyhow::anyhow!("--url: {e}"))?;
        let _ = admin.connect(postgres::NoTls).with_context(|| {
            format!(
                "the PostgreSQL server at {} does not answer",
                mailroom_store_pg::shown_url(&admin)
            )
        })?;
        Ok(PgServer {
            base: url.to_owned(),
            admin,
            schemas: std::sync::Mutex::new(Vec::new()),
            cutter: std::sync::Mutex::new(None),
        })
    }

    /// A connection as the URL's user, for creating schemas and cutting backends.
    pub fn admin(&self) -> Result<postgres::Client> {
        self.admin.connect(postgres::NoTls).with_context(|| {
            format!(
                "the PostgreSQL server at {} does not answer",
                mailroom_store_pg::shown_url(&self.admin)
            )
        })
    }

    /// A new empty schema and the URL of a mailroom in it. Its connections carry the
    /// schema's name as their `application_name`, so that [`PgServer::cut`] finds exactly
    /// them (other runs may share the server).
    fn schema_url(&self, label: &str) -> Result<String> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let schema = format!(
            "mrstress_{label}_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        self.admin()?
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .with_context(|| format!("cannot create the schema {schema}"))?;
        self.schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(schema.clone());
        let sep = if self.base.contains('?') { '&' } else { '?' };
        Ok(format!(
            "{}{sep}options=-c%20search_path%3D{schema}&application_name={schema}",
            self.base
        ))
    }

    /// Terminates every backend serving the mailroom at `url` (made by [`PgServer::schema_url`])
    /// right now; returns how many there were.
    pub fn cut(&self, url: &str) -> Result<usize> {
        let Some(app) = url.rsplit_once("application_name=").map(|(_, a)| a) else {
            return Ok(0);
        };
        let mut cutter = self
            .cutter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let client = match cutter.take() {
            Some(c) if !c.is_closed() => cutter.insert(c),
            _ => cutter.insert(self.admin()?),
        };
        let row = client.query_one(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&app],
        )?;
        let n: i64 = row.get(0);
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn drop_schemas(&self) -> Result<()> {
        let schemas = std::mem::take(
            &mut *self
                .schemas
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if schemas.is_empty() {
            return Ok(());
        }
        let mut c = self.admin()?;
        for s in schemas {
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"))
                .with_context(|| format!("cannot drop the schema {s}"))?;
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct Work {
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub bin: PathBuf,
    pub seed: u64,
    pub journal: Journal,
    pub pg: Option<PgServer>,
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
        let pg = common.url.as_deref().map(PgServer::new).transpose()?;
        Ok(Work {
            pg,
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

    /// A fresh mailroom for `name`: a home directory, and with `--url` a schema of its own on
    /// the server (the home then holds only what the CLI keeps beside the store).
    pub fn mailroom(&self, name: &str) -> Result<Mailroom<'_>> {
        let url = match &self.pg {
            Some(pg) => Some(
                pg.schema_url(
                    &name
                        .chars()
                        .filter(char::is_ascii_alphanumeric)
                        .take(12)
                        .collect::<String>()
                        .to_ascii_lowercase(),
                )?,
            ),
            None => None,
        };
        Ok(Mailroom::new(
            &self.bin,
            self.home(name),
            self.cwd.clone(),
            &self.journal,
            url,
        ))
    }

    /// Flushes the journal; keeps the directory when the run failed or `--keep` asked for it.
    pub fn close(mut self, passed: bool) -> Result<()> {
        self.journal.flush()?;
        if let Some(pg) = &self.pg
            && passed
            && !self.keep
        {
            pg.drop_schemas()?;
        }
        if (!passed || self.keep)
            && let Some(dir) = self.dir.take()
        {
            let kept = dir.keep();
            eprintln!(
                "kept the homes and the journal in {} (journal: {})",
                kept.display(),
                self.journal.path().display()
            );
            if let Some(pg) = &self.pg {
                eprintln!(
                    "kept the PostgreSQL schemas {}",
                    pg.schemas
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .join(" ")
                );
            }
        }
        Ok(())
    }
}
