// Approvals on the MCP face with the official TypeScript SDK client against
// `toolhost serve --dev`, whose config makes every roll_dice call ask
// (tools.require_approval). A client that declared elicitation is asked
// through elicitation/create (the TypeScript SDK speaks 2025-11-25 at the
// latest, so the input-required rounds of 2026-07-28 are the go-sdk
// client's, in server/mcp's tests): accept runs exactly that call once,
// decline ends approval_declined with nothing run, a changed argument is
// asked about anew. A client without elicitation gets approval_required
// with the approval id, the account approves it over REST, and the retried
// identical call runs once; another argument needs its own approval. The
// journal (GET /tool-executions) agrees with every count.

import assert from "node:assert/strict";
import { writeFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startServer, tempDir } from "./lib/server.mjs";
import { connectHTTP, textOf } from "./lib/mcp.mjs";

let server;
let work;
const clients = [];

before(async () => {
  work = await tempDir("toolhost-approvals-");
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({ tools: { require_approval: { roll_dice: "always" } } }));
  server = await startServer({ args: ["--config", config] });
});

after(async () => {
  for (const c of clients) await c.close();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const errorOf = (res) => res._meta?.["toolhost/error"] ?? {};

async function api(method, path) {
  const res = await fetch(server.base + path, { method });
  return { status: res.status, body: await res.json() };
}

/** The session's roll_dice executions, oldest first, as [status, error_code]. */
async function journal(sid) {
  const j = await api("GET", `/tool-executions?session_id=${encodeURIComponent(sid)}&tool_name=roll_dice&sort_order=asc`);
  assert.equal(j.status, 200, JSON.stringify(j.body));
  return j.body.data.map((r) => [r.status, r.error_code ?? null]);
}

test("elicitation: accept runs the call once, decline runs nothing, a changed argument is asked about anew", async () => {
  const client = new Client({ name: "toolhost-e2e-approve", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  let answer;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpURL)));
  clients.push(client);
  const roll = (sides) => client.callTool({ name: "roll_dice", arguments: { sides } });

  answer = { action: "accept", content: { approve: true } };
  let res = await roll(20);
  assert.equal(res.isError ?? false, false, textOf(res));
  assert.equal(asked.length, 1);
  assert.equal(asked[0].mode, "form");
  assert.match(asked[0].message, /roll_dice/);
  assert.match(asked[0].message, /"sides":20/);
  assert.match(asked[0].message, /apr_[0-9a-f]{24}/);
  assert.deepEqual(asked[0].requestedSchema.required, ["approve"]);
  assert.equal(asked[0].requestedSchema.properties.approve.type, "boolean");

  for (const action of ["decline", "cancel"]) {
    answer = { action };
    res = await roll(20);
    assert.equal(res.isError, true);
    assert.equal(errorOf(res).code, "approval_declined", textOf(res));
  }
  assert.equal(asked.length, 3);

  answer = { action: "accept", content: { approve: true } };
  res = await roll(12);
  assert.equal(res.isError ?? false, false, textOf(res));
  assert.equal(asked.length, 4);
  assert.match(asked[3].message, /"sides":12/);

  assert.deepEqual(await journal(client.transport.sessionId), [
    ["success", null], ["denied", "approval_declined"], ["denied", "approval_declined"], ["success", null],
  ]);
  // The first execution ran under an approval the user gave through elicitation.
  const approvals = await api("GET", `/approvals?session_id=${encodeURIComponent(client.transport.sessionId)}&status=consumed`);
  assert.equal(approvals.status, 200, JSON.stringify(approvals.body));
  assert.deepEqual(approvals.body.data.map((a) => a.decided_via), ["mcp_elicitation", "mcp_elicitation"]);
});

test("without elicitation: approval_required, REST approve, the retried call runs once; another argument needs its own approval", async () => {
  const client = await connectHTTP(server.mcpURL, { name: "toolhost-e2e-no-elicitation" });
  clients.push(client);
  const roll = (sides) => client.callTool({ name: "roll_dice", arguments: { sides } });
  const required = (res) => {
    const e = errorOf(res);
    assert.equal(res.isError, true);
    assert.equal(e.code, "approval_required", textOf(res));
    assert.match(e.approval_id, /^apr_[0-9a-f]{24}$/);
    assert.equal(e.tool, "roll_dice");
    assert.ok(e.expires_at);
    return e;
  };

  const first = required(await roll(20));
  assert.deepEqual(first.arguments, { count: 1, sides: 20 });
  let r = await api("GET", `/approvals/${first.approval_id}`);
  assert.equal(r.body.data.status, "pending");
  r = await api("POST", `/approvals/${first.approval_id}/approve`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.data.status, "approved");

  // Another argument is another invocation: the approval does not run it.
  const other = required(await roll(6));
  assert.notEqual(other.approval_id, first.approval_id);

  const res = await roll(20);
  assert.equal(res.isError ?? false, false, textOf(res));
  r = await api("GET", `/approvals/${first.approval_id}`);
  assert.equal(r.body.data.status, "consumed");
  assert.equal(r.body.data.consumed_by, res._meta["toolhost/execution_id"]);

  // Consumed: the same call again needs a new approval.
  const again = required(await roll(20));
  assert.notEqual(again.approval_id, first.approval_id);

  assert.deepEqual(await journal(client.transport.sessionId), [
    ["denied", "approval_required"], ["denied", "approval_required"], ["success", null], ["denied", "approval_required"],
  ]);
});
