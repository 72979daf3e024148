// Background jobs with the official TypeScript SDK client against
// `toolhost serve` (SQLite, one job worker): a run_code call asked for as
// a background job (_meta "toolhost/delivery": "async_job") answers at once
// with a receipt whose structured content the client validates against the
// tool's advertised output schema; the execution's resource says queued,
// then running; the subscribed client is told each change
// (notifications/resources/updated) and reads the result once it has
// finished. A second job waits queued behind the first (one worker) and is
// cancelled there (DELETE /tool-executions/{id}/job: it never runs); a
// third is cancelled while it runs and ends cancelled.

import assert from "node:assert/strict";
import { writeFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startServer, tempDir } from "./lib/server.mjs";

let server;
let work;
let client;
/** URI → resolvers waiting for its next notifications/resources/updated (all told at once). */
const waiting = new Map();
const updates = [];

before(async () => {
  work = await tempDir("toolhost-jobs-");
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({ jobs: { workers: 1 } }));
  server = await startServer({ args: ["--config", config] });
  client = new Client({ name: "toolhost-e2e-jobs", version: "1.0.0" });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    const w = waiting.get(n.params.uri) ?? [];
    waiting.set(n.params.uri, []);
    for (const resolve of w) resolve();
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpURL)));
});

after(async () => {
  await client?.close();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** Resolves at the next update of uri (subscribe before the change). */
function nextUpdate(uri) {
  return new Promise((resolve) => {
    if (!waiting.has(uri)) waiting.set(uri, []);
    waiting.get(uri).push(resolve);
  });
}

/**
 * The execution at uri once pred holds of it: read, and read again at each
 * notification (the wait is registered before each read, so a change
 * between the read and the wait is not missed).
 */
async function readWhen(uri, pred) {
  for (;;) {
    const next = nextUpdate(uri);
    const rec = await readExecution(uri);
    if (pred(rec)) return rec;
    await next;
  }
}

async function readExecution(uri) {
  const res = await client.readResource({ uri });
  return JSON.parse(res.contents[0].text);
}

/** Starts a run_code program as a background job; returns [receipt, ms]. */
async function deferRun(code) {
  const t0 = performance.now();
  const res = await client.callTool({
    name: "run_code",
    arguments: { code, timeout_ms: 30000 },
    _meta: { "toolhost/delivery": "async_job" },
  });
  const ms = performance.now() - t0;
  assert.equal(res.isError ?? false, false, JSON.stringify(res));
  const receipt = res._meta?.["toolhost/receipt"];
  assert.ok(receipt, JSON.stringify(res._meta));
  assert.deepEqual(res.structuredContent.execution_id, receipt.execution_id);
  assert.equal(res.structuredContent.delivery_mode, "async_job");
  assert.equal(res.structuredContent.result_visibility, "deferred_receipt");
  assert.equal(receipt.status, "queued");
  assert.equal(receipt.result_uri, `toolhost://executions/${receipt.execution_id}`);
  assert.match(String(receipt.runtime_job_id), /\S/);
  return [receipt, ms];
}

async function cancel(id) {
  const res = await fetch(`${server.base}/tool-executions/${id}/job`, { method: "DELETE" });
  return { status: res.status, body: await res.json() };
}

test("a 20 s run_code job: receipt at once, running, told when done, result read; one queued and one running cancelled", { timeout: 180000 }, async (t) => {
  await client.listTools(); // the output schemas the SDK validates with

  const [first, ms] = await deferRun("import time\ntime.sleep(20)\nprint('slept 20 s')");
  t.diagnostic(`receipt after ${ms.toFixed(1)} ms`);
  const uri = first.result_uri;
  await client.subscribeResource({ uri });
  let rec = await readWhen(uri, (r) => r.status !== "queued");
  assert.equal(rec.status, "running", JSON.stringify(rec));
  assert.equal(rec.delivery_mode, "async_job");
  assert.equal(rec.runtime_job_id, first.runtime_job_id);
  assert.equal(rec.result_visibility, "deferred_receipt");

  // One worker: the second job waits queued behind the first, and is
  // cancelled there. It never runs.
  const [second] = await deferRun("print('never')");
  assert.equal((await readExecution(second.result_uri)).status, "queued");
  const c1 = await cancel(second.execution_id);
  assert.equal(c1.status, 200, JSON.stringify(c1.body));
  assert.equal(c1.body.data.status, "error");
  assert.equal((await cancel(second.execution_id)).status, 409);
  assert.equal((await cancel("0190b6a2-0000-7000-8000-000000000000")).status, 404);

  rec = await readWhen(uri, (r) => r.lifecycle_state === "finished");
  assert.equal(rec.status, "success", JSON.stringify(rec));
  assert.ok(updates.includes(uri), "no notifications/resources/updated for the job");
  assert.match(JSON.stringify(rec.result), /slept 20 s/);
  const cancelled = await readExecution(second.result_uri);
  assert.equal(cancelled.status, "error");
  assert.doesNotMatch(JSON.stringify(cancelled.result ?? {}), /never/);

  // A running job cancelled: it ends, and the subscriber is told.
  const [third] = await deferRun("import time\ntime.sleep(25)\nprint('not this')");
  await client.subscribeResource({ uri: third.result_uri });
  await readWhen(third.result_uri, (r) => r.status === "running");
  const c3 = await cancel(third.execution_id);
  assert.ok([200, 202].includes(c3.status), JSON.stringify(c3.body));
  rec = await readWhen(third.result_uri, (r) => r.lifecycle_state === "finished");
  assert.notEqual(rec.status, "success", JSON.stringify(rec));
  assert.notEqual(rec.status, "running", JSON.stringify(rec));
  assert.doesNotMatch(JSON.stringify(rec.result ?? {}), /not this/);
});

test("a delivery mode toolhost does not know is refused, and an inline-only tool refuses async_job", async () => {
  let res = await client.callTool({ name: "run_code", arguments: { code: "print(1)" }, _meta: { "toolhost/delivery": "later" } });
  assert.equal(res.isError, true);
  assert.equal(res._meta["toolhost/error"].code, "invalid_arguments");
  res = await client.callTool({ name: "get_time", arguments: {}, _meta: { "toolhost/delivery": "async_job" } });
  assert.equal(res.isError, true);
  assert.equal(res._meta["toolhost/error"].code, "delivery_unsupported");
});
