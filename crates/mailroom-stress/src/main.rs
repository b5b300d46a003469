//! `mailroom-stress`: the proof that no mail is lost. Drives the real `mailroom` binary as
//! separate processes, under concurrent load (`load`) and under `kill -9` (`crash`), then holds
//! every file in the home to what each command acknowledged.

mod bodies;
mod check;
mod crash;
mod disk;
mod import_crash;
mod journal;
mod ledger;
mod load;
mod mcp;
mod rng;
mod runner;
mod work;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Stress and crash harness for the mailroom binary: proves no mail is lost, doubled, torn or misdelivered"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Concurrent senders, readers, editors and cancellers on overlapping mailboxes.
    Load(load::LoadArgs),
    /// Start an operation, kill -9 it at a random instant, repair with `doctor --fix`, check.
    Crash(crash::CrashArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Load(args) => load::run(&args),
        Command::Crash(args) => crash::run(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
