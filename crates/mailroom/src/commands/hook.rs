//! `hook HARNESS EVENT`: the harness's hook JSON in, its hook JSON out. Whatever goes wrong,
//! the session goes on: nothing on stdout, one warning on stderr, exit 0.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use mailroom_core::ops::HookEvent;
use serde_json::{Value, json};

use crate::cli::{Cli, Command};
use crate::context::{Ctx, Env};

/// Claude Code caps a hook's output at 10,000 characters; the injection stays well inside,
/// leaving room for the JSON around it and its escapes.
const BUDGET: usize = 9_000;

/// Largest hook input read from stdin.
const MAX_INPUT: u64 = 1024 * 1024;

pub fn run(cli: &Cli, env: &Env) {
    // Not even a bug may fail the session: a panic becomes the warning too.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(cli, env)))
        .unwrap_or_else(|_| Err(anyhow::anyhow!("internal error")));
    match outcome {
        Ok(Some(out)) => crate::outln!("{out}"),
        Ok(None) => {}
        Err(e) => {
            // The cause may quote a hand-written file: one line, nothing raw.
            let mut cause = String::new();
            let _ = mailroom_core::text::write_field(&mut cause, &format!("{e:#}"), 2_000);
            eprintln!("mailroom hook: warning: {cause}; the session goes on without mail")
        }
    }
}

fn answer(cli: &Cli, env: &Env) -> Result<Option<Value>> {
    let Command::Hook {
        harness,
        event,
        rest,
    } = &cli.command
    else {
        return Ok(None);
    };
    if !rest.is_empty() {
        eprintln!("mailroom hook: warning: ignoring unexpected arguments {rest:?}");
    }
    if !matches!(harness.as_str(), "claude" | "codex" | "gemini") {
        bail!("unknown harness '{harness}'; use claude, codex or gemini");
    }
    let Some(event) = HookEvent::parse(event) else {
        bail!(
            "unknown hook event '{event}'; use SessionStart, UserPromptSubmit, PostToolUse or Stop"
        );
    };
    let input = read_input()?;
    let mut env = env.clone();
    if let Some(cwd) = input.get("cwd").and_then(Value::as_str).map(PathBuf::from)
        && cwd.is_dir()
    {
        env.cwd = Some(cwd);
    }
    let stop_hook_active = input
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut ctx = Ctx::new(cli, &env)?;
    // No identity (not in a repository, nothing set): the hook stays silent.
    let Some(identity) = ctx.identity()? else {
        return Ok(None);
    };
    let words = ctx.words()?;
    let answer = ctx
        .mailroom()
        .hook(&identity.address, event, stop_hook_active, BUDGET, &words)?;
    if let Some(reason) = answer.block_stop {
        return Ok(Some(json!({"decision": "block", "reason": reason})));
    }
    Ok(answer.context.map(|text| {
        json!({
            "hookSpecificOutput": {
                "hookEventName": event.as_str(),
                "additionalContext": text,
            }
        })
    }))
}

/// The harness's JSON on stdin; empty or absent input is an empty object.
fn read_input() -> Result<Value> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(json!({}));
    }
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT)
        .read_to_end(&mut buf)
        .context("cannot read the hook input on stdin")?;
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_slice(&buf).context("the hook input on stdin is not JSON")?;
    if !v.is_object() {
        bail!("the hook input on stdin is not a JSON object");
    }
    Ok(v)
}
