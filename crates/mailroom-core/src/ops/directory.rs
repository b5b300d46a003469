//! Projects, rosters and handle resolution: who exists, who may be written to, and what a bare
//! handle means.

use jiff::Timestamp;

use crate::address::{Address, AddressSpec, Scope};
use crate::error::{Error, Result};
use crate::message::State;
use crate::name::Name;
use crate::ops::Mailroom;
use crate::store::{Member, MemberStatus, Policy, Project};

/// What must exist before a message can reach `address`; applied only once every recipient
/// of a send has been checked.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub address: Address,
    create_project: bool,
    add_member: bool,
}

/// One mailbox a name may mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub address: Address,
    /// Why it is a candidate: "current project", "global", "active member of P".
    pub reason: String,
}

/// What `resolve NAME` found.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The mailbox a send would reach, when there is exactly one.
    pub chosen: Option<Candidate>,
    pub candidates: Vec<Candidate>,
    /// What a send would do instead, when no mailbox exists yet.
    pub note: Option<String>,
}

/// `whoami`'s member context: the identity's project, roster entry and mail counts.
#[derive(Clone, Debug)]
pub struct MemberContext {
    pub address: Address,
    pub project: Option<Project>,
    pub member: Option<Member>,
    pub unread: usize,
    pub read: usize,
}

fn name(what: &'static str, s: &str) -> Result<Name> {
    Name::parse(s).map_err(|source| Error::InvalidName {
        what,
        input: s.to_owned(),
        source,
    })
}

