//! The harnesses mailroom wires into, one module each, behind one trait: what `hook` speaks
//! (event names, the answer's JSON shape) and what `setup` keeps (config files and their
//! entries per scope, how to tell the harness is installed). `hook` and `setup` hold no
//! harness's name; adding a harness is one file here and its line in [`ALL`].
//!
//! Every file location, format and event name comes from the harness's documentation or its
//! installed package, cited beside the code that writes it.

mod claude;
mod codex;
mod cursor;
mod gemini;
mod opencode;

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::ops::HookEvent;
use serde_json::{Value, json};

use crate::commands::setup::jsonc::{HookEntry, JsonPiece};
use crate::commands::setup::{Invocation, Piece, Places, Scope};

/// Every harness, in the order `setup all` and `setup --check` go through them.
pub(crate) const ALL: [&dyn Harness; 5] = [
    &claude::Claude,
    &codex::Codex,
    &gemini::Gemini,
    &opencode::Opencode,
    &cursor::Cursor,
];

/// The events mailroom's hooks answer, in the order they are listed.
const EVENTS: [HookEvent; 4] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PostToolUse,
    HookEvent::Stop,
];

/// One harness: its name, its hook JSON, and the config files setup keeps mailroom in.
pub(crate) trait Harness: Sync {
    /// The name `hook HARNESS` and `setup HARNESS` take, and that setup's hook commands carry.
    fn name(&self) -> &'static str;

    /// The harness's own event name for one of ours.
    fn event_name(&self, event: HookEvent) -> &'static str {
        event.as_str()
    }

    /// Whether the harness's hook for `event` can take mail: false, and the hook answers
    /// nothing and consumes nothing, so the mail is still news at the next event.
    fn answers(&self, _event: HookEvent) -> bool {
        true
    }

    /// The answer in the harness's own JSON shape, or nothing to say.
    fn render(
        &self,
        event: HookEvent,
        context: Option<String>,
        block_stop: Option<String>,
    ) -> Option<Value> {
        hook_specific_output(self.event_name(event), context, block_stop)
    }

    /// The programs that show the harness is installed (any one of them on PATH).
    fn programs(&self) -> &'static [&'static str];

    /// The harness's own folder of user configuration; its presence shows it is installed.
    fn user_dir(&self, places: &Places) -> PathBuf;

    /// What setup keeps for the harness at `scope`, in the folder `root` (the repository's top
    /// level for project scope, HOME for user scope).
    fn plan(
        &self,
        scope: Scope,
        root: &Path,
        places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>>;

    /// The key of its MCP server entry that holds the server's environment.
    fn server_env_key(&self) -> &'static str {
        "env"
    }

    /// The hook that runs before an edit tool, when the harness has one mailroom answers
    /// (file reservations): its event name, the tools it is about and where their input names
    /// the files.
    fn pre_edit(&self) -> Option<PreEdit> {
        None
    }

    /// The pre-edit hook's answer: `notice` reaches the model as context and the edit goes
    /// ahead, or with `enforce` the edit is refused with the same words. Claude Code's shape
    /// (hooks reference, PreToolUse), which Codex shares: `additionalContext` is shown to the
    /// model; `permissionDecision: "deny"` refuses the call, its reason shown to the model.
    fn render_pre_edit(&self, event: &str, notice: String, enforce: bool) -> Value {
        if enforce {
            json!({"hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": notice,
            }})
        } else {
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": notice}})
        }
    }

    /// What setup says after writing a project's files for the first time.
    fn project_note(&self) -> Option<&'static str> {
        None
    }
}

/// A harness's hook before a tool runs, as file reservations use it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PreEdit {
    /// The harness's event name, as `hook HARNESS EVENT` takes it.
    pub event: &'static str,
    /// The tools that edit files, `|`-joined as setup's matcher writes them.
    pub matcher: &'static str,
    /// The files one call of an edit tool named `tool` changes, from its `tool_input`: none
    /// for any other tool.
    pub files: fn(tool: &str, input: &Value) -> Vec<String>,
    /// Whether the hook before a tool can show the model context and let the tool run. When
    /// it cannot (only a refusal's reason reaches the model), the notice that lets the edit go
    /// ahead comes with the edit's result, from the hook after a tool.
    pub context_before: bool,
}

impl PreEdit {
    /// Whether `tool` is one of the edit tools.
    pub fn edits(&self, tool: &str) -> bool {
        self.matcher.split('|').any(|t| t == tool)
    }
}

/// The files named by the string fields `fields` of `input`, for the edit tools of `matcher`.
pub(crate) fn fields_naming_files(
    matcher: &str,
    fields: &[&str],
    tool: &str,
    input: &Value,
) -> Vec<String> {
    if !matcher.split('|').any(|t| t == tool) {
        return Vec::new();
    }
    fields
        .iter()
        .filter_map(|f| input.get(*f)?.as_str().map(str::to_owned))
        .collect()
}

impl PartialEq for dyn Harness {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// The harness named `name`.
pub(crate) fn parse(name: &str) -> Option<&'static dyn Harness> {
    ALL.into_iter().find(|h| h.name() == name)
}

/// The event `name` means to `h`: its own name for one of ours, else any spelling the core
/// reads (`session-start`, another harness's name for it).
pub(crate) fn event(h: &dyn Harness, name: &str) -> Option<HookEvent> {
    EVENTS
        .into_iter()
        .find(|e| h.event_name(*e) == name)
        .or_else(|| HookEvent::parse(name))
}

/// Every harness's name, `, `-joined, the last one after `last` (`or`, or `, ` for a list
/// that goes on).
pub(crate) fn names(last: &str) -> String {
    let names: Vec<&str> = ALL.iter().map(|h| h.name()).collect();
    list(&names, last)
}

