//! What the CLI prints: the JSON shapes (stable, documented in docs/CLI.md) and small text
//! helpers. Message text for models goes through the core's injection renderer.

use std::io::{IsTerminal, Read};

use anyhow::Result;
use mailroom_core::text::MAX_BODY_BYTES;
use mailroom_core::{Damaged, Error, Message, State, Stored};
use serde_json::{Value, json};

/// The JSON object of a message, with the state of this copy.
/// Who a message went to, as one line: the recipients, or `#channel@project`.
pub fn recipients(m: &Message) -> String {
    match (&m.channel, m.to.is_empty()) {
        (Some(c), true) => format!("#{c}"),
        _ => {
            m.to.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

/// A message as JSON (docs/CLI.md). Fields are in alphabetical order, as `serde_json::Value`
/// objects print them, so typed and untyped output read the same.
#[derive(serde::Serialize)]
pub struct MessageOut<'a> {
    body: &'a str,
    broadcast: bool,
    channel: Option<&'a str>,
    date: String,
    edited: Option<String>,
    from: String,
    id: String,
    kind: &'static str,
    priority: &'static str,
    recipients: Vec<String>,
    reply_to: Option<String>,
    revision: u32,
    state: Option<&'static str>,
    subject: &'a str,
    thread: String,
    timestamp: String,
    to: String,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

impl<'a> MessageOut<'a> {
    pub fn new(m: &'a Message, state: Option<State>, warnings: &'a [String]) -> MessageOut<'a> {
        MessageOut {
            body: &m.body,
            broadcast: m.is_channel_entry() && m.channel.as_ref().is_some_and(|c| c.is_broadcast()),
            channel: m.channel.as_ref().map(|c| c.name.as_str()),
            date: m.date.to_string(),
            edited: m.edited.map(|e| e.to_string()),
            from: m.from.to_string(),
            id: m.id.to_string(),
            kind: m.kind.as_str(),
            priority: m.priority.as_str(),
            recipients: m.to.iter().map(ToString::to_string).collect(),
            reply_to: m.reply_to.map(|r| r.to_string()),
            revision: m.revision,
            state: state.map(State::as_str),
            subject: &m.subject,
            thread: m.thread.to_string(),
            timestamp: m.date.strftime("%Y%m%d-%H%M").to_string(),
            to: recipients(m),
            warnings,
        }
    }

    pub fn stored(s: &'a Stored) -> MessageOut<'a> {
        MessageOut::new(&s.message, Some(s.state), &s.warnings)
    }
}

pub fn message_json(m: &Message, state: Option<State>) -> Value {
    serde_json::to_value(MessageOut::new(m, state, &[])).unwrap_or(Value::Null)
}

pub fn stored_json(s: &Stored) -> Value {
    serde_json::to_value(MessageOut::stored(s)).unwrap_or(Value::Null)
}

pub fn damaged_json(d: &[Damaged]) -> Value {
    Value::Array(
        d.iter()
            .map(|d| json!({"location": d.location, "state": d.state.map(State::as_str), "problem": d.problem}))
            .collect(),
    )
}

/// Writes to stdout; a reader that went away (`mailroom inbox | head`) ends the process
/// quietly instead of a panic, as a closed pipe ends other Unix tools.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `print!` that survives a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_out(format_args!($($arg)*)) };
}

/// `println!` that survives a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write_out(format_args!("\n")) };
    ($($arg:tt)*) => {{
        $crate::output::write_out(format_args!($($arg)*));
        $crate::output::write_out(format_args!("\n"));
    }};
}

/// Prints JSON on stdout, pretty, in one buffered write.
pub fn print_json<T: serde::Serialize + ?Sized>(v: &T) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed stdout (a pager quit early) is not an error worth reporting.
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
    let _ = out.flush();
}

/// The body: `--message`, else stdin (refused on a terminal, limited, UTF-8 checked).
pub fn body(message: Option<String>) -> Result<String> {
    if let Some(m) = message {
        return Ok(m);
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Error::Invalid(
            "no body: pass --message TEXT or pipe the body on stdin".into(),
        )
        .into());
    }
    let mut buf = Vec::new();
    stdin
        .lock()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::Invalid(format!("cannot read the body from stdin: {e}")))?;
    if buf.len() > MAX_BODY_BYTES {
        return Err(Error::Invalid(format!(
            "the body on stdin is over {MAX_BODY_BYTES} bytes (1 MiB), the limit: put large content in a file and send its path"
        ))
        .into());
    }
    String::from_utf8(buf).map_err(|e| {
        Error::Invalid(format!(
            "the body on stdin is not valid UTF-8 (byte {} is not): send text",
            e.utf8_error().valid_up_to()
        ))
        .into()
    })
}

/// A short id for tables: long enough to be unique in practice, and any prefix is accepted.
pub fn short(id: &mailroom_core::MessageId) -> String {
    id.to_string()[..12].to_owned()
}

/// A date as people read it in tables.
pub fn when(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M").to_string()
}

/// Pads columns of a table to their widest cell.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Prints notices for the sender on stderr (stdout stays clean for scripts).
pub fn notices(notices: &[String]) {
    for n in notices {
        eprintln!("note: {n}");
    }
}
