//! `wait`: block until mail arrives, then show it (framed, unmarked).

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::Result;
use mailroom_core::Error;
use mailroom_core::ops::{Cancel, WaitFor, Waited};
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
    let what = WaitFor { from, reply_to };
    // Nothing sets the token: Ctrl-C ends the process.
    // A timeout too far off for the clock to hold is no timeout (`parse_duration` caps it at
    // a century, far below that bound on any system).
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let found = match ctx.mailroom().wait(&me, &what, deadline, &Cancel::new())? {
        Waited::Arrived(found) => found,
        Waited::TimedOut => {
            return Err(what.timed_out(timeout.unwrap_or_default()).into());
        }
        Waited::Cancelled => return Ok(()),
    };
    if ctx.json {
        #[derive(serde::Serialize)]
        struct WaitOut<'a> {
            messages: Vec<MessageOut<'a>>,
            notice: &'static str,
        }
        output::print_json(&WaitOut {
            messages: found.iter().map(MessageOut::stored).collect(),
            notice: render::untrusted_notice(&me),
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
    let mr = ctx.mailroom();
    let target = mr.watch_target(&me, target)?;
    if !ctx.json {
        crate::outln!("following {target} (Ctrl-C to stop)");
    }
    let json = ctx.json;
    // Nothing sets the token: Ctrl-C ends the process.
    mr.watch(&target, None, &Cancel::new(), |s| {
        if json {
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
        ControlFlow::Continue(())
    })?;
    Ok(())
}

/// `30s`, `5m`, `1h30m`, `500ms`, or a bare number of seconds.
/// The longest timeout taken: a century, far inside what the clock can add.
const MAX_TIMEOUT: Duration = Duration::from_secs(100 * 366 * 24 * 3600);

fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let parsed = match t.parse::<f64>() {
        Ok(secs) if secs >= 0.0 => Duration::try_from_secs_f64(secs).ok(),
        Ok(_) => None,
        Err(_) => t
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|d| Duration::try_from(d).ok()),
    };
    let parsed = parsed.ok_or_else(|| {
        Error::Invalid(format!(
            "'{s}' is not a duration; write 30s, 5m, 1h or a number of seconds"
        ))
    })?;
    if parsed > MAX_TIMEOUT {
        return Err(Error::Invalid(format!(
            "'{s}' is longer than a timeout can be (a century); leave --timeout out to wait without one"
        ))
        .into());
    }
    Ok(parsed)
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
        for bad in [
            "soon",
            "-1",
            "",
            "5 parsecs",
            "inf",
            "NaN",
            "1e19",
            "1e20",
            "9999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
