//! Each tool's input, as the client sends it: m_AI_l's field names for its thirteen tools, and
//! the same conventions for mailroom's own. The doc comments are the descriptions a model reads.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A count (`limit`) as a number or as the digits of one in a string (`"5"`): models often
/// quote numbers, and a string of digits means one thing only.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    struct Count;
    impl Visitor<'_> for Count {
        type Value = Option<usize>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a whole number such as 5")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            usize::try_from(n)
                .map(Some)
                .map_err(|_| E::custom(format!("{n} is too large a count")))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            match u64::try_from(n) {
                Ok(n) => self.visit_u64(n),
                Err(_) => Err(E::custom(format!("{n} is not a count: write 0 or more"))),
            }
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
            if n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&n) {
                // Whole and within u32, checked on the line above: the cast is exact.
                return self.visit_u64(n as u64);
            }
            Err(E::custom(format!("{n} is not a whole number such as 5")))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            match s.trim().parse::<u64>() {
                Ok(n) => self.visit_u64(n),
                Err(_) => Err(E::custom(format!(
                    "{:?} is not a whole number such as 5",
                    mailroom_core::text::field(s)
                ))),
            }
        }
    }
    d.deserialize_any(Count)
}

/// A number of seconds, as a number or as one written in a string (`"30"`, `"2.5"`).
fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    struct Seconds;
    impl Visitor<'_> for Seconds {
        type Value = Option<f64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a number of seconds such as 30")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            // Only compared with the 300 s cap: precision past 2^53 cannot matter.
            Ok(Some(n as f64))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            // Only compared with the 300 s cap: precision past 2^53 cannot matter.
            Ok(Some(n as f64))
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
            Ok(Some(n))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            match s.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => Ok(Some(n)),
                _ => Err(E::custom(format!(
                    "{:?} is not a number of seconds such as 30",
                    mailroom_core::text::field(s)
                ))),
            }
        }
    }
    d.deserialize_any(Seconds)
}

/// A tool's input struct with the acting member's two fields appended, written once here:
/// serde cannot flatten a struct into one that refuses unknown fields, so the fields are added
/// by this macro, with the same descriptions everywhere, and read through [`ActingMember`].
macro_rules! acting_member {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
            /// The acting member's project. Optional on a server bound to one identity (it must be
            /// that identity's); required on an operator's server (--as-any), except for HUMAN.
            pub project_handle: Option<String>,
            /// The acting member's handle. Optional on a server bound to one identity (it must be that
            /// identity); required on an operator's server (--as-any).
            pub handle: Option<String>,
        }

        impl ActingMember for $name {
            fn project_handle(&self) -> Option<&str> {
                self.project_handle.as_deref()
            }
            fn handle(&self) -> Option<&str> {
                self.handle.as_deref()
            }
        }
    };
}

