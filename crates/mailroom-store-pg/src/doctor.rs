//! `doctor` on PostgreSQL.

use mailroom_core::Error;

use crate::PgStore;

impl PgStore {
    /// `doctor` on PostgreSQL: what the constraints cannot hold and one pass over the tables
    /// finds. The connection and the schema version were checked when the store opened.
    /// With `fix`, the first kind is repaired; each other finding says what to do.
    ///
    /// - a mailbox holding mail that is not on its project's roster (a send whose roster entry
    ///   could not be recorded after the delivery, or was killed between the two): the mail is
    ///   there, but resolution and rosters do not know the mailbox. The fix finishes what that
    ///   send began: the project (open, as a first send makes it) if it is missing, and the
    ///   mailbox as an active member;
    /// - a mailbox holding mail without its row in `mailboxes`: its change token and waits do
    ///   not see that mail;
    /// - a strict-mode grant in `identities` to a role that does not exist.
    pub fn doctor(&self, fix: bool) -> Result<Vec<mailroom_core::Finding>, Error> {
        let rows = self.read("check the mailroom", |c| {
            c.query_typed(
                "SELECT 'roster' AS what, c.mailbox AS subject, count(*) AS n FROM copies c \
                 WHERE c.mailbox <> 'human' AND NOT EXISTS (SELECT 1 FROM members m \
                   WHERE m.project_key = split_part(c.mailbox, '@', 2) \
                   AND m.handle_key = split_part(c.mailbox, '@', 1)) \
                 GROUP BY c.mailbox \
                 UNION ALL \
                 SELECT 'token', c.mailbox, count(*) FROM copies c \
                 WHERE NOT EXISTS (SELECT 1 FROM mailboxes b WHERE b.key = c.mailbox) \
                 GROUP BY c.mailbox \
                 UNION ALL \
                 SELECT 'role', i.role::text, count(*) FROM identities i \
                 WHERE NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = i.role) \
                 GROUP BY i.role \
                 ORDER BY 1, 2",
                &[],
            )
        })?;
        let messages = |n: i64| {
            if n == 1 {
                "1 message".to_owned()
            } else {
                format!("{n} messages")
            }
        };
        let mut findings = Vec::with_capacity(rows.len());
        for row in &rows {
            let what: &str = row.get("what");
            let subject: String = row.get("subject");
            let n: i64 = row.get("n");
            let (handle, project) = subject.split_once('@').unwrap_or((&subject, ""));
            let mut fixed = false;
            let (location, problem, advice) = match what {
                "roster" => {
                    if fix {
                        self.add_to_roster(handle, project)?;
                        fixed = true;
                    }
                    (
                        subject.clone(),
                        format!(
                            "holds {} but is not on the roster of project '{project}'",
                            messages(n)
                        ),
                        if fixed {
                            "added to the roster as an active member, as the send that delivered it would have"
                                .to_owned()
                        } else {
                            format!("as HUMAN: mailroom --project {project} roster add {handle}")
                        },
                    )
                }
                "token" => (
                    subject.clone(),
                    format!(
                        "holds {} but has no row in mailboxes, so its change token and waits do not see them",
                        messages(n)
                    ),
                    "send it a message (a delivery creates the row)".to_owned(),
                ),
                _ => (
                    "identities".to_owned(),
                    format!("grants {n} mailbox(es) to the role '{subject}', which does not exist"),
                    "create the role (mailroom role prints its SQL) or delete its rows from identities"
                        .to_owned(),
                ),
            };
            findings.push(mailroom_core::Finding {
                location: format!("{} {location}", self.shown),
                problem,
                fix: advice,
                fixed,
            });
        }
        Ok(findings)
    }

    /// Records `handle@project`, a mailbox holding mail, on its project's roster: the project
    /// first if it is missing (open, as a first send creates it), then the member, active.
    fn add_to_roster(&self, handle: &str, project: &str) -> Result<(), Error> {
        use mailroom_core::store::Directory as _;
        use mailroom_core::{Member, MemberStatus, Name, Policy, Project};
        let (Ok(handle), Ok(project)) = (Name::parse(handle), Name::parse(project)) else {
            return Err(Error::store(
                format!("the mailbox {handle}@{project}"),
                "its name is not a mailroom name, so it cannot join a roster",
            ));
        };
        let now = jiff::Timestamp::now();
        self.ensure_project(&Project {
            name: project.clone(),
            policy: Policy::Open,
            created: now,
        })?;
        self.add_member(
            &project,
            &Member {
                handle,
                role: String::new(),
                status: MemberStatus::Active,
                joined: now,
                since: None,
            },
        )?;
        Ok(())
    }
}
