"""mailroom's MCP server driven by the official Python SDK (pinned in requirements.txt): list the
tools, validate every structured result against its tool's output schema, and play a
conversation between two agents through two server processes on one home.

Usage: python python_sdk.py PATH/TO/mailroom
"""

import asyncio
import importlib.metadata
import os
import sys
import tempfile

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN = sys.argv[1]
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


async def run(home):
    global protocol
    env = dict(os.environ, MAILROOM_HOME=home)
    env.pop("MAILROOM_AS", None)

    def params(who):
        return StdioServerParameters(command=BIN, args=["--as", who, "mcp"], env=env, cwd=home)

    async with stdio_client(params("alice@web")) as (ar, aw), stdio_client(params("bob@web")) as (br, bw):
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

            # a wait in alice's server woken by bob's reply through his own server
            s, _ = await bob.call("read_mail", {"no_archive": True})
            correction = s["messages"][0]["id"]
            waiting = asyncio.create_task(alice.call("wait_mail", {"reply_to": correction, "timeout_seconds": 30}))
            await asyncio.sleep(0.3)
            reply, _ = await bob.call("reply_mail", {"id": correction, "body": "looks good"})
            s, text = await waiting
            check("wait woken by the other server", s["messages"][0]["id"] == reply["id"], s)
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


with tempfile.TemporaryDirectory() as home:
    asyncio.run(run(home))
print(f"python-sdk {importlib.metadata.version('mcp')}, protocol {protocol}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
