"""File reservations in a real Claude Code session, headless, after `mailroom setup claude`,
against the stand-in model of crates/mailroom-mcp/e2e/claude_code.py (same pinned Claude Code,
same stub server, another script).

Another agent (`api`) holds `src/api/**`. The scripted model reads `src/api/users.rs`, then calls
`Edit` on it. Asserted on the requests the stand-in recorded and on the file:
1. by default the edit goes ahead (the file changed) and the request after the edit carries the
   pre-edit hook's notice: framed as untrusted data, naming the holder and the pattern;
2. enforcing (`MAILROOM_ENFORCE_RESERVATIONS=1`, no hook edited), the edit is refused: the file
   is unchanged and the refusal, with the same words, is the Edit's result in the next request.

Usage: python3 claude_reserve_session.py PATH/TO/mailroom PATH/TO/claude
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
READ_ID, EDIT_ID = "toolu_mailroom_read_01", "toolu_mailroom_edit_01"
ORIGINAL, CHANGED = "fn users() {}\n", "fn users_v2() {}\n"
REASON = "moving the users endpoint"
FINAL = "Finished the task."

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:3000]}", file=sys.stderr)


def is_main(request):
    """A request of the main conversation: the one that offers the Edit tool."""
    return any(isinstance(t, dict) and t.get("name") == "Edit" for t in request.get("tools") or [])


def scripted_for(target):
    def scripted(request):
        if not is_main(request):
            return None
        done = stand_in.tool_results(request.get("messages"))
        if READ_ID not in done:
            return {"type": "tool_use", "id": READ_ID, "name": "Read", "input": {"file_path": target}}
        if EDIT_ID not in done:
            return {"type": "tool_use", "id": EDIT_ID, "name": "Edit",
                    "input": {"file_path": target, "old_string": ORIGINAL.strip(),
                              "new_string": CHANGED.strip()}}
        return {"type": "text", "text": FINAL}
    return scripted


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-claude-reserve-"))
    try:
        for enforce in (False, True):
            session(work / ("enforced" if enforce else "advisory"), enforce)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"claude-code reservation session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"claude-code reservation session e2e: ok, Claude Code {stand_in.VERSION} after `mailroom setup claude`: "
          f"the Edit of a reserved file carried the notice to the model, and enforcing refused it, in {took:.1f} s")


def session(work, enforce):
    what = "enforcing" if enforce else "by default"
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user, repo / "src" / "api", bin_dir):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    target = repo / "src" / "api" / "users.rs"
    target.write_text(ORIGINAL)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    log = work / "requests.jsonl"
    log.write_text("")

    stand_in.scripted = scripted_for(str(target))
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
        check(f"{what}: mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    mailroom("--as", "api", "reserve", "src/api/**", "--reason", REASON)
    mailroom("setup", "claude")
    if enforce:
        env["MAILROOM_ENFORCE_RESERVATIONS"] = "1"

    cmd = [CLAUDE, "-p", "Do the task.", "--output-format", "stream-json", "--verbose",
           "--allowedTools", "Read,Edit", "--permission-mode", "dontAsk"]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        check(f"{what}: claude finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check(f"{what}: claude exits 0", proc.returncode == 0, f"exit {proc.returncode}: {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    main_requests = [r["body"] for r in requests
                     if r["method"] == "POST" and isinstance(r["body"], dict) and is_main(r["body"])]
    after_edit = [r for r in main_requests if EDIT_ID in stand_in.tool_results(r.get("messages"))]
    check(f"{what}: a request follows the Edit", after_edit, f"{len(main_requests)} main requests")
    if not after_edit:
        return
    text = json.dumps(after_edit[0].get("messages"))
    result = stand_in.tool_results(after_edit[0].get("messages"))[EDIT_ID]
    for needle in ("UNTRUSTED DATA", "api@default holds 'src/api/**' until", REASON, "mailroom send --to api@default"):
        check(f"{what}: the request after the Edit carries the notice ({needle})", needle in text, text[-3000:])
    if enforce:
        check("enforcing: the file is unchanged", target.read_text() == ORIGINAL, target.read_text())
        check("enforcing: the Edit's result is the refusal", result["is_error"] and "The edit was refused" in result["text"],
              result)
    else:
        check("by default: the edit went ahead", target.read_text() == CHANGED, target.read_text())
        check("by default: the Edit succeeded", not result["is_error"], result)
        check("by default: the notice says the edit goes ahead", "The edit goes ahead" in text, text[-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT" or not r["path"].startswith("/")]
    check(f"{what}: no request tried to leave the machine", not outside, outside)
    start = text.find("mailroom: file reservation notice")
    print(f"{what}, the notice as the model got it:")
    print(text[start:start + 600].encode().decode("unicode_escape", "replace") if start >= 0 else "(none)")


if __name__ == "__main__":
    main()
