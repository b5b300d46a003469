//! Gemini CLI: Claude Code's hook shape under its own event names, every hook entry named.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::ops::HookEvent::{self, *};
use serde_json::{Value, json};

use super::{Harness, hook_entries, server_only, stdio};
use crate::commands::setup::jsonc::JsonPiece;
use crate::commands::setup::{Invocation, Piece, Places, Scope};

pub(crate) struct Gemini;

impl Harness for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn event_name(&self, event: HookEvent) -> &'static str {
        // Gemini CLI's hooks reference (docs/hooks/reference.md): SessionStart, BeforeAgent
        // (after the prompt, before planning), AfterTool, AfterAgent. Its answers
        // (`hookSpecificOutput.additionalContext` at SessionStart, BeforeAgent and AfterTool;
        // AfterAgent `decision: "block"|"deny"` with `reason` starts one more turn with the
        // reason as its prompt) are Claude Code's shape.
        match event {
            SessionStart => "SessionStart",
            UserPromptSubmit => "BeforeAgent",
            PostToolUse => "AfterTool",
            Stop => "AfterAgent",
        }
    }

    fn pre_edit(&self) -> Option<super::PreEdit> {
        // Gemini CLI's hooks reference, BeforeTool: `tool_name` and `tool_input`; its file
        // tools `write_file` and `replace` name their file in `file_path`. BeforeTool can
        // refuse (`decision: "deny"`, whose `reason` reaches the model as the tool's error) or
        // rewrite the input, but its `additionalContext` reaches nobody: a notice that lets
        // the edit go ahead comes with the edit's result, from AfterTool, whose
        // `additionalContext` is appended to it.
        const MATCHER: &str = "write_file|replace";
        Some(super::PreEdit {
            event: "BeforeTool",
            matcher: MATCHER,
            files: |tool, input| super::fields_naming_files(MATCHER, &["file_path"], tool, input),
            context_before: false,
        })
    }

    fn render_pre_edit(&self, _event: &str, notice: String, _enforce: bool) -> Value {
        json!({"decision": "deny", "reason": notice})
    }

    fn programs(&self) -> &'static [&'static str] {
        &["gemini"]
    }

    fn user_dir(&self, places: &Places) -> PathBuf {
        places.home.join(".gemini")
    }

    fn plan(
        &self,
        _scope: Scope,
        root: &Path,
        _places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>> {
        // Gemini CLI (docs: cli/settings; docs/tools/mcp-server): `.gemini/settings.json`
        // (project) or `~/.gemini/settings.json` (user); `mcpServers.NAME` with `command`
        // and `args`. Hooks (docs/hooks/reference.md): `hooks.EVENT` is a list of
        // `{"matcher", "hooks": [{"type": "command", "command", "name"}]}`; the events
        // that can add context are SessionStart, BeforeAgent and AfterTool, and AfterAgent
        // can send the agent back to work.
        let settings = root.join(".gemini").join("settings.json");
        if let Some(r) = &inv.remote {
            // docs/tools/mcp-server.md: `httpUrl` is a Streamable HTTP endpoint, `headers` its
            // headers; docs/reference/configuration.md: a string in settings.json may name a
            // variable as `${VAR_NAME}`, resolved when the settings load.
            let value = json!({"httpUrl": r.url,
                "headers": {"Authorization": r.bearer(|v| format!("${{{v}}}"))}});
            return Ok(server_only(settings, "mcpServers", value, json!({}), false));
        }
        let mut events = hook_entries(
            self,
            inv,
            &[
                (SessionStart, None),
                (UserPromptSubmit, None),
                (PostToolUse, None),
                (Stop, None),
            ],
        );
        for e in &mut events {
            e.extra = vec![("name", json!(format!("mailroom-{}", e.event)))];
        }
        Ok(vec![Piece::Json {
            path: settings,
            pieces: vec![
                JsonPiece::Server {
                    container: "mcpServers",
                    value: stdio(inv),
                },
                JsonPiece::Hooks {
                    flat: false,
                    events,
                },
            ],
            skeleton: json!({}),
            strict: false,
        }])
    }
}
