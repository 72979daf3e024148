// Remote MCP servers behind toolhost, with real servers started here: the
// reference @modelcontextprotocol/server-everything (streamable HTTP) and
// a go-sdk server (bin/mcp-testserver). An account registers them; their
// tools appear in its runtime catalog (live) and in its MCP tools/list,
// and only its own; the official TypeScript SDK calls them through
// toolhost. A client that declared elicitation is asked to approve the
// go-sdk server's irreversible write: accepted it runs, declined it ends
// approval_declined. The go-sdk server is stopped: the catalog falls back to the
// snapshot (cached) and calls fail with upstream_unavailable; another
// account that registers it now has no snapshot (unavailable); the server
// comes back and both are live again. In a hosted /v1 loop (the openai
// Node client, the model scripted by server/v1/fakeupstream) the same remote
// tools are declared and run by the model; with the go-sdk server stopped
// the declaration still holds (the catalog is the snapshot) and the
// model's tool result is upstream_unavailable.
//
// The fake upstream is started by e2e/lib/fakeupstream.mjs, from
// $FAKEUPSTREAM_BIN (bin/fakeupstream under scripts/e2e.sh) or built there.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFile, rm } from "node:fs/promises";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startServer, freePort, node22Bin, tempDir, toolhostBin } from "./lib/server.mjs";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { connectHTTP, textOf } from "./lib/mcp.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

let server;
let configDir;
let admin;
const keys = {};
let everything;
let goServer;
let goPort;
let fake;
const hosted = {};
const clients = [];
const secretKey = Buffer.alloc(32, 7).toString("base64");

/** Spawns a process and waits until its output matches ready. */
async function spawnReady(cmd, args, env, ready) {
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start: ${out}`)), 15000);
    const onData = (c) => {
      out += c.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", onData);
    proc.once("exit", (code) => reject(new Error(`${cmd} exited (${code}): ${out}`)));
  });
  proc.removeAllListeners("exit");
  return proc;
}

async function kill(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGTERM");
  await once(proc, "exit");
}

function startGo() {
  const bin = join(dirname(toolhostBin()), "mcp-testserver");
  return spawnReady(bin, ["-addr", `127.0.0.1:${goPort}`], {}, /listening on/);
}

before(async () => {
  const port = await freePort();
  const require = createRequire(import.meta.url);
  const everythingMain = join(dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist", "index.js");
  // server-everything listens on every interface; the preload binds it to loopback.
  const loopback = fileURLToPath(new URL("../bench/mcpload/loopback.cjs", import.meta.url));
  everything = await spawnReady(node22Bin(), ["--require", loopback, everythingMain, "streamableHttp"], { PORT: String(port) }, /listening on port/);
  everything.url = `http://127.0.0.1:${port}/mcp`;
  goPort = await freePort();
  goServer = await startGo();

  configDir = await tempDir("toolhost-mcp-servers-");
  fake = await startFakeUpstream(script, { dir: configDir });
  const config = join(configDir, "config.json");
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"] }, mcp_servers: { probe_timeout: "2s" },
    hosted: { routes: [{ name: "fake", protocol: "openai", base_url: fake.url, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }] },
  }));
  server = await startServer({ dev: false, args: ["--config", config], env: { TOOLHOST_SECRET_KEY: secretKey, FAKE_UPSTREAM_KEY: "sk-fake" } });
  admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  for (const account of ["alpha", "beta"]) {
    const res = await api("POST", "/admin/keys", admin, { account, name: "mcp-servers-e2e", scopes: ["mcp", "tools", "hosted"] });
    keys[account] = res.body.secret;
    hosted[account] = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: keys[account], maxRetries: 0 });
  }
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await server?.stop();
  await kill(everything);
  await kill(goServer);
  await fake?.stop();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

// The model's script: each conversation calls one remote tool, then
// answers.
const script = {
  conversations: [
    { match: "echo it", rounds: [{ tool_calls: [{ id: "call_echo", name: "everything__echo", arguments: '{"message":"hosted hi"}' }] }, { content: "It echoed." }] },
    { match: "add them", rounds: [{ tool_calls: [{ id: "call_add", name: "gotest__add", arguments: '{"a":2,"b":3}' }] }, { content: "Added." }] },
  ],
};

