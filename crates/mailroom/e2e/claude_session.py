"""`mailroom setup claude`, then a real Claude Code session, headless, against the stand-in model
of crates/mailroom-mcp/e2e/claude_code.py (same pinned Claude Code, same stub server, reused
here with another script).

The story, asserted on the requests the stand-in recorded:
1. mail waiting before the session is in the first request (the SessionStart hook);
2. the scripted model runs a Bash command that makes another agent send mail; the next request
   carries that mail (the PostToolUse hook);
3. with directed mail still pending when the model ends its turn, the Stop hook sends the
   session back once with the reminder, and not a second time.

Usage: python3 claude_session.py PATH/TO/mailroom PATH/TO/claude
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "mailroom-mcp" / "e2e"))
import claude_code as stand_in  # noqa: E402  (the stub model server, its SSE and helpers)

MAILROOM, CLAUDE = sys.argv[1], sys.argv[2]
TIMEOUT = 180
BASH_ID = "toolu_mailroom_bash_01"
FIRST, SECOND = "MAIL-ONE please review the schema", "MAIL-TWO the deploy moved to 5pm"
FINAL = "Finished the task."
REMINDER = "still pending for web@default"

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:3000]}", file=sys.stderr)


def is_main(request):
    """A request of the main conversation: the one that offers the Bash tool."""
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in request.get("tools") or [])


def scripted(request):
    if not is_main(request):
        return None
    done = stand_in.tool_results(request.get("messages"))
    if BASH_ID not in done:
        return {"type": "tool_use", "id": BASH_ID, "name": "Bash",
                "input": {"command": f"mailroom --as api send --to web -m '{SECOND}'",
                          "description": "another agent sends mail"}}
    return {"type": "text", "text": FINAL}


stand_in.scripted = scripted


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-claude-session-"))
    try:
        run(work)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"claude-code session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"claude-code session e2e: ok, Claude Code {stand_in.VERSION} after `mailroom setup claude`: "
          f"SessionStart, PostToolUse and one Stop continuation carried the mail, in {took:.1f} s")


def run(work):
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user, repo / ".git", bin_dir):
        d.mkdir(parents=True)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    log = work / "requests.jsonl"
    log.write_text("")

    stand_in.Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), stand_in.Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "CLAUDE_CONFIG_DIR": str(user / ".claude"),
        "MAILROOM_HOME": str(mail),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ENABLE_TOOL_SEARCH": "false",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    mailroom("--as", "api", "send", "--to", "web", "-m", FIRST)
    print(mailroom("setup", "claude"))

    cmd = [CLAUDE, "-p", "Do the task.", "--output-format", "stream-json", "--verbose",
           "--allowedTools", "Bash", "--permission-mode", "dontAsk"]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"claude finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check("claude exits 0", proc.returncode == 0, f"exit {proc.returncode}: {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    main_requests = [r["body"] for r in requests
                     if r["method"] == "POST" and isinstance(r["body"], dict) and is_main(r["body"])]
    texts = [json.dumps(r.get("messages")) + json.dumps(r.get("system")) for r in main_requests]
    check("three requests: the start, after the Bash command, after the Stop reminder",
          len(main_requests) == 3, f"{len(main_requests)} main requests:\n" + "\n---\n".join(t[-1500:] for t in texts))
    if not texts:
        return
    check("the first request carries the mail waiting before the session (SessionStart)",
          FIRST in texts[0] and SECOND not in texts[0], texts[0][-3000:])
    if len(texts) > 1:
        check("the request after the Bash command carries the new mail (PostToolUse)",
              SECOND in texts[1], texts[1][-3000:])
        check("no reminder before the model stops", REMINDER not in texts[1], texts[1][-3000:])
    if len(texts) > 2:
        check("the Stop hook sent the session back with the reminder", REMINDER in texts[2], texts[2][-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT" or not r["path"].startswith("/")]
    check("no request tried to leave the machine", not outside, outside)
    print("first request's mailroom context, as the model got it:")
    start = texts[0].find("=== mailroom:")
    print(texts[0][start:start + 800].encode().decode("unicode_escape", "replace") if start >= 0 else "(none)")


if __name__ == "__main__":
    main()
