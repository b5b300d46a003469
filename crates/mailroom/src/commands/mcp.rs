//! `mcp`: serve every operation as MCP tools over stdio. The async runtime starts here and only
//! here; every other command keeps the start-up cost of a plain process.

use anyhow::Result;
use mailroom_core::{Error, Mailroom};
use mailroom_mcp::{Server, ToolSet, Tools};

use crate::cli::{ListenArgs, ToolsArg};
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

/// `mcp --listen IP:PORT`: the same tools over MCP Streamable HTTP at `/mcp` (HTTPS with
/// `--tls-cert`), each request acting as the identity of the bearer token it carries, exactly as
/// `--as ADDRESS mcp` acts.
pub fn mcp_http(
    ctx: &mut Ctx,
    tools: ToolsArg,
    as_any: bool,
    listen: std::net::SocketAddr,
    how: &ListenArgs,
) -> Result<()> {
    if as_any || ctx.inputs.flag_as.is_some() {
        return Err(Error::Invalid(
            "--listen acts as each request's token, not as --as or --as-any: leave those out (token add ADDRESS gives an agent its identity)".into(),
        )
        .into());
    }
    if !listen.ip().is_loopback() {
        if !how.expose {
            return Err(Error::Invalid(format!(
                "{listen} is not a loopback address: the server listens on 127.0.0.1 unless you pass --expose as well"
            ))
            .into());
        }
        if how.tls_cert.is_none() && !how.insecure_http {
            return Err(Error::Invalid(format!(
                "{listen} is beyond this machine: pass --tls-cert FILE --tls-key FILE to serve HTTPS, or --insecure-http to send tokens and mail unencrypted anyway"
            ))
            .into());
        }
    }
    let also = how
        .allow_host
        .iter()
        .map(|h| allowed_host(h))
        .collect::<Result<Vec<String>>>()?;
    // The files are read before anything is served: a bad one stops the server at once.
    let tls = match (&how.tls_cert, &how.tls_key) {
        (Some(cert), Some(key)) => Some(
            mailroom_mcp::http::Tls::load(cert, key).map_err(|e| Error::Invalid(e.to_string()))?,
        ),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let (store, file_store) = ctx.store.shared();
    let mr = Mailroom::shared(store);
    // Every client's wait_mail, one watch: the file store's looks are plain system calls.
    let waits = mailroom_mcp::Waits::new(mr.clone(), !file_store);
    let set = match tools {
        ToolsArg::All => ToolSet::All,
        ToolsArg::Lifecycle => ToolSet::Lifecycle,
    };
    let check = mr.clone();
    let authenticate = std::sync::Arc::new(move |secret: &str| {
        check
            .authenticate(secret)
            .map(|t| {
                t.map(|t| mailroom_mcp::http::Holder {
                    token: t.id,
                    address: t.address,
                })
            })
            .map_err(|e| e.to_string())
    });
    let server_for = std::sync::Arc::new(move |address: &mailroom_core::Address| {
        Server::new(
            Tools {
                mr: mr.clone(),
                identity: Some(address.clone()),
            },
            set,
        )
        .with_waits(waits.clone())
    });
    let home = ctx.store.describe();
    mailroom_mcp::http::run(listen, authenticate, server_for, tls, also, |bound| {
        {
            // The address is for whoever reads stdout; when nobody does, the server still serves.
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout(), "{scheme}://{bound}/mcp");
            let _ = std::io::stdout().flush();
        }
        crate::errln!(
            "mailroom MCP over {} for {home}: each request acts as its bearer token's identity; Ctrl-C stops it",
            scheme.to_ascii_uppercase()
        );
        if !bound.ip().is_loopback() && scheme == "http" {
            crate::errln!(
                "warning: listening on {bound} over plain HTTP: tokens and mail cross the network unencrypted"
            );
        }
    })
    .map_err(|e| anyhow::anyhow!("cannot serve MCP on {listen}: {e}"))
}

/// An `--allow-host` name as `Host` headers carry it, lower case: a DNS name, an IPv4 address
/// or a bracketed IPv6 address, without a port, scheme or path.
fn allowed_host(raw: &str) -> Result<String> {
    let name = raw.trim().to_ascii_lowercase();
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let ok = if bare.parse::<std::net::Ipv6Addr>().is_ok() {
        name.starts_with('[') && name.ends_with(']')
    } else {
        !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    if ok {
        Ok(name)
    } else {
        Err(Error::Invalid(format!(
            "--allow-host '{raw}' is not a host name or address: give it as clients write it in the URL, without a port, e.g. mail.example.internal, 192.0.2.7 or [2001:db8::7]"
        ))
        .into())
    }
}
