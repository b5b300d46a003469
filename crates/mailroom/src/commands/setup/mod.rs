//! `setup HARNESS [--project|--user] [--dry-run] [--uninstall]` and `setup --check`: wires
//! mailroom into a harness's own config files (its MCP server entry and its hooks), editing them
//! in place, printing the unified diff, and taking out exactly what it added.
//!
//! Every file location, format and event name below comes from the harness's documentation or
//! its installed package, cited beside the code that writes it.

mod jsonc;
mod record;
mod same;
mod toml;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use mailroom_core::Error;
use serde_json::{Value, json};

use self::jsonc::{HookEntry, JsonPiece};
use self::record::{Record, Records, Replaced};
use crate::cli::{Cli, SetupArgs};
use crate::commands::hook::Harness;
use crate::context::Env;
use mailroom_core::ops::HookEvent;

const ALL: [Harness; 5] = [
    Harness::Claude,
    Harness::Codex,
    Harness::Gemini,
    Harness::Opencode,
    Harness::Cursor,
];

/// The most of a harness config file setup reads (Claude Code's `~/.claude.json` grows with
/// its history; a few megabytes is plenty).
const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Project,
    User,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// Where the user's and the project's config files are.
struct Places {
    home: PathBuf,
    /// The git checkout's top level, for project scope.
    project: Option<PathBuf>,
    codex_home: PathBuf,
    xdg_config: PathBuf,
}

impl Places {
    /// The folders whose config files setup edits live below: HOME, and the project.
    fn roots(&self) -> Vec<&Path> {
        std::iter::once(self.home.as_path())
            .chain(self.project.as_deref())
            .collect()
    }

    fn from_env(env: &Env) -> Result<Places> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::Invalid(
                    "HOME is not set; setup needs it to find the harnesses' config files".into(),
                )
            })?;
        let project = env
            .cwd
            .as_deref()
            .and_then(|cwd| cwd.ancestors().find(|d| d.join(".git").exists()))
            .map(Path::to_path_buf);
        // Codex: "CODEX_HOME ... defaults to ~/.codex" (docs/config.md).
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".codex"));
        // OpenCode reads its global config from the XDG config directory (docs/config:
        // `~/.config/opencode/opencode.json`).
        let xdg_config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        Ok(Places {
            home,
            project,
            codex_home,
            xdg_config,
        })
    }
}

/// How the configs will start mailroom.
struct Invocation {
    /// The program (`mailroom`, or an absolute path).
    program: String,
    /// Global flags written before the subcommand (`--as`, `--home`) when setup was given them.
    global: Vec<String>,
}

impl Invocation {
    fn argv(&self, rest: &[&str]) -> Vec<String> {
        let mut v = self.global.clone();
        v.extend(rest.iter().map(|s| (*s).to_owned()));
        v
    }

    /// A shell command line (hooks are run by a shell).
    fn command(&self, rest: &[&str]) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.global.iter().map(String::as_str))
            .chain(rest.iter().copied())
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./@=:+,".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether a hook command is one mailroom wrote for `harness`: its program is a `mailroom`
/// binary and it ends in `hook HARNESS EVENT`.
fn is_ours(command: &str, harness: Harness) -> bool {
    let Some(words) = shell_words(command) else {
        return false;
    };
    let Some(program) = words.first() else {
        return false;
    };
    let named = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "mailroom");
    let n = words.len();
    named && n >= 4 && words[n - 3] == "hook" && words[n - 2] == harness_name(harness)
}

/// The words a POSIX shell would split a simple command into (quotes and backslashes
/// resolved), so a program path with spaces, quoted by `shell_quote`, is still one word.
/// None for what is not a plain command (an unclosed quote, `;`, `|`, `&`, `$`, a backtick,
/// a redirection): such a line is never one mailroom wrote.
fn shell_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            '\n' => {}
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => word.get_or_insert_with(String::new).push(c),
            },
            ';' | '|' | '&' | '$' | '`' | '<' | '>' | '(' | ')' => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

fn harness_name(h: Harness) -> &'static str {
    match h {
        Harness::Claude => "claude",
        Harness::Codex => "codex",
        Harness::Gemini => "gemini",
        Harness::Cursor => "cursor",
        Harness::Opencode => "opencode",
    }
}

/// One file setup keeps something in.
enum Piece {
    Json {
        path: PathBuf,
        pieces: Vec<JsonPiece>,
        /// What a file setup creates starts as (Cursor's hooks.json has a `version`).
        skeleton: Value,
        /// The harness parses it as plain JSON: comments or trailing commas would make it
        /// drop the whole file, so setup refuses to add to such a file.
        strict: bool,
    },
    /// Codex's `config.toml`: `[mcp_servers.mailroom]`, and the hooks when the user keeps
    /// theirs there.
    Toml {
        path: PathBuf,
        command: String,
        args: Vec<String>,
        hooks: Vec<HookEntry>,
    },
    /// A file that is mailroom's alone (OpenCode's plugin).
    Whole { path: PathBuf, contents: String },
}

impl Piece {
    fn path(&self) -> &Path {
        match self {
            Piece::Json { path, .. } | Piece::Toml { path, .. } | Piece::Whole { path, .. } => path,
        }
    }
}

