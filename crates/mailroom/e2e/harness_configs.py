#!/usr/bin/env python3
"""The configs `mailroom setup` writes, read back by each harness's own CLI, offline.

Usage: harness_configs.py MAILROOM CLAUDE HARNESS_BIN_DIR

For each harness, in a temporary HOME and git repository whose configs already hold another
MCP server and another hook: `mailroom setup HARNESS` (project scope, then user scope), then
the harness's CLI must see the mailroom server (and, where it lists them, the hooks) and must
report no invalid settings; `--uninstall` must give back the original bytes.

  claude:   `claude mcp get mailroom`, `claude mcp list` (starts the server: Connected),
            `claude doctor` (its "Invalid settings" section must not name our files)
  codex:    `codex mcp list --json`, and the `hooks/list` request of `codex app-server`
  gemini:   `gemini mcp list` (starts the server: Connected)
  opencode: `opencode debug config --pure`, also after `setup opencode --launcher npx`
  remote:   `setup HARNESS --remote URL` against a live `mailroom mcp --listen`, the token in
            MAILROOM_TOKEN: `claude mcp list`, `gemini mcp list` and `opencode mcp list` connect
            (the server refuses a request without the token), `codex mcp list --json` shows it

Cursor has no CLI that can be installed here; its shapes are pinned from its documentation by
the Rust tests.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

MAILROOM, CLAUDE, BIN_DIR = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
# setup writes the absolute path of the program that runs it, links resolved; it is run here
# as `mailroom` through a link on PATH.
REAL = os.path.realpath(MAILROOM)
# The launchers pin the release that ran setup: `npx -y mailroom-cli@VERSION`.
VERSION = subprocess.run([MAILROOM, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Machine:
    def __init__(self, tmp):
        self.root = pathlib.Path(tmp)
        self.home = self.root / "home"
        self.repo = self.root / "src" / "web"
        self.bin = self.root / "bin"
        for d in (self.home, self.repo, self.bin):
            d.mkdir(parents=True)
        (self.bin / "mailroom").symlink_to(MAILROOM)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MAILROOM_", "CODEX_", "GEMINI_", "ANTHROPIC_", "CLAUDE", "OPENCODE"))
        }
        self.env.update(
            HOME=str(self.home),
            PATH=f"{self.bin}:{os.environ['PATH']}",
            MAILROOM_HOME=str(self.root / "mail"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            NO_COLOR="1",
            CI="true",
        )

    def write(self, rel, text, base=None):
        p = (base or self.repo) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def run(self, *args, stdin=None, timeout=120):
        return subprocess.run(
            list(args),
            cwd=self.repo,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def snapshot(self):
        files = {}
        for top in (self.repo, self.home):
            for p in top.rglob("*"):
                if p.is_file() and ".git" not in p.relative_to(top).parts[:1]:
                    files[str(p)] = p.read_bytes()
        return files

    def setup(self, harness, *flags):
        r = self.run("mailroom", "setup", harness, *flags)
        check(r.returncode == 0, f"{harness}: mailroom setup {harness} {' '.join(flags)} ({r.stderr.strip()})")
        return r


def roundtrip(m, harness, validate, *, rewritten=(), flags=()):
    """setup at both scopes, validate, a second run changes nothing, uninstall restores.

    The harness's own runs leave files of theirs (logs, caches, state); they are not ours.
    `rewritten` names files the harness itself rewrites when it runs (Claude Code's
    ~/.claude.json): they must merely hold nothing of mailroom's afterwards. `flags` go to
    every setup run (`--launcher npx`)."""
    before = m.snapshot()
    print(m.setup(harness, *flags).stdout)
    m.setup(harness, "--user", *flags)
    validate()
    again = m.run("mailroom", "setup", harness, *flags)
    check("nothing to change" in again.stdout, f"{harness}: second run changes nothing")
    m.setup(harness, "--uninstall", *flags)
    m.setup(harness, "--user", "--uninstall", *flags)
    after = m.snapshot()
    changed = [p for p, b in before.items() if after.get(p) != b and p not in rewritten]
    check(not changed, f"{harness}: --uninstall restores the original bytes {changed}")
    leftovers = [p for p in after if p not in before and b"mailroom" in after[p] and "/.git/" not in p
                 and not any(x in p for x in ("/log", "/sessions/", "/tmp/", "/cache", ".sqlite", "/state", "/history"))]
    check(not leftovers, f"{harness}: nothing of mailroom's left behind {leftovers}")
    for p in rewritten:
        check(b"mailroom" not in after.get(p, b""), f"{harness}: {p} holds nothing of mailroom's")


def claude():
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-claude-") as tmp:
        m = Machine(tmp)
        # Claude Code reads settings.json as strict JSON: no comments here.
        m.write(".mcp.json", '{\n  "mcpServers": {\n    "github": { "command": "gh-mcp", "args": [] }\n  }\n}\n')
        m.write(".claude/settings.json", '{\n  "permissions": { "allow": ["Bash(cargo test:*)"] },\n  "hooks": {\n    "Stop": [\n      { "hooks": [{ "type": "command", "command": "true" }] }\n    ]\n  }\n}\n')
        m.write(".claude.json", '{\n  "numStartups": 3,\n  "mcpServers": {}\n}\n', base=m.home)

        def validate():
            r = m.run(CLAUDE, "mcp", "get", "mailroom", stdin="")
            check(r.returncode == 0 and f"Command: {REAL}\n" in r.stdout and "Args: mcp" in r.stdout,
                  f"claude mcp get mailroom:\n{r.stdout}{r.stderr}")
            r = m.run(CLAUDE, "mcp", "list", stdin="")
            check(f"mailroom: {REAL} mcp - ✔ Connected" in r.stdout, f"claude mcp list starts it:\n{r.stdout}{r.stderr}")
            r = m.run(CLAUDE, "doctor", stdin="")
            invalid = r.stdout.split("Invalid settings", 1)[1].split("\n\n", 1)[0] if "Invalid settings" in r.stdout else ""
            ours = [str(m.repo / ".claude/settings.json"), str(m.home / ".claude/settings.json"),
                    str(m.repo / ".mcp.json"), str(m.home / ".claude.json")]
            check(r.returncode == 0 and not any(p in invalid for p in ours), f"claude doctor names none of our files:\n{invalid}")

        # Claude Code itself rewrites ~/.claude.json (startup counters, caches) when it runs.
        roundtrip(m, "claude", validate, rewritten=(str(m.home / ".claude.json"),))


def codex():
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-codex-") as tmp:
        m = Machine(tmp)
        m.write(".codex/config.toml", '# the team\'s Codex settings\n[mcp_servers.github]\ncommand = "gh-mcp" # keep\nargs = []\n')
        m.write(".codex/hooks.json", '{\n  "hooks": {\n    "PostToolUse": [\n      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "true" }] }\n    ]\n  }\n}\n')
        # Codex reads a project's .codex/ only once the project is trusted.
        m.write(".codex/config.toml", f'# mine\n[projects."{m.repo}"]\ntrust_level = "trusted"\n', base=m.home)
        codex_bin = str(BIN_DIR / "codex")

        def validate():
            r = m.run(codex_bin, "mcp", "list", "--json")
            try:
                servers = {s["name"]: s for s in json.loads(r.stdout)}
            except (ValueError, KeyError, TypeError):
                servers = {}
            got = servers.get("mailroom", {}).get("transport", {})
            check(got.get("command") == REAL and got.get("args") == ["mcp"] and "github" in servers,
                  f"codex mcp list --json:\n{r.stdout}{r.stderr}")
            # Codex starts MCP servers with a filtered environment: the server must get the
            # variables that name the mailroom, as the hooks do.
            check(got.get("env_vars") == ["MAILROOM_HOME", "MAILROOM_URL", "MAILROOM_AS"],
                  f"codex forwards MAILROOM_*: {got}")
            hooks, _ = app_server_hooks(m, codex_bin)
            events = sorted(h["eventName"] for h in hooks if h.get("command", "").startswith(f"{REAL} hook codex"))
            # Both scopes: each event once from .codex/hooks.json and once from ~/.codex/hooks.json.
            check(events == sorted(["postToolUse", "preToolUse", "sessionStart", "stop", "userPromptSubmit"] * 2),
                  f"codex app-server hooks/list: {events}")
            pre = [h.get("matcher") for h in hooks if h.get("command", "").startswith(f"{REAL} hook codex PreToolUse")]
            check(pre == ["apply_patch"] * 2, f"codex app-server hooks/list: the pre-edit hook on apply_patch: {pre}")

        roundtrip(m, "codex", validate)


def app_server_hooks(m, codex_bin):
    p = subprocess.Popen([codex_bin, "app-server"], cwd=m.repo, env=m.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        def send(o):
            p.stdin.write(json.dumps(o) + "\n")
            p.stdin.flush()

        def recv(i):
            for line in p.stdout:
                msg = json.loads(line)
                if msg.get("id") == i:
                    return msg
            return {}

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "mailroom-e2e", "version": "0"}}})
        recv(1)
        send({"jsonrpc": "2.0", "method": "initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(m.repo)]}})
        reply = recv(2)
        data = reply.get("result", {}).get("data", [])
        return [h for d in data for h in d.get("hooks", [])], json.dumps(data)
    finally:
        p.kill()
        p.wait()


def codex_toml():
    """A user who keeps hooks in config.toml: mailroom's go there too, in one representation."""
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-codex-toml-") as tmp:
        m = Machine(tmp)
        m.write(".codex/config.toml", '# the team\'s Codex settings\n[[hooks.PostToolUse]]\nmatcher = "Bash"\n[[hooks.PostToolUse.hooks]]\ntype = "command"\ncommand = "true"\n')
        m.write(".codex/config.toml", f'# mine\n[projects."{m.repo}"]\ntrust_level = "trusted"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "true"\n', base=m.home)
        codex_bin = str(BIN_DIR / "codex")

        def validate():
            check(not (m.repo / ".codex" / "hooks.json").exists() and not (m.home / ".codex" / "hooks.json").exists(),
                  "codex: no hooks.json beside a config.toml that holds hooks")
            hooks, raw = app_server_hooks(m, codex_bin)
            events = sorted(h["eventName"] for h in hooks if h.get("command", "").startswith(f"{REAL} hook codex"))
            ok = events == sorted(["postToolUse", "preToolUse", "sessionStart", "stop", "userPromptSubmit"] * 2)
            check(ok, f"codex app-server hooks/list (config.toml): {events}" + ("" if ok else f"\n{raw[:3000]}"))
            ok = "single representation" not in raw
            check(ok, "codex sees one representation of hooks" + ("" if ok else f": {raw[:3000]}"))

        roundtrip(m, "codex", validate)


