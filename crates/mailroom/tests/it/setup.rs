//! `setup HARNESS`: on a temporary HOME and repository whose configs already hold other
//! servers, other hooks and comments, it adds mailroom's entries, says "nothing to change" the
//! second time, writes nothing with --dry-run, and --uninstall gives back the original bytes.
//! Also the refusals, `setup --check`, and the hook JSON each harness gets.

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use serde_json::{Value, json};

use crate::support::{BIN, Home, TestCommand, settings};

/// A temporary HOME, a git checkout `web` in it, and a PATH holding `mailroom`.
struct Machine {
    home: Home,
}

impl Machine {
    fn new() -> Machine {
        let home = Home::new();
        let m = Machine { home };
        std::fs::create_dir_all(m.repo().join(".git")).unwrap();
        std::fs::create_dir_all(m.user()).unwrap();
        let bin = m.home.root().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(BIN, bin.join("mailroom")).unwrap();
        m
    }

    fn repo(&self) -> PathBuf {
        self.home.root().join("src").join("web")
    }

    /// The user's HOME.
    fn user(&self) -> PathBuf {
        self.home.root().join("user")
    }

    fn setup<'a>(&self, args: impl IntoIterator<Item = &'a str>) -> TestCommand {
        let mut c = self.home.cmd(["setup"]);
        c.args(args)
            .env("HOME", self.user())
            .env("PATH", self.home.root().join("bin"))
            .env_remove_all()
            .current_dir(self.repo());
        c
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Every file under the repository and the user's HOME, with its bytes.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for top in [self.repo(), self.user()] {
            walk(&top, &mut out);
        }
        out.sort();
        out
    }

    fn redact(&self, s: &str) -> String {
        s.replace(&bin(), "[BIN]")
            .replace(&self.home.root().display().to_string(), "[TMP]")
    }
}

/// The path setup writes by default: this build of mailroom's own, links resolved.
fn bin() -> String {
    std::fs::canonicalize(BIN)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

trait EnvRemoveAll {
    fn env_remove_all(&mut self) -> &mut Self;
}

impl EnvRemoveAll for TestCommand {
    /// The harnesses' own locations must come from HOME alone.
    fn env_remove_all(&mut self) -> &mut Self {
        self.env("CODEX_HOME", "")
            .env("XDG_CONFIG_HOME", "")
            .env("XDG_STATE_HOME", "")
    }
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
}

/// The configs a user already has: other servers, other hooks, comments.
fn existing(m: &Machine, harness: &str) {
    let r = m.repo();
    match harness {
        "claude" => {
            m.write(
                &r.join(".mcp.json"),
                "{\n  \"mcpServers\": {\n    \"github\": { \"command\": \"gh-mcp\", \"args\": [] }\n  }\n}\n",
            );
            m.write(
                &r.join(".claude/settings.json"),
                "{\n  \"permissions\": { \"allow\": [\"Bash(cargo test:*)\"] },\n  \"hooks\": {\n    \"Stop\": [\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"notify-send done\" }] }\n    ]\n  }\n}\n",
            );
        }
        "codex" => {
            m.write(
                &r.join(".codex/config.toml"),
                "# the team's Codex settings\nmodel = \"o4\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\" # keep\nargs = []\n",
            );
            m.write(
                &r.join(".codex/hooks.json"),
                "{\n  \"hooks\": {\n    \"PostToolUse\": [\n      { \"matcher\": \"Bash\", \"hooks\": [{ \"type\": \"command\", \"command\": \"./lint.sh\" }] }\n    ]\n  }\n}\n",
            );
        }
        "gemini" => m.write(
            &r.join(".gemini/settings.json"),
            "{\n  // project settings\n  \"mcpServers\": {\n    \"github\": { \"command\": \"gh-mcp\" }\n  },\n  \"hooks\": {\n    \"AfterTool\": [\n      { \"matcher\": \"write_file\", \"hooks\": [{ \"type\": \"command\", \"command\": \"./fmt.sh\" }] }\n    ]\n  },\n  \"ui\": { \"theme\": \"GitHub\" }\n}\n",
        ),
        "cursor" => {
            m.write(
                &r.join(".cursor/mcp.json"),
                "{\n  \"mcpServers\": {\n    \"github\": { \"command\": \"gh-mcp\" }\n  }\n}\n",
            );
            m.write(
                &r.join(".cursor/hooks.json"),
                "{\n  \"version\": 1,\n  \"hooks\": {\n    \"afterFileEdit\": [{ \"command\": \"./fmt.sh\" }]\n  }\n}\n",
            );
        }
        "opencode" => m.write(
            &r.join("opencode.jsonc"),
            "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // our servers\n  \"mcp\": {\n    \"github\": { \"type\": \"local\", \"command\": [\"gh-mcp\"] }\n  }\n}\n",
        ),
        _ => unreachable!(),
    }
}

const HARNESSES: [&str; 5] = ["claude", "codex", "gemini", "cursor", "opencode"];

#[test]
fn setup_adds_once_keeps_everything_else_and_uninstall_restores_the_original_bytes() {
    for harness in HARNESSES {
        let m = Machine::new();
        existing(&m, harness);
        let before = m.files();

        let dry = m.setup([harness, "--dry-run"]).ok();
        assert!(dry.stdout.contains("+++ "), "{harness}: {}", dry.stdout);
        assert!(
            dry.stdout.contains("dry run: nothing written"),
            "{}",
            dry.stdout
        );
        assert_eq!(m.files(), before, "{harness}: --dry-run wrote");

        let first = m.setup([harness]).ok();
        assert_eq!(
            first
                .stdout
                .replace("dry run: nothing written", "")
                .replace("would change", "changed"),
            first.stdout,
        );
        let diff_of_dry = dry
            .stdout
            .lines()
            .filter(|l| l.starts_with(['+', '-', ' ', '@']))
            .collect::<Vec<_>>();
        let diff_of_run = first
            .stdout
            .lines()
            .filter(|l| l.starts_with(['+', '-', ' ', '@']))
            .collect::<Vec<_>>();
        assert_eq!(
            diff_of_dry, diff_of_run,
            "{harness}: the dry run shows the real diff"
        );
        let after = m.files();
        assert_ne!(after, before);
        // Everything that was there is still there, byte for byte, line by line.
        for (path, old) in &before {
            let new = &after.iter().find(|(p, _)| p == path).unwrap().1;
            let new = String::from_utf8_lossy(new);
            for line in String::from_utf8_lossy(old).lines() {
                let line = line.trim_end_matches(',');
                assert!(
                    new.contains(line),
                    "{harness}: {} lost {line:?}:\n{new}",
                    path.display()
                );
            }
        }
        let again = m.setup([harness]).ok();
        assert_eq!(
            again.stdout,
            format!("{harness} (project): already set up: nothing to change\n"),
            "{harness}"
        );
        assert_eq!(m.files(), after);

        let gone = m.setup([harness, "--uninstall"]).ok();
        assert!(gone.stdout.contains("removed from"), "{}", gone.stdout);
        assert_eq!(
            m.files(),
            before,
            "{harness}: --uninstall left a difference"
        );
        let nothing = m.setup([harness, "--uninstall"]).ok();
        assert!(
            nothing.stdout.contains("nothing to change"),
            "{}",
            nothing.stdout
        );
    }
}

#[test]
fn on_a_machine_with_nothing_setup_creates_the_files_and_uninstall_removes_them() {
    for harness in HARNESSES {
        for scope in ["--project", "--user"] {
            let m = Machine::new();
            let before = m.files();
            m.setup([harness, scope]).ok();
            assert_ne!(m.files(), before, "{harness} {scope}");
            m.setup([harness, scope, "--uninstall"]).ok();
            assert_eq!(m.files(), before, "{harness} {scope}");
        }
    }
}

#[test]
fn the_diff_setup_prints_for_each_harness() {
    let _s = settings().bind_to_scope();
    for harness in HARNESSES {
        let m = Machine::new();
        existing(&m, harness);
        let run = m.setup([harness]).ok();
        assert_snapshot!(format!("diff_{harness}"), m.redact(&run.stdout));
    }
}

#[test]
fn every_written_config_parses_and_names_mailroom_as_the_docs_say() {
    let m = Machine::new();
    for h in HARNESSES {
        m.setup([h]).ok();
    }
    let r = m.repo();
    let read = |p: &str| -> Value {
        let text = std::fs::read_to_string(r.join(p)).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p}: {e}\n{text}"))
    };
    assert_eq!(
        read(".mcp.json")["mcpServers"]["mailroom"],
        json!({"type": "stdio", "command": bin(), "args": ["mcp"]})
    );
    let claude = read(".claude/settings.json");
    for event in ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"] {
        assert_eq!(
            claude["hooks"][event][0]["hooks"][0]["command"],
            format!("{} hook claude {event}", bin())
        );
    }
    let gemini = read(".gemini/settings.json");
    assert_eq!(gemini["mcpServers"]["mailroom"]["args"], json!(["mcp"]));
    for event in ["SessionStart", "BeforeAgent", "AfterTool", "AfterAgent"] {
        assert_eq!(
            gemini["hooks"][event][0]["hooks"][0]["command"],
            format!("{} hook gemini {event}", bin())
        );
    }
    let cursor = read(".cursor/hooks.json");
    assert_eq!(cursor["version"], 1);
    for event in ["sessionStart", "postToolUse", "stop"] {
        assert_eq!(
            cursor["hooks"][event][0]["command"],
            format!("{} hook cursor {event}", bin())
        );
    }
    let opencode = read("opencode.json");
    assert_eq!(
        opencode["mcp"]["mailroom"],
        json!({"type": "local", "command": [bin(), "mcp"], "enabled": true})
    );
    let toml = std::fs::read_to_string(r.join(".codex/config.toml")).unwrap();
    assert_eq!(
        toml,
        format!(
            "[mcp_servers.mailroom]\ncommand = \"{}\"\nargs = [\"mcp\"]\nenv_vars = [\"MAILROOM_HOME\", \"MAILROOM_URL\", \"MAILROOM_AS\"]\n",
            bin()
        )
    );
    // Every hook command runs: the program named answers each event without a warning.
    let codex = read(".codex/hooks.json");
    for (file, v) in [("claude", &claude), ("codex", &codex), ("gemini", &gemini)] {
        for (_, groups) in v["hooks"].as_object().unwrap() {
            let command = groups[0]["hooks"][0]["command"].as_str().unwrap();
            let args: Vec<&str> = command.split(' ').skip(1).collect();
            let run = m
                .home
                .cmd(&args)
                .current_dir(&r)
                .stdin(json!({"cwd": r}).to_string())
                .run();
            assert_eq!(
                (run.code, run.stderr.as_str()),
                (0, ""),
                "{file}: {command}"
            );
        }
    }
}