impl Mailroom<'_> {
    /// Decides which mailbox `spec` means when written by someone in `current`.
    pub(crate) fn plan_recipient(
        &self,
        current: Option<&Name>,
        spec: &AddressSpec,
    ) -> Result<Plan> {
        if spec.is_human() {
            return Ok(Plan::ready(Address::human()));
        }
        if let Some(p) = &spec.project {
            return self.plan_in(p, &spec.handle);
        }
        if let Some(cur) = current {
            if let Some(m) = self.store.member(cur, &spec.handle)? {
                return self.plan_with(cur, &spec.handle, Some(m));
            }
        }
        let elsewhere = self.active_elsewhere(&spec.handle, current)?;
        match (elsewhere.len(), current) {
            (1, _) => Ok(Plan::ready(elsewhere[0].address.clone())),
            (n, _) if n > 1 => Err(Error::AmbiguousHandle {
                name: spec.handle.to_string(),
                candidates: elsewhere.iter().map(|c| c.address.to_string()).collect(),
            }),
            (_, Some(cur)) => self.plan_in(cur, &spec.handle),
            (_, None) => Err(Error::UnknownHandle {
                handle: spec.handle.to_string(),
                project: "any project".into(),
                suggestions: vec![],
            }),
        }
    }

    fn plan_in(&self, project: &Name, handle: &Name) -> Result<Plan> {
        let member = self.store.member(project, handle)?;
        self.plan_with(project, handle, member)
    }

    /// [`Mailroom::plan_in`] with the roster entry already looked up. An active member needs
    /// nothing else read: the project is consulted only when the handle is not on the roster.
    fn plan_with(&self, project: &Name, handle: &Name, member: Option<Member>) -> Result<Plan> {
        let address = Address::in_project(handle.clone(), project.clone());
        match member {
            Some(m) if m.status == MemberStatus::Active => return Ok(Plan::ready(address)),
            Some(_) => return Err(Error::Inactive { address }),
            None => {}
        }
        match self.store.project(project)? {
            None => Ok(Plan {
                address,
                create_project: true,
                add_member: true,
            }),
            Some(p) if p.policy == Policy::Open => Ok(Plan {
                address,
                create_project: false,
                add_member: true,
            }),
            Some(_) => Err(Error::UnknownHandle {
                handle: handle.to_string(),
                project: project.to_string(),
                suggestions: self.similar(project, handle)?,
            }),
        }
    }

    /// What must exist for `project` to take a post: the project itself.
    pub(crate) fn plan_project(&self, project: &Name) -> Result<Plan> {
        let exists = self.store.project(project)?.is_some();
        Ok(Plan {
            address: Address::in_project(project.clone(), project.clone()),
            create_project: !exists,
            add_member: false,
        })
    }

    /// The sender must be allowed to write: an active member, or joinable in an open project.
    pub(crate) fn plan_sender(&self, me: &Address) -> Result<Plan> {
        match &me.scope {
            Scope::Global => Ok(Plan::ready(me.clone())),
            Scope::Project(p) => self.plan_in(p, &me.handle).map_err(|e| match e {
                Error::Inactive { address } => Error::Refused(format!(
                    "you ({address}) are inactive in project '{p}'; reactivate with `mailroom roster activate {} --project {p}`",
                    address.handle
                )),
                Error::UnknownHandle { handle, project, .. } => Error::Refused(format!(
                    "you ({handle}) are not on the roster of project '{project}', whose policy is roster; ask for `mailroom roster add {handle} --project {project}`"
                )),
                other => other,
            }),
        }
    }

    pub(crate) fn apply_plan(
        &self,
        plan: &Plan,
        now: Timestamp,
        notices: &mut Vec<String>,
    ) -> Result<()> {
        let Some(project) = plan.address.project() else {
            return Ok(());
        };
        if plan.create_project {
            let (_, created) = self.store.ensure_project(&Project {
                name: project.clone(),
                policy: Policy::Open,
                created: now,
            })?;
            if created {
                notices.push(format!("created project '{project}' (policy open)"));
            }
        }
        if plan.add_member {
            let added = self.store.add_member(
                project,
                &Member {
                    handle: plan.address.handle.clone(),
                    role: String::new(),
                    status: MemberStatus::Active,
                    joined: now,
                },
            )?;
            if added {
                notices.push(format!(
                    "created the mailbox {} (project '{project}' is open)",
                    plan.address
                ));
            }
        }
        Ok(())
    }

    /// Active members named `handle` in projects other than `current`.
    pub(crate) fn active_elsewhere(
        &self,
        handle: &Name,
        current: Option<&Name>,
    ) -> Result<Vec<Candidate>> {
        let mut out = Vec::new();
        for p in self.store.projects()? {
            if Some(&p.name) == current {
                continue;
            }
            if let Some(m) = self.store.member(&p.name, handle)? {
                if m.status == MemberStatus::Active {
                    out.push(Candidate {
                        reason: format!("active member of project '{}'", p.name),
                        address: Address::in_project(handle.clone(), p.name),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Roster handles close to `handle`, closest first, for did-you-mean.
    fn similar(&self, project: &Name, handle: &Name) -> Result<Vec<String>> {
        let want = handle.as_str().to_ascii_lowercase();
        let mut scored: Vec<(usize, String)> = self
            .store
            .roster(project)?
            .into_iter()
            .map(|m| {
                let h = m.handle.to_string();
                (edit_distance(&want, &h.to_ascii_lowercase()), h)
            })
            .filter(|(d, h)| *d <= 2.max(h.len() / 3))
            .collect();
        scored.sort();
        Ok(scored.into_iter().map(|(_, h)| h).collect())
    }

    /// Every mailbox `name` may mean from `current`, in resolution order.
    pub fn resolve(&self, current: Option<&Name>, name_text: &str) -> Result<Resolution> {
        let spec = AddressSpec::parse(name_text).map_err(|source| Error::InvalidAddress {
            input: name_text.to_owned(),
            source,
        })?;
        let mut candidates = Vec::new();
        if spec.is_human() {
            candidates.push(Candidate {
                address: Address::human(),
                reason: "the operator's global mailbox".into(),
            });
        } else if let Some(p) = &spec.project {
            if let Some(m) = self.store.member(p, &spec.handle)? {
                candidates.push(Candidate {
                    address: Address::in_project(spec.handle.clone(), p.clone()),
                    reason: format!("{} member of project '{p}'", m.status.as_str()),
                });
            }
        } else {
            if let Some(cur) = current {
                if let Some(m) = self.store.member(cur, &spec.handle)? {
                    candidates.push(Candidate {
                        address: Address::in_project(spec.handle.clone(), cur.clone()),
                        reason: format!("{} member of the current project", m.status.as_str()),
                    });
                }
            }
            candidates.extend(self.active_elsewhere(&spec.handle, current)?);
        }
        let plan = self.plan_recipient(current, &spec);
        let (chosen, note) = match plan {
            Ok(plan) => {
                let existing = candidates
                    .iter()
                    .find(|c| c.address == plan.address)
                    .cloned();
                let note = match (&existing, plan.add_member) {
                    (None, true) => {
                        Some(format!("a send would create the mailbox {}", plan.address))
                    }
                    _ => None,
                };
                (existing, note)
            }
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(Resolution {
            chosen,
            candidates,
            note,
        })
    }

    pub fn projects(&self) -> Result<Vec<Project>> {
        self.store.projects()
    }

    /// Creates a project; refuses when it exists with another policy.
    pub fn add_project(&self, project: &str, policy: Policy) -> Result<(Project, bool)> {
        let name = name("project", project)?;
        let (p, created) = self.store.ensure_project(&Project {
            name: name.clone(),
            policy,
            created: self.now(),
        })?;
        if !created && p.policy != policy {
            return Err(Error::Refused(format!(
                "project '{name}' exists with policy {}; change it with `mailroom projects set {name} --policy {}`",
                p.policy.as_str(),
                policy.as_str()
            )));
        }
        Ok((p, created))
    }

    pub fn set_policy(&self, project: &str, policy: Policy) -> Result<()> {
        let name = name("project", project)?;
        if self.store.set_policy(&name, policy)? {
            Ok(())
        } else {
            Err(Error::ProjectNotFound(name.to_string()))
        }
    }

    pub fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        if self.store.project(project)?.is_none() {
            return Err(Error::ProjectNotFound(project.to_string()));
        }
        self.store.roster(project)
    }

    /// Adds a member (creating an open project on first use); refuses a handle already there.
    pub fn add_member(
        &self,
        project: &Name,
        handle: &str,
        role: &str,
        status: MemberStatus,
    ) -> Result<Member> {
        let handle = name("handle", handle)?;
        if handle.as_str() == crate::address::HUMAN {
            return Err(Error::Invalid(
                "HUMAN is the operator's global mailbox and cannot join a roster".into(),
            ));
        }
        let now = self.now();
        self.store.ensure_project(&Project {
            name: project.clone(),
            policy: Policy::Open,
            created: now,
        })?;
        let member = Member {
            handle: handle.clone(),
            role: crate::text::clean_line(role),
            status,
            joined: now,
        };
        if self.store.add_member(project, &member)? {
            Ok(member)
        } else {
            Err(Error::Refused(format!(
                "'{handle}' is already on the roster of project '{project}'; use `mailroom roster activate` or `deactivate` to change it"
            )))
        }
    }

    /// Sets a member's status; returns the entry as it now is.
    pub fn set_member_status(
        &self,
        project: &Name,
        handle: &str,
        status: MemberStatus,
    ) -> Result<Member> {
        let handle = name("handle", handle)?;
        if self.store.project(project)?.is_none() {
            return Err(Error::ProjectNotFound(project.to_string()));
        }
        let Some(mut member) = self.store.member(project, &handle)? else {
            return Err(Error::UnknownHandle {
                suggestions: if self.store.project(project)?.is_some() {
                    self.similar(project, &handle)?
                } else {
                    vec![]
                },
                handle: handle.to_string(),
                project: project.to_string(),
            });
        };
        member.status = status;
        self.store.update_member(project, &member)?;
        Ok(member)
    }

    pub fn member_context(&self, me: &Address) -> Result<MemberContext> {
        let (project, member) = match me.project() {
            Some(p) => (self.store.project(p)?, self.store.member(p, &me.handle)?),
            None => (None, None),
        };
        let pending = self.store.pending(me)?;
        let count = |s: State| pending.messages.iter().filter(|m| m.state == s).count();
        Ok(MemberContext {
            address: me.clone(),
            project,
            member,
            unread: count(State::Unread),
            read: count(State::Read),
        })
    }
}

impl Plan {
    fn ready(address: Address) -> Plan {
        Plan {
            address,
            create_project: false,
            add_member: false,
        }
    }
}

/// Levenshtein distance; small inputs only (handles are at most 64 bytes).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(super::edit_distance("bob", "bob"), 0);
        assert_eq!(super::edit_distance("bbo", "bob"), 2);
        assert_eq!(super::edit_distance("backend", "backnd"), 1);
        assert_eq!(super::edit_distance("", "abc"), 3);
    }
}
