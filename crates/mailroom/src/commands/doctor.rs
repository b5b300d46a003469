//! `doctor [--fix]`: one line per problem with its fix; exit 1 while problems remain.

use anyhow::Result;
use mailroom_core::{Error, text};
use serde_json::json;

use crate::context::Ctx;
use crate::output;

pub fn doctor(ctx: &mut Ctx, fix: bool) -> Result<()> {
    let findings = ctx.store.doctor(fix)?;
    let open = findings.iter().filter(|f| !f.fixed).count();
    if ctx.json {
        let report = json!({
            "home": ctx.store.describe(),
            "findings": findings.iter().map(|f| json!({"location": f.location, "problem": f.problem, "fix": f.fix, "fixed": f.fixed})).collect::<Vec<_>>(),
            "remaining": open,
        });
        if open == 0 {
            output::print_json(&report);
        } else {
            // Printed with the error object inside: one document on stdout.
            ctx.failed_report = Some(report);
        }
    } else {
        for f in &findings {
            let status = if f.fixed { "fixed" } else { "fix" };
            crate::outln!(
                "{}: {} ({status}: {})",
                text::field(&f.location),
                text::field(&f.problem),
                text::field(&f.fix)
            );
        }
        if findings.is_empty() {
            crate::outln!("{}: healthy", ctx.store.describe());
        }
    }
    if open > 0 {
        let hint = if fix {
            String::new()
        } else {
            format!(
                "; `{}` repairs what is safe",
                ctx.words_for_advice().command("doctor --fix")
            )
        };
        let above = if ctx.json {
            "see the findings"
        } else {
            "see the lines above"
        };
        return Err(Error::store(
            format!(
                "{open} problem{} remain{}",
                if open == 1 { "" } else { "s" },
                if open == 1 { "s" } else { "" }
            ),
            format!("{above}{hint}"),
        )
        .into());
    }
    Ok(())
}
