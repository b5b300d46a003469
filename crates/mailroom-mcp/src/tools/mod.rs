//! The tools: what `tools/list` says of each (`table`), their input and output schemas
//! (`schema`), who a call acts as (`identity`) and what each does (`handlers`): turn its input
//! into the one core call the CLI makes for the same thing, and shape the result with
//! `mailroom-json`. No rmcp type appears here.

use std::time::Duration;

use mailroom_core::ops::Cancel;
use mailroom_core::{Address, Mailroom, Result};
use serde_json::Value;

mod handlers;
mod identity;
mod schema;
mod table;

pub(crate) use handlers::{wait_outcome, wait_plan};
pub use identity::Acting;
pub use table::TOOLS;

/// The longest a `wait_mail` call blocks, whatever it asks for: a client's own request
/// timeout is usually a few minutes, and a wait past it would be answered to no one.
pub const MAX_WAIT: Duration = Duration::from_secs(300);
/// How long `wait_mail` blocks when the call does not say.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// What a tool call produced: the structured result and its text.
#[derive(Debug)]
pub struct Outcome {
    pub structured: Structured,
    pub text: String,
}

/// A structured result: a JSON value, or the same object already written as JSON text (a
/// long listing, which it costs less to write once than to build as a value first).
#[derive(Debug)]
pub enum Structured {
    Value(Value),
    /// A JSON object, as text.
    Written(String),
}

impl From<Value> for Structured {
    fn from(v: Value) -> Structured {
        Structured::Value(v)
    }
}

/// One tool: what `tools/list` says of it and the function that runs it.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    /// One of m_AI_l's five message-lifecycle tools (`--tools lifecycle`).
    pub lifecycle: bool,
    /// Blocks until something happens (`wait_mail`): run on a thread of its own, so the
    /// server keeps reading requests meanwhile. Every other tool runs on the server's thread.
    pub waits: bool,
    /// The input fields that name who acts, which a server bound to one identity leaves out
    /// of the schema it lists: that server implies them, and a model that fills them in
    /// wrongly is only refused.
    pub acting: Acting,
    pub input: fn() -> Value,
    /// The properties of the structured result (an object).
    pub output: fn() -> Value,
    pub run: fn(&Tools, Value, &Cancel) -> Result<Outcome>,
}

/// The state every call shares: the operations and who the server acts as.
#[derive(Clone, Debug)]
pub struct Tools {
    pub mr: Mailroom<'static>,
    /// The one identity this server acts as; `None` on an operator's server (`--as-any`).
    pub identity: Option<Address>,
}
