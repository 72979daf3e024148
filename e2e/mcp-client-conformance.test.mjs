// The MCP conformance suite's client scenarios (@modelcontextprotocol/
// conformance client) against toolhost's MCP client: the gateway to remote
// MCP servers, run through `toolhost mcp-servers probe` (lib/probe-client.mjs).
// The auth/* scenarios run the oauth_authorization_code flow (the steps of the go-sdk's
// AuthorizationCodeHandler) through the probe's --oauth, which plays the
// user: the suite's authorization servers approve without one. Two of them
// run again through toolhost's REST API and its callback route
// (lib/rest-oauth-client.mjs). Not run, and why: docs/mcp-servers.md.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { node22Bin, startServer, tempDir } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const SCENARIOS = ["initialize", "tools_call", "sse-retry",
  "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
  "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
  "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
  "auth/pre-registration", "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch",
  "auth/offline-access-scope", "auth/offline-access-not-supported"];
// Through the REST API and the callback: dynamic and pre-registered client.
const REST_SCENARIOS = ["auth/metadata-default", "auth/pre-registration"];
let dir;
let config;
let server;
let key;

before(async () => {
  dir = await tempDir("toolhost-client-conformance-");
  config = join(dir, "config.json");
  await writeFile(config, JSON.stringify({ fetch: { allow_private: ["localhost", "127.0.0.1", "::1"] } }));
  server = await startServer({ dev: false, args: ["--config", config], env: { TOOLHOST_SECRET_KEY: Buffer.alloc(32, 9).toString("base64") } });
  const admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  const res = await fetch(server.base + "/admin/keys", {
    method: "POST", headers: { Authorization: `Bearer ${admin}`, "Content-Type": "application/json" },
    body: JSON.stringify({ account: "conformance", name: "client-conformance", scopes: ["tools"] }),
  });
  key = (await res.json()).secret;
  assert.ok(key);
});

after(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function suiteEntry() {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve("@modelcontextprotocol/conformance/package.json");
  return join(dirname(pkgFile), JSON.parse(await readFile(pkgFile, "utf8")).bin.conformance);
}

function run(cmd, args, env, timeoutMs) {
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1", ...env } });
    let out = "";
    proc.stdout.on("data", (c) => (out += c));
    proc.stderr.on("data", (c) => (out += c));
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    proc.on("error", reject);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

for (const scenario of SCENARIOS) {
  test(`conformance client scenario ${scenario}`, async () => {
    const command = `${node22Bin()} ${join(here, "lib", "probe-client.mjs")}`;
    const { code, out } = await run(node22Bin(), [await suiteEntry(), "client", "--command", command, "--scenario", scenario, "--timeout", "60000"],
      { TOOLHOST_PROBE_CONFIG: config }, 120000);
    assert.equal(code, 0, out);
    assert.match(out, /Passed: \d+\/\d+, 0 failed/, out);
  });
}

for (const scenario of REST_SCENARIOS) {
  test(`conformance client scenario ${scenario} through the REST API and the callback`, async () => {
    const command = `${node22Bin()} ${join(here, "lib", "rest-oauth-client.mjs")}`;
    const { code, out } = await run(node22Bin(), [await suiteEntry(), "client", "--command", command, "--scenario", scenario, "--timeout", "60000"],
      { TOOLHOST_BASE: server.base, TOOLHOST_KEY: key }, 120000);
    assert.equal(code, 0, out);
    assert.match(out, /Passed: \d+\/\d+, 0 failed/, out);
  });
}

test("the callback refuses a forged or missing state without credentials", async () => {
  for (const [query, code] of [["?code=x&state=forged", "unknown_state"], ["?code=x", "validation_error"], ["?error=access_denied&state=s", "authorization_denied"],
    [`?code=x&state=${"s".repeat(5000)}`, "validation_error"]]) {
    const res = await fetch(server.base + "/mcp-servers/oauth/callback" + query);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, code);
  }
});
