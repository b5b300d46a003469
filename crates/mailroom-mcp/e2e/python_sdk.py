"""mailroom's MCP server driven by the official Python SDK (pinned in requirements.txt): list the
tools, call every one, validate every structured result against its tool's output schema, and
play a conversation between two agents.

Over stdio (the default) each agent is a server process of its own on one home. With --http, one
`mailroom mcp --listen 127.0.0.1:0` serves both through the SDK's `streamable_http_client`, each
agent with its own bearer token (`token add`); then a missing, wrong and revoked token are each
refused (401 with `WWW-Authenticate: Bearer`) while the other agent is served throughout.

Usage: python python_sdk.py PATH/TO/mailroom [--http]
"""

import asyncio
import contextlib
import importlib.metadata
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import jsonschema
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BIN = os.path.abspath(sys.argv[1])
HTTP = sys.argv[2:] == ["--http"]
if sys.argv[2:] not in ([], ["--http"]):
    sys.exit("usage: python python_sdk.py PATH/TO/mailroom [--http]")
passed = 0
failed = 0
protocol = "none"


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: {detail}", file=sys.stderr)


class Agent:
    """One server process acting as `who`, with the schemas it listed."""

    def __init__(self, session, who):
        self.session = session
        self.who = who
        self.schemas = {}
        self.inputs = {}
        self.called = set()

    async def list(self):
        tools = (await self.session.list_tools()).tools
        self.schemas = {t.name: t.output_schema for t in tools}
        self.inputs = {t.name: t.input_schema for t in tools}
        for t in tools:
            # Gemini CLI refuses a property typed ["string", "null"]: optional inputs are plain.
            props = t.input_schema.get("properties", {})
            nullable = [k for k, p in props.items() if not isinstance(p.get("type"), str)]
            check(f"{t.name} input properties have one plain type", not nullable, nullable)
        return tools

    async def call(self, tool, args, expect_error=False):
        self.called.add(tool)
        if not expect_error and tool in self.inputs:
            # The calls that succeed are calls a schema-checking client would send.
            try:
                jsonschema.validate(args, self.inputs[tool])
            except jsonschema.ValidationError as e:
                check(f"{tool} arguments match its input schema", False, e.message)
        r = await self.session.call_tool(tool, args)
        s = r.structured_content
        check(f"{self.who} {tool} is_error={expect_error}", bool(r.is_error) == expect_error, r.content)
        if r.is_error and isinstance(s, dict) and "error" in s:
            # Advice over MCP names tool fields, never a command-line flag.
            check(f"{tool} error names no CLI flag", "--" not in s["error"]["message"], s["error"]["message"])
        check(f"{tool} structured content is an object", isinstance(s, dict), s)
        try:
            jsonschema.validate(s, self.schemas[tool])
            check(f"{tool} matches its output schema", True)
        except jsonschema.ValidationError as e:
            check(f"{tool} matches its output schema", False, e.message)
        return s, "".join(c.text for c in r.content if getattr(c, "text", None))


class Stdio:
    """Each agent a server process of its own acting as it (`--as ADDRESS mcp`), on one home."""

    name = "stdio"

    def __init__(self, home):
        self.env = dict(os.environ, MAILROOM_HOME=home)
        self.env.pop("MAILROOM_AS", None)
        self.home = home

    def transport(self, who):
        return stdio_client(StdioServerParameters(command=BIN, args=["--as", who, "mcp"], env=self.env, cwd=self.home))

    def close(self):
        pass


