//! The command line's words for the next steps a reader can take: the commands to type. They
//! name `--home`, `--as` and `--project` when those came from flags, because a command copied
//! from the hint into a fresh shell would otherwise act as someone else, or in another home.

use std::path::Path;

use mailroom_core::Fix;
use mailroom_core::identity::{Identity, Source};
use mailroom_core::render::Vocabulary;

/// Commands as typed at a shell.
#[derive(Clone, Debug)]
pub struct CliWords {
    /// `mailroom`, plus the flags the reader's context does not imply.
    program: String,
    /// The same without `--project`, for commands that name their own project.
    without_project: String,
    /// `mailroom` with only `--home`: a step someone else (the operator, a member) takes.
    someone_else: String,
}

impl CliWords {
    pub fn new(
        identity: Option<&Identity>,
        home_flag: Option<&Path>,
        project_flag: Option<&str>,
    ) -> CliWords {
        let mut program = String::from("mailroom");
        if let Some(home) = home_flag {
            program.push_str(" --home ");
            program.push_str(&shell_word(&home.display().to_string()));
        }
        // A step asked of someone else (the operator, a member) runs as them, in this home.
        let someone_else = program.clone();
        if let Some(i) = identity.filter(|i| i.source == Source::Flag) {
            program.push_str(" --as ");
            program.push_str(&shell_word(&i.address.to_string()));
        }
        // The project completes a handle from MAILROOM_AS or the checkout, and picks the
        // operator's channels: the copied command needs it as much as the reader had it.
        let without_project = program.clone();
        if let Some(project) = project_flag {
            program.push_str(" --project ");
            program.push_str(&shell_word(project));
        }
        CliWords {
            program,
            without_project,
            someone_else,
        }
    }

    /// Plain `mailroom`, for advice that does not depend on who reads it.
    pub fn plain() -> CliWords {
        CliWords {
            program: "mailroom".into(),
            without_project: "mailroom".into(),
            someone_else: "mailroom".into(),
        }
    }

    /// The command that takes the step `fix`.
    pub fn fix_command(&self, fix: &Fix) -> String {
        let rest = match fix {
            Fix::Inbox | Fix::WaitAgain => "inbox".to_owned(),
            Fix::Outbox => "outbox".to_owned(),
            Fix::Recover => "recover".to_owned(),
            Fix::Broadcasts => "channel show all".to_owned(),
            Fix::Projects => "projects".to_owned(),
            Fix::Channels { project } => format!("channel list --project {project}"),
            Fix::Roster { project } => format!("roster list --project {project}"),
            Fix::AddProject { project } => format!("projects add {project}"),
            Fix::AddMember { handle, project } => {
                format!("roster add {handle} --project {project}")
            }
            Fix::Activate { handle, project } => {
                format!("roster activate {handle} --project {project}")
            }
            Fix::ChangeStatus { project } => {
                format!("roster activate|deactivate HANDLE --project {project}")
            }
            Fix::SetPolicy { project, policy } => {
                format!("projects set {project} --policy {}", policy.as_str())
            }
            Fix::Edit { id } => format!("edit {id}"),
            Fix::Cancel { id } => format!("cancel {id}"),
            Fix::Retract { id } => format!("retract {id}"),
            Fix::ActAs { address } => format!("--as {} ...", shell_word(address)),
            Fix::GiveContent => "send --message TEXT".to_owned(),
            Fix::GiveChanges => "edit ID --message TEXT".to_owned(),
            Fix::NameIds => "done --all".to_owned(),
            Fix::NameRecipient => "send --to ADDR".to_owned(),
            Fix::SplitRecipients => "send --broadcast".to_owned(),
            Fix::NewChannel { channel } => format!("send --channel {channel} --new"),
            // The operator's command: the home, not the identity or project acted as.
            Fix::Doctor { repair } => {
                let fix = if *repair { " --fix" } else { "" };
                return format!("{} doctor{fix}", self.someone_else);
            }
            Fix::IdentityRole => "role ADDRESS".to_owned(),
            Fix::OperatorAddsMember { project } => {
                return format!(
                    "{} --as HUMAN --project {project} roster add HANDLE",
                    self.someone_else
                );
            }
            Fix::Anyway(inner) => return self.fix_command(inner),
            Fix::AskFor(inner) => {
                let theirs = CliWords {
                    program: self.someone_else.clone(),
                    without_project: self.someone_else.clone(),
                    someone_else: self.someone_else.clone(),
                };
                return theirs.fix_command(inner);
            }
        };
        if rest.contains(" --project ") {
            format!("{} {rest}", self.without_project)
        } else {
            self.command(&rest)
        }
    }

