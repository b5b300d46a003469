//! The `mailroom` binary: parse the command line, dispatch, map errors to exit codes.

mod cli;
mod commands;
mod context;
mod output;
mod words;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let json = cli.json;
    match commands::run(cli, &context::Env::from_process()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&e, json),
    }
}

/// Prints the error as one sentence (and as JSON on stdout with `--json`); returns its code.
fn report(e: &anyhow::Error, json: bool) -> ExitCode {
    let (code, kind) = match e.downcast_ref::<mailroom_core::Error>().map(|e| e.kind()) {
        Some(k) => (k.code(), k.as_str()),
        None => (1, "failure"),
    };
    let mut message = e.to_string();
    // The core says what would help; the command line says it as a command.
    if let Some(fix) = e
        .downcast_ref::<mailroom_core::Error>()
        .and_then(|e| e.fix())
    {
        message.push_str("; ");
        message.push_str(&words::CliWords::plain().fix_advice(&fix));
    }
    if e.downcast_ref::<mailroom_core::Error>().is_none() {
        for cause in e.chain().skip(1) {
            message.push_str(&format!(": {cause}"));
        }
    }
    let message = mailroom_core::text::escape_controls(&message);
    eprintln!("error: {message}");
    if json {
        output::print_json(&serde_json::json!({
            "error": {"code": code, "kind": kind, "message": message}
        }));
    }
    ExitCode::from(code)
}
