//! Turning the process's surroundings (flags, environment, the git checkout) into data for the
//! core: the store to use and who is acting.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use mailroom_core::identity::{self, Identity, Inputs, Repo};
use mailroom_core::store::OriginClaim;
use mailroom_core::{Address, Error, Mailroom, Name};

use crate::cli::Cli;
use crate::files::ReadError;
use crate::open::{AnyStore, Place};

/// The process environment mailroom reads, gathered once so tests and the demo can set it.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub home: Option<PathBuf>,
    pub as_: Option<String>,
    pub cwd: Option<PathBuf>,
    /// `MAILROOM_URL`: a PostgreSQL store.
    pub url: Option<String>,
    /// `MAILROOM_ENFORCE_RESERVATIONS`: whether the pre-edit hook refuses an edit under another
    /// agent's lease, as written (read by [`Ctx::enforce_reservations`]).
    pub enforce_reservations: Option<String>,
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            home: std::env::var_os("MAILROOM_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            as_: std::env::var("MAILROOM_AS").ok(),
            cwd: std::env::current_dir().ok(),
            url: std::env::var("MAILROOM_URL").ok().filter(|v| !v.is_empty()),
            enforce_reservations: std::env::var("MAILROOM_ENFORCE_RESERVATIONS")
                .ok()
                .filter(|v| !v.is_empty()),
        }
    }
}

/// Everything a command needs.
pub struct Ctx {
    pub store: AnyStore,
    /// `--home` as given, for hints that must name it.
    home_flag: Option<PathBuf>,
    pub inputs: Inputs,
    pub json: bool,
    /// Lazily resolved identity (commands that need none never pay for it).
    identity: Option<Option<Identity>>,
    /// The JSON document a command had ready when it failed: printed with the error object
    /// inside, so stdout holds one document.
    pub failed_report: Option<serde_json::Value>,
    /// `enforce_reservations` in `.mailroom.toml`.
    config_enforce: Option<bool>,
}

impl Ctx {
    pub fn new(cli: &Cli, env: &Env) -> Result<Ctx> {
        Ctx::open(cli, env, false)
    }

    /// [`Ctx::new`] for the hooks and `setup --check`: a PostgreSQL server that does not answer
    /// is given up on after a short connect timeout, so a session's start is never held long.
    pub fn new_quick(cli: &Cli, env: &Env) -> Result<Ctx> {
        Ctx::open(cli, env, true)
    }

    fn open(cli: &Cli, env: &Env, quick: bool) -> Result<Ctx> {
        if cli.project.as_deref() == Some(crate::cli::PROJECT_ALONE)
            && !matches!(cli.command, crate::cli::Command::Setup(_))
        {
            return Err(Error::Invalid(
                "--project needs a project name (only `setup` takes it alone, for project scope)"
                    .into(),
            )
            .into());
        }
        let home = match (&cli.home, &env.home) {
            (Some(h), _)
                if h.as_os_str().is_empty() || h.as_os_str().as_encoded_bytes()[0] == b'-' =>
            {
                // `-` reads as "standard input" and `-x` as a flag: both are slips, never a
                // directory meant to hold mail.
                return Err(Error::Invalid(format!(
                    "--home '{}' is not a directory name; give a path (./{} if that is really the name)",
                    h.display(),
                    h.display()
                ))
                .into());
            }
            // A path typed on the command line means what the shell it was typed in means.
            (Some(h), _) => std::path::absolute(h)
                .with_context(|| format!("cannot resolve --home {}", h.display()))?,
            (None, Some(h)) if h.is_relative() => {
                // An agent's working directory changes under it: a relative home would put
                // mail in a different place from every other directory.
                return Err(Error::Invalid(format!(
                    "MAILROOM_HOME is the relative path '{}'; set it to an absolute path (or unset it for the default home)",
                    h.display()
                ))
                .into());
            }
            (None, Some(h)) => h.clone(),
            (None, None) => default_home()?,
        };
        let (repo, config_url, config_enforce) =
            match env.cwd.as_deref().map(find_repo).transpose()? {
                Some(Some((repo, config))) => (Some(repo), config.url, config.enforce_reservations),
                _ => (None, None, None),
            };
        // Where the mailroom is, first found wins: `--url`, `--home`, `MAILROOM_URL`,
        // `MAILROOM_HOME`, `url` in `.mailroom.toml`, the default home.
        let place = match (&cli.url, &cli.home, &env.url, &env.home, config_url) {
            (Some(_), Some(_), ..) => {
                return Err(Error::Invalid(
                    "--url and --home name two different mailrooms; pass one of them".into(),
                )
                .into());
            }
            (Some(u), ..) => Place::Url {
                raw: u.clone(),
                from: "--url",
            },
            (None, Some(_), ..) => Place::Home(home.clone()),
            (None, None, Some(u), ..) => Place::Url {
                raw: u.clone(),
                from: "MAILROOM_URL",
            },
            (None, None, None, Some(_), _) => Place::Home(home.clone()),
            (None, None, None, None, Some(u)) => Place::Url {
                raw: u,
                from: "url in .mailroom.toml",
            },
            _ => Place::Home(home.clone()),
        };
        let store = crate::open::open(place, quick)?;
        Ok(Ctx {
            home_flag: cli.home.is_some().then(|| home.clone()),
            store,
            inputs: Inputs {
                flag_as: cli.as_.clone(),
                env_as: env.as_.clone(),
                flag_project: cli.project.clone(),
                repo,
            },
            json: cli.json,
            identity: None,
            failed_report: None,
            config_enforce,
        })
    }

