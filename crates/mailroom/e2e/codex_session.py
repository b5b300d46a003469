"""`mailroom setup codex`, then a real Codex session, headless (`codex exec`), against a local
OpenAI-compatible stand-in (a custom model provider whose `base_url` is a small HTTP server here
that records every request and answers the Responses API, streamed, from a script).

Asserted on the recorded requests, as for Claude Code (claude_session.py):
1. mail waiting before the session is in the first request (SessionStart);
2. the model runs a shell command that makes another agent send mail; the next request carries
   it (PostToolUse);
3. with directed mail still pending when the model ends its turn, Stop sends the session back
   once with the reminder, not twice.

Usage: python3 codex_session.py PATH/TO/mailroom PATH/TO/codex
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAILROOM, CODEX = sys.argv[1], sys.argv[2]
TIMEOUT = 180
FIRST, SECOND = "MAIL-ONE please review the schema", "MAIL-TWO the deploy moved to 5pm"
FINAL = "Finished the task."
REMINDER = "still pending for web@default"
CALL_ID = "call_mailroom_shell_01"

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:3000]}", file=sys.stderr)


def tool_names(body):
    return {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}


def is_main(body):
    return bool(tool_names(body) & {"shell", "shell_command", "exec_command"})


def shell_call(body):
    """A call of whichever shell tool this Codex offers."""
    command = f"mailroom --as api send --to web -m '{SECOND}'"
    names = tool_names(body)
    if "exec_command" in names:
        name, args = "exec_command", {"cmd": command}
    elif "shell_command" in names:
        name, args = "shell_command", {"command": command}
    else:
        name, args = "shell", {"command": ["bash", "-lc", command]}
    return {"type": "function_call", "id": "fc_1", "call_id": CALL_ID, "name": name,
            "arguments": json.dumps(args)}


def answered(body):
    return any(isinstance(i, dict) and i.get("type", "").endswith("_output") and i.get("call_id") == CALL_ID
               for i in body.get("input") or [])


def scripted(body):
    if not is_main(body):
        return {"type": "message", "role": "assistant", "id": "msg_side",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
    if not answered(body):
        return shell_call(body)
    return {"type": "message", "role": "assistant", "id": "msg_final",
            "content": [{"type": "output_text", "text": FINAL, "annotations": []}]}


def sse(item):
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    events = [
        {"type": "response.created", "response": {"id": "resp_stub"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_stub", "usage": usage}},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


class Stub(BaseHTTPRequestHandler):
    log_path = None
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def record(self, body):
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def reply(self, status, data, content_type="application/json"):
        data = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")[:2000]}
        self.record(body)
        if not self.path.split("?")[0].endswith("/responses"):
            return self.reply(200, {})
        return self.reply(200, sse(scripted(body)), "text/event-stream")

    def do_GET(self):
        self.record(None)
        if self.path.split("?")[0].endswith("/models"):
            return self.reply(200, {"object": "list", "data": [], "models": []})
        self.reply(200, {})

    def do_CONNECT(self):
        self.record(None)
        self.reply(403, {"error": "no outside connections in this test"})


def trust_hooks(repo, env, config):
    """What a user does in Codex's /hooks review: trust each new hook at its current hash
    (`[hooks.state."KEY"] trusted_hash`, the value `codex app-server`'s hooks/list reports).
    Codex runs no hook it was not told to trust; setup leaves that decision to the user."""
    p = subprocess.Popen([CODEX, "app-server"], cwd=repo, env=env, stdin=subprocess.PIPE,
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

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"clientInfo": {"name": "mailroom-e2e", "version": "0"}}})
        recv(1)
        send({"jsonrpc": "2.0", "method": "initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(repo)]}})
        hooks = [h for d in recv(2).get("result", {}).get("data", []) for h in d.get("hooks", [])]
    finally:
        p.kill()
        p.wait()
    # setup writes the absolute path of the mailroom that ran it.
    ours = [h for h in hooks if h.get("command", "").split(" hook codex ")[0].endswith("/mailroom")]
    check("hooks/list shows setup's five hooks (four for mail, one before an edit)", len(ours) == 5, hooks)
    with open(config, "a") as f:
        for h in ours:
            f.write(f'\n[hooks.state.{json.dumps(h["key"])}]\ntrusted_hash = {json.dumps(h["currentHash"])}\n')


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-codex-session-"))
    try:
        run(work)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"codex session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"codex session e2e: ok, after `mailroom setup codex`: SessionStart, PostToolUse and one Stop "
          f"continuation carried the mail, in {took:.1f} s")


def run(work):
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user / ".codex", repo, bin_dir):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    log = work / "requests.jsonl"
    log.write_text("")
    Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    # A custom model provider pointing at the stand-in; the project trusted, so Codex reads its
    # .codex/ (where setup writes the hooks).
    (user / ".codex" / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
        '[analytics]\nenabled = false\n\n[features]\nplugins = false\napps = false\n\n'
        f'[model_providers.stub]\nname = "stub"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
        'env_key = "STUB_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n'
        f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "CODEX_HOME": str(user / ".codex"),
        "MAILROOM_HOME": str(mail),
        "STUB_API_KEY": "stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "NO_COLOR": "1",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    mailroom("--as", "api", "send", "--to", "web", "-m", FIRST)
    mailroom("setup", "codex")
    trust_hooks(repo, env, user / ".codex" / "config.toml")

    cmd = [CODEX, "exec", "--dangerously-bypass-approvals-and-sandbox", "--json", "Do the task."]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"codex finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check("codex exits 0", proc.returncode == 0, f"exit {proc.returncode}: {out[-1500:]} {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    main_requests = [r["body"] for r in requests
                     if r["method"] == "POST" and isinstance(r["body"], dict) and is_main(r["body"])]
    texts = [json.dumps(r.get("input")) + json.dumps(r.get("instructions")) for r in main_requests]
    check("three requests: the start, after the shell command, after the Stop reminder",
          len(main_requests) == 3, f"{len(main_requests)} main requests:\n" + "\n---\n".join(t[-1500:] for t in texts)
          + f"\nstdout: {out[-3000:]}\nstderr: {err[-1500:]}")
    if texts:
        check("the first request carries the mail waiting before the session (SessionStart)",
              FIRST in texts[0] and SECOND not in texts[0], texts[0][-3000:])
    if len(texts) > 1:
        check("the request after the shell command carries the new mail (PostToolUse)", SECOND in texts[1], texts[1][-3000:])
    if len(texts) > 2:
        check("Stop sent the session back with the reminder", REMINDER in texts[2], texts[2][-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT"]
    check("no request tried to leave the machine", not outside, outside)


if __name__ == "__main__":
    main()
