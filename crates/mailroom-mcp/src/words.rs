//! The MCP server's words for next steps: tool calls a model can make. On an operator's server
//! (`--as-any`) they name the acting member, since the server itself implies no one.

use mailroom_core::render::Vocabulary;
use mailroom_core::{Address, Fix, Name};

/// Tool calls, with the acting member's fields when the server does not imply them.
#[derive(Clone, Debug)]
pub struct McpWords {
    /// `, project_handle="p", handle="h"`, or empty on a server bound to one identity.
    who: String,
    /// Whether the server acts as one identity only.
    bound: bool,
}

impl McpWords {
    pub fn new(actor: &Address, bound: bool) -> McpWords {
        let who = if bound {
            String::new()
        } else {
            match actor.project() {
                Some(p) => format!(", project_handle=\"{p}\", handle=\"{}\"", actor.handle),
                None => format!(", handle=\"{}\"", actor.handle),
            }
        };
        McpWords { who, bound }
    }

    /// The words for a call's errors, before (or without) knowing who it acts as: on a bound
    /// server none are needed; on an operator's server the advice names the acting member's
    /// fields, as the call gave them when they are valid names, else as placeholders to fill.
    pub fn for_call(bound: bool, handle: Option<&str>, project: Option<&str>) -> McpWords {
        if bound {
            return McpWords {
                who: String::new(),
                bound,
            };
        }
        let human = |s: &str| s.eq_ignore_ascii_case("HUMAN");
        let valid = |s: Option<&str>| {
            s.filter(|s| human(s) || Name::parse(s).is_ok())
                .unwrap_or("…")
                .to_owned()
        };
        let handle = valid(handle);
        let who = if human(&handle) {
            ", handle=\"HUMAN\"".to_owned()
        } else {
            format!(
                ", project_handle=\"{}\", handle=\"{handle}\"",
                valid(project)
            )
        };
        McpWords { who, bound }
    }

    fn call(&self, tool: &str, args: &str) -> String {
        let who = if args.is_empty() {
            self.who.trim_start_matches(", ")
        } else {
            &self.who
        };
        format!("{tool}({args}{who})")
    }