#[test]
fn refusals_change_nothing_and_say_what_to_do() {
    let m = Machine::new();
    // A file it cannot parse.
    m.write(
        &m.repo().join(".gemini/settings.json"),
        "{ \"mcpServers\": ",
    );
    let before = m.files();
    let bad = m.setup(["gemini"]).run();
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains(".gemini/settings.json cannot be edited: it is not valid JSON"),
        "{}",
        bad.stderr
    );
    assert_eq!(m.files(), before);
    // `all` with one bad file writes nothing anywhere.
    std::fs::create_dir_all(m.user().join(".claude")).unwrap();
    std::fs::create_dir_all(m.user().join(".gemini")).unwrap();
    let all = m.setup(["all"]).run();
    assert_eq!(all.code, 2, "{}", all.stderr);
    assert_eq!(m.files(), before);
    std::fs::remove_file(m.repo().join(".gemini/settings.json")).unwrap();

    // Claude Code reads its settings as plain JSON: a comment would make it drop the file.
    m.write(
        &m.repo().join(".claude/settings.json"),
        "{\n  // mine\n  \"model\": \"opus\"\n}\n",
    );
    let before = m.files();
    let commented = m.setup(["claude"]).run();
    assert_eq!(commented.code, 2, "{}", commented.stderr);
    assert!(
        commented
            .stderr
            .contains("plain JSON, which has no comments"),
        "{}",
        commented.stderr
    );
    assert_eq!(m.files(), before);
    std::fs::remove_file(m.repo().join(".claude/settings.json")).unwrap();

    // A symlinked config.
    let elsewhere = m.home.root().join("dotfiles-settings.json");
    std::fs::write(&elsewhere, "{}\n").unwrap();
    std::fs::create_dir_all(m.repo().join(".claude")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, m.repo().join(".claude/settings.json")).unwrap();
    let before = m.files();
    let link = m.setup(["claude"]).run();
    assert_eq!(link.code, 4, "{}", link.stderr);
    assert!(
        link.stderr.contains("is a symbolic link"),
        "{}",
        link.stderr
    );
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"{}\n");
    assert_eq!(m.files(), before);

    // Plain `mailroom` asked for, and not on PATH: refused, naming the default.
    let mut c = m.setup(["codex", "--launcher", "path-lookup"]);
    c.env("PATH", "/nonexistent");
    let missing = c.run();
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("`mailroom` is not on PATH")
            && missing.stderr.contains("leave out --launcher path-lookup"),
        "{}",
        missing.stderr
    );
    assert_eq!(m.files(), before);

    // Bad arguments.
    for (args, says) in [
        (vec!["vim"], "unknown harness 'vim'"),
        (
            vec!["claude", "--binary", "mailroom"],
            "not an absolute path",
        ),
        (vec!["claude", "--project", "--user"], "not both"),
        (
            vec!["claude", "--launcher", "path-lookup", "--binary", BIN],
            "use one of them",
        ),
        (vec!["claude", "--as", "a b"], "is not a valid address"),
    ] {
        let run = m.setup(args.clone()).run();
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
    let outside = m.setup(["claude"]).current_dir(m.home.root()).run();
    assert_eq!(outside.code, 2);
    assert!(
        outside.stderr.contains("not inside a git checkout"),
        "{}",
        outside.stderr
    );
}