/// The acting member a tool's input names (`project_handle`, `handle`), whatever the tool.
pub trait ActingMember {
    fn project_handle(&self) -> Option<&str>;
    fn handle(&self) -> Option<&str>;
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMail {
    /// The project of the mailbox to read (defaults to the server's identity's).
    pub project_handle: Option<String>,
    /// The handle whose mailbox to read (defaults to the server's identity).
    pub handle: Option<String>,
    /// Show at most this many messages (default 20), most urgent first; the rest stay pending
    /// and `more` counts them.
    #[serde(default, deserialize_with = "count")]
    #[schemars(with = "Option<usize>")]
    pub limit: Option<usize>,
    /// Leave the shown messages pending (read) instead of archiving them.
    #[serde(default)]
    pub no_archive: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteMail {
    /// The project the recipient is in (on an operator's server also the sender's, unless
    /// sender_project_handle says otherwise).
    pub project_handle: Option<String>,
    /// The sender's handle: yourself (a server bound to one identity refuses any other).
    pub sender: Option<String>,
    /// The recipient: a handle of project_handle, handle@project, or HUMAN for the operator.
    pub recipient: String,
    /// H (high), M (medium, the default) or L (low).
    pub priority: Option<String>,
    /// One line; default: the body's first line.
    pub subject: Option<String>,
    /// The message (Markdown), at most 1 MiB.
    pub body: String,
    /// The sender's project, when it differs from the recipient's.
    pub sender_project_handle: Option<String>,
    /// INFO (default), QUESTION, HOLD_REQUEST (also reaches the operator), INTERFACE_CHANGE,
    /// HANDOVER or CORRECTION.
    pub kind: Option<String>,
    /// A key that makes a retry safe: the same key sends once.
    pub idempotency_key: Option<String>,
}

/// A sent message, named by its id or by m_AI_l's timestamp + subject.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditMail {
    /// The sender's project.
    pub project_handle: Option<String>,
    /// The sender: yourself.
    pub sender: Option<String>,
    /// The recipient of the message (narrows the timestamp + subject match).
    pub recipient: Option<String>,
    /// The message's minute, YYYYMMDD-HHMM in UTC, as write_mail returned it (with subject).
    pub timestamp: Option<String>,
    /// The message's subject, exactly (with timestamp).
    pub subject: Option<String>,
    /// The message's id (or a unique prefix), instead of timestamp + subject.
    pub id: Option<String>,
    /// The new priority: H, M or L.
    pub new_priority: Option<String>,
    /// The new subject.
    pub new_subject: Option<String>,
    /// The new body.
    pub new_body: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelMail {
    /// The sender's project.
    pub project_handle: Option<String>,
    /// The sender: yourself.
    pub sender: Option<String>,
    /// The recipient of the message (narrows the timestamp + subject match).
    pub recipient: Option<String>,
    /// The message's minute, YYYYMMDD-HHMM in UTC (with subject).
    pub timestamp: Option<String>,
    /// The message's subject, exactly (with timestamp).
    pub subject: Option<String>,
    /// The message's id (or a unique prefix), instead of timestamp + subject.
    pub id: Option<String>,
}

/// A tool that names only whose mailbox it acts on.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mailbox {
    /// The project of the mailbox (defaults to the server's identity's).
    pub project_handle: Option<String>,
    /// The handle of the mailbox (defaults to the server's identity).
    pub handle: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRecentArchive {
    /// The handle whose archive to list (defaults to the server's identity).
    pub handle: Option<String>,
    /// At most this many, most recently archived first (default 20).
    #[serde(default, deserialize_with = "count")]
    #[schemars(with = "Option<usize>")]
    pub limit: Option<usize>,
    /// The project of the mailbox (defaults to the server's identity's).
    pub current_project_handle: Option<String>,
    /// Accepted for m_AI_l compatibility and ignored: the project comes from
    /// current_project_handle or the server's identity.
    #[expect(dead_code, reason = "accepted for m_AI_l compatibility, never used")]
    pub cwd: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRoster {
    /// The project whose members to list.
    pub project_handle: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveHandle {
    /// The handle to resolve (or handle@project, or HUMAN).
    pub target_handle: String,
    /// The project to look in first (defaults to the server's identity's).
    pub current_project_handle: Option<String>,
    /// Accepted for m_AI_l compatibility and ignored.
    #[expect(dead_code, reason = "accepted for m_AI_l compatibility, never used")]
    pub cwd: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitMail {
    /// The project to join; created (policy open) when it does not exist yet. A member's
    /// server joins its own project.
    pub project_handle: Option<String>,
    /// The handle to put on its roster. A member's server puts itself.
    pub handle: Option<String>,
    /// What the member does, one line ("backend", "reviewer").
    #[serde(default)]
    pub role: String,
    /// Accepted for m_AI_l compatibility and ignored: mailroom places mailboxes itself.
    #[expect(dead_code, reason = "accepted for m_AI_l compatibility, never used")]
    pub mailbox: Option<String>,
    /// active (default) or inactive (sends to it are refused).
    pub status: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoverSelf {
    /// Your project.
    pub project_handle: Option<String>,
    /// Your handle: the note goes to your own next session.
    pub handle: Option<String>,
    /// The note (Markdown), at most 1 MiB.
    pub body: String,
    /// Who writes the note; if given, it must be the same as handle.
    pub sender: Option<String>,
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyMail {
    /// The message to answer: its id or a unique prefix.
    pub id: String,
    /// The answer (Markdown), at most 1 MiB.
    pub body: String,
    /// One line; default: "Re: " and the original's subject.
    pub subject: Option<String>,
    /// H, M (default) or L.
    pub priority: Option<String>,
    /// INFO (default), QUESTION, HOLD_REQUEST (also reaches the operator), INTERFACE_CHANGE,
    /// HANDOVER or CORRECTION.
    pub kind: Option<String>,
    /// Leave the original pending instead of archiving it.
    #[serde(default)]
    pub keep_open: bool,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkDone {
    /// The messages to archive without answering: ids or unique prefixes.
    pub ids: Vec<String>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Broadcast {
    /// The message to every member of the project (Markdown), at most 1 MiB.
    pub body: String,
    /// One line; default: the body's first line.
    pub subject: Option<String>,
    /// H, M (default) or L.
    pub priority: Option<String>,
    /// INFO (default), QUESTION, HOLD_REQUEST (also reaches the operator), INTERFACE_CHANGE,
    /// HANDOVER or CORRECTION.
    pub kind: Option<String>,
    /// A key that makes a retry safe: the same key sends once.
    pub idempotency_key: Option<String>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetractBroadcast {
    /// Your broadcast to un-send: its id or a unique prefix.
    pub id: String,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelPost {
    /// The channel of the project (created on first post).
    pub channel: String,
    /// The entry (Markdown), at most 1 MiB.
    pub body: String,
    /// One line; default: the body's first line.
    pub subject: Option<String>,
    /// H, M (default) or L.
    pub priority: Option<String>,
    /// INFO (default), QUESTION, HOLD_REQUEST (also reaches the operator), INTERFACE_CHANGE,
    /// HANDOVER or CORRECTION.
    pub kind: Option<String>,
    /// A key that makes a retry safe: the same key posts once.
    pub idempotency_key: Option<String>,
    /// Start the channel even though its name is one typo from an existing channel's.
    pub new: Option<bool>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelRead {
    /// The channel of the project to read; entries you have not seen, oldest first.
    pub channel: String,
    /// Show at most this many entries.
    #[serde(default, deserialize_with = "count")]
    #[schemars(with = "Option<usize>")]
    pub limit: Option<usize>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMail {
    /// Text to find in subjects and bodies (case-insensitive), archive and outbox included.
    pub query: String,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitMail {
    /// Only mail from this sender (handle, handle@project or HUMAN).
    pub from: Option<String>,
    /// Only a reply to this message id (replies already pending count).
    pub reply_to: Option<String>,
    /// Give up after this many seconds (default 60, at most 300).
    #[serde(default, deserialize_with = "seconds")]
    #[schemars(with = "Option<f64>")]
    pub timeout_seconds: Option<f64>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReserveFiles {
    /// Repository-relative globs (`src/api/**`, `docs/*.md`, `src/api` for everything below
    /// it); at most 100; braces are refused.
    pub paths: Vec<String>,
    /// How long the lease lasts, in seconds: 60 to 86400 (default 7200). Reserving the same
    /// pattern again renews it.
    pub ttl_seconds: Option<u64>,
    /// A shared lease conflicts only with exclusive ones (default: exclusive).
    #[serde(default)]
    pub shared: bool,
    /// Why, one line: shown to whoever meets the lease.
    pub reason: Option<String>,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseFiles {
    /// The lease to release by its whole id; or leave it out and name paths or all.
    pub id: Option<String>,
    /// Your leases on these patterns (the operator: anyone's).
    pub paths: Option<Vec<String>>,
    /// Every lease of yours.
    #[serde(default)]
    pub all: bool,
}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListReservations {}
}

acting_member! {
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckFiles {
    /// Repository-relative paths you are about to edit.
    pub paths: Vec<String>,
}
}
