//! `whoami`: the resolved identity, where it came from, and the member context.

use anyhow::Result;
use serde_json::json;

use crate::context::Ctx;
use crate::output;

pub fn whoami(ctx: &mut Ctx) -> Result<()> {
    let identity = ctx.identity()?;
    let home = ctx.store.describe();
    let repo = ctx.inputs.repo.as_ref().map(|r| r.toplevel.clone());
    let Some(identity) = identity else {
        if ctx.json {
            output::print_json(&json!({"identity": null, "home": home, "repo": repo}));
        } else {
            crate::outln!(
                "identity: none (not in a git repository; pass --as, set MAILROOM_AS, or add .mailroom.toml)"
            );
            crate::outln!("home:     {home}");
        }
        return Ok(());
    };
    let c = ctx.mailroom().member_context(&identity.address)?;
    if ctx.json {
        let mut v = mailroom_json::member_context_json(&c);
        v["source"] = json!(identity.source.as_str());
        v["home"] = json!(home);
        v["repo"] = json!(repo);
        output::print_json(&v);
        return Ok(());
    }
    crate::outln!(
        "identity: {} (from {})",
        identity.address,
        identity.source.as_str()
    );
    if let Some(p) = &c.project {
        crate::outln!("project:  {} (policy {})", p.name, p.policy.as_str());
    }
    match &c.member {
        Some(m) => crate::outln!(
            "member:   {}{}, joined {}",
            m.status.as_str(),
            if m.role.is_empty() {
                String::new()
            } else {
                format!(", role {}", mailroom_core::text::field(&m.role))
            },
            output::when(m.joined)
        ),
        None if identity.address.is_human() => {
            crate::outln!("member:   the operator (global mailbox)")
        }
        None => {
            crate::outln!(
                "member:   not yet on the roster (joins on first send in an open project)"
            )
        }
    }
    // whoami shows one's own context, which always counts the pending mail.
    let (unread, read) = c.pending.unwrap_or_default();
    crate::outln!("pending:  {unread} unread, {read} read");
    crate::outln!("home:     {home}");
    if let Some(r) = repo {
        crate::outln!("repo:     {r}");
    }
    Ok(())
}