#[test]
fn a_stale_entry_is_replaced_and_a_hand_added_neighbour_kept() {
    let m = Machine::new();
    m.write(
        &m.repo().join(".claude/settings.json"),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      { \"hooks\": [\n        { \"type\": \"command\", \"command\": \"/old/bin/mailroom hook claude Stop\" },\n        { \"type\": \"command\", \"command\": \"say done\" }\n      ] }\n    ]\n  }\n}\n",
    );
    m.setup(["claude"]).ok();
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(m.repo().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let stop = serde_json::to_string(&v["hooks"]["Stop"]).unwrap();
    assert!(!stop.contains("/old/bin"), "{stop}");
    assert!(
        stop.contains("say done") && stop.contains(&format!("\"{} hook claude Stop\"", bin())),
        "{stop}"
    );
    assert!(
        m.setup(["claude"])
            .ok()
            .stdout
            .contains("nothing to change")
    );
}

#[test]
fn check_reports_wiring_the_program_and_the_session_start_injection_without_marking_it_read() {
    let m = Machine::new();
    m.home.send("api", "web", "the schema moved to v2");
    let not = m.setup(["--check"]).run();
    assert_eq!(not.code, 3, "{}", not.stderr);
    m.setup(["claude"]).ok();
    m.setup(["codex", "--user"]).ok();
    let check = m.setup(["--check"]).ok();
    let _s = settings().bind_to_scope();
    assert_snapshot!(
        "check",
        m.home
            .redact(&m.redact(&check.stdout))
            .replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
    );
    // A repository's config cannot get its own program run by --check.
    m.write(
        &m.repo().join(".cursor/mcp.json"),
        "{\"mcpServers\": {\"mailroom\": {\"command\": \"./evil\"}}}",
    );
    m.write(
        &m.repo().join(".gemini/settings.json"),
        "{\"mcpServers\": {\"mailroom\": {\"command\": \"./bin/mailroom\"}}}",
    );
    let hostile = m.setup(["--check"]).ok();
    assert!(
        hostile
            .stdout
            .contains("program ./evil: not a mailroom program: not started")
            && hostile
                .stdout
                .contains("program ./bin/mailroom: a relative path: not started"),
        "{}",
        hostile.stdout
    );
    // Nothing was marked read: the real SessionStart still shows it.
    let start = m
        .home
        .cmd(["hook", "claude", "SessionStart"])
        .stdin(json!({"cwd": m.repo()}).to_string())
        .ok();
    assert!(
        start.stdout.contains("the schema moved to v2"),
        "{}",
        start.stdout
    );
}

/// The JSON each harness gets, pinned whole: Codex's is Claude Code's shape, Gemini CLI's
/// names its own events, Cursor's uses `additional_context` and `followup_message`.
#[test]
fn each_harness_gets_its_own_hook_shape() {
    let _s = settings().bind_to_scope();
    let m = Machine::new();
    m.home.send("api", "web", "please review #12");
    let r = m.repo();
    let mut shapes = String::new();
    for (harness, start, tool, stop, stop_input) in [
        (
            "codex",
            "SessionStart",
            "PostToolUse",
            "Stop",
            json!({"cwd": r, "stop_hook_active": false}),
        ),
        (
            "gemini",
            "SessionStart",
            "AfterTool",
            "AfterAgent",
            json!({"cwd": r, "stop_hook_active": false}),
        ),
        (
            "cursor",
            "sessionStart",
            "postToolUse",
            "stop",
            json!({"workspace_roots": [r], "loop_count": 0}),
        ),
    ] {
        // A fresh SessionStart each time (it shows everything pending).
        let s = m
            .home
            .cmd(["hook", harness, start])
            .stdin(json!({"cwd": r, "workspace_roots": [r]}).to_string())
            .ok();
        m.home.send("api", "web", &format!("news for {harness}"));
        let t = m
            .home
            .cmd(["hook", harness, tool])
            .stdin(json!({"cwd": r, "workspace_roots": [r]}).to_string())
            .ok();
        let st = m
            .home
            .cmd(["hook", harness, stop])
            .stdin(stop_input.to_string())
            .ok();
        for (event, run) in [(start, s), (tool, t), (stop, st)] {
            let v: Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("{harness} {event}: {e}: {}", run.stdout));
            shapes.push_str(&format!(
                "== {harness} {event}\n{}\n",
                serde_json::to_string_pretty(&v).unwrap()
            ));
        }
    }
    // Stop continues once, not twice.
    for (harness, event, again) in [
        ("codex", "Stop", json!({"cwd": r, "stop_hook_active": true})),
        (
            "gemini",
            "AfterAgent",
            json!({"cwd": r, "stop_hook_active": true}),
        ),
        (
            "cursor",
            "stop",
            json!({"workspace_roots": [r], "loop_count": 1}),
        ),
    ] {
        let run = m
            .home
            .cmd(["hook", harness, event])
            .stdin(again.to_string())
            .ok();
        assert_eq!(run.stdout, "", "{harness}: a second stop continues again");
    }
    // Cursor's beforeSubmitPrompt cannot add context: nothing, and the mail stays news.
    m.home.send("api", "web", "late news");
    let prompt = m
        .home
        .cmd(["hook", "cursor", "beforeSubmitPrompt"])
        .stdin(json!({"workspace_roots": [r]}).to_string())
        .ok();
    assert_eq!(prompt.stdout, "");
    let tool = m
        .home
        .cmd(["hook", "cursor", "postToolUse"])
        .stdin(json!({"workspace_roots": [r]}).to_string())
        .ok();
    assert!(tool.stdout.contains("late news"), "{}", tool.stdout);
    assert_snapshot!("hook_shapes", m.home.redact(&shapes));
}

/// A `--binary` whose folder holds spaces, quotes and `$(...)`: the hook command a shell runs
/// starts that binary and nothing else, a second setup finds its own entries (no duplicates),
/// and --uninstall removes them all.
#[test]
fn a_binary_path_with_spaces_and_quotes_is_quoted_recognised_and_uninstalled() {
    for harness in ["claude", "gemini", "cursor"] {
        let m = Machine::new();
        let canary = m.home.root().join("PWNED");
        let dir = m
            .home
            .root()
            .join(format!("my tools 'x$(touch {})\"", canary.display()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("mailroom");
        std::os::unix::fs::symlink(BIN, &bin).unwrap();
        let bin = bin.to_str().unwrap();
        let before = m.files();
        m.setup([harness, "--binary", bin]).ok();
        let after = m.files();
        let again = m.setup([harness, "--binary", bin]).ok();
        assert!(
            again.stdout.contains("nothing to change"),
            "{harness}: {}",
            again.stdout
        );
        assert_eq!(
            m.files(),
            after,
            "{harness}: the second setup changed files"
        );

        // Every hook command, run by a shell, is exactly `BIN hook HARNESS EVENT`.
        let mut commands = Vec::new();
        for (path, bytes) in &after {
            if path.extension().is_some_and(|e| e == "json") {
                collect_commands(&serde_json::from_slice(bytes).unwrap(), &mut commands);
            }
        }
        assert!(!commands.is_empty(), "{harness}: no hook commands");
        for c in &commands {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("set -- {c}; printf '%s\\n' \"$@\""))
                .output()
                .unwrap();
            let words: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
            assert_eq!(words.first(), Some(&bin), "{harness}: {c}");
            assert_eq!(words.len(), 4, "{harness}: {c}");
            assert_eq!(&words[1..3], ["hook", harness], "{harness}: {c}");
        }
        assert!(!canary.exists(), "{harness}: the path ran as a command");

        m.setup([harness, "--binary", bin, "--uninstall"]).ok();
        assert_eq!(
            m.files(),
            before,
            "{harness}: --uninstall left entries behind"
        );
    }
}

fn collect_commands(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("command", Value::String(s)) if s.contains(" hook ") => out.push(s.clone()),
                    _ => collect_commands(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_commands(x, out)),
        _ => {}
    }
}

/// A `mailroom` server entry the user extended keeps what they added when setup rewrites
/// its command and args.
#[test]
fn setup_keeps_what_the_user_added_to_its_server_entry() {
    let m = Machine::new();
    let mcp = m.repo().join(".mcp.json");
    m.setup(["claude"]).ok();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
    v["mcpServers"]["mailroom"]["env"] = json!({"K": "V"});
    m.write(&mcp, &serde_json::to_string_pretty(&v).unwrap());
    let other = m.home.root().join("bin").join("mailroom");
    m.setup(["claude", "--binary", other.to_str().unwrap()])
        .ok();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["mailroom"]["env"], json!({"K": "V"}), "{v}");
    assert_eq!(
        v["mcpServers"]["mailroom"]["command"],
        other.to_str().unwrap(),
        "{v}"
    );

    let toml = m.repo().join(".codex/config.toml");
    m.setup(["codex"]).ok();
    let text = std::fs::read_to_string(&toml).unwrap();
    m.write(&toml, &format!("{text}startup_timeout_sec = 30\n"));
    m.setup(["codex", "--binary", other.to_str().unwrap()]).ok();
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.contains("startup_timeout_sec = 30"), "{text}");
    assert!(text.contains(other.to_str().unwrap()), "{text}");
    assert!(
        m.setup(["codex", "--binary", other.to_str().unwrap()])
            .ok()
            .stdout
            .contains("nothing to change")
    );
}

