//! Cursor: camelCase events, flat hook lists, and answers of its own shape.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::ops::HookEvent::{self, *};
use serde_json::{Value, json};

use super::{Harness, hook_entries, server_only, stdio};
use crate::commands::setup::jsonc::JsonPiece;
use crate::commands::setup::{Invocation, Piece, Places, Scope};

pub(crate) struct Cursor;

impl Harness for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn event_name(&self, event: HookEvent) -> &'static str {
        // Cursor's hooks (docs/agent/hooks): camelCase event names.
        match event {
            SessionStart => "sessionStart",
            UserPromptSubmit => "beforeSubmitPrompt",
            PostToolUse => "postToolUse",
            Stop => "stop",
        }
    }

    fn answers(&self, event: HookEvent) -> bool {
        // `beforeSubmitPrompt` can only allow or block the prompt: it cannot add context.
        !matches!(event, UserPromptSubmit)
    }

    fn render(
        &self,
        _event: HookEvent,
        context: Option<String>,
        block_stop: Option<String>,
    ) -> Option<Value> {
        // Cursor (docs/agent/hooks): `sessionStart` and `postToolUse` answer
        // `additional_context`; `stop` answers `followup_message`, which Cursor submits as
        // the next user message.
        if let Some(reason) = block_stop {
            return Some(json!({"followup_message": reason}));
        }
        context.map(|text| json!({"additional_context": text}))
    }

    fn programs(&self) -> &'static [&'static str] {
        &["cursor", "cursor-agent"]
    }

    fn user_dir(&self, places: &Places) -> PathBuf {
        places.home.join(".cursor")
    }

    fn plan(
        &self,
        _scope: Scope,
        root: &Path,
        _places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>> {
        // Cursor (docs: context/mcp): `.cursor/mcp.json` (project) or `~/.cursor/mcp.json`
        // (global), `mcpServers.NAME` with `command` and `args`. Hooks (docs: agent/hooks):
        // `.cursor/hooks.json` or `~/.cursor/hooks.json`, `{"version": 1, "hooks": {EVENT:
        // [{"command"}]}}`; sessionStart and postToolUse can add context, stop can send a
        // follow-up message. beforeSubmitPrompt cannot add context, so it is not hooked.
        let dir = root.join(".cursor");
        if let Some(r) = &inv.remote {
            // Cursor (docs: context/mcp, "Remote server", "Config interpolation"): `url` and
            // `headers`, `${env:NAME}` read from the environment.
            let value = json!({"url": r.url,
                "headers": {"Authorization": r.bearer(|v| format!("${{env:{v}}}"))}});
            return Ok(server_only(
                dir.join("mcp.json"),
                "mcpServers",
                value,
                json!({}),
                false,
            ));
        }
        Ok(vec![
            Piece::Json {
                path: dir.join("mcp.json"),
                pieces: vec![JsonPiece::Server {
                    container: "mcpServers",
                    value: stdio(inv),
                }],
                skeleton: json!({}),
                strict: false,
            },
            Piece::Json {
                path: dir.join("hooks.json"),
                pieces: vec![JsonPiece::Hooks {
                    flat: true,
                    events: hook_entries(
                        self,
                        inv,
                        &[(SessionStart, None), (PostToolUse, None), (Stop, None)],
                    ),
                }],
                skeleton: json!({"version": 1}),
                strict: false,
            },
        ])
    }
}
