//! MCP over Streamable HTTP against MCP over stdio, in one run, for `bench/mcp-http`.
//!
//! Usage: `mcp_http_bench MAILROOM HOME [--calls N]`
//!
//! On HOME (a file home; `bench/mcp-http` makes a fresh one), it issues 51 tokens as HUMAN
//! (`a@bench`, and `s0@bench` … `s49@bench`), starts `MAILROOM --as a@bench mcp` (stdio) and
//! `MAILROOM mcp --listen 127.0.0.1:0` (HTTP), and drives both from this one process: stdio as
//! newline-delimited JSON-RPC over the child's pipes, HTTP as one keep-alive loopback
//! connection (`TCP_NODELAY`) with the token, each call a `POST /mcp` whose whole answer is read
//! (`content-length`). A round trip is timed from writing the request to having read the whole
//! answer; every answer is checked (no JSON-RPC error, no `isError`).
//!
//! 1. 20 untimed calls of each tool over each transport;
//! 2. `N` (default 1,000) `get_roster` calls over each, in turn (stdio, HTTP, stdio, …), so both
//!    see the machine in the same state;
//! 3. `N` `write_mail` calls to `b` over each, in turn;
//! 4. 50 sessions at once: 50 threads, each with a connection and a token of its own, do
//!    `initialize`, 20 `get_roster` and 5 `write_mail`, then wait for one another with their
//!    connections open, while the server's `VmRSS` and `VmHWM` are read.
//!
//! Prints one JSON object: median, p90, mean, min of each series in ms, and the RSS figures.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

fn main() -> Result<()> {
    let mut args = std::env::args_os().skip(1);
    let mailroom = PathBuf::from(
        args.next()
            .context("usage: mcp_http_bench MAILROOM HOME [--calls N]")?,
    );
    let home = PathBuf::from(
        args.next()
            .context("usage: mcp_http_bench MAILROOM HOME [--calls N]")?,
    );
    let mut calls = 1000;
    if args.next().is_some_and(|a| a == "--calls") {
        calls = args
            .next()
            .and_then(|n| n.to_str()?.parse().ok())
            .context("--calls takes a number")?;
    }
    let cli = |who: &str, rest: &[&str]| -> Result<String> {
        let out = Command::new(&mailroom)
            .arg("--home")
            .arg(&home)
            .args(["--as", who])
            .args(rest)
            .output()?;
        if !out.status.success() {
            bail!("{rest:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8(out.stdout)?.trim().to_owned())
    };
    cli("a@bench", &["send", "--to", "b", "--message", "hello"])?;
    let token = cli("HUMAN", &["token", "add", "a@bench"])?;
    let tokens: Vec<String> = (0..50)
        .map(|i| cli("HUMAN", &["token", "add", &format!("s{i}@bench")]))
        .collect::<Result<_>>()?;

    let mut stdio = StdioServer::start(&mailroom, &home)?;
    let (mut server, addr) = listen(&mailroom, &home)?;
    let pid = server.id();
    let mut http = Http::connect(&addr, &token)?;
    http.call(&initialize())?;

    let roster = call("get_roster", json!({"project_handle": "bench"}));
    let write = call("write_mail", json!({"recipient": "b", "body": "bench"}));
    for _ in 0..20 {
        for c in [&roster, &write] {
            stdio.call(c)?;
            http.call(c)?;
        }
    }
    let (mut roster_stdio, mut roster_http) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        roster_stdio.push(timed(|| stdio.call(&roster))?);
        roster_http.push(timed(|| http.call(&roster))?);
    }
    let (mut write_stdio, mut write_http) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        write_stdio.push(timed(|| stdio.call(&write))?);
        write_http.push(timed(|| http.call(&write))?);
    }
    let before = rss(pid)?;

    let sessions = tokens.len();
    let met = Arc::new(Barrier::new(sessions + 1));
    let done = Arc::new(Barrier::new(sessions + 1));
    let threads: Vec<_> = tokens
        .into_iter()
        .map(|t| {
            let (addr, met, done) = (addr.clone(), met.clone(), done.clone());
            let (roster, write) = (roster.clone(), write.clone());
            std::thread::spawn(move || -> Result<()> {
                let mut c = Http::connect(&addr, &t);
                let worked = (|| {
                    let c = c.as_mut().map_err(|e| anyhow::anyhow!("{e}"))?;
                    c.call(&initialize())?;
                    for _ in 0..20 {
                        c.call(&roster)?;
                    }
                    for _ in 0..5 {
                        c.call(&write)?;
                    }
                    Ok::<_, anyhow::Error>(())
                })();
                met.wait();
                done.wait();
                drop(c);
                worked
            })
        })
        .collect();
    met.wait();
    let during = rss(pid)?;
    done.wait();
    for t in threads {
        t.join()
            .map_err(|_| anyhow::anyhow!("a session panicked"))??;
    }
    let _ = server.kill();
    let _ = server.wait();
    println!(
        "{:#}",
        json!({
            "calls": calls,
            "get_roster_stdio": stats(&mut roster_stdio),
            "get_roster_http": stats(&mut roster_http),
            "write_mail_stdio": stats(&mut write_stdio),
            "write_mail_http": stats(&mut write_http),
            "rss_kib_one_client": before,
            "rss_kib_50_sessions": during,
        })
    );
    Ok(())
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp_http_bench", "version": "1"}}})
    .to_string()
}

