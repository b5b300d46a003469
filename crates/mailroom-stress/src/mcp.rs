//! A client of `mailroom mcp`, as an MCP client drives it: one long-lived server process per
//! identity, newline-delimited JSON-RPC over its stdio (`initialize`,
//! `notifications/initialized`, then `tools/call`s, several in flight at once if asked).
//!
//! Invariant: an answer counts only when its whole line arrived on the server's stdout (what a
//! client would have seen); every call and how the server ended goes to the journal; a server
//! the harness loses track of is killed when its client is dropped, never left running.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::runner::{Mailroom, Outcome};

/// How long an answer may take before the server counts as hung (a debug build under load
/// answers in milliseconds).
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// A running `mailroom --as WHO mcp` and the lines it has answered.
pub struct McpClient<'a> {
    mr: &'a Mailroom<'a>,
    who: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    /// Answers read while waiting for another one, by request id.
    early: HashMap<u64, Value>,
    next: u64,
    calls: u64,
}

impl<'a> McpClient<'a> {
    /// Starts a server bound to `who` and completes the MCP handshake.
    pub fn start(mr: &'a Mailroom<'a>, who: &str) -> Result<McpClient<'a>> {
        let mut child = mr.serve(who, &["mcp"])?;
        let stdout = child
            .stdout
            .take()
            .context("the server has no stdout pipe")?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Drained on its own thread, so a chatty server can never block on a full pipe.
        let stderr = child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = e.read_to_string(&mut s);
                s
            })
        });
        let stdin = child.stdin.take();
        let mut c = McpClient {
            mr,
            who: who.to_owned(),
            child,
            stdin,
            lines,
            stderr,
            early: HashMap::new(),
            next: 0,
            calls: 0,
        };
        let id = c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "mailroom-stress", "version": "1"}}),
        )?;
        let init = c.answer(id)?;
        if init["result"]["serverInfo"]["name"] != "mailroom" {
            bail!("mcp as {who}: the handshake was answered with {init}");
        }
        c.write_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(c)
    }

    /// Tool calls made through this server so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    fn write_line(&mut self, v: &Value) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .context("the server's stdin is closed")?;
        let mut line = v.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .with_context(|| format!("mcp as {}: cannot write a request", self.who))
    }

    /// Sends a request without waiting for its answer; returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next += 1;
        let id = self.next;
        self.write_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends `tools/call TOOL ARGS` without waiting; returns its id.
    pub fn start_call(&mut self, tool: &str, args: &Value) -> Result<u64> {
        self.calls += 1;
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The answer to request `id`, within [`ANSWER_WITHIN`].
    pub fn answer(&mut self, id: u64) -> Result<Value> {
        if let Some(v) = self.early.remove(&id) {
            return Ok(v);
        }
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => bail!(
                    "mcp as {}: no answer to request {id} within {}s",
                    self.who,
                    ANSWER_WITHIN.as_secs()
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    bail!(
                        "mcp as {}: the server closed its output before answering request {id}",
                        self.who
                    )
                }
            };
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| anyhow!("mcp as {}: an answer is not JSON ({e}): {line}", self.who))?;
            match v["id"].as_u64() {
                Some(n) if n == id => return Ok(v),
                Some(n) => {
                    self.early.insert(n, v);
                }
                // A notification: nothing the harness waits for.
                None => {}
            }
        }
    }

    /// Calls `tool` and waits for its answer, which is journalled.
    pub fn call(&mut self, tool: &str, args: &Value) -> Result<Value> {
        let id = self.start_call(tool, args)?;
        let answer = self.answer(id)?;
        self.journal_call(tool, args, &answer, "mcp call")?;
        Ok(answer)
    }

    /// Records one call and its answer (without the framed text, which repeats the bodies).
    pub fn journal_call(&self, tool: &str, args: &Value, answer: &Value, note: &str) -> Result<()> {
        let mut shown = answer.clone();
        if let Some(r) = shown.get_mut("result").and_then(Value::as_object_mut) {
            r.remove("content");
        }
        let args = args.to_string();
        self.mr.journal().record(
            Some(&self.who),
            &["mcp", "tools/call", tool, &args],
            note,
            &Outcome {
                code: None,
                signal: None,
                stdout: shown.to_string(),
                stderr: String::new(),
            },
        )
    }

    /// Kills the server with SIGKILL and returns every answer that had fully arrived, by
    /// request id (those a client would have seen).
    pub fn kill(mut self) -> Result<HashMap<u64, Value>> {
        self.child.kill().context("cannot kill the MCP server")?;
        let mut answers = std::mem::take(&mut self.early);
        // The server is dead: its stdout ends once the pipe is drained.
        while let Ok(line) = self.lines.recv_timeout(ANSWER_WITHIN) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && let Some(id) = v["id"].as_u64()
            {
                answers.insert(id, v);
            }
        }
        self.end("killed")?;
        Ok(answers)
    }

    /// Closes the server's stdin, as a client leaving does, and returns how it ended (it must
    /// exit 0 by itself); one that does not end within the bound is killed.
    pub fn close(mut self) -> Result<Outcome> {
        self.stdin = None;
        // The server's stdout closes when it exits: its reader thread then drops the channel.
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    self.child.kill()?;
                    break;
                }
            }
        }
        self.end("closed")
    }

    fn end(&mut self, note: &str) -> Result<Outcome> {
        self.stdin = None;
        let status = self
            .child
            .wait()
            .context("cannot wait for the MCP server")?;
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let o = Outcome {
            code: status.code(),
            signal: status.signal(),
            stdout: String::new(),
            stderr,
        };
        let calls = format!("{} tool calls", self.calls);
        self.mr
            .journal()
            .record(Some(&self.who), &["mcp", &calls], note, &o)?;
        Ok(o)
    }
}

impl Drop for McpClient<'_> {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A `tools/call` answer as the tool's structured result, or the sentence saying why not (a
/// tool error, or a protocol error).
pub fn tool_result(answer: &Value) -> std::result::Result<Value, String> {
    if let Some(e) = answer.get("error") {
        return Err(format!("protocol error: {e}"));
    }
    let r = &answer["result"];
    if r["isError"] == true {
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        return Err(format!("tool error: {text}"));
    }
    match r.get("structuredContent") {
        Some(v) if v.is_object() => Ok(v.clone()),
        _ => Err(format!("no structured result: {answer}")),
    }
}

/// The CLI exit code a tool error carries in its structured part (`error.code`).
pub fn error_code(answer: &Value) -> Option<i64> {
    let r = &answer["result"];
    (r["isError"] == true)
        .then(|| r["structuredContent"]["error"]["code"].as_i64())
        .flatten()
}
