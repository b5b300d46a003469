"""`mailroom setup gemini`, then a real Gemini CLI session, headless (`gemini -p`), against a local
stand-in of the Gemini API (GOOGLE_GEMINI_BASE_URL points at a small HTTP server here that
records every request and answers `:streamGenerateContent` / `:generateContent` from a script).

Asserted on the recorded requests, as for Claude Code (claude_session.py):
1. mail waiting before the session is in the first request (SessionStart);
2. the model runs a shell command that makes another agent send mail; the next request carries
   it (AfterTool);
3. with directed mail still pending when the model ends its turn, AfterAgent sends the session
   back once with the reminder, not twice.

Usage: python3 gemini_session.py PATH/TO/mailroom PATH/TO/gemini
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

MAILROOM, GEMINI = sys.argv[1], sys.argv[2]
TIMEOUT = 180
FIRST, SECOND = "MAIL-ONE please review the schema", "MAIL-TWO the deploy moved to 5pm"
FINAL = "Finished the task."
REMINDER = "still pending for web@default"
SHELL = "run_shell_command"

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:3000]}", file=sys.stderr)


def is_main(body):
    return any(f.get("name") == SHELL for t in body.get("tools") or [] if isinstance(t, dict)
               for f in t.get("functionDeclarations") or [])


def answered_shell(body):
    return any("functionResponse" in p for c in body.get("contents") or [] for p in c.get("parts") or [])


def scripted(body):
    if not is_main(body):
        return None
    if not answered_shell(body):
        return {"functionCall": {"name": SHELL, "args": {
            "command": f"mailroom --as api send --to web -m '{SECOND}'",
            "description": "another agent sends mail"}}}
    return {"text": FINAL}


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
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.record(body)
        path = self.path.split("?")[0]
        if path.endswith(":countTokens"):
            return self.reply(200, {"totalTokens": 10})
        part = scripted(body)
        if part is None:
            # A side request (next-speaker check, loop detection, a title): a short JSON answer
            # that the CLI's structured-output readers accept.
            part = {"text": json.dumps({"next_speaker": "user", "reasoning": "done"})}
        response = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
                                    "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
        if path.endswith(":streamGenerateContent"):
            return self.reply(200, f"data: {json.dumps(response)}\r\n\r\n".encode(), "text/event-stream")
        return self.reply(200, response)

    def do_GET(self):
        self.record(None)
        self.reply(200, {})

    def do_CONNECT(self):
        self.record(None)
        self.reply(403, {"error": "no outside connections in this test"})


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-gemini-session-"))
    try:
        run(work)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"gemini-cli session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"gemini-cli session e2e: ok, after `mailroom setup gemini`: SessionStart, AfterTool and one "
          f"AfterAgent continuation carried the mail, in {took:.1f} s")


def run(work):
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user / ".gemini", repo / ".git", bin_dir):
        d.mkdir(parents=True)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    # Gemini CLI loads a project's settings (and its hooks) only in a folder the user trusts.
    (user / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    # An API key; the SDK then sends every call to GOOGLE_GEMINI_BASE_URL.
    (user / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False}}))
    log = work / "requests.jsonl"
    log.write_text("")
    Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "MAILROOM_HOME": str(mail),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": "stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "NO_COLOR": "1",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    mailroom("--as", "api", "send", "--to", "web", "-m", FIRST)
    mailroom("setup", "gemini")

    cmd = [GEMINI, "-p", "Do the task.", "--approval-mode", "yolo", "--output-format", "json"]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"gemini finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check("gemini exits 0", proc.returncode == 0, f"exit {proc.returncode}: {out[-1500:]} {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    main_requests = [r["body"] for r in requests
                     if r["method"] == "POST" and isinstance(r["body"], dict) and is_main(r["body"])]
    texts = [json.dumps(r.get("contents")) for r in main_requests]
    check("three requests: the start, after the shell command, after the AfterAgent reminder",
          len(main_requests) == 3, f"{len(main_requests)} main requests:\n" + "\n---\n".join(t[-1500:] for t in texts))
    if texts:
        check("the first request carries the mail waiting before the session (SessionStart)",
              FIRST in texts[0] and SECOND not in texts[0], texts[0][-3000:])
    if len(texts) > 1:
        check("the request after the shell command carries the new mail (AfterTool)", SECOND in texts[1], texts[1][-3000:])
    if len(texts) > 2:
        check("AfterAgent sent the session back with the reminder", REMINDER in texts[2], texts[2][-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT"]
    check("no request tried to leave the machine", not outside, outside)


if __name__ == "__main__":
    main()
