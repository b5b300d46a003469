//! The command lines mailroom runs most (a send, an inbox, a hook after every tool call, a
//! check before an edit), read without building the whole argument parser.
//!
//! Building clap's parser for every subcommand and flag is about half of a short command's
//! instructions. `parse` reads only the plain shapes of `send`, `inbox`, `hook` and `check`:
//! long flags it knows, each given once, values that neither are empty nor start with `-`,
//! everything UTF-8. Anything else (help, a short flag, `--flag=value`, a value starting with `-`, a
//! repeated flag, an unknown word, a typo) gives `None`, and the full parser reads the command
//! line as it always did, with its own errors and suggestions. A test checks that every command
//! line this accepts parses to the same `Cli` through clap. `--version` alone is answered
//! here too, with the text clap would print (a test compares them).

use std::ffi::OsString;

use crate::cli::{Cli, Command, Content, SendArgs};

/// The `Cli` of a plain `send`, `inbox`, `hook` or `check` command line (`args` without the
/// program name), or `None` for the full parser to read.
pub fn parse(args: &[OsString]) -> Option<Cli> {
    let mut words = Vec::with_capacity(args.len());
    for a in args {
        let w = a.to_str()?;
        if w.is_empty() || w == "--" {
            return None;
        }
        words.push(w);
    }
    let mut globals = Globals::default();
    let mut it = words.into_iter();
    // Global flags, then the subcommand.
    let sub = loop {
        let w = it.next()?;
        if !globals.take(w, &mut it)? {
            break w;
        }
    };
    let command = match sub {
        "send" => send(&mut globals, &mut it)?,
        "inbox" => inbox(&mut globals, &mut it)?,
        "hook" => hook(&mut globals, &mut it)?,
        "check" => check_paths(&mut globals, &mut it)?,
        _ => return None,
    };
    Some(Cli {
        home: globals.home.map(Into::into),
        url: None,
        as_: globals.as_,
        project: globals.project,
        json: globals.json,
        command,
    })
}

/// What `mailroom --version` (or `-V`) alone on the command line prints, without building the
/// parser; `None` for any other command line. A test holds it to clap's own text.
pub fn version(args: &[OsString]) -> Option<String> {
    match args {
        [only] if only == "--version" || only == "-V" => {
            Some(format!("mailroom {}\n", env!("CARGO_PKG_VERSION")))
        }
        _ => None,
    }
}

#[derive(Default)]
struct Globals {
    home: Option<String>,
    as_: Option<String>,
    project: Option<String>,
    json: bool,
}

/// The value after a flag: present, not empty, not starting with `-`.
fn value<'a>(it: &mut impl Iterator<Item = &'a str>) -> Option<String> {
    let v = it.next()?;
    (!v.starts_with('-')).then(|| v.to_owned())
}

/// Sets `slot` once; a second time declines.
fn once(slot: &mut Option<String>, v: String) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

impl Globals {
    /// Takes `w` (and its value) when it is a global flag: `Some(true)`; `Some(false)` when it
    /// is not a flag at all; `None` to decline.
    fn take<'a>(&mut self, w: &str, it: &mut impl Iterator<Item = &'a str>) -> Option<bool> {
        match w {
            "--home" => once(&mut self.home, value(it)?)?,
            "--as" => once(&mut self.as_, value(it)?)?,
            "--project" => once(&mut self.project, value(it)?)?,
            "--json" if !self.json => self.json = true,
            _ if w.starts_with('-') => return None,
            _ => return Some(false),
        }
        Some(true)
    }
}

fn send<'a>(g: &mut Globals, it: &mut impl Iterator<Item = &'a str>) -> Option<Command> {
    let mut to = Vec::new();
    let (mut subject, mut priority, mut message, mut kind, mut key) =
        (None, None, None, None, None);
    while let Some(w) = it.next() {
        match w {
            "--to" => to.push(value(it)?),
            "--message" => once(&mut message, value(it)?)?,
            "--subject" => once(&mut subject, value(it)?)?,
            "--priority" => once(&mut priority, value(it)?)?,
            "--kind" => once(&mut kind, value(it)?)?,
            "--idempotency-key" => once(&mut key, value(it)?)?,
            _ if g.take(w, it)? => {}
            _ => return None,
        }
    }
    if to.is_empty() {
        return None; // clap says what is missing
    }
    Some(Command::Send(SendArgs {
        to,
        broadcast: false,
        channel: None,
        new: false,
        content: Content {
            subject,
            priority: priority.unwrap_or_else(|| "M".into()),
            message,
        },
        kind: kind.unwrap_or_else(|| "INFO".into()),
        idempotency_key: key,
    }))
}

fn inbox<'a>(g: &mut Globals, it: &mut impl Iterator<Item = &'a str>) -> Option<Command> {
    let mut limit = None;
    while let Some(w) = it.next() {
        match w {
            "--limit" if limit.is_none() => {
                let v = value(it)?;
                if !v.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                limit = Some(v.parse().ok()?);
            }
            _ if g.take(w, it)? => {}
            _ => return None,
        }
    }
    Some(Command::Inbox { limit })
}

fn hook<'a>(g: &mut Globals, it: &mut impl Iterator<Item = &'a str>) -> Option<Command> {
    // Once both are given, clap reads every later word as the hidden rest (flags too).
    let mut positional = Vec::new();
    while let Some(w) = it.next() {
        if positional.len() == 2 {
            return None;
        }
        if !g.take(w, it)? {
            positional.push(w.to_owned());
        }
    }
    let [harness, event]: [String; 2] = positional.try_into().ok()?;
    Some(Command::Hook {
        harness,
        event,
        rest: Vec::new(),
    })
}

