//! OpenCode: no shell hooks; a plugin setup writes runs `hook opencode EVENT` and reads
//! Claude Code's answer shape back.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

use super::Harness;
use crate::commands::setup::jsonc::JsonPiece;
use crate::commands::setup::{Invocation, Piece, Places, Scope};

pub(crate) struct Opencode;

impl Harness for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn programs(&self) -> &'static [&'static str] {
        &["opencode"]
    }

    fn user_dir(&self, places: &Places) -> PathBuf {
        // OpenCode reads its global config from the XDG config directory (docs/config:
        // `~/.config/opencode/opencode.json`).
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| places.home.join(".config"))
            .join("opencode")
    }

    fn plan(
        &self,
        scope: Scope,
        root: &Path,
        places: &Places,
        inv: &Invocation,
    ) -> Result<Vec<Piece>> {
        // OpenCode (docs: config): `opencode.json` at the project root, or
        // `~/.config/opencode/opencode.json`; MCP (docs: mcp-servers): `mcp.NAME` =
        // `{"type": "local", "command": [program, args...], "enabled": true}`.
        let (config_dir, plugin_dir) = match scope {
            Scope::Project => (root.to_path_buf(), root.join(".opencode").join("plugins")),
            Scope::User => {
                let d = self.user_dir(places);
                (d.clone(), d.join("plugins"))
            }
        };
        let config = ["opencode.jsonc", "opencode.json"]
            .iter()
            .map(|n| config_dir.join(n))
            .find(|p| p.exists())
            .unwrap_or_else(|| config_dir.join("opencode.json"));
        if let Some(r) = &inv.remote {
            // OpenCode (docs: mcp-servers, "Remote"): `{"type": "remote", "url", "headers",
            // "enabled"}`; (docs: config, "Variables") `{env:NAME}` is read from the
            // environment when the config loads.
            let value = json!({"type": "remote", "url": r.url,
                "headers": {"Authorization": r.bearer(|v| format!("{{env:{v}}}"))},
                "enabled": true});
            return Ok(super::server_only(
                config,
                "mcp",
                value,
                json!({"$schema": "https://opencode.ai/config.json"}),
                false,
            ));
        }
        let mut command = vec![inv.program.clone()];
        command.extend(inv.argv(&["mcp"]));
        // OpenCode has no shell hooks; it loads every JS/TS file in `.opencode/plugins/`
        // (project) or `~/.config/opencode/plugins/` (docs: plugins, "From local files").
        Ok(vec![
            Piece::Json {
                path: config,
                pieces: vec![JsonPiece::Server {
                    container: "mcp",
                    value: json!({"type": "local", "command": command, "enabled": true}),
                }],
                skeleton: json!({"$schema": "https://opencode.ai/config.json"}),
                strict: false,
            },
            Piece::Whole {
                path: plugin_dir.join("mailroom.js"),
                contents: plugin(inv),
            },
        ])
    }

    fn server_env_key(&self) -> &'static str {
        "environment"
    }
}

/// The OpenCode plugin: it runs `mailroom hook opencode EVENT` (Claude Code's JSON shape) at
/// the moments OpenCode's plugin API offers (docs: plugins, "Events"):
/// - the session's requests: the SessionStart injection, asked for at its first request and
///   kept in the system prompt (`experimental.chat.system.transform`);
/// - after every tool (`tool.execute.after`): new mail, appended to the tool's output;
/// - when the session goes idle (`session.idle`): the stop reminder, sent once as a new prompt
///   (`client.session.prompt`).
fn plugin(inv: &Invocation) -> String {
    let mut argv = vec![inv.program.clone()];
    argv.extend(inv.argv(&[]));
    let argv = serde_json::to_string(&argv).unwrap_or_else(|_| "[\"mailroom\"]".into());
    format!(
        r#"// mailroom: delivers your mailroom mail inside OpenCode sessions.
// Written by `mailroom setup opencode`; `mailroom setup opencode --uninstall` removes it.
import {{ spawnSync }} from "node:child_process";

const MAILROOM = {argv};

function hook(event, input) {{
  const [program, ...args] = MAILROOM;
  const run = spawnSync(program, [...args, "hook", "opencode", event], {{
    input: JSON.stringify(input),
    encoding: "utf8",
    timeout: 10000,
  }});
  if (run.status !== 0 || !run.stdout || !run.stdout.trim()) return {{}};
  try {{
    return JSON.parse(run.stdout);
  }} catch {{
    return {{}};
  }}
}}

const context = (answer) => answer?.hookSpecificOutput?.additionalContext;

export const Mailroom = async ({{ client, directory }}) => {{
  // The SessionStart injection, asked for once per session and kept in the system prompt of
  // each of its requests (OpenCode builds the system prompt anew for every request, and its
  // first one may be a side request such as the title).
  const started = new Map();
  const reminded = new Set();
  return {{
    "experimental.chat.system.transform": async (input, output) => {{
      const id = input?.sessionID;
      if (!id) return;
      if (!started.has(id)) {{
        started.set(id, context(hook("SessionStart", {{ cwd: directory, session_id: id }})));
      }}
      const text = started.get(id);
      if (text) output.system.push(text);
    }},
    "tool.execute.after": async (input, output) => {{
      const text = context(hook("PostToolUse", {{ cwd: directory, session_id: input?.sessionID }}));
      if (text && typeof output?.output === "string") output.output += "\n\n" + text;
    }},
    event: async ({{ event }}) => {{
      if (event?.type !== "session.idle") return;
      const id = event.properties?.sessionID;
      if (!id) return;
      const again = reminded.has(id);
      const answer = hook("Stop", {{ cwd: directory, session_id: id, stop_hook_active: again }});
      if (answer?.decision === "block" && answer.reason && !again) {{
        reminded.add(id);
        await client.session.prompt({{ path: {{ id }}, body: {{ parts: [{{ type: "text", text: answer.reason }}] }} }});
      }} else {{
        reminded.delete(id);
      }}
    }},
  }};
}};
"#
    )
}
