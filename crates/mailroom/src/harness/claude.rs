//! Claude Code: the shape the others borrow.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::ops::HookEvent::*;
use serde_json::json;

use super::{Harness, hook_entries, server_only, stdio};
use crate::commands::setup::jsonc::JsonPiece;
use crate::commands::setup::{Invocation, Piece, Places, Scope};

pub(crate) struct Claude;

impl Harness for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["claude"]
    }

    fn user_dir(&self, places: &Places) -> PathBuf {
        places.home.join(".claude")
    }

    fn plan(
        &self,
        scope: Scope,
        root: &Path,
        _places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>> {
        // Claude Code settings (docs: settings, "Settings files"): hooks live in
        // `.claude/settings.json` (project, committed) or `~/.claude/settings.json` (user).
        // Hook events and shape (docs: hooks): SessionStart, UserPromptSubmit, PostToolUse
        // (with a `matcher`; "*" matches every tool), Stop; each a list of
        // `{"matcher", "hooks": [{"type": "command", "command"}]}`.
        let settings = root.join(".claude").join("settings.json");
        // MCP (docs: mcp, "MCP installation scopes"): project scope is `.mcp.json` at the
        // project root, user scope is `mcpServers` in `~/.claude.json`; a stdio server is
        // `{"type": "stdio", "command", "args"}` as `claude mcp add` writes it.
        let mcp = match scope {
            Scope::Project => root.join(".mcp.json"),
            Scope::User => root.join(".claude.json"),
        };
        if let Some(r) = &inv.remote {
            // MCP (docs: mcp, "Add a remote HTTP server", "Environment variable expansion in
            // `.mcp.json`"): `{"type": "http", "url", "headers"}`, `${VAR}` expanded in `url`
            // and `headers` when Claude Code reads the file.
            let value = json!({"type": "http", "url": r.url,
                "headers": {"Authorization": r.bearer(|v| format!("${{{v}}}"))}});
            return Ok(server_only(mcp, "mcpServers", value, json!({}), true));
        }
        let stdio = stdio(inv);
        let server = json!({"type": "stdio", "command": stdio["command"], "args": stdio["args"]});
        Ok(vec![
            Piece::Json {
                path: mcp,
                pieces: vec![JsonPiece::Server {
                    container: "mcpServers",
                    value: server,
                }],
                skeleton: json!({}),
                strict: true,
            },
            Piece::Json {
                path: settings,
                pieces: vec![JsonPiece::Hooks {
                    flat: false,
                    events: hook_entries(
                        self,
                        inv,
                        &[
                            (SessionStart, None),
                            (UserPromptSubmit, None),
                            (PostToolUse, Some("*")),
                            (Stop, None),
                        ],
                    ),
                }],
                skeleton: json!({}),
                strict: true,
            },
        ])
    }

    fn pre_edit(&self) -> Option<super::PreEdit> {
        // Hooks reference, PreToolUse: `tool_name` and `tool_input`; Edit, Write and
        // MultiEdit name their file in `file_path`, NotebookEdit in `notebook_path`;
        // `additionalContext` reaches the model and the tool still runs.
        const MATCHER: &str = "Edit|Write|MultiEdit|NotebookEdit";
        Some(super::PreEdit {
            event: "PreToolUse",
            matcher: MATCHER,
            files: |tool, input| {
                super::fields_naming_files(MATCHER, &["file_path", "notebook_path"], tool, input)
            },
            context_before: true,
        })
    }

    fn project_note(&self) -> Option<&'static str> {
        Some("claude asks once before it starts a server from .mcp.json")
    }
}
