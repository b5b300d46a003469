//! `export --to URL|DIR`: the whole mailroom copied into another store, with progress on a
//! terminal and one summary.

use std::io::IsTerminal as _;

use anyhow::Result;
use mailroom_core::{Error, Store};
use mailroom_store_fs::FsStore;
use serde_json::json;

use crate::context::{AnyStore, Ctx};
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
    let target: Box<dyn Store> = if mailroom_store_pg::is_url(to) {
        let pg = crate::context::open_pg(to, false)?;
        if let AnyStore::Pg(source) = &ctx.store
            && source.same_as(&pg)
        {
            return Err(same().into());
        }
        Box::new(pg)
    } else if to.contains("://") {
        return Err(Error::Invalid(format!(
            "--to '{}' is not a PostgreSQL URL; write postgres://USER@HOST:PORT/DATABASE or a directory",
            mailroom_store_pg::redacted(to)
        ))
        .into());
    } else {
        let dir = std::path::absolute(to)
            .map_err(|e| Error::Invalid(format!("--to {to} is not a usable path: {e}")))?;
        if let AnyStore::Fs(source) = &ctx.store {
            let home = resolved(source.home());
            let target = resolved(&dir);
            if target == home {
                return Err(same().into());
            }
            if target.starts_with(&home) {
                return Err(Error::Invalid(format!(
                    "--to {} is inside this mailroom ({}); give a directory outside it",
                    dir.display(),
                    source.home().display()
                ))
                .into());
            }
        }
        Box::new(FsStore::new(dir))
    };
    let terminal = std::io::stderr().is_terminal() && !ctx.json;
    let mut progress = |step: &str| {
        if terminal {
            eprint!("\r\x1b[Kexporting: {step}");
        }
    };
    let done = ctx
        .mailroom()
        .export_to(&me, target.as_ref(), &mut progress)?;
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

/// `path` with every symbolic link and `..` of the part that exists resolved, and the rest
/// (directories the export would create) appended: two spellings of one place compare equal.
fn resolved(path: &std::path::Path) -> std::path::PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_owned(),
        }
    }
}