    /// The step `fix` as advice ending an error sentence.
    pub fn fix_advice(&self, fix: &Fix) -> String {
        match fix {
            Fix::Inbox | Fix::WaitAgain => {
                format!("look with `{}`", self.call("read_mail", "no_archive=true"))
            }
            Fix::Outbox => format!("list them with `{}`", self.call("get_outbox", "")),
            Fix::Recover => format!("list them with `{}`", self.call("read_recent_archive", "")),
            Fix::Broadcasts => format!(
                "list them with `{}`",
                self.call("channel_read", "channel=\"all\"")
            ),
            Fix::Projects => "`get_projects()` lists them".to_owned(),
            Fix::Channels { project } => {
                format!("ask the operator which channels project '{project}' has")
            }
            Fix::Roster { project } => {
                format!(
                    "ask one of them (`get_roster(project_handle=\"{project}\")`) or the operator"
                )
            }
            Fix::AddProject { project } => format!(
                "create it with `init_mail(project_handle=\"{project}\", handle=\"…\", role=\"…\")`"
            ),
            Fix::AddMember { handle, project } => format!(
                "add it with `init_mail(project_handle=\"{project}\", handle=\"{handle}\", role=\"…\")`"
            ),
            Fix::Activate { handle, project } => {
                format!("ask the operator to reactivate {handle}@{project}")
            }
            Fix::ChangeStatus { project } => {
                format!("ask the operator to change a member's status in project '{project}'")
            }
            Fix::SetPolicy { project, policy } => format!(
                "ask the operator to set the policy of project '{project}' to {}",
                policy.as_str()
            ),
            Fix::Edit { id } => format!(
                "send a correction with `{}` instead",
                self.call("edit_mail", &format!("id=\"{id}\", new_body=\"…\""))
            ),
            Fix::Cancel { id } => format!(
                "withdraw it with `{}` while it is unread",
                self.call("cancel_mail", &format!("id=\"{id}\""))
            ),
            Fix::Retract { id } => format!(
                "retract it with `{}` and broadcast again",
                self.call("retract_broadcast", &format!("id=\"{id}\""))
            ),
            Fix::Anyway(inner) => format!("to do it anyway: {}", self.fix_advice(inner)),
            Fix::AskFor(inner) => {
                format!("ask the operator or a member: {}", self.fix_advice(inner))
            }
            Fix::ActAs { address } => match self.bound {
                true => {
                    format!("{address} may: ask the operator for a server that acts as {address}")
                }
                false => match address.split_once('@') {
                    Some((h, p)) => format!(
                        "act as {address} instead: handle=\"{h}\", project_handle=\"{p}\" (write_mail: sender=\"{h}\", sender_project_handle=\"{p}\")"
                    ),
                    None => format!("act as {address} instead: handle=\"{address}\""),
                },
            },
            Fix::GiveContent => "give a body (or a subject)".to_owned(),
            Fix::GiveChanges => "pass new_subject, new_priority or new_body".to_owned(),
            Fix::NameIds => format!(
                "name at least one message id in ids, or archive the whole mailbox with `{}`",
                self.call("archive_mail", "")
            ),
            Fix::NameRecipient => {
                "name the recipient, or reach many with broadcast or channel_post".to_owned()
            }
            Fix::SplitRecipients => {
                "reach the whole project with broadcast, or split the list".to_owned()
            }
            Fix::NewChannel { channel } => format!(
                "to start '{channel}' anyway, post with `{}`",
                self.call(
                    "channel_post",
                    &format!("channel=\"{channel}\", new=true, body=\"…\"")
                )
            ),
            Fix::Doctor { repair: true } => {
                "ask the operator to run mailroom's doctor, which repairs what is safe".to_owned()
            }
            Fix::Doctor { repair: false } => {
                "ask the operator to run mailroom's doctor on this mailroom".to_owned()
            }
            Fix::IdentityRole => {
                "ask the operator for a server connected with that identity's PostgreSQL role"
                    .to_owned()
            }
            Fix::OperatorAddsMember { project } => {
                format!("ask the operator to add the member to project '{project}'")
            }
        }
    }
}

impl Vocabulary for McpWords {
    fn reply(&self, id: &str) -> String {
        self.call("reply_mail", &format!("id=\"{id}\", body=\"...\""))
    }

    fn done(&self, id: &str) -> String {
        self.call("mark_done", &format!("ids=[\"{id}\"]"))
    }

    // `reply` and `done` written in pieces: a long listing writes them for every message.
    fn write_reply(&self, out: &mut dyn std::fmt::Write, id: &str) -> std::fmt::Result {
        out.write_str("reply_mail(id=\"")?;
        out.write_str(id)?;
        out.write_str("\", body=\"...\"")?;
        out.write_str(&self.who)?;
        out.write_char(')')
    }

    fn write_done(&self, out: &mut dyn std::fmt::Write, id: &str) -> std::fmt::Result {
        out.write_str("mark_done(ids=[\"")?;
        out.write_str(id)?;
        out.write_str("\"]")?;
        out.write_str(&self.who)?;
        out.write_char(')')
    }

    fn read(&self, _id: &str) -> String {
        self.call("read_mail", "no_archive=true")
    }

    fn inbox(&self) -> String {
        self.call("read_mail", "no_archive=true")
    }

    fn doctor(&self) -> String {
        "the operator's `mailroom doctor`".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use mailroom_core::render::Vocabulary as _;

    use super::McpWords;

    /// The hints written in pieces say what the whole ones say.
    #[test]
    fn hints_written_in_pieces_are_the_hints() {
        for words in [
            McpWords::for_call(true, None, None),
            McpWords::for_call(false, Some("bob"), Some("shop")),
            McpWords::for_call(false, Some("HUMAN"), None),
        ] {
            let id = "01M8THGP1JA9X1GXST25MTQVCB";
            let (mut reply, mut done) = (String::new(), String::new());
            words.write_reply(&mut reply, id).unwrap();
            words.write_done(&mut done, id).unwrap();
            assert_eq!(reply, words.reply(id));
            assert_eq!(done, words.done(id));
        }
    }
}
