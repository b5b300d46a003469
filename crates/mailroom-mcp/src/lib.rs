//! mailroom's MCP server: every mailroom operation as an MCP tool, m_AI_l's thirteen tools with
//! their names and input fields included, served over stdio with the official Rust SDK.
//!
//! Invariant: no rule lives here. Each tool maps its input to the core call the CLI makes for
//! the same thing, shapes the result with `mailroom-json` and frames messages with the core's
//! renderer; only `server` knows rmcp, and the async runtime exists only while serving.
//!
//! ## Its modules
//!
//! the MCP server: `args` (each tool's input, m_AI_l's field names, doc comments as the schema's
//! descriptions; the acting member's two fields written once, added by the `acting_member!` macro
//! and read through `ActingMember`), `tools/` — `table` (the ordered tool table: annotations, whose
//! fields name the acting member), `schema` (output schemas, input schemas made plain for every
//! client — no `null` types, enums for fixed values), `identity` (who a call acts as; on a server
//! bound to one identity no field naming who acts, `Spec::acting`), `handlers` (per tool input →
//! one core call → `mailroom-json`) —, `words` (`McpWords`: hints and `Fix` advice as tool calls,
//! naming the acting member's fields on an operator's server), `transport` (newline-delimited
//! JSON-RPC that answers every bad line with the request's id whenever the line shows one (an
//! integer id past `i64` rides through rmcp as a stand-in string and goes back as written), bad
//! params with -32602, and each request of a batch with -32600; a plain `tools/call` line is read
//! in one pass into the request rmcp's general reader would make, every other line goes through
//! that reader; a result a tool wrote as JSON text (`read_mail`'s listing) replaces its stand-in
//! object as the answer is written), `server` (the rmcp `ServerHandler`: calls run on `spawn_blocking` over one shared
//! `Mailroom` (on the file store, all but `wait_mail` on the server's own thread, two thread
//! switches fewer), a dropped call cancels its `wait`, core errors become `isError` results with
//! kind and exit code). Identity: a server acts as one address and refuses calls naming another;
//! `--as-any` acts for whoever a call names. *Never* holds a rule the CLI also needs: those are in
//! the core (`sent_at`, `read_archiving`, `join` in `ops/m_ai_l.rs`). `waiters` (`Waits`: the
//! HTTP server's `wait_mail`, every waiting call a task woken by one shared watch of the store).

mod args;
pub mod http;
mod server;
mod tools;
mod transport;
mod waiters;
mod words;

pub use server::{Server, ToolSet};
pub use tools::{DEFAULT_WAIT, MAX_WAIT, Tools};
pub use transport::MAX_LINE;
pub use waiters::Waits;
pub use words::McpWords;

/// Serves `server` over stdin and stdout until the client closes stdin.
pub fn serve_stdio(server: Server) -> std::io::Result<()> {
    use rmcp::ServiceExt as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        // Long results go from their tool to the answer as JSON text (see `server::Written`).
        let written = std::sync::Arc::new(server::Written::default());
        let lines = transport::Lines::new(stdin, stdout).with_written(written.clone());
        let running = match server.with_written(written).serve(lines).await {
            Ok(running) => running,
            // A client that leaves before its first request is done, not failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(std::io::Error::other(e)),
        };
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mailroom_core::ops::Draft;
    use mailroom_core::{Address, Mailroom};
    use mailroom_store_fs::FsStore;
    use rmcp::ServiceExt as _;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    use crate::{Server, ToolSet, Tools, server, transport};

    /// The answers to `lines`, from a server over `home` acting as b@p: through this crate's
    /// transport with results written as text (`written`), or through rmcp's own.
    async fn answers(home: &std::path::Path, written: bool, lines: &[Value]) -> Vec<Value> {
        let store = Arc::new(FsStore::new(home.to_path_buf()));
        let server = Server::new(
            Tools {
                mr: Mailroom::shared(store),
                identity: Some(Address::parse_canonical("b@p").unwrap()),
            },
            ToolSet::All,
        )
        .calls_on_server_thread();
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_end);
        tokio::spawn(async move {
            let running = if written {
                let w = Arc::new(server::Written::default());
                let lines =
                    transport::Lines::new(server_read, server_write).with_written(w.clone());
                server.with_written(w).serve(lines).await
            } else {
                server.serve((server_read, server_write)).await
            };
            if let Ok(running) = running {
                let _ = running.waiting().await;
            }
        });
        let (read, mut write) = tokio::io::split(client_end);
        let mut read = BufReader::new(read);
        let mut out = Vec::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let inited = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        for (i, line) in [init, inited].iter().chain(lines).enumerate() {
            write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
            if i == 1 {
                continue;
            }
            let mut answer = String::new();
            read.read_line(&mut answer).await.unwrap();
            if i > 1 {
                out.push(serde_json::from_str(&answer).unwrap());
            }
        }
        out
    }

    /// A listing written as JSON text reaches the client as the same answer rmcp writes from
    /// the value, whatever the bodies hold and whatever id the client chose.
    #[tokio::test]
    async fn a_written_result_is_the_answer_rmcp_writes() {
        let home = tempfile::tempdir().unwrap();
        let store = FsStore::new(home.path().to_path_buf());
        let mr = Mailroom::new(&store);
        let from = Address::parse_canonical("a@p").unwrap();
        for (i, body) in [
            "plain",
            "quotes \" and \\ and\nlines\t",
            "\u{0}\u{1f} \u{2028} \u{1f600}",
            "",
        ]
        .iter()
        .enumerate()
        {
            mr.send(
                &from,
                Draft {
                    to: vec!["b".into()],
                    subject: Some(format!("subject {i} \"x\"")),
                    body: (*body).to_owned(),
                    ..Draft::default()
                },
            )
            .unwrap();
        }
        let call = |id: Value, args: Value| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "read_mail", "arguments": args}})
        };
        let look_alike = json!({"\u{0}mailroom-written": "2"}).to_string();
        let lines = [
            call(json!(1), json!({"limit": 2, "no_archive": true})),
            // An id that reads like a stand-in, and one past i64 (answered with its own id).
            call(json!(look_alike), json!({"no_archive": true})),
            call(
                json!(18_446_744_073_709_551_615u64),
                json!({"no_archive": true}),
            ),
            call(json!("s"), json!({"limit": 0, "no_archive": true})),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "get_roster", "arguments": {"project_handle": "p"}}}),
        ];
        // Each server reads the same home in turn, once every message is read: no call here
        // changes it then.
        answers(
            home.path(),
            false,
            &[call(json!(0), json!({"no_archive": true}))],
        )
        .await;
        let spliced = answers(home.path(), true, &lines).await;
        let plain = answers(home.path(), false, &lines).await;
        for (i, (a, b)) in spliced.iter().zip(&plain).enumerate() {
            // rmcp's own transport cannot read the id past i64; the same call's result, then.
            if i == 2 {
                assert_eq!(a["result"], plain[1]["result"]);
            } else {
                assert_eq!(a, b);
            }
        }
        assert_eq!(
            spliced[1]["result"]["structuredContent"]["messages"]
                .as_array()
                .map(Vec::len),
            Some(4)
        );
        assert_eq!(spliced[2]["id"], json!(18_446_744_073_709_551_615u64));
    }
}