/// A `mailroom` entry the user wrote (or anything setup did not write) is theirs: setup
/// refuses to take its place, naming --replace; with --replace, --uninstall puts it back byte
/// for byte, and a file that held nothing else stays.
#[test]
fn a_users_own_mailroom_entry_is_refused_or_replaced_and_put_back() {
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            ".mcp.json",
            "claude",
            r#"{"mcpServers":{"other":{"command":"x"},"mailroom":{"command":"/opt/custom/mailroom","args":["--as","me@proj","mcp"],"env":{"SECRET":"keep"},"timeout":99}}}"#,
        ),
        (".mcp.json", "claude", r#"{"mcpServers":{"mailroom":null}}"#),
        (
            ".mcp.json",
            "claude",
            r#"{"mcpServers":{"mailroom":{"command":"mailroom","args":["mcp","--tools","lifecycle"]}}}"#,
        ),
        (
            ".codex/config.toml",
            "codex",
            "[mcp_servers.mailroom]\ncommand = \"uvx\"\nargs = [\"mailroom-cli\", \"mcp\"]\n",
        ),
        (
            ".mcp.json",
            "claude",
            "{\n  \"mcpServers\": {\n    \"mailroom\": \"mine\"\n  }\n}\n",
        ),
        (
            ".codex/config.toml",
            "codex",
            "[mcp_servers.mailroom]\ncommand = \"mailroom\"\nargs = [\"mcp\"]\nenv = { SECRET = \"keep\" }\n",
        ),
        (
            ".cursor/mcp.json",
            "cursor",
            "{\"mcpServers\": {\"mailroom\": {\"command\": \"/opt/mailroom\", \"cwd\": \"/srv\"}}}",
        ),
    ];
    for (path, harness, text) in cases {
        let m = Machine::new();
        let path = m.repo().join(path);
        m.write(&path, text);
        let before = m.files();
        let refused = m.setup([harness]).run();
        assert_eq!(refused.code, 4, "{harness} {text}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("setup did not write")
                && refused.stderr.contains("--replace")
                && !refused.stderr.contains("SECRET")
                && !refused.stderr.contains("\"keep\""),
            "{}",
            refused.stderr
        );
        assert_eq!(m.files(), before, "{harness}: a refusal wrote");

        m.setup([harness, "--replace"]).ok();
        assert_ne!(std::fs::read_to_string(&path).unwrap(), text);
        m.setup([harness, "--uninstall"]).ok();
        assert_eq!(
            m.files(),
            before,
            "{harness} {text}: --uninstall did not put it back"
        );
    }
}

/// A project's configs as another setup wrote them (a teammate's install at another path, an
/// earlier version's plain `mailroom`, a package runner), with no record of it on this machine:
/// setup takes their place without --replace, and --uninstall takes them out, either way
/// leaving every other byte as it was.
#[test]
fn entries_another_setup_wrote_are_known_without_a_record() {
    let state = |m: &Machine| {
        let _ = std::fs::remove_dir_all(m.user().join(".local/state"));
    };
    for harness in HARNESSES {
        for other in [
            vec!["--binary", "OTHER"],
            vec!["--launcher", "path-lookup"],
            vec!["--launcher", "uvx"],
            vec!["--launcher", "npx"],
        ] {
            let m = Machine::new();
            existing(&m, harness);
            let before = m.files();
            let moved = m.home.root().join("bin").join("mailroom");
            let other: Vec<&str> = other
                .iter()
                .map(|w| {
                    if *w == "OTHER" {
                        moved.to_str().unwrap()
                    } else {
                        w
                    }
                })
                .collect();
            m.setup([harness]).args(&other).ok();
            state(&m);
            let theirs = m.files();
            m.setup([harness, "--uninstall"]).ok();
            assert_eq!(m.files(), before, "{harness} {other:?}: --uninstall");

            m.setup([harness]).args(&other).ok();
            state(&m);
            assert_eq!(m.files(), theirs, "{harness} {other:?}");
            m.setup([harness]).ok();
            let mine = m.files();
            assert_ne!(mine, theirs, "{harness} {other:?}");
            assert!(
                m.setup([harness]).ok().stdout.contains("nothing to change"),
                "{harness} {other:?}"
            );
            m.setup([harness, "--uninstall"]).ok();
            assert_eq!(m.files(), theirs, "{harness} {other:?}: put back");
        }
    }
}

/// Run from a package runner's cache (npx's `_npx`, uv's `archive-v0`), setup still writes
/// that path, and says in a sentence that the cache may be cleared and which flag avoids it.
#[test]
fn setup_run_from_a_package_runners_cache_warns_that_it_may_be_cleared() {
    for cache in ["_npx", "archive-v0"] {
        let m = Machine::new();
        let dir = m.home.root().join(cache).join("0a1b2c").join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("mailroom");
        if std::fs::hard_link(bin(), &copy).is_err() {
            std::fs::copy(bin(), &copy).unwrap();
        }
        let mut c = m.setup(["claude"]);
        c.cmd_program(&copy);
        let run = c.ok();
        assert_eq!(
            m.redact(&run.stderr),
            format!(
                "warning: this mailroom runs from a package runner's cache ([TMP]/{cache}/0a1b2c/bin/mailroom), which may be cleared; run setup again with --launcher uvx or --launcher npx to start it through the runner\n"
            )
        );
        let mcp = std::fs::read_to_string(m.repo().join(".mcp.json")).unwrap();
        assert!(mcp.contains(copy.to_str().unwrap()), "{mcp}");
        assert_eq!(m.setup(["claude"]).ok().stderr, "");
    }
}

/// A hook of mailroom's the user wrote (another program, other flags) that setup's takes the
/// place of comes back with --uninstall, also from a file changed since.
#[test]
fn a_users_own_mailroom_hook_comes_back() {
    let m = Machine::new();
    let settings = m.repo().join(".claude/settings.json");
    let original = "{\n  \"hooks\": {\n    \"Stop\": [\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"/usr/local/bin/mailroom --as me@web hook claude Stop\" }] }\n    ]\n  }\n}\n";
    m.write(&settings, original);
    m.setup(["claude"]).ok();
    let set = std::fs::read_to_string(&settings).unwrap();
    assert!(!set.contains("/usr/local/bin/mailroom"), "{set}");
    m.setup(["claude", "--uninstall"]).ok();
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), original);

    // Changed since setup wrote it: setup's hooks out, the user's back, their change kept.
    m.setup(["claude"]).ok();
    let set = std::fs::read_to_string(&settings).unwrap();
    m.write(
        &settings,
        &set.replacen('{', "{\n  \"model\": \"opus\",", 1),
    );
    m.setup(["claude", "--uninstall"]).ok();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["model"], "opus", "{v}");
    let stop = serde_json::to_string(&v["hooks"]).unwrap();
    assert!(
        stop.contains("/usr/local/bin/mailroom --as me@web hook claude Stop"),
        "{stop}"
    );
    assert!(!stop.contains(&format!("{} hook claude", bin())), "{stop}");
}

/// One file that cannot be written (an immutable folder) leaves every file as it was, the
/// ones setup would have written first included; a read-only file is refused in a sentence.
#[test]
fn setup_writes_every_file_or_none() {
    let m = Machine::new();
    let claude = m.repo().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    let immutable = std::process::Command::new("chattr")
        .arg("+i")
        .arg(&claude)
        .status()
        .is_ok_and(|s| s.success());
    let is_root = rustix_uid_is_root();
    if !immutable {
        // Not root, or a file system without attributes: a folder without write permission
        // stops a user who is not root the same way.
        assert!(
            !is_root,
            "chattr +i failed as root: this test cannot make a folder unwritable"
        );
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let before = m.files();
    let run = m.setup(["claude"]).run();
    if immutable {
        std::process::Command::new("chattr")
            .arg("-i")
            .arg(&claude)
            .status()
            .unwrap();
    } else {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("setup changed nothing"),
        "{}",
        run.stderr
    );
    assert_eq!(m.files(), before, "a refused setup wrote");
    assert!(!m.repo().join(".mcp.json").exists());

    // A read-only config: refused, not replaced through a rename.
    let mcp = m.repo().join(".mcp.json");
    m.write(&mcp, "{}\n");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&mcp, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = m.files();
    let run = m.setup(["claude"]).run();
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains(".mcp.json is read-only (mode 0444)"),
        "{}",
        run.stderr
    );
    assert_eq!(m.files(), before);

    // A file's mode is kept.
    std::fs::set_permissions(&mcp, std::fs::Permissions::from_mode(0o640)).unwrap();
    m.setup(["claude"]).ok();
    let mode = std::fs::metadata(&mcp).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    m.setup(["claude", "--uninstall"]).ok();
    assert_eq!(
        std::fs::metadata(&mcp).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), "{}\n");
}

