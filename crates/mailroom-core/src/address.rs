//! Addresses (`handle` or `handle@project`) and the scope a mailbox lives in.
//!
//! `HUMAN` is the operator's one global mailbox: whatever project it is written with, it means
//! the same mailbox.

use std::fmt;

use crate::name::{Name, NameError};

/// The handle of the operator's global mailbox.
pub const HUMAN: &str = "HUMAN";

/// Where a mailbox lives: the global scope (only `HUMAN`) or a project.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Global,
    Project(Name),
}

/// A fully resolved mailbox address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address {
    pub handle: Name,
    pub scope: Scope,
}

/// An address as written by a user: a handle and perhaps a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressSpec {
    pub handle: Name,
    pub project: Option<Name>,
}

/// Why a string is not an address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("the handle {0}")]
    Handle(NameError),
    #[error("the project {0}")]
    Project(NameError),
}

impl AddressSpec {
    /// Parses `handle` or `handle@project`.
    pub fn parse(s: &str) -> Result<AddressSpec, AddressError> {
        // At the byte (an '@' is one): cheaper than a char searcher for every address listed.
        let (handle, project) = match s.bytes().position(|b| b == b'@') {
            Some(at) => (&s[..at], Some(&s[at + 1..])),
            None => (s, None),
        };
        let handle = Name::parse(handle).map_err(AddressError::Handle)?;
        let project = project
            .map(|p| Name::parse(p).map_err(AddressError::Project))
            .transpose()?;
        Ok(AddressSpec { handle, project })
    }

    /// True when this names the operator's global mailbox (`HUMAN` in any case, with or
    /// without a project).
    pub fn is_human(&self) -> bool {
        self.handle.matches(HUMAN)
    }
}

/// A mailbox as a caller wrote it, read the one way every front end reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// `HUMAN` (whatever project it is written with), `handle@project`, or a bare handle read
    /// in the project the caller is in.
    Address(Address),
    /// A bare handle with no project to read it in.
    Bare(Name),
}

/// Reads `written` (`HUMAN`, `handle@project` or `handle`): a bare handle is read in the
/// project `project` gives, which is asked only then (its own parse error stands).
pub fn read_written(
    written: &str,
    project: impl FnOnce() -> crate::error::Result<Option<Name>>,
) -> crate::error::Result<Written> {
    let spec =
        AddressSpec::parse(written).map_err(|source| crate::error::Error::InvalidAddress {
            input: written.to_owned(),
            source,
        })?;
    if spec.is_human() {
        return Ok(Written::Address(Address::human()));
    }
    let project = match spec.project {
        Some(p) => p,
        None => match project()? {
            Some(p) => p,
            None => return Ok(Written::Bare(spec.handle)),
        },
    };
    Ok(Written::Address(Address::in_project(spec.handle, project)))
}

impl Address {
    /// The operator's global mailbox.
    pub fn human() -> Address {
        Address {
            handle: Name::human(),
            scope: Scope::Global,
        }
    }

    pub fn in_project(handle: Name, project: Name) -> Address {
        Address {
            handle,
            scope: Scope::Project(project),
        }
    }

    pub fn is_human(&self) -> bool {
        self.scope == Scope::Global
    }

    pub fn project(&self) -> Option<&Name> {
        match &self.scope {
            Scope::Global => None,
            Scope::Project(p) => Some(p),
        }
    }

    /// Parses the canonical form written by [`fmt::Display`]: `HUMAN` or `handle@project`.
    pub fn parse_canonical(s: &str) -> Result<Address, AddressError> {
        let spec = AddressSpec::parse(s)?;
        if spec.is_human() {
            return Ok(Address::human());
        }
        match spec.project {
            Some(p) => Ok(Address::in_project(spec.handle, p)),
            None => Err(AddressError::Project(NameError::Empty)),
        }
    }
}

impl Address {
    /// Writes `handle@project` (a global address: the bare handle), as `Display` does, without
    /// the formatting machinery (an inbox writes one per message).
    pub fn write_to<W: fmt::Write + ?Sized>(&self, out: &mut W) -> fmt::Result {
        out.write_str(self.handle.as_ref())?;
        match &self.scope {
            Scope::Global => Ok(()),
            Scope::Project(p) => {
                out.write_str("@")?;
                out.write_str(p.as_ref())
            }
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

impl fmt::Display for AddressSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.project {
            None => write!(f, "{}", self.handle),
            Some(p) => write!(f, "{}@{}", self.handle, p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        for s in ["bob@web", "HUMAN", "a.b@c-d"] {
            assert_eq!(
                Address::parse_canonical(s).map(|a| a.to_string()),
                Ok(s.into())
            );
        }
        assert_eq!(Address::parse_canonical("HUMAN@web"), Ok(Address::human()));
    }

    #[test]
    fn human_in_any_case_is_the_operator() {
        for s in ["human", "Human", "HUMAN@web", "human@web"] {
            let a = Address::parse_canonical(s).unwrap();
            assert_eq!(a.to_string(), "HUMAN", "{s}");
        }
        assert_eq!(
            Address::parse_canonical("Bob@Web").unwrap(),
            Address::parse_canonical("bob@web").unwrap()
        );
    }

    #[test]
    fn names_the_bad_part() {
        assert_eq!(
            AddressSpec::parse("bob@../x"),
            Err(AddressError::Project(NameError::BadChar(
                "a path separator '/'".into()
            )))
        );
        assert_eq!(
            AddressSpec::parse("_bob"),
            Err(AddressError::Handle(NameError::Reserved))
        );
        assert_eq!(
            AddressSpec::parse("bob@"),
            Err(AddressError::Project(NameError::Empty))
        );
    }
}
