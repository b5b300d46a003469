//! Who is acting: the precedence of the places an identity can come from, as a pure function.
//!
//! The binary gathers the inputs (flags, environment, the git top-level and its
//! `.mailroom.toml`); this module decides. The working directory's name is never an input:
//! outside a git repository with no explicit identity there is none.

use crate::address::{Address, AddressSpec};
use crate::error::{Error, Result};
use crate::name::Name;

/// The project git-derived and unqualified identities live in.
pub const DEFAULT_PROJECT: &str = "default";

/// Where an identity came from, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    RepoConfig,
    GitToplevel,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "--as",
            Source::Env => "MAILROOM_AS",
            Source::RepoConfig => ".mailroom.toml",
            Source::GitToplevel => "git top-level",
        }
    }
}

/// The git checkout the command runs in, as found by the binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Repo {
    /// Absolute path of the top-level directory.
    pub toplevel: String,
    /// `project` and `handle` from `.mailroom.toml` at the top-level, when present.
    pub config_project: Option<String>,
    pub config_handle: Option<String>,
}

/// Everything identity depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    pub flag_as: Option<String>,
    pub env_as: Option<String>,
    pub flag_project: Option<String>,
    pub repo: Option<Repo>,
}

/// A resolved identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub address: Address,
    pub source: Source,
    /// The checkout that derived it, for git-derived identities (claims are recorded).
    pub origin: Option<String>,
}

fn name(what: &'static str, s: &str) -> Result<Name> {
    Name::parse(s).map_err(|source| Error::InvalidName {
        what,
        input: s.to_owned(),
        source,
    })
}

/// The project named by `--project`, else by `.mailroom.toml`, else [`DEFAULT_PROJECT`].
pub fn project_of(inputs: &Inputs) -> Result<Name> {
    if let Some(p) = &inputs.flag_project {
        return name("project", p);
    }
    if let Some(p) = inputs
        .repo
        .as_ref()
        .and_then(|r| r.config_project.as_deref())
    {
        return name("project", p);
    }
    name("project", DEFAULT_PROJECT)
}

/// Resolves the identity, or `Ok(None)` when there is none to be had.
pub fn resolve(inputs: &Inputs) -> Result<Option<Identity>> {
    let explicit = [
        (inputs.flag_as.as_deref(), Source::Flag),
        (inputs.env_as.as_deref(), Source::Env),
    ];
    for (value, source) in explicit {
        // An empty MAILROOM_AS is unset, as shells treat empty variables; an empty --as is
        // a mistake, never a cue to fall back to the git identity.
        let Some(value) = value.filter(|v| !v.is_empty() || source == Source::Flag) else {
            continue;
        };
        let spec = AddressSpec::parse(value).map_err(|source| Error::InvalidAddress {
            input: value.to_owned(),
            source,
        })?;
        return Ok(Some(Identity {
            address: qualify(spec, inputs)?,
            source,
            origin: None,
        }));
    }
    let Some(repo) = &inputs.repo else {
        return Ok(None);
    };
    if let Some(handle) = &repo.config_handle {
        let spec = AddressSpec::parse(handle).map_err(|source| Error::InvalidAddress {
            input: handle.clone(),
            source,
        })?;
        if spec.is_human() {
            return Err(never_derived(&format!(
                "{}/.mailroom.toml says handle = \"{handle}\"",
                repo.toplevel.trim_end_matches('/')
            )));
        }
        return Ok(Some(Identity {
            address: qualify(spec, inputs)?,
            source: Source::RepoConfig,
            origin: None,
        }));
    }
    let base = repo
        .toplevel
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let handle = Name::parse(base).map_err(|source| {
        Error::Invalid(format!(
            "the git top-level '{base}' is not a valid handle ({source}); set one with --as, MAILROOM_AS or a .mailroom.toml"
        ))
    })?;
    if handle.matches(crate::address::HUMAN) {
        return Err(never_derived(&format!(
            "the git top-level {} is named {base}",
            repo.toplevel
        )));
    }
    Ok(Some(Identity {
        address: qualify(
            AddressSpec {
                handle,
                project: None,
            },
            inputs,
        )?,
        source: Source::GitToplevel,
        origin: Some(repo.toplevel.clone()),
    }))
}