/// The events mailroom hooks, in each harness's own names, with their matchers.
fn hook_entries(
    harness: Harness,
    inv: &Invocation,
    events: &[(HookEvent, Option<&'static str>)],
) -> Vec<HookEntry> {
    events
        .iter()
        .map(|(event, matcher)| {
            let name = harness.event_name(*event);
            HookEntry {
                event: name,
                matcher: *matcher,
                command: inv.command(&["hook", harness_name(harness), name]),
                extra: if harness == Harness::Gemini {
                    vec![("name", json!(format!("mailroom-{name}")))]
                } else {
                    vec![]
                },
            }
        })
        .collect()
}

/// What setup keeps for `harness` at `scope`.
fn plan(harness: Harness, scope: Scope, places: &Places, inv: &Invocation) -> Result<Vec<Piece>> {
    let root = match scope {
        Scope::Project => places.project.clone().ok_or_else(|| {
            Error::Invalid(
                "not inside a git checkout, so there is no project to set up; run it in your repository, or use --user"
                    .into(),
            )
        })?,
        Scope::User => places.home.clone(),
    };
    let mcp_argv = inv.argv(&["mcp"]);
    let stdio = json!({"command": inv.program, "args": mcp_argv});
    use HookEvent::*;
    Ok(match harness {
        Harness::Claude => {
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
            let mut server = stdio.clone();
            server["type"] = json!("stdio");
            let server =
                json!({"type": "stdio", "command": server["command"], "args": server["args"]});
            vec![
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
                            harness,
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
            ]
        }
        Harness::Codex => {
            // Codex (docs: config-reference, "mcp_servers"): `[mcp_servers.NAME]` with
            // `command` and `args` in `~/.codex/config.toml`, or `.codex/config.toml` in a
            // trusted project.
            let dir = match scope {
                Scope::Project => root.join(".codex"),
                Scope::User => places.codex_home.clone(),
            };
            // Codex hooks (docs: hooks, "Where Codex looks for hooks"): `hooks.json` next to
            // the active config layer (`~/.codex/hooks.json`, `<repo>/.codex/hooks.json`), or
            // `[hooks]` tables inside `config.toml`, in Claude Code's shape (`[[hooks.EVENT]]`
            // a matcher group, `[[hooks.EVENT.hooks]]` a command); events SessionStart,
            // UserPromptSubmit, PostToolUse, Stop. Codex warns when both forms hold hooks
            // ("prefer a single representation"): mailroom's go where the user keeps theirs,
            // `config.toml` when it has hooks and there is no `hooks.json`.
            let config = dir.join("config.toml");
            let hooks_json = dir.join("hooks.json");
            let events = hook_entries(
                harness,
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
            if in_toml {
                vec![Piece::Toml {
                    path: config,
                    command: inv.program.clone(),
                    args: mcp_argv,
                    hooks: events,
                }]
            } else {
                vec![
                    Piece::Toml {
                        path: config,
                        command: inv.program.clone(),
                        args: mcp_argv,
                        hooks: Vec::new(),
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
            }
        }
        Harness::Gemini => {
            // Gemini CLI (docs: cli/settings; docs/tools/mcp-server): `.gemini/settings.json`
            // (project) or `~/.gemini/settings.json` (user); `mcpServers.NAME` with `command`
            // and `args`. Hooks (docs/hooks/reference.md): `hooks.EVENT` is a list of
            // `{"matcher", "hooks": [{"type": "command", "command", "name"}]}`; the events
            // that can add context are SessionStart, BeforeAgent and AfterTool, and AfterAgent
            // can send the agent back to work.
            vec![Piece::Json {
                path: root.join(".gemini").join("settings.json"),
                pieces: vec![
                    JsonPiece::Server {
                        container: "mcpServers",
                        value: stdio,
                    },
                    JsonPiece::Hooks {
                        flat: false,
                        events: hook_entries(
                            harness,
                            inv,
                            &[
                                (SessionStart, None),
                                (UserPromptSubmit, None),
                                (PostToolUse, None),
                                (Stop, None),
                            ],
                        ),
                    },
                ],
                skeleton: json!({}),
                strict: false,
            }]
        }
        Harness::Cursor => {
            // Cursor (docs: context/mcp): `.cursor/mcp.json` (project) or `~/.cursor/mcp.json`
            // (global), `mcpServers.NAME` with `command` and `args`. Hooks (docs: agent/hooks):
            // `.cursor/hooks.json` or `~/.cursor/hooks.json`, `{"version": 1, "hooks": {EVENT:
            // [{"command"}]}}`; sessionStart and postToolUse can add context, stop can send a
            // follow-up message. beforeSubmitPrompt cannot add context, so it is not hooked.
            let dir = root.join(".cursor");
            vec![
                Piece::Json {
                    path: dir.join("mcp.json"),
                    pieces: vec![JsonPiece::Server {
                        container: "mcpServers",
                        value: stdio,
                    }],
                    skeleton: json!({}),
                    strict: false,
                },
                Piece::Json {
                    path: dir.join("hooks.json"),
                    pieces: vec![JsonPiece::Hooks {
                        flat: true,
                        events: hook_entries(
                            harness,
                            inv,
                            &[(SessionStart, None), (PostToolUse, None), (Stop, None)],
                        ),
                    }],
                    skeleton: json!({"version": 1}),
                    strict: false,
                },
            ]
        }
        Harness::Opencode => {
            // OpenCode (docs: config): `opencode.json` at the project root, or
            // `~/.config/opencode/opencode.json`; MCP (docs: mcp-servers): `mcp.NAME` =
            // `{"type": "local", "command": [program, args...], "enabled": true}`.
            let (config_dir, plugin_dir) = match scope {
                Scope::Project => (root.clone(), root.join(".opencode").join("plugins")),
                Scope::User => {
                    let d = places.xdg_config.join("opencode");
                    (d.clone(), d.join("plugins"))
                }
            };
            let config = ["opencode.jsonc", "opencode.json"]
                .iter()
                .map(|n| config_dir.join(n))
                .find(|p| p.exists())
                .unwrap_or_else(|| config_dir.join("opencode.json"));
            let mut command = vec![inv.program.clone()];
            command.extend(mcp_argv);
            // OpenCode has no shell hooks; it loads every JS/TS file in `.opencode/plugins/`
            // (project) or `~/.config/opencode/plugins/` (docs: plugins, "From local files").
            vec![
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
                    contents: opencode_plugin(inv),
                },
            ]
        }
    })
}

/// The OpenCode plugin: it runs `mailroom hook opencode EVENT` (Claude Code's JSON shape) at
/// the moments OpenCode's plugin API offers (docs: plugins, "Events"):
/// - the session's requests: the SessionStart injection, asked for at its first request and
///   kept in the system prompt (`experimental.chat.system.transform`);
/// - after every tool (`tool.execute.after`): new mail, appended to the tool's output;
/// - when the session goes idle (`session.idle`): the stop reminder, sent once as a new prompt
///   (`client.session.prompt`).
fn opencode_plugin(inv: &Invocation) -> String {
    let mut argv = vec![inv.program.clone()];
    argv.extend(inv.global.iter().cloned());
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

/// What a file holds now: None when absent. Refuses symlinks and what is not a regular file.
fn read_config(path: &Path, roots: &[&Path]) -> Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::Refused(format!(
                "{} is a symbolic link; setup does not write through links (edit the file it points to yourself, or replace the link with a file)",
                path.display()
            ))
            .into());
        }
        Ok(_) => {}
    }
    // The folders between the scope's root (the project, or HOME) and the file are the
    // harness's own (`.claude`, `.opencode/plugins`, `.config/opencode/plugins`): none may be a
    // link. The XDG `.config`, shared by every program, and the root and above are the user's.
    let root = roots
        .iter()
        .filter(|r| path.starts_with(r) && path != **r)
        .max_by_key(|r| r.components().count());
    let between: Vec<&Path> = match root {
        Some(root) => path.ancestors().skip(1).take_while(|d| d != root).collect(),
        None => path.parent().into_iter().collect(),
    };
    for dir in between {
        let dotted = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if root.is_none() && !dotted || dir.file_name().is_some_and(|n| n == ".config") {
            continue;
        }
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::Refused(format!(
                "{} is a symbolic link; setup does not write through links and changed nothing (edit the files it points to yourself, or replace the link with a folder)",
                dir.display()
            ))
            .into());
        }
    }
    match crate::files::read_regular(path, MAX_CONFIG_BYTES, false) {
        Ok(c) => String::from_utf8(c.bytes).map(Some).map_err(|_| {
            Error::Invalid(format!(
                "{} is not UTF-8 text; setup changed nothing (fix or move the file)",
                path.display()
            ))
            .into()
        }),
        Err(crate::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Invalid(format!(
            "{} {}; setup changed nothing",
            path.display(),
            e.reason()
        ))
        .into()),
    }
}

