//! `setup git-hook [--uninstall]`: the pre-commit guard of file reservations, in the hooks
//! folder git uses for the repository of the working directory (`core.hooksPath` honoured).
//!
//! A pre-commit hook that was there is moved aside, byte for byte and with its mode (one
//! rename), run first by the guard (its failure fails the commit with its status), and moved
//! back by `--uninstall`; the guard itself is the one file mailroom writes.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use mailroom_core::Error;

use crate::cli::{Cli, SetupArgs};
use crate::commands::setup::{Scope, invocation};
use crate::context::Env;

/// The name `setup` takes for it, in place of a harness.
pub(crate) const NAME: &str = "git-hook";

/// The line that marks the guard as mailroom's.
const MARK: &str = "# mailroom pre-commit guard";

/// Where the hook that was there waits while the guard is installed.
const ASIDE: &str = "pre-commit.mailroom-previous";

pub fn setup(cli: &Cli, env: &Env, args: &SetupArgs) -> Result<()> {
    for (given, flag) in [
        (args.user, "--user"),
        (args.replace, "--replace"),
        (args.operator, "--operator"),
        (args.check, "--check"),
        (args.remote.is_some(), "--remote"),
    ] {
        if given {
            return Err(Error::Invalid(format!(
                "setup git-hook takes no {flag}: it installs the guard in the repository of the working directory"
            ))
            .into());
        }
    }
    let dir = hooks_dir(env)?;
    let hook = dir.join("pre-commit");
    let aside = dir.join(ASIDE);
    let current = read_hook(&hook)?;
    let ours = current.as_deref().is_some_and(is_ours);
    let aside_exists = std::fs::symlink_metadata(&aside).is_ok();
    if args.uninstall {
        return uninstall(args, &hook, &aside, ours, current.is_some(), aside_exists);
    }
    let inv = invocation(cli, args, Scope::Project)?;
    let script = script(&inv.command(&["check", "--staged"]));
    match (current.is_some(), ours, aside_exists) {
        (true, false, true) => {
            return Err(Error::Refused(format!(
                "{} is not mailroom's guard, and {} already holds the hook it replaced; move one of them away, then run setup git-hook again",
                hook.display(),
                aside.display()
            ))
            .into());
        }
        (false, _, true) => {
            return Err(Error::Refused(format!(
                "{} holds a hook mailroom moved aside, but {} is gone; move it back to pre-commit (or remove it), then run setup git-hook again",
                aside.display(),
                hook.display()
            ))
            .into());
        }
        _ => {}
    }
    if ours && current.as_deref() == Some(script.as_bytes()) {
        crate::outln!(
            "The mailroom pre-commit guard is already in {}.",
            hook.display()
        );
        return Ok(());
    }
    if args.dry_run {
        crate::outln!(
            "Would write the mailroom pre-commit guard to {}{} (dry run: nothing written).",
            hook.display(),
            if current.is_some() && !ours {
                format!(", moving the hook there to {ASIDE} and running it first")
            } else {
                String::new()
            }
        );
        return Ok(());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let moved = current.is_some() && !ours;
    if moved {
        std::fs::rename(&hook, &aside)
            .with_context(|| format!("cannot move {} to {}", hook.display(), aside.display()))?;
    }
    if let Err(e) = write_executable(&hook, &script) {
        if moved {
            // Put the user's hook back: a guard that could not be written must not cost it.
            let _ = std::fs::rename(&aside, &hook);
        }
        return Err(e);
    }
    crate::outln!(
        "Installed the mailroom pre-commit guard in {}{}: a commit touching files under another agent's exclusive lease is refused; MAILROOM_GUARD=off lets one through.",
        hook.display(),
        if moved || aside_exists {
            format!(" (the hook that was there runs first, from {ASIDE})")
        } else {
            String::new()
        }
    );
    Ok(())
}

fn uninstall(
    args: &SetupArgs,
    hook: &Path,
    aside: &Path,
    ours: bool,
    exists: bool,
    aside_exists: bool,
) -> Result<()> {
    if !ours {
        crate::outln!(
            "{} is not mailroom's pre-commit guard{}; nothing to remove.",
            hook.display(),
            if exists { "" } else { " (there is none)" }
        );
        return Ok(());
    }
    if args.dry_run {
        crate::outln!(
            "Would remove the mailroom pre-commit guard from {}{} (dry run: nothing changed).",
            hook.display(),
            if aside_exists {
                ", putting back the hook that was there"
            } else {
                ""
            }
        );
        return Ok(());
    }
    if aside_exists {
        // One rename: the previous hook comes back with its own bytes and mode.
        std::fs::rename(aside, hook).with_context(|| {
            format!("cannot move {} back to {}", aside.display(), hook.display())
        })?;
        crate::outln!(
            "Removed the mailroom pre-commit guard; {} is the hook that was there before.",
            hook.display()
        );
    } else {
        std::fs::remove_file(hook).with_context(|| format!("cannot remove {}", hook.display()))?;
        crate::outln!(
            "Removed the mailroom pre-commit guard from {}.",
            hook.display()
        );
    }
    Ok(())
}

/// The folder git runs the repository's hooks from: `core.hooksPath` when set, else the
/// common git directory's `hooks` (as `git rev-parse --git-path hooks` says, from where we run).
fn hooks_dir(env: &Env) -> Result<PathBuf> {
    let cwd = env
        .cwd
        .clone()
        .context("cannot tell the working directory")?;
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--git-path", "hooks"])
        .current_dir(&cwd)
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::Invalid(format!("cannot run git to find the hooks folder: {e}")))?;
    if !out.status.success() {
        return Err(Error::Invalid(format!(
            "{} is not inside a git repository; run setup git-hook in the checkout to guard",
            cwd.display()
        ))
        .into());
    }
    let text = String::from_utf8(out.stdout)
        .map_err(|_| Error::Invalid("git named a hooks folder that is not UTF-8".into()))?;
    let dir = PathBuf::from(text.trim_end_matches(['\n', '\r']));
    Ok(if dir.is_absolute() {
        dir
    } else {
        cwd.join(dir)
    })
}