fn rustix_uid_is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The operator's identity is never written into a project's committed files, and into the
/// user's own only with --operator.
#[test]
fn setup_as_the_operator_needs_user_scope_and_a_flag() {
    let m = Machine::new();
    let before = m.files();
    let project = m.setup(["claude"]).args(["--as", "HUMAN"]).run();
    // `--as` is a global flag: given after the subcommand, clap takes it there too.
    assert_eq!(project.code, 4, "{}", project.stderr);
    assert!(
        project.stderr.contains("committed and shared"),
        "{}",
        project.stderr
    );
    let user = m.setup(["claude", "--user"]).args(["--as", "HUMAN"]).run();
    assert_eq!(user.code, 4, "{}", user.stderr);
    assert!(user.stderr.contains("--operator"), "{}", user.stderr);
    assert_eq!(m.files(), before);
    m.setup(["claude", "--user", "--operator"])
        .args(["--as", "HUMAN"])
        .ok();
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(m.user().join(".claude.json")).unwrap())
            .unwrap();
    assert_eq!(
        v["mcpServers"]["mailroom"]["args"],
        json!(["--as", "HUMAN", "mcp"])
    );
}

mod shapes {
    //! After `setup` then `--uninstall`, every file has its original bytes, whatever shape it
    //! had: generated files in each harness's format, at both scopes.

    use super::*;
    use proptest::prelude::*;

    /// The config files of `harness` at `scope` (Machine-relative), and whether each is TOML.
    fn files(m: &Machine, harness: &str, user: bool) -> Vec<(PathBuf, bool)> {
        let (r, u) = (m.repo(), m.user());
        match (harness, user) {
            ("claude", false) => vec![
                (r.join(".mcp.json"), false),
                (r.join(".claude/settings.json"), false),
            ],
            ("claude", true) => vec![
                (u.join(".claude.json"), false),
                (u.join(".claude/settings.json"), false),
            ],
            ("codex", false) => vec![
                (r.join(".codex/config.toml"), true),
                (r.join(".codex/hooks.json"), false),
            ],
            ("codex", true) => vec![
                (u.join(".codex/config.toml"), true),
                (u.join(".codex/hooks.json"), false),
            ],
            ("gemini", false) => vec![(r.join(".gemini/settings.json"), false)],
            ("gemini", true) => vec![(u.join(".gemini/settings.json"), false)],
            ("cursor", false) => vec![
                (r.join(".cursor/mcp.json"), false),
                (r.join(".cursor/hooks.json"), false),
            ],
            ("cursor", true) => vec![
                (u.join(".cursor/mcp.json"), false),
                (u.join(".cursor/hooks.json"), false),
            ],
            ("opencode", false) => vec![(r.join("opencode.json"), false)],
            ("opencode", true) => vec![(u.join(".config/opencode/opencode.json"), false)],
            _ => unreachable!(),
        }
    }

    /// A JSON config: nothing, blank, or an object among the shapes users have.
    fn json_text() -> impl Strategy<Value = Option<String>> {
        let object = prop_oneof![
            Just(json!({})),
            Just(json!({"hooks": {}})),
            Just(json!({"hooks": {"Stop": []}})),
            Just(json!({"mcpServers": {}})),
            Just(json!({"mcpServers": {}, "x": 1})),
            Just(json!({"mcp": {}, "theme": "dark"})),
            Just(
                json!({"mcpServers": {"other": {"command": "o", "args": ["-v"]}}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}})
            ),
            "[a-z]{1,8}".prop_map(|k| json!({ k: [1, "two", null] })),
        ];
        let layout = 0..4usize;
        let ending = prop_oneof![Just(""), Just("\n"), Just("\r\n"), Just("\n\n")];
        prop_oneof![
            1 => Just(None),
            1 => prop_oneof![Just(String::new()), Just("  \n".to_owned()), Just("\n".to_owned())].prop_map(Some),
            6 => (object, layout, any::<bool>(), ending).prop_map(|(v, layout, crlf, end)| {
                let body = match layout {
                    0 => serde_json::to_string(&v).unwrap(),
                    1 => serde_json::to_string_pretty(&v).unwrap(),
                    2 => serde_json::to_string_pretty(&v).unwrap().replace("  ", "    "),
                    _ => serde_json::to_string(&v).unwrap().replace(':', ": ").replace(',', ", "),
                };
                let text = format!("{body}{end}");
                Some(if crlf { text.replace("\r\n", "\n").replace('\n', "\r\n") } else { text })
            }),
        ]
    }

    fn toml_text() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some(String::new())),
            Just(Some("# mine\n".to_owned())),
            Just(Some("model = \"o4\"".to_owned())),
            Just(Some(
                "model = \"o4\"\r\n\r\n[mcp_servers.github]\r\ncommand = \"gh\"\r\n".to_owned()
            )),
            Just(Some("[mcp_servers]\n".to_owned())),
        ]
    }

    /// Every file and folder under the repository and the user's HOME but setup's records.
    fn tree(m: &Machine) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Option<Vec<u8>>)>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries {
                let p = e.unwrap().path();
                if p.ends_with(".local") {
                    continue;
                }
                if p.is_dir() {
                    out.push((p.clone(), None));
                    walk(&p, out);
                } else {
                    out.push((p.clone(), Some(std::fs::read(&p).unwrap())));
                }
            }
        }
        let mut out = Vec::new();
        walk(&m.repo(), &mut out);
        walk(&m.user(), &mut out);
        out.sort();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn setup_then_uninstall_gives_every_file_its_bytes_back(
            harness in prop::sample::select(HARNESSES.to_vec()),
            user in any::<bool>(),
            texts in prop::collection::vec((json_text(), toml_text()), 2),
        ) {
            let m = Machine::new();
            for ((path, toml), (json, tml)) in files(&m, harness, user).into_iter().zip(texts) {
                if let Some(t) = if toml { tml } else { json } {
                    m.write(&path, &t);
                }
            }
            let before = tree(&m);
            let scope = if user { "--user" } else { "--project" };
            m.setup([harness, scope]).ok();
            prop_assert_ne!(&tree(&m), &before);
            m.setup([harness, scope]).ok();
            m.setup([harness, scope, "--uninstall"]).ok();
            let after = tree(&m);
            prop_assert_eq!(after, before, "{} {}", harness, scope);
        }
    }
}
/// A key written twice: the harness reads the last, an edit of the first would be invisible.
/// Setup refuses and changes nothing.
#[test]
fn a_config_with_a_duplicated_key_is_refused_unchanged() {
    for (file, text) in [
        (
            ".mcp.json",
            r#"{"mcpServers":{"a":{}},"mcpServers":{"b":{}}}"#,
        ),
        (
            ".claude/settings.json",
            r#"{"hooks":{"Stop":[]},"hooks":{"Stop":[]}}"#,
        ),
        (
            ".mcp.json",
            r#"{"mcpServers":{"mailroom":{"command":"x"},"mailroom":{"command":"y"}}}"#,
        ),
    ] {
        let m = Machine::new();
        m.write(&m.repo().join(file), text);
        let before = m.files();
        let run = m.setup(["claude"]).fails(2);
        assert!(
            run.stderr
                .contains("times and the harness reads only the last"),
            "{}",
            run.stderr
        );
        assert_eq!(m.files(), before, "{file}");
    }
}

