//! What one operation's checks read from the directory, each project file and roster entry
//! once.

use crate::address::Address;
use crate::error::Result;
use crate::name::Name;
use crate::store::{Directory, Found, Member, MemberStatus, Project};

/// What one operation's checks read from the directory, so that they never read the same
/// project file or roster entry twice (each read is a walk from the home in a directory store,
/// a query in a database). It lives for one operation's checks, which only read: the first
/// write comes after them, and the next operation reads afresh.
#[derive(Default)]
pub(crate) struct Reads {
    projects: std::cell::RefCell<Vec<(Name, Option<Project>)>>,
    members: std::cell::RefCell<Vec<(Name, Name, Option<Member>)>>,
    /// Rosters read whole (a typo check reads one, or every other project's).
    rosters: std::cell::RefCell<Vec<(Name, Vec<Member>)>>,
    /// The active members of every project but the first field's, once asked for.
    elsewhere: std::cell::RefCell<Option<(Name, Vec<Address>)>>,
}

impl Reads {
    /// Reads the projects and roster entries the checks will ask for in one store call, so
    /// that a database answers them in one round trip; what the checks ask beyond them is
    /// read when asked.
    pub(crate) fn prefetch(
        &self,
        store: &dyn Directory,
        projects: &[Name],
        members: &[(Name, Name)],
    ) -> Result<()> {
        let Found {
            projects: found,
            members: entries,
        } = store.lookup(projects, members)?;
        self.projects
            .borrow_mut()
            .extend(projects.iter().cloned().zip(found));
        self.members.borrow_mut().extend(
            members
                .iter()
                .cloned()
                .zip(entries)
                .map(|((p, h), m)| (p, h, m)),
        );
        Ok(())
    }

    /// `store.project(name)`, read once per operation.
    pub(crate) fn project(&self, store: &dyn Directory, name: &Name) -> Result<Option<Project>> {
        if let Some((_, p)) = self.projects.borrow().iter().find(|(n, _)| n == name) {
            return Ok(p.clone());
        }
        let p = store.project(name)?;
        self.projects.borrow_mut().push((name.clone(), p.clone()));
        Ok(p)
    }

    /// `store.member(project, handle)`, read once per operation.
    pub(crate) fn member(
        &self,
        store: &dyn Directory,
        project: &Name,
        handle: &Name,
    ) -> Result<Option<Member>> {
        if let Some((_, _, m)) = self
            .members
            .borrow()
            .iter()
            .find(|(p, h, _)| p == project && h == handle)
        {
            return Ok(m.clone());
        }
        let m = store.member(project, handle)?;
        self.members
            .borrow_mut()
            .push((project.clone(), handle.clone(), m.clone()));
        Ok(m)
    }

    /// `store.roster(project)`, read once per operation.
    pub(crate) fn roster(&self, store: &dyn Directory, project: &Name) -> Result<Vec<Member>> {
        if let Some((_, r)) = self.rosters.borrow().iter().find(|(n, _)| n == project) {
            return Ok(r.clone());
        }
        let r = store.roster(project)?;
        self.rosters.borrow_mut().push((project.clone(), r.clone()));
        Ok(r)
    }

    /// The active members of every project but `current`, read once per operation: a send to
    /// a hundred new names checks each against them without reading every roster a hundred
    /// times.
    pub(crate) fn active_elsewhere(
        &self,
        store: &dyn Directory,
        current: &Name,
    ) -> Result<Vec<Address>> {
        if let Some((c, others)) = self.elsewhere.borrow().as_ref()
            && c == current
        {
            return Ok(others.clone());
        }
        let mut others = Vec::new();
        for p in store.projects()? {
            if p.name == *current {
                continue;
            }
            others.extend(
                self.roster(store, &p.name)?
                    .into_iter()
                    .filter(|m| m.status == MemberStatus::Active)
                    .map(|m| Address::in_project(m.handle, p.name.clone())),
            );
        }
        *self.elsewhere.borrow_mut() = Some((current.clone(), others.clone()));
        Ok(others)
    }
}
