//! `setup --check`: what of mailroom is wired into each harness, whether the program its
//! configs name answers, and what a session would see at its start now.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use mailroom_core::Error;
use serde_json::Value;

use super::jsonc::JsonPiece;
use super::{
    Invocation, Piece, Places, Scope, harnesses, is_ours, launch_len, on_path, plan, read_config,
    same, shell_words, toml,
};
use crate::cli::{Cli, SetupArgs};
use crate::context::Env;
use crate::harness::{ALL, Harness};

/// `setup --check`: for each harness and scope, what of mailroom is wired in, whether the
/// program the configs name answers, and what SessionStart would inject here now.
pub(super) fn check(cli: &Cli, env: &Env, args: &SetupArgs, places: &Places) -> Result<()> {
    let list = match args.harness.as_deref() {
        None | Some("all") => ALL.to_vec(),
        Some(n) => harnesses(n, places)?,
    };
    let inv = Invocation {
        program: "mailroom".into(),
        launcher: vec![],
        global: vec![],
        remote: None,
    };
    let mut programs: Vec<Vec<String>> = Vec::new();
    let mut any = false;
    let mut split = 0;
    let mut lines = Vec::new();
    for h in &list {
        for scope in [Scope::Project, Scope::User] {
            if scope == Scope::Project && places.project.is_none() {
                continue;
            }
            let pieces = plan(*h, scope, places, &inv)?;
            // `setup --remote`'s entry: a server over HTTP, and no hooks to look for.
            let remote = pieces.iter().find_map(|piece| {
                let text = read_config(piece.path(), &places.roots()).ok()??;
                remote_entry(piece, &text).map(|r| (piece.path().to_path_buf(), r))
            });
            if let Some((path, (url, var))) = remote {
                any = true;
                let token = match var {
                    Some(v) if std::env::var_os(&v).is_some_and(|t| !t.is_empty()) => {
                        format!("its token from {v} (set here)")
                    }
                    Some(v) => format!("its token from {v} (NOT SET here)"),
                    None => "no token variable named".to_owned(),
                };
                lines.push(format!(
                    "{} ({}): wired in over HTTP: MCP server in {} reaches {url}, {token}; no hooks",
                    h.name(),
                    scope.as_str(),
                    path.display()
                ));
                continue;
            }
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
            lines.push(format!("{} ({}): {state}", h.name(), scope.as_str()));
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
        crate::outln!("program {}: {}", p.join(" "), answers(p));
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
fn wired(
    piece: &Piece,
    text: Option<&str>,
    h: &dyn Harness,
    programs: &mut Vec<Vec<String>>,
) -> bool {
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
                    let argv: Vec<String> = match &s["command"] {
                        Value::String(c) => std::iter::once(c.clone())
                            .chain(
                                s["args"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|a| a.as_str().map(str::to_owned)),
                            )
                            .collect(),
                        Value::Array(a) => a
                            .iter()
                            .filter_map(|a| a.as_str().map(str::to_owned))
                            .collect(),
                        _ => Vec::new(),
                    };
                    let found = !argv.is_empty();
                    if found {
                        programs.push(program_words(argv));
                    }
                    found
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
                                    && let Some(words) = c["command"].as_str().and_then(shell_words)
                                {
                                    programs.push(program_words(words));
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
            let entry = doc.get("mcp_servers").and_then(|s| s.get("mailroom"));
            let server = match entry
                .and_then(|m| m.get("command"))
                .and_then(|c| c.as_str())
            {
                Some(c) => {
                    let args = entry
                        .and_then(|m| m.get("args"))
                        .and_then(|a| a.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_owned));
                    programs.push(program_words(
                        std::iter::once(c.to_owned()).chain(args).collect(),
                    ));
                    true
                }
                None => false,
            };
            server && toml::wired_hooks(&doc, hooks, &|c| is_ours(c, h))
        }
        Piece::Whole { .. } => text.starts_with("// mailroom:"),
    }
}

/// The URL and token variable of a `setup --remote` entry in `text`, the config `piece` names
/// (`url` or Gemini CLI's `httpUrl`; the variable from the `Authorization` header, or Codex's
/// `bearer_token_env_var`).
fn remote_entry(piece: &Piece, text: &str) -> Option<(String, Option<String>)> {
    match piece {
        Piece::Json { pieces, .. } => {
            let container = pieces.iter().find_map(|p| match p {
                JsonPiece::Server { container, .. } => Some(*container),
                JsonPiece::Hooks { .. } => None,
            })?;
            let v = super::jsonc::value_of(text)?;
            let entry = &v[container]["mailroom"];
            let url = entry["url"].as_str().or(entry["httpUrl"].as_str())?;
            let var = entry["headers"]["Authorization"].as_str().and_then(|a| {
                let name = a
                    .strip_prefix("Bearer ${env:")
                    .or_else(|| a.strip_prefix("Bearer ${"))
                    .or_else(|| a.strip_prefix("Bearer {env:"))?
                    .strip_suffix('}')?;
                Some(name.to_owned())
            });
            Some((url.to_owned(), var))
        }
        Piece::Toml { .. } => {
            let doc: ::toml::Table = ::toml::from_str(text).ok()?;
            let entry = doc.get("mcp_servers")?.get("mailroom")?;
            let url = entry.get("url")?.as_str()?.to_owned();
            let var = entry
                .get("bearer_token_env_var")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            Some((url, var))
        }
        Piece::Whole { .. } => None,
    }
}

/// The words of `argv` that start mailroom: the program, and a launcher's words.
fn program_words(mut argv: Vec<String>) -> Vec<String> {
    argv.truncate(launch_len(&argv).unwrap_or(1));
    argv
}

/// The program a config names, when --check may start it: a repository's config names the
/// program, so only a `mailroom` on PATH or at an absolute path is started, or a launcher
/// setup writes (`uvx`, `npx` on PATH, with exactly setup's words for mailroom's package), and
/// a checked-out repository cannot get its own program run by --check. Err: why not.
pub(super) fn answers_safely(program: &str, launcher: &[String]) -> Result<PathBuf, String> {
    if !launcher.is_empty() {
        return on_path(program).ok_or_else(|| {
            format!(
                "{program} is not installed here (not on PATH), so the harness could not start mailroom through it either: not started"
            )
        });
    }
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

/// Whether the program a config names (with a launcher's words) starts and says it is
/// mailroom.
fn answers(words: &[String]) -> String {
    let Some((program, launcher)) = words.split_first() else {
        return "no program named".into();
    };
    let path = match answers_safely(program, launcher) {
        Ok(p) => p,
        Err(why) => return why,
    };
    match std::process::Command::new(&path)
        .args(launcher)
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
    if ctx.store.missing_home()?.is_some() {
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
