//! mailroom's MCP server: every mailroom operation as an MCP tool, m_AI_l's thirteen tools with
//! their names and input fields included, served over stdio with the official Rust SDK.
//!
//! Invariant: no rule lives here. Each tool maps its input to the core call the CLI makes for
//! the same thing, shapes the result with `mailroom-json` and frames messages with the core's
//! renderer; only `server` knows rmcp, and the async runtime exists only while serving.

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
