//! Fills a mailroom home for the benchmarks in `bench/run`, in-process and in parallel, far
//! faster than one `mailroom send` process per message.
//!
//! Usage: `bench_setup HOME [--pending N] [--archived M] [--batch K] [--read] [--from A]
//! [--to B] [--threads T]`
//!
//! Sends `M` messages from `A` to `B` (default `a@default` → `b@default`) and archives them
//! (`done_all`, as `mailroom done --all` does) `K` at a time (default 100; 0: all `M` at once),
//! then sends `N` more that stay pending. The batches matter on ext4, whose directories never
//! shrink: a mailbox whose `unread/` once held 100,000 files keeps a directory that size, and
//! every later listing reads it; archiving in batches keeps `unread/` as small as a mailbox
//! that is handled as it goes would have it. With
//! `--read` it then lists B's inbox once, so the pending mail is read (the steady state of a
//! mailbox that is listed repeatedly). Every send is the real durable send (`Mailroom::send`
//! through `FsStore`: fdatasync and directory fsync), so the files are exactly what the CLI
//! writes; `T` threads (default 4) overlap the fsyncs.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use mailroom_core::ops::Draft;
use mailroom_core::{Address, Mailroom};
use mailroom_store_fs::FsStore;

struct Args {
    home: PathBuf,
    pending: usize,
    archived: usize,
    batch: usize,
    read: bool,
    from: Address,
    to: Address,
    threads: usize,
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args_os().skip(1);
    let usage = "usage: bench_setup HOME [--pending N] [--archived M] [--batch K] [--read] [--from A] [--to B] [--threads T]";
    let mut home = None;
    let mut pending = 0;
    let mut archived = 0;
    let mut batch = 100;
    let mut read = false;
    let mut from = "a@default".to_owned();
    let mut to = "b@default".to_owned();
    let mut threads = 4;
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let mut value = |name: &str| -> Result<String> {
            args.next()
                .map(|v| v.to_string_lossy().into_owned())
                .with_context(|| format!("{name} needs a value; {usage}"))
        };
        match arg.as_str() {
            "--pending" => pending = value("--pending")?.parse()?,
            "--archived" => archived = value("--archived")?.parse()?,
            "--batch" => batch = value("--batch")?.parse()?,
            "--from" => from = value("--from")?,
            "--to" => to = value("--to")?,
            "--threads" => threads = value("--threads")?.parse()?,
            "--read" => read = true,
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            s if s.starts_with('-') => bail!("unknown flag {s}; {usage}"),
            s if home.is_none() => home = Some(PathBuf::from(s)),
            s => bail!("unexpected argument {s}; {usage}"),
        }
    }
    Ok(Args {
        home: home.context(usage)?,
        pending,
        archived,
        batch,
        read,
        from: Address::parse_canonical(&from).with_context(|| format!("bad --from {from}"))?,
        to: Address::parse_canonical(&to).with_context(|| format!("bad --to {to}"))?,
        threads: threads.max(1),
    })
}

/// Sends `count` messages from `args.from` to `args.to`, spread over `args.threads` threads.
fn send_many(args: &Args, count: usize, label: &str) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let to = args.to.to_string();
    let draft = |i: usize| Draft {
        to: vec![to.clone()],
        subject: Some(format!("{label} message {i}")),
        body: format!("Benchmark {label} message number {i}.\nA second line of body text.\n"),
        ..Draft::default()
    };
    // The first send creates the mailboxes; the rest can then race freely.
    let store = FsStore::new(&args.home);
    Mailroom::new(&store).send(&args.from, draft(0))?;
    let rest = count - 1;
    let threads = args.threads.min(rest.max(1));
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let draft = &draft;
                scope.spawn(move || -> Result<()> {
                    let store = FsStore::new(&args.home);
                    let mailroom = Mailroom::new(&store);
                    // Thread t sends messages t+1, t+1+threads, … (1-based after the first).
                    for i in (1 + t..=rest).step_by(threads) {
                        mailroom.send(&args.from, draft(i))?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(r) => r?,
                Err(_) => bail!("a sender thread panicked"),
            }
        }
        Ok(())
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let store = FsStore::new(&args.home);
    let mailroom = Mailroom::new(&store);
    let started = std::time::Instant::now();

    let batch = if args.batch == 0 {
        args.archived
    } else {
        args.batch
    };
    let mut left = args.archived;
    while left > 0 {
        let now = batch.min(left);
        send_many(&args, now, "archived")?;
        let moved = mailroom.done_all(&args.to)?;
        if moved != now {
            bail!("archived {moved} messages, expected {now}");
        }
        left -= now;
    }
    send_many(&args, args.pending, "pending")?;
    if args.read {
        let inbox = mailroom.inbox(&args.to, None)?;
        if inbox.messages.len() != args.pending {
            bail!(
                "{} pending after setup, expected {}",
                inbox.messages.len(),
                args.pending
            );
        }
    }
    eprintln!(
        "bench_setup: {}: {} archived ({} at a time), {} pending{} for {} in {:.1} s",
        args.home.display(),
        args.archived,
        batch,
        args.pending,
        if args.read { " (read)" } else { "" },
        args.to,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