/// What setup does to one file: its text before and after, what its record becomes.
struct Change {
    harness: Harness,
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
    record: Option<Record>,
    /// The record as it was (a new one replaces it; on --uninstall it goes).
    had_record: bool,
    /// Folders to remove when empty once the file is written (--uninstall: those setup made).
    dirs: Vec<PathBuf>,
}

/// The new text of the file `pieces` (all at one path) live in, and its record.
fn plan_file(
    harness: Harness,
    path: &Path,
    pieces: &[&Piece],
    current: Option<String>,
    records: &Records,
    args: &SetupArgs,
) -> Result<Change> {
    let rec = records.get(path);
    let had_record = rec.is_some();
    let unparsable = |e: anyhow::Error| -> anyhow::Error {
        if let Some(f) = e.downcast_ref::<jsonc::Foreign>() {
            return Error::Refused(format!(
                "{} cannot be set up: {f}; setup changed nothing (keep yours, or run again with --replace: setup's entry takes its place and --uninstall puts yours back)",
                path.display()
            ))
            .into();
        }
        Error::Invalid(format!(
            "{} cannot be edited: {e:#}; setup changed nothing (fix the file, or move it away)",
            path.display()
        ))
        .into()
    };
    let crlf = current.as_deref().is_some_and(|t| t.contains("\r\n"));
    if args.uninstall {
        let after = match &rec {
            // As setup left it: its bytes from before setup, whole.
            Some(r) if current.as_deref() == Some(r.after.as_str()) => r.before.clone(),
            _ => {
                let before_value = rec
                    .as_ref()
                    .map(|r| r.before.as_deref().and_then(jsonc::value_of));
                let known = match &rec {
                    Some(r) => jsonc::Known {
                        server: r.server,
                        hooks: &r.hooks,
                        replaced: &r.replaced,
                        before: Some(before_value.as_ref().and_then(|b| b.as_ref())),
                    },
                    None => jsonc::Known::default(),
                };
                let mut text = current.clone();
                for piece in pieces {
                    text = remove_piece(piece, text.as_deref(), &known, rec.as_ref())
                        .map_err(unparsable)?;
                }
                text.map(|t| line_ends(t, crlf))
            }
        };
        return Ok(Change {
            harness,
            path: path.to_path_buf(),
            before: current,
            after,
            record: None,
            had_record,
            dirs: rec.map(|r| r.dirs).unwrap_or_default(),
        });
    }
    let known = match &rec {
        Some(r) => jsonc::Known {
            server: r.server,
            hooks: &r.hooks,
            replaced: &[],
            before: None,
        },
        None => jsonc::Known::default(),
    };
    let mut text = current.clone();
    let mut replaced: Vec<Replaced> = Vec::new();
    let mut hooks: Vec<Value> = Vec::new();
    let mut server = false;
    for piece in pieces {
        let added =
            add_piece(piece, text.as_deref(), &known, args.replace, harness).map_err(unparsable)?;
        text = Some(added.text);
        replaced.extend(added.replaced);
        hooks.extend(added.hooks);
        server |= added.server;
    }
    let after = text.map(|t| line_ends(t, crlf));
    let record = if after == current {
        rec
    } else {
        // The file as it would be without setup: its bytes from before setup while it is as
        // setup left it, else what taking setup's entries out of it now gives.
        let (before, mut dirs, mut kept) = match rec {
            Some(r) if current.as_deref() == Some(r.after.as_str()) => {
                (r.before, r.dirs, r.replaced)
            }
            Some(r) => {
                let before_value = r.before.as_deref().and_then(jsonc::value_of);
                let known = jsonc::Known {
                    server: r.server,
                    hooks: &r.hooks,
                    replaced: &r.replaced,
                    before: Some(before_value.as_ref()),
                };
                let mut t = current.clone();
                for piece in pieces {
                    t = remove_piece(piece, t.as_deref(), &known, Some(&r)).map_err(unparsable)?;
                }
                (t, r.dirs, r.replaced)
            }
            None => (current.clone(), Vec::new(), Vec::new()),
        };
        for r in replaced {
            if !kept.contains(&r) {
                kept.push(r);
            }
        }
        dirs.extend(missing_dirs(path));
        Some(Record {
            path: path.to_path_buf(),
            before,
            after: after.clone().unwrap_or_default(),
            dirs,
            replaced: kept,
            hooks,
            server,
        })
    };
    Ok(Change {
        harness,
        path: path.to_path_buf(),
        before: current,
        after,
        record,
        had_record,
        dirs: Vec::new(),
    })
}

