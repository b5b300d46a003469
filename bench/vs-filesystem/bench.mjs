// mailroom's MCP server against m_AI_l's way of doing the same work: the generic filesystem MCP
// server (@modelcontextprotocol/server-filesystem, pinned in package.json and package-lock.json)
// over a directory of m_AI_l mailbox files. One client for both: the official TypeScript SDK,
// pinned the same way. Called by ./run, which builds mailroom and installs the pins; read its
// header for what is timed.
//
// Usage: node bench.mjs PATH/TO/mailroom [--messages N] [--rounds R] [--firsts F] [--json FILE]

import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const BIN = argv.shift();
if (!BIN) {
  console.error("usage: node bench.mjs PATH/TO/mailroom [--messages N] [--rounds R] [--firsts F] [--json FILE]");
  process.exit(2);
}
const opt = { messages: 1000, rounds: 6, firsts: 6, json: "" };
while (argv.length) {
  const flag = argv.shift();
  const key = flag.replace(/^--/, "");
  if (!(key in opt) || !argv.length) {
    console.error(`bench.mjs: unknown or incomplete argument ${flag}`);
    process.exit(2);
  }
  opt[key] = key === "json" ? argv.shift() : Number(argv.shift());
}
const N = opt.messages;
// Each round times one block per server (their order alternating from round to round):
// SENDS sends, READONLY read-only calls and READS reads of the whole mailbox.
const SENDS = 20;
const READONLY = 20;
const READS = 4;

const here = new URL(".", import.meta.url).pathname;
const versionOf = (pkg) =>
  JSON.parse(readFileSync(join(here, "node_modules", pkg, "package.json"))).version;
const FS_SERVER = join(here, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

const say = (s) => console.error(`bench/vs-filesystem: ${s}`);
const work = mkdtempSync(join(process.env.TMPDIR || tmpdir(), "mailroom-vs-fs."));

async function connect(command, args, cwd) {
  const env = { ...process.env };
  delete env.MAILROOM_AS;
  delete env.MAILROOM_HOME;
  const transport = new StdioClientTransport({ command, args, env, cwd, stderr: "inherit" });
  const client = new Client({ name: "mailroom-bench", version: "1.0.0" });
  await client.connect(transport);
  await client.listTools(); // the SDK keeps each tool's output schema to validate results
  return { client, transport, pid: transport.pid };
}

function mailroom(home, who) {
  return connect(BIN, ["--home", home, "--as", who, "mcp"], work);
}

async function call(server, name, args) {
  const result = await server.client.callTool({ name, arguments: args });
  if (result.isError) {
    throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  }
  return result;
}

async function timed(server, name, args) {
  const t0 = performance.now();
  const result = await call(server, name, args);
  return [performance.now() - t0, result];
}

function rss(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))[1]);
  return { rss_kib: kib("VmRSS"), hwm_kib: kib("VmHWM") };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// ---- the same mail on both sides ----------------------------------------------------------------
// A body of a few lines (about 300 bytes), as an agent's status message.
const subject = (i) => `status ${i}: build and tests`;
const body = (i) =>
  `Message ${i}. The build on branch feature-${i % 17} finished; 412 tests passed, 3 were skipped.\n` +
  `Next I will look at the failing integration case in the store and report back here.\n` +
  `Please review the change to the listing code when you have a moment, and tell me if\n` +
  `the new error message reads well.`;
const stamp = "20261202-0400";
const mAiLEntry = (from, i) => `${from} // ${stamp} // M // ${subject(i)} // ${body(i)}`;
const SENTINEL = "<!-- END -->";

