//! The core's one error type: each variant is a sentence a user can act on, and each belongs to
//! one [`ErrorKind`], which front ends turn into an exit code.

use crate::address::{Address, AddressError};
use crate::message::{MessageId, State};
use crate::name::NameError;

/// The class of an error, which decides its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed input: names, bodies, arguments (exit 2, like usage errors).
    Invalid,
    /// The thing named does not exist (exit 3).
    NotFound,
    /// The thing exists but the rules or its state forbid the operation (exit 4).
    Refused,
    /// The request matches several things, or collides with another (exit 5).
    Conflict,
    /// A wait ran out (exit 6).
    Timeout,
    /// The store failed: I/O, permissions, damaged data (exit 1).
    Store,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the {what} '{input}' is not a valid name: it {source}")]
    InvalidName {
        what: &'static str,
        input: String,
        #[source]
        source: NameError,
    },
    #[error("'{input}' is not a valid address: {source} (write handle or handle@project)")]
    InvalidAddress {
        input: String,
        #[source]
        source: AddressError,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("project '{0}' does not exist; create it with `mailroom projects add {0}`")]
    ProjectNotFound(String),
    #[error("{}", unknown_handle(.handle, .project, .suggestions))]
    UnknownHandle {
        handle: String,
        project: String,
        suggestions: Vec<String>,
    },
    #[error(
        "'{handle}' is not an active member of any project; write it as {handle}@PROJECT (`mailroom projects` lists them)"
    )]
    HandleNowhere { handle: String },
    #[error(
        "there is no {what} '{written}', and '{existing}' is close to it (did you mean '{existing}'?); to create '{written}' anyway, run `{create}` first"
    )]
    CloseName {
        what: &'static str,
        written: String,
        existing: String,
        create: String,
    },
    #[error("{address} is inactive; reactivate it with `mailroom roster activate {handle} --project {project}`", handle = .address.handle, project = .address.project().map(|p| p.as_str()).unwrap_or("?"))]
    Inactive { address: Address },
    #[error("'{name}' matches several mailboxes: {}; write one of them in full", .candidates.join(", "))]
    AmbiguousHandle {
        name: String,
        candidates: Vec<String>,
    },
    #[error("no message matching '{prefix}' for {mailbox}; list them with `mailroom {hint}`")]
    MessageNotFound {
        prefix: String,
        mailbox: Address,
        hint: &'static str,
    },
    #[error("'{prefix}' matches {} messages ({}); type more of the id", .candidates.len(), .candidates.join(", "))]
    AmbiguousId {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("message {id} was sent by {sender}, not by you; only its sender can {action} it")]
    NotSender {
        id: MessageId,
        sender: Address,
        action: &'static str,
    },
    #[error(
        "message {id} is already {state} at {recipient}; only unread mail can be cancelled (send a correction with `mailroom edit {id}` instead)"
    )]
    NotCancellable {
        id: MessageId,
        recipient: Address,
        state: State,
    },
    #[error("message {id} is {state}, not {expected}; {hint}")]
    WrongState {
        id: MessageId,
        state: State,
        expected: &'static str,
        hint: &'static str,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{context}: {source}")]
    Store {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn unknown_handle(handle: &str, project: &str, suggestions: &[String]) -> String {
    let mut s = format!("'{handle}' is not on the roster of project '{project}'");
    if let Some(best) = suggestions.first() {
        s.push_str(&format!(" (did you mean '{best}'?)"));
    }
    s.push_str(&format!(
        "; add it with `mailroom roster add {handle} --project {project}`"
    ));
    s
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidName { .. } | Error::InvalidAddress { .. } | Error::Invalid(_) => {
                ErrorKind::Invalid
            }
            Error::ProjectNotFound(_)
            | Error::UnknownHandle { .. }
            | Error::CloseName { .. }
            | Error::HandleNowhere { .. }
            | Error::NotFound(_)
            | Error::MessageNotFound { .. } => ErrorKind::NotFound,
            Error::Inactive { .. }
            | Error::NotSender { .. }
            | Error::NotCancellable { .. }
            | Error::WrongState { .. }
            | Error::Refused(_) => ErrorKind::Refused,
            Error::AmbiguousHandle { .. } | Error::AmbiguousId { .. } => ErrorKind::Conflict,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Store { .. } => ErrorKind::Store,
        }
    }

    /// Wraps a store's own error with what was being done.
    pub fn store(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Store {
            context: context.into(),
            source: source.into(),
        }
    }
}