/// `text` with the line ends the file had: CRLF throughout when it had CRLF.
fn line_ends(text: String, crlf: bool) -> String {
    if crlf {
        text.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        text
    }
}

/// The folders above `path` that do not exist yet, outermost first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

fn add_piece(
    piece: &Piece,
    text: Option<&str>,
    known: &jsonc::Known,
    replace: bool,
    harness: Harness,
) -> Result<jsonc::Added> {
    match piece {
        Piece::Json {
            pieces,
            skeleton,
            strict,
            ..
        } => jsonc::add(text, pieces, skeleton, *strict, known, replace, &|c| {
            is_ours(c, harness)
        }),
        Piece::Toml {
            command,
            args,
            hooks,
            ..
        } => toml::add(text, command, args, hooks, known, replace, &|c| {
            is_ours(c, harness)
        }),
        Piece::Whole { contents, .. } => match text {
            Some(t) if !t.starts_with("// mailroom:") => {
                Err(anyhow!("it exists and was not written by mailroom"))
            }
            _ => Ok(jsonc::Added {
                text: contents.clone(),
                replaced: Vec::new(),
                hooks: Vec::new(),
                server: false,
            }),
        },
    }
}

fn remove_piece(
    piece: &Piece,
    text: Option<&str>,
    known: &jsonc::Known,
    rec: Option<&Record>,
) -> Result<Option<String>> {
    match piece {
        Piece::Json {
            pieces,
            skeleton,
            strict,
            ..
        } => jsonc::remove(text, pieces, skeleton, *strict, known),
        Piece::Toml {
            command,
            args,
            hooks,
            ..
        } => toml::remove(text, command, args, hooks, rec),
        // Only the file mailroom wrote goes: its first line says so.
        Piece::Whole { .. } => Ok(match text {
            Some(t) if t.starts_with("// mailroom:") => None,
            other => other.map(str::to_owned),
        }),
    }
}

