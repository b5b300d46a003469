//! The `Directory` role: projects, rosters and strict mode's identities.

use mailroom_core::store::{Directory, Found};
use mailroom_core::{Address, Error, Fix, Member, Name, Policy, Project, Result};
use postgres::types::Type;

use crate::PgStore;
use crate::codec::{key, mailbox_key};
use crate::rows::{member_of, project_of};

impl Directory for PgStore {
    fn check_acts_as(&self, identity: &Address) -> Result<()> {
        if !self.strict()? {
            return Ok(());
        }
        let k = mailbox_key(identity);
        let row = self.read("check the role's identities", |c| {
            c.query_typed_one("SELECT mailroom_mine($1)", &[(&k, Type::TEXT)])
        })?;
        if row.get::<_, bool>(0) {
            return Ok(());
        }
        Err(Error::RefusedWith {
            reason: format!(
                "the PostgreSQL role '{}' may not act as {identity} here: in strict mode a role acts only as the identities given to it",
                self.role()
            ),
            fix: Box::new(Fix::IdentityRole),
        })
    }

    fn check_roster_change(&self, project: &Name) -> Result<()> {
        if !self.strict()? {
            return Ok(());
        }
        Err(Error::RefusedWith {
            reason: format!(
                "the PostgreSQL role '{}' may not add a member or a project here ('{project}'): in strict mode only the operator's role changes projects and rosters",
                self.role()
            ),
            fix: Box::new(Fix::OperatorAddsMember {
                project: project.to_string(),
            }),
        })
    }

    fn projects(&self) -> Result<Vec<Project>> {
        let rows = self.read("list the projects", |c| {
            c.query_typed(
                "SELECT name, policy, created FROM projects ORDER BY key",
                &[],
            )
        })?;
        rows.iter().map(project_of).collect()
    }

    fn project(&self, name: &Name) -> Result<Option<Project>> {
        let k = key(name);
        let row = self.read("look up a project", |c| {
            c.query_typed_opt(
                "SELECT name, policy, created FROM projects WHERE key = $1",
                &[(&k, Type::TEXT)],
            )
        })?;
        row.as_ref().map(project_of).transpose()
    }

    fn ensure_project(&self, project: &Project) -> Result<(Project, bool)> {
        let k = key(&project.name);
        let name = project.name.as_str();
        let policy = project.policy.as_str();
        let created = project.created.to_string();
        // Looked up first: a role that may not create projects (strict mode) still gets the
        // one that exists.
        if let Some(p) = self.project(&project.name)? {
            return Ok((p, false));
        }
        let (row, made) = self.write("create a project", |tx| {
            if let Some(row) = tx.query_typed_opt(
                "INSERT INTO projects (key, name, policy, created) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (key) DO NOTHING RETURNING name, policy, created",
                &[
                    (&k, Type::TEXT),
                    (&name, Type::TEXT),
                    (&policy, Type::TEXT),
                    (&created, Type::TEXT),
                ],
            )? {
                return Ok((row, true));
            }
            let row = tx.query_typed_one(
                "SELECT name, policy, created FROM projects WHERE key = $1",
                &[(&k, Type::TEXT)],
            )?;
            Ok((row, false))
        })?;
        Ok((project_of(&row)?, made))
    }

    fn set_policy(&self, name: &Name, policy: Policy) -> Result<bool> {
        let k = key(name);
        let p = policy.as_str();
        let n = self.write("change a project's policy", |tx| {
            tx.execute_typed(
                "UPDATE projects SET policy = $2 WHERE key = $1",
                &[(&k, Type::TEXT), (&p, Type::TEXT)],
            )
        })?;
        Ok(n > 0)
    }

    fn roster(&self, project: &Name) -> Result<Vec<Member>> {
        let k = key(project);
        let rows = self.read("list a roster", |c| {
            c.query_typed(
                "SELECT handle, role, status, joined, since FROM members WHERE project_key = $1 ORDER BY handle_key",
                &[(&k, Type::TEXT)],
            )
        })?;
        rows.iter().map(member_of).collect()
    }

    fn member(&self, project: &Name, handle: &Name) -> Result<Option<Member>> {
        let (p, h) = (key(project), key(handle));
        let row = self.read("look up a member", |c| {
            c.query_typed_opt(
                "SELECT handle, role, status, joined, since FROM members WHERE project_key = $1 AND handle_key = $2",
                &[(&p, Type::TEXT), (&h, Type::TEXT)],
            )
        })?;
        row.as_ref().map(member_of).transpose()
    }

