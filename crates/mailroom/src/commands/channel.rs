//! `channel …` and `retract`: append-only streams and un-sending a broadcast.

use anyhow::{Context as _, Result};
use mailroom_core::Error;
use mailroom_core::ops::Draft;
use mailroom_core::render::{self, Frame};
use serde_json::json;

use crate::cli::ChannelAction;
use crate::context::Ctx;
use crate::output::{self, damaged_json, message_json, stored_json, table};

pub fn channel(ctx: &mut Ctx, action: ChannelAction) -> Result<()> {
    let me = ctx.me()?;
    let project = ctx.channel_project(&me)?;
    let mr = ctx.mailroom();
    match action {
        ChannelAction::List => {
            let list = mr.channel_list(&me, &project)?;
            if ctx.json {
                output::print_json(&json!({
                    "project": project.as_str(),
                    "channels": list.iter().map(|c| json!({"name": c.channel.name.as_str(), "entries": c.entries, "unseen": c.unseen})).collect::<Vec<_>>(),
                }));
            } else if list.is_empty() {
                let post = ctx.words()?.command(&format!(
                    "channel post NAME --project {project} --message TEXT"
                ));
                crate::outln!("Project '{project}' has no channels yet; `{post}` starts one.");
            } else {
                let mut rows = vec![vec!["CHANNEL".into(), "ENTRIES".into(), "UNSEEN".into()]];
                for c in &list {
                    rows.push(vec![
                        c.channel.name.to_string(),
                        c.entries.to_string(),
                        c.unseen.to_string(),
                    ]);
                }
                crate::out!("{}", table(&rows));
            }
        }
        ChannelAction::Post {
            name,
            content,
            new,
            kind,
            idempotency_key,
        } => {
            let kind = super::kind(&kind)?;
            let priority = super::priority(&content.priority)?;
            let body = output::body(content.message)?;
            let draft = Draft {
                to: vec![],
                subject: content.subject,
                body,
                kind,
                priority,
                idempotency_key,
            };
            let sent = if new {
                mr.post_new(&me, &project, &name, draft)?
            } else {
                mr.post(&me, &project, &name, draft)?
            };
            return super::send::print_sent(ctx, &sent, "posted", None);
        }
        ChannelAction::Read { name, limit } => {
            let read = mr.channel_read(&me, &project, &name, limit)?;
            if ctx.json {
                output::print_json(&mailroom_json::channel_read_json(
                    &read,
                    render::untrusted_notice(&me),
                ));
            } else if read.messages.is_empty() && read.damaged.is_empty() {
                crate::outln!("Nothing new in #{} for {me}.", read.channel);
            } else {
                let words = ctx.words()?;
                let frame = Frame {
                    recipient: &me,
                    noun: "new message",
                    place: &format!(" in #{}", read.channel),
                    more: read.more,
                    more_command: &words.command(&format!("channel read {name}")),
                    hints: false,
                    words: &words,
                };
                output::render(|w| {
                    render::write_injection(w, &frame, &read.messages, &read.damaged)
                });
            }
        }
        ChannelAction::Show { name } => {
            let (channel, listing) = mr.channel_show(&me, &project, &name)?;
            if ctx.json {
                output::print_json(&json!({
                    "channel": channel.name.as_str(),
                    "messages": listing.messages.iter().map(stored_json).collect::<Vec<_>>(),
                    "damaged": damaged_json(&listing.damaged),
                    "notice": render::untrusted_notice(&me),
                }));
            } else if listing.messages.is_empty() && listing.damaged.is_empty() {
                crate::outln!("#{channel} has no entries.");
            } else {
                let words = ctx.words()?;
                let frame = Frame {
                    recipient: &me,
                    noun: "message",
                    place: &format!(" in #{channel}"),
                    more: 0,
                    more_command: "",
                    hints: false,
                    words: &words,
                };
                output::render(|w| {
                    render::write_injection(w, &frame, &listing.messages, &listing.damaged)
                });
            }
        }
        ChannelAction::Export { name } => {
            let text = mr.export_channel(&me, &project, &name)?;
            if ctx.json {
                output::print_json(&json!({"channel": name, "mailbox_md": text}));
            } else {
                let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
                crate::out!("{}", output::document(&text, terminal));
            }
        }
        ChannelAction::Import { name, file } => {
            let text = read_text(&file)?;
            let fallback = file_time(&file);
            let report = mr.import_channel(Some(&me), &project, &name, &text, fallback)?;
            super::import::print_report(ctx, &file.display().to_string(), &[report])?;
        }
    }
    Ok(())
}

pub fn retract(ctx: &mut Ctx, id: &str) -> Result<()> {
    let me = ctx.me()?;
    let project = ctx.channel_project(&me)?;
    let message = ctx.mailroom().retract(&me, &project, id)?;
    if ctx.json {
        output::print_json(
            &json!({"message": message_json(&message, Some(mailroom_core::State::Retracted))}),
        );
    } else {
        crate::outln!(
            "retracted {}: members who saw it keep it; nobody else will get it",
            message.id
        );
    }
    Ok(())
}

/// A file's text, or the sentence that says why it cannot be read.
pub fn read_text(path: &std::path::Path) -> Result<String> {
    use crate::files::{MAX_IMPORT_FILE_BYTES, ReadError, read_regular};
    // The user named it: a symbolic link is followed, anything but a regular file refused.
    let bytes = match read_regular(path, MAX_IMPORT_FILE_BYTES, true) {
        Ok(contents) => contents.bytes,
        Err(ReadError::Io(e)) => {
            return Err(e).with_context(|| format!("cannot read {}", path.display()));
        }
        Err(e) => {
            return Err(Error::Invalid(format!("{} {}", path.display(), e.reason())).into());
        }
    };
    String::from_utf8(bytes).map_err(|e| {
        Error::Invalid(format!(
            "{} is not UTF-8 text (byte {} is not); convert it first",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
        .into()
    })
}

/// When a file was last changed: the stand-in for timestamps that cannot be read.
pub fn file_time(path: &std::path::Path) -> jiff::Timestamp {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .unwrap_or_else(jiff::Timestamp::now)
}
