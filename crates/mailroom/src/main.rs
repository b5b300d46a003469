//! The `mailroom` binary: parse the command line, dispatch, map errors to exit codes.

mod cli;
mod commands;
mod context;
mod fast;
mod files;
mod output;
mod words;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

/// Parses the command line: the plain shapes of the commands run most without building the
/// parser (see `fast`), anything else with it. The parser (every subcommand and flag) is built
/// once and never dropped: freeing it costs a quarter of a short command's instructions, and the process is
/// about to end anyway.
fn parse() -> Result<cli::Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(cli) = fast::parse(&args) {
        return Ok(cli);
    }
    let command = Box::leak(Box::new(cli::Cli::command()));
    let mut matches = command.try_get_matches_from_mut(std::env::args_os())?;
    cli::Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(command))
}

fn main() -> ExitCode {
    if let Some(text) = fast::version(&std::env::args_os().skip(1).collect::<Vec<_>>()) {
        // As clap's own `--version`: a closed stdout is not an error worth a word.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
        return ExitCode::SUCCESS;
    }
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            if !e.use_stderr() {
                return ExitCode::SUCCESS; // --help, --version
            }
            // The arguments did not parse, so `--json` is looked for among them as typed.
            if std::env::args_os()
                .skip(1)
                .take_while(|a| a != "--")
                .any(|a| a == "--json")
            {
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or_default();
                let message = first.strip_prefix("error: ").unwrap_or(first);
                output::print_json(&serde_json::json!({
                    "error": {"code": 2, "kind": "usage", "message": message}
                }));
            }
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    match commands::run(cli, &context::Env::from_process()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => report(failure, json),
    }
}

/// Prints the error as one sentence (and as JSON on stdout with `--json`, inside the report the
/// command had ready, if any); returns its code.
fn report(failure: commands::Failure, json: bool) -> ExitCode {
    let e = &failure.error;
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
        message.push_str(&failure.words.fix_advice(&fix));
    }
    if e.downcast_ref::<mailroom_core::Error>().is_none() {
        for cause in e.chain().skip(1) {
            message.push_str(&format!(": {cause}"));
        }
    }
    let message = mailroom_core::text::escape_controls(&message);
    eprintln!("error: {message}");
    if json {
        let error = serde_json::json!({"code": code, "kind": kind, "message": message});
        let document = match failure.report {
            Some(serde_json::Value::Object(mut fields)) => {
                fields.insert("error".into(), error);
                serde_json::Value::Object(fields)
            }
            _ => serde_json::json!({ "error": error }),
        };
        output::print_json(&document);
    }
    ExitCode::from(code)
}
