//! The MCP server's words for next steps: tool calls a model can make. On an operator's server
//! (`--as-any`) they name the acting member, since the server itself implies no one.

use mailroom_core::render::Vocabulary;
use mailroom_core::{Address, Fix};

/// Tool calls, with the acting member's fields when the server does not imply them.
#[derive(Clone, Debug)]
pub struct McpWords {
    /// `, project_handle="p", handle="h"`, or empty on a server bound to one identity.
    who: String,
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
        McpWords { who }
    }

    /// Words that name nobody, for advice that does not depend on who reads it.
    pub fn plain() -> McpWords {
        McpWords { who: String::new() }
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
        let operator = |cmd: String| format!("ask the operator to run `mailroom {cmd}`");
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
            Fix::Channels { project } => operator(format!("channel list --project {project}")),
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
                operator(format!("roster activate {handle} --project {project}"))
            }
            Fix::ChangeStatus { project } => operator(format!(
                "roster activate|deactivate HANDLE --project {project}"
            )),
            Fix::SetPolicy { project, policy } => operator(format!(
                "projects set {project} --policy {}",
                policy.as_str()
            )),
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
