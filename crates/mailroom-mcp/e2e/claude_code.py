"""mailroom's MCP server through a real harness: Claude Code 2.1.332 (pinned in
claude/package.json and claude/package-lock.json, installed by scripts/test with `npm ci`), run
headless (`claude -p`) in a scratch git project whose `.mcp.json` starts `mailroom mcp`; with
--http, whose `.mcp.json` names a running `mailroom mcp --listen 127.0.0.1:0` instead
(`"type": "http"`, its URL, and `"Authorization": "Bearer ${MAILROOM_TOKEN}"` in `headers`: the
token from `token add` is only in the harness's environment, never in the file).

The model is a stand-in: a small HTTP server here on 127.0.0.1 (ANTHROPIC_BASE_URL) that logs
every request and answers `POST /v1/messages` from a script: first a tool_use of
mcp__mailroom__write_mail, then, once the harness sends that tool's result back, a tool_use of
mcp__mailroom__read_mail, then a final text. Every other request gets a harmless answer, and
HTTP(S)_PROXY points here too, so any attempt to reach the outside is logged and refused.

Asserts: the tool results the harness sent back (write_mail's carries the sent id, read_mail's
the mail), the mail on disk through the mailroom CLI on the same home, and that nothing tried
to leave the machine. Everything is bounded by a timeout; the harness and the stub are stopped
at the end. One line of summary; exit status 1 on any failure.

Usage: python3 claude_code.py PATH/TO/mailroom PATH/TO/claude [--http]
"""

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "2.1.332"  # as claude/package.json pins it; the run checks the two agree
TIMEOUT = 120  # seconds for the whole harness run
MAILROOM, CLAUDE = sys.argv[1], sys.argv[2]
HTTP = sys.argv[3:] == ["--http"]
if sys.argv[3:] not in ([], ["--http"]):
    sys.exit("usage: python3 claude_code.py PATH/TO/mailroom PATH/TO/claude [--http]")
WRITE, READ = "mcp__mailroom__write_mail", "mcp__mailroom__read_mail"
WRITE_ID, READ_ID = "toolu_mailroom_write_01", "toolu_mailroom_read_01"
SUBJECT, BODY = "harness check", "Written by Claude Code through mailroom mcp."
FINAL = "Sent the note and read it back."

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}: {str(detail)[:2000]}", file=sys.stderr)


# ---- the stand-in model ----


def tool_results(messages):
    """tool_use_id -> the text of each tool_result block in a request's messages."""
    out = {}
    for m in messages or []:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                c = block.get("content")
                if isinstance(c, list):
                    c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
                out[block.get("tool_use_id")] = {"text": c or "", "is_error": bool(block.get("is_error"))}
    return out


def scripted(request):
    """The next assistant content for a request of the main conversation, else None."""
    names = {t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)}
    if WRITE not in names:
        return None
    done = tool_results(request.get("messages"))
    if WRITE_ID not in done:
        return {"type": "tool_use", "id": WRITE_ID, "name": WRITE,
                "input": {"recipient": "alice@web", "subject": SUBJECT, "body": BODY}}
    if READ_ID not in done:
        return {"type": "tool_use", "id": READ_ID, "name": READ, "input": {}}
    return {"type": "text", "text": FINAL}


