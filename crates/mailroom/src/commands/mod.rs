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
    match cli.command {
        Command::Send(args) => send::send(&mut ctx, args),
        Command::Reply(args) => send::reply(&mut ctx, args),
        Command::Handover {
            message,
            subject,
            priority,
        } => send::handover(&mut ctx, message, subject, &priority),
        Command::Inbox { limit } => lifecycle::inbox(&mut ctx, limit),
        Command::Read { id, archive } => lifecycle::read(&mut ctx, &id, archive),
        Command::Done { ids, all } => lifecycle::done(&mut ctx, &ids, all),
        Command::Archive => lifecycle::archive(&mut ctx),
        Command::Edit(args) => lifecycle::edit(&mut ctx, args),
        Command::Cancel { id } => lifecycle::cancel(&mut ctx, &id),
        Command::Retract { id } => channel::retract(&mut ctx, &id),
        Command::Channel { action } => channel::channel(&mut ctx, action),
        Command::Import {
            format,
            path,
            channel,
        } => import::import(&mut ctx, format, &path, channel),
        Command::Outbox { limit } => lifecycle::outbox(&mut ctx, limit),
        Command::Recover { restore, limit } => {
            lifecycle::recover(&mut ctx, restore.as_deref(), limit)
        }
        Command::Search { query } => lifecycle::search(&mut ctx, &query),
        Command::Roster { action } => directory::roster(&mut ctx, action),
        Command::Projects { action } => directory::projects(&mut ctx, action),
        Command::Resolve { name } => directory::resolve(&mut ctx, &name),
        Command::Whoami => whoami::whoami(&mut ctx),
        Command::Watch { target } => wait::watch(&mut ctx, target.as_deref()),
        Command::Wait {
            from,
            reply_to,
            timeout,
        } => wait::wait(&mut ctx, from, reply_to, timeout.as_deref()),
        Command::Doctor { fix } => doctor::doctor(&mut ctx, fix),
        Command::Demo => demo::run(),
        Command::Hook { .. } => Ok(()),
    }
}

pub(crate) fn priority(s: &str) -> Result<Priority> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}

pub(crate) fn kind(s: &str) -> Result<mailroom_core::Kind> {
    s.parse().map_err(|e: String| Error::Invalid(e).into())
}
