//! `whoami`: the resolved identity, where it came from, and the member context.

use anyhow::Result;
use mailroom_core::Store;
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
        output::print_json(&json!({
            "identity": identity.address.to_string(),
            "handle": identity.address.handle.as_str(),
            "project": identity.address.project().map(|p| p.as_str()),
            "source": identity.source.as_str(),
            "home": home,
            "repo": repo,
            "policy": c.project.as_ref().map(|p| p.policy.as_str()),
            "member": c.member.as_ref().map(|m| json!({"role": m.role, "status": m.status.as_str(), "joined": m.joined.to_string()})),
            "unread": c.unread,
            "read": c.read,
        }));
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
    crate::outln!("pending:  {} unread, {} read", c.unread, c.read);
    crate::outln!("home:     {home}");
    if let Some(r) = repo {
        crate::outln!("repo:     {r}");
    }
    Ok(())
}
