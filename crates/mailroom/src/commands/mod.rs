//! One module per subcommand; `run` dispatches and nothing else.

mod channel;
mod demo;
mod directory;
mod doctor;
mod export;
mod git_hook;
mod hook;
mod import;
mod lifecycle;
mod mcp;
mod reserve;
mod role;
mod send;
mod serve;
pub(crate) mod setup;
mod token;
mod wait;
mod whoami;

use anyhow::Result;
use mailroom_core::{Error, Priority};

use crate::cli::{Cli, Command};
use crate::context::{Ctx, Env};
use crate::output;
use crate::words::CliWords;

/// A command that failed: the error, with what reporting it needs.
pub struct Failure {
    pub error: anyhow::Error,
    /// The words its advice is written in: the same as the hints of a successful run.
    pub words: CliWords,
    /// The JSON document the command had ready, to carry the error object (`--json`).
    pub report: Option<serde_json::Value>,
}

impl Failure {
    /// A failure before there is a context to name flags from.
    fn plain(error: anyhow::Error) -> Failure {
        Failure {
            error,
            words: CliWords::plain(),
            report: None,
        }
    }
}

pub fn run(cli: Cli, env: &Env) -> Result<(), Failure> {
    if let Command::Demo = cli.command {
        return demo::run().map_err(Failure::plain);
    }
    if let Command::Setup(args) = &cli.command {
        if args.harness.as_deref() == Some(git_hook::NAME) {
            return git_hook::setup(&cli, env, args).map_err(Failure::plain);
        }
        return setup::setup(&cli, env, args).map_err(Failure::plain);
    }
    if let Command::Hook { .. } = cli.command {
        hook::run(&cli, env);
        return Ok(());
    }
    let mut ctx = Ctx::new(&cli, env).map_err(Failure::plain)?;
    run_in(&mut ctx, cli).map_err(|error| Failure {
        error,
        words: ctx.words_for_advice(),
        report: ctx.failed_report.take(),
    })
}

fn run_in(ctx: &mut Ctx, cli: Cli) -> Result<()> {
    let reads = reads_only(&cli.command);
    if reads != Reads::No
        && let Some(home) = ctx.store.missing_home()?
    {
        // A mistyped MAILROOM_HOME must not look like an empty mailbox, nor be created.
        let missing = format!(
            "there is no mailroom home at {}: nothing was ever sent there; check --home or MAILROOM_HOME (the first send creates it)",
            home.display()
        );
        if reads == Reads::Message {
            return Err(Error::NotFound(missing).into());
        }
        output::notices(&[missing]);
    }
    dispatch(ctx, cli.command)?;
    ctx.record_claim()
}

fn dispatch(ctx: &mut Ctx, command: Command) -> Result<()> {
    match command {
        Command::Send(args) => send::send(ctx, args),
        Command::Reply(args) => send::reply(ctx, args),
        Command::Handover {
            message,
            subject,
            priority,
        } => send::handover(ctx, message, subject, &priority),
        Command::Inbox { limit } => lifecycle::inbox(ctx, limit),
        Command::Read { id, archive } => lifecycle::read(ctx, &id, archive),
        Command::Done { ids, all } => lifecycle::done(ctx, &ids, all),
        Command::Archive => lifecycle::archive(ctx),
        Command::Edit(args) => lifecycle::edit(ctx, args),
        Command::Cancel { id } => lifecycle::cancel(ctx, &id),
        Command::Retract { id } => channel::retract(ctx, &id),
        Command::Channel { action } => channel::channel(ctx, action),
        Command::Import {
            format,
            path,
            channel,
        } => import::import(ctx, format, &path, channel),
        Command::Outbox { limit } => lifecycle::outbox(ctx, limit),
        Command::Recover { restore, limit } => lifecycle::recover(ctx, restore.as_deref(), limit),
        Command::Search { query } => lifecycle::search(ctx, &query),
        Command::Roster { action } => directory::roster(ctx, action),
        Command::Projects { action } => directory::projects(ctx, action),
        Command::Resolve { name } => directory::resolve(ctx, &name),
        Command::Whoami => whoami::whoami(ctx),
        Command::Reserve {
            patterns,
            ttl,
            shared,
            reason,
        } => reserve::reserve(ctx, patterns, ttl, shared, reason),
        Command::Release { targets, all } => reserve::release(ctx, targets, all),
        Command::Reservations => reserve::reservations(ctx),
        Command::Check { paths, staged } => reserve::check(ctx, paths, staged),
        Command::Watch { target } => wait::watch(ctx, target.as_deref()),
        Command::Wait {
            from,
            reply_to,
            timeout,
        } => wait::wait(ctx, from, reply_to, timeout.as_deref()),
        Command::Doctor { fix } => doctor::doctor(ctx, fix),
        Command::Export { to } => export::export(ctx, &to),
        Command::Role { address, name } => role::role(ctx, &address, name.as_deref()),
        Command::Token { action } => token::token(ctx, action),
        Command::Demo => demo::run(),
        Command::Mcp {
            tools,
            as_any,
            http,
        } => match http.listen {
            Some(listen) => mcp::mcp_http(ctx, tools, as_any, listen, &http),
            None => mcp::mcp(ctx, tools, as_any),
        },
        Command::Hook { .. } | Command::Setup(_) => Ok(()),
        Command::Serve {
            listen,
            open,
            expose,
        } => serve::serve(ctx, listen, open, expose),
    }
}

/// What a command does with a home that does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reads {
    /// It writes, and creates the home.
    No,
    /// It lists or waits: the listing is empty (the wait goes on), with a notice that there is
    /// no home.
    Listing,
    /// It acts on a message that would have to be there: not found.
    Message,
}

/// Commands that only read or wait (or change mail that must already exist) never create a
/// home.
fn reads_only(command: &Command) -> Reads {
    use crate::cli::ChannelAction;
    match command {
        Command::Done { all: true, .. } => Reads::Listing,
        Command::Read { .. }
        | Command::Done { .. }
        | Command::Edit(_)
        | Command::Cancel { .. }
        | Command::Retract { .. }
        | Command::Recover {
            restore: Some(_), ..
        } => Reads::Message,
        Command::Inbox { .. }
        | Command::Archive
        | Command::Outbox { .. }
        | Command::Recover { .. }
        | Command::Search { .. }
        | Command::Resolve { .. }
        | Command::Doctor { .. }
        | Command::Export { .. }
        | Command::Role { .. }
        | Command::Token { action: None | Some(crate::cli::TokenAction::List | crate::cli::TokenAction::Revoke { .. }) }
        // An agent may wait for its first mail before anyone sent any: it says there is no
        // home yet, waits, and creates none.
        | Command::Wait { .. }
        | Command::Watch { .. }
        // The console shows an empty room until the first send creates the home.
        | Command::Serve { .. } => Reads::Listing,
        Command::Channel {
            action:
                ChannelAction::List
                | ChannelAction::Read { .. }
                | ChannelAction::Show { .. }
                | ChannelAction::Export { .. },
        } => Reads::Listing,
        _ => Reads::No,
    }
}

pub(crate) fn priority(s: &str) -> Result<Priority> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}

pub(crate) fn kind(s: &str) -> Result<mailroom_core::Kind> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}