def sse(block, model):
    """A streamed message holding one content block, as the Messages API sends it."""
    stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
    start = dict(block, input={}) if block["type"] == "tool_use" else {"type": "text", "text": ""}
    delta = ({"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
             if block["type"] == "tool_use" else {"type": "text_delta", "text": block["text"]})
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class Stub(BaseHTTPRequestHandler):
    log_path = None
    lock = threading.Lock()

    def log_message(self, *args):  # quiet: every request goes to the log file instead
        pass

    def record(self, body):
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def reply(self, status, payload, content_type="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.record(body)
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            return self.reply(200, {"input_tokens": 10})
        if not path.endswith("/v1/messages"):
            return self.reply(200, {})
        model = body.get("model", "stub")
        block = scripted(body) or {"type": "text", "text": "ok"}
        if body.get("stream"):
            return self.reply(200, sse(block, model), "text/event-stream")
        stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
        return self.reply(200, {"id": "msg_stub", "type": "message", "role": "assistant", "model": model,
                                "content": [block], "stop_reason": stop, "stop_sequence": None,
                                "usage": {"input_tokens": 10, "output_tokens": 5}})

    def do_GET(self):
        self.record(None)
        self.reply(200, {})

    do_HEAD = do_GET

    def do_CONNECT(self):  # a proxied attempt to reach the outside: logged, refused
        self.record(None)
        self.reply(403, {"error": "no outside connections in this test"})


# ---- the run ----


def mailroom(home, *args, who="alice@web"):
    r = subprocess.run([MAILROOM, "--home", home, "--as", who, "--json", *args],
                       capture_output=True, text=True, timeout=30)
    check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
    return json.loads(r.stdout or "null")


over = " over HTTP" if HTTP else ""


def listen(home, work):
    """Starts `mailroom mcp --listen 127.0.0.1:0` on `home`: the process and the URL it prints first."""
    stderr = open(os.path.join(work, "mcp-listen.stderr"), "w")
    server = subprocess.Popen([MAILROOM, "--home", home, "mcp", "--listen", "127.0.0.1:0"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    ready, _, _ = select.select([server.stdout], [], [], 30)
    url = server.stdout.readline().decode().strip() if ready else ""
    check("mcp --listen prints its URL first", re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*/mcp", url), url)
    return server, url


def stop(server):
    """Stops the server as Ctrl-C does: it exits 0."""
    server.terminate()
    try:
        code = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        code = server.wait()
    check("mcp --listen exits 0 on SIGTERM", code == 0, code)


def main():
    began = time.monotonic()
    work = tempfile.mkdtemp(prefix="mailroom-claude-e2e-")
    try:
        run(work)
    except Exception as e:  # a crash of the test itself is a failure too, with the same summary line
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"claude-code e2e{over}: FAIL ({len(failures)} checks) in {took:.1f} s; "
              f"files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"claude-code e2e{over}: ok, Claude Code {VERSION} called write_mail and read_mail "
          f"through mailroom mcp{over} and got their results, in {took:.1f} s")


def run(work):
    home, project, user = (os.path.join(work, d) for d in ("home", "project", "user"))
    for d in (home, os.path.join(project, ".git"), user):
        os.makedirs(d)
    log = os.path.join(work, "requests.jsonl")
    open(log, "w").close()
    server, token = None, None
    if HTTP:
        token = mailroom(home, "token", "add", "alice@web", who="HUMAN")["token"]
        server, url = listen(home, work)
        entry = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${MAILROOM_TOKEN}"}}
    else:
        entry = {"command": MAILROOM, "args": ["mcp"], "env": {"MAILROOM_HOME": home, "MAILROOM_AS": "alice@web"}}
    with open(os.path.join(project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"mailroom": entry}}, f, indent=2)
    if token is not None:
        with open(os.path.join(project, ".mcp.json")) as f:
            check("the token is not in .mcp.json", token not in f.read())

    Stub.log_path = log
    stub = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"

    # A clean environment: nothing of the caller's Claude or proxy settings leaks in.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": user,
        "CLAUDE_CONFIG_DIR": os.path.join(user, ".claude"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCP_TIMEOUT": "30000",
        # Offer the MCP tools to the model directly rather than behind ToolSearch.
        "ENABLE_TOOL_SEARCH": "false",
    }
    if token is not None:
        env["MAILROOM_TOKEN"] = token
    cmd = [CLAUDE, "-p", "Leave yourself a note in mailroom, then read your mail.",
           "--output-format", "stream-json", "--verbose",
           # As root --dangerously-skip-permissions is refused: allow just the two tools, deny the rest.
           "--allowedTools", f"{WRITE},{READ}", "--permission-mode", "dontAsk"]
    proc = subprocess.Popen(cmd, cwd=project, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"claude finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the MCP server and anything else it started
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
        if server is not None:
            stop(server)
    check("claude exits 0", proc.returncode == 0, f"exit {proc.returncode}: {err[-2000:]}")

    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
    result = next((e for e in events if e.get("type") == "result"), {})
    check("claude is the pinned version", init.get("claude_code_version") == VERSION, init.get("claude_code_version"))
    servers = {s.get("name"): s.get("status") for s in init.get("mcp_servers") or []}
    check("the project's mailroom server is connected", servers.get("mailroom") == "connected", servers)
    check("both tools are offered", {WRITE, READ} <= set(init.get("tools") or []), init.get("tools"))
    check("the run ends with the scripted text", result.get("result") == FINAL and not result.get("is_error"), result)

    requests = [json.loads(line) for line in open(log)]
    outside = [r for r in requests if r["method"] == "CONNECT" or not r["path"].startswith("/")]
    check("no request tried to leave the machine", not outside, outside)
    sent_back = {}
    for r in requests:
        if r["method"] == "POST" and isinstance(r["body"], dict):
            sent_back.update(tool_results(r["body"].get("messages")))
    wrote, read = sent_back.get(WRITE_ID), sent_back.get(READ_ID)
    check("the harness sent write_mail's result back", wrote and not wrote["is_error"], wrote)
    check("the harness sent read_mail's result back", read and not read["is_error"], read)
    check("read_mail's result tells the model the mail is untrusted", read and "UNTRUSTED DATA" in read["text"], read)
    offered = [t for r in requests if isinstance(r["body"], dict) for t in r["body"].get("tools") or []
               if t.get("name") == WRITE]
    check("write_mail is offered with the server's input schema",
          offered and {"recipient", "body"} <= set(offered[0].get("input_schema", {}).get("required", [])), offered[:1])

    # On disk, through the CLI on the same home (outbox changes nothing): sent once, archived.
    outbox = mailroom(home, "outbox") or {}
    mails = [m for m in outbox.get("messages", []) if m.get("subject") == SUBJECT]
    check("one mail on disk", len(mails) == 1, outbox)
    if mails:
        mail = mails[0]
        check("write_mail's result carries the sent id", wrote and mail["id"] in wrote["text"], wrote)
        check("read_mail's result carries the mail", read and mail["id"] in read["text"] and BODY in read["text"], read)
        check("the mail on disk is the one written", mail.get("body") == BODY and mail.get("from") == "alice@web", mail)
        check("read_mail archived it", mail.get("recipients") == [{"address": "alice@web", "state": "done"}], mail)


if __name__ == "__main__":
    main()
