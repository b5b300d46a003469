//! The `mailroom` binary: parse the command line, dispatch, map errors to exit codes.
//!
//! It starts without std's runtime set-up (`no_main`): every hook and every send is a fresh
//! process, and that set-up (reading `/proc/self/maps` to place a stack guard, an alternate
//! signal stack, signal handlers) is about 110,000 instructions and 20 system calls, a third of
//! an empty Rust program's start. [`main`] does the two parts of it that change behaviour
//! itself: a closed pipe is an error to handle rather than a signal, and fds 0-2 are open; and
//! a panic still exits with 101. What is lost: the "has overflowed its stack" message (a stack
//! overflow is a plain `SIGSEGV`; the guard page is still there), and a panic message names the
//! thread `<unnamed>` instead of `main`.
//!
//! ## Its modules
//!
//! `main` (the process's C entry: `no_main`, so std's start-up — a third of an empty program's cost
//! — is skipped; it ignores SIGPIPE, reopens closed fds 0-2 on `/dev/null`, turns a panic into exit
//! 101, and leaves through `process::exit`, which flushes stdout; the one `unsafe` of the
//! workspace, `unsafe_code` being denied everywhere else), `cli` (clap definitions only), `fast`
//! (the plain shapes of `send`, `inbox` and `hook`, and `--version` alone, read without building
//! clap's parser, anything else declined to it; tests hold it to clap's reading and text),
//! `context` (home or URL, git top-level, `.mailroom.toml` and environment gathered into data),
//! `open` (the one place a home or a URL becomes a store — `AnyStore`, the file store or the
//! PostgreSQL one, with its per-store extras: doctor, a role's SQL, a missing home; a module, not a
//! crate, because only this binary opens stores and a third store then touches this file alone),
//! `commands/*` (one file per command group: input → one core call → rendering; `import` walks
//! other systems' trees, reads each file, hands its text to `interchange` and the records to
//! `import_record`, and reports), `output` (JSON printing, tables, stdin body), `commands/mcp` and
//! `commands/serve` (start the tokio runtime, only on their paths), `commands/export` (a whole
//! mailroom into another store), `commands/role` (prints a strict-mode role's SQL), `harness/*`
//! (one file per harness behind the `Harness` trait, listed in `harness::ALL`: its name, event
//! names, hook answer shape, the programs and folder that show it installed, and per scope the
//! files and entries setup keeps — every location, format and event name cited from the harness's
//! documentation; a new harness is one file there plus its line in `ALL`, and `hook` and `setup`
//! name no harness), `commands/hook` (reads the input, asks the core, renders through the harness),
//! `commands/setup` (plans every file in memory — `setup/edit.rs` the new text or, on
//! `--uninstall`, the old — diffs with `similar`, then `setup/write.rs` writes all or nothing:
//! every new text staged in a temporary file beside its file before the first rename;
//! `setup/check.rs` is `--check`; `setup/jsonc.rs` edits JSON/JSONC through `jsonc-parser`'s CST
//! and Codex's TOML goes through `toml_edit`, so nothing else in a file moves; `setup/record.rs`
//! keeps, per config file and outside any repository, its bytes from before setup, what setup last
//! wrote and the user's entries setup's took the place of: `--uninstall` gives a file still as
//! setup left it its old bytes back, and otherwise takes out only what the record says setup wrote;
//! `setup/toml.rs` is Codex's `config.toml` — its server entry and, where the user keeps hooks
//! there, the hooks; `setup/same.rs` starts a wiring's hooks and MCP server as the harness would,
//! environment included, and compares what they open), `main` (dispatch, error → exit code in one
//! place). *Never* re-implements a check the core makes.

// The test harness brings its own `main` to the unit tests.
#![cfg_attr(not(test), no_main)]

mod cli;
mod commands;
mod context;
mod fast;
mod files;
mod harness;
mod open;
mod output;
mod words;

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

/// The process's entry, called by the C runtime (`argv` reaches [`std::env::args_os`] on its
/// own on Linux and macOS, so it is not read here).
#[cfg(not(test))]
#[allow(
    unsafe_code,
    reason = "the entry point needs its C symbol name; see `start`"
)]
// SAFETY: `main` is the one symbol of that name in the binary (`no_main` leaves it to us) and
// has the C runtime's signature.
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    start();
    // A panic (a defect: input never causes one on purpose) ends the process with 101, as it
    // does from a std `main`; it must not unwind into the C caller, which would abort.
    let code = std::panic::catch_unwind(run).map_or(101, i32::from);
    // std's own exit: flushes stdout's buffer first, as returning from a std `main` does.
    std::process::exit(code)
}

/// What std's start-up does that mailroom relies on: `SIGPIPE` ignored, so a reader that went
/// away is a `BrokenPipe` error the output code ends on quietly (and the MCP server survives
/// until it notices), and fds 0-2 open, so a file this process opens is never taken for its
/// standard input or output (a parent may start it with them closed).
#[cfg_attr(test, allow(dead_code))]
fn start() {
    #[allow(
        unsafe_code,
        reason = "no safe interface sets a signal's disposition or polls raw fds"
    )]
    // SAFETY: setting SIGPIPE to SIG_IGN installs no handler; `poll` reads and writes only the
    // three `pollfd`s it is given, and asks nothing of the fds (no events); `open` takes a
    // NUL-terminated path. No other thread exists yet.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        if libc::poll(fds.as_mut_ptr(), 3, 0) >= 0 {
            for polled in fds {
                if polled.revents & libc::POLLNVAL != 0 {
                    // The lowest free fd is this one, so /dev/null takes its place, as in std.
                    libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                }
            }
        }
    }
}

#[cfg_attr(test, allow(dead_code))]
fn run() -> u8 {
    if let Some(text) = fast::version(&std::env::args_os().skip(1).collect::<Vec<_>>()) {
        // As clap's own `--version`: a closed stdout is not an error worth a word.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
        return 0;
    }
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            if !e.use_stderr() {
                return 0; // --help, --version
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
            return 2;
        }
    };
    let json = cli.json;
    match commands::run(cli, &context::Env::from_process()) {
        Ok(()) => 0,
        Err(failure) => report(failure, json),
    }
}

/// Prints the error as one sentence (and as JSON on stdout with `--json`, inside the report the
/// command had ready, if any); returns its code.
fn report(failure: commands::Failure, json: bool) -> u8 {
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
    crate::errln!("error: {message}");
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
    code
}