def gemini():
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-gemini-") as tmp:
        m = Machine(tmp)
        m.write(".gemini/settings.json", '{\n  // project settings\n  "mcpServers": {\n    "github": { "command": "gh-mcp" }\n  },\n  "hooks": {\n    "AfterTool": [\n      { "matcher": "write_file", "hooks": [{ "type": "command", "command": "true" }] }\n    ]\n  }\n}\n')
        # Gemini CLI starts no MCP server in a folder it does not trust.
        m.write(".gemini/trustedFolders.json", json.dumps({str(m.repo): "TRUST_FOLDER"}), base=m.home)

        def validate():
            r = m.run(str(BIN_DIR / "gemini"), "mcp", "list")
            out = r.stdout + r.stderr
            check(f"mailroom: {REAL} mcp (stdio) - Connected" in out and "github" in out, f"gemini mcp list:\n{out}")

        roundtrip(m, "gemini", validate)


def opencode():
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-opencode-") as tmp:
        m = Machine(tmp)
        m.write("opencode.jsonc", '{\n  "$schema": "https://opencode.ai/config.json",\n  // our servers\n  "mcp": {\n    "github": { "type": "local", "command": ["gh-mcp"] }\n  }\n}\n')

        def validate():
            r = m.run(str(BIN_DIR / "opencode"), "debug", "config", "--pure")
            try:
                cfg = json.loads(r.stdout)
            except ValueError:
                cfg = {}
            mcp = cfg.get("mcp", {})
            plugins = cfg.get("plugin", [])
            check(mcp.get("mailroom") == {"type": "local", "command": [REAL, "mcp"], "enabled": True} and "github" in mcp,
                  f"opencode debug config: mcp\n{r.stdout[:2000]}{r.stderr[:2000]}")
            check(any(str(p).endswith(".opencode/plugins/mailroom.js") for p in plugins)
                  and any(str(p).endswith("opencode/plugins/mailroom.js") and ".config" in str(p) for p in plugins),
                  f"opencode loads both plugins: {plugins}")

        roundtrip(m, "opencode", validate)


