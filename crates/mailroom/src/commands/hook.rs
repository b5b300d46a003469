//! `hook HARNESS EVENT`: the harness's hook JSON in, its hook JSON out (each harness's event
//! names and answer shape are its module's under `crate::harness`). Whatever goes wrong,
//! the session goes on: nothing on stdout, one warning on stderr, exit 0.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use mailroom_core::ops::HookEvent;
use serde_json::{Value, json};

use crate::cli::{Cli, Command};
use crate::context::{Ctx, Env};
use crate::harness;

/// Claude Code caps a hook's output at 10,000 characters; the injection stays well inside,
/// leaving room for the JSON around it and its escapes.
pub(crate) const BUDGET: usize = 9_000;

/// Most of the hook input kept. A harness's payload can be big (a tool's whole output rides
/// in it); the rest is read and dropped, so the harness never blocks writing it, and the mail
/// is injected with the fields that came before the cut.
const MAX_INPUT: usize = 64 * 1024 * 1024;

/// How long the hook waits for the harness to close stdin. A harness that never does gets
/// its mail anyway, read with what came by then.
const INPUT_TIME: std::time::Duration = std::time::Duration::from_secs(3);

/// The input's top-level fields the hook reads; every other field is skipped unparsed.
const USED_FIELDS: &[&str] = &["cwd", "workspace_roots", "stop_hook_active", "loop_count"];

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
            let _ = mailroom_core::text::write_field(&mut cause, &chain(&e), 2_000);
            crate::errln!("mailroom hook: warning: {cause}; the session goes on without mail")
        }
    }
}

/// `e` and its causes, `: `-joined, leaving out a cause its wrapper already quotes (a store
/// error's sentence names its cause, so `{e:#}` would say it twice).
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
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
    if !rest.is_empty() && rest.iter().any(|a| a != "--enforce") {
        crate::errln!("mailroom hook: warning: ignoring unexpected arguments {rest:?}");
    }
    let Some(harness) = harness::parse(harness) else {
        bail!(
            "unknown harness '{harness}'; use {}",
            harness::names(" or ")
        );
    };
    if let Some(pre) = harness.pre_edit()
        && pre.event == event.as_str()
    {
        let input = read_input(super::reserve::HOOK_FIELDS)?;
        let env = chosen_cwd(env, &input);
        let enforce = rest.iter().any(|a| a == "--enforce");
        return super::reserve::pre_edit(cli, &env, harness, &pre, &input, enforce);
    }
    let Some(event) = harness::event(harness, event) else {
        bail!(
            "unknown hook event '{event}'; use {}",
            harness::event_names(harness)
        );
    };
    // After a tool, on a harness whose hook before a tool cannot show context, the notice of
    // an edit under another agent's lease rides with the mail.
    let after_edit = harness
        .pre_edit()
        .filter(|p| !p.context_before && event == HookEvent::PostToolUse);
    let input = if after_edit.is_some() {
        read_input(&[USED_FIELDS, &["tool_name", "tool_input"]].concat())?
    } else {
        read_input(USED_FIELDS)?
    };
    // A hook that cannot add context (Cursor's `beforeSubmitPrompt`) answers nothing and
    // consumes nothing, so the mail is still news at the next tool call or at the stop.
    if !harness.answers(event) {
        return Ok(None);
    }
    let env = chosen_cwd(env, &input);
    // A stop that already continued once must not continue again: Claude Code, Codex and
    // Gemini CLI say so with `stop_hook_active`; Cursor counts its follow-ups in `loop_count`.
    let stop_hook_active = input
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || input
            .get("loop_count")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 0);
    let mut ctx = Ctx::new_quick(cli, &env)?;
    let lease_notice = match after_edit {
        Some(pre) => super::reserve::after_edit(&ctx, &env, &pre, &input)?,
        None => None,
    };
    // After every tool call: when nothing was delivered since the last injection, say nothing
    // before paying for the identity's spelling (the project file, the roster entry) or the
    // words of hints. The address's cheap parts name the mailbox; a miss or any doubt (an
    // identity that cannot be had, an unreadable mark) takes the full path below.
    if matches!(event, HookEvent::PostToolUse | HookEvent::UserPromptSubmit)
        && let Ok(Some(cheap)) = mailroom_core::identity::resolve(&ctx.inputs)
        && ctx.mailroom().nothing_new(&cheap.address).unwrap_or(false)
    {
        return Ok(harness.render(event, lease_notice, None));
    }
    // No identity (not in a repository, nothing set): the hook stays silent.
    let Some(identity) = ctx.identity()? else {
        return Ok(None);
    };
    let words = ctx.words()?;
    let answer = ctx
        .mailroom()
        .hook(&identity.address, event, stop_hook_active, BUDGET, &words)?;
    let context = match (lease_notice, answer.context) {
        (Some(notice), Some(mail)) => Some(format!("{notice}\n\n{mail}")),
        (notice, mail) => notice.or(mail),
    };
    Ok(harness.render(event, context, answer.block_stop))
}

