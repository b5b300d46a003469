//! `setup --check`'s proof that a harness's hooks and its MCP server open the same mailroom as
//! the same identity: each is started as the harness would start it (the program and flags its
//! config names, the environment the harness gives it) with `whoami --json` in place of its
//! subcommand, and the two answers are compared.
//!
//! Codex starts MCP servers with a filtered environment (codex-rs `rmcp-client`: HOME, LOGNAME,
//! PATH, SHELL, USER, LANG, LC_ALL, TERM, TMPDIR, TZ, plus the entry's `env_vars` and `env`);
//! hooks, and the other harnesses' servers, get the harness's whole environment plus the entry's
//! own `env` (`environment` for OpenCode).

use std::path::Path;

use serde_json::Value;

use super::check::answers_safely;
use super::{Piece, is_ours, launch_len, shell_words};
use crate::harness::Harness;

/// The variables Codex passes an MCP server whatever its entry says.
const CODEX_DEFAULT_ENV: [&str; 10] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// The variables an entry's own `env` may give the program --check starts: those that say
/// which mailroom and identity it opens. A repository's config is not trusted: `LD_PRELOAD`
/// or a `MAILROOM_URL` it names (which would log in to its host with the user's `PGPASSWORD`)
/// never reach a program --check starts.
const PASSED_ENV: [&str; 4] = ["MAILROOM_HOME", "MAILROOM_AS", "HOME", "XDG_DATA_HOME"];

/// How a harness starts mailroom.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Why --check will not start it (the config asks for more than setup ever writes).
    not_started: Option<String>,
    program: String,
    /// The launcher's words naming mailroom's package (`--from mailroom-cli mailroom`).
    launcher: Vec<String>,
    /// The flags before the subcommand (`--as`, `--home`).
    globals: Vec<String>,
    /// Variables the entry sets.
    env: Vec<(String, String)>,
    /// Some: only these variables of the harness's environment reach it (Codex's servers).
    keep: Option<Vec<String>>,
}

/// What one launch opens: the mailroom and the identity.
#[derive(Debug, PartialEq, Eq)]
pub struct View {
    home: String,
    identity: Option<String>,
}

impl std::fmt::Display for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.identity {
            Some(i) => write!(f, "{} as {i}", self.home),
            None => write!(f, "{} with no identity", self.home),
        }
    }
}

