"""`mailroom setup opencode`, then a real OpenCode session, headless (`opencode run`), against the
stand-in model of crates/mailroom-mcp/e2e/claude_code.py (the Anthropic Messages API), reached
through a custom provider built on OpenCode's bundled `@ai-sdk/anthropic`.

Asserted on the recorded requests: the pending mail is in the first request (the plugin's
system-prompt addition at the session's first request), and the request after the bash tool
carries the mail that tool made another agent send (the plugin's `tool.execute.after`).

Usage: python3 opencode_session.py PATH/TO/mailroom PATH/TO/opencode
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
sys.argv = sys.argv[:1] + [sys.argv[1], sys.argv[2]]
import claude_code as stand_in  # noqa: E402

MAILROOM, OPENCODE = sys.argv[1], sys.argv[2]
TIMEOUT = 180
TOOL_ID = "toolu_mailroom_bash_01"
FIRST, SECOND = "MAIL-ONE please review the schema", "MAIL-TWO the deploy moved to 5pm"
FINAL = "Finished the task."

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:3000]}", file=sys.stderr)


def is_main(request):
    return any(isinstance(t, dict) and t.get("name") == "bash" for t in request.get("tools") or [])


def scripted(request):
    if not is_main(request):
        return None
    if TOOL_ID not in stand_in.tool_results(request.get("messages")):
        return {"type": "tool_use", "id": TOOL_ID, "name": "bash",
                "input": {"command": f"mailroom --as api send --to web -m '{SECOND}'",
                          "description": "another agent sends mail"}}
    return {"type": "text", "text": FINAL}


stand_in.scripted = scripted


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-opencode-session-"))
    try:
        run(work)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"opencode session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"opencode session e2e: ok, after `mailroom setup opencode`: the first request and the one after "
          f"a tool carried the mail, in {took:.1f} s")


def run(work):
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user / ".config" / "opencode", repo, bin_dir):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    log = work / "requests.jsonl"
    log.write_text("")
    stand_in.Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), stand_in.Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    (user / ".config" / "opencode" / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"stub": {"npm": "@ai-sdk/anthropic", "name": "stub",
                              "options": {"baseURL": f"{url}/v1", "apiKey": "sk-ant-stub-not-a-key"},
                              "models": {"stub-model": {"name": "stub-model", "tool_call": True}}}},
        "model": "stub/stub-model",
        "small_model": "stub/stub-model",
        "permission": {"bash": "allow"},
        "share": "disabled",
        "autoupdate": False,
    }))
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "XDG_CONFIG_HOME": str(user / ".config"),
        "XDG_DATA_HOME": str(user / ".local" / "share"),
        "XDG_CACHE_HOME": str(user / ".cache"),
        "XDG_STATE_HOME": str(user / ".local" / "state"),
        "MAILROOM_HOME": str(mail),
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "OPENCODE_DISABLE_AUTOUPDATE": "true",
        "OPENCODE_DISABLE_MODELS_FETCH": "true",
        "NO_COLOR": "1",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    mailroom("--as", "api", "send", "--to", "web", "-m", FIRST)
    mailroom("setup", "opencode")

    cmd = [OPENCODE, "run", "Do the task."]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"opencode finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check("opencode exits 0", proc.returncode == 0, f"exit {proc.returncode}: {out[-1500:]} {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    main_requests = [r["body"] for r in requests
                     if r["method"] == "POST" and isinstance(r["body"], dict) and is_main(r["body"])]
    texts = [json.dumps(r.get("messages")) + json.dumps(r.get("system")) for r in main_requests]
    check("two requests at least: the start and after the bash tool", len(main_requests) >= 2,
          f"{len(main_requests)} main requests; stdout {out[-1500:]} stderr {err[-2000:]}")
    if texts:
        check("the first request carries the mail waiting before the session", FIRST in texts[0], texts[0][-3000:])
    if len(texts) > 1:
        check("the request after the bash tool carries the new mail", SECOND in texts[1], texts[1][-3000:])
    reminded = sum("still pending for web@default" in t.split("MAIL-TWO")[-1] for t in texts)
    print(f"opencode: {len(texts)} main requests; {reminded} carry the stop reminder")


if __name__ == "__main__":
    main()
