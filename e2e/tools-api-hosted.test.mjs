// The tools API's custom tools in a hosted /v1 loop, through the official
// openai Node client: `toolhost serve --dev` with script handlers enabled
// routes the model to the scripted fake upstream (server/v1/fakeupstream); a
// script definition created over REST (a name with capitals and a dash,
// declared on the wire exactly as defined) is called by the model, runs
// in the sandbox, and is journaled provider_type preset (a definition), face hosted; the
// session's slot deny list denies it, and both journals say denied.
//
// The fake upstream is started by e2e/lib/fakeupstream.mjs, from
// $FAKEUPSTREAM_BIN (bin/fakeupstream under scripts/e2e.sh) or built there.

import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const script = {
  conversations: [{
    match: "who is",
    rounds: [
      { tool_calls: [{ id: "call_npc", name: "Lookup-NPC", arguments: '{"name":"Ayla"}' }] },
      { content: "Ayla is the smith." },
    ],
  }],
};

const lookupNPC = {
  name: "Lookup-NPC",
  description: "根据名字查找 NPC 信息",
  parameters: { type: "object", properties: { name: { type: "string", description: "NPC 名字" } }, required: ["name"] },
  allowed_slots: ["narrator", "verifier"],
  handler_type: "script",
  handler: { script: "return { found: true, info: args.name };" },
};

let work;
let fake;
let server;
let client;

async function api(method, path, body) {
  const res = await fetch(server.base + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

before(async () => {
  work = await tempDir("toolhost-tools-hosted-");
  fake = await startFakeUpstream(script, { dir: work });
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    hosted: { routes: [{ name: "fake", protocol: "openai", base_url: fake.url, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }] },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake", ENABLE_UNSAFE_SCRIPT_HANDLER: "true" } });
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
  const created = await api("POST", "/tools/definitions", lookupNPC);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sess = await api("POST", "/sessions", { id: "sess_hosted" });
  assert.equal(sess.status, 201, JSON.stringify(sess.body));
  const perms = await api("PUT", "/sessions/sess_hosted/tool-permissions", { slot_deny_list: { verifier: ["Lookup-NPC"] } });
  assert.equal(perms.status, 200, JSON.stringify(perms.body));
});

after(async () => {
  await server?.stop();
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const request = () => ({
  model: "fake-1",
  messages: [{ role: "user", content: "who is Ayla?" }],
  metadata: { session_id: "sess_hosted" },
  tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["Lookup-NPC"], require_approval: "never" }],
});

async function executions(floor) {
  const res = await api("GET", `/tool-executions?floor_id=${encodeURIComponent(floor)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

test("the model calls the script tool; it runs and is journaled as a custom tool of the hosted face", async () => {
  const data = await client.chat.completions.create(request(), { headers: { "X-Toolhost-Slot": "narrator" } });
  assert.equal(data.choices[0].message.content, "Ayla is the smith.");
  assert.equal(data.choices[0].message.tool_calls, undefined, "a hosted call leaked into tool_calls");
  const ext = data.toolhost;
  assert.deepEqual(ext.tool_calls.map((c) => [c.id, c.name, c.status]), [["call_npc", "Lookup-NPC", "done"]]);
  const [rec] = await executions(ext.request_id);
  assert.equal(rec.tool_name, "Lookup-NPC");
  assert.equal(rec.provider_type, "preset");
  assert.equal(rec.face, "hosted");
  assert.equal(rec.caller_slot, "narrator");
  assert.equal(rec.session_id, "sess_hosted");
  assert.equal(rec.status, "success");
  assert.deepEqual(rec.args, { name: "Ayla" });
  assert.deepEqual(rec.result, { data: { found: true, info: "Ayla" } });
});

test("the session's slot deny list denies it: the model gets a failed result, both journals say denied", async () => {
  const data = await client.chat.completions.create(request(), { headers: { "X-Toolhost-Slot": "verifier" } });
  const ext = data.toolhost;
  assert.deepEqual(ext.tool_calls.map((c) => [c.id, c.name, c.status]), [["call_npc", "Lookup-NPC", "failed"]]);
  const [rec] = await executions(ext.request_id);
  assert.equal(rec.status, "denied");
  assert.equal(rec.caller_slot, "verifier");
  assert.equal(rec.provider_type, "preset");
  assert.equal(rec.face, "hosted");
  assert.match(rec.error_message, /deny list of slot verifier/);
  const legacy = await api("GET", `/tools/call-records?floor_id=${encodeURIComponent(ext.request_id)}`);
  assert.equal(legacy.status, 200);
  assert.deepEqual(legacy.body.data.map((r) => [r.tool_name, r.caller_slot, r.status]), [["Lookup-NPC", "verifier", "denied"]]);
});

test("a name that only looks like the definition's is refused before the model is called", async () => {
  for (const name of ["lookup-npc", "Lookup\u2010NPC", "Lookup-NPC\u200b", "Lookup_NPC"]) {
    await assert.rejects(
      client.chat.completions.create({ ...request(), tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: [name] }] }),
      (err) => err.status === 400 && err.error?.details?.reason === "unknown_hosted_tool",
      name,
    );
  }
});