/// Whether a write to `path` would fail for what it is (checked before anything is written):
/// a read-only file, or a file or folder the system will not let this process change.
fn check_writable(path: &Path) -> Result<()> {
    use rustix::fs::Access;
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let mode = m.permissions().mode() & 0o7777;
        if mode & 0o200 == 0 {
            return Err(Error::Refused(format!(
                "{} is read-only (mode {mode:04o}); setup changed nothing (make it writable with chmod u+w, or leave mailroom out of it)",
                path.display()
            ))
            .into());
        }
        if rustix::fs::access(path, Access::WRITE_OK).is_err() {
            return Err(Error::Refused(format!(
                "{} cannot be written (the system refuses it, e.g. an immutable file); setup changed nothing",
                path.display()
            ))
            .into());
        }
    }
    // The folder it is in, or the nearest that exists, must take a new file.
    if let Some(dir) = path.ancestors().skip(1).find(|d| d.exists())
        && rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).is_err()
    {
        return Err(Error::Refused(format!(
            "{} cannot be written: the folder {} does not let this user change it; setup changed nothing",
            path.display(),
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// A file's new text, in a temporary file beside it until `commit`.
struct Staged {
    path: PathBuf,
    tmp: Option<tempfile::NamedTempFile>,
}

/// Writes `text` into a temporary file in `path`'s folder (creating the folder), with `path`'s
/// mode (or `mode` for a new file). None: `path` is to be removed.
fn stage(path: &Path, text: Option<&str>, mode: u32) -> Result<Staged> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let Some(text) = text else {
        return Ok(Staged {
            path: path.to_path_buf(),
            tmp: None,
        });
    };
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent folder", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions())
        .unwrap_or_else(|_| std::fs::Permissions::from_mode(mode));
    std::fs::set_permissions(tmp.path(), mode)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Staged {
        path: path.to_path_buf(),
        tmp: Some(tmp),
    })
}

impl Staged {
    fn commit(self) -> Result<()> {
        match self.tmp {
            Some(tmp) => tmp
                .persist(&self.path)
                .map(drop)
                .map_err(|e| e.error)
                .with_context(|| format!("cannot write {}", self.path.display())),
            None => match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("cannot remove {}", self.path.display()))
                }
                _ => Ok(()),
            },
        }
    }
}

/// Writes through a temporary file in the same folder and a rename, keeping the old mode
/// (`mode` for a new file); None removes the file.
fn write_file(path: &Path, text: Option<&str>, mode: u32) -> Result<()> {
    stage(path, text, mode)?.commit()
}