class Http(Stdio):
    """One `mcp --listen` server; each agent sends a bearer token of its own."""

    name = "streamable HTTP"

    def __init__(self, home):
        super().__init__(home)
        self.tokens = {}
        self.stderr = tempfile.TemporaryFile()
        self.server = subprocess.Popen([BIN, "mcp", "--listen", "127.0.0.1:0"], env=self.env, cwd=home,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr)
        # Its first line is the URL it serves; bounded, in case it never comes.
        ready, _, _ = select.select([self.server.stdout], [], [], 30)
        first = self.server.stdout.readline().decode().strip() if ready else ""
        check("mcp --listen prints its URL first", re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*/mcp", first), first)
        self.url = first

    def mailroom(self, *args):
        r = subprocess.run([BIN, *args], env=self.env, cwd=self.home, capture_output=True, text=True, timeout=30)
        check(f"mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)
        return r.stdout

    def token(self, who):
        if who not in self.tokens:
            issued = json.loads(self.mailroom("--as", "HUMAN", "--json", "token", "add", who, "--name", who.split("@")[0]))
            check(f"token add {who} gives a token for {who}", issued.get("address") == who, issued)
            self.tokens[who] = issued["token"]
        return self.tokens[who]

    def transport(self, who):
        return self.transport_with(self.token(who))

    @contextlib.asynccontextmanager
    async def transport_with(self, token):
        """The SDK's transport sending `token` (none when None), as a harness's HTTP config does."""
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(self.url, http_client=client) as (r, w):
                yield r, w

    def raw(self, token):
        """A raw initialize, as a client that is not the SDK sends it: (status, headers)."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url, data=body.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.headers

    def close(self):
        """Stops the server as Ctrl-C does: it ends its open requests and exits 0."""
        self.server.terminate()
        try:
            code = self.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.server.kill()
            code = self.server.wait()
        self.stderr.seek(0)
        check("mcp --listen exits 0 on SIGTERM", code == 0, (code, self.stderr.read().decode(errors="replace")))


async def refused(mode, what, token):
    """A client with `token` cannot even initialize; a raw request sees 401 and its scheme."""
    error = None
    async with mode.transport_with(token) as (r, w), ClientSession(r, w) as s:
        try:
            await asyncio.wait_for(s.initialize(), 30)
        except (MCPError, asyncio.TimeoutError) as e:
            error = e
    # The refusal's body is a JSON-RPC error, so the SDK shows its reason (a plain-text body
    # would be a generic "Server returned an error response").
    check(f"{what}: the SDK's initialize fails", isinstance(error, MCPError), repr(error))
    check(f"{what}: the SDK's error says why", "token" in str(error), repr(error))
    status, headers = mode.raw(token)
    check(f"{what}: 401 with WWW-Authenticate: Bearer", status == 401 and
          (headers.get("WWW-Authenticate") or "").lower().startswith("bearer"), (status, dict(headers)))


async def tokens(mode, alice, bob):
    """Over HTTP each request needs a live token, and acts as its identity alone."""
    await refused(mode, "no token", None)
    await refused(mode, "a wrong token", "mailroom_not-a-token")
    # Revoked: bob's next request is refused, without a restart; alice is served throughout.
    mode.mailroom("--as", "HUMAN", "token", "revoke", "bob")
    try:
        await asyncio.wait_for(bob.session.call_tool("get_projects", {}), 30)
        error = None
    except (MCPError, asyncio.TimeoutError) as e:
        error = e
    check("a revoked token: the next call fails", isinstance(error, MCPError), repr(error))
    check("a revoked token: 401", mode.raw(mode.tokens["bob@web"])[0] == 401)
    s, _ = await alice.call("get_projects", {})
    check("alice is served after bob's token is revoked", len(s.get("projects", [])) >= 1, s)


async def run(mode):
    global protocol
    async with mode.transport("alice@web") as (ar, aw), mode.transport("bob@web") as (br, bw):
        async with ClientSession(ar, aw) as a_s, ClientSession(br, bw) as b_s:
            protocol = (await a_s.initialize()).protocol_version
            await b_s.initialize()
            alice, bob = Agent(a_s, "alice"), Agent(b_s, "bob")
            tools = await alice.list()
            await bob.list()
            check("25 tools", len(tools) == 25, [t.name for t in tools])
            check("read_mail first", tools[0].name == "read_mail")
            check(
                "annotations",
                [t.name for t in tools if t.annotations.destructive_hint] == ["cancel_mail", "retract_broadcast", "release_files"],
            )

            # write, read that archives, recover
            s, _ = await alice.call("write_mail", {"project_handle": "web", "recipient": "bob", "subject": "schema", "body": "please review"})
            first, stamp = s["id"], s["timestamp"]
            s, text = await bob.call("read_mail", {})
            check("read shows it", s["messages"][0]["id"] == first, s)
            check("read archives", s["archived"] == 1, s)
            check("read text is framed", f"--- message {first} from alice@web" in text, text)
            s, _ = await bob.call("read_recent_archive", {})
            check("recover lists it", s["messages"][0]["id"] == first, s)

            # edit unread in place, cancel, correction after read
            s, _ = await alice.call("write_mail", {"recipient": "bob", "subject": "lunch", "body": "noon?"})
            second = s["id"]
            s, _ = await alice.call("edit_mail", {"id": second, "new_body": "one?"})
            check("edit unread in place", s["outcomes"][0]["outcome"] == "edited", s)
            s, _ = await alice.call("cancel_mail", {"recipient": "bob", "timestamp": s["message"]["timestamp"], "subject": "lunch"})
            check("cancel", s["recipients"][0]["state"] == "cancelled", s)
            s, _ = await alice.call("edit_mail", {"recipient": "bob", "timestamp": stamp, "subject": "schema", "new_body": "v2"})
            check("correction after read", s["outcomes"][0]["outcome"] == "correction", s)

            # a wait of alice's woken by bob's reply (over stdio, through another server process)
            s, _ = await bob.call("read_mail", {"no_archive": True})
            correction = s["messages"][0]["id"]
            waiting = asyncio.create_task(alice.call("wait_mail", {"reply_to": correction, "timeout_seconds": 30}))
            await asyncio.sleep(0.3)
            reply, _ = await bob.call("reply_mail", {"id": correction, "body": "looks good"})
            s, text = await waiting
            check("wait woken by the other agent's write", s["messages"][0]["id"] == reply["id"], s)
            check("wait changes nothing", s["messages"][0]["state"] == "unread", s)

            # broadcast, channel, search, refusals
            b, _ = await alice.call("broadcast", {"body": "deploy at five"})
            s, _ = await bob.call("read_mail", {})
            check("broadcast reaches bob", any(m["id"] == b["id"] for m in s["messages"]), s)
            await alice.call("channel_post", {"channel": "run-1", "body": "step one"})
            s, _ = await bob.call("channel_read", {"channel": "run-1"})
            check("channel", s["messages"][0]["body"] == "step one", s)
            s, _ = await bob.call("search_mail", {"query": "review"})
            check("search", len(s["messages"]) >= 1, s)
            s, _ = await bob.call("write_mail", {"sender": "alice", "recipient": "bob", "body": "forged"}, expect_error=True)
            check("forged sender refused", s["error"]["code"] == 4, s)
            s, _ = await bob.call("cancel_mail", {"id": first}, expect_error=True)
            check("another's message refused", s["error"]["kind"] == "refused", s)
            for tool, args in [
                ("get_projects", {}), ("get_roster", {"project_handle": "web"}),
                ("get_member_context", {}), ("resolve_handle_candidates", {"target_handle": "alice"}),
                ("get_outbox", {}), ("handover_self", {"body": "resume"}), ("mark_done", {"ids": [reply["id"]]}),
                ("retract_broadcast", {"id": b["id"]}), ("archive_mail", {}),
                ("init_mail", {"project_handle": "side", "handle": "alice", "role": "x"}),
                ("reserve_files", {"paths": ["src/api/**"], "reason": "refactor"}),
                ("check_files", {"paths": ["src/api/routes.rs"]}), ("list_reservations", {}),
                ("release_files", {"all": True}),
            ]:
                # alice acts as alice@web: joining another project as alice@side is refused.
                await alice.call(tool, args, expect_error=tool == "init_mail")
            called = alice.called | bob.called
            check("every tool called", all(t.name in called for t in tools), [t.name for t in tools if t.name not in called])
            if HTTP:
                await tokens(mode, alice, bob)


with tempfile.TemporaryDirectory() as home:
    mode = Http(home) if HTTP else Stdio(home)
    try:
        asyncio.run(run(mode))
    finally:
        mode.close()
print(f"python-sdk {importlib.metadata.version('mcp')} over {mode.name}, protocol {protocol}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