/// Acting as the operator is an explicit act: a repository can never make an agent `HUMAN`.
fn never_derived(why: &str) -> Error {
    Error::Refused(format!(
        "{why}, but the operator's identity HUMAN is never taken from a repository; the operator passes --as HUMAN or sets MAILROOM_AS=HUMAN, and an agent's repository names its own handle in .mailroom.toml"
    ))
}

fn qualify(spec: AddressSpec, inputs: &Inputs) -> Result<Address> {
    if spec.is_human() {
        return Ok(Address::human());
    }
    let project = match spec.project {
        Some(p) => p,
        None => project_of(inputs)?,
    };
    Ok(Address::in_project(spec.handle, project))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(top: &str, project: Option<&str>, handle: Option<&str>) -> Option<Repo> {
        Some(Repo {
            toplevel: top.into(),
            config_project: project.map(Into::into),
            config_handle: handle.map(Into::into),
        })
    }

    fn who(inputs: Inputs) -> Option<(String, Source)> {
        resolve(&inputs)
            .unwrap()
            .map(|i| (i.address.to_string(), i.source))
    }

    #[test]
    fn precedence_is_flag_env_config_toplevel() {
        let all = Inputs {
            flag_as: Some("flag".into()),
            env_as: Some("env".into()),
            flag_project: None,
            repo: repo("/src/web", Some("team"), Some("cfg")),
        };
        assert_eq!(who(all.clone()), Some(("flag@team".into(), Source::Flag)));
        let no_flag = Inputs {
            flag_as: None,
            ..all.clone()
        };
        assert_eq!(who(no_flag.clone()), Some(("env@team".into(), Source::Env)));
        let no_env = Inputs {
            env_as: None,
            ..no_flag
        };
        assert_eq!(
            who(no_env.clone()),
            Some(("cfg@team".into(), Source::RepoConfig))
        );
        let bare = Inputs {
            repo: repo("/src/web", None, None),
            ..no_env
        };
        assert_eq!(who(bare), Some(("web@default".into(), Source::GitToplevel)));
    }

    #[test]
    fn no_git_and_nothing_explicit_means_no_identity() {
        assert_eq!(who(Inputs::default()), None);
        let empty_env = Inputs {
            env_as: Some(String::new()),
            ..Inputs::default()
        };
        assert_eq!(who(empty_env), None);
        let empty_flag = Inputs {
            flag_as: Some(String::new()),
            repo: repo("/src/web", None, None),
            ..Inputs::default()
        };
        assert!(matches!(
            resolve(&empty_flag),
            Err(Error::InvalidAddress { .. })
        ));
    }

    #[test]
    fn explicit_project_in_the_address_wins_and_human_is_global() {
        let i = Inputs {
            flag_as: Some("bob@ops".into()),
            flag_project: Some("web".into()),
            ..Inputs::default()
        };
        assert_eq!(who(i), Some(("bob@ops".into(), Source::Flag)));
        let h = Inputs {
            flag_as: Some("HUMAN".into()),
            flag_project: Some("web".into()),
            ..Inputs::default()
        };
        assert_eq!(who(h), Some(("HUMAN".into(), Source::Flag)));
    }

    #[test]
    fn human_is_never_derived_from_a_repository() {
        for handle in ["HUMAN", "human", "HUMAN@web", "Human@ops"] {
            let i = Inputs {
                repo: repo("/src/web", None, Some(handle)),
                ..Inputs::default()
            };
            assert!(matches!(resolve(&i), Err(Error::Refused(_))), "{handle}");
        }
        for top in ["/src/HUMAN", "/src/human/"] {
            let i = Inputs {
                repo: repo(top, None, None),
                ..Inputs::default()
            };
            assert!(matches!(resolve(&i), Err(Error::Refused(_))), "{top}");
        }
        let explicit = Inputs {
            env_as: Some("human".into()),
            repo: repo("/src/HUMAN", None, Some("HUMAN")),
            ..Inputs::default()
        };
        assert_eq!(who(explicit), Some(("HUMAN".into(), Source::Env)));
    }

    #[test]
    fn bad_identities_are_errors_not_guesses() {
        let bad = Inputs {
            flag_as: Some("../x".into()),
            ..Inputs::default()
        };
        assert!(matches!(resolve(&bad), Err(Error::InvalidAddress { .. })));
        let spaced = Inputs {
            repo: repo("/src/my repo", None, None),
            ..Inputs::default()
        };
        assert!(matches!(resolve(&spaced), Err(Error::Invalid(_))));
    }
}