const home = join(work, "home");
const mail = join(work, "mail");
mkdirSync(mail);
say(`${N} messages from a to b in ${work}`);
{
  const writer = await mailroom(home, "a@bench");
  for (let i = 1; i <= N; i++) {
    await call(writer, "write_mail", { recipient: "b", subject: subject(i), body: body(i) });
  }
  await writer.client.close();
}
const entries = [];
for (let i = 1; i <= N; i++) entries.push(mAiLEntry("a", i));
writeFileSync(join(mail, "mailbox_b.md"), `${entries.join("\n")}\n${SENTINEL}\n`);
writeFileSync(join(mail, "mailbox_a.md"), `${mAiLEntry("b", 0)}\n${SENTINEL}\n`);
writeFileSync(
  join(mail, "roster.md"),
  "| Handle | Role | Mailbox | Status |\n|---|---|---|---|\n| a | dev | mailbox_a.md | active |\n| b | dev | mailbox_b.md | active |\n",
);
// Homes for the first reads, each with the N messages still unread.
for (let k = 0; k < opt.firsts; k++) {
  cpSync(home, join(work, `mark${k}`), { recursive: true });
  cpSync(home, join(work, `archive${k}`), { recursive: true });
}

// ---- one call of each kind, per server --------------------------------------------------------
const mailboxB = join(mail, "mailbox_b.md");
const mailboxA = join(mail, "mailbox_a.md");
let sent = 0;
const sides = {
  mailroom: {
    // One durable write_mail.
    send: async (s) => {
      sent += 1;
      return (await timed(s, "write_mail", { recipient: "a", subject: `reply ${sent}`, body: body(sent) }))[0];
    },
    readonly: async (s) => (await timed(s, "get_roster", { project_handle: "bench" }))[0],
    read: (s) => timed(s, "read_mail", { limit: N, no_archive: true }),
    count: (result) => result.structuredContent.messages.length,
  },
  filesystem: {
    // m_AI_l's send: read the mailbox's tail, then append the message before the sentinel.
    send: async (s) => {
      sent += 1;
      const t0 = performance.now();
      await call(s, "read_text_file", { path: mailboxA, tail: 3 });
      await call(s, "edit_file", {
        path: mailboxA,
        edits: [{ oldText: SENTINEL, newText: `${mAiLEntry("b", sent)}\n${SENTINEL}` }],
      });
      return performance.now() - t0;
    },
    readonly: async (s) => (await timed(s, "list_directory", { path: mail }))[0],
    read: (s) => timed(s, "read_text_file", { path: mailboxB }),
    count: (result) => result.structuredContent.content.split("\n").filter((l) => l.startsWith("a // ")).length,
  },
};

const times = {};
for (const side of Object.keys(sides)) times[side] = { send: [], readonly: [], read: [], bytes: 0 };

async function block(side, server, record) {
  const s = sides[side];
  const t = times[side];
  for (let i = 0; i < SENDS; i++) {
    const ms = await s.send(server);
    if (record) t.send.push(ms);
  }
  for (let i = 0; i < READONLY; i++) {
    const ms = await s.readonly(server);
    if (record) t.readonly.push(ms);
  }
  for (let i = 0; i < READS; i++) {
    const [ms, result] = await s.read(server);
    const got = s.count(result);
    if (got !== N) throw new Error(`${side} read ${got} messages, not ${N}`);
    t.bytes = Buffer.byteLength(JSON.stringify(result));
    if (record) t.read.push(ms);
  }
}

const servers = {
  mailroom: await mailroom(home, "b@bench"),
  filesystem: await connect(process.execPath, [FS_SERVER, mail], work),
};
// The first read marks the mail read; every later one finds it pending and read.
await sides.mailroom.read(servers.mailroom);
say(`warmup, then ${opt.rounds} rounds of alternating blocks`);
for (const side of ["mailroom", "filesystem"]) await block(side, servers[side], false);
for (let r = 0; r < opt.rounds; r++) {
  const order = r % 2 ? ["filesystem", "mailroom"] : ["mailroom", "filesystem"];
  for (const side of order) await block(side, servers[side], true);
}
const memory = {};
for (const side of Object.keys(servers)) {
  memory[side] = rss(servers[side].pid);
  await servers[side].client.close();
}

