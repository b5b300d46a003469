//! `setup HARNESS [--project|--user] [--dry-run] [--uninstall]` and `setup --check`: wires
//! mailroom into a harness's own config files (its MCP server entry and its hooks), editing them
//! in place, printing the unified diff, and taking out exactly what it added.
//!
//! What each harness wants, and where, is its module's under `crate::harness`; this module
//! reads the files, `edit` works out their new text (and, on `--uninstall`, their old),
//! `write` writes them all or none, and `check` reports what is wired in.

mod check;
mod edit;
pub(crate) mod jsonc;
mod record;
mod same;
pub(crate) mod toml;
mod write;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use mailroom_core::Error;
use serde_json::{Value, json};

use self::edit::{Change, plan_file};
use self::jsonc::{HookEntry, JsonPiece};
use self::record::Records;
use crate::cli::{Cli, LauncherArg, SetupArgs};
use crate::context::Env;
use crate::harness::{self, ALL, Harness};

/// The most of a harness config file setup reads (Claude Code's `~/.claude.json` grows with
/// its history; a few megabytes is plenty).
pub(crate) const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
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
pub(crate) struct Places {
    pub(crate) home: PathBuf,
    /// The git checkout's top level, for project scope.
    pub(crate) project: Option<PathBuf>,
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
        Ok(Places { home, project })
    }
}

/// The package both runners fetch: `mailroom-cli` on PyPI and npm, its command `mailroom`.
const PACKAGE: &str = "mailroom-cli";

/// The words that make a package runner start this release of mailroom, pinned to its
/// version so that a harness never runs another release than the one set up: `uvx --from
/// mailroom-cli==VERSION mailroom` (uvx runs a command named as its package unless `--from`
/// names the package) and `npx -y mailroom-cli@VERSION`.
fn launcher_words(l: LauncherArg) -> (&'static str, Vec<String>) {
    let version = env!("CARGO_PKG_VERSION");
    match l {
        LauncherArg::Npx => ("npx", vec!["-y".into(), format!("{PACKAGE}@{version}")]),
        _ => (
            "uvx",
            vec![
                "--from".into(),
                format!("{PACKAGE}=={version}"),
                "mailroom".into(),
            ],
        ),
    }
}

/// Whether `spec` names mailroom's package as a launcher's words do: `mailroom-cli`, or pinned
/// with `sep` to a version (any release's: an entry written by another version of setup).
fn names_package(spec: &str, sep: &str) -> bool {
    match spec.strip_prefix(PACKAGE) {
        Some("") => true,
        Some(rest) => rest.strip_prefix(sep).is_some_and(|v| {
            v.starts_with(|c: char| c.is_ascii_digit())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        }),
        None => false,
    }
}

/// How many of `words` (a command line's, or a config's program and args) start mailroom: one
/// for a program named `mailroom`, the runner and its words for a launcher setup writes
/// (`uvx --from mailroom-cli[==VERSION] mailroom`, `npx -y mailroom-cli[@VERSION]`).
pub(crate) fn launch_len(words: &[String]) -> Option<usize> {
    let program = words.first()?;
    if Path::new(program).file_name().and_then(|n| n.to_str()) == Some("mailroom") {
        return Some(1);
    }
    let rest: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    match (program.as_str(), rest.as_slice()) {
        ("uvx", ["--from", spec, "mailroom", ..]) if names_package(spec, "==") => Some(4),
        ("npx", ["-y", spec, ..]) if names_package(spec, "@") => Some(3),
        _ => None,
    }
}

/// What follows the words that start mailroom in a command line setup writes: the words after
/// `--as ADDRESS` and `--home DIR` (each at most once). None: not a line of setup's.
pub(crate) fn after_globals(words: &[String]) -> Option<&[String]> {
    let mut rest = words.get(launch_len(words)?..)?;
    let mut seen: Vec<&str> = Vec::new();
    while let [flag, value, tail @ ..] = rest
        && matches!(flag.as_str(), "--as" | "--home")
    {
        if seen.contains(&flag.as_str()) || value.starts_with('-') {
            return None;
        }
        seen.push(flag);
        rest = tail;
    }
    Some(rest)
}

/// Whether `argv` (an MCP server entry's program and arguments) is one setup writes, by any
/// version of it and for any install: a program named `mailroom` (bare, or at any absolute
/// path) or a launcher of mailroom's package, setup's flags, and `mcp`.
pub(crate) fn is_our_server(argv: &[String]) -> bool {
    after_globals(argv).is_some_and(|rest| rest == ["mcp"])
}

