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
    /// Malformed input, with what to give instead (each front end names its own fields).
    #[error("{reason}")]
    InvalidWith { reason: String, fix: Box<Fix> },
    #[error("project '{0}' does not exist")]
    ProjectNotFound(String),
    #[error("project '{project}' has no channel '{channel}'")]
    ChannelNotFound { channel: String, project: String },
    #[error("{}", unknown_handle(.handle, .project, .suggestions))]
    UnknownHandle {
        handle: String,
        project: String,
        suggestions: Vec<String>,
    },
    #[error("'{handle}' is not an active member of any project; write it as {handle}@PROJECT")]
    HandleNowhere { handle: String },
    #[error(
        "there is no {what} '{written}', and '{existing}' is close to it (did you mean '{existing}'?)"
    )]
    CloseName {
        what: &'static str,
        written: String,
        existing: String,
        /// What creates `written` on purpose.
        create: Box<Fix>,
    },
    #[error("{address} is inactive")]
    Inactive { address: Address },
    #[error("'{name}' matches several mailboxes: {}; write one of them in full", .candidates.join(", "))]
    AmbiguousHandle {
        name: String,
        candidates: Vec<String>,
    },
    #[error("no message matching '{prefix}' for {mailbox}")]
    MessageNotFound {
        prefix: String,
        mailbox: Address,
        /// The listing the message would be in.
        list: Box<Fix>,
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
    #[error("message {id} is already {state} at {recipient}; only unread mail can be cancelled")]
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
    /// Not found, with the step that would make or find it.
    #[error("{reason}")]
    NotFoundWith { reason: String, fix: Box<Fix> },
    #[error("{0}")]
    Refused(String),
    /// Refused by the rules, with the step that would be allowed.
    #[error("{reason}")]
    RefusedWith { reason: String, fix: Box<Fix> },
    /// Collides with something that exists (a name taken).
    #[error("{0}")]
    Conflict(String),
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
    s
}

/// What the user can do about an error, as data: the core says what, each front end says how
/// (the CLI as a command to run, an MCP server as a tool to call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fix {
    /// List the pending mail.
    Inbox,
    /// Wait again, or look at the pending mail.
    WaitAgain,
    /// List what one sent.
    Outbox,
    /// List recently archived mail.
    Recover,
    /// Show the project's broadcasts.
    Broadcasts,
    /// List the projects.
    Projects,
    /// List a project's channels.
    Channels { project: String },
    /// List a project's roster.
    Roster { project: String },
    /// Create a project.
    AddProject { project: String },
    /// Put a handle on a project's roster.
    AddMember { handle: String, project: String },
    /// Make a member active again.
    Activate { handle: String, project: String },
    /// Change a member's status (activate or deactivate).
    ChangeStatus { project: String },
    /// Set a project's policy.
    SetPolicy {
        project: String,
        policy: crate::store::Policy,
    },
    /// Correct a message (in place while unread, else a correction).
    Edit { id: MessageId },
    /// Withdraw one's unread message.
    Cancel { id: MessageId },
    /// Un-send one's broadcast.
    Retract { id: MessageId },
    /// Do the inner step anyway, on purpose (a name that looked like a typo).
    Anyway(Box<Fix>),
    /// Ask the operator or a member of the project to take the inner step.
    AskFor(Box<Fix>),
    /// Act as this address instead (it may do what the caller may not).
    ActAs { address: String },
    /// Give a message a body or a subject.
    GiveContent,
    /// Say what an edit changes: subject, priority or body.
    GiveChanges,
    /// Name the messages to archive, or archive the whole mailbox.
    NameIds,
    /// Name a recipient, or broadcast or post to a channel instead.
    NameRecipient,
    /// Reach the whole project with a broadcast, or split the recipients.
    SplitRecipients,
    /// Post to a channel as a new one, although its name is close to an existing channel's.
    NewChannel { channel: String },
    /// Have the store checked (`repair`: and what is safe repaired) by the operator's doctor.
    Doctor { repair: bool },
    /// Connect with the role of the identity to act as (strict mode on PostgreSQL: the
    /// operator makes one per identity).
    IdentityRole,
    /// Ask the operator to put a member on the roster of `project` (strict mode: only the
    /// operator's role changes projects and rosters).
    OperatorAddsMember { project: String },
}

/// A store's own error that comes with a step to take: `Error::store(context, Advised { .. })`
/// reads `context: text`, and [`Error::fix`] answers `fix`, which each front end words its own
/// way (a store never names a command of one).
#[derive(Debug)]
pub struct Advised {
    pub text: String,
    pub fix: Fix,
}

impl std::fmt::Display for Advised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Advised {}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidName { .. }
            | Error::InvalidAddress { .. }
            | Error::Invalid(_)
            | Error::InvalidWith { .. } => ErrorKind::Invalid,
            Error::ProjectNotFound(_)
            | Error::UnknownHandle { .. }
            | Error::CloseName { .. }
            | Error::HandleNowhere { .. }
            | Error::ChannelNotFound { .. }
            | Error::NotFound(_)
            | Error::NotFoundWith { .. }
            | Error::MessageNotFound { .. } => ErrorKind::NotFound,
            Error::Inactive { .. }
            | Error::NotSender { .. }
            | Error::NotCancellable { .. }
            | Error::WrongState { .. }
            | Error::Refused(_)
            | Error::RefusedWith { .. } => ErrorKind::Refused,
            Error::AmbiguousHandle { .. } | Error::AmbiguousId { .. } | Error::Conflict(_) => {
                ErrorKind::Conflict
            }
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Store { .. } => ErrorKind::Store,
        }
    }

    /// The step that would help, when there is one (each front end words it).
    pub fn fix(&self) -> Option<Fix> {
        let address_fix = |a: &Address| {
            a.project().map(|p| Fix::Activate {
                handle: a.handle.to_string(),
                project: p.to_string(),
            })
        };
        match self {
            Error::ProjectNotFound(project) => Some(Fix::AddProject {
                project: project.clone(),
            }),
            Error::UnknownHandle {
                handle, project, ..
            } => Some(Fix::AddMember {
                handle: handle.clone(),
                project: project.clone(),
            }),
            Error::HandleNowhere { .. } => Some(Fix::Projects),
            Error::ChannelNotFound { project, .. } => Some(Fix::Channels {
                project: project.clone(),
            }),
            Error::CloseName { create, .. } => Some(Fix::Anyway(create.clone())),
            Error::Inactive { address } => address_fix(address),
            Error::MessageNotFound { list, .. } => Some(list.as_ref().clone()),
            Error::NotCancellable { id, .. } => Some(Fix::Edit { id: *id }),
            Error::RefusedWith { fix, .. }
            | Error::InvalidWith { fix, .. }
            | Error::NotFoundWith { fix, .. } => Some(fix.as_ref().clone()),
            Error::Timeout(_) => Some(Fix::WaitAgain),
            Error::Store { source, .. } => source.downcast_ref::<Advised>().map(|a| a.fix.clone()),
            _ => None,
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

impl ErrorKind {
    /// The exit code of this kind (documented in docs/CLI.md); every front end reports it.
    pub fn code(self) -> u8 {
        match self {
            ErrorKind::Invalid => 2,
            ErrorKind::NotFound => 3,
            ErrorKind::Refused => 4,
            ErrorKind::Conflict => 5,
            ErrorKind::Timeout => 6,
            ErrorKind::Store => 1,
        }
    }

    /// The word JSON error reports carry for this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "invalid",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Refused => "refused",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Store => "failure",
        }
    }
}
