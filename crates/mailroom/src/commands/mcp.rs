//! `mcp`: serve every operation as MCP tools over stdio. The async runtime starts here and only
//! here; every other command keeps the start-up cost of a plain process.

use anyhow::Result;
use mailroom_core::{Error, Mailroom};
use mailroom_mcp::{Server, ToolSet, Tools};

use crate::cli::ToolsArg;
use crate::context::Ctx;

pub fn mcp(ctx: &mut Ctx, tools: ToolsArg, as_any: bool) -> Result<()> {
    let identity = if as_any {
        if ctx.inputs.flag_as.is_some() {
            return Err(Error::Invalid(
                "--as-any serves any sender and --as one identity: pass one of them".into(),
            )
            .into());
        }
        None
    } else {
        match ctx.identity()? {
            Some(i) => Some(i.address),
            None => {
                return Err(Error::Invalid(
                    "no identity for the MCP server: pass --as HANDLE@PROJECT, set MAILROOM_AS, run it inside a repository, or start an operator's server with --as-any".into(),
                )
                .into());
            }
        }
    };
    // The claim of a git-derived identity is recorded once, when the server starts.
    ctx.record_claim()?;
    let (store, file_store) = ctx.store.shared();
    let set = match tools {
        ToolsArg::All => ToolSet::All,
        ToolsArg::Lifecycle => ToolSet::Lifecycle,
    };
    let server = Server::new(
        Tools {
            mr: Mailroom::shared(store),
            identity,
        },
        set,
    );
    // The file store's calls are plain system calls, never an async runtime of their own.
    let server = if file_store {
        server.calls_on_server_thread()
    } else {
        server
    };
    mailroom_mcp::serve_stdio(server).map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))
}
