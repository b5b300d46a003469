//! `serve`: the operator's console, a local web page acting as HUMAN. The async runtime starts
//! inside `mailroom_console::run`, only on this path.

use std::net::SocketAddr;

use anyhow::Result;
use mailroom_console::ServeError;
use mailroom_core::{Error, Mailroom};

use crate::context::Ctx;

pub fn serve(ctx: &mut Ctx, listen: SocketAddr, open: bool, expose: bool) -> Result<()> {
    if !listen.ip().is_loopback() && !expose {
        return Err(Error::Invalid(format!(
            "{listen} is not a loopback address: the console reads every project's mail and sends as HUMAN, so it listens on 127.0.0.1 unless you pass --expose as well"
        ))
        .into());
    }
    let (store, _) = ctx.store.shared();
    let home = ctx.store.describe();
    let result = mailroom_console::run(Mailroom::shared(store), listen, |url, bound| {
        {
            // The address is for whoever reads stdout; when nobody does, the console still serves.
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout(), "{url}");
            let _ = std::io::stdout().flush();
        }
        crate::errln!(
            "mailroom console for {home}, acting as HUMAN: open the address above; Ctrl-C stops it"
        );
        if !listen.ip().is_loopback() {
            crate::errln!(
                "warning: listening on {bound}, beyond this machine: whoever reaches it with this address (its token) can read all mail of every project and send as HUMAN, and plain HTTP carries the token unencrypted"
            );
        }
        if open {
            open_browser(url);
        }
    });
    // Not listening is no mail problem: exit 1, the sentence names the address and the fix.
    result.map_err(|e: ServeError| anyhow::anyhow!("{e}"))
}

/// Hands the address to the desktop's opener; a machine without one only gets a warning.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        crate::errln!(
            "warning: could not open a browser with {opener} ({e}): open the address above yourself"
        );
    }
}