/// `hook`'s help for its EVENT: each harness's event names.
pub(crate) fn events_help() -> String {
    let each: Vec<String> = ALL
        .iter()
        .map(|h| format!("{}: {}", h.name(), event_names(*h)))
        .collect();
    format!("The harness's event ({})", each.join("; "))
}

/// The event names the harness's hook takes, for a message.
pub(crate) fn event_names(h: &dyn Harness) -> String {
    let names: Vec<&str> = EVENTS
        .into_iter()
        .filter(|e| h.answers(*e))
        .map(|e| h.event_name(e))
        .collect();
    list(&names, " or ")
}

fn list(words: &[&str], last: &str) -> String {
    match words.split_last() {
        Some((end, [])) => (*end).to_owned(),
        Some((end, rest)) => format!("{}{last}{end}", rest.join(", ")),
        None => String::new(),
    }
}

/// Claude Code's answer shape (hooks reference), which Codex and Gemini CLI share: context as
/// `hookSpecificOutput` with `hookEventName` and `additionalContext`, and a stop sent back to
/// work as `decision: "block"` with the `reason`.
pub(crate) fn hook_specific_output(
    event_name: &str,
    context: Option<String>,
    block_stop: Option<String>,
) -> Option<Value> {
    if let Some(reason) = block_stop {
        return Some(json!({"decision": "block", "reason": reason}));
    }
    context.map(|text| {
        json!({
            "hookSpecificOutput": {
                "hookEventName": event_name,
                "additionalContext": text,
            }
        })
    })
}

/// The hook entries for `events` in `h`'s own event names, with their matchers, then its
/// pre-edit hook (file reservations) on its edit tools, when it has one.
pub(crate) fn hook_entries(
    h: &dyn Harness,
    inv: &Invocation,
    events: &[(HookEvent, Option<&'static str>)],
) -> Vec<HookEntry> {
    let entry = |event: &'static str, matcher: Option<&'static str>| HookEntry {
        event,
        matcher,
        command: inv.command(&["hook", h.name(), event]),
        extra: vec![],
    };
    events
        .iter()
        .map(|(event, matcher)| entry(h.event_name(*event), *matcher))
        .chain(h.pre_edit().map(|p| entry(p.event, Some(p.matcher))))
        .collect()
}

/// What `setup --remote` keeps: the MCP server entry `value` alone, in the JSON file `path`
/// (no hooks: they run mailroom on this machine, which a remote harness does not have).
pub(crate) fn server_only(
    path: PathBuf,
    container: &'static str,
    value: Value,
    skeleton: Value,
    strict: bool,
) -> Vec<Piece> {
    vec![Piece::Json {
        path,
        pieces: vec![JsonPiece::Server { container, value }],
        skeleton,
        strict,
    }]
}

/// The MCP server entry most harnesses take: the program and its arguments.
pub(crate) fn stdio(inv: &Invocation) -> Value {
    json!({"command": inv.program, "args": inv.argv(&["mcp"])})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_by_name() {
        for h in ALL {
            assert!(parse(h.name()).is_some_and(|p| p == h));
        }
        assert!(parse("vim").is_none());
        assert_eq!(names(" or "), "claude, codex, gemini, opencode or cursor");
        assert_eq!(list(&["a"], " or "), "a");
    }

    /// What setup writes, `hook` reads: every hook entry of every harness, at either scope,
    /// runs `hook NAME EVENT` with an event of the harness's that its hook answers.
    #[test]
    fn every_hook_setup_writes_is_one_hook_answers() {
        let places = Places {
            home: PathBuf::from("/nonexistent/home"),
            project: Some(PathBuf::from("/nonexistent/repo")),
        };
        let inv = Invocation {
            program: "mailroom".into(),
            launcher: vec![],
            global: vec![],
            remote: None,
        };
        for h in ALL {
            for (scope, root) in [
                (Scope::Project, "/nonexistent/repo"),
                (Scope::User, "/nonexistent/home"),
            ] {
                let pieces = h.plan(scope, Path::new(root), &places, &inv);
                let Ok(pieces) = pieces else {
                    panic!("{} cannot plan {scope:?}", h.name());
                };
                assert!(!pieces.is_empty(), "{}", h.name());
                let entries = pieces.iter().flat_map(|p| match p {
                    Piece::Json { pieces, .. } => pieces
                        .iter()
                        .flat_map(|p| match p {
                            JsonPiece::Hooks { events, .. } => events.iter().collect(),
                            JsonPiece::Server { .. } => Vec::new(),
                        })
                        .collect::<Vec<_>>(),
                    Piece::Toml { hooks, .. } => hooks.iter().collect(),
                    Piece::Whole { .. } => Vec::new(),
                });
                for e in entries {
                    let parsed = event(h, e.event);
                    let pre_edit = h
                        .pre_edit()
                        .is_some_and(|p| p.event == e.event && e.matcher == Some(p.matcher));
                    assert!(
                        pre_edit
                            || parsed.is_some_and(|p| h.answers(p) && h.event_name(p) == e.event),
                        "{} hooks {}",
                        h.name(),
                        e.event
                    );
                    let tail = format!("hook {} {}", h.name(), e.event);
                    assert!(e.command.ends_with(&tail), "{}", e.command);
                }
            }
        }
    }

    #[test]
    fn each_harness_lists_the_events_its_hook_answers() {
        let find = |n: &str| parse(n).map(event_names).unwrap_or_default();
        assert_eq!(
            find("claude"),
            "SessionStart, UserPromptSubmit, PostToolUse or Stop"
        );
        assert_eq!(
            find("gemini"),
            "SessionStart, BeforeAgent, AfterTool or AfterAgent"
        );
        assert_eq!(find("cursor"), "sessionStart, postToolUse or stop");
    }
}
