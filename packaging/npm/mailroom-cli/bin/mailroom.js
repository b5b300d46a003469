#!/usr/bin/env node
// Runs the `mailroom` binary of this platform's package (an optional dependency, which npm
// installs only where its `os` and `cpu` match), with these arguments, these standard streams
// and this environment, and exits as it did.
"use strict";

const { spawn } = require("node:child_process");

const PACKAGES = {
  "linux x64": "mailroom-cli-linux-x64",
};

function fail(sentence) {
  process.stderr.write(`mailroom: ${sentence}\n`);
  process.exit(1);
}

const pkg = PACKAGES[`${process.platform} ${process.arch}`];
if (!pkg) {
  fail(
    `there is no prebuilt mailroom for ${process.platform} on ${process.arch}; ` +
      "build it from source with a Rust toolchain (the project's README, \"Install\")",
  );
}

let binary;
try {
  binary = require.resolve(`${pkg}/bin/mailroom`);
} catch {
  fail(
    `the package ${pkg}, which holds the binary, is not installed; ` +
      "install mailroom-cli again without --omit=optional (or --no-optional)",
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
// A signal sent to this launcher alone (a harness stopping its MCP server) reaches mailroom too.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (e) => fail(`could not run ${binary}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what mailroom saw.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
