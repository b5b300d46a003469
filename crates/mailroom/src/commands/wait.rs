//! `wait`: block until mail arrives, then show it (framed, unmarked).

use std::time::Duration;

use anyhow::Result;
use mailroom_core::Error;
use mailroom_core::ops::WaitFor;
use mailroom_core::render::{self, Frame};

use crate::context::Ctx;
use crate::output::{self, MessageOut};

pub fn wait(
    ctx: &mut Ctx,
    from: Option<String>,
    reply_to: Option<String>,
    timeout: Option<&str>,
) -> Result<()> {
    let timeout = timeout.map(parse_duration).transpose()?;
    let me = ctx.me()?;
    let found = ctx.mailroom().wait(
        &me,
        &WaitFor {
            from,
            reply_to,
            timeout,
        },
    )?;
    if ctx.json {
        #[derive(serde::Serialize)]
        struct WaitOut<'a> {
            messages: Vec<MessageOut<'a>>,
            notice: &'static str,
        }
        output::print_json(&WaitOut {
            messages: found.iter().map(MessageOut::stored).collect(),
            notice: render::UNTRUSTED_NOTICE,
        });
        return Ok(());
    }
    let words = ctx.words()?;
    let frame = Frame {
        recipient: &me,
        noun: "new message",
        place: "",
        more: 0,
        more_command: "",
        hints: true,
        words: &words,
    };
    output::render(|w| render::write_injection(w, &frame, &found, &[]));
    Ok(())
}

/// Follows a mailbox: what is pending now, then each message as it lands, one line each
/// (NDJSON with `--json`). Runs until interrupted or its reader goes away.
pub fn watch(ctx: &mut Ctx, target: Option<&str>) -> Result<()> {
    let me = ctx.me()?;
    let target = match target {
        None => me,
        Some(t) => {
            let r = ctx.mailroom().resolve(me.project(), t)?;
            r.chosen
                .map(|c| c.address)
                .ok_or_else(|| match me.project() {
                    Some(p) => Error::UnknownHandle {
                        handle: t.to_owned(),
                        project: p.to_string(),
                        suggestions: vec![],
                    },
                    None => Error::HandleNowhere {
                        handle: t.to_owned(),
                    },
                })?
        }
    };
    let mr = ctx.mailroom();
    let mut watch = mailroom_core::Store::watch(&ctx.store, &target)?;
    let mut shown = std::collections::HashSet::new();
    if !ctx.json {
        crate::outln!("following {target} (Ctrl-C to stop)");
    }
    loop {
        let mut listing = mr.peek(&target)?.messages;
        listing.sort_by_key(|s| s.message.id);
        for s in listing.iter().filter(|s| shown.insert(s.message.id)) {
            if ctx.json {
                let line = serde_json::to_string(&MessageOut::stored(s)).unwrap_or_default();
                crate::outln!("{line}");
            } else {
                let m = &s.message;
                crate::outln!(
                    "{} {} -> {} [{}/{}] {} ({}, {})",
                    m.date.strftime("%Y-%m-%d %H:%M"),
                    m.from,
                    output::recipients(m),
                    m.kind,
                    m.priority,
                    mailroom_core::text::field(&m.subject),
                    m.id,
                    s.state
                );
            }
        }
        watch.wait(None)?;
    }
}

/// `30s`, `5m`, `1h30m`, `500ms`, or a bare number of seconds.
fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Some(Duration::from_secs_f64(secs)),
        Ok(_) => None,
        Err(_) => t
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|d| Duration::try_from(d).ok()),
    };
    parsed.ok_or_else(|| {
        Error::Invalid(format!(
            "'{s}' is not a duration; write 30s, 5m, 1h or a number of seconds"
        ))
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_read_as_people_write_them() {
        for (s, want) in [
            ("30", 30_000),
            ("0.5", 500),
            ("30s", 30_000),
            ("5m", 300_000),
            ("1h30m", 5_400_000),
            ("500ms", 500),
        ] {
            assert_eq!(
                parse_duration(s).unwrap(),
                Duration::from_millis(want),
                "{s}"
            );
        }
        for bad in ["soon", "-1", "", "5 parsecs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