fn call(tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
    .to_string()
}

fn check(answer: &Value) -> Result<()> {
    if answer.get("error").is_some() || answer["result"]["isError"] == true {
        bail!("the server answered {answer}");
    }
    Ok(())
}

fn timed(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64() * 1000.0)
}

fn stats(ms: &mut [f64]) -> Value {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    json!({
        "median": at(0.5), "p90": at(0.9),
        "mean": ms.iter().sum::<f64>() / ms.len() as f64, "min": ms[0],
    })
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn rss(pid: u32) -> Result<Value> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .trim_end_matches(" kB")
            .parse()
            .ok()
    };
    Ok(json!({"VmRSS": field("VmRSS:"), "VmHWM": field("VmHWM:")}))
}

/// `mailroom --as a@bench mcp` over its pipes.
struct StdioServer {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl StdioServer {
    fn start(mailroom: &Path, home: &Path) -> Result<StdioServer> {
        let mut child = Command::new(mailroom)
            .arg("--home")
            .arg(home)
            .args(["--as", "a@bench", "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut s = StdioServer {
            _child: child,
            stdin,
            stdout,
        };
        s.call(&initialize())?;
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(s)
    }

    fn call(&mut self, request: &str) -> Result<()> {
        let mut line = String::with_capacity(request.len() + 1);
        line.push_str(request);
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        let mut answer = String::new();
        self.stdout.read_line(&mut answer)?;
        check(&serde_json::from_str(&answer)?)
    }
}

/// `mailroom mcp --listen 127.0.0.1:0` and the address it printed.
fn listen(mailroom: &Path, home: &Path) -> Result<(Child, String)> {
    let mut child = Command::new(mailroom)
        .arg("--home")
        .arg(home)
        .args(["mcp", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut first = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut first)?;
    let addr = first
        .trim()
        .strip_prefix("http://")
        .and_then(|a| a.strip_suffix("/mcp"))
        .with_context(|| format!("not a URL: {first}"))?
        .to_owned();
    Ok((child, addr))
}

/// One keep-alive connection with one token.
struct Http {
    stream: BufReader<TcpStream>,
    head: String,
}

impl Http {
    fn connect(addr: &str, token: &str) -> Result<Http> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Http {
            stream: BufReader::new(stream),
            head: format!(
                "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n"
            ),
        })
    }

    fn call(&mut self, body: &str) -> Result<()> {
        let request = format!("{}content-length: {}\r\n\r\n{body}", self.head, body.len());
        self.stream.get_mut().write_all(request.as_bytes())?;
        let mut status = String::new();
        self.stream.read_line(&mut status)?;
        let mut length = 0;
        loop {
            let mut line = String::new();
            if self.stream.read_line(&mut line)? == 0 {
                bail!("the server closed the connection");
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse()?;
            }
        }
        let mut answer = vec![0; length];
        self.stream.read_exact(&mut answer)?;
        if !status.starts_with("HTTP/1.1 200") {
            bail!("{status}{}", String::from_utf8_lossy(&answer));
        }
        check(&serde_json::from_slice(&answer)?)
    }
}
