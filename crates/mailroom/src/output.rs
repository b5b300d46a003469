//! What the CLI prints: the JSON shapes (from `mailroom-json`, shared with the MCP server;
//! stable, documented in docs/CLI.md) and small text helpers. Message text for models goes through the core's injection renderer.

use std::io::{IsTerminal, Read};

use anyhow::Result;
use mailroom_core::text::MAX_BODY_BYTES;
use mailroom_core::{Error, Message};

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

pub use mailroom_json::{MessageOut, damaged_json, message_json, stored_json};

/// A document printed whole (`channel export`'s `mailbox.md`): exact when stdout is a file or
/// a pipe, since it is data to keep; on a terminal, every line escaped as a body line is, so
/// no escape sequence in an entry reaches the terminal raw.
pub fn document(text: &str, terminal: bool) -> std::borrow::Cow<'_, str> {
    if !terminal {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        // Writing into a String cannot fail.
        let _ = mailroom_core::text::write_body_line(&mut out, line);
    }
    out.into()
}

/// Writes to stdout; a reader that went away (`mailroom inbox | head`) ends the process
/// quietly instead of a panic, as a closed pipe ends other Unix tools.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        crate::errln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// Streams text written by `write` to stdout through one buffer (large listings are never
/// built in memory); a closed pipe ends the process quietly, as in [`write_out`].
pub fn render(write: impl FnOnce(&mut dyn std::fmt::Write) -> std::fmt::Result) {
    use std::io::Write;
    struct Adapter<W: Write> {
        inner: W,
        error: Option<std::io::Error>,
    }
    impl<W: Write> std::fmt::Write for Adapter<W> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.inner.write_all(s.as_bytes()).map_err(|e| {
                self.error = Some(e);
                std::fmt::Error
            })
        }
    }
    let mut a = Adapter {
        inner: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock()),
        error: None,
    };
    let _ = write(&mut a);
    let flushed = a.inner.flush();
    if let Some(e) = a.error.or(flushed.err()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        crate::errln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `crate::errln!` that survives a closed or full stderr: a message nobody can read is dropped,
/// where `crate::errln!` would panic (a hook must never fail its session for a warning).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
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

/// Pads columns of a table to their widest cell; every cell is shown as a one-line field
/// (`text::field`), so no subject or role can carry a control sequence to the terminal.
pub fn table(rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| mailroom_core::text::field(c)).collect())
        .collect();
    let rows = &rows;
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
        crate::errln!("note: {n}");
    }
}

#[cfg(test)]
mod tests {
    use super::document;

    #[test]
    fn a_document_on_a_terminal_shows_controls_escaped_and_is_exact_elsewhere() {
        let text = "# run\n\u{1b}]52;c;cm0=\u{7}\u{1b}]0;title\u{7}\u{1b}[2J\r\n\tok\n";
        assert_eq!(document(text, false), text);
        assert_eq!(
            document(text, true),
            "# run\n\\u{1b}]52;c;cm0=\\u{7}\\u{1b}]0;title\\u{7}\\u{1b}[2J\n\tok\n"
        );
    }
}