    fn add_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let (p, h) = (key(project), key(&member.handle));
        let handle = member.handle.as_str();
        let status = member.status.as_str();
        let joined = member.joined.to_string();
        let since = member.since.map(|s| s.to_string());
        if self.member(project, &member.handle)?.is_some() {
            return Ok(false);
        }
        let n = self.write("add a member", |tx| {
            tx.execute_typed(
                "INSERT INTO members (project_key, handle_key, handle, role, status, joined, since) \
                 SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM projects WHERE key = $1) \
                 ON CONFLICT DO NOTHING",
                &[
                    (&p, Type::TEXT),
                    (&h, Type::TEXT),
                    (&handle, Type::TEXT),
                    (&member.role, Type::TEXT),
                    (&status, Type::TEXT),
                    (&joined, Type::TEXT),
                    (&since, Type::TEXT),
                ],
            )
        })?;
        Ok(n > 0)
    }

    fn update_member(&self, project: &Name, member: &Member) -> Result<bool> {
        let (p, h) = (key(project), key(&member.handle));
        let status = member.status.as_str();
        let joined = member.joined.to_string();
        let since = member.since.map(|s| s.to_string());
        let n = self.write("change a member", |tx| {
            tx.execute_typed(
                "UPDATE members SET role = $3, status = $4, joined = $5, since = $6 \
                 WHERE project_key = $1 AND handle_key = $2",
                &[
                    (&p, Type::TEXT),
                    (&h, Type::TEXT),
                    (&member.role, Type::TEXT),
                    (&status, Type::TEXT),
                    (&joined, Type::TEXT),
                    (&since, Type::TEXT),
                ],
            )
        })?;
        Ok(n > 0)
    }

    fn lookup(&self, projects: &[Name], members: &[(Name, Name)]) -> Result<Found> {
        let pk: Vec<String> = projects.iter().map(key).collect();
        let mp: Vec<String> = members.iter().map(|(p, _)| key(p)).collect();
        let mh: Vec<String> = members.iter().map(|(_, h)| key(h)).collect();
        // One round trip: the projects found, then the entries found, each with its position.
        let rows = self.read("look up projects and members", |c| {
            Ok(c.call(
                LOOKUP,
                &[Type::TEXT_ARRAY, Type::TEXT_ARRAY, Type::TEXT_ARRAY],
                &[&pk, &mp, &mh],
            )?)
        })?;
        let mut found = vec![None; projects.len()];
        let mut entries = vec![None; members.len()];
        for row in &rows {
            let part: i32 = row.get("part");
            let n: i64 = row.get("n");
            let at = usize::try_from(n - 1).unwrap_or(usize::MAX);
            if part == 0 {
                if let Some(slot) = found.get_mut(at) {
                    *slot = Some(project_of(row)?);
                }
            } else if let Some(slot) = entries.get_mut(at) {
                *slot = Some(member_of(row)?);
            }
        }
        Ok(Found {
            projects: found,
            members: entries,
        })
    }

    fn memberships(&self, handle: &Name) -> Result<Vec<(Project, Member)>> {
        let h = key(handle);
        let rows = self.read("list memberships", |c| {
            c.query_typed(
                "SELECT p.name, p.policy, p.created, m.handle, m.role, m.status, m.joined, m.since \
                 FROM members m JOIN projects p ON p.key = m.project_key \
                 WHERE m.handle_key = $1 ORDER BY p.key",
                &[(&h, Type::TEXT)],
            )
        })?;
        rows.iter()
            .map(|r| Ok((project_of(r)?, member_of(r)?)))
            .collect()
    }
}

impl PgStore {
    /// Whether row-level security applies to this connection's role: strict mode.
    fn strict(&self) -> Result<bool> {
        if let Some(strict) = self.strict.get() {
            return Ok(*strict);
        }
        let row = self.read("check the role's rights", |c| {
            c.query_typed_one("SELECT row_security_active('copies')", &[])
        })?;
        let strict: bool = row.get(0);
        Ok(*self.strict.get_or_init(|| strict))
    }

    fn role(&self) -> &str {
        self.config.get_user().unwrap_or("")
    }
}

/// The projects and roster entries a send's checks need, in one round trip: the projects
/// found, then the entries found, each with its position. Prepared once per connection.
const LOOKUP: &str = "SELECT 0 AS part, q.n, p.name, p.policy, p.created, \
     NULL AS handle, NULL AS role, NULL AS status, NULL AS joined, NULL AS since \
     FROM unnest($1::text[]) WITH ORDINALITY AS q(k, n) JOIN projects p ON p.key = q.k \
     UNION ALL \
     SELECT 1, q.n, NULL, NULL, NULL, m.handle, m.role, m.status, m.joined, m.since \
     FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS q(p, h, n) \
     JOIN members m ON m.project_key = q.p AND m.handle_key = q.h";
