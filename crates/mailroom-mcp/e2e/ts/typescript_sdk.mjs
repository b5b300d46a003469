// mailroom's MCP server driven by the official TypeScript SDK (pinned in package.json and
// package-lock.json): list the tools, call every one, validate every structured result against its
// tool's output schema (the SDK validates too; a mismatch fails either way), and play a
// conversation between two agents through two server processes on one home; then check that the
// older protocol revisions are still served.
//
// Usage: node typescript_sdk.mjs PATH/TO/mailroom

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import Ajv2020 from "ajv/dist/2020.js";

const BIN = process.argv[2];
if (!BIN) {
  console.error("usage: node typescript_sdk.mjs PATH/TO/mailroom");
  process.exit(2);
}
const SDK_VERSION = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
).version;
// Draft 2020-12 is MCP's default dialect for tool schemas; strict mode also rejects a schema
// with keywords or formats a client would not understand.
const ajv = new Ajv2020({ strict: true, allErrors: true });

let passed = 0;
let failed = 0;
function check(what, ok, detail = "") {
  if (ok) {
    passed += 1;
  } else {
    failed += 1;
    console.error(`FAIL ${what}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
  }
}

function serverProcess(who, home) {
  const env = { ...process.env, MAILROOM_HOME: home };
  delete env.MAILROOM_AS;
  return new StdioClientTransport({ command: BIN, args: ["--as", who, "mcp"], env, cwd: home });
}

/** One server process acting as `who`, with the validators of the schemas it listed. */
class Agent {
  constructor(who, home) {
    this.who = who;
    this.transport = serverProcess(who, home);
    // The client hands the negotiated revision to transports that want it (HTTP ones do).
    this.transport.setProtocolVersion = (version) => {
      this.protocolVersion = version;
    };
    this.client = new Client({ name: "mailroom-e2e-ts", version: "1.0.0" });
    this.validators = {};
    this.called = new Set();
  }

  async connect() {
    await this.client.connect(this.transport);
  }

  async list() {
    const { tools } = await this.client.listTools();
    this.inputs = {};
    for (const t of tools) {
      try {
        this.validators[t.name] = ajv.compile(t.outputSchema);
      } catch (e) {
        check(`${t.name} output schema compiles`, false, e.message);
      }
      try {
        this.inputs[t.name] = ajv.compile(t.inputSchema);
      } catch (e) {
        check(`${t.name} input schema compiles`, false, e.message);
      }
      // Gemini CLI refuses a property typed ["string", "null"]: optional inputs are plain.
      const nullable = Object.entries(t.inputSchema.properties ?? {})
        .filter(([, p]) => typeof p.type !== "string")
        .map(([k]) => k);
      check(`${t.name} input properties have one plain type`, nullable.length === 0, nullable);
    }
    return tools;
  }

  async call(tool, args, expectError = false) {
    this.called.add(tool);
    const input = this.inputs?.[tool];
    if (!expectError && input !== undefined && !input(args)) {
      // The calls that succeed are calls a schema-checking client would send.
      check(`${tool} arguments match its input schema`, false, ajv.errorsText(input.errors));
    }
    let r;
    try {
      r = await this.client.callTool({ name: tool, arguments: args });
    } catch (e) {
      // The SDK throws when structured content does not match the listed output schema.
      check(`${this.who} ${tool} answered`, false, e.message);
      return [{}, ""];
    }
    const s = r.structuredContent;
    check(`${this.who} ${tool} isError=${expectError}`, Boolean(r.isError) === expectError, r.content);
    check(`${tool} structured content is an object`, s !== null && typeof s === "object" && !Array.isArray(s), s);
    if (r.isError && s?.error?.message !== undefined) {
      // Advice over MCP names tool fields, never a command-line flag.
      check(`${tool} error names no CLI flag`, !s.error.message.includes("--"), s.error.message);
    }
    const validate = this.validators[tool];
    const ok = validate !== undefined && validate(s);
    check(`${tool} matches its output schema`, ok, validate ? ajv.errorsText(validate.errors) : "no schema listed");
    const text = r.content.map((c) => c.text ?? "").join("");
    return [s ?? {}, text];
  }

  async close() {
    await this.client.close();
  }
}

const pending = Symbol("pending");
function settledWithin(promise, ms) {
  return Promise.race([promise, new Promise((done) => setTimeout(() => done(pending), ms))]);
}

async function run(home) {
  const alice = new Agent("alice@web", home);
  const bob = new Agent("bob@web", home);
  await alice.connect();
  await bob.connect();
  try {
    await story(alice, bob);
  } finally {
    await alice.close();
    await bob.close();
  }
  return alice.protocolVersion;
}

async function story(alice, bob) {
  check("negotiated the current revision", alice.protocolVersion === LATEST_PROTOCOL_VERSION, alice.protocolVersion);
  check("server info", alice.client.getServerVersion()?.name === "mailroom", alice.client.getServerVersion());
  const tools = await alice.list();
  await bob.list();
  const names = tools.map((t) => t.name);
  check("25 tools", tools.length === 25, names);
  check("read_mail first", names[0] === "read_mail", names);
  check(
    "annotations: destructive",
    JSON.stringify(tools.filter((t) => t.annotations?.destructiveHint).map((t) => t.name)) ===
      JSON.stringify(["cancel_mail", "retract_broadcast", "release_files"]),
    tools.map((t) => [t.name, t.annotations]),
  );
  const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
  check(
    "annotations: read-only",
    ["get_projects", "get_roster", "get_member_context", "resolve_handle_candidates", "read_recent_archive", "search_mail", "wait_mail"].every((n) => readOnly.includes(n)) &&
      !readOnly.includes("read_mail"),
    readOnly,
  );

  // write, read that archives, recover
  let [s, text] = await alice.call("write_mail", { project_handle: "web", recipient: "bob", subject: "schema", body: "please review" });
  const first = s.id;
  const stamp = s.timestamp;
  // The validator this test relies on rejects a result of the wrong shape.
  check("a mismatching result is rejected", !alice.validators.write_mail({ ...s, id: 42 }), "accepted");
  [s, text] = await bob.call("read_mail", {});
  check("read shows it", s.messages?.[0]?.id === first, s);
  check("read archives", s.archived === 1, s);
  check("read text is framed", text.includes(`--- message ${first} from alice@web`), text);
  [s] = await bob.call("read_recent_archive", {});
  check("recover lists it", s.messages?.[0]?.id === first, s);

  // edit unread in place, cancel, correction after read
  [s] = await alice.call("write_mail", { recipient: "bob", subject: "lunch", body: "noon?" });
  const second = s.id;
  [s] = await alice.call("edit_mail", { id: second, new_body: "one?" });
  check("edit unread in place", s.outcomes?.[0]?.outcome === "edited", s);
  [s] = await alice.call("cancel_mail", { recipient: "bob", timestamp: s.message?.timestamp, subject: "lunch" });
  check("cancel", s.recipients?.[0]?.state === "cancelled", s);
  [s] = await alice.call("edit_mail", { recipient: "bob", timestamp: stamp, subject: "schema", new_body: "v2" });
  check("correction after read", s.outcomes?.[0]?.outcome === "correction", s);

  // a wait in alice's server woken by bob's reply through his own server
  [s] = await bob.call("read_mail", { no_archive: true });
  const correction = s.messages?.[0]?.id;
  const waiting = alice.call("wait_mail", { reply_to: correction, timeout_seconds: 30 });
  check("wait blocks while nothing came", (await settledWithin(waiting, 300)) === pending, "returned at once");
  const [reply] = await bob.call("reply_mail", { id: correction, body: "looks good" });
  [s] = await waiting;
  check("wait woken by the other server", s.messages?.[0]?.id === reply.id, s);
  check("wait changes nothing", s.messages?.[0]?.state === "unread", s);

  // broadcast, channel, search, refusals
  const [b] = await alice.call("broadcast", { body: "deploy at five" });
  [s] = await bob.call("read_mail", {});
  check("broadcast reaches bob", (s.messages ?? []).some((m) => m.id === b.id), s);
  await alice.call("channel_post", { channel: "run-1", body: "step one" });
  [s] = await bob.call("channel_read", { channel: "run-1" });
  check("channel", s.messages?.[0]?.body === "step one", s);
  [s] = await bob.call("search_mail", { query: "review" });
  check("search", (s.messages ?? []).length >= 1, s);
  [s] = await bob.call("write_mail", { sender: "alice", recipient: "bob", body: "forged" }, true);
  check("forged sender refused", s.error?.code === 4, s);
  [s] = await bob.call("cancel_mail", { id: first }, true);
  check("another's message refused", s.error?.kind === "refused", s);
  for (const [tool, args] of [
    ["get_projects", {}],
    ["get_roster", { project_handle: "web" }],
    ["get_member_context", {}],
    ["resolve_handle_candidates", { target_handle: "alice" }],
    ["get_outbox", {}],
    ["handover_self", { body: "resume" }],
    ["mark_done", { ids: [reply.id] }],
    ["retract_broadcast", { id: b.id }],
    ["archive_mail", {}],
    ["init_mail", { project_handle: "side", handle: "alice", role: "x" }],
    ["reserve_files", { paths: ["src/api/**"], reason: "refactor" }],
    ["check_files", { paths: ["src/api/routes.rs"] }],
    ["list_reservations", {}],
    ["release_files", { all: true }],
  ]) {
    // alice acts as alice@web: joining another project as alice@side is refused.
    await alice.call(tool, args, tool === "init_mail");
  }
  const called = new Set([...alice.called, ...bob.called]);
  const missed = names.filter((n) => !called.has(n));
  check("every tool called", missed.length === 0, missed);
}

/** Clients of an older era: the SDK's client always offers its newest revision, so this speaks
 * the handshake itself over the SDK's transport, then lists the tools. */
async function olderRevision(home, version) {
  const transport = serverProcess("carol@web", home);
  const answers = new Map();
  const waiters = new Map();
  transport.onmessage = (m) => {
    answers.set(m.id, m);
    waiters.get(m.id)?.(m);
  };
  transport.onclose = () => {
    for (const done of waiters.values()) done({ error: "the server closed its output" });
  };
  const answer = (id) => answers.get(id) ?? new Promise((done) => waiters.set(id, done));
  await transport.start();
  try {
    await transport.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "mailroom-e2e-ts-old", version: "1.0.0" } },
    });
    const init = await answer(1);
    check(`revision ${version} served`, init.result?.protocolVersion === version, init);
    await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const list = await answer(2);
    check(`revision ${version} lists the tools`, list.result?.tools?.length === 25, list);
  } finally {
    await transport.close();
  }
}

const home = mkdtempSync(join(tmpdir(), "mailroom-ts-sdk-"));
const started = Date.now();
let protocol = "none";
try {
  protocol = await run(home);
  for (const version of ["2025-06-18", "2025-03-26", "2024-11-05"]) {
    await olderRevision(home, version);
  }
} catch (e) {
  check("the story ran to its end", false, e.stack ?? String(e));
} finally {
  rmSync(home, { recursive: true, force: true });
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(`typescript-sdk ${SDK_VERSION}, protocol ${protocol}, ${seconds}s: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