/// The hook's bytes, or none when there is no file (a dangling link counts as one).
fn read_hook(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        Ok(_) => {}
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(Vec::new())),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn is_ours(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.lines().nth(1).is_some_and(|l| l.starts_with(MARK))
}

/// Written to a new file beside it, then renamed over it: a reader sees the old hook or the
/// new one, never half of it.
fn write_executable(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".pre-commit.mailroom-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .and_then(|()| {
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o755))
        })
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The guard: the hook that was there first (its failure is the commit's), then
/// `mailroom check --staged`. Exit 4 (a lease) refuses the commit; any other failure of
/// mailroom's (no store, no identity) is a warning, since leases are advisory.
fn script(check: &str) -> String {
    format!(
        r#"#!/bin/sh
{MARK}, installed by `mailroom setup git-hook`; `mailroom setup git-hook --uninstall`
# removes it and puts back the hook that was here. A commit touching files under another
# agent's exclusive lease is refused; MAILROOM_GUARD=off lets a human through.
previous="$(dirname "$0")/{ASIDE}"
if [ -x "$previous" ]; then
  "$previous" "$@" || exit $?
fi
if [ "${{MAILROOM_GUARD:-}}" = off ]; then
  exit 0
fi
{check} >/dev/null
status=$?
if [ "$status" -eq 4 ]; then
  echo "mailroom: commit refused: the files above are reserved by another agent; write to the holder, or commit with MAILROOM_GUARD=off to go ahead anyway" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "mailroom: warning: the reservation check failed (exit $status); the commit goes ahead" >&2
fi
exit 0
"#
    )
}