    /// The step `fix` as advice ending an error sentence.
    pub fn fix_advice(&self, fix: &Fix) -> String {
        let cmd = self.fix_command(fix);
        match fix {
            Fix::Inbox | Fix::Outbox | Fix::Recover | Fix::Broadcasts => {
                format!("list them with `{cmd}`")
            }
            Fix::WaitAgain => format!("wait again, or check `{cmd}`"),
            Fix::Projects | Fix::Channels { .. } => format!("`{cmd}` lists them"),
            Fix::Roster { .. } => format!("ask one of them (`{cmd}`) or the operator"),
            Fix::AddProject { .. } => format!("create it with `{cmd}`"),
            Fix::AddMember { .. } => format!("add it with `{cmd}`"),
            Fix::Activate { .. } => format!("reactivate it with `{cmd}`"),
            Fix::ChangeStatus { .. } => format!(
                "use `{} roster activate` or `deactivate` to change it",
                self.program
            ),
            Fix::SetPolicy { .. } => format!("change it with `{cmd}`"),
            Fix::Edit { .. } => format!("send a correction with `{cmd}` instead"),
            Fix::Cancel { .. } => format!("withdraw it with `{cmd}` while it is unread"),
            Fix::Retract { .. } => format!("retract it with `{cmd}` and broadcast again"),
            Fix::Anyway(inner) => {
                let what = match inner.as_ref() {
                    Fix::AddMember { handle, project } => format!("'{handle}@{project}'"),
                    Fix::AddProject { project } => format!("'{project}'"),
                    _ => "it".to_owned(),
                };
                format!("to create {what} anyway, run `{cmd}` first")
            }
            Fix::AskFor(_) => format!("ask the operator or one of its members for `{cmd}`"),
            Fix::ActAs { address } => {
                format!(
                    "write as {address} instead (`--as {}`)",
                    shell_word(address)
                )
            }
            Fix::GiveContent => {
                "give a body with --message (or on stdin) or a --subject".to_owned()
            }
            Fix::GiveChanges => "pass --subject, --priority or --message".to_owned(),
            Fix::NameIds => "name at least one message id, or pass --all".to_owned(),
            Fix::NameRecipient => "name one with --to (or use --broadcast or --channel)".to_owned(),
            Fix::SplitRecipients => {
                "use --broadcast to reach the whole project, or split the list".to_owned()
            }
            Fix::NewChannel { channel } => {
                format!("to start '{channel}' anyway, post to it as a new channel (--new)")
            }
            Fix::Doctor { .. } => format!("run `{cmd}`"),
            Fix::IdentityRole => format!(
                "connect with that identity's role (see `{} role`)",
                self.someone_else
            ),
            Fix::OperatorAddsMember { .. } => {
                format!("ask the operator to add the member (`{cmd}`)")
            }
        }
    }

    /// The mailroom command `rest` (`channel read run-42`), with the flags it needs.
    pub fn command(&self, rest: &str) -> String {
        format!("{} {rest}", self.program)
    }
}

/// `s` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Vocabulary for CliWords {
    fn reply(&self, id: &str) -> String {
        format!("{} reply {id} --message \"...\"", self.program)
    }

    fn done(&self, id: &str) -> String {
        format!("{} done {id}", self.program)
    }

    fn write_reply(&self, out: &mut dyn std::fmt::Write, id: &str) -> std::fmt::Result {
        out.write_str(&self.program)?;
        out.write_str(" reply ")?;
        out.write_str(id)?;
        out.write_str(" --message \"...\"")
    }

    fn write_done(&self, out: &mut dyn std::fmt::Write, id: &str) -> std::fmt::Result {
        out.write_str(&self.program)?;
        out.write_str(" done ")?;
        out.write_str(id)
    }

    fn read(&self, id: &str) -> String {
        format!("{} read {id}", self.program)
    }

    fn inbox(&self) -> String {
        format!("{} inbox", self.program)
    }

    fn doctor(&self) -> String {
        format!("{} doctor", self.program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mailroom_core::Address;

    fn identity(source: Source, address: &str) -> Identity {
        Identity {
            address: Address::parse_canonical(address).unwrap(),
            source,
            origin: None,
        }
    }

    #[test]
    fn hints_written_in_pieces_read_as_the_whole_strings() {
        let words = CliWords::new(
            Some(&identity(Source::Flag, "HUMAN")),
            Some(Path::new("/tmp/my home")),
            None,
        );
        let (mut reply, mut done) = (String::new(), String::new());
        words.write_reply(&mut reply, "01X").unwrap();
        words.write_done(&mut done, "01X").unwrap();
        assert_eq!((reply, done), (words.reply("01X"), words.done("01X")));
    }

    #[test]
    fn hints_name_the_flags_a_copied_command_needs() {
        let implied = CliWords::new(Some(&identity(Source::Env, "api@web")), None, None);
        assert_eq!(implied.done("01X"), "mailroom done 01X");
        let flag = CliWords::new(
            Some(&identity(Source::Flag, "HUMAN")),
            Some(Path::new("/tmp/my home")),
            None,
        );
        assert_eq!(
            flag.reply("01X"),
            "mailroom --home '/tmp/my home' --as HUMAN reply 01X --message \"...\""
        );
        let project = CliWords::new(
            Some(&identity(Source::GitToplevel, "bob@api")),
            None,
            Some("api"),
        );
        assert_eq!(project.done("01X"), "mailroom --project api done 01X");
    }
}
