//! `mailroom mcp` over stdio, as a client launches it: newline-delimited JSON-RPC in, one
//! answer per line out. Garbage gets an answer and never stops the server.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Home, both_stores};

/// A running `mailroom mcp` and the lines it answers.
pub(crate) struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Mcp {
    pub(crate) fn start(home: &Home, args: &[&str]) -> Mcp {
        let mut child = home
            .process()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut mcp = Mcp {
            child,
            stdin,
            lines,
        };
        let init = mcp.request(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}},
        }));
        assert_eq!(init["result"]["serverInfo"]["name"], "mailroom", "{init}");
        mcp.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        mcp
    }

    fn send_line(&mut self, line: &str) {
        self.send_raw(line.as_bytes());
    }

    fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes, within a bound.
    fn answer(&self) -> Value {
        serde_json::from_str(&self.answer_line()).unwrap()
    }

    /// The next line the server writes, as written, within a bound.
    fn answer_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the server answers within 20 s")
    }

    fn request(&mut self, v: Value) -> Value {
        self.send_line(&v.to_string());
        self.answer()
    }

    pub(crate) fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }))
    }

    /// Closes stdin and returns the exit code.
    pub(crate) fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        self.child
            .wait()
            .unwrap()
            .code()
            .expect("exited, not killed")
    }
}

/// How many unread copies a mailbox of `project` holds.
/// How many messages `handle@project` has unread, as its own `whoami` counts them.
fn unread(home: &Home, project: &str, handle: &str) -> u64 {
    let me = home
        .as_(&format!("{handle}@{project}"), ["--json", "whoami"])
        .json();
    me["unread"]
        .as_u64()
        .unwrap_or_else(|| panic!("whoami --json counts unread mail: {me}"))
}

