//! The MCP round trip for `bench/run`: a client that starts `mailroom mcp` over stdio, as an
//! MCP client launches it, and times tool calls one after another, each from writing its
//! request line to reading the whole answer line.
//!
//! Usage: `mcp_bench MAILROOM HOME FLOOR_DIR [--as ADDR] [--project P] [--to HANDLE]
//! [--calls N] [--total T] [--rss-every K] [--warmup W]`
//!
//! Runs `MAILROOM --home HOME --as ADDR mcp` (default `a@bench`), does the handshake, then:
//!
//! 1. `W` untimed calls of each tool (default 20);
//! 2. `N` timed JSON-RPC `ping` requests (no work in the server: the transport's own round
//!    trip) and `N` timed `get_roster` calls of project `P` (default `bench`; read-only);
//! 3. `N` timed `write_mail` calls to `HANDLE` (default `b`; a durable send each), each followed
//!    by one in-process floor operation in `FLOOR_DIR` (created if missing; put it on the same
//!    file system as HOME): create a file in `FLOOR_DIR/tmp`, write 30 bytes, `fdatasync`,
//!    rename into `FLOOR_DIR/new`, `fsync` the directory — what `examples/floor` does, without
//!    the process. Interleaving them makes both see the same disk, whatever it is doing;
//! 4. `N` timed `ping`s, each right after one more floor operation: the transport's round trip
//!    in the situation every timed `write_mail` is in (issued after the client waited on its
//!    disk, so both processes' CPUs had time to go idle). What a `write_mail` costs above the
//!    floor splits into this and the server's own work;
//! 5. untimed calls, `get_roster` and `write_mail` in turn, until `T` calls in all (default
//!    10,000).
//!
//! After every `K` calls (default 1,000) it reads the server's `VmRSS` and `VmHWM` from
//! `/proc/PID/status`. Prints one JSON object on stdout: median, p90, mean, min and max in ms of
//! each timed series, the ratio of the `write_mail` median to the floor's, and the RSS samples.
//! Every answer is checked: a JSON-RPC error or a tool error stops the run.

use std::fs::{self, File};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

struct Args {
    mailroom: PathBuf,
    home: PathBuf,
    floor: PathBuf,
    actor: String,
    project: String,
    to: String,
    calls: usize,
    total: usize,
    rss_every: usize,
    warmup: usize,
}

fn parse_args() -> Result<Args> {
    let usage = "usage: mcp_bench MAILROOM HOME FLOOR_DIR [--as ADDR] [--project P] [--to HANDLE] [--calls N] [--total T] [--rss-every K] [--warmup W]";
    let mut args = std::env::args_os().skip(1);
    let mut positional = Vec::new();
    let mut actor = "a@bench".to_owned();
    let mut project = "bench".to_owned();
    let mut to = "b".to_owned();
    let (mut calls, mut total, mut rss_every, mut warmup) = (1000, 10_000, 1000, 20);
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let mut value = |name: &str| -> Result<String> {
            args.next()
                .map(|v| v.to_string_lossy().into_owned())
                .with_context(|| format!("{name} needs a value; {usage}"))
        };
        match arg.as_str() {
            "--as" => actor = value("--as")?,
            "--project" => project = value("--project")?,
            "--to" => to = value("--to")?,
            "--calls" => calls = value("--calls")?.parse()?,
            "--total" => total = value("--total")?.parse()?,
            "--rss-every" => rss_every = value("--rss-every")?.parse()?,
            "--warmup" => warmup = value("--warmup")?.parse()?,
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            s if s.starts_with('-') => bail!("unknown flag {s}; {usage}"),
            s => positional.push(PathBuf::from(s)),
        }
    }
    let [mailroom, home, floor]: [PathBuf; 3] = positional
        .try_into()
        .map_err(|_| anyhow::anyhow!("{usage}"))?;
    if calls == 0 || rss_every == 0 {
        bail!("--calls and --rss-every must be at least 1");
    }
    Ok(Args {
        mailroom,
        home,
        floor,
        actor,
        project,
        to,
        calls,
        total,
        rss_every,
        warmup,
    })
}

/// A running `mailroom mcp`: requests go to its stdin, one answer line comes back each.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
    calls: usize,
}

impl Server {
    fn start(args: &Args) -> Result<Server> {
        let mut child = Command::new(&args.mailroom)
            .env_remove("MAILROOM_AS")
            .env_remove("MAILROOM_URL")
            .env_remove("MAILROOM_HOME")
            .arg("--home")
            .arg(&args.home)
            .args(["--as", &args.actor, "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", args.mailroom.display()))?;
        let stdin = child.stdin.take().context("the server's stdin is piped")?;
        let stdout = child
            .stdout
            .take()
            .context("the server's stdout is piped")?;
        let mut server = Server {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            next_id: 0,
            line: String::new(),
            calls: 0,
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "mcp_bench", "version": "1"}}),
        )?;
        if init["result"]["serverInfo"]["name"] != "mailroom" {
            bail!("unexpected answer to initialize: {init}");
        }
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, v: &Value) -> Result<()> {
        let mut line = v.to_string();
        line.push('\n');
        // One write, one system call: the request is on the pipe whole.
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and waits for its answer line; the answer is left in `self.line`.
    fn round_trip(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            bail!("the server closed its output (request {id}, {method})");
        }
        Ok(id)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.round_trip(method, params)?;
        let answer: Value = serde_json::from_str(&self.line)
            .with_context(|| format!("answer to request {id} is not JSON: {}", self.line))?;
        if answer["id"] != id || answer.get("error").is_some() {
            bail!("request {id} ({method}) failed: {answer}");
        }
        Ok(answer)
    }

    /// One `tools/call`: returns its round-trip time in ms, after checking the answer.
    fn call(&mut self, tool: &str, arguments: Value) -> Result<f64> {
        let params = json!({"name": tool, "arguments": arguments});
        let t0 = Instant::now();
        let id = self.round_trip("tools/call", params)?;
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        let answer: Value = serde_json::from_str(&self.line)
            .with_context(|| format!("answer to call {id} is not JSON: {}", self.line))?;
        if answer["id"] != id
            || answer.get("error").is_some()
            || answer["result"]["isError"] == true
        {
            bail!("call {id} ({tool}) failed: {answer}");
        }
        self.calls += 1;
        Ok(ms)
    }

    /// `VmRSS` and `VmHWM` in KiB, from /proc.
    fn rss(&self) -> Result<(u64, u64)> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        let field = |name: &str| -> Result<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .with_context(|| format!("no {name} in {path}"))
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// Closes stdin and waits for the server to exit.
    fn finish(self) -> Result<i32> {
        let Server {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait()?;
        Ok(status.code().unwrap_or(-1))
    }
}

