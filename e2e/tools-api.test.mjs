// The tools API through real clients: the official TypeScript MCP SDK sees
// a script tool appear after POST /tools/definitions (list_changed), calls
// it and gets the object the script returned; a slot deny list denies a
// call, and the denial shows in /tool-executions and /tools/call-records;
// with the script gate off, writing a script tool is 403 and the existing
// one is unavailable in the session's runtime catalog.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startServer } from "./lib/server.mjs";
import { connectHTTP } from "./lib/mcp.mjs";

let server;
let gateOff;
let client;
let listChanged = 0;

before(async () => {
  server = await startServer({ env: { ENABLE_UNSAFE_SCRIPT_HANDLER: "true" } });
  client = await connectHTTP(server.mcpURL);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged++;
  });
});

after(async () => {
  await client?.close();
  await gateOff?.stop();
  await server?.stop();
});

async function api(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

async function until(what, check, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const lookupNPC = {
  name: "lookup_npc",
  description: "根据名字查找 NPC 信息",
  parameters: { type: "object", properties: { name: { type: "string", description: "NPC 名字" } }, required: ["name"] },
  side_effect_level: "none",
  allowed_slots: ["narrator", "director", "verifier"],
  source: "custom",
  handler_type: "script",
  handler: { script: "return { found: true, info: args.name };" },
};

test("a script tool appears (list_changed), runs in the sandbox and returns its object", async () => {
  const before = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(!before.includes("lookup_npc"));
  const created = await api(server.base, "POST", "/tools/definitions", lookupNPC);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.data.handler_type, "script");
  await until("notifications/tools/list_changed", () => listChanged > 0);
  const tools = (await client.listTools()).tools;
  const tool = tools.find((t) => t.name === "lookup_npc");
  assert.ok(tool, "lookup_npc is listed");
  assert.deepEqual(tool.inputSchema.required, ["name"]);
  const res = await client.callTool({ name: "lookup_npc", arguments: { name: "Ayla" }, _meta: { "toolhost/slot": "narrator" } });
  assert.equal(res.isError, undefined, JSON.stringify(res));
  assert.deepEqual(res.structuredContent, { found: true, info: "Ayla" });
});

test("a slot deny list denies the call; both journals say denied", async () => {
  const sid = client.transport.sessionId;
  const put = await api(server.base, "PUT", `/sessions/${sid}/tool-permissions`, { slot_deny_list: { verifier: ["lookup_npc"] } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const res = await client.callTool({ name: "lookup_npc", arguments: { name: "Bo" }, _meta: { "toolhost/slot": "verifier" } });
  assert.equal(res.isError, true);
  assert.equal(res._meta["toolhost/error"].code, "permission_denied");
  assert.equal(res._meta["toolhost/error"].rule, "slot_deny_list");
  const id = res._meta["toolhost/execution_id"];
  const execs = await api(server.base, "GET", `/tool-executions?session_id=${sid}&status=denied`);
  const rec = execs.body.data.find((r) => r.id === id);
  assert.ok(rec, JSON.stringify(execs.body));
  assert.equal(rec.caller_slot, "verifier");
  assert.equal(rec.face, "mcp");
  assert.equal(rec.provider_type, "preset");
  const legacy = await api(server.base, "GET", `/tools/call-records?floor_id=${rec.floor_id}`);
  assert.equal(legacy.body.data[0].status, "denied");
  const ok = await client.callTool({ name: "lookup_npc", arguments: { name: "Cy" }, _meta: { "toolhost/slot": "director" } });
  assert.deepEqual(ok.structuredContent, { found: true, info: "Cy" });
});

test("with the script gate off: 403 on create, unavailable in the runtime catalog", async () => {
  const sid = client.transport.sessionId;
  // A second server on the same store, without ENABLE_UNSAFE_SCRIPT_HANDLER.
  gateOff = await startServer({ args: ["--data", server.dataDir] });
  const refused = await api(gateOff.base, "POST", "/tools/definitions", { ...lookupNPC, name: "another" });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, "tool_script_handler_disabled");
  const off = await api(gateOff.base, "GET", `/sessions/${sid}/tools/runtime?slot=narrator`);
  const entry = off.body.data.tools.find((t) => t.name === "lookup_npc");
  assert.equal(entry.availability, "unavailable");
  assert.match(entry.availability_reason, /script handlers are disabled/);
  const on = await api(server.base, "GET", `/sessions/${sid}/tools/runtime?slot=narrator`);
  assert.equal(on.body.data.tools.find((t) => t.name === "lookup_npc").availability, "available");
});
