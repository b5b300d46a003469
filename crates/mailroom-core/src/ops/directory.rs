//! Projects, rosters and handle resolution: who exists, who may be written to, and what a bare
//! handle means.

use jiff::Timestamp;

use crate::address::{Address, AddressSpec, Scope};
use crate::error::{Error, Fix, Result};
use crate::message::State;
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::reads::Reads;
use crate::ops::typos::{closest, edit_distance};
use crate::store::{Member, MemberStatus, Policy, Project};

/// What must exist before a message can reach `address`; applied only once every recipient
/// of a send has been checked.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub address: Address,
    create_project: bool,
    add_member: bool,
}

impl Plan {
    /// Whether delivering to this mailbox creates its project or puts it on the roster.
    pub(crate) fn changes_roster(&self) -> bool {
        self.create_project || self.add_member
    }
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
    /// The mailbox's pending mail (unread, read), shown only to whoever may read the mailbox.
    pub pending: Option<(usize, usize)>,
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
        reads: &Reads,
        current: Option<&Name>,
        spec: &AddressSpec,
    ) -> Result<Plan> {
        if spec.is_human() {
            return Ok(Plan::ready(Address::human()));
        }
        if let Some(p) = &spec.project {
            return self.plan_in(reads, p, &spec.handle);
        }
        if let Some(cur) = current
            && let Some(m) = reads.member(self.store(), cur, &spec.handle)?
        {
            return self.plan_with(reads, cur, &spec.handle, Some(m), Creator::Other);
        }
        let elsewhere = self.active_elsewhere(&spec.handle, current)?;
        match (elsewhere.len(), current) {
            (1, _) => Ok(Plan::ready(elsewhere[0].address.clone())),
            (n, _) if n > 1 => Err(Error::AmbiguousHandle {
                name: spec.handle.to_string(),
                candidates: elsewhere.iter().map(|c| c.address.to_string()).collect(),
            }),
            (_, Some(cur)) => {
                let plan = self.plan_in(reads, cur, &spec.handle)?;
                if plan.add_member {
                    self.check_not_close_elsewhere(reads, cur, &spec.handle)?;
                }
                Ok(plan)
            }
            (_, None) => Err(Error::HandleNowhere {
                handle: spec.handle.to_string(),
            }),
        }
    }

    fn plan_in(&self, reads: &Reads, project: &Name, handle: &Name) -> Result<Plan> {
        let member = reads.member(self.store(), project, handle)?;
        self.plan_with(reads, project, handle, member, Creator::Other)
    }

    /// [`Mailroom::plan_in`] with the roster entry already looked up. Names take the spelling
    /// they were first written with; a new mailbox whose name is close to an existing one is
    /// refused (a typo is not a new mailbox) unless its owner is the one creating it.
    fn plan_with(
        &self,
        reads: &Reads,
        project: &Name,
        handle: &Name,
        member: Option<Member>,
        creator: Creator,
    ) -> Result<Plan> {
        let existing = reads.project(self.store(), project)?;
        let spelled = existing.as_ref().map(|p| p.name.clone());
        let project = spelled.as_ref().unwrap_or(project);
        match member {
            Some(m) if m.status == MemberStatus::Active => {
                return Ok(Plan::ready(Address::in_project(m.handle, project.clone())));
            }
            Some(m) => {
                return Err(Error::Inactive {
                    address: Address::in_project(m.handle, project.clone()),
                });
            }
            None => {}
        }
        let address = Address::in_project(handle.clone(), project.clone());
        match existing.map(|p| p.policy) {
            None => {
                if creator == Creator::Other {
                    self.check_new_project(project)?;
                }
                Ok(Plan {
                    address,
                    create_project: true,
                    add_member: true,
                })
            }
            Some(Policy::Open) => {
                if creator == Creator::Other {
                    let names: Vec<Name> = reads
                        .roster(self.store(), project)?
                        .into_iter()
                        .map(|m| m.handle)
                        .collect();
                    if let Some(close) = closest(handle, &names) {
                        return Err(Error::CloseName {
                            what: "mailbox",
                            written: address.to_string(),
                            existing: Address::in_project(close.clone(), project.clone())
                                .to_string(),
                            create: Box::new(Fix::AddMember {
                                handle: handle.to_string(),
                                project: project.to_string(),
                            }),
                        });
                    }
                }
                Ok(Plan {
                    address,
                    create_project: false,
                    add_member: true,
                })
            }
            Some(_) => Err(Error::UnknownHandle {
                handle: handle.to_string(),
                project: project.to_string(),
                suggestions: self.similar(project, handle)?,
            }),
        }
    }

    /// A bare handle new in the current project but one typo from an active member of another
    /// project is that member mistyped, not a new mailbox.
    fn check_not_close_elsewhere(
        &self,
        reads: &Reads,
        current: &Name,
        handle: &Name,
    ) -> Result<()> {
        let others = reads.active_elsewhere(self.store(), current)?;
        let handles: Vec<Name> = others.iter().map(|a| a.handle.clone()).collect();
        let Some(close) = closest(handle, &handles) else {
            return Ok(());
        };
        let existing = others.iter().find(|a| a.handle == *close);
        Err(Error::CloseName {
            what: "mailbox",
            written: Address::in_project(handle.clone(), current.clone()).to_string(),
            existing: existing.map_or_else(|| close.to_string(), ToString::to_string),
            create: Box::new(Fix::AddMember {
                handle: handle.to_string(),
                project: current.to_string(),
            }),
        })
    }

    /// A new project one typo from an existing one is refused: a typo is not a new project.
    /// An existing project passes.
    pub(crate) fn check_new_project(&self, project: &Name) -> Result<()> {
        if self.store.project(project)?.is_some() {
            return Ok(());
        }
        match self.close_project(project)? {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The did-you-mean error for `project` when an existing project's name is close to it.
    fn close_project(&self, project: &Name) -> Result<Option<Error>> {
        let names: Vec<Name> = self.store.projects()?.into_iter().map(|p| p.name).collect();
        Ok(closest(project, &names).map(|close| Error::CloseName {
            what: "project",
            written: project.to_string(),
            existing: close.to_string(),
            create: Box::new(Fix::AddProject {
                project: project.to_string(),
            }),
        }))
    }

    /// What to say about a project that does not exist: did-you-mean when one is close.
    pub(crate) fn unknown_project(&self, project: &Name) -> Result<Error> {
        Ok(self
            .close_project(project)?
            .unwrap_or_else(|| Error::ProjectNotFound(project.to_string())))
    }

    /// Refuses `identity` when this mailroom's store does not let its connection act as it
    /// ([`Directory::check_acts_as`]): a front end checks the identity it acts as once.
    pub fn check_acts_as(&self, identity: &Address) -> Result<()> {
        self.store.check_acts_as(identity)
    }

    /// `address` with its names spelled as they were first written (an unknown name keeps
    /// the spelling given).
    pub fn spelled(&self, address: &Address) -> Result<Address> {
        self.spelled_in(&Reads::default(), address)
    }

    /// [`Self::spelled`] through an operation's record of reads, so the checks that follow
    /// read the sender's project file and roster entry no second time.
    pub(crate) fn spelled_in(&self, reads: &Reads, address: &Address) -> Result<Address> {
        let Some(project) = address.project() else {
            return Ok(Address::human());
        };
        let project = reads
            .project(self.store(), project)?
            .map_or_else(|| project.clone(), |p| p.name);
        let handle = reads
            .member(self.store(), &project, &address.handle)?
            .map_or_else(|| address.handle.clone(), |m| m.handle);
        Ok(Address::in_project(handle, project))
    }

    /// A `roster` project takes mail and posts only from its active members and `HUMAN`:
    /// writing `member@project` from elsewhere is no way around the roster. Identities are
    /// `handle@project`, so an outsider never becomes a member by name: once `handle` is on
    /// the roster, it writes as `handle@project`, which is what the refusal says.
    pub(crate) fn check_may_write_into(
        &self,
        reads: &Reads,
        me: &Address,
        project: &Name,
    ) -> Result<()> {
        if me.is_human() || me.project() == Some(project) {
            // Members of the project itself are checked by `plan_sender`.
            return Ok(());
        }
        match reads.project(self.store(), project)? {
            Some(p) if p.policy == Policy::Roster => {
                let member = Address::in_project(me.handle.clone(), p.name.clone());
                let reason = format!(
                    "project '{}' has policy roster and takes mail only from its active members and HUMAN; you are {me}",
                    p.name
                );
                Err(match reads.member(self.store(), &p.name, &me.handle)? {
                    Some(m) if m.status == MemberStatus::Active => Error::RefusedWith {
                        reason,
                        fix: Box::new(Fix::ActAs {
                            address: member.to_string(),
                        }),
                    },
                    _ => Error::RefusedWith {
                        reason: format!(
                            "{reason}: once '{}' is on its roster, write as {member}",
                            me.handle
                        ),
                        fix: Box::new(Fix::AskFor(Box::new(Fix::AddMember {
                            handle: me.handle.to_string(),
                            project: p.name.to_string(),
                        }))),
                    },
                })
            }
            _ => Ok(()),
        }
    }

    /// Importing into `project` is writing into it: a `roster` project takes an import only
    /// from `HUMAN` or one of its active members, and a project the import creates with
    /// `creates` = `roster` (nobody is on its roster yet) only from `HUMAN`. With no identity,
    /// only an open (or new open) project takes one.
    pub fn check_may_import(
        &self,
        importer: Option<&Address>,
        project: &Name,
        creates: Policy,
    ) -> Result<()> {
        if importer.is_some_and(Address::is_human) {
            return Ok(());
        }
        let Some(existing) = self.store.project(project)? else {
            if creates == Policy::Roster {
                return Err(Error::RefusedWith {
                    reason: format!(
                        "this import creates project '{project}' with policy roster, which takes an import only from HUMAN"
                    ),
                    fix: Box::new(Fix::ActAs {
                        address: Address::human().to_string(),
                    }),
                });
            }
            return Ok(());
        };
        match importer {
            Some(me) if me.project() == Some(project) => {
                self.plan_sender(&Reads::default(), me).map(|_| ())
            }
            Some(me) => self.check_may_write_into(&Reads::default(), me, project),
            None if existing.policy == Policy::Roster => Err(Error::RefusedWith {
                reason: format!(
                    "project '{}' has policy roster and takes an import only from HUMAN or one of its active members, and no identity was given: run it as one of them",
                    existing.name
                ),
                fix: Box::new(Fix::Roster {
                    project: existing.name.to_string(),
                }),
            }),
            None => Ok(()),
        }
    }

    /// A project's roster and policy are changed by `HUMAN` and by its active members; a
    /// project with no active member yet (new, or emptied) may be set up by anyone.
    pub(crate) fn check_may_govern(&self, actor: &Address, project: &Name) -> Result<()> {
        if actor.is_human() {
            return Ok(());
        }
        if actor.project() == Some(project)
            && let Some(m) = self.store.member(project, &actor.handle)?
            && m.status == MemberStatus::Active
        {
            return Ok(());
        }
        let roster = self.store.roster(project)?;
        if roster.iter().all(|m| m.status != MemberStatus::Active) {
            return Ok(());
        }
        Err(Error::RefusedWith {
            reason: format!(
                "only the active members of project '{project}' and HUMAN may change its roster or policy, and you are {actor}"
            ),
            fix: Box::new(Fix::Roster {
                project: project.to_string(),
            }),
        })
    }

    /// What must exist for `project` to take a post: the project itself.
    pub(crate) fn plan_project(&self, reads: &Reads, project: &Name) -> Result<Plan> {
        self.check_new_project(project)?;
        let exists = reads.project(self.store(), project)?.is_some();
        Ok(Plan {
            address: Address::in_project(project.clone(), project.clone()),
            create_project: !exists,
            add_member: false,
        })
    }

    /// The sender must be allowed to write: an active member, or joinable in an open project.
    pub(crate) fn plan_sender(&self, reads: &Reads, me: &Address) -> Result<Plan> {
        match &me.scope {
            Scope::Global => Ok(Plan::ready(me.clone())),
            Scope::Project(p) => {
                let member = reads.member(self.store(), p, &me.handle)?;
                self.plan_with(reads, p, &me.handle, member, Creator::Owner)
            }
            .map_err(|e| match e {
                Error::Inactive { address } => Error::RefusedWith {
                    reason: format!("you ({address}) are inactive in project '{p}'"),
                    fix: Box::new(Fix::AskFor(Box::new(Fix::Activate {
                        handle: address.handle.to_string(),
                        project: p.to_string(),
                    }))),
                },
                Error::UnknownHandle { handle, project, .. } => Error::RefusedWith {
                    reason: format!(
                        "you ({handle}) are not on the roster of project '{project}', whose policy is roster"
                    ),
                    fix: Box::new(Fix::AskFor(Box::new(Fix::AddMember { handle, project }))),
                },
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
                    since: None,
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
        Ok(self
            .store
            .memberships(handle)?
            .into_iter()
            .filter(|(p, m)| Some(&p.name) != current && m.status == MemberStatus::Active)
            .map(|(p, m)| Candidate {
                reason: format!("active member of project '{}'", p.name),
                address: Address::in_project(m.handle, p.name),
            })
            .collect())
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
            if let Some(cur) = current
                && let Some(m) = self.store.member(cur, &spec.handle)?
            {
                candidates.push(Candidate {
                    address: Address::in_project(spec.handle.clone(), cur.clone()),
                    reason: format!("{} member of the current project", m.status.as_str()),
                });
            }
            candidates.extend(self.active_elsewhere(&spec.handle, current)?);
        }
        let plan = self.plan_recipient(&Reads::default(), current, &spec);
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
            let set = Fix::SetPolicy {
                project: p.name.to_string(),
                policy,
            };
            // Once it has an active member, only they and HUMAN may change it (check_may_govern).
            let governed = self
                .store
                .roster(&p.name)?
                .iter()
                .any(|m| m.status == MemberStatus::Active);
            return Err(Error::RefusedWith {
                reason: format!(
                    "project '{}' exists with policy {}",
                    p.name,
                    p.policy.as_str()
                ),
                fix: Box::new(if governed {
                    Fix::AskFor(Box::new(set))
                } else {
                    set
                }),
            });
        }
        Ok((p, created))
    }

    pub fn set_policy(&self, actor: &Address, project: &str, policy: Policy) -> Result<()> {
        let name = name("project", project)?;
        if self.store.project(&name)?.is_none() {
            return Err(Error::ProjectNotFound(name.to_string()));
        }
        self.check_may_govern(actor, &name)?;
        if self.store.set_policy(&name, policy)? {
            Ok(())
        } else {
            Err(Error::ProjectNotFound(name.to_string()))
        }
    }

    /// The roster of `project`; the implicit default project is empty until first written.
    pub fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        if self.store.project(project)?.is_none() {
            if project.matches(crate::identity::DEFAULT_PROJECT) {
                return Ok(vec![]);
            }
            return Err(self.unknown_project(project)?);
        }
        self.store.roster(project)
    }

    /// Adds a member (creating an open project on first use); refuses a handle already there.
    pub fn add_member(
        &self,
        actor: &Address,
        project: &Name,
        handle: &str,
        role: &str,
        status: MemberStatus,
    ) -> Result<Member> {
        let role_chars = crate::text::clean_line(role).chars().count();
        if role_chars > crate::text::MAX_ROLE_CHARS {
            return Err(Error::Invalid(format!(
                "the role is {role_chars} characters; the limit is {}: a role is one short line (\"backend\", \"reviewer\")",
                crate::text::MAX_ROLE_CHARS
            )));
        }
        self.check_new_project(project)?;
        let handle = name("handle", handle)?;
        if handle.matches(crate::address::HUMAN) {
            return Err(Error::Invalid(
                "HUMAN is the operator's global mailbox and cannot join a roster".into(),
            ));
        }
        // Joining an open project oneself is what a first send does too; anything else is
        // governed.
        let joins_open = actor.project() == Some(project)
            && actor.handle == handle
            && self
                .store
                .project(project)?
                .is_none_or(|p| p.policy == Policy::Open);
        if !joins_open {
            self.check_may_govern(actor, project)?;
        }
        if let Some(m) = self.store.member(project, &handle)? {
            return Err(already_member(&m.handle, project));
        }
        let (member, added) = self.enlist(project, handle.clone(), role, status)?;
        if added {
            Ok(member)
        } else {
            Err(already_member(&handle, project))
        }
    }

    /// Sets a member's status; returns the entry as it now is.
    pub fn set_member_status(
        &self,
        actor: &Address,
        project: &Name,
        handle: &str,
        status: MemberStatus,
    ) -> Result<Member> {
        let handle = name("handle", handle)?;
        if self.store.project(project)?.is_none() {
            return Err(Error::ProjectNotFound(project.to_string()));
        }
        self.check_may_govern(actor, project)?;
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
        if member.status == status {
            return Ok(member);
        }
        let now = self.now();
        if status == MemberStatus::Active {
            // Broadcasts posted while the member was inactive were never for it.
            let since = member.since.unwrap_or(member.joined);
            let all = self.channel_ref(project, crate::message::BROADCAST)?;
            let missed: Vec<_> = self
                .store
                .unseen(&all, &member.handle)?
                .messages
                .into_iter()
                .map(|s| s.message.id)
                .filter(|id| id.timestamp() >= since)
                .collect();
            self.store.mark_seen(&all, &member.handle, &missed)?;
        }
        member.status = status;
        member.since = Some(now);
        self.store.update_member(project, &member)?;
        Ok(member)
    }

    /// `me`'s own context, its pending mail counted.
    pub fn member_context(&self, me: &Address) -> Result<MemberContext> {
        self.member_context_seen_by(Some(me), me)
    }

    /// The context of `who` as `viewer` may see it (`None`: the operator's view): the roster's
    /// public facts for anyone, and how much mail is pending only for the mailbox's owner and
    /// the operator, who may read it; to anyone else a mailbox's contents are not theirs to know.
    pub fn member_context_seen_by(
        &self,
        viewer: Option<&Address>,
        who: &Address,
    ) -> Result<MemberContext> {
        let (project, member) = match who.project() {
            Some(p) => (self.store.project(p)?, self.store.member(p, &who.handle)?),
            None => (None, None),
        };
        let may_read = viewer.is_none_or(|v| v == who || v.is_human());
        let pending = if may_read {
            let pending = self.store.pending(who)?;
            let count = |s: State| pending.messages.iter().filter(|m| m.state == s).count();
            Some((count(State::Unread), count(State::Read)))
        } else {
            None
        };
        Ok(MemberContext {
            address: who.clone(),
            project,
            member,
            pending,
        })
    }
}

fn already_member(handle: &Name, project: &Name) -> Error {
    Error::RefusedWith {
        reason: format!("'{handle}' is already on the roster of project '{project}'"),
        fix: Box::new(Fix::ChangeStatus {
            project: project.to_string(),
        }),
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

/// Who makes a mailbox exist: its owner acting for the first time may pick any free name;
/// anyone else writing a name close to an existing one is probably mistyping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Creator {
    Owner,
    Other,
}