def opencode_npx():
    """`--launcher npx`: OpenCode reads the server as `npx -y mailroom-cli@VERSION mcp` (not started)."""
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-opencode-npx-") as tmp:
        m = Machine(tmp)

        def validate():
            r = m.run(str(BIN_DIR / "opencode"), "debug", "config", "--pure")
            try:
                cfg = json.loads(r.stdout)
            except ValueError:
                cfg = {}
            want = {"type": "local", "command": ["npx", "-y", f"mailroom-cli@{VERSION}", "mcp"], "enabled": True}
            check(cfg.get("mcp", {}).get("mailroom") == want,
                  f"opencode debug config (--launcher npx): mcp\n{r.stdout[:2000]}{r.stderr[:2000]}")

        roundtrip(m, "opencode", validate, flags=("--launcher", "npx"))


def remote():
    """`setup HARNESS --remote URL`: each harness's HTTP entry, its token read from
    MAILROOM_TOKEN, against a live `mailroom mcp --listen` on loopback: Claude Code and Gemini
    CLI connect to it, Codex lists it as Streamable HTTP with the variable, OpenCode resolves
    `{env:MAILROOM_TOKEN}` to the token; `--uninstall` restores every byte."""
    with tempfile.TemporaryDirectory(prefix="mailroom-setup-remote-") as tmp:
        m = Machine(tmp)
        r = m.run("mailroom", "--as", "HUMAN", "token", "add", "web@web")
        token = r.stdout.strip()
        check(r.returncode == 0 and token.startswith("mailroom_"), f"token add ({r.stderr.strip()})")
        server = subprocess.Popen(["mailroom", "mcp", "--listen", "127.0.0.1:0"], cwd=m.repo, env=m.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = server.stdout.readline().strip()
            check(url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), f"mcp --listen serves {url}")
            m.env["MAILROOM_TOKEN"] = token
            flags = ("--remote", url)

            def claude_ok():
                r = m.run(CLAUDE, "mcp", "list", stdin="")
                line = next((l for l in r.stdout.splitlines() if l.startswith("mailroom:")), "")
                check(url in line and "✔ Connected" in line, f"claude mcp list connects over HTTP:\n{r.stdout}{r.stderr}")
                r = m.run(CLAUDE, "doctor", stdin="")
                invalid = r.stdout.split("Invalid settings", 1)[1].split("\n\n", 1)[0] if "Invalid settings" in r.stdout else ""
                ours = [str(m.repo / ".mcp.json"), str(m.home / ".claude.json")]
                check(r.returncode == 0 and not any(p in invalid for p in ours),
                      f"claude doctor names none of our files (remote):\n{invalid}")

            def codex_ok():
                r = m.run(str(BIN_DIR / "codex"), "mcp", "list", "--json")
                try:
                    servers = {s["name"]: s for s in json.loads(r.stdout)}
                except (ValueError, KeyError, TypeError):
                    servers = {}
                got = servers.get("mailroom", {}).get("transport", {})
                check(got.get("type") == "streamable_http" and got.get("url") == url
                      and got.get("bearer_token_env_var") == "MAILROOM_TOKEN",
                      f"codex mcp list --json (remote): {got or r.stdout + r.stderr}")

            def gemini_ok():
                m.write(".gemini/trustedFolders.json", json.dumps({str(m.repo): "TRUST_FOLDER"}), base=m.home)
                r = m.run(str(BIN_DIR / "gemini"), "mcp", "list")
                out = r.stdout + r.stderr
                check(f"mailroom: {url} (http) - Connected" in out, f"gemini mcp list connects over HTTP:\n{out}")

            def opencode_ok():
                # `debug config` shows headers as ***: `mcp list` connects with them.
                r = m.run(str(BIN_DIR / "opencode"), "debug", "config", "--pure")
                try:
                    got = json.loads(r.stdout).get("mcp", {}).get("mailroom")
                except ValueError:
                    got = None
                check(isinstance(got, dict) and got.get("type") == "remote" and got.get("url") == url,
                      f"opencode debug config (remote): {got}")
                # The server answers 401 without the token, so connecting proves it was read.
                r = m.run(str(BIN_DIR / "opencode"), "mcp", "list", "--pure")
                out = r.stdout.replace("\x1b[90m", "").replace("\x1b[0m", "")
                check("✓ mailroom connected" in out and url in out, f"opencode mcp list connects over HTTP:\n{out[-2000:]}{r.stderr[-2000:]}")

            for harness, validate in (("claude", claude_ok), ("codex", codex_ok), ("gemini", gemini_ok),
                                      ("opencode", opencode_ok)):
                before = m.snapshot()
                roundtrip(m, harness, validate, flags=flags,
                          rewritten=(str(m.home / ".claude.json"),) if harness == "claude" else ())
                after = m.snapshot()
                check(not any(token.encode() in b for b in after.values()), f"{harness}: the token is in no file")
        finally:
            server.kill()
            server.wait()


only = [h for h in os.environ.get("HARNESS_CONFIGS_ONLY", "").split(",") if h]
for harness in (claude, codex, codex_toml, gemini, opencode, opencode_npx, remote):
    if not only or harness.__name__ in only:
        harness()
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("harness configs: all passed")