/// `--url` is neither ignored (the harness would use another mailroom) nor written (it may
/// carry a password): setup refuses it, prints no password, and writes nothing.
#[test]
fn setup_refuses_url_without_printing_it_or_writing_anything() {
    let m = Machine::new();
    let before = m.files();
    let run = m
        .setup(["claude"])
        .args(["--url", "postgres://me:hunter2secret@127.0.0.1:5432/db"])
        .fails(2);
    assert!(run.stderr.contains(".mailroom.toml"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2secret") && !run.stdout.contains("hunter2secret"));
    assert_eq!(m.files(), before);
}

/// OpenCode's plugin folder, or its `.opencode`, being a link to elsewhere is refused like
/// Claude Code's `.claude`: setup writes nothing there (exit 4) and nothing anywhere.
#[test]
fn a_linked_plugin_folder_is_refused_and_nothing_is_written() {
    for (linked, scope) in [
        (".opencode", "--project"),
        (".opencode/plugins", "--project"),
        (".config/opencode/plugins", "--user"),
    ] {
        let m = Machine::new();
        let elsewhere = m.home.root().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let base = if scope == "--user" {
            m.user()
        } else {
            m.repo()
        };
        let link = base.join(linked);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let before = m.files();
        let run = m.setup(["opencode", scope]).run();
        assert_eq!(run.code, 4, "{linked}: {}", run.stderr);
        assert!(run.stderr.contains("is a symbolic link"), "{}", run.stderr);
        assert_eq!(
            std::fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "{linked}"
        );
        assert_eq!(m.files(), before, "{linked}");
    }
    // A linked XDG `.config` is the user's own arrangement: setup writes through it.
    let m = Machine::new();
    let elsewhere = m.home.root().join("dotfiles-config");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, m.user().join(".config")).unwrap();
    m.setup(["opencode", "--user"]).ok();
    assert!(elsewhere.join("opencode/plugins/mailroom.js").is_file());
}

/// Codex reads hooks from `hooks.json` and from `[hooks]` tables in `config.toml`, and warns
/// when both hold hooks: when the user keeps theirs in `config.toml`, mailroom's go there too.
#[test]
fn codex_hooks_go_where_the_user_keeps_theirs() {
    let m = Machine::new();
    let config = m.repo().join(".codex/config.toml");
    let original = "# mine\nmodel = \"o4\"\n\n[[hooks.PostToolUse]]\nmatcher = \"Bash\"\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"./lint.sh\"\n";
    m.write(&config, original);
    m.setup(["codex"]).ok();
    assert!(!m.repo().join(".codex/hooks.json").exists());
    let text = std::fs::read_to_string(&config).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    for event in ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"] {
        let groups = doc["hooks"][event].as_array().unwrap();
        let ours: Vec<&str> = groups
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter_map(|h| h["command"].as_str())
            .filter(|c| c.contains("mailroom hook codex"))
            .collect();
        assert_eq!(ours, [format!("{} hook codex {event}", bin())], "{text}");
    }
    assert!(text.contains("command = \"./lint.sh\""), "{text}");
    assert_eq!(
        doc["mcp_servers"]["mailroom"]["env_vars"],
        toml::Value::Array(
            ["MAILROOM_HOME", "MAILROOM_URL", "MAILROOM_AS"]
                .map(|v| toml::Value::String(v.into()))
                .to_vec()
        )
    );
    let check = m.setup([]).args(["--check", "codex"]).run();
    assert!(
        check
            .stdout
            .contains("codex (project): wired in: MCP server and hooks in"),
        "{}",
        check.stdout
    );
    assert!(m.setup(["codex"]).ok().stdout.contains("nothing to change"));
    m.setup(["codex", "--uninstall"]).ok();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);
}

