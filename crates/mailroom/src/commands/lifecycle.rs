//! `inbox`, `read`, `done`, `archive`, `edit`, `cancel`, `outbox`, `recover`, `search`: the
//! life of directed mail after it is sent.

use anyhow::Result;
use mailroom_core::ops::{EditOutcome, EditPatch};
use mailroom_core::render::{self, Frame, Vocabulary as _};
use serde_json::json;

use crate::cli::EditArgs;
use crate::context::Ctx;
use crate::output::{self, short, stored_json, table, when};

pub fn inbox(ctx: &mut Ctx, limit: Option<usize>) -> Result<()> {
    let me = ctx.me()?;
    let inbox = ctx.mailroom().inbox_stream(&me, limit)?;
    if ctx.json {
        output::print_json(&mailroom_json::inbox_json(
            &me,
            &inbox.collect()?,
            render::untrusted_notice(&me),
        ));
        return Ok(());
    }
    if inbox.is_empty() && inbox.damaged.is_empty() {
        crate::outln!("No pending mail for {me}.");
        return Ok(());
    }
    let words = ctx.words()?;
    let frame = Frame {
        recipient: &me,
        noun: "pending message",
        place: "",
        more: inbox.more,
        more_command: &words.inbox(),
        hints: true,
        words: &words,
    };
    /// Why writing the listing stopped: stdout failed, or a message could not be decoded.
    enum Stop {
        Write,
        Read(mailroom_core::Error),
    }
    impl From<mailroom_core::Error> for Stop {
        fn from(e: mailroom_core::Error) -> Stop {
            Stop::Read(e)
        }
    }
    let mut unreadable = None;
    // One message at a time, straight to stdout: a long inbox is never held whole.
    output::render(|w| {
        render::write_frame_start(w, &frame, inbox.len())?;
        let visited = inbox.visit(|stored| {
            w.write_char('\n').map_err(|_| Stop::Write)?;
            render::message_block(w, stored, frame.words, frame.hints).map_err(|_| Stop::Write)
        });
        match visited {
            Ok(()) => render::write_frame_end(w, &frame, &inbox.damaged),
            Err(Stop::Write) => Err(std::fmt::Error),
            Err(Stop::Read(e)) => {
                unreadable = Some(e);
                Ok(())
            }
        }
    });
    match unreadable {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

pub fn read(ctx: &mut Ctx, id: &str, archive: bool) -> Result<()> {
    let me = ctx.me()?;
    let read = ctx.mailroom().read(&me, id, archive)?;
    if ctx.json {
        output::print_json(&json!({
            "messages": [stored_json(&read.stored)],
            "archived": read.archived,
            "notice": render::untrusted_notice(&me),
        }));
        return Ok(());
    }
    let words = ctx.words()?;
    let frame = Frame {
        recipient: &me,
        noun: "message",
        place: "",
        more: 0,
        more_command: "",
        hints: !read.archived,
        words: &words,
    };
    output::render(|w| render::write_injection(w, &frame, std::slice::from_ref(&read.stored), &[]));
    if read.archived {
        crate::outln!("archived {}", read.stored.message.id);
    }
    Ok(())
}

pub fn done(ctx: &mut Ctx, ids: &[String], all: bool) -> Result<()> {
    let me = ctx.me()?;
    if all {
        let n = ctx.mailroom().done_all(&me)?;
        if ctx.json {
            output::print_json(&json!({"done": n}));
        } else {
            crate::outln!("marked {n} message{} done", if n == 1 { "" } else { "s" });
        }
        return Ok(());
    }
    let results = ctx.mailroom().done(&me, ids)?;
    if ctx.json {
        output::print_json(&mailroom_json::done_json(&results));
        return Ok(());
    }
    for (id, moved) in results {
        if moved {
            crate::outln!("done {id}");
        } else {
            crate::outln!("done {id} (it already was)");
        }
    }
    Ok(())
}

pub fn archive(ctx: &mut Ctx) -> Result<()> {
    let me = ctx.me()?;
    let n = ctx.mailroom().done_all(&me)?;
    if ctx.json {
        output::print_json(&mailroom_json::archive_json(&me, n));
    } else {
        crate::outln!(
            "archived {n} message{} from {me}",
            if n == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

pub fn edit(ctx: &mut Ctx, args: EditArgs) -> Result<()> {
    let priority = args.priority.as_deref().map(super::priority).transpose()?;
    let me = ctx.me()?;
    let report = ctx.mailroom().edit(
        &me,
        &args.id,
        EditPatch {
            subject: args.subject,
            priority,
            body: args.message,
        },
    )?;
    output::notices(&report.notices);
    if ctx.json {
        output::print_json(&mailroom_json::edit_json(&report));
        return Ok(());
    }
    for (to, outcome) in &report.outcomes {
        match outcome {
            EditOutcome::Edited => crate::outln!(
                "edited {} in place at {to} (revision {})",
                report.message.id,
                report.message.revision
            ),
            EditOutcome::Corrected(id) => crate::outln!(
                "{to} had already read {}; sent correction {id}",
                report.message.id
            ),
            EditOutcome::Cancelled => {
                crate::outln!("{to}: {} was cancelled; nothing sent", report.message.id)
            }
        }
    }
    Ok(())
}

pub fn cancel(ctx: &mut Ctx, id: &str) -> Result<()> {
    let me = ctx.me()?;
    let report = ctx.mailroom().cancel(&me, id)?;
    if ctx.json {
        output::print_json(&mailroom_json::cancel_json(&report));
        return Ok(());
    }
    for (to, state) in &report.outcomes {
        match state {
            mailroom_core::State::Cancelled if report.cancelled_now.contains(to) => {
                crate::outln!("cancelled {} at {to}", report.id)
            }
            mailroom_core::State::Cancelled => crate::outln!(
                "{} was already cancelled at {to}; nothing changed",
                report.id
            ),
            other => crate::outln!(
                "{to} has already {} {}; it stands",
                if *other == mailroom_core::State::Done {
                    "archived"
                } else {
                    "read"
                },
                report.id
            ),
        }
    }
    Ok(())
}

pub fn outbox(ctx: &mut Ctx, limit: Option<usize>) -> Result<()> {
    let me = ctx.me()?;
    let entries = ctx.mailroom().outbox(&me, limit)?;
    if ctx.json {
        output::print_json(&mailroom_json::outbox_json(&entries));
        return Ok(());
    }
    if entries.is_empty() {
        crate::outln!("Nothing sent by {me}.");
        return Ok(());
    }
    let mut rows = vec![vec![
        "ID".into(),
        "DATE".into(),
        "TO (STATE)".into(),
        "SUBJECT".into(),
    ]];
    for e in &entries {
        let to: Vec<String> = e
            .recipients
            .iter()
            .map(|(a, s)| format!("{a} ({})", s.map(|s| s.as_str()).unwrap_or("missing")))
            .collect();
        rows.push(vec![
            short(&e.message.id),
            when(e.message.date),
            to.join(", "),
            e.message.subject.clone(),
        ]);
    }
    crate::out!("{}", table(&rows));
    Ok(())
}

pub fn recover(ctx: &mut Ctx, restore: Option<&str>, limit: usize) -> Result<()> {
    let me = ctx.me()?;
    if let Some(id) = restore {
        let stored = ctx.mailroom().restore(&me, id)?;
        if ctx.json {
            output::print_json(&json!({"messages": [stored_json(&stored)]}));
        } else {
            crate::outln!(
                "restored {} to pending; it will be delivered again",
                stored.message.id
            );
        }
        return Ok(());
    }
    let recent = ctx.mailroom().recover(&me, limit)?;
    if ctx.json {
        output::print_json(&mailroom_json::recover_json(&recent));
        return Ok(());
    }
    if recent.is_empty() {
        crate::outln!("Nothing archived for {me}.");
        return Ok(());
    }
    let mut rows = vec![vec![
        "ID".into(),
        "ARCHIVED".into(),
        "FROM".into(),
        "SUBJECT".into(),
    ]];
    for (s, at) in &recent {
        rows.push(vec![
            short(&s.message.id),
            when(*at),
            s.message.from.to_string(),
            s.message.subject.clone(),
        ]);
    }
    crate::out!("{}", table(&rows));
    crate::outln!("restore one with `mailroom recover --restore ID`");
    Ok(())
}

pub fn search(ctx: &mut Ctx, query: &str) -> Result<()> {
    let me = ctx.me()?;
    let found = ctx.mailroom().search(&me, query)?;
    if ctx.json {
        output::print_json(&mailroom_json::search_json(
            &found,
            render::untrusted_notice(&me),
        ));
        return Ok(());
    }
    if found.hits.is_empty() {
        crate::outln!(
            "No message of {me} matches '{}'.",
            mailroom_core::text::field(query)
        );
        return Ok(());
    }
    let stored: Vec<_> = found.hits.into_iter().map(|h| h.stored).collect();
    let words = ctx.words()?;
    let frame = Frame {
        recipient: &me,
        noun: "search result",
        place: "",
        more: 0,
        more_command: "",
        hints: false,
        words: &words,
    };
    output::render(|w| render::write_injection(w, &frame, &stored, &found.damaged));
    Ok(())
}