/// `check PATH…`: run before edits by scripts and agents, so read here too (not `--staged`).
fn check_paths<'a>(g: &mut Globals, it: &mut impl Iterator<Item = &'a str>) -> Option<Command> {
    let mut paths = Vec::new();
    while let Some(w) = it.next() {
        if !g.take(w, it)? {
            paths.push(w.to_owned());
        }
    }
    if paths.is_empty() {
        return None; // clap says what is missing
    }
    Some(Command::Check {
        paths,
        staged: false,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[test]
    fn version_prints_what_clap_prints_and_only_alone() {
        use clap::CommandFactory as _;
        let clap_text = crate::cli::Cli::command().render_version();
        for flag in ["--version", "-V"] {
            assert_eq!(version(&[OsString::from(flag)]), Some(clap_text.clone()));
        }
        for line in [
            &["--version", "--json"][..],
            &["--json", "--version"],
            &["inbox", "--version"],
            &["--Version"],
            &[],
        ] {
            let args: Vec<OsString> = line.iter().map(OsString::from).collect();
            assert_eq!(version(&args), None, "{line:?}");
        }
    }

    /// Words command lines are made of: the fast path's flags and values, and what it must
    /// leave to clap.
    const WORDS: &[&str] = &[
        "send",
        "inbox",
        "hook",
        "check",
        "--staged",
        "read",
        "--to",
        "--message",
        "-m",
        "--subject",
        "-s",
        "--priority",
        "--kind",
        "--idempotency-key",
        "--broadcast",
        "--channel",
        "--new",
        "--home",
        "--as",
        "--project",
        "--json",
        "--url",
        "--limit",
        "--help",
        "-h",
        "--version",
        "b",
        "a@p",
        "hi",
        "H",
        "QUESTION",
        "/tmp/h",
        "h",
        "3",
        "+3",
        "-3",
        "03",
        "x y",
        "",
        "--",
        "-",
        "--to=b",
        "--mesage",
        "claude",
        "PostToolUse",
        "SessionStart",
        "-x",
        "é",
    ];

    fn debug(cli: &Cli) -> String {
        format!("{cli:?}")
    }

    fn check(words: &[&str]) {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        if let Some(fast) = parse(&args) {
            let full =
                Cli::try_parse_from(std::iter::once("mailroom").chain(words.iter().copied()))
                    .unwrap_or_else(|e| {
                        panic!("fast path accepted {words:?}, clap refused it: {e}")
                    });
            assert_eq!(debug(&fast), debug(&full), "for {words:?}");
        }
    }

    #[test]
    fn accepts_the_plain_shapes_as_clap_reads_them() {
        for words in [
            &[
                "--home",
                "/tmp/h",
                "--as",
                "a",
                "send",
                "--to",
                "b",
                "--message",
                "hi",
            ][..],
            &[
                "send",
                "--to",
                "b",
                "--to",
                "a@p",
                "--subject",
                "x y",
                "--priority",
                "H",
            ],
            &[
                "--json",
                "send",
                "--kind",
                "QUESTION",
                "--to",
                "b",
                "--idempotency-key",
                "k",
            ],
            &["send", "--to", "b", "--as", "a", "--project", "p", "--json"],
            &["--as", "b", "inbox"],
            &["inbox", "--limit", "03", "--home", "/tmp/h"],
            &["--as", "b", "hook", "claude", "PostToolUse"],
            &["hook", "--as", "b", "claude", "--json", "SessionStart"],
            &["--as", "b", "check", "src/a.rs", "x y", "--json"],
        ] {
            let args: Vec<OsString> = words.iter().map(OsString::from).collect();
            assert!(parse(&args).is_some(), "declined {words:?}");
            check(words);
        }
    }

    #[test]
    fn declines_what_it_does_not_read() {
        for words in [
            &["send", "--to", "b", "--message", "-x"][..],
            &["send", "-m", "hi", "--to", "b"],
            &["send", "--to=b"],
            &["send", "--to", "b", "--message", "a", "--message", "b"],
            &["send", "--message", "hi"],
            &["send", "--to", "b", "--broadcast"],
            &["--url", "u", "inbox"],
            &["inbox", "--limit", "+3"],
            &["inbox", "--help"],
            &["hook", "claude"],
            &["hook", "claude", "PostToolUse", "extra"],
            &["check"],
            &["check", "--staged"],
            &["check", "a", "-x"],
            &["--as", "", "inbox"],
            &["read", "x"],
            &[],
        ] {
            let args: Vec<OsString> = words.iter().map(OsString::from).collect();
            assert!(parse(&args).is_none(), "accepted {words:?}");
        }
    }

    /// Many command lines of up to eight words: whatever the fast path accepts, clap reads the
    /// same way.
    #[test]
    fn agrees_with_clap_on_generated_command_lines() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut accepted = 0;
        for _ in 0..100_000 {
            let len = (next() % 9) as usize;
            let mut words: Vec<&str> = (0..len)
                .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                .collect();
            // Mostly start from a subcommand, so that many lines get past the first word.
            if next() % 2 == 0 {
                let at = (next() % (words.len() as u64 + 1)) as usize;
                words.insert(
                    at,
                    ["send", "inbox", "hook", "check"][(next() % 4) as usize],
                );
            }
            let args: Vec<OsString> = words.iter().map(OsString::from).collect();
            if parse(&args).is_some() {
                accepted += 1;
            }
            check(&words);
        }
        assert!(
            accepted > 100,
            "only {accepted} generated lines took the fast path"
        );
    }
}