fn mcp_garbage_is_answered_and_the_server_keeps_serving(home: &Home) {
    let mut mcp = Mcp::start(home, &["--as", "alice@web", "mcp"]);
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}).to_string()
    };
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_args = format!(
        r#"{{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{{"name":"write_mail","arguments":{{"recipient":"bob","body":{}x{}}}}}}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let raw = |s: &str| s.as_bytes().to_vec();
    // (what, line, the JSON-RPC error code or the tool error kind expected, the id answered)
    let table: Vec<(&str, Vec<u8>, &str, Value)> = vec![
        ("not JSON", raw("this is not json"), "-32700", Value::Null),
        ("truncated JSON", raw(r#"{"jsonrpc":"2.0","id":2,"method":"tools/ca"#), "-32700", json!(2)),
        ("JSON but not JSON-RPC", raw("[1, 2, 3]"), "-32600", Value::Null),
        ("a string id, then bad syntax", raw(r#"{"jsonrpc":"2.0","id":"s-3","method":}"#), "-32700", json!("s-3")),
        ("arguments that are a string", raw(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "write_mail", "arguments": "bob"}}).to_string()), "-32602", json!(4)),
        ("arguments that are an array", raw(&json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "write_mail", "arguments": ["bob", "x"]}}).to_string()), "-32602", json!(41)),
        ("params that are an array", raw(r#"{"jsonrpc":"2.0","id":43,"method":"tools/call","params":[]}"#), "-32602", json!(43)),
        ("params of a ping that are an array", raw(r#"{"jsonrpc":"2.0","id":44,"method":"ping","params":["x"]}"#), "-32602", json!(44)),
        ("params of a listing that are a string", raw(r#"{"jsonrpc":"2.0","id":45,"method":"tools/list","params":"all"}"#), "-32602", json!(45)),
        ("an id past i64 and an unknown tool", raw(r#"{"jsonrpc":"2.0","id":12345678901234567891,"method":"tools/call","params":{"name":"nope"}}"#), "-32602", json!(12345678901234567891u64)),
        ("a tool name that is a number", raw(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": 7}}).to_string()), "-32602", json!(42)),
        ("a field of the wrong type", raw(&call(5, "write_mail", json!({"recipient": 5, "body": "x"}))), "invalid", json!(5)),
        ("a missing field", raw(&call(6, "write_mail", json!({"body": "x"}))), "invalid", json!(6)),
        ("an unknown field", raw(&call(7, "get_projects", json!({"surprise": 1}))), "invalid", json!(7)),
        ("an unknown tool", raw(&call(8, "rm_rf", json!({}))), "-32602", json!(8)),
        ("an unknown method", raw(&json!({"jsonrpc": "2.0", "id": 9, "method": "mail/steal"}).to_string()), "-32601", json!(9)),
        ("a 2 MiB argument", raw(&call(10, "write_mail", json!({"recipient": "bob", "body": "x".repeat(2 << 20)}))), "invalid", json!(10)),
        ("NUL bytes in a handle", raw(&call(11, "write_mail", json!({"recipient": "bob\u{0}", "body": "x"}))), "invalid", json!(11)),
        ("NUL bytes in a tool name", raw(&call(12, "read_mail\u{0}", json!({}))), "-32602", json!(12)),
        ("a path as a handle", raw(&call(13, "read_mail", json!({"project_handle": "../..", "handle": "alice"}))), "invalid", json!(13)),
        ("deep nesting", raw(&deep), "-32700", Value::Null),
        ("deep nesting in an argument", raw(&deep_args), "-32700", json!(16)),
        ("invalid UTF-8", b"{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"ping\xff\"}".to_vec(), "-32700", json!(17)),
        ("invalid UTF-8 before a string id", b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\xfe\",\"id\":\"u\\\"8\"}".to_vec(), "-32700", json!("u\"8")),
        ("a number out of range", raw(r#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"read_mail","arguments":{"limit":1e999999}}}"#), "-32700", json!(18)),
        ("an id out of range", raw(r#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#), "-32700", Value::Null),
        ("an id only inside params", raw(r#"{"jsonrpc":"2.0","params":{"id":5,"n":1e999999},"method":"ping","id":19}"#), "-32700", json!(19)),
        ("an empty batch", raw("[]"), "-32600", Value::Null),
        ("a batch of notifications", raw(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#), "-32600", Value::Null),
    ];
    for (i, (what, line, expect, id)) in table.iter().enumerate() {
        mcp.send_raw(line);
        let a = mcp.answer();
        assert_eq!(&a["id"], id, "{what}: the answer's id: {a}");
        match *expect {
            code if code.starts_with('-') => {
                assert_eq!(a["error"]["code"].to_string(), code, "{what}: {a}")
            }
            kind => {
                assert_eq!(a["result"]["isError"], true, "{what}: {a}");
                assert_eq!(
                    a["result"]["structuredContent"]["error"]["kind"], kind,
                    "{what}: {a}"
                );
            }
        }
        // Still serving, and nothing was written for alice.
        let ping = mcp.request(json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "ping"}));
        assert_eq!(
            ping["id"],
            1000 + i,
            "{what}: the server answers after it: {ping}"
        );
    }
    // A batch (MCP 2025-03-26 had them; 2025-06-18 removed them): each request in it gets its
    // own refusal, in one array, so no client waits on an id; nothing in it runs.
    mcp.send_line(
        r#"[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"write_mail","arguments":{"recipient":"bob","body":"batched"}}}]"#,
    );
    let batch = mcp.answer();
    let answers = batch.as_array().expect("a batch is answered by an array");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(20), &json!("b")], "{batch}");
    for a in answers {
        assert_eq!(a["error"]["code"], -32600, "{batch}");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batches are not supported"),
            "{batch}"
        );
    }
    // JSON-RPC ids are any integer: one past i64 is answered with the id exactly as written.
    mcp.send_line(r#"{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}"#);
    let line = mcp.answer_line();
    let a: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(a["result"], json!({}), "{line}");
    assert!(line.contains(r#""id":12345678901234567890,"#), "{line}");
    mcp.send_line(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"get_projects"}}"#);
    let a: Value = serde_json::from_str(&mcp.answer_line()).unwrap();
    assert_eq!(a["id"], json!(u64::MAX), "{a}");
    assert_eq!(a["result"]["isError"], false, "{a}");
    let sent = mcp.call(
        99,
        "write_mail",
        json!({"recipient": "bob", "body": "after the storm"}),
    );
    assert_eq!(sent["result"]["isError"], false, "{sent}");
    assert_eq!(mcp.finish(), 0);
    assert_eq!(
        unread(home, "web", "bob"),
        1,
        "only the one good send delivered"
    );
}

fn mcp_mail_written_by_the_server_is_read_by_the_cli(home: &Home) {
    let mut mcp = Mcp::start(home, &["--as", "alice@web", "mcp"]);
    let sent = mcp.call(1, "write_mail", json!({"project_handle": "web", "sender": "alice", "recipient": "bob", "subject": "hi", "body": "hello"}));
    let id = sent["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let forged = mcp.call(
        2,
        "write_mail",
        json!({"project_handle": "web", "sender": "bob", "recipient": "alice", "body": "x"}),
    );
    assert_eq!(
        forged["result"]["structuredContent"]["error"]["code"], 4,
        "{forged}"
    );
    assert_eq!(mcp.finish(), 0);
    let inbox = home.as_("bob@web", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["id"], id.as_str());
    assert_eq!(inbox["messages"][0]["from"], "alice@web");
    assert_eq!(
        unread(home, "web", "alice"),
        0,
        "the forged send wrote nothing"
    );
}

/// The server keeps project files and roster entries between calls: a roster change made by
/// another process (the CLI) while it runs is seen by its next call, both ways.
fn mcp_sees_a_roster_change_made_by_another_process_while_it_runs(home: &Home) {
    let mut mcp = Mcp::start(home, &["--as", "alice@web", "mcp"]);
    let to_bob = json!({"recipient": "bob", "body": "hello"});
    let first = mcp.call(1, "write_mail", to_bob.clone());
    assert_eq!(first["result"]["isError"], false, "{first}");
    let roster = |verb: &str| {
        home.cmd(["--as", "HUMAN", "--project", "web", "roster", verb, "bob"])
            .ok();
    };
    roster("deactivate");
    let refused = mcp.call(2, "write_mail", to_bob.clone());
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], 4,
        "{refused}"
    );
    roster("activate");
    let again = mcp.call(3, "write_mail", to_bob);
    assert_eq!(again["result"]["isError"], false, "{again}");
    assert_eq!(mcp.finish(), 0);
    assert_eq!(unread(home, "web", "bob"), 2);
}

/// A request line that arrives in two reads, with another call answered in between, is one
/// request: the server keeps what it read of the line while it answers (a client's large
/// `write_mail` crosses a pipe buffer in pieces).
fn mcp_a_line_split_while_another_call_is_answered_still_runs(home: &Home) {
    let mut mcp = Mcp::start(home, &["--as", "alice@web", "mcp"]);
    let first = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_projects", "arguments": {}}});
    let second = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write_mail", "arguments": {"recipient": "bob", "subject": "split", "body": "hello"}}}).to_string();
    let (head, tail) = second.split_at(40);
    let stdin = mcp.stdin.as_mut().unwrap();
    stdin
        .write_all(format!("{first}\n{head}").as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    assert_eq!(mcp.answer()["id"], 1, "the first call is answered");
    mcp.send_line(tail);
    let sent = mcp.answer();
    assert_eq!(sent["id"], 2, "{sent}");
    assert_eq!(sent["result"]["isError"], false, "{sent}");
    assert_eq!(mcp.finish(), 0);
    assert_eq!(
        unread(home, "web", "bob"),
        1,
        "the split request was sent once"
    );
}

fn mcp_lifecycle_lists_five_tools(home: &Home) {
    let mut mcp = Mcp::start(home, &["--as", "alice@web", "mcp", "--tools", "lifecycle"]);
    let list = mcp.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_mail",
            "write_mail",
            "edit_mail",
            "cancel_mail",
            "archive_mail"
        ]
    );
    assert_eq!(mcp.finish(), 0);
}

fn mcp_serves_the_current_revision_without_a_handshake_and_ends_quietly(home: &Home) {
    let line = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_mail", "arguments": {"recipient": "bob", "body": "hi"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}},
    });
    let run = home
        .as_("alice@web", ["mcp"])
        .stdin(format!("{line}\n"))
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let answer: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(unread(home, "web", "bob"), 1);
    // A client that closes before its first request: exit 0, nothing written.
    let run = home.as_("alice@web", ["mcp"]).stdin("").run();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
}

fn mcp_without_an_identity_is_refused_with_the_ways_to_get_one(home: &Home) {
    let run = home.cmd(["mcp"]).run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--as-any"), "{}", run.stderr);
    let run = home.cmd(["--as", "alice@web", "mcp", "--as-any"]).run();
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn the_plugin_mcp_json_starts_the_server_with_every_tool() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugin/.mcp.json"
    ))
    .unwrap();
    let config: Value = serde_json::from_str(&text).unwrap();
    let server = &config["mcpServers"]["mailroom"];
    assert_eq!(server["command"], "mailroom");
    let mut args = vec!["--as", "alice@web"];
    args.extend(
        server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    );
    let home = Home::new();
    let mut mcp = Mcp::start(&home, &args);
    let list = mcp.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(
        list["result"]["tools"].as_array().unwrap().len(),
        25,
        "{list}"
    );
    assert_eq!(mcp.finish(), 0);
}

fn the_mcp_server_serves_the_mailroom_the_cli_reads(h: &Home) {
    use std::io::{BufRead as _, BufReader, Write as _};
    let mut server = h
        .process()
        .args(["--as", "alice@web", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let mut stdin = server.stdin.take().expect("stdin");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let mut ask = |v: Value| -> Value {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
        if v.get("id").is_none() {
            return Value::Null;
        }
        let line = lines.next().expect("an answer").expect("readable");
        serde_json::from_str(&line).expect("JSON")
    };
    let init = ask(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}},
    }));
    assert_eq!(init["result"]["serverInfo"]["name"], "mailroom", "{init}");
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let sent = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_mail", "arguments": {"recipient": "bob", "subject": "hi", "body": "through MCP"}}}));
    assert_eq!(sent["result"]["isError"], false, "{sent}");
    let bob = h.as_("bob@web", ["--json", "inbox"]).json();
    assert_eq!(bob["messages"][0]["body"], "through MCP", "{bob}");
    let id = bob["messages"][0]["id"].as_str().expect("id").to_owned();
    h.as_("bob@web", ["reply", &id, "--message", "got it"]).ok();
    let answer = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "read_mail", "arguments": {}}}));
    assert!(answer.to_string().contains("got it"), "{answer}");
    drop(stdin);
    server.wait().expect("the server stops when its input ends");
}

both_stores!(
    the_mcp_server_serves_the_mailroom_the_cli_reads,
    mcp_garbage_is_answered_and_the_server_keeps_serving,
    mcp_mail_written_by_the_server_is_read_by_the_cli,
    mcp_sees_a_roster_change_made_by_another_process_while_it_runs,
    mcp_a_line_split_while_another_call_is_answered_still_runs,
    mcp_lifecycle_lists_five_tools,
    mcp_serves_the_current_revision_without_a_handshake_and_ends_quietly,
    mcp_without_an_identity_is_refused_with_the_ways_to_get_one,
);
