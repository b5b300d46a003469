//! Opening a store, written once: a home directory or a PostgreSQL URL becomes an [`AnyStore`],
//! the store behind the core's `Store` trait plus the few things only one kind of store does
//! (its `doctor`, a role's SQL, whether a home is there yet). Every front end of the binary
//! (the commands, `mcp`, `serve`, `export`'s target, `setup --check`) opens through here, so a
//! third store is added in this file alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use mailroom_core::{Address, Error, Finding, Store};
use mailroom_store_fs::FsStore;
use mailroom_store_pg::PgStore;

/// Where a mailroom is: a home directory, or the URL of a PostgreSQL database.
pub enum Place {
    Home(PathBuf),
    /// `from` names where the URL came from, for the sentence refusing one that is not a URL.
    Url {
        raw: String,
        from: &'static str,
    },
}

/// The store a command works on: a home directory, or a PostgreSQL database.
pub enum AnyStore {
    Fs(FsStore),
    /// Shared so that a long-lived server (`mcp`) can hold it too.
    Pg(Arc<PgStore>),
}

/// Opens the store at `place`; `quick` gives up connecting sooner (the hooks, `setup --check`).
/// A home is not created here: the first write creates it.
pub fn open(place: Place, quick: bool) -> Result<AnyStore> {
    match place {
        Place::Home(home) => Ok(AnyStore::Fs(FsStore::new(home))),
        Place::Url { raw, from } => {
            if !mailroom_store_pg::is_url(raw.trim()) {
                return Err(Error::Invalid(format!(
                    "{from} '{}' is not a PostgreSQL URL; write postgres://USER@HOST:PORT/DATABASE (or use --home DIR for a directory)",
                    mailroom_store_pg::redacted(&raw)
                ))
                .into());
            }
            Ok(AnyStore::Pg(Arc::new(open_pg(raw.trim(), quick)?)))
        }
    }
}

/// Opens the PostgreSQL store at `url`, with the password from `PGPASSWORD` or the password
/// file when the URL has none; `quick` gives up connecting sooner (the hooks). A password file
/// ignored for its permissions is said on stderr, as libpq says it.
fn open_pg(url: &str, quick: bool) -> Result<PgStore, Error> {
    let timeout = if quick {
        mailroom_store_pg::QUICK_CONNECT_TIMEOUT
    } else {
        mailroom_store_pg::DEFAULT_CONNECT_TIMEOUT
    };
    let passwords = mailroom_store_pg::PasswordSources::from_process();
    let (config, warning) = mailroom_store_pg::parse_url_for(url, timeout, &passwords)?;
    if let Some(w) = warning {
        crate::errln!("mailroom: warning: {w}");
    }
    PgStore::open_config(config)
}

/// How one store stands to another, for a copy from one into the other.
pub enum Overlap {
    /// The very same mailroom.
    Same,
    /// A home inside the other's home.
    Inside,
}

impl AnyStore {
    pub fn as_dyn(&self) -> &dyn Store {
        match self {
            AnyStore::Fs(s) => s,
            AnyStore::Pg(s) => s.as_ref(),
        }
    }

    pub fn describe(&self) -> String {
        self.as_dyn().describe()
    }

    /// The store for a long-lived server, and whether its calls are plain system calls (the
    /// file store's), which need no async runtime of their own.
    pub fn shared(&self) -> (Arc<dyn Store>, bool) {
        match self {
            AnyStore::Fs(fs) => (Arc::new(FsStore::new(fs.home().to_path_buf())), true),
            AnyStore::Pg(pg) => (pg.clone(), false),
        }
    }

    pub fn doctor(&self, fix: bool) -> Result<Vec<Finding>> {
        match self {
            AnyStore::Fs(s) => Ok(s.doctor(fix)?),
            // Opening it checked the connection and the schema; `doctor` looks at the rows.
            AnyStore::Pg(s) => Ok(s.doctor(fix)?),
        }
    }

    /// The home that is not there yet (nothing was ever written to it), if this is one.
    pub fn missing_home(&self) -> Result<Option<&Path>> {
        match self {
            AnyStore::Fs(fs) if !fs.exists()? => Ok(Some(fs.home())),
            _ => Ok(None),
        }
    }

    /// The SQL that creates the PostgreSQL login role `role` acting only as `address`.
    pub fn role_script(&self, address: &Address, role: &str) -> Result<String> {
        match self {
            AnyStore::Pg(pg) => Ok(pg.role_script(address, role)),
            AnyStore::Fs(_) => Err(Error::Invalid(
                "roles are for a PostgreSQL mailroom; give its URL (--url or MAILROOM_URL)".into(),
            )
            .into()),
        }
    }

    /// Whether `target` is this very mailroom, or a home inside this one.
    pub fn overlap(&self, target: &AnyStore) -> Option<Overlap> {
        match (self, target) {
            (AnyStore::Pg(source), AnyStore::Pg(target)) => {
                source.same_as(target).then_some(Overlap::Same)
            }
            (AnyStore::Fs(source), AnyStore::Fs(target)) => {
                let home = resolved(source.home());
                let target = resolved(target.home());
                if target == home {
                    Some(Overlap::Same)
                } else if target.starts_with(&home) {
                    Some(Overlap::Inside)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// The home directory, for a sentence that names it (`None`: not a home).
    pub fn home(&self) -> Option<&Path> {
        match self {
            AnyStore::Fs(fs) => Some(fs.home()),
            AnyStore::Pg(_) => None,
        }
    }
}

/// `path` with every symbolic link and `..` of the part that exists resolved, and the rest
/// (directories an export would create) appended: two spellings of one place compare equal.
fn resolved(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_owned(),
        }
    }
}
