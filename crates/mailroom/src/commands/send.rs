//! `send`, `reply` and `handover`: everything that creates a message.

use anyhow::Result;
use mailroom_core::ops::{Draft, Sent};

use crate::cli::{ReplyArgs, SendArgs};
use crate::context::Ctx;
use crate::output;

pub fn send(ctx: &mut Ctx, args: SendArgs) -> Result<()> {
    let kind = super::kind(&args.kind)?;
    let priority = super::priority(&args.content.priority)?;
    // A direct send whose body is given cannot fail between the identity and the core, and
    // the core spells the sender while it reads the sender's entry for its checks: the same
    // first error, and one read of each file instead of two.
    let spelled_by_core =
        !args.broadcast && args.channel.is_none() && args.content.message.is_some();
    let given = if spelled_by_core {
        Some(ctx.me_as_given()?)
    } else {
        None
    };
    let me = match &given {
        Some(identity) => identity.address.clone(),
        None => ctx.me()?,
    };
    let body = output::body(args.content.message)?;
    let draft = Draft {
        to: args.to,
        subject: args.content.subject,
        body,
        kind,
        priority,
        idempotency_key: args.idempotency_key,
    };
    let sent = if args.broadcast {
        let project = ctx.channel_project(&me)?;
        ctx.mailroom().broadcast(&me, &project, draft)?
    } else if let Some(channel) = args.channel {
        let project = ctx.channel_project(&me)?;
        if args.new {
            ctx.mailroom().post_new(&me, &project, &channel, draft)?
        } else {
            ctx.mailroom().post(&me, &project, &channel, draft)?
        }
    } else {
        ctx.mailroom().send(&me, draft)?
    };
    if let Some(identity) = given {
        ctx.spelled_as(identity, &sent.message.from);
    }
    print_sent(ctx, &sent, "sent", None)
}

pub fn reply(ctx: &mut Ctx, args: ReplyArgs) -> Result<()> {
    let kind = super::kind(&args.kind)?;
    let priority = super::priority(&args.content.priority)?;
    let me = ctx.me()?;
    let body = output::body(args.content.message)?;
    let (sent, closed) = ctx.mailroom().reply(
        &me,
        &args.id,
        Draft {
            subject: args.content.subject,
            body,
            kind,
            priority,
            ..Draft::default()
        },
        args.keep_open,
    )?;
    print_sent(ctx, &sent, "replied", Some(closed))
}

pub fn handover(
    ctx: &mut Ctx,
    message: Option<String>,
    subject: Option<String>,
    priority: &str,
) -> Result<()> {
    let priority = super::priority(priority)?;
    let me = ctx.me()?;
    let body = output::body(message)?;
    let sent = ctx.mailroom().handover(&me, body, subject, priority)?;
    print_sent(ctx, &sent, "handover saved for your next session:", None)
}

pub(crate) fn print_sent(ctx: &Ctx, sent: &Sent, verb: &str, closed: Option<bool>) -> Result<()> {
    output::notices(&sent.notices);
    if ctx.json {
        output::print_json(&mailroom_json::sent_json(&ctx.mailroom(), sent, closed)?);
        return Ok(());
    }
    let mut line = format!(
        "{verb} {} to {}",
        sent.message.id,
        output::recipients(&sent.message)
    );
    if sent.duplicate && sent.delivered_now.is_empty() {
        line.push_str(" (already sent with this key; nothing new delivered)");
    } else if sent.duplicate {
        let now: Vec<String> = sent.delivered_now.iter().map(ToString::to_string).collect();
        line.push_str(&format!(
            " (already sent with this key; delivered now to {}, which it had not reached)",
            now.join(", ")
        ));
    }
    if let (Some(true), Some(orig)) = (closed, sent.message.reply_to) {
        line.push_str(&format!("; closed {orig}"));
    }
    crate::outln!("{line}");
    Ok(())
}