/// The MCP server's launch in `text`, the config `piece` names.
pub fn server(h: &dyn Harness, piece: &Piece, text: &str) -> Option<Launch> {
    match piece {
        Piece::Json { pieces, .. } => {
            let v = super::jsonc::value_of(text)?;
            let container = pieces.iter().find_map(|p| match p {
                super::jsonc::JsonPiece::Server { container, .. } => Some(*container),
                _ => None,
            })?;
            let entry = &v[container]["mailroom"];
            let argv: Vec<String> = match &entry["command"] {
                Value::String(c) => std::iter::once(c.clone())
                    .chain(strings(&entry["args"]))
                    .collect(),
                Value::Array(_) => strings(&entry["command"]),
                _ => return None,
            };
            let env_key = h.server_env_key();
            let env = entry[env_key]
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            Some(
                Launch {
                    env,
                    keep: None,
                    ..Launch::of(argv, "mcp")?
                }
                .checked(),
            )
        }
        Piece::Toml { .. } => {
            let doc: toml::Table = toml::from_str(text).ok()?;
            let entry = doc.get("mcp_servers")?.get("mailroom")?;
            let program = entry.get("command")?.as_str()?.to_owned();
            let argv: Vec<String> = std::iter::once(program)
                .chain(
                    entry
                        .get("args")
                        .and_then(|a| a.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.as_str().map(str::to_owned)),
                )
                .collect();
            let env = entry
                .get("env")
                .and_then(|e| e.as_table())
                .map(|t| {
                    t.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            let keep = CODEX_DEFAULT_ENV
                .iter()
                .map(|s| (*s).to_owned())
                .chain(
                    entry
                        .get("env_vars")
                        .and_then(|a| a.as_array())
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.as_str().map(str::to_owned)),
                )
                .collect();
            Some(
                Launch {
                    env,
                    keep: Some(keep),
                    ..Launch::of(argv, "mcp")?
                }
                .checked(),
            )
        }
        Piece::Whole { .. } => None,
    }
}

/// The hooks' launch in `text`: the first hook command of mailroom's, or the plugin's argv.
pub fn hooks(h: &dyn Harness, piece: &Piece, text: &str) -> Option<Launch> {
    let command = match piece {
        Piece::Whole { .. } => {
            // The plugin names its argv on the line `const MAILROOM = [...];`.
            let line = text
                .lines()
                .find_map(|l| l.strip_prefix("const MAILROOM = "))?;
            let argv: Vec<String> = serde_json::from_str(line.trim_end_matches(';')).ok()?;
            return Some(Launch::of(argv, "hook")?.checked());
        }
        Piece::Json { .. } => {
            let v = super::jsonc::value_of(text)?;
            let mut found = None;
            collect_commands(&v["hooks"], &mut |c| {
                if found.is_none() && is_ours(c, h) {
                    found = Some(c.to_owned());
                }
            });
            found?
        }
        Piece::Toml { hooks, .. } if !hooks.is_empty() => {
            let doc: toml::Table = toml::from_str(text).ok()?;
            let v = serde_json::to_value(doc.get("hooks")?).ok()?;
            let mut found = None;
            collect_commands(&v, &mut |c| {
                if found.is_none() && is_ours(c, h) {
                    found = Some(c.to_owned());
                }
            });
            found?
        }
        Piece::Toml { .. } => return None,
    };
    Some(Launch::of(shell_words(&command)?, "hook")?.checked())
}

/// What `launch` opens, run in `cwd`; Err: why it could not be told.
pub fn view(launch: &Launch, cwd: &Path) -> Result<View, String> {
    if let Some(why) = &launch.not_started {
        return Err(why.clone());
    }
    let program = answers_safely(&launch.program, &launch.launcher)?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(&launch.launcher)
        .args(&launch.globals)
        .args(["whoami", "--json"])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    if let Some(keep) = &launch.keep {
        cmd.env_clear();
        for k in keep {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
    }
    cmd.envs(launch.env.iter().map(|(k, v)| (k, v)));
    let out = cmd
        .output()
        .map_err(|e| format!("{} cannot start: {e}", launch.program))?;
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        let err = String::from_utf8_lossy(&out.stderr);
        format!(
            "{} whoami fails: {}",
            launch.program,
            err.lines().next().unwrap_or("no answer")
        )
    })?;
    Ok(View {
        home: v["home"].as_str().unwrap_or("?").to_owned(),
        identity: v["identity"].as_str().map(str::to_owned),
    })
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The words before the last `subcommand`: the global flags setup writes before it.
fn before_subcommand(words: &[String], subcommand: &str) -> Vec<String> {
    match words.iter().rposition(|w| w == subcommand) {
        Some(i) => words[..i].to_vec(),
        None => words.to_vec(),
    }
}

impl Launch {
    /// The launch `words` (program, launcher words, flags, `subcommand` …) name.
    fn of(mut words: Vec<String>, subcommand: &str) -> Option<Launch> {
        if words.is_empty() {
            return None;
        }
        let rest = words.split_off(launch_len(&words).unwrap_or(1));
        let program = words.remove(0);
        Some(Launch {
            program,
            launcher: words,
            globals: before_subcommand(&rest, subcommand),
            ..Launch::default()
        })
    }

    /// `self`, held to what setup itself writes: flags only `--as` and `--home` with their
    /// values, and of the entry's `env` only [`PASSED_ENV`]; anything else and --check does
    /// not start it.
    fn checked(mut self) -> Launch {
        let mut words = self.globals.iter();
        while let Some(flag) = words.next() {
            if !matches!(flag.as_str(), "--as" | "--home") || words.next().is_none() {
                self.not_started = Some(format!(
                    "its config gives {} flags setup does not write: not started",
                    self.program
                ));
                return self;
            }
        }
        if let Some((k, _)) = self.env.iter().find(|(k, _)| k == "MAILROOM_URL") {
            self.not_started = Some(format!(
                "its config sets {k}: a URL from a config is not dialled by --check"
            ));
            return self;
        }
        self.env.retain(|(k, _)| PASSED_ENV.contains(&k.as_str()));
        self
    }
}

/// Every `command` string in a hooks object (`EVENT: [{hooks: [{command}]}]` or flat).
fn collect_commands(v: &Value, found: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(o) => {
            if let Some(c) = o.get("command").and_then(Value::as_str) {
                found(c);
            }
            for x in o.values() {
                collect_commands(x, found);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_commands(x, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(globals: &[&str], env: &[(&str, &str)]) -> Launch {
        Launch {
            program: "mailroom".into(),
            globals: globals.iter().map(|s| (*s).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Launch::default()
        }
        .checked()
    }

    #[test]
    fn only_setups_flags_and_the_variables_naming_a_mailroom_pass() {
        let l = launch(
            &["--as", "a@web", "--home", "/m"],
            &[
                ("MAILROOM_HOME", "/m"),
                ("LD_PRELOAD", "/x.so"),
                ("PATH", "/evil"),
            ],
        );
        assert_eq!(l.not_started, None);
        assert_eq!(l.env, vec![("MAILROOM_HOME".to_owned(), "/m".to_owned())]);
        assert!(
            launch(&["--url", "postgres://h/d"], &[])
                .not_started
                .is_some()
        );
        assert!(launch(&["--as"], &[]).not_started.is_some());
        assert!(
            launch(&[], &[("MAILROOM_URL", "postgres://h/d")])
                .not_started
                .is_some()
        );
    }
}
