//! `export --to URL|DIR`: the whole mailroom copied into another store, with progress on a
//! terminal and one summary.

use std::io::IsTerminal as _;

use anyhow::Result;
use mailroom_core::Error;
use serde_json::json;

use crate::context::Ctx;
use crate::open::{Overlap, Place, open};
use crate::output;

pub fn export(ctx: &mut Ctx, to: &str) -> Result<()> {
    let me = ctx.me()?;
    let to = to.trim();
    if to.is_empty() || to.starts_with('-') {
        return Err(Error::Invalid(format!(
            "--to '{to}' names no mailroom; give a postgres:// URL or a directory (./{to} if that is really its name)"
        ))
        .into());
    }
    let same = || {
        Error::Invalid(format!(
            "--to names this very mailroom ({}); give another one",
            ctx.store.describe()
        ))
    };
    let place = if mailroom_store_pg::is_url(to) {
        Place::Url {
            raw: to.to_owned(),
            from: "--to",
        }
    } else if to.contains("://") {
        return Err(Error::Invalid(format!(
            "--to '{}' is not a PostgreSQL URL; write postgres://USER@HOST:PORT/DATABASE or a directory",
            mailroom_store_pg::redacted(to)
        ))
        .into());
    } else {
        let dir = std::path::absolute(to)
            .map_err(|e| Error::Invalid(format!("--to {to} is not a usable path: {e}")))?;
        Place::Home(dir)
    };
    let target = open(place, false)?;
    match (ctx.store.overlap(&target), ctx.store.home(), target.home()) {
        (Some(Overlap::Same), ..) => return Err(same().into()),
        (Some(Overlap::Inside), Some(home), Some(dir)) => {
            return Err(Error::Invalid(format!(
                "--to {} is inside this mailroom ({}); give a directory outside it",
                dir.display(),
                home.display()
            ))
            .into());
        }
        _ => {}
    }
    let target = target.as_dyn();
    let terminal = std::io::stderr().is_terminal() && !ctx.json;
    let mut progress = |step: &str| {
        if terminal {
            eprint!("\r\x1b[Kexporting: {step}");
        }
    };
    let done = ctx.mailroom().export_to(&me, target, &mut progress)?;
    if terminal {
        eprint!("\r\x1b[K");
    }
    let damaged: Vec<String> = done
        .damaged
        .iter()
        .map(|d| format!("not copied: {} ({})", d.location, d.problem))
        .collect();
    if ctx.json {
        output::print_json(&json!({
            "to": target.describe(),
            "projects": {"total": done.projects, "new": done.projects_new},
            "members": {"total": done.members, "new": done.members_new},
            "mailboxes": done.mailboxes,
            "copies": {"total": done.copies, "new": done.copies_new},
            "outbox": {"total": done.traces, "new": done.traces_new},
            "entries": {"total": done.entries, "new": done.entries_new},
            "seen": {"total": done.seen, "new": done.seen_new},
            "keys": {"total": done.keys, "new": done.keys_new},
            "revisions": {"total": done.revisions, "new": done.revisions_new},
            "archive_times": {"total": done.archive_times, "new": done.archive_times_new},
            "marks": {"total": done.marks, "new": done.marks_new},
            "origins": {"total": done.origins, "new": done.origins_new},
            "not_copied": damaged,
            "warnings": done.warnings,
        }));
    } else {
        output::notices(&damaged);
        output::notices(&done.warnings);
        crate::outln!(
            "exported to {}: {} projects ({} new), {} members ({} new), {} copies in {} mailboxes ({} new or moved), {} earlier revisions ({} new), {} archive times ({} new), {} outbox traces ({} new), {} channel entries ({} new), {} seen marks ({} new), {} idempotency keys ({} new), {} injection marks ({} carried over), {} origin claims ({} new)",
            target.describe(),
            done.projects,
            done.projects_new,
            done.members,
            done.members_new,
            done.copies,
            done.mailboxes,
            done.copies_new,
            done.revisions,
            done.revisions_new,
            done.archive_times,
            done.archive_times_new,
            done.traces,
            done.traces_new,
            done.entries,
            done.entries_new,
            done.seen,
            done.seen_new,
            done.keys,
            done.keys_new,
            done.marks,
            done.marks_new,
            done.origins,
            done.origins_new
        );
    }
    Ok(())
}
