// The execution journal seen through the official TypeScript MCP SDK
// client: N concurrent tools/call give exactly N records on
// GET /tool-executions?session_id=…, each with its status, duration and full
// state-event sequence; idempotency keys in _meta execute once.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startServer } from "./lib/server.mjs";
import { connectHTTP } from "./lib/mcp.mjs";

let server;
let client;

before(async () => {
  server = await startServer();
  client = await connectHTTP(server.mcpURL);
});

after(async () => {
  await client?.close();
  await server?.stop();
});

async function getJSON(path, status = 200) {
  const res = await fetch(server.base + path);
  assert.equal(res.status, status, `GET ${path}`);
  return res.json();
}

const HAPPY = "proposed>parsed>validated>authorized>executing>observed";

test("N concurrent tools/call → exactly N records with full event sequences", async () => {
  const sessionId = client.transport.sessionId;
  assert.ok(sessionId, "the streamable HTTP transport has a session id");
  const n = 30;
  const calls = Array.from({ length: n }, (_, i) => {
    if (i % 3 === 0) return { name: "get_time", arguments: {}, want: "success", events: HAPPY };
    if (i % 3 === 1) return { name: "sleep", arguments: { ms: 40 }, want: "success", events: HAPPY, minMs: 40 };
    return { name: "roll_dice", arguments: { sides: 1 }, want: "error", events: "proposed>parsed>validation_rejected" };
  });
  const results = await Promise.all(calls.map((c) => client.callTool({ name: c.name, arguments: c.arguments })));

  const list = await getJSON(`/tool-executions?session_id=${encodeURIComponent(sessionId)}&limit=100`);
  assert.equal(list.data.length, n);
  assert.equal(list.meta.total, n);
  assert.equal(list.meta.has_more, false);
  assert.equal(list.meta.sort_by, "started_at");
  assert.equal(list.meta.sort_order, "desc");
  const byId = new Map(list.data.map((r) => [r.id, r]));
  for (const [i, res] of results.entries()) {
    const id = res._meta?.["toolhost/execution_id"];
    const rec = byId.get(id);
    assert.ok(rec, `call ${i} (${calls[i].name}) has a record`);
    assert.equal(rec.tool_name, calls[i].name);
    assert.equal(rec.status, calls[i].want, `call ${i} status`);
    assert.equal(rec.lifecycle_state, "finished");
    assert.equal(rec.face, "mcp");
    assert.equal(rec.caller_slot, null);
    assert.equal(rec.session_id, sessionId);
    assert.equal(typeof rec.duration_ms, "number");
    assert.ok(rec.duration_ms >= (calls[i].minMs ?? 0), `call ${i} duration ${rec.duration_ms}`);
    assert.equal(rec.duration_ms, rec.finished_at - rec.started_at >= 0 ? rec.duration_ms : -1);
    const events = await getJSON(`/tool-executions/${id}/events`);
    assert.equal(events.data.map((e) => e.state).join(">"), calls[i].events, `call ${i} events`);
    assert.deepEqual(events.data.map((e) => e.seq), events.data.map((_, k) => k));
  }
});

test("the same idempotency key executes once; other arguments are refused", async () => {
  const key = `e2e-${Date.now()}`;
  const call = (args) =>
    client.callTool({ name: "sleep_effect", arguments: args, _meta: { "toolhost/idempotency-key": key } });
  const results = await Promise.all(Array.from({ length: 10 }, () => call({ ms: 200 })));
  for (const r of results) {
    assert.equal(r.isError ?? false, false);
    assert.deepEqual(r.structuredContent, results[0].structuredContent);
  }
  const ids = results.map((r) => r._meta["toolhost/execution_id"]);
  const recs = await Promise.all(ids.map((id) => getJSON(`/tool-executions/${id}`)));
  const originals = recs.filter((r) => r.data.replay_parent_execution_id === null);
  assert.equal(originals.length, 1, "exactly one call ran");
  for (const r of recs) {
    if (r.data.replay_parent_execution_id !== null) {
      assert.equal(r.data.replay_parent_execution_id, originals[0].data.id);
      assert.equal(r.data.commit_outcome, "replay_blocked");
    }
  }
  const reused = await call({ ms: 201 });
  assert.equal(reused.isError, true);
  const rejected = await getJSON(`/tool-executions/${reused._meta["toolhost/execution_id"]}`);
  assert.equal(rejected.data.error_code, "idempotency_key_reused");
  assert.equal(rejected.data.state, "idempotency_rejected");
});

test("GET /tool-executions without session_id, floor_id or run_id is a 400 validation_error", async () => {
  const body = await getJSON("/tool-executions?tool_name=get_time", 400);
  assert.equal(body.error.code, "validation_error");
});
