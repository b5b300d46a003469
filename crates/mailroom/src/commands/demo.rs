//! `demo`: a short real exchange between two agents and a human, in a temporary home, through
//! the same command code a user runs.

use anyhow::{Context as _, Result};
use clap::Parser;
use mailroom_core::{Address, Mailroom, MessageId};
use mailroom_store_fs::FsStore;

use crate::cli::Cli;
use crate::context::Env;

struct Demo {
    env: Env,
    store: FsStore,
}

impl Demo {
    /// Prints a step, then runs it as the CLI would.
    fn step(&self, note: &str, args: &[&str]) -> Result<()> {
        if note.is_empty() {
            crate::outln!();
        } else {
            crate::outln!("\n# {note}");
        }
        let shown: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        crate::outln!("$ mailroom {}", shown.join(" "));
        let cli = Cli::try_parse_from(std::iter::once("mailroom").chain(args.iter().copied()))
            .context("a demo step is not a valid command line")?;
        super::run(cli, &self.env).map_err(|f| f.error)
    }

    /// The newest message `who` sent (the demo's way to learn ids, as a user reads them).
    fn last_sent(&self, who: &str) -> Result<MessageId> {
        let me = Address::parse_canonical(who).map_err(|e| anyhow::anyhow!("{e}"))?;
        Mailroom::new(&self.store)
            .outbox(&me, Some(1))?
            .pop()
            .map(|e| e.message.id)
            .context("the demo expected a sent message")
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@/=:".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

pub fn run() -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("mailroom-demo-")
        .tempdir()
        .context("cannot create a temporary home for the demo")?;
    let home = dir.path().join("home");
    crate::outln!("mailroom demo: a temporary home at {}", home.display());
    crate::outln!("(every step below is a real `mailroom` command run against it)");
    let demo = Demo {
        env: Env {
            home: Some(home.clone()),
            as_: None,
            cwd: None,
            url: None,
            enforce_reservations: None,
        },
        store: FsStore::new(&home),
    };
    let (api, web) = ("api@shop", "web@shop");

    demo.step(
        "Two agents share the project 'shop'; a roster keeps typos from creating mailboxes.",
        &["projects", "add", "shop", "--policy", "roster"],
    )?;
    demo.step(
        "The operator puts the backend agent on its roster...",
        &[
            "--as",
            "HUMAN",
            "roster",
            "add",
            "api",
            "--project",
            "shop",
            "--role",
            "backend",
        ],
    )?;
    demo.step(
        "...and the frontend agent too (only members and HUMAN may change a roster).",
        &[
            "--as",
            "HUMAN",
            "roster",
            "add",
            "web",
            "--project",
            "shop",
            "--role",
            "frontend",
        ],
    )?;
    demo.step(
        "api asks web a question, marked urgent.",
        &["--as", api, "send", "--to", "web", "--kind", "QUESTION", "--priority", "H", "--subject", "Renaming /cart to /basket", "--message", "I want to rename the /cart endpoint to /basket.\nDoes the frontend call /cart anywhere but checkout?"],
    )?;
    let question = demo.last_sent(api)?.to_string();
    demo.step(
        "web has not read it yet, so api can still fix it in place.",
        &["--as", api, "edit", &question, "--message", "I want to rename the /cart endpoint to /basket on Friday.\nDoes the frontend call /cart anywhere but checkout?"],
    )?;
    demo.step(
        "web's next session starts: pending mail comes first, framed as untrusted data.",
        &["--as", web, "inbox"],
    )?;
    demo.step(
        "api edits again; web has read it now, so web gets a CORRECTION instead.",
        &[
            "--as",
            api,
            "edit",
            &question,
            "--subject",
            "Renaming /cart to /basket (moved to Monday)",
        ],
    )?;
    demo.step(
        "web answers; the reply closes the question.",
        &[
            "--as",
            web,
            "reply",
            &question,
            "--message",
            "Only checkout and the mini-cart. Monday works.",
        ],
    )?;
    let answer = demo.last_sent(web)?.to_string();
    demo.step(
        "api reads the answer and marks it done.",
        &["--as", api, "read", &answer],
    )?;
    demo.step("", &["--as", api, "done", &answer])?;
    demo.step(
        "Has web read everything api sent? The outbox says, per recipient.",
        &["--as", api, "outbox"],
    )?;
    demo.step(
        "web needs a decision only a human can make.",
        &[
            "--as",
            web,
            "send",
            "--to",
            "HUMAN",
            "--kind",
            "HOLD_REQUEST",
            "--subject",
            "Keep /cart as an alias?",
            "--message",
            "Old mobile apps call /cart. Keep an alias for a release (a) or break them (b)?",
        ],
    )?;
    let hold = demo.last_sent(web)?.to_string();
    demo.step(
        "The operator sees it in the global HUMAN mailbox...",
        &["--as", "HUMAN", "inbox"],
    )?;
    demo.step(
        "...and answers.",
        &[
            "--as",
            "HUMAN",
            "reply",
            &hold,
            "--message",
            "(a): keep the alias for one release.",
        ],
    )?;
    let decision = demo.last_sent("HUMAN")?.to_string();
    demo.step(
        "web reads the decision and archives it in one go...",
        &["--as", web, "read", &decision, "--archive"],
    )?;
    demo.step(
        "...then its client crashes before acting on it. Recent archive to the rescue:",
        &["--as", web, "recover"],
    )?;
    demo.step("", &["--as", web, "recover", "--restore", &decision])?;
    demo.step(
        "Before stopping, web leaves a note for its own next session.",
        &[
            "--as",
            web,
            "handover",
            "--message",
            "Alias /cart -> /basket lands Monday; the correction from api has the date.",
        ],
    )?;
    demo.step(
        "web's next session: the restored decision, the correction and the handover are waiting.",
        &["--as", web, "inbox"],
    )?;
    demo.step(
        "Everything is plain Markdown on disk; search covers the archive too.",
        &["--as", web, "search", "alias"],
    )?;
    crate::outln!("\nThat was the whole exchange. The temporary home is removed now.");
    Ok(())
}
