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
//! that reader), `server` (the rmcp `ServerHandler`: calls run on `spawn_blocking` over one shared
//! `Mailroom` (on the file store, all but `wait_mail` on the server's own thread, two thread
//! switches fewer), a dropped call cancels its `wait`, core errors become `isError` results with
//! kind and exit code). Identity: a server acts as one address and refuses calls naming another;
//! `--as-any` acts for whoever a call names. *Never* holds a rule the CLI also needs: those are in
//! the core (`sent_at`, `read_archiving`, `join` in `ops/m_ai_l.rs`).

mod args;
mod server;
mod tools;
mod transport;
mod words;

pub use server::{Server, ToolSet};
pub use tools::{DEFAULT_WAIT, MAX_WAIT, Tools};
pub use transport::MAX_LINE;
pub use words::McpWords;

/// Serves `server` over stdin and stdout until the client closes stdin.
pub fn serve_stdio(server: Server) -> std::io::Result<()> {
    use rmcp::ServiceExt as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let running = match server.serve(transport::Lines::new(stdin, stdout)).await {
            Ok(running) => running,
            // A client that leaves before its first request is done, not failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(std::io::Error::other(e)),
        };
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}