/// A mailroom MCP server over HTTP (`setup --remote`): its URL, and the environment variable
/// the harness reads the bearer token from.
#[derive(Clone, Debug)]
pub(crate) struct Remote {
    pub(crate) url: String,
    pub(crate) var: String,
}

impl Remote {
    /// The `Authorization` header's value, the variable named as `reference` spells it in the
    /// harness's config (each harness has its own syntax).
    pub(crate) fn bearer(&self, reference: impl Fn(&str) -> String) -> String {
        format!("Bearer {}", reference(&self.var))
    }
}

/// The token variable `setup --remote` names when --token-env does not.
const TOKEN_ENV: &str = "MAILROOM_TOKEN";

/// `--remote URL [--token-env VAR]`, checked: an http(s) URL with a host and no credentials,
/// and a variable name a shell could set. Plain HTTP to another machine is allowed (a
/// private network, a proxy) with a warning: anyone on the path could read the token.
fn remote(url: &str, var: Option<&str>) -> Result<Remote> {
    let bad = |why: &str| -> anyhow::Error {
        Error::Invalid(format!(
            "--remote {url} {why}; give the server's address as mcp --listen printed it, such as https://mail.example.net/mcp"
        ))
        .into()
    };
    let uri: http::Uri = url.parse().map_err(|_| bad("is not a URL"))?;
    let secure = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(bad("is not an http:// or https:// URL")),
    };
    let authority = uri.authority().ok_or_else(|| bad("names no host"))?;
    if authority.as_str().contains('@') {
        return Err(Error::Invalid(format!(
            "--remote {} carries credentials, which setup would write into the config; give the URL without them (the token goes in --token-env's variable)",
            url.split_once("://").map_or("URL", |(s, _)| s).to_owned() + "://…"
        ))
        .into());
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(bad("names no host"));
    }
    let var = var.unwrap_or(TOKEN_ENV);
    if var.is_empty()
        || var.starts_with(|c: char| c.is_ascii_digit())
        || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::Invalid(format!(
            "--token-env {var} is not an environment variable's name; use letters, digits and _, such as {TOKEN_ENV}"
        ))
        .into());
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !secure && !loopback {
        crate::errln!(
            "warning: {url} is plain HTTP to another machine, so anyone on the path can read the token; serve it over HTTPS (mcp --listen with --tls-cert and --tls-key, or a TLS proxy) and use https://"
        );
    }
    Ok(Remote {
        url: url.to_owned(),
        var: var.to_owned(),
    })
}

/// How the configs will start mailroom.
pub(crate) struct Invocation {
    /// The program (`mailroom`, an absolute path, or a launcher such as `uvx`).
    pub(crate) program: String,
    /// The launcher's words naming mailroom's package (empty for a `mailroom` program).
    pub(crate) launcher: Vec<String>,
    /// Global flags written before the subcommand (`--as`, `--home`) when setup was given them.
    pub(crate) global: Vec<String>,
    /// Some: the harness reaches a server over HTTP instead, and nothing starts mailroom.
    pub(crate) remote: Option<Remote>,
}

impl Invocation {
    /// The arguments after the program: the launcher's words, the global flags, `rest`.
    pub(crate) fn argv(&self, rest: &[&str]) -> Vec<String> {
        let mut v = self.launcher.clone();
        v.extend(self.global.iter().cloned());
        v.extend(rest.iter().map(|s| (*s).to_owned()));
        v
    }