/// What `examples/floor` does, in this process: fsync'd create + rename + directory fsync.
/// Returns its time in ms.
fn floor_once(dir: &Path, n: usize) -> Result<f64> {
    let name = format!("{}.{n}", std::process::id());
    let tmp = dir.join("tmp").join(&name);
    let new = dir.join("new");
    let t0 = Instant::now();
    let mut f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(b"---\nfrom: a@default\n---\nhello\n")?;
    f.sync_data()?;
    drop(f);
    fs::rename(&tmp, new.join(&name))?;
    File::open(&new)?.sync_all()?;
    Ok(t0.elapsed().as_secs_f64() * 1000.0)
}

/// Median, p90, mean, min and max of a series, in ms.
fn stats(mut v: Vec<f64>) -> Value {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        // Nearest rank: the smallest value with at least q of the series at or below it.
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    };
    let median = if v.len().is_multiple_of(2) {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    } else {
        v[v.len() / 2]
    };
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    json!({
        "n": v.len(),
        "median_ms": round(median),
        "p90_ms": round(at(0.9)),
        "mean_ms": round(v.iter().sum::<f64>() / v.len() as f64),
        "min_ms": round(v[0]),
        "max_ms": round(v[v.len() - 1]),
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    fs::create_dir_all(args.floor.join("tmp"))?;
    fs::create_dir_all(args.floor.join("new"))?;
    let roster = json!({"project_handle": args.project});
    let mut body_n = 0usize;
    let mut mail = || {
        body_n += 1;
        json!({"recipient": args.to, "body": format!("mcp bench message {body_n}\nA second line of body text.\n")})
    };

    let mut server = Server::start(&args)?;
    let mut samples = Vec::new();
    let mut sample = |server: &Server| -> Result<()> {
        if server.calls.is_multiple_of(args.rss_every) {
            let (rss, hwm) = server.rss()?;
            samples.push(json!({"calls": server.calls, "vm_rss_kib": rss, "vm_hwm_kib": hwm}));
        }
        Ok(())
    };
    let started = Instant::now();

    for _ in 0..args.warmup {
        server.call("get_roster", roster.clone())?;
        sample(&server)?;
        server.call("write_mail", mail())?;
        sample(&server)?;
    }
    // The transport alone: a JSON-RPC `ping` does no work in the server, so its round trip is
    // what every tool call pays before any mail is touched.
    let mut ping = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        let t0 = Instant::now();
        server.request("ping", json!({}))?;
        ping.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let mut get_roster = Vec::with_capacity(args.calls);
    for _ in 0..args.calls {
        get_roster.push(server.call("get_roster", roster.clone())?);
        sample(&server)?;
    }
    let mut write_mail = Vec::with_capacity(args.calls);
    let mut floor = Vec::with_capacity(args.calls);
    for i in 0..args.calls {
        write_mail.push(server.call("write_mail", mail())?);
        sample(&server)?;
        floor.push(floor_once(&args.floor, i)?);
    }
    let mut ping_after_floor = Vec::with_capacity(args.calls);
    for i in 0..args.calls {
        floor_once(&args.floor, args.calls + i)?;
        let t0 = Instant::now();
        server.request("ping", json!({}))?;
        ping_after_floor.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    while server.calls < args.total {
        if server.calls.is_multiple_of(2) {
            server.call("get_roster", roster.clone())?;
        } else {
            server.call("write_mail", mail())?;
        }
        sample(&server)?;
    }
    let (rss_end, hwm_end) = server.rss()?;
    let calls = server.calls;
    let wall = started.elapsed().as_secs_f64();
    let code = server.finish()?;
    if code != 0 {
        bail!("the server exited with code {code}");
    }

    let write = stats(write_mail);
    let floor = stats(floor);
    let ratio = write["median_ms"].as_f64().unwrap_or(f64::NAN)
        / floor["median_ms"].as_f64().unwrap_or(f64::NAN);
    let out = json!({
        "server": format!("{} --home HOME --as {} mcp", args.mailroom.display(), args.actor),
        "calls": calls,
        "wall_s": (wall * 100.0).round() / 100.0,
        "ping": stats(ping),
        "get_roster": stats(get_roster),
        "write_mail": write,
        "floor_in_process": floor,
        "ping_after_floor": stats(ping_after_floor),
        "write_mail_over_floor": (ratio * 1000.0).round() / 1000.0,
        "rss": samples,
        "rss_end": {"calls": calls, "vm_rss_kib": rss_end, "vm_hwm_kib": hwm_end},
    });
    println!("{out}");
    Ok(())
}
