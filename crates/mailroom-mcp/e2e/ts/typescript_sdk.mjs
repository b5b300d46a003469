// mailroom's MCP server driven by the official TypeScript SDK (pinned in package.json and
// package-lock.json): list the tools, call every one, validate every structured result against its
// tool's output schema (the SDK validates too; a mismatch fails either way), and play a
// conversation between two agents; then check that the older protocol revisions are still served.
//
// Over stdio (the default) each agent is a server process of its own on one home. With --http,
// one `mailroom mcp --listen 127.0.0.1:0` serves both through `StreamableHTTPClientTransport`,
// each agent with its own bearer token (`token add`); then a missing, wrong and revoked token are
// each refused with 401, and a session (when the server keeps one) serves only its own token.
//
// Usage: node typescript_sdk.mjs PATH/TO/mailroom [--http]

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import Ajv2020 from "ajv/dist/2020.js";

const BIN = process.argv[2];
const HTTP = process.argv[3] === "--http";
if (!BIN || (process.argv[3] !== undefined && !HTTP)) {
  console.error("usage: node typescript_sdk.mjs PATH/TO/mailroom [--http]");
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

function homeEnv(home) {
  const env = { ...process.env, MAILROOM_HOME: home };
  delete env.MAILROOM_AS;
  return env;
}

/** How agents reach the server: a process each over stdio, or one HTTP server and a token each. */
class Stdio {
  constructor(home) {
    this.home = home;
    this.name = "stdio";
  }

  transport(who) {
    return new StdioClientTransport({ command: BIN, args: ["--as", who, "mcp"], env: homeEnv(this.home), cwd: this.home });
  }

  async close() {}
}

class Http {
  constructor(home) {
    this.home = home;
    this.name = "streamable HTTP";
    this.tokens = {};
    this.stderr = "";
  }

  mailroom(...args) {
    return execFileSync(BIN, args, { env: homeEnv(this.home), cwd: this.home, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  }

  /** A token for `who`, named after its handle, as the operator issues one. */
  addToken(who) {
    const issued = JSON.parse(this.mailroom("--as", "HUMAN", "--json", "token", "add", who, "--name", who.split("@")[0]));
    check(`token add ${who} gives a token for ${who}`, issued.address === who && typeof issued.token === "string", issued);
    this.tokens[who] = issued.token;
    return issued.token;
  }

  /** Starts `mcp --listen 127.0.0.1:0` and reads the URL it prints on its first line. */
  async start() {
    this.server = spawn(BIN, ["mcp", "--listen", "127.0.0.1:0"], { env: homeEnv(this.home), cwd: this.home, stdio: ["ignore", "pipe", "pipe"] });
    this.server.stderr.on("data", (d) => {
      this.stderr += d;
    });
    this.exited = new Promise((done) => this.server.once("exit", (code, signal) => done({ code, signal })));
    const first = await Promise.race([
      new Promise((done) => createInterface({ input: this.server.stdout }).once("line", done)),
      this.exited.then((e) => {
        throw new Error(`mcp --listen exited (${JSON.stringify(e)}) before printing its URL: ${this.stderr}`);
      }),
    ]);
    check("mcp --listen prints its URL first", /^http:\/\/127\.0\.0\.1:[1-9][0-9]*\/mcp$/.test(first), first);
    this.url = new URL(first);
  }

  transport(who) {
    return this.transportWith(this.tokens[who] ?? this.addToken(who));
  }

  /** A transport sending `token` (none when undefined), as a harness's HTTP config does. */
  transportWith(token) {
    const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    return new StreamableHTTPClientTransport(this.url, { requestInit: { headers } });
  }

  /** Stops the server as Ctrl-C does: it ends its open requests and exits 0. */
  async close() {
    if (this.server === undefined) return;
    this.server.kill("SIGTERM");
    const e = await this.exited;
    check("mcp --listen exits 0 on SIGTERM", e.code === 0, { ...e, stderr: this.stderr });
  }
}

/** One agent acting as `who` through its own transport, with the validators of the schemas it listed. */
class Agent {
  constructor(who, mode) {
    this.who = who;
    this.transport = mode.transport(who);
    // The client hands the negotiated revision to transports that want it (HTTP ones do).
    const set = this.transport.setProtocolVersion?.bind(this.transport);
    this.transport.setProtocolVersion = (version) => {
      this.protocolVersion = version;
      set?.(version);
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

async function run(mode) {
  if (HTTP) await mode.start();
  const alice = new Agent("alice@web", mode);
  const bob = new Agent("bob@web", mode);
  await alice.connect();
  await bob.connect();
  try {
    await story(alice, bob);
    if (HTTP) await tokens(mode, alice, bob);
  } finally {
    await alice.close();
    await bob.close();
  }
  for (const version of ["2025-06-18", "2025-03-26", "2024-11-05"]) {
    await olderRevision(mode, version);
  }
  return alice.protocolVersion;
}

/** A raw request to the HTTP server, as a client that is not the SDK would send it. */
function post(mode, headers, message) {
  return fetch(mode.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(message),
  });
}

/** Over HTTP each request needs a live token, and acts as its identity alone. */
async function tokens(mode, alice, bob) {
  for (const [what, token] of [["no token", undefined], ["a wrong token", "mailroom_not-a-token"]]) {
    const client = new Client({ name: "mailroom-e2e-ts-stranger", version: "1.0.0" });
    let error;
    try {
      await client.connect(mode.transportWith(token));
    } catch (e) {
      error = e;
    }
    check(`${what}: the SDK's connect fails with 401`, error?.code === 401, error?.stack ?? "connected");
    await client.close().catch(() => {});
  }
  const init = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const r = await post(mode, {}, init);
  check(
    "401 says how to authenticate (WWW-Authenticate: Bearer)",
    r.status === 401 && /^bearer\b/i.test(r.headers.get("www-authenticate") ?? ""),
    [r.status, r.headers.get("www-authenticate")],
  );

  // Stateless, the server issues no session and has no server stream to offer a GET (405); were
  // it to keep sessions, one opened with alice's token must serve no other token.
  const session = alice.transport.sessionId;
  if (session === undefined) {
    const get = await fetch(mode.url, { headers: { authorization: `Bearer ${mode.tokens["alice@web"]}`, accept: "text/event-stream" } });
    check("stateless: no session, and a GET for a server stream is 405", get.status === 405, get.status);
  } else {
    const stolen = await post(
      mode,
      { authorization: `Bearer ${mode.tokens["bob@web"]}`, "mcp-session-id": session, "mcp-protocol-version": alice.protocolVersion },
      { jsonrpc: "2.0", id: 9, method: "tools/list" },
    );
    check("alice's session refuses bob's token", [401, 403, 404].includes(stolen.status), stolen.status);
  }

  // Revoked: bob's next request is refused, without a restart; alice is served throughout.
  mode.mailroom("--as", "HUMAN", "token", "revoke", "bob");
  let error;
  try {
    await bob.client.callTool({ name: "get_projects", arguments: {} });
  } catch (e) {
    error = e;
  }
  check("a revoked token: the next call fails with 401", error?.code === 401, error?.stack ?? "answered");
  const [s] = await alice.call("get_projects", {});
  check("alice is served after bob's token is revoked", (s.projects ?? []).length >= 1, s);
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

  // a wait of alice's woken by bob's reply (over stdio, through another server process)
  [s] = await bob.call("read_mail", { no_archive: true });
  const correction = s.messages?.[0]?.id;
  const waiting = alice.call("wait_mail", { reply_to: correction, timeout_seconds: 30 });
  check("wait blocks while nothing came", (await settledWithin(waiting, 300)) === pending, "returned at once");
  const [reply] = await bob.call("reply_mail", { id: correction, body: "looks good" });
  [s] = await waiting;
  check("wait woken by the other agent's write", s.messages?.[0]?.id === reply.id, s);
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
async function olderRevision(mode, version) {
  const transport = mode.transport("carol@web");
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
    // As the SDK's client does once it agreed on a revision (HTTP sends it in a header).
    transport.setProtocolVersion?.(version);
    await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    const list = await answer(2);
    check(`revision ${version} lists the tools`, list.result?.tools?.length === 25, list);
  } finally {
    await transport.close();
  }
}

const home = mkdtempSync(join(tmpdir(), "mailroom-ts-sdk-"));
const mode = HTTP ? new Http(home) : new Stdio(home);
const started = Date.now();
let protocol = "none";
try {
  protocol = await run(mode);
} catch (e) {
  check("the story ran to its end", false, e.stack ?? String(e));
} finally {
  await mode.close().catch((e) => check("the server stopped", false, e.stack ?? String(e)));
  rmSync(home, { recursive: true, force: true });
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(`typescript-sdk ${SDK_VERSION} over ${mode.name}, protocol ${protocol}, ${seconds}s: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