/// The environment with the working directory the input names, when that is inside the
/// checkout the hook was started in.
pub(crate) fn chosen_cwd(env: &Env, input: &Value) -> Env {
    let mut env = env.clone();
    // The folder the input names (Claude Code's `cwd`; Cursor has no `cwd` in its common
    // input, its project is the first workspace root) chooses the repository, and so the
    // identity, only within the checkout the hook was started in: an input naming another
    // repository must not read, and mark read, that repository's mail. A hook started
    // outside any checkout (Cursor's user hooks run in ~/.cursor) takes the input's folder.
    let named = match input.get("cwd") {
        Some(cwd) => cwd.as_str(),
        None => input
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str),
    };
    if let Some(dir) = named.and_then(|d| std::fs::canonicalize(d).ok())
        && dir.is_dir()
    {
        let started_in = env
            .cwd
            .as_deref()
            .and_then(|c| std::fs::canonicalize(c).ok())
            .and_then(|c| checkout(&c));
        match started_in {
            Some(top) if checkout(&dir).as_deref() != Some(top.as_path()) => crate::errln!(
                "mailroom hook: warning: the input names {}, outside the repository the hook runs in ({}); using the latter",
                dir.display(),
                top.display()
            ),
            _ => env.cwd = Some(dir),
        }
    }
    env
}

/// The git checkout around `dir` (the nearest ancestor holding `.git`), as identity finds it.
fn checkout(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The harness's JSON on stdin, only [`USED_FIELDS`]; empty or absent input is an empty object.
/// Read to its end within [`INPUT_TIME`], keeping at most [`MAX_INPUT`] bytes: input cut by
/// either bound gives the fields read before the cut.
fn read_input(fields: &[&str]) -> Result<Value> {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;

    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::io::Errno;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(json!({}));
    }
    // Each read waits (poll) only for what is left of the time, so stdin left open cannot
    // hold the hook past it; no thread is started to wait, which every hook would pay for.
    let fd = stdin.as_fd();
    let deadline = std::time::Instant::now() + INPUT_TIME;
    let mut buf = Vec::new();
    let mut whole = true;
    let mut chunk = vec![0; 256 * 1024];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => {
                whole = false;
                if buf.iter().all(u8::is_ascii_whitespace) {
                    crate::errln!(
                        "mailroom hook: warning: no hook input on stdin within {} s; going on without it",
                        INPUT_TIME.as_secs()
                    );
                }
                break;
            }
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(e) => {
                return Err(std::io::Error::from(e)).context("cannot read the hook input on stdin");
            }
        }
        // Readable (or at its end): this read does not block.
        match rustix::io::read(fd, &mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = MAX_INPUT - buf.len();
                if n > room {
                    whole = false;
                }
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(Errno::INTR | Errno::AGAIN) => continue,
            Err(e) => {
                return Err(std::io::Error::from(e)).context("cannot read the hook input on stdin");
            }
        }
    }
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    used_fields(&buf, whole, fields)
}

/// The fields `used` of the JSON object in `bytes`. When `whole` is false, `bytes` is the input's
/// start: the fields before the cut are kept and the cut is no error.
fn used_fields(bytes: &[u8], whole: bool, used: &[&str]) -> Result<Value> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Fields<'a>(&'a mut serde_json::Map<String, Value>, &'a [&'a str]);
    impl<'de> DeserializeSeed<'de> for Fields<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Fields<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if self.1.contains(&key.as_str()) {
                    let value: Value = map.next_value()?;
                    self.0.insert(key, value);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(())
        }
    }
    let mut fields = serde_json::Map::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read = Fields(&mut fields, used)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    match read {
        Ok(()) => Ok(Value::Object(fields)),
        Err(e) if e.is_data() => bail!("the hook input on stdin is not a JSON object"),
        // A cut input ends mid-value: what was read before is what can be known.
        Err(_) if !whole => Ok(Value::Object(fields)),
        Err(e) => Err(e).context("the hook input on stdin is not JSON"),
    }
}