fn unified_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let shown = path.display().to_string();
    let (a, b) = (before.unwrap_or_default(), after.unwrap_or_default());
    let diff = similar::TextDiff::from_lines(a, b);
    let old = if before.is_some() {
        shown.clone()
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        shown.clone()
    } else {
        "/dev/null".into()
    };
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Finds `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .filter(|d| d.is_absolute())
            .map(|d| d.join(name))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

fn invocation(cli: &Cli, args: &SetupArgs, scope: Scope) -> Result<Invocation> {
    if cli.url.is_some() {
        // Ignoring it would wire the harness to another mailroom than the one named; writing
        // it would copy a password into files that are often committed.
        return Err(Error::Invalid(
            "setup does not write --url into the harness's configs (a URL may carry a password); put url = \"postgres://...\" in the repository's .mailroom.toml or set MAILROOM_URL, which the hooks and the MCP server read".into(),
        )
        .into());
    }
    let program = match &args.binary {
        Some(b) => {
            use std::os::unix::fs::PermissionsExt as _;
            if !b.is_absolute() {
                return Err(Error::Invalid(format!(
                    "--binary {} is not an absolute path; the harness starts it from anywhere",
                    b.display()
                ))
                .into());
            }
            if !std::fs::metadata(b)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            {
                return Err(Error::Invalid(format!(
                    "--binary {} is not an executable file",
                    b.display()
                ))
                .into());
            }
            b.to_str()
                .ok_or_else(|| Error::Invalid(format!("--binary {} is not UTF-8", b.display())))?
                .to_owned()
        }
        None => {
            if on_path("mailroom").is_none() {
                let here = std::env::current_exe()
                    .ok()
                    .and_then(|p| std::fs::canonicalize(p).ok())
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "/path/to/mailroom".into());
                return Err(Error::Invalid(format!(
                    "`mailroom` is not on PATH, so the harness could not start it; put it on PATH, or run again with --binary {}",
                    shell_quote(&here)
                ))
                .into());
            }
            "mailroom".to_owned()
        }
    };
    let mut global = Vec::new();
    if let Some(who) = &cli.as_ {
        // Written into the harness's config: checked now, not at the harness's first start.
        let spec = mailroom_core::address::AddressSpec::parse(who).map_err(|source| {
            Error::InvalidAddress {
                input: who.clone(),
                source,
            }
        })?;
        // The operator's identity in a config makes every session of that harness the
        // operator: never in a project's files, which are committed and shared; in the user's
        // own only when asked for by name.
        if spec.is_human() {
            match scope {
                Scope::Project => {
                    return Err(Error::Refused(
                        "setup does not write the operator's identity (--as HUMAN) into a project's config files, which are committed and shared; set up an agent's address, or use --user --operator for your own config".into(),
                    )
                    .into());
                }
                Scope::User if !args.operator => {
                    return Err(Error::Refused(
                        "--as HUMAN would make every session of this harness act as the operator; add --operator to say so".into(),
                    )
                    .into());
                }
                Scope::User => {}
            }
        }
        global.extend(["--as".to_owned(), who.clone()]);
    }
    if let Some(home) = &cli.home {
        let home = std::path::absolute(home).unwrap_or_else(|_| home.clone());
        global.extend([
            "--home".to_owned(),
            home.to_str()
                .ok_or_else(|| Error::Invalid("--home is not UTF-8".into()))?
                .to_owned(),
        ]);
    }
    Ok(Invocation { program, global })
}

/// Whether a harness is on this machine: its program on PATH, or its user config folder.
fn installed(h: Harness, places: &Places) -> bool {
    let (programs, dir): (&[&str], PathBuf) = match h {
        Harness::Claude => (&["claude"], places.home.join(".claude")),
        Harness::Codex => (&["codex"], places.codex_home.clone()),
        Harness::Gemini => (&["gemini"], places.home.join(".gemini")),
        Harness::Opencode => (&["opencode"], places.xdg_config.join("opencode")),
        Harness::Cursor => (&["cursor", "cursor-agent"], places.home.join(".cursor")),
    };
    dir.is_dir() || programs.iter().any(|p| on_path(p).is_some())
}

fn harnesses(name: &str, places: &Places) -> Result<Vec<Harness>> {
    if name == "all" {
        let found: Vec<Harness> = ALL.into_iter().filter(|h| installed(*h, places)).collect();
        if found.is_empty() {
            return Err(Error::NotFound(
                "no harness found on this machine (claude, codex, gemini, opencode, cursor: none on PATH, no config folder); name one to set it up anyway".into(),
            )
            .into());
        }
        return Ok(found);
    }
    Harness::parse(name).map(|h| vec![h]).ok_or_else(|| {
        Error::Invalid(format!(
            "unknown harness '{name}'; use claude, codex, gemini, opencode, cursor or all"
        ))
        .into()
    })
}

pub fn setup(cli: &Cli, env: &Env, args: &SetupArgs) -> Result<()> {
    let places = Places::from_env(env)?;
    if args.check {
        return check(cli, env, args, &places);
    }
    let Some(name) = args.harness.as_deref() else {
        return Err(Error::Invalid(
            "name a harness (claude, codex, gemini, opencode, cursor or all), or use --check"
                .into(),
        )
        .into());
    };
    let scope = scope(cli, args)?;
    let list = harnesses(name, &places)?;
    let inv = invocation(cli, args, scope)?;
    let records = Records::new(&places.home);
    // Everything is read, parsed and edited before the first write: a refusal anywhere
    // changes nothing anywhere.
    let mut changes: Vec<Change> = Vec::new();
    for h in &list {
        let pieces = plan(*h, scope, &places, &inv)?;
        let mut paths: Vec<&Path> = Vec::new();
        for piece in &pieces {
            if !paths.contains(&piece.path()) {
                paths.push(piece.path());
            }
        }
        for path in paths {
            if changes.iter().any(|c| c.path == path) {
                continue;
            }
            let mine: Vec<&Piece> = pieces.iter().filter(|p| p.path() == path).collect();
            let current = read_config(path, &places.roots())?;
            changes.push(plan_file(*h, path, &mine, current, &records, args)?);
        }
    }
    if !args.dry_run {
        for c in changes.iter().filter(|c| c.before != c.after) {
            check_writable(&c.path)?;
        }
    }
    let mut report = Vec::new();
    let mut text = Vec::new();
    for h in &list {
        let mine: Vec<&Change> = changes
            .iter()
            .filter(|c| c.harness == *h && c.before != c.after)
            .collect();
        let mut files = Vec::new();
        for c in &mine {
            let (path, before, after) = (&c.path, &c.before, &c.after);
            let diff = unified_diff(path, before.as_deref(), after.as_deref());
            text.push(diff.trim_end().to_owned());
            files.push(json!({"path": path, "diff": diff}));
        }
        let (status, verb) = match (mine.is_empty(), args.uninstall, args.dry_run) {
            (true, false, _) => ("unchanged", "already set up: nothing to change".to_owned()),
            (true, true, _) => (
                "unchanged",
                "nothing of mailroom's there: nothing to change".to_owned(),
            ),
            (false, u, d) => (
                if d {
                    "dry_run"
                } else if u {
                    "removed"
                } else {
                    "changed"
                },
                format!(
                    "{} {} file{}{}",
                    if d {
                        "would change"
                    } else if u {
                        "removed from"
                    } else {
                        "changed"
                    },
                    mine.len(),
                    if mine.len() == 1 { "" } else { "s" },
                    if d { " (dry run: nothing written)" } else { "" }
                ),
            ),
        };
        report.push(json!({"harness": harness_name(*h), "scope": scope.as_str(),
            "status": status, "files": files}));
        text.push(format!("{} ({}): {verb}", harness_name(*h), scope.as_str()));
    }
    if !args.dry_run {
        write_all(&changes, &records)?;
    }
    if cli.json {
        crate::output::print_json(&json!({ "harnesses": report }));
        return Ok(());
    }
    for line in &text {
        crate::outln!("{line}");
    }
    if args.dry_run {
        return Ok(());
    }
    if !args.uninstall && changes.iter().any(|c| c.before != c.after) {
        let notes: Vec<&str> = list
            .iter()
            .filter_map(|h| match (h, scope) {
                (Harness::Codex, Scope::Project) => {
                    Some("codex reads .codex/ only in a project you trust")
                }
                (Harness::Claude, Scope::Project) => {
                    Some("claude asks once before it starts a server from .mcp.json")
                }
                _ => None,
            })
            .collect();
        for n in notes {
            crate::outln!("note: {n}");
        }
    }
    Ok(())
}

/// Writes every change or none: each new text is staged in a temporary file beside its file
/// first (a folder that refuses it fails here, before anything changed), then the records, then
/// the renames; a rename that still fails puts back the files already renamed.
fn write_all(changes: &[Change], records: &Records) -> Result<()> {
    let mut staged = Vec::new();
    let mut made: Vec<PathBuf> = Vec::new();
    let changed: Vec<&Change> = changes.iter().filter(|c| c.before != c.after).collect();
    for c in &changed {
        made.extend(missing_dirs(&c.path));
        match stage(&c.path, c.after.as_deref(), 0o644) {
            Ok(s) => staged.push(s),
            Err(e) => {
                drop(staged);
                remove_empty(&made);
                return Err(e.context("setup changed nothing"));
            }
        }
    }
    // A record goes with its file's change, and on --uninstall even when the file is gone.
    for c in changes
        .iter()
        .filter(|c| c.before != c.after || (c.had_record && c.record.is_none()))
    {
        let kept = match &c.record {
            Some(r) => records.put(r),
            None if c.had_record => records.remove(&c.path),
            None => Ok(()),
        };
        if let Err(e) = kept {
            drop(staged);
            remove_empty(&made);
            return Err(e.context("setup changed nothing"));
        }
    }
    for (i, s) in staged.into_iter().enumerate() {
        if let Err(e) = s.commit() {
            for c in &changed[..i] {
                let _ = write_file(&c.path, c.before.as_deref(), 0o644);
            }
            return Err(e);
        }
    }
    // The folders setup created for a file it took out again, when nothing else is in them.
    let dirs: Vec<PathBuf> = changed.iter().flat_map(|c| c.dirs.clone()).collect();
    remove_empty(&dirs);
    Ok(())
}

/// Removes the folders of `dirs` (outermost first) that are empty, innermost first.
fn remove_empty(dirs: &[PathBuf]) {
    let mut dirs = dirs.to_vec();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in dirs {
        let _ = std::fs::remove_dir(d);
    }
}

fn scope(cli: &Cli, args: &SetupArgs) -> Result<Scope> {
    // `--project` alone (no value) asks for project scope; a value names a mailroom project,
    // which setup does not take.
    use crate::cli::PROJECT_ALONE;
    match (cli.project.as_deref(), args.user) {
        (Some(PROJECT_ALONE), true) => Err(Error::Invalid("use --project or --user, not both".into()).into()),
        (Some(PROJECT_ALONE), false) | (None, false) => Ok(Scope::Project),
        (None, true) => Ok(Scope::User),
        (Some(p), _) => Err(Error::Invalid(format!(
            "setup takes --project alone (project scope), not a project name ('{p}'); put --project after the harness"
        ))
        .into()),
    }
}

/// `setup --check`: for each harness and scope, what of mailroom is wired in, whether the
/// program the configs name answers, and what SessionStart would inject here now.
fn check(cli: &Cli, env: &Env, args: &SetupArgs, places: &Places) -> Result<()> {
    let list = match args.harness.as_deref() {
        None | Some("all") => ALL.to_vec(),
        Some(n) => harnesses(n, places)?,
    };
    let inv = Invocation {
        program: "mailroom".into(),
        global: vec![],
    };
    let mut programs: Vec<String> = Vec::new();
    let mut any = false;
    let mut split = 0;
    let mut lines = Vec::new();
    for h in &list {
        for scope in [Scope::Project, Scope::User] {
            if scope == Scope::Project && places.project.is_none() {
                continue;
            }
            let pieces = plan(*h, scope, places, &inv)?;
            let mut parts = Vec::new();
            let mut missing = Vec::new();
            let mut server_launch = None;
            let mut hook_launch = None;
            for piece in &pieces {
                let text = match read_config(piece.path(), &places.roots()) {
                    Ok(t) => t,
                    Err(e) => {
                        parts.push(format!("{}: {e:#}", piece.path().display()));
                        continue;
                    }
                };
                let found = wired(piece, text.as_deref(), *h, &mut programs);
                if let Some(t) = text.as_deref() {
                    server_launch = server_launch.or_else(|| same::server(*h, piece, t));
                    hook_launch = hook_launch.or_else(|| same::hooks(*h, piece, t));
                }
                let what = match piece {
                    Piece::Json { pieces, .. } => pieces
                        .iter()
                        .map(|p| match p {
                            JsonPiece::Server { .. } => "MCP server",
                            JsonPiece::Hooks { .. } => "hooks",
                        })
                        .collect::<Vec<_>>()
                        .join(" and "),
                    Piece::Toml { hooks, .. } if hooks.is_empty() => "MCP server".into(),
                    Piece::Toml { .. } => "MCP server and hooks".into(),
                    Piece::Whole { .. } => "plugin".into(),
                };
                let shown = piece.path().display();
                if found {
                    parts.push(format!("{what} in {shown}"));
                } else {
                    missing.push(format!("{what} ({shown})"));
                }
            }
            let state = if missing.is_empty() {
                any = true;
                format!("wired in: {}", parts.join("; "))
            } else if parts.is_empty() {
                "not wired in".to_owned()
            } else {
                any = true;
                format!(
                    "partly wired in: {}; missing: {}",
                    parts.join("; "),
                    missing.join("; ")
                )
            };
            lines.push(format!(
                "{} ({}): {state}",
                harness_name(*h),
                scope.as_str()
            ));
            // One session, one mailroom: the hooks and the MCP server, each started as the
            // harness starts it, must open the same mailroom as the same identity.
            if let (Some(server), Some(hooks)) = (&server_launch, &hook_launch) {
                let cwd = env
                    .cwd
                    .clone()
                    .or_else(|| places.project.clone())
                    .unwrap_or_else(|| places.home.clone());
                let line = match (same::view(hooks, &cwd), same::view(server, &cwd)) {
                    (Ok(a), Ok(b)) if a == b => {
                        format!("  the hooks and the MCP server open the same mailroom: {a}")
                    }
                    (Ok(a), Ok(b)) => {
                        split += 1;
                        format!(
                            "  DIFFERENT MAILROOMS: the hooks open {a}, the MCP server opens {b}"
                        )
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        format!(
                            "  whether the hooks and the MCP server open the same mailroom: not known ({e})"
                        )
                    }
                };
                lines.push(line);
            }
        }
    }
    for l in &lines {
        crate::outln!("{l}");
    }
    programs.sort();
    programs.dedup();
    for p in &programs {
        crate::outln!("program {p}: {}", answers(p));
    }
    // What a session here would see at its start, without marking anything read.
    crate::outln!();
    match preview(cli, env) {
        Ok(Some((me, text))) => {
            crate::outln!("SessionStart injection for {me} now:");
            crate::outln!("{text}");
        }
        Ok(None) => crate::outln!("SessionStart injection: nothing (no pending mail)"),
        Err(e) => crate::outln!("SessionStart injection: none: {e:#}"),
    }
    if !any {
        return Err(Error::NotFound(
            "mailroom is not wired into any harness here; `mailroom setup HARNESS` wires one in"
                .into(),
        )
        .into());
    }
    if split > 0 {
        return Err(Error::Invalid(format!(
            "in {split} wiring{} the hooks and the MCP server open different mailrooms, so an agent would be told of mail its tools cannot read; run `mailroom setup HARNESS` again, or make the environment the same for both",
            if split == 1 { "" } else { "s" }
        ))
        .into());
    }
    Ok(())
}

/// Whether `piece` is in `text` (every event, for hooks); collects the programs named.
fn wired(piece: &Piece, text: Option<&str>, h: Harness, programs: &mut Vec<String>) -> bool {
    let Some(text) = text else { return false };
    match piece {
        Piece::Json { pieces, .. } => {
            let Ok(root) = jsonc_parser::cst::CstRootNode::parse(text, &Default::default()) else {
                return false;
            };
            let Some(v) = root.to_serde_value() else {
                return false;
            };
            pieces.iter().all(|p| match p {
                JsonPiece::Server { container, .. } => {
                    let s = &v[container]["mailroom"];
                    let program = match &s["command"] {
                        Value::String(c) => Some(c.clone()),
                        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_owned),
                        _ => None,
                    };
                    if let Some(p) = &program {
                        programs.push(p.clone());
                    }
                    program.is_some()
                }
                JsonPiece::Hooks { flat, events } => events.iter().all(|e| {
                    v["hooks"][e.event].as_array().is_some_and(|list| {
                        list.iter().any(|item| {
                            let commands: Vec<&Value> = if *flat {
                                vec![item]
                            } else {
                                item["hooks"]
                                    .as_array()
                                    .map(|a| a.iter().collect())
                                    .unwrap_or_default()
                            };
                            commands.iter().any(|c| {
                                let ok = c["command"].as_str().is_some_and(|s| is_ours(s, h));
                                if ok
                                    && let Some(first) = c["command"]
                                        .as_str()
                                        .and_then(shell_words)
                                        .and_then(|w| w.into_iter().next())
                                {
                                    programs.push(first);
                                }
                                ok
                            })
                        })
                    })
                }),
            })
        }
        Piece::Toml { hooks, .. } => {
            let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else {
                return false;
            };
            let server = match doc
                .get("mcp_servers")
                .and_then(|s| s.get("mailroom"))
                .and_then(|m| m.get("command"))
                .and_then(|c| c.as_str())
            {
                Some(c) => {
                    programs.push(c.to_owned());
                    true
                }
                None => false,
            };
            server && toml::wired_hooks(&doc, hooks, &|c| is_ours(c, h))
        }
        Piece::Whole { .. } => text.starts_with("// mailroom:"),
    }
}

/// The program a config names, when --check may start it: a repository's config names the
/// program, so only a `mailroom` on PATH or at an absolute path is started, and a checked-out
/// repository cannot get its own program run by --check. Err: why not.
fn answers_safely(program: &str) -> Result<PathBuf, String> {
    let path = Path::new(program);
    if path.file_name().and_then(|n| n.to_str()) != Some("mailroom") {
        return Err("not a mailroom program: not started".into());
    }
    if program.contains('/') && !path.is_absolute() {
        return Err("a relative path: not started".into());
    }
    let resolved = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        on_path(program)
    };
    resolved.ok_or_else(|| "not found (not on PATH)".into())
}

/// Whether the program a config names starts and says it is mailroom.
fn answers(program: &str) -> String {
    let path = match answers_safely(program) {
        Ok(p) => p,
        Err(why) => return why,
    };
    match std::process::Command::new(&path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {
            let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if v.starts_with("mailroom") {
                format!("answers ({v}) at {}", path.display())
            } else {
                format!("{} answers, but not as mailroom", path.display())
            }
        }
        Ok(out) => format!("{} fails ({})", path.display(), out.status),
        Err(e) => format!("{} cannot start: {e}", path.display()),
    }
}

fn preview(cli: &Cli, env: &Env) -> Result<Option<(String, String)>> {
    let mut ctx = crate::context::Ctx::new_quick(cli, env)?;
    let Some(identity) = ctx.identity()? else {
        return Err(anyhow!(
            "no identity here (not in a git checkout; --as or MAILROOM_AS names one)"
        ));
    };
    if let crate::context::AnyStore::Fs(fs) = &ctx.store
        && !fs.exists()?
    {
        return Ok(None);
    }
    let words = ctx.words()?;
    let text = ctx.mailroom().preview_session_start(
        &identity.address,
        crate::commands::hook::BUDGET,
        &words,
    )?;
    Ok(text.map(|t| (identity.address.to_string(), t)))
}