    /// A shell command line (hooks are run by a shell).
    pub(crate) fn command(&self, rest: &[&str]) -> String {
        std::iter::once(self.program.clone())
            .chain(self.argv(rest))
            .map(|w| shell_quote(&w))
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
/// binary (or a launcher of mailroom's package), then only setup's flags, then
/// `hook HARNESS EVENT`.
fn is_ours(command: &str, harness: &dyn Harness) -> bool {
    let Some(words) = shell_words(command) else {
        return false;
    };
    matches!(after_globals(&words), Some([hook, name, _event]) if hook == "hook" && name == harness.name())
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

/// One file setup keeps something in.
pub(crate) enum Piece {
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
        /// Some: the server is reached over HTTP (`url`, `bearer_token_env_var`) instead of
        /// started with `command` and `args`.
        remote: Option<Remote>,
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

/// What setup keeps for `harness` at `scope`.
fn plan(
    harness: &dyn Harness,
    scope: Scope,
    places: &Places,
    inv: &Invocation,
) -> Result<Vec<Piece>> {
    let root = match scope {
        Scope::Project => places.project.clone().ok_or_else(|| {
            Error::Invalid(
                "not inside a git checkout, so there is no project to set up; run it in your repository, or use --user"
                    .into(),
            )
        })?,
        Scope::User => places.home.clone(),
    };
    harness.plan(scope, &root, places, inv)
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

pub(crate) fn invocation(cli: &Cli, args: &SetupArgs, scope: Scope) -> Result<Invocation> {
    if cli.url.is_some() {
        // Ignoring it would wire the harness to another mailroom than the one named; writing
        // it would copy a password into files that are often committed.
        return Err(Error::Invalid(
            "setup does not write --url into the harness's configs (a URL may carry a password); put url = \"postgres://...\" in the repository's .mailroom.toml or set MAILROOM_URL, which the hooks and the MCP server read".into(),
        )
        .into());
    }
    if let Some(url) = &args.remote {
        if cli.as_.is_some() || cli.home.is_some() {
            return Err(Error::Invalid(
                "--remote takes no --as or --home: the token names the identity, and the server its mailroom".into(),
            )
            .into());
        }
        return Ok(Invocation {
            program: String::new(),
            launcher: Vec::new(),
            global: Vec::new(),
            remote: Some(remote(url, args.token_env.as_deref())?),
        });
    }
    let mut launcher = Vec::new();
    let program = match (args.launcher, &args.binary) {
        (Some(l @ (LauncherArg::Uvx | LauncherArg::Npx | LauncherArg::PathLookup)), Some(b)) => {
            return Err(Error::Invalid(format!(
                "--binary {} names a program by its path, and --launcher {} starts mailroom another way; use one of them",
                b.display(),
                launcher_name(l)
            ))
            .into());
        }
        (Some(l @ (LauncherArg::Uvx | LauncherArg::Npx)), None) => {
            let (runner, words) = launcher_words(l);
            if !args.uninstall && on_path(runner).is_none() {
                let provider = if runner == "uvx" { "uv" } else { "Node.js" };
                crate::errln!(
                    "warning: {runner} is not on PATH here, so a harness started from this shell could not start mailroom through it either; install {provider}, or choose another --launcher"
                );
            }
            launcher = words;
            runner.to_owned()
        }
        (Some(LauncherArg::PathLookup), None) => {
            if on_path("mailroom").is_none() {
                return Err(Error::Invalid(
                    "`mailroom` is not on PATH, so the harness could not start it as plain `mailroom`; put it on PATH, or leave out --launcher path-lookup to write this program's own path".into(),
                )
                .into());
            }
            "mailroom".to_owned()
        }
        (_, Some(b)) => {
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
        (Some(LauncherArg::Path) | None, None) => own_path()?,
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
    Ok(Invocation {
        program,
        launcher,
        global,
        remote: None,
    })
}

fn launcher_name(l: LauncherArg) -> &'static str {
    match l {
        LauncherArg::Path => "path",
        LauncherArg::PathLookup => "path-lookup",
        LauncherArg::Uvx => "uvx",
        LauncherArg::Npx => "npx",
    }
}

/// This program's own absolute path, links resolved, for the configs to start: a harness's
/// PATH is often not the shell's (an app started from a desktop, a login shell's profile not
/// read), and an absolute path starts the same mailroom whatever it holds.
fn own_path() -> Result<String> {
    let unknown = |why: String| -> anyhow::Error {
        Error::Invalid(format!(
            "cannot tell where this mailroom program is ({why}); name it with --binary PATH, or use --launcher path-lookup to write plain `mailroom`"
        ))
        .into()
    };
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| unknown(e.to_string()))?;
    let text = exe
        .to_str()
        .ok_or_else(|| unknown(format!("{} is not UTF-8", exe.display())))?;
    // A package runner's cache (npx's `_npx`, uv's `archive-v0`) is emptied at its own pace:
    // the path would stop working when it is.
    if exe
        .components()
        .any(|c| matches!(c.as_os_str().to_str(), Some("_npx" | "archive-v0")))
    {
        crate::errln!(
            "warning: this mailroom runs from a package runner's cache ({text}), which may be cleared; run setup again with --launcher uvx or --launcher npx to start it through the runner"
        );
    }
    Ok(text.to_owned())
}

/// Whether a harness is on this machine: its program on PATH, or its user config folder.
fn installed(h: &dyn Harness, places: &Places) -> bool {
    h.user_dir(places).is_dir() || h.programs().iter().any(|p| on_path(p).is_some())
}

fn harnesses(name: &str, places: &Places) -> Result<Vec<&'static dyn Harness>> {
    if name == "all" {
        let found: Vec<&'static dyn Harness> =
            ALL.into_iter().filter(|h| installed(*h, places)).collect();
        if found.is_empty() {
            return Err(Error::NotFound(format!(
                "no harness found on this machine ({}: none on PATH, no config folder); name one to set it up anyway",
                harness::names(", ")
            ))
            .into());
        }
        return Ok(found);
    }
    harness::parse(name).map(|h| vec![h]).ok_or_else(|| {
        Error::Invalid(format!(
            "unknown harness '{name}'; use {} or all",
            harness::names(", ")
        ))
        .into()
    })
}

pub fn setup(cli: &Cli, env: &Env, args: &SetupArgs) -> Result<()> {
    let places = Places::from_env(env)?;
    if args.check {
        return check::check(cli, env, args, &places);
    }
    let Some(name) = args.harness.as_deref() else {
        return Err(Error::Invalid(format!(
            "name a harness ({} or all), or use --check",
            harness::names(", ")
        ))
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
            write::check_writable(&c.path)?;
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
            let diff = write::unified_diff(path, before.as_deref(), after.as_deref());
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
        report.push(json!({"harness": h.name(), "scope": scope.as_str(),
            "status": status, "files": files}));
        text.push(format!("{} ({}): {verb}", h.name(), scope.as_str()));
    }
    if !args.dry_run {
        write::write_all(&changes, &records)?;
    }
    if cli.json {
        crate::output::print_json(&json!({ "harnesses": report }));
        return Ok(());
    }
    for line in &text {
        crate::outln!("{line}");
    }
    if let Some(r) = inv.remote.as_ref().filter(|_| !args.uninstall) {
        crate::outln!(
            "remote: the MCP server entry reaches {} with the token from the environment variable {} (set it where the harness starts); no hooks were written (they run mailroom on this machine), so mail reaches the agent when it calls mailroom's tools",
            r.url,
            r.var
        );
    }
    if args.dry_run {
        return Ok(());
    }
    if !args.uninstall && changes.iter().any(|c| c.before != c.after) {
        let notes: Vec<&str> = list
            .iter()
            .filter(|_| scope == Scope::Project)
            .filter_map(|h| h.project_note())
            .collect();
        for n in notes {
            crate::outln!("note: {n}");
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Setup knows its hooks again however they start mailroom, and only with exactly the
    /// launcher's words: another package run through the same runner is not mailroom's.
    #[test]
    fn a_hook_is_ours_through_a_launcher_only_with_its_exact_words() {
        let Some(claude) = harness::parse("claude") else {
            panic!("no claude harness");
        };
        for ours in [
            "mailroom hook claude Stop",
            "/opt/my\\ tools/mailroom --as a@web hook claude Stop",
            "uvx --from mailroom-cli mailroom hook claude Stop",
            "npx -y mailroom-cli --home /m hook claude Stop",
            "uvx --from mailroom-cli==0.1.0 mailroom hook claude Stop",
            "npx -y mailroom-cli@0.2.0-beta.1 --as a@web hook claude Stop",
        ] {
            assert!(is_ours(ours, claude), "{ours}");
        }
        for not in [
            "uvx mailroom-cli hook claude Stop",
            "uvx --from other-cli mailroom hook claude Stop",
            "npx mailroom-cli hook claude Stop",
            "npx -y other-cli hook claude Stop",
            "npx -y mailroom-cli hook gemini AfterAgent",
            "/usr/bin/uvx --from mailroom-cli mailroom hook claude Stop",
            "mailroom --url postgres://h/d hook claude Stop",
            "mailroom --as a@web --as b@web hook claude Stop",
            "mailroom --as --home hook claude Stop",
            "mailroom hook claude Stop now",
            "mailroom-beta hook claude Stop",
            "npx -y mailroom-cli@latest hook claude Stop",
            "uvx --from mailroom-cli>=0.1 mailroom hook claude Stop",
            "uvx --from mailroom-cli==0.1.0 other hook claude Stop",
            "npx -y mailroom-cli-beta@0.1.0 hook claude Stop",
        ] {
            assert!(!is_ours(not, claude), "{not}");
        }
    }
}