/// One session, one mailroom: `setup --check` starts the hooks and the MCP server as the
/// harness would (Codex gives its servers a filtered environment) and says when they would open
/// different mailrooms, as an entry that does not forward `MAILROOM_HOME` makes them.
#[test]
fn check_proves_the_hooks_and_the_mcp_server_open_the_same_mailroom() {
    let m = Machine::new();
    let mail = m.home.root().join("elsewhere");
    m.setup(["codex"]).env("MAILROOM_HOME", &mail).ok();
    let same = m
        .setup([])
        .args(["--check", "codex"])
        .env("MAILROOM_HOME", &mail)
        .ok();
    assert!(
        same.stdout.contains(&format!(
            "the hooks and the MCP server open the same mailroom: {} as web@default",
            mail.display()
        )),
        "{}",
        same.stdout
    );
    let config = m.repo().join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    m.write(
        &config,
        &text
            .lines()
            .filter(|l| !l.starts_with("env_vars"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let split = m
        .setup([])
        .args(["--check", "codex"])
        .env("MAILROOM_HOME", &mail)
        .run();
    assert_eq!(split.code, 2, "{}{}", split.stdout, split.stderr);
    assert!(
        split.stdout.contains("DIFFERENT MAILROOMS"),
        "{}",
        split.stdout
    );
    assert!(
        split.stderr.contains("open different mailrooms"),
        "{}",
        split.stderr
    );
}

/// A repository's config is not trusted by `setup --check`: flags setup never writes, or a
/// `MAILROOM_URL` in the entry's `env` (it would log in to that host with the user's
/// `PGPASSWORD`), mean the program is not started for the comparison; the entry's
/// `MAILROOM_HOME` is honoured.
#[test]
fn check_starts_nothing_a_repository_config_adds_beyond_setups_flags() {
    let m = Machine::new();
    m.setup(["claude"]).ok();
    let mcp = m.repo().join(".mcp.json");
    let set = |server: Value| {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
        v["mcpServers"]["mailroom"] = server;
        m.write(&mcp, &serde_json::to_string_pretty(&v).unwrap());
    };
    set(json!({"type": "stdio", "command": "mailroom",
        "args": ["--url", "postgres://x@127.0.0.1:1/db", "mcp"]}));
    let out = m.setup([]).args(["--check", "claude"]).run();
    assert!(
        out.stdout
            .contains("flags setup does not write: not started"),
        "{}",
        out.stdout
    );
    set(
        json!({"type": "stdio", "command": "mailroom", "args": ["mcp"],
        "env": {"MAILROOM_URL": "postgres://x@127.0.0.1:1/db", "LD_PRELOAD": "/nonexistent.so"}}),
    );
    let out = m.setup([]).args(["--check", "claude"]).run();
    assert!(
        out.stdout.contains("a URL from a config is not dialled"),
        "{}",
        out.stdout
    );
    let elsewhere = m.home.root().join("elsewhere");
    set(
        json!({"type": "stdio", "command": "mailroom", "args": ["mcp"],
        "env": {"MAILROOM_HOME": elsewhere, "LD_PRELOAD": "/nonexistent.so"}}),
    );
    let out = m.setup([]).args(["--check", "claude"]).run();
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("DIFFERENT MAILROOMS"), "{}", out.stdout);
}

/// This release's version, which the launchers pin.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `--launcher uvx|npx`: every harness's MCP server and hooks start this release of mailroom
/// through the package runner (`uvx --from mailroom-cli==VERSION mailroom …`, `npx -y
/// mailroom-cli@VERSION …`), setup knows its entries again, and --uninstall gives every file
/// its bytes back, with or without the flag.
#[test]
fn a_launcher_starts_the_server_and_the_hooks_and_uninstall_restores_the_bytes() {
    let uvx_from = format!("mailroom-cli=={VERSION}");
    let npx_package = format!("mailroom-cli@{VERSION}");
    for (launcher, words) in [
        ("uvx", &["uvx", "--from", uvx_from.as_str(), "mailroom"][..]),
        ("npx", &["npx", "-y", npx_package.as_str()][..]),
    ] {
        let prefix = words.join(" ");
        let mcp: Vec<&str> = words[1..].iter().copied().chain(["mcp"]).collect();
        for harness in HARNESSES {
            let m = Machine::new();
            existing(&m, harness);
            let before = m.files();
            m.setup([harness, "--launcher", launcher]).ok();
            let again = m.setup([harness, "--launcher", launcher]).ok();
            assert!(
                again.stdout.contains("nothing to change"),
                "{launcher} {harness}: {}",
                again.stdout
            );
            // What is written, read back from a machine that had no configs (the existing
            // ones carry comments).
            let fresh = Machine::new();
            fresh.setup([harness, "--launcher", launcher]).ok();
            let r = fresh.repo();
            let read = |p: &str| -> Value {
                let text = std::fs::read_to_string(r.join(p)).unwrap();
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p}: {e}\n{text}"))
            };
            let server = match harness {
                "claude" => read(".mcp.json")["mcpServers"]["mailroom"].clone(),
                "gemini" => read(".gemini/settings.json")["mcpServers"]["mailroom"].clone(),
                "cursor" => read(".cursor/mcp.json")["mcpServers"]["mailroom"].clone(),
                "opencode" => read("opencode.json")["mcp"]["mailroom"].clone(),
                _ => {
                    let text = std::fs::read_to_string(r.join(".codex/config.toml")).unwrap();
                    let doc: toml::Table = toml::from_str(&text).unwrap();
                    serde_json::to_value(&doc["mcp_servers"]["mailroom"]).unwrap()
                }
            };
            if harness == "opencode" {
                let argv: Vec<&str> = std::iter::once(words[0]).chain(mcp.clone()).collect();
                assert_eq!(server["command"], json!(argv), "{launcher} {harness}");
                let plugin =
                    std::fs::read_to_string(r.join(".opencode/plugins/mailroom.js")).unwrap();
                let line = format!("const MAILROOM = {};", json!(words));
                assert!(plugin.contains(&line), "{launcher}: {plugin}");
            } else {
                assert_eq!(server["command"], words[0], "{launcher} {harness}");
                assert_eq!(server["args"], json!(mcp), "{launcher} {harness}");
            }
            let mut commands = Vec::new();
            for (path, bytes) in &fresh.files() {
                if path.extension().is_some_and(|e| e == "json") {
                    collect_commands(&serde_json::from_slice(bytes).unwrap(), &mut commands);
                }
            }
            assert_eq!(commands.is_empty(), harness == "opencode", "{harness}");
            for c in &commands {
                let tail = c.strip_prefix(&format!("{prefix} hook {harness} "));
                assert!(
                    tail.is_some_and(|e| !e.contains(' ')),
                    "{launcher} {harness}: {c}"
                );
            }
            if launcher == "uvx" {
                m.setup([harness, "--launcher", launcher, "--uninstall"])
                    .ok();
            } else {
                m.setup([harness, "--uninstall"]).ok();
            }
            assert_eq!(m.files(), before, "{launcher} {harness}: --uninstall");
        }
    }
    let m = Machine::new();
    let both = m
        .setup(["claude", "--launcher", "npx", "--binary", BIN])
        .run();
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert_eq!(m.setup(["claude", "--launcher", "pip"]).run().code, 2);
}

/// `setup --check` with a launcher: without the runner on PATH it says so and starts nothing;
/// with one, the hooks and the server are started through it, with setup's words.
#[test]
fn check_through_a_launcher_says_when_the_runner_is_missing_and_uses_it_when_there() {
    let m = Machine::new();
    m.setup(["claude", "--launcher", "uvx"]).ok();
    let out = m.setup([]).args(["--check", "claude"]).ok();
    assert!(
        out.stdout.contains(&format!(
            "program uvx --from mailroom-cli=={VERSION} mailroom: uvx is not installed here (not on PATH)"
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("the MCP server open the same mailroom: not known (uvx is not installed"),
        "{}",
        out.stdout
    );
    // A stand-in runner that checks setup's words and runs this build of mailroom.
    let uvx = m.home.root().join("bin").join("uvx");
    m.write(
        &uvx,
        &format!(
            "#!/bin/sh\n[ \"$1 $2 $3\" = \"--from mailroom-cli=={VERSION} mailroom\" ] || exit 9\nshift 3\nexec '{BIN}' \"$@\"\n"
        ),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&uvx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = m.setup([]).args(["--check", "claude"]).ok();
    assert!(
        out.stdout.contains(&format!(
            "program uvx --from mailroom-cli=={VERSION} mailroom: answers (mailroom"
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("the hooks and the MCP server open the same mailroom: "),
        "{}",
        out.stdout
    );
}

/// A runner that is not on PATH: setup still writes the launcher's entries (the harness may
/// have another PATH) and says so in one sentence on stderr, exit 0; with the runner there it
/// says nothing, and --uninstall never warns.
#[test]
fn a_launcher_not_on_path_is_written_with_a_warning() {
    for (launcher, provider) in [("uvx", "uv"), ("npx", "Node.js")] {
        let m = Machine::new();
        let run = m.setup(["claude", "--launcher", launcher]).ok();
        assert_eq!(
            run.stderr,
            format!(
                "warning: {launcher} is not on PATH here, so a harness started from this shell could not start mailroom through it either; install {provider}, or choose another --launcher\n"
            )
        );
        let mcp: Value =
            serde_json::from_str(&std::fs::read_to_string(m.repo().join(".mcp.json")).unwrap())
                .unwrap();
        assert_eq!(mcp["mcpServers"]["mailroom"]["command"], launcher, "{mcp}");
        let quiet = m
            .setup(["claude", "--launcher", launcher, "--uninstall"])
            .ok();
        assert_eq!(quiet.stderr, "");
        let runner = m.home.root().join("bin").join(launcher);
        m.write(&runner, "#!/bin/sh\nexit 0\n");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(m.setup(["claude", "--launcher", launcher]).ok().stderr, "");
    }
}

/// Launcher entries from another release (pinned to another version) or from before the pin
/// (the bare package) are setup's: --uninstall takes them out without a record, and nothing
/// else of the files.
#[test]
fn launcher_entries_of_any_release_are_taken_out_without_a_record() {
    let m = Machine::new();
    let r = m.repo();
    m.write(
        &r.join(".mcp.json"),
        "{\n  \"mcpServers\": {\n    \"github\": { \"command\": \"gh-mcp\" },\n    \"mailroom\": { \"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"mailroom-cli@0.0.9\", \"mcp\"] }\n  }\n}\n",
    );
    m.write(
        &r.join(".claude/settings.json"),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"uvx --from mailroom-cli mailroom hook claude Stop\" }] },\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"npx -y mailroom-cli@latest hook claude Stop\" }] }\n    ],\n    \"SessionStart\": [\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"uvx --from mailroom-cli==0.0.9 mailroom --as api@web hook claude SessionStart\" }] }\n    ]\n  }\n}\n",
    );
    m.setup(["claude", "--uninstall"]).ok();
    assert_eq!(
        std::fs::read_to_string(r.join(".mcp.json")).unwrap(),
        "{\n  \"mcpServers\": {\n    \"github\": { \"command\": \"gh-mcp\" }\n  }\n}\n"
    );
    // `@latest` is not a release setup pins: the user's own hook stays.
    assert_eq!(
        std::fs::read_to_string(r.join(".claude/settings.json")).unwrap(),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      { \"hooks\": [{ \"type\": \"command\", \"command\": \"npx -y mailroom-cli@latest hook claude Stop\" }] }\n    ]\n  }\n}\n"
    );
}

/// `setup HARNESS --remote URL --token-env VAR`: each harness's own HTTP form of the MCP
/// server entry, the token named by its variable in the harness's syntax and never written;
/// no hooks; a second run changes nothing; --uninstall (with or without --remote) gives every
/// file its bytes back.
#[test]
fn remote_writes_each_harness_http_entry_and_uninstall_restores_the_bytes() {
    const URL: &str = "https://mail.example.net/mcp";
    for harness in HARNESSES {
        for uninstall_with_remote in [true, false] {
            let m = Machine::new();
            existing(&m, harness);
            let before = m.files();
            let run = m
                .setup([harness, "--remote", URL, "--token-env", "WEB_TOKEN"])
                .env("WEB_TOKEN", "secret-token-value")
                .ok();
            assert_eq!(run.stderr, "", "{harness}");
            assert!(
                run.stdout.contains(&format!("\nremote: the MCP server entry reaches {URL} with the token from the environment variable WEB_TOKEN (set it where the harness starts); no hooks were written (they run mailroom on this machine), so mail reaches the agent when it calls mailroom's tools\n")),
                "{harness}: {}",
                run.stdout
            );
            let after = m.files();
            let changed: Vec<&PathBuf> = after
                .iter()
                .filter(|(p, b)| {
                    !p.starts_with(m.user().join(".local"))
                        && before.iter().find(|(q, _)| q == p).map(|(_, c)| c) != Some(b)
                })
                .map(|(p, _)| p)
                .collect();
            let r = m.repo();
            let (file, entry) = match harness {
                "claude" => (
                    ".mcp.json",
                    json!({"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}),
                ),
                "gemini" => (
                    ".gemini/settings.json",
                    json!({"httpUrl": URL, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}),
                ),
                "cursor" => (
                    ".cursor/mcp.json",
                    json!({"url": URL, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}}),
                ),
                "opencode" => (
                    "opencode.jsonc",
                    json!({"type": "remote", "url": URL, "headers": {"Authorization": "Bearer {env:WEB_TOKEN}"}, "enabled": true}),
                ),
                _ => (
                    ".codex/config.toml",
                    json!({"url": URL, "bearer_token_env_var": "WEB_TOKEN"}),
                ),
            };
            assert_eq!(
                changed,
                [&r.join(file)],
                "{harness}: only the server's file"
            );
            let text = std::fs::read_to_string(r.join(file)).unwrap();
            let got = if harness == "codex" {
                let doc: toml::Table = toml::from_str(&text).unwrap();
                serde_json::to_value(&doc["mcp_servers"]["mailroom"]).unwrap()
            } else {
                let container = if harness == "opencode" {
                    "mcp"
                } else {
                    "mcpServers"
                };
                // JSONC (comments) read back through the harness-agnostic parser setup uses.
                let v = jsonc_value(&text);
                v[container]["mailroom"].clone()
            };
            assert_eq!(got, entry, "{harness}: {text}");
            for (path, bytes) in &after {
                assert!(
                    !String::from_utf8_lossy(bytes).contains("secret-token-value"),
                    "{harness}: the token is in {}",
                    path.display()
                );
            }
            let again = m
                .setup([harness, "--remote", URL, "--token-env", "WEB_TOKEN"])
                .ok();
            assert!(again.stdout.contains("nothing to change"), "{harness}");
            let wired = format!(
                "{harness} (project): wired in over HTTP: MCP server in {} reaches {URL}, its token from WEB_TOKEN",
                r.join(file).display()
            );
            let unset = m.setup([]).args(["--check", harness]).ok();
            assert!(
                unset
                    .stdout
                    .contains(&format!("{wired} (NOT SET here); no hooks\n")),
                "{harness}: {}",
                unset.stdout
            );
            let set = m
                .setup([])
                .args(["--check", harness])
                .env("WEB_TOKEN", "x")
                .ok();
            assert!(
                set.stdout
                    .contains(&format!("{wired} (set here); no hooks\n")),
                "{harness}: {}",
                set.stdout
            );
            if uninstall_with_remote {
                m.setup([
                    harness,
                    "--remote",
                    URL,
                    "--token-env",
                    "WEB_TOKEN",
                    "--uninstall",
                ])
                .ok();
            } else {
                m.setup([harness, "--uninstall"]).ok();
            }
            assert_eq!(m.files(), before, "{harness}: --uninstall");
        }
    }
}

/// A remote entry set up elsewhere (no record here) is setup's: --uninstall takes it out.
#[test]
fn a_remote_entry_without_a_record_is_taken_out() {
    let m = Machine::new();
    m.write(
        &m.repo().join(".mcp.json"),
        "{\"mcpServers\":{\"github\":{\"command\":\"gh\"},\"mailroom\":{\"type\":\"http\",\"url\":\"https://m.example.net/mcp\",\"headers\":{\"Authorization\":\"Bearer ${ANN_TOKEN}\"}}}}\n",
    );
    m.setup(["claude", "--uninstall"]).ok();
    assert_eq!(
        std::fs::read_to_string(m.repo().join(".mcp.json")).unwrap(),
        "{\"mcpServers\":{\"github\":{\"command\":\"gh\"}}}\n"
    );
    // With the token itself in its header it is the user's own: refused, and kept.
    let theirs = "{\"mcpServers\":{\"mailroom\":{\"type\":\"http\",\"url\":\"https://m.example.net/mcp\",\"headers\":{\"Authorization\":\"Bearer abc123\"}}}}\n";
    m.write(&m.repo().join(".mcp.json"), theirs);
    let refused = m
        .setup(["claude", "--remote", "https://m.example.net/mcp"])
        .run();
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    assert!(!refused.stderr.contains("abc123"), "{}", refused.stderr);
    m.setup(["claude", "--uninstall"]).ok();
    assert_eq!(
        std::fs::read_to_string(m.repo().join(".mcp.json")).unwrap(),
        theirs
    );
}

/// `--remote` refusals (exit 2, one sentence, nothing written) and the plain-HTTP warning.
#[test]
fn remote_refusals_change_nothing_and_plain_http_elsewhere_warns() {
    let m = Machine::new();
    let before = m.files();
    for (args, says) in [
        (
            vec!["claude", "--remote", "ftp://m.example.net/mcp"],
            "is not an http:// or https:// URL",
        ),
        (
            vec!["claude", "--remote", "/mcp"],
            "is not an http:// or https:// URL",
        ),
        (vec!["claude", "--remote", "not a url"], "is not a URL"),
        (
            vec![
                "claude",
                "--remote",
                "https://ann:hunter2@m.example.net/mcp",
            ],
            "carries credentials",
        ),
        (
            vec![
                "claude",
                "--remote",
                "https://m.example.net/mcp",
                "--token-env",
                "1TOKEN",
            ],
            "is not an environment variable's name",
        ),
        (
            vec![
                "claude",
                "--remote",
                "https://m.example.net/mcp",
                "--as",
                "api@web",
            ],
            "--remote takes no --as or --home",
        ),
        (
            vec![
                "claude",
                "--remote",
                "https://m.example.net/mcp",
                "--launcher",
                "uvx",
            ],
            "cannot be used with",
        ),
        (vec!["claude", "--token-env", "T"], "--remote"),
        (
            vec!["git-hook", "--remote", "https://m.example.net/mcp"],
            "setup git-hook takes no --remote",
        ),
    ] {
        let run = m.setup(args.clone()).run();
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
        assert_eq!(m.files(), before, "{args:?}");
    }
    let plain = m
        .setup([
            "claude",
            "--remote",
            "http://m.example.net:7475/mcp",
            "--dry-run",
        ])
        .ok();
    assert_eq!(
        plain.stderr,
        "warning: http://m.example.net:7475/mcp is plain HTTP to another machine, so anyone on the path can read the token; serve it over HTTPS (mcp --listen with --tls-cert and --tls-key, or a TLS proxy) and use https://\n"
    );
    for local in [
        "http://127.0.0.1:7475/mcp",
        "http://localhost:7475/mcp",
        "http://[::1]:7475/mcp",
    ] {
        let run = m.setup(["claude", "--remote", local, "--dry-run"]).ok();
        assert_eq!(run.stderr, "", "{local}");
    }
}

/// A JSON or JSONC text's value (comments and trailing commas allowed).
fn jsonc_value(text: &str) -> Value {
    let stripped: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(&stripped).unwrap_or_else(|e| panic!("{e}: {text}"))
}
