//! `doctor [--fix]`: one line per problem with its fix; exit 1 while problems remain.

use anyhow::Result;
use mailroom_core::{Error, Store, text};
use serde_json::json;

use crate::context::Ctx;
use crate::output;

pub fn doctor(ctx: &mut Ctx, fix: bool) -> Result<()> {
    let findings = ctx.store.doctor(fix)?;
    let open = findings.iter().filter(|f| !f.fixed).count();
    if ctx.json {
        output::print_json(&json!({
            "home": ctx.store.describe(),
            "findings": findings.iter().map(|f| json!({"location": f.location, "problem": f.problem, "fix": f.fix, "fixed": f.fixed})).collect::<Vec<_>>(),
            "remaining": open,
        }));
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
            ""
        } else {
            "; `mailroom doctor --fix` repairs what is safe"
        };
        return Err(Error::store(
            format!(
                "{open} problem{} remain{}",
                if open == 1 { "" } else { "s" },
                if open == 1 { "s" } else { "" }
            ),
            format!("see the lines above{hint}"),
        )
        .into());
    }
    Ok(())
}
