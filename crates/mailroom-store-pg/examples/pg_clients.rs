//! `pg_clients URL CLIENTS SENDS [spread]`: CLIENTS concurrent clients, each with its own connection (a
//! `PgStore`, as an MCP server or a long-lived agent holds one), each sending SENDS durable
//! messages through the core's `send` to `r@bench` (with `spread`: client N to `rN@bench`);
//! prints one JSON line: wall seconds, messages per second, failures, and how many copies the
//! recipients hold afterwards.
//! Used by bench/pg.

#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark tool")]

use std::time::Instant;

use mailroom_core::ops::Draft;
use mailroom_core::store::Mailboxes as _;
use mailroom_core::{Address, Kind, Mailroom, Priority};
use mailroom_store_pg::PgStore;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (url, clients, sends, spread) = match args.as_slice() {
        [_, url, clients, sends] => (url, clients, sends, false),
        [_, url, clients, sends, s] if s == "spread" => (url, clients, sends, true),
        _ => {
            eprintln!("usage: pg_clients URL CLIENTS SENDS [spread]");
            std::process::exit(2);
        }
    };
    let to = move |c: usize| {
        if spread {
            format!("r{c}")
        } else {
            "r".to_owned()
        }
    };
    let clients: usize = clients.parse().expect("CLIENTS is a number");
    let sends: usize = sends.parse().expect("SENDS is a number");
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let url = url.clone();
            std::thread::spawn(move || {
                let store = PgStore::open(&url).expect("the store opens");
                let mr = Mailroom::new(&store);
                let me = Address::parse_canonical(&format!("s{c}@bench")).unwrap();
                let mut failed = 0;
                for i in 0..sends {
                    let draft = Draft {
                        to: vec![to(c)],
                        subject: None,
                        body: format!("m {c} {i}"),
                        kind: Kind::Info,
                        priority: Priority::Medium,
                        idempotency_key: None,
                    };
                    if mr.send(&me, draft).is_err() {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    let failed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let wall = start.elapsed().as_secs_f64();
    let store = PgStore::open(url).expect("the store opens");
    let mut recipients: Vec<String> = (0..clients).map(to).collect();
    recipients.dedup();
    let got: usize = recipients
        .iter()
        .map(|r| {
            store
                .pending(&Address::parse_canonical(&format!("{r}@bench")).unwrap())
                .expect("pending mail")
                .messages
                .len()
        })
        .sum();
    let total = clients * sends;
    println!(
        "{{\"clients\": {clients}, \"sends\": {total}, \"wall_s\": {wall:.3}, \"messages_per_s\": {:.0}, \"failed\": {failed}, \"delivered\": {got}}}",
        total as f64 / wall
    );
}
