//! One module per subcommand; `run` dispatches and nothing else.

mod channel;
mod demo;
mod directory;
mod doctor;
mod hook;
mod import;
mod lifecycle;
mod send;
mod wait;
mod whoami;

use anyhow::Result;
use mailroom_core::{Error, Priority};

use crate::cli::{Cli, Command};
use crate::context::{Ctx, Env};

pub fn run(cli: Cli, env: &Env) -> Result<()> {
    if let Command::Demo = cli.command {
        return demo::run();
    }
    if let Command::Hook { .. } = cli.command {
        hook::run(&cli, env);
        return Ok(());
    }
    let mut ctx = Ctx::new(&cli, env)?;
    if only_reads(&cli.command) && !ctx.store.exists()? {
        // A mistyped MAILROOM_HOME must not look like an empty mailbox, nor be created.
        return Err(Error::NotFound(format!(
            "there is no mailroom home at {}: nothing was ever sent there; check --home or MAILROOM_HOME (the first send creates it)",
            ctx.store.home().display()
        ))
        .into());
    }
    dispatch(&mut ctx, cli.command)?;
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
        Command::Watch { target } => wait::watch(ctx, target.as_deref()),
        Command::Wait {
            from,
            reply_to,
            timeout,
        } => wait::wait(ctx, from, reply_to, timeout.as_deref()),
        Command::Doctor { fix } => doctor::doctor(ctx, fix),
        Command::Demo => demo::run(),
        Command::Hook { .. } => Ok(()),
    }
}

/// Commands that only read or change mail that must already exist: with no home they have
/// nothing to act on. (Listings of projects and rosters say "none yet" instead.)
fn only_reads(command: &Command) -> bool {
    use crate::cli::ChannelAction;
    match command {
        Command::Inbox { .. }
        | Command::Read { .. }
        | Command::Done { .. }
        | Command::Archive
        | Command::Edit(_)
        | Command::Cancel { .. }
        | Command::Retract { .. }
        | Command::Outbox { .. }
        | Command::Recover { .. }
        | Command::Search { .. }
        | Command::Resolve { .. }
        | Command::Watch { .. }
        | Command::Wait { .. }
        | Command::Doctor { .. } => true,
        Command::Channel { action } => matches!(
            action,
            ChannelAction::List
                | ChannelAction::Read { .. }
                | ChannelAction::Show { .. }
                | ChannelAction::Export { .. }
        ),
        _ => false,
    }
}

pub(crate) fn priority(s: &str) -> Result<Priority> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}

pub(crate) fn kind(s: &str) -> Result<mailroom_core::Kind> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}