// ---- first reads: a fresh server over a home with N unread, each once ----------------------
say(`${opt.firsts} first reads each way`);
const first = { mark: [], archive: [] };
for (let k = 0; k < opt.firsts; k++) {
  for (const [what, args] of [
    ["mark", { limit: N, no_archive: true }],
    ["archive", { limit: N }],
  ]) {
    const server = await mailroom(join(work, `${what}${k}`), "b@bench");
    await call(server, "get_roster", { project_handle: "bench" }); // a warm server
    const [ms, result] = await timed(server, "read_mail", args);
    const got = sides.mailroom.count(result);
    if (got !== N) throw new Error(`first read (${what}) got ${got} messages, not ${N}`);
    if (what === "archive" && result.structuredContent.archived !== N) {
      throw new Error(`first read archived ${result.structuredContent.archived}, not ${N}`);
    }
    first[what].push(ms);
    await server.client.close();
  }
}
rmSync(work, { recursive: true, force: true });

// ---- report ---------------------------------------------------------------------------------
const m = (side, what) => median(times[side][what]);
const fmt = (x) => x.toFixed(2);
const mib = (kib) => (kib / 1024).toFixed(1);
const ratio = (a, b) => (a / b).toFixed(2);
const fsRead = m("filesystem", "read");
const rows = [
  ["send (mailroom: one `write_mail`, durable; filesystem: `read_text_file` tail + `edit_file`, no fsync), median", `${fmt(m("mailroom", "send"))} ms`, `${fmt(m("filesystem", "send"))} ms`, ratio(m("mailroom", "send"), m("filesystem", "send")), ""],
  ["read-only call (`get_roster` / `list_directory`), median", `${fmt(m("mailroom", "readonly"))} ms`, `${fmt(m("filesystem", "readonly"))} ms`, ratio(m("mailroom", "readonly"), m("filesystem", "readonly")), ""],
  ["server RSS after the run (VmRSS)", `${mib(memory.mailroom.rss_kib)} MiB`, `${mib(memory.filesystem.rss_kib)} MiB`, ratio(memory.mailroom.rss_kib, memory.filesystem.rss_kib), ""],
  [`**read ${N.toLocaleString("en")} pending** (\`read_mail\` limit ${N}, \`no_archive\` / one \`read_text_file\`), median`, `${fmt(m("mailroom", "read"))} ms`, `${fmt(fsRead)} ms`, ratio(m("mailroom", "read"), fsRead), "≤ 1.00"],
  [`first read of ${N.toLocaleString("en")} unread, \`no_archive\` (marks them read), median of ${opt.firsts}`, `${fmt(median(first.mark))} ms`, `(${fmt(fsRead)} ms)`, ratio(median(first.mark), fsRead), "≤ 3.00"],
  [`first read of ${N.toLocaleString("en")} unread, archiving (\`read_mail\` limit ${N}), median of ${opt.firsts}`, `${fmt(median(first.archive))} ms`, `(${fmt(fsRead)} ms)`, ratio(median(first.archive), fsRead), "≤ 3.00"],
  ["response of the whole read (JSON of the result)", `${(times.mailroom.bytes / 1e6).toFixed(2)} MB`, `${(times.filesystem.bytes / 1e6).toFixed(2)} MB`, ratio(times.mailroom.bytes, times.filesystem.bytes), ""],
];
const sdk = versionOf("@modelcontextprotocol/sdk");
const fsv = versionOf("@modelcontextprotocol/server-filesystem");
console.log(`Client: the TypeScript SDK ${sdk} (node ${process.versions.node}) for both; filesystem server ${fsv}.`);
console.log(`${opt.rounds} rounds of alternating blocks (${SENDS} sends, ${READONLY} read-only calls, ${READS} reads each), ${N} messages of ~${body(N).length} bytes.`);
console.log("");
console.log("| figure | mailroom | filesystem server | ratio | target |");
console.log("|---|---:|---:|---:|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
if (opt.json) {
  writeFileSync(
    opt.json,
    `${JSON.stringify({ sdk, filesystem_server: fsv, node: process.versions.node, messages: N, rounds: opt.rounds, times, memory, first }, null, 1)}\n`,
  );
}
