//! Names of projects, handles and channels: one validated type, so a path built from a name can
//! never leave its directory.
//!
//! The rule is `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`; names starting with `_` are reserved for
//! mailroom itself. A `Name` that exists has passed the rule, so stores may use it as a path
//! component as it is.
//!
//! Names compare ASCII-case-insensitively (`Api`, `api` and `API` are one name): equality,
//! ordering and hashing all fold case, so no map or comparison anywhere can tell two spellings
//! apart. A name keeps the spelling it was written with for display; stores keep the spelling a
//! name was first written with and find it under any other.

use std::fmt;

/// Longest name accepted, in bytes (all accepted characters are ASCII).
pub const MAX_NAME_LEN: usize = 64;

/// A project, handle or channel name that follows the naming rule.
#[derive(Clone, Debug)]
pub struct Name(String);

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    /// Case-folded order, so it agrees with equality (names are ASCII by the rule).
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        let a = self.0.bytes().map(|b| b.to_ascii_lowercase());
        a.cmp(other.0.bytes().map(|b| b.to_ascii_lowercase()))
    }
}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for b in self.0.bytes() {
            state.write_u8(b.to_ascii_lowercase());
        }
        state.write_u8(0xff);
    }
}

/// Why a string is not a valid name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("is empty")]
    Empty,
    #[error("is {0} characters long; the limit is {MAX_NAME_LEN}")]
    TooLong(usize),
    #[error("starts with '_', which is reserved for mailroom itself")]
    Reserved,
    #[error("must start with a letter or a digit")]
    BadStart,
    #[error("contains {0}; only letters, digits, '.', '_' and '-' are allowed")]
    BadChar(String),
}

impl Name {
    /// Checks `s` against the naming rule.
    pub fn parse(s: &str) -> Result<Name, NameError> {
        let first = s.chars().next().ok_or(NameError::Empty)?;
        // Byte by byte: every allowed character is ASCII, and a name is parsed for every
        // address of every message listed. A byte that is not allowed starts the character
        // described (ASCII, or the lead byte of a longer one).
        if let Some(at) = s
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')))
        {
            let bad = s[at..].chars().next().unwrap_or_default();
            return Err(NameError::BadChar(describe_char(bad)));
        }
        if first == '_' {
            return Err(NameError::Reserved);
        }
        if !first.is_ascii_alphanumeric() {
            return Err(NameError::BadStart);
        }
        if s.len() > MAX_NAME_LEN {
            return Err(NameError::TooLong(s.chars().count()));
        }
        Ok(Name(s.to_owned()))
    }

    /// The handle of the operator's global mailbox (valid by the rule).
    pub(crate) fn human() -> Name {
        Name(crate::address::HUMAN.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `s` is this name in any case.
    pub fn matches(&self, s: &str) -> bool {
        self.0.eq_ignore_ascii_case(s)
    }
}

fn describe_char(c: char) -> String {
    match c {
        '/' | '\\' => format!("a path separator '{c}'"),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        ' ' => "a space".to_owned(),
        c => format!("'{c}'"),
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_rule() {
        for ok in ["a", "A9", "run-42", "my.repo_x", "0", &"x".repeat(64)] {
            assert_eq!(Name::parse(ok).map(|n| n.to_string()), Ok(ok.to_owned()));
        }
    }

    #[test]
    fn case_never_makes_two_names() {
        let a = Name::parse("Api").unwrap();
        let b = Name::parse("API").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Equal);
        let set: std::collections::HashSet<Name> = [a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_eq!(a.to_string(), "Api", "display keeps the spelling");
        assert!(Name::parse("apz").unwrap() > a);
        assert!(Name::parse("APB").unwrap() < a);
    }

    #[test]
    fn refuses_everything_else() {
        let cases: &[(&str, NameError)] = &[
            ("", NameError::Empty),
            ("../x", NameError::BadChar("a path separator '/'".into())),
            ("a/b", NameError::BadChar("a path separator '/'".into())),
            ("a\\b", NameError::BadChar("a path separator '\\'".into())),
            ("_x", NameError::Reserved),
            (".hidden", NameError::BadStart),
            ("-flag", NameError::BadStart),
            ("a b", NameError::BadChar("a space".into())),
            (
                "a\nb",
                NameError::BadChar("the control character U+000A".into()),
            ),
            (
                "a\u{7}",
                NameError::BadChar("the control character U+0007".into()),
            ),
            ("é", NameError::BadChar("'é'".into())),
            (&"x".repeat(65), NameError::TooLong(65)),
        ];
        for (input, want) in cases {
            assert_eq!(Name::parse(input).as_ref(), Err(want), "input {input:?}");
        }
    }
}
