//! Codex: its server in `config.toml`, its hooks in Claude Code's shape where the user keeps
//! theirs.

use std::path::{Path, PathBuf};

use anyhow::Result;
use mailroom_core::ops::HookEvent::*;
use serde_json::{Value, json};

use super::{Harness, hook_entries, hook_specific_output};
use crate::commands::setup::jsonc::JsonPiece;
use crate::commands::setup::{Invocation, MAX_CONFIG_BYTES, Piece, Places, Scope, toml};

pub(crate) struct Codex;

impl Harness for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn render(
        &self,
        event: mailroom_core::ops::HookEvent,
        context: Option<String>,
        block_stop: Option<String>,
    ) -> Option<Value> {
        // codex-rs/hooks output schemas: session-start / user-prompt-submit / post-tool-use
        // `hookSpecificOutput` with `hookEventName` and `additionalContext`; stop
        // `decision: "block"` with `reason`, which Codex feeds back as the continuation
        // prompt, inside `<hook_prompt>` tags: no subject in it may close them, whether or
        // not Codex escapes it.
        let block_stop = block_stop.map(|r| r.replace('<', "\u{2039}").replace('>', "\u{203a}"));
        hook_specific_output(self.event_name(event), context, block_stop)
    }

    fn programs(&self) -> &'static [&'static str] {
        &["codex"]
    }

    fn user_dir(&self, places: &Places) -> PathBuf {
        // Codex: "CODEX_HOME ... defaults to ~/.codex" (docs/config.md).
        std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| places.home.join(".codex"))
    }

    fn plan(
        &self,
        scope: Scope,
        root: &Path,
        places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>> {
        // Codex (docs: config-reference, "mcp_servers"): `[mcp_servers.NAME]` with
        // `command` and `args` in `~/.codex/config.toml`, or `.codex/config.toml` in a
        // trusted project.
        let dir = match scope {
            Scope::Project => root.join(".codex"),
            Scope::User => self.user_dir(places),
        };
        // Codex hooks (docs: hooks, "Where Codex looks for hooks"): `hooks.json` next to
        // the active config layer (`~/.codex/hooks.json`, `<repo>/.codex/hooks.json`), or
        // `[hooks]` tables inside `config.toml`, in Claude Code's shape (`[[hooks.EVENT]]`
        // a matcher group, `[[hooks.EVENT.hooks]]` a command); events SessionStart,
        // UserPromptSubmit, PostToolUse, Stop. Codex warns when both forms hold hooks
        // ("prefer a single representation"): mailroom's go where the user keeps theirs,
        // `config.toml` when it has hooks and there is no `hooks.json`.
        let config = dir.join("config.toml");
        if let Some(remote) = &inv.remote {
            // Codex (docs: config-reference, "mcp_servers"): a Streamable HTTP server is `url`,
            // with `bearer_token_env_var` naming the variable the bearer token is read from.
            return Ok(vec![Piece::Toml {
                path: config,
                command: String::new(),
                args: Vec::new(),
                hooks: Vec::new(),
                remote: Some(remote.clone()),
            }]);
        }
        let hooks_json = dir.join("hooks.json");
        let mcp_argv = inv.argv(&["mcp"]);
        let events = hook_entries(
            self,
            inv,
            &[
                (SessionStart, None),
                (UserPromptSubmit, None),
                (PostToolUse, None),
                (Stop, None),
            ],
        );
        let in_toml = std::fs::symlink_metadata(&hooks_json).is_err()
            && crate::files::read_regular(&config, MAX_CONFIG_BYTES, false)
                .ok()
                .and_then(|c| String::from_utf8(c.bytes).ok())
                .is_some_and(|t| toml::has_hooks(&t));
        Ok(if in_toml {
            vec![Piece::Toml {
                path: config,
                command: inv.program.clone(),
                args: mcp_argv,
                hooks: events,
                remote: None,
            }]
        } else {
            vec![
                Piece::Toml {
                    path: config,
                    command: inv.program.clone(),
                    args: mcp_argv,
                    hooks: Vec::new(),
                    remote: None,
                },
                Piece::Json {
                    path: hooks_json,
                    pieces: vec![JsonPiece::Hooks {
                        flat: false,
                        events,
                    }],
                    skeleton: json!({}),
                    strict: true,
                },
            ]
        })
    }

    fn pre_edit(&self) -> Option<super::PreEdit> {
        // Codex hooks (docs: hooks, PreToolUse; codex-rs/hooks pre_tool_use): the patch tool
        // is `apply_patch` (matchers may also say Edit or Write), its whole patch the string
        // `tool_input.command`; `additionalContext` reaches the model and the tool still runs,
        // `permissionDecision: "deny"` with its reason refuses it: Claude Code's shape.
        Some(super::PreEdit {
            event: "PreToolUse",
            matcher: "apply_patch",
            files: |tool, input| {
                if tool != "apply_patch" {
                    return Vec::new();
                }
                ["command", "input", "patch"]
                    .iter()
                    .filter_map(|f| input.get(*f))
                    .flat_map(|v| match v {
                        Value::String(s) => vec![s.as_str()],
                        Value::Array(words) => words.iter().filter_map(Value::as_str).collect(),
                        _ => Vec::new(),
                    })
                    .flat_map(patch_files)
                    .collect()
            },
            context_before: true,
        })
    }

    fn project_note(&self) -> Option<&'static str> {
        Some("codex reads .codex/ only in a project you trust")
    }
}

/// The files an `apply_patch` patch adds, deletes, updates or moves to (its grammar:
/// `*** Add File: PATH`, `*** Delete File: PATH`, `*** Update File: PATH`, `*** Move to: PATH`).
fn patch_files(patch: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Delete File: ",
        "*** Update File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            HEADERS
                .iter()
                .find_map(|h| line.strip_prefix(h))
                .map(|p| p.trim().to_owned())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: src/b.rs\n*** Move to: src/c.rs\n@@\n-1\n+2\n*** Delete File: d.md\n*** End Patch\n";
        assert_eq!(
            patch_files(patch),
            ["a.txt", "src/b.rs", "src/c.rs", "d.md"]
        );
        let pre = Codex.pre_edit().expect("codex has a pre-edit hook");
        let files = |tool: &str, input: Value| (pre.files)(tool, &input);
        assert_eq!(files("apply_patch", json!({"command": patch})).len(), 4);
        assert_eq!(
            files("apply_patch", json!({"command": ["apply_patch", patch]})).len(),
            4
        );
        assert!(files("exec_command", json!({"cmd": patch})).is_empty());
    }
}