const hostedRequest = (content, ...names) => ({
  model: "fake-1",
  messages: [{ role: "user", content }],
  tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: names, require_approval: "never" }],
});

async function execution(account, floor) {
  const j = await api("GET", `/tool-executions?floor_id=${encodeURIComponent(floor)}`, keys[account]);
  assert.equal(j.status, 200, JSON.stringify(j.body));
  assert.equal(j.body.data.length, 1, JSON.stringify(j.body));
  return j.body.data[0];
}

async function api(method, path, key, body) {
  const res = await fetch(server.base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

async function mcpClient(account) {
  const c = await connectHTTP(server.mcpURL, { headers: { Authorization: `Bearer ${keys[account]}` } });
  clients.push(c);
  return c;
}

async function runtime(account) {
  const s = await api("POST", "/sessions", keys[account], {});
  assert.equal(s.status, 201, JSON.stringify(s.body));
  const r = await api("GET", `/sessions/${s.body.data.id}/tools/runtime`, keys[account]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}

const tool = (cat, name) => cat.tools.find((t) => t.name === name);
const errorCode = (res) => res._meta?.["toolhost/error"]?.code;

test("registration: secrets sealed, never echoed; tenancy; scope tools", async () => {
  const res = await api("POST", "/mcp-servers", keys.alpha, {
    name: "everything", url: everything.url, headers: { "X-Trace-Tag": "e2e-secret-header" }, timeout: "10s",
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.data.catalog.catalog_source, "live");
  assert.ok(res.body.data.catalog.tools.includes("echo"), JSON.stringify(res.body.data.catalog));
  assert.equal(res.body.data.headers["X-Trace-Tag"], "[redacted]");
  const go = await api("POST", "/mcp-servers", keys.alpha, { name: "gotest", url: `http://127.0.0.1:${goPort}/mcp`, auth: { type: "bearer", token: "e2e-bearer-secret" } });
  assert.equal(go.status, 201, JSON.stringify(go.body));
  assert.equal(go.body.data.auth.token_set, true);
  const list = await fetch(server.base + "/mcp-servers", { headers: { Authorization: `Bearer ${keys.alpha}` } }).then((r) => r.text());
  assert.ok(!list.includes("e2e-secret-header") && !list.includes("e2e-bearer-secret"), list);
  const other = await api("GET", `/mcp-servers/${go.body.data.id}`, keys.beta);
  assert.equal(other.status, 404);
  const noScope = await api("POST", "/admin/keys", admin, { account: "alpha", name: "mcp-only", scopes: ["mcp"] });
  const refused = await api("GET", "/mcp-servers", noScope.body.secret);
  assert.equal(refused.status, 403, JSON.stringify(refused.body));
});

test("live: runtime catalog and MCP tools/list of that account only; calls through toolhost", async () => {
  const cat = await runtime("alpha");
  const echo = tool(cat, "everything__echo");
  assert.ok(echo, JSON.stringify(cat.conflicts));
  assert.equal(echo.catalog_source, "live");
  assert.equal(echo.provider_type, "mcp");
  assert.equal(echo.side_effect_level, "none");
  assert.equal(echo.side_effect_level_basis, "tool_declared");
  assert.equal(tool(cat, "gotest__add").catalog_source, "live");
  assert.equal(tool(cat, "get_time").catalog_source, null);

  const alpha = await mcpClient("alpha");
  const names = (await alpha.listTools()).tools.map((t) => t.name);
  for (const n of ["everything__echo", "everything__get_sum", "gotest__add", "gotest__echo"]) assert.ok(names.includes(n), `${n} in ${names}`);
  const beta = await mcpClient("beta");
  const betaNames = (await beta.listTools()).tools.map((t) => t.name);
  assert.ok(!betaNames.some((n) => n.includes("__")), `beta sees ${betaNames}`);

  let res = await alpha.callTool({ name: "everything__echo", arguments: { message: "hello gateway" } });
  assert.equal(res.isError ?? false, false, textOf(res));
  // Fenced: the boundary token in the opening marker closes it, nothing else.
  const fence = textOf(res).match(/^<untrusted-data boundary="([0-9a-f]{24})">\n[^\n]*\n([\s\S]*)\n<\/untrusted-data boundary="\1">$/);
  assert.ok(fence, textOf(res));
  assert.match(fence[2], /Echo: hello gateway/);
  res = await alpha.callTool({ name: "everything__get_sum", arguments: { a: 2, b: 40 } });
  assert.match(textOf(res), /42/);
  res = await alpha.callTool({ name: "gotest__add", arguments: { a: 2, b: 3 } });
  assert.equal(res.isError ?? false, false, textOf(res));
  assert.deepEqual(res.structuredContent, { sum: 5 });
  res = await alpha.callTool({ name: "gotest__add", arguments: { a: "two", b: 3 } });
  assert.equal(res.isError, true);
  assert.equal(errorCode(res), "invalid_arguments");
  // Journaled with provider_type mcp, the secrets nowhere in the records.
  const sid = alpha.transport.sessionId;
  assert.ok(sid, "the MCP session id");
  const j = await api("GET", `/tool-executions?session_id=${encodeURIComponent(sid)}&provider_type=mcp&sort_order=asc`, keys.alpha);
  assert.equal(j.status, 200, JSON.stringify(j.body));
  assert.deepEqual(j.body.data.map((r) => [r.tool_name, r.provider_type, r.status]), [
    ["everything__echo", "mcp", "success"], ["everything__get_sum", "mcp", "success"], ["gotest__add", "mcp", "success"], ["gotest__add", "mcp", "error"],
  ]);
  assert.ok(j.body.data.every((r) => r.provider_id.startsWith("mcp:mcpsrv_")));
  assert.ok(!JSON.stringify(j.body).includes("e2e-bearer-secret"));
  // Not in beta's tools/list, so beta's MCP server does not know it.
  await assert.rejects(beta.callTool({ name: "gotest__add", arguments: { a: 2, b: 3 } }), /unknown tool "gotest__add"/);
});

test("elicitation: a client that declared it is asked to approve an irreversible remote call; accept runs it once, decline does not", async () => {
  const client = new Client({ name: "toolhost-e2e-elicit", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  let answer;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpURL), { requestInit: { headers: { Authorization: `Bearer ${keys.alpha}` } } }));
  clients.push(client);

  answer = { action: "accept", content: { approve: true } };
  let res = await client.callTool({ name: "gotest__write", arguments: { note: "e2e \u202e note" } });
  assert.equal(res.isError ?? false, false, textOf(res));
  assert.equal(asked.length, 1);
  assert.equal(asked[0].mode, "form");
  assert.match(asked[0].message, /gotest__write/);
  assert.match(asked[0].message, /apr_/);
  assert.ok(asked[0].message.includes("\\u202e") && !asked[0].message.includes("\u202e"), asked[0].message);
  assert.deepEqual(asked[0].requestedSchema.required, ["approve"]);

  answer = { action: "decline" };
  res = await client.callTool({ name: "gotest__write", arguments: { note: "e2e \u202e note" } });
  assert.equal(res.isError, true);
  assert.equal(errorCode(res), "approval_declined");
  assert.equal(asked.length, 2);

  // The journal: the accepted call ran under an approval decided through elicitation.
  const sid = client.transport.sessionId;
  const j = await api("GET", `/tool-executions?session_id=${encodeURIComponent(sid)}&sort_order=asc`, keys.alpha);
  assert.equal(j.status, 200, JSON.stringify(j.body));
  assert.deepEqual(j.body.data.map((r) => [r.tool_name, r.status]), [["gotest__write", "success"], ["gotest__write", "denied"]]);
});

test("hosted /v1 loop: the model calls the account's remote tools through the openai client; another account cannot declare them", async () => {
  let data = await hosted.alpha.chat.completions.create(hostedRequest("echo it please", "everything__echo"));
  assert.equal(data.choices[0].message.content, "It echoed.");
  assert.deepEqual(data.toolhost.tool_calls.map((c) => [c.id, c.name, c.status]), [["call_echo", "everything__echo", "done"]]);
  let rec = await execution("alpha", data.toolhost.request_id);
  assert.deepEqual([rec.tool_name, rec.provider_type, rec.face, rec.status], ["everything__echo", "mcp", "hosted", "success"]);
  assert.ok(rec.provider_id.startsWith("mcp:mcpsrv_"), rec.provider_id);
  // The journal holds what the server answered (text only: fenced).
  assert.match(JSON.stringify(rec.result.data), /Echo: hosted hi/);
  assert.match(JSON.stringify(rec.result.data), /untrusted-data/);

  data = await hosted.alpha.chat.completions.create(hostedRequest("add them", "gotest__add"));
  assert.equal(data.choices[0].message.content, "Added.");
  assert.deepEqual(data.toolhost.tool_calls.map((c) => [c.name, c.status]), [["gotest__add", "done"]]);
  rec = await execution("alpha", data.toolhost.request_id);
  assert.deepEqual([rec.provider_type, rec.face, rec.status], ["mcp", "hosted", "success"]);
  assert.deepEqual(rec.result, { data: { sum: 5 } });

  for (const name of ["everything__echo", "gotest__add"]) {
    await assert.rejects(hosted.beta.chat.completions.create(hostedRequest("echo it", name)),
      (err) => err.status === 400 && err.error?.details?.reason === "unknown_hosted_tool", name);
  }
});

test("server down: cached with its snapshot, calls fail upstream_unavailable; a new account has no snapshot: unavailable; back: live", async () => {
  await kill(goServer);
  // In a hosted loop: still declared (the catalog is what toolhost knows,
  // no server is asked), the model's tool result is upstream_unavailable,
  // and the model still answers.
  const down = await hosted.alpha.responses.create({
    model: "fake-1", input: "add them again",
    tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["gotest__add"], require_approval: "never" }],
  });
  const call = down.output.find((o) => o.type === "mcp_call");
  assert.equal(call?.status, "failed", JSON.stringify(down.output));
  assert.match(call.error, /^upstream_unavailable: the MCP server gotest cannot be reached/);
  assert.equal(down.output_text, "Added.");
  const failed = await execution("alpha", down.toolhost.request_id);
  assert.deepEqual([failed.tool_name, failed.provider_type, failed.face, failed.error_code], ["gotest__add", "mcp", "hosted", "upstream_unavailable"]);

  let cat = await runtime("alpha");
  const add = tool(cat, "gotest__add");
  assert.equal(add?.catalog_source, "cached", JSON.stringify(cat.mcp_servers));
  const st = cat.mcp_servers.find((s) => s.name === "gotest");
  assert.equal(st.catalog_source, "cached");
  assert.ok(st.age_ms >= 0 && st.listed_at > 0);
  assert.equal(tool(cat, "everything__echo").catalog_source, "live");

  const alpha = await mcpClient("alpha");
  const res = await alpha.callTool({ name: "gotest__add", arguments: { a: 1, b: 1 } });
  assert.equal(res.isError, true);
  assert.equal(errorCode(res), "upstream_unavailable", textOf(res));

  const reg = await api("POST", "/mcp-servers", keys.beta, { name: "gotest", url: `http://127.0.0.1:${goPort}/mcp`, auth: { type: "bearer", token: "e2e-bearer-secret" } });
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  assert.equal(reg.body.data.catalog.catalog_source, "unavailable");
  cat = await runtime("beta");
  assert.equal(cat.mcp_servers[0].catalog_source, "unavailable");
  assert.equal(cat.mcp_servers[0].listed_at, null);
  assert.ok(!cat.tools.some((t) => t.name.startsWith("gotest__")));

  goServer = await startGo();
  cat = await runtime("alpha");
  assert.equal(tool(cat, "gotest__add")?.catalog_source, "live");
  const refreshed = await api("POST", `/mcp-servers/${reg.body.data.id}/refresh`, keys.beta);
  assert.equal(refreshed.body.data.catalog.catalog_source, "live", JSON.stringify(refreshed.body));
  const beta = await mcpClient("beta");
  const again = await beta.callTool({ name: "gotest__add", arguments: { a: 20, b: 22 } });
  assert.deepEqual(again.structuredContent, { sum: 42 }, textOf(again));
});
