//! The console's benchmark rows (`bench/console`): the decision page with N pending decisions
//! and M archived messages in HUMAN's mailbox, timed as whole HTTP requests against an
//! in-process server; and how long a send takes to reach an open page's event stream.
//!
//! Usage: `console_bench HOME [--pending N] [--archived M] [--runs R]`. A HOME that this
//! program filled before (it leaves `HOME/.console-bench`) is reused as it is. Prints one JSON
//! object on stdout.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mailroom_console::{Console, Secret};
use mailroom_core::ops::Draft;
use mailroom_core::{Address, Kind, Mailroom};
use mailroom_store_fs::FsStore;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const TOKEN: &str = "bench-token";

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let home = PathBuf::from(
        args.next()
            .ok_or("usage: console_bench HOME [--pending N] [--archived M] [--runs R]")?,
    );
    let (mut pending, mut archived, mut runs) = (1_000usize, 100_000usize, 50usize);
    while let Some(a) = args.next() {
        let v: usize = args.next().ok_or("a flag needs a value")?.parse()?;
        match a.as_str() {
            "--pending" => pending = v,
            "--archived" => archived = v,
            "--runs" => runs = v,
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let marker = home.join(".console-bench");
    if !marker.exists() {
        fill(&home, pending, archived)?;
        std::fs::write(&marker, format!("{pending} {archived}\n"))?;
    }

    let store: Arc<dyn mailroom_core::Store> = Arc::new(FsStore::new(home.clone()));
    // The latency sends of an earlier run are archived, so every run sees the same page.
    let agent = Address::parse_canonical("latency@bench")?;
    let human = Address::human();
    let leftover: Vec<String> = Mailroom::new(store.as_ref())
        .peek(&human)?
        .messages
        .iter()
        .filter(|s| s.message.from == agent)
        .map(|s| s.message.id.to_string())
        .collect();
    if !leftover.is_empty() {
        Mailroom::new(store.as_ref()).done(&human, &leftover)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let port = listener.local_addr()?.port();
    let console = Console::with_secret(
        Mailroom::shared(store.clone()),
        port,
        Secret::fixed(TOKEN, "c"),
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(mailroom_console::serve(listener, console, async move {
        let _ = stop_rx.await;
    }));

    // The decision page, as whole requests.
    let mut page = String::new();
    for _ in 0..5 {
        page = get(port, "/")?;
    }
    let shown = page.matches("class=\"item decision\"").count();
    if shown != pending {
        return Err(format!("the page shows {shown} decisions, not {pending}").into());
    }
    let mut render = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let body = get(port, "/")?;
        render.push(t.elapsed());
        std::hint::black_box(body);
    }

    // A send reaching an open page's event stream.
    let after = page
        .split("data-after=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("")
        .to_owned();
    let mut sse = TcpStream::connect(("127.0.0.1", port))?;
    sse.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        sse,
        "GET /events?after={after} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: mailroom_console={TOKEN}\r\n\r\n"
    )?;
    let (tx, rx) = std::sync::mpsc::channel::<(String, Instant)>();
    std::thread::spawn(move || {
        for line in BufReader::new(sse).lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data: ") {
                let id = data.split(' ').next().unwrap_or("").to_owned();
                if tx.send((id, Instant::now())).is_err() {
                    break;
                }
            }
        }
    });
    let mr = Mailroom::new(store.as_ref());
    let mut latency = Vec::new();
    let mut send_only = Vec::new();
    for i in 0..runs {
        let t = Instant::now();
        let sent = mr.send(&agent, draft(Kind::HoldRequest, i))?;
        send_only.push(t.elapsed());
        let id = sent.message.id.to_string();
        loop {
            let (got, at) = rx.recv_timeout(Duration::from_secs(10))?;
            if got == id {
                latency.push(at - t);
                break;
            }
        }
    }
    let sent: Vec<String> = mr
        .peek(&human)?
        .messages
        .iter()
        .filter(|s| s.message.from == agent)
        .map(|s| s.message.id.to_string())
        .collect();
    mr.done(&human, &sent)?;
    let _ = stop_tx.send(());
    drop(runtime.block_on(server));

    let json = format!(
        "{{\"pending\": {pending}, \"archived\": {archived}, \"runs\": {runs}, \"page_bytes\": {}, \"decision_page_ms\": {}, \"event_latency_ms\": {}, \"send_ms\": {}}}",
        page.len(),
        stats(&mut render),
        stats(&mut latency),
        stats(&mut send_only)
    );
    println!("{json}");
    Ok(())
}

fn stats(xs: &mut [Duration]) -> String {
    xs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(xs[((xs.len() as f64 - 1.0) * q).round() as usize]);
    format!(
        "{{\"median\": {:.3}, \"p90\": {:.3}, \"min\": {:.3}, \"max\": {:.3}}}",
        at(0.5),
        at(0.9),
        at(0.0),
        at(1.0)
    )
}

/// One GET with the admitted cookie; the body, or an error for another status.
fn get(port: u16, path: &str) -> Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: mailroom_console={TOKEN}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    if !text.starts_with("HTTP/1.1 200") {
        return Err(format!("GET {path}: {}", text.lines().next().unwrap_or("")).into());
    }
    Ok(text)
}

fn draft(kind: Kind, i: usize) -> Draft {
    Draft {
        to: vec!["HUMAN".into()],
        subject: Some(format!(
            "Decision {i}: may I proceed with step {i} of the migration?"
        )),
        body: format!(
            "Step {i} rewrites the orders table in place.\nIt takes about ten minutes and blocks writes.\nShall I run it now, or wait for the night window? ({i})"
        ),
        kind,
        ..Draft::default()
    }
}

/// `archived` INFO messages to HUMAN archived in batches, then `pending` hold requests and
/// questions that stay open; real durable sends, four threads.
fn fill(home: &std::path::Path, pending: usize, archived: usize) -> Result<()> {
    let store = FsStore::new(home.to_path_buf());
    let mr = Mailroom::new(&store);
    let human = Address::human();
    let threads = 4;
    let batch = 1_000;
    let mut left = archived;
    while left > 0 {
        let n = left.min(batch);
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let mr = mr.clone();
                    s.spawn(move || -> std::result::Result<(), String> {
                        let from = Address::parse_canonical(&format!("agent{t}@bench"))
                            .map_err(|e| e.to_string())?;
                        for i in (t..n).step_by(threads) {
                            mr.send(&from, draft(Kind::Info, i))
                                .map_err(|e| e.to_string())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().map_err(|_| "a filler thread panicked")??;
            }
            Ok(())
        })?;
        mr.done_all(&human)?;
        left -= n;
        eprintln!("console_bench: {} of {archived} archived", archived - left);
    }
    for i in 0..pending {
        let from = Address::parse_canonical(&format!("agent{}@bench", i % 10))?;
        let kind = if i % 2 == 0 {
            Kind::HoldRequest
        } else {
            Kind::Question
        };
        mr.send(&from, draft(kind, i))?;
    }
    Ok(())
}
