//! `roster`, `projects` and `resolve`: who exists and what a name means.

use anyhow::{Context as _, Result};
use mailroom_core::{MemberStatus, Policy};
use mailroom_json::{member_json, project_json};
use serde_json::json;

use crate::cli::{PolicyArg, ProjectsAction, RosterAction};
use crate::context::Ctx;
use crate::output::{self, table, when};

fn policy(p: PolicyArg) -> Policy {
    match p {
        PolicyArg::Open => Policy::Open,
        PolicyArg::Roster => Policy::Roster,
    }
}

pub fn roster(ctx: &mut Ctx, action: Option<RosterAction>) -> Result<()> {
    let project = ctx.project()?;
    let action = action.unwrap_or(RosterAction::List);
    // Changing a roster is someone's act: the core checks that they may.
    let actor = match action {
        RosterAction::List => None,
        _ => Some(ctx.me()?),
    };
    let mr = ctx.mailroom();
    let changed = match (action, actor) {
        (RosterAction::List, _) | (_, None) => {
            let members = mr.roster(&project)?;
            if ctx.json {
                output::print_json(
                    &json!({"project": project.as_str(), "members": members.iter().map(member_json).collect::<Vec<_>>()}),
                );
                return Ok(());
            }
            if members.is_empty() {
                crate::outln!("Project '{project}' has no members yet.");
                return Ok(());
            }
            let mut rows = vec![vec![
                "HANDLE".into(),
                "ROLE".into(),
                "STATUS".into(),
                "JOINED".into(),
            ]];
            for m in &members {
                rows.push(vec![
                    m.handle.to_string(),
                    m.role.clone(),
                    m.status.as_str().into(),
                    when(m.joined),
                ]);
            }
            crate::out!("{}", table(&rows));
            return Ok(());
        }
        (
            RosterAction::Add {
                handle,
                role,
                inactive,
            },
            Some(actor),
        ) => {
            let status = if inactive {
                MemberStatus::Inactive
            } else {
                MemberStatus::Active
            };
            (
                mr.add_member(&actor, &project, &handle, &role, status)?,
                "added",
            )
        }
        (RosterAction::Activate { handle }, Some(actor)) => (
            mr.set_member_status(&actor, &project, &handle, MemberStatus::Active)?,
            "activated",
        ),
        (RosterAction::Deactivate { handle }, Some(actor)) => (
            mr.set_member_status(&actor, &project, &handle, MemberStatus::Inactive)?,
            "deactivated",
        ),
    };
    let (member, verb) = changed;
    if ctx.json {
        output::print_json(&json!({"project": project.as_str(), "member": member_json(&member)}));
    } else {
        crate::outln!(
            "{verb} {}@{project} ({})",
            member.handle,
            member.status.as_str()
        );
    }
    Ok(())
}

pub fn projects(ctx: &mut Ctx, action: Option<ProjectsAction>) -> Result<()> {
    let action = action.unwrap_or(ProjectsAction::List);
    let actor = match action {
        ProjectsAction::Set { .. } => Some(ctx.me()?),
        _ => None,
    };
    let mr = ctx.mailroom();
    match action {
        ProjectsAction::List => {
            let projects = mr.projects()?;
            if ctx.json {
                output::print_json(
                    &json!({"projects": projects.iter().map(project_json).collect::<Vec<_>>()}),
                );
                return Ok(());
            }
            if projects.is_empty() {
                crate::outln!("No projects yet; the first send creates one.");
                return Ok(());
            }
            let mut rows = vec![vec![
                "PROJECT".into(),
                "POLICY".into(),
                "MEMBERS".into(),
                "CREATED".into(),
            ]];
            for p in &projects {
                let members = mr.roster(&p.name)?.len();
                rows.push(vec![
                    p.name.to_string(),
                    p.policy.as_str().into(),
                    members.to_string(),
                    when(p.created),
                ]);
            }
            crate::out!("{}", table(&rows));
        }
        ProjectsAction::Add { name, policy: p } => {
            let (project, created) = mr.add_project(&name, policy(p))?;
            if ctx.json {
                output::print_json(&json!({"project": project_json(&project), "created": created}));
            } else if created {
                crate::outln!(
                    "created project '{}' (policy {})",
                    project.name,
                    project.policy.as_str()
                );
            } else {
                crate::outln!(
                    "project '{}' already exists (policy {})",
                    project.name,
                    project.policy.as_str()
                );
            }
        }
        ProjectsAction::Set { name, policy: p } => {
            let actor = actor.context("no identity to change the project with")?;
            mr.set_policy(&actor, &name, policy(p))?;
            if ctx.json {
                output::print_json(&json!({"project": name, "policy": policy(p).as_str()}));
            } else {
                crate::outln!("project '{name}' now has policy {}", policy(p).as_str());
            }
        }
    }
    Ok(())
}

pub fn resolve(ctx: &mut Ctx, name: &str) -> Result<()> {
    let current = match ctx.identity()? {
        Some(i) => i.address.project().cloned(),
        None => Some(ctx.project()?),
    };
    let r = ctx.mailroom().resolve(current.as_ref(), name)?;
    // Several mailboxes and none chosen: the listing is shown, and the exit code says that a
    // send would be refused as ambiguous.
    let ambiguous = (r.chosen.is_none() && r.candidates.len() > 1).then(|| {
        mailroom_core::Error::AmbiguousHandle {
            name: name.to_owned(),
            candidates: r.candidates.iter().map(|c| c.address.to_string()).collect(),
        }
    });
    if ctx.json {
        // One JSON document on stdout: an ambiguity is reported as the error object alone.
        if let Some(e) = ambiguous {
            return Err(e.into());
        }
        output::print_json(&mailroom_json::resolution_json(name, &r));
        return Ok(());
    }
    if let Some(e) = ambiguous {
        // The candidates, and the error saying why none was chosen: never "no existing
        // mailbox", which is what a new name gets.
        crate::outln!("{name} -> one of {} mailboxes:", r.candidates.len());
        for c in &r.candidates {
            crate::outln!("  {} ({})", c.address, c.reason);
        }
        return Err(e.into());
    }
    match &r.chosen {
        Some(c) => crate::outln!("{name} -> {} ({})", c.address, c.reason),
        None => crate::outln!("{name} -> no existing mailbox"),
    }
    for c in r
        .candidates
        .iter()
        .filter(|c| Some(*c) != r.chosen.as_ref())
    {
        crate::outln!("  also: {} ({})", c.address, c.reason);
    }
    if let Some(note) = &r.note {
        crate::outln!("  {note}");
    }
    Ok(())
}