    /// Whether an edit under another agent's exclusive lease is refused rather than told of:
    /// `MAILROOM_ENFORCE_RESERVATIONS` (`1`/`true`/`on` or `0`/`false`/`off`) when set, else
    /// `enforce_reservations` in `.mailroom.toml`, else not.
    pub fn enforce_reservations(&self, env: &Env) -> Result<bool> {
        match env.enforce_reservations.as_deref().map(str::trim) {
            Some("1" | "true" | "on" | "yes") => Ok(true),
            Some("0" | "false" | "off" | "no") => Ok(false),
            Some(other) => Err(Error::Invalid(format!(
                "MAILROOM_ENFORCE_RESERVATIONS is '{other}'; set it to 1 (refuse edits under another agent's lease) or 0 (tell of them), or unset it"
            ))
            .into()),
            None => Ok(self.config_enforce.unwrap_or(false)),
        }
    }

    pub fn mailroom(&self) -> Mailroom<'_> {
        Mailroom::new(self.store.as_dyn())
    }

    /// The identity, if one can be had, its names spelled as they were first written.
    pub fn identity(&mut self) -> Result<Option<Identity>> {
        if let Some(i) = &self.identity {
            return Ok(i.clone());
        }
        let mut id = identity::resolve(&self.inputs)?;
        if let Some(i) = &mut id {
            self.mailroom().check_acts_as(&i.address)?;
            i.address = self.mailroom().spelled(&i.address)?;
        }
        self.identity = Some(id.clone());
        Ok(id)
    }

    /// The identity as given, its names not yet spelled as first written, for an operation
    /// that spells them itself while it reads the sender's entry; [`Self::spelled_as`] then
    /// records what it found. An identity already resolved is returned as it is.
    pub fn me_as_given(&mut self) -> Result<Identity> {
        let id = match &self.identity {
            Some(i) => i.clone(),
            None => identity::resolve(&self.inputs)?,
        };
        let id = id.ok_or_else(no_identity)?;
        self.mailroom().check_acts_as(&id.address)?;
        Ok(id)
    }

    /// Records `address` (the spelling an operation found) as the identity's.
    pub fn spelled_as(&mut self, mut identity: Identity, address: &Address) {
        identity.address = address.clone();
        self.identity = Some(Some(identity));
    }

    /// Records the checkout that claims a git-derived identity, once a command using it has
    /// succeeded (a refused command leaves no trace), and warns when another checkout claimed
    /// it first.
    pub fn record_claim(&self) -> Result<()> {
        let Some(Some(Identity {
            address,
            origin: Some(path),
            ..
        })) = &self.identity
        else {
            return Ok(());
        };
        if let OriginClaim::Other(first) = self.store.as_dyn().claim_origin(address, path)? {
            crate::errln!(
                "warning: {address} is also used by the checkout {first}; checkouts with the same name share one mailbox (give this one its own handle in .mailroom.toml)"
            );
        }
        Ok(())
    }

    /// The command line's words for hints, naming what the reader's context does not imply.
    pub fn words(&mut self) -> Result<crate::words::CliWords> {
        let identity = self.identity()?;
        Ok(crate::words::CliWords::new(
            identity.as_ref(),
            self.home_flag.as_deref(),
            self.inputs.flag_project.as_deref(),
        ))
    }

    /// The words for advice after a failure: without the identity when it cannot be had (the
    /// failure may be about it).
    pub fn words_for_advice(&mut self) -> crate::words::CliWords {
        let identity = self.identity().ok().flatten();
        crate::words::CliWords::new(
            identity.as_ref(),
            self.home_flag.as_deref(),
            self.inputs.flag_project.as_deref(),
        )
    }

    /// The identity, or the error that says how to get one.
    pub fn me(&mut self) -> Result<Address> {
        match self.identity()? {
            Some(i) => Ok(i.address),
            None => Err(no_identity().into()),
        }
    }

    /// The project whose channels `me` posts to and reads: its own, or for the global HUMAN
    /// the one named by --project (else .mailroom.toml's, else default).
    pub fn channel_project(&mut self, me: &Address) -> Result<Name> {
        match me.project() {
            Some(p) if self.inputs.flag_project.is_none() => Ok(p.clone()),
            _ => self.project(),
        }
    }

    /// The project a roster or project command is about.
    pub fn project(&mut self) -> Result<Name> {
        if self.inputs.flag_project.is_none()
            && let Ok(Some(i)) = identity::resolve(&self.inputs)
            && let Some(p) = i.address.project()
        {
            return Ok(p.clone());
        }
        Ok(identity::project_of(&self.inputs)?)
    }
}

fn default_home() -> Result<PathBuf> {
    directories::ProjectDirs::from("", "", "mailroom")
        .map(|d| d.data_dir().to_owned())
        .context("cannot find a home directory for mailroom; set MAILROOM_HOME or pass --home")
}

/// The `.mailroom.toml` keys.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoConfig {
    project: Option<String>,
    handle: Option<String>,
    url: Option<String>,
    /// The pre-edit hook refuses an edit under another agent's lease.
    enforce_reservations: Option<bool>,
}

/// What `.mailroom.toml` says about everything but the identity.
struct RepoSettings {
    url: Option<String>,
    enforce_reservations: Option<bool>,
}

/// The git checkout around `cwd` (the nearest ancestor holding `.git`), without running git.
fn find_repo(cwd: &Path) -> Result<Option<(Repo, RepoSettings)>> {
    let Some(top) = cwd.ancestors().find(|d| d.join(".git").exists()) else {
        return Ok(None);
    };
    let config_path = top.join(".mailroom.toml");
    // Opened without blocking and checked on the descriptor, so a FIFO or device there is a
    // clear error instead of a hang; a settings file is a few lines, so the read is bounded.
    const MAX_CONFIG_BYTES: u64 = 64 * 1024;
    let config = match crate::files::read_regular(&config_path, MAX_CONFIG_BYTES, true) {
        Ok(contents) => {
            let text = String::from_utf8(contents.bytes).map_err(|_| {
                Error::Invalid(format!(
                    "{} is not UTF-8 text; it takes the keys project, handle, url and enforce_reservations",
                    config_path.display()
                ))
            })?;
            toml::from_str::<RepoConfig>(&text).map_err(|e| {
                Error::Invalid(format!(
                    "{} is not valid: {}; it takes the keys project, handle, url and enforce_reservations",
                    config_path.display(),
                    e.message()
                ))
            })?
        }
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => RepoConfig::default(),
        Err(ReadError::NotRegular(_)) => {
            return Err(Error::Invalid(format!(
                "{} is not a regular file (a FIFO, device or directory); mailroom reads its settings only from a regular file",
                config_path.display()
            ))
            .into());
        }
        Err(ReadError::TooLarge(_)) => {
            return Err(Error::Invalid(format!(
                "{} is over {MAX_CONFIG_BYTES} bytes; it takes the keys project, handle, url and enforce_reservations",
                config_path.display()
            ))
            .into());
        }
        Err(ReadError::Io(e)) => {
            return Err(e).with_context(|| format!("cannot read {}", config_path.display()));
        }
    };
    Ok(Some((
        Repo {
            toplevel: top.display().to_string(),
            config_project: config.project,
            config_handle: config.handle,
        },
        RepoSettings {
            url: config.url,
            enforce_reservations: config.enforce_reservations,
        },
    )))
}

fn no_identity() -> Error {
    Error::Invalid(
        "no identity: this directory is not inside a git repository; pass --as HANDLE, set MAILROOM_AS, or run inside a repository".into(),
    )
}
