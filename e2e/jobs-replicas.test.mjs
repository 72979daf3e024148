// Background jobs across two `toolhost serve --stateless` replicas on one
// PostgreSQL schema (and one Redis): 200 deferred calls enqueued through
// replica A, A killed with SIGKILL as the 50th job starts, and every job
// ends exactly once, B finishing what A left.
//
// The jobs call a remote MCP server started here on the official
// TypeScript SDK (@modelcontextprotocol/sdk, stateless streamable HTTP):
// its tool `work` counts every call it receives, by job (argument n) and by
// the replica that sent it. Which replica sent a call is read from the
// kernel, not from anything toolhost says: the process owning the other
// end of the call's TCP connection (/proc/net/tcp and /proc/PID/fd). The
// account's override makes the tool deferred by default
// (default_delivery_mode async_job) with side effect `none`, so a job that
// A was running when it died is replay safe: B runs it again once river
// rescues it (jobs.rescue_after), and its record ends once, with the later
// attempt's attempt_no and a rerun attempt event.
//
// The tool holds every call until all 200 receipts are back (a promise,
// not a timer), so A is still answering the enqueuer when the jobs start,
// and A is killed from inside the tool's handler at the 50th call, a call
// A sent: A has a job in flight at the kill.

import assert from "node:assert/strict";
import { once } from "node:events";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createServer } from "node:http";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { tempDir } from "./lib/server.mjs";
import { createKey, sharedStores, startReplica } from "./lib/replicas.mjs";

const JOBS = 200;
const KILL_AT = 50;
const WORK_MS = 150; // how long one call of the tool works
const ENQUEUERS = 16;

const missing = ["TOOLHOST_TEST_POSTGRES", "TOOLHOST_TEST_REDIS"].filter((v) => !process.env[v]);
const skip = missing.length ? `needs ${missing.join(", ")} (.ci/run provides them)` : "";

/**
 * The inode of the client's end of a loopback TCP connection (IPv4), from
 * its local port and the server's port, or "". Both ports must match and
 * the inode be set: a closed connection that used the same ephemeral
 * port lingers in TIME_WAIT with inode 0.
 */
function socketInode(clientPort, serverPort) {
  const hex = (p) => `:${p.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hex(clientPort)) && f[2]?.endsWith(hex(serverPort)) && f[9] && f[9] !== "0") return f[9];
  }
  return "";
}

/** Which of the named processes holds the TCP connection whose far end is sock ("?" when none does). */
function ownerOf(sock, pids) {
  const inode = socketInode(sock.remotePort, sock.localPort);
  if (!inode) return "?";
  for (const [name, pid] of Object.entries(pids)) {
    let fds = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // the process is gone
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return name;
      } catch {
        // closed meanwhile
      }
    }
  }
  return "?";
}

/**
 * The counting MCP server: tool `work` {n} waits for gate, works WORK_MS
 * and answers; calls[] holds each call received ({n, by, done}).
 * onCall(call) runs as each call arrives.
 */
async function startCounter(pids, gate, onCall) {
  const calls = [];
  const owners = new WeakMap();
  const http = createServer(async (req, res) => {
    const by = owners.get(req.socket) ?? "?";
    const mcp = new Server({ name: "counter", version: "1.0.0" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{
        name: "work",
        description: "Works a moment on job n and says so.",
        inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        annotations: { readOnlyHint: true },
      }],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, async (r) => {
      const call = { n: r.params.arguments?.n, by, done: false };
      calls.push(call);
      onCall(call, calls);
      await gate;
      await new Promise((resolve) => setTimeout(resolve, WORK_MS));
      call.done = true;
      return { content: [{ type: "text", text: `worked on job ${call.n}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close().catch(() => {});
      mcp.close().catch(() => {});
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  http.on("connection", (sock) => owners.set(sock, ownerOf(sock, pids)));
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  return { url: `http://127.0.0.1:${http.address().port}/mcp`, calls, close: () => new Promise((r) => http.close(r)) };
}

describe("background jobs on two replicas, one killed mid-queue", { skip: skip || false }, () => {
  let work, stores, key, counter, replicas = [];
  const env = { TOOLHOST_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") };

  before(async () => {
    work = await tempDir("toolhost-jobs-replicas-");
    stores = sharedStores("jobsreplicas");
    const config = join(work, "config.json");
    await writeFile(config, JSON.stringify({
      keys: { redis_prefix: stores.redisPrefix },
      fetch: { allow_private: ["127.0.0.1"] },
      // A dead process's job is rescued half a minute after it started,
      // not 11 minutes (river's leader looks every 30 s). The first jobs
      // wait in the tool until all receipts are back: an attempt must
      // outlast the enqueue on a loaded machine, or it times out and runs
      // again.
      jobs: { workers: 4, timeout: "30s", rescue_after: "31s", max_per_account: 1000 },
    }));
    key = await createKey(stores, work, ["--account", "acme", "--name", "jobs", "--scopes", "mcp,tools"]);
    replicas.push(await startReplica(stores, config, [], { env }));
    replicas.push(await startReplica(stores, config, [], { env }));
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await counter?.close();
    await stores?.drop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test(`${JOBS} jobs through A, A killed at job ${KILL_AT}: each ends once, B finishes them`, async (t) => {
    const [a, b] = replicas;
    const auth = { Authorization: `Bearer ${key}` };
    let open;
    const gate = new Promise((resolve) => (open = resolve));
    let killed = null; // { index, inFlight: job numbers A had at the counter }
    counter = await startCounter({ A: a.proc.pid, B: b.proc.pid }, gate, (call, calls) => {
      if (killed || call.by !== "A" || calls.length < KILL_AT) return;
      a.proc.kill("SIGKILL");
      killed = { index: calls.length - 1, inFlight: calls.filter((c) => c.by === "A" && !c.done).map((c) => c.n) };
    });

    const reg = await fetch(`${a.base}/mcp-servers`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({
        name: "counter", url: counter.url,
        tools: { work: { side_effect_level: "none", async_capability: "deferred_ok", default_delivery_mode: "async_job", require_approval: "never" } },
      }),
    });
    assert.equal(reg.status, 201, await reg.text());

    // Enqueue through A: every call answers at once with a receipt.
    const floor = `jobs-replicas-${process.pid}`;
    const receipts = new Map(); // n → execution id
    let next = 0;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: ENQUEUERS }, async (_, i) => {
      const client = new Client({ name: `enqueuer-${i}`, version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${a.base}/mcp`), { requestInit: { headers: auth } }));
      for (let n = next++; n < JOBS; n = next++) {
        const res = await client.callTool({ name: "counter__work", arguments: { n }, _meta: { "toolhost/floor-id": floor } });
        const receipt = res._meta?.["toolhost/receipt"];
        assert.equal(res.isError ?? false, false, JSON.stringify(res));
        assert.equal(receipt?.status, "queued", JSON.stringify(res));
        receipts.set(n, receipt.execution_id);
      }
      await client.close();
    }));
    assert.equal(receipts.size, JOBS);
    const enqueueMs = Date.now() - t0;
    open();

    // A dies inside the counter's handler; once it has, what the journal
    // does not show finished can only be finished by B.
    // (Should A never send a call from the 50th on, the jobs all end
    // without the kill, and the test says so instead of waiting.)
    await Promise.race([a.exited, (async () => {
      while (!killed && !(counter.calls.length >= JOBS && counter.calls.every((c) => c.done))) await new Promise((r) => setTimeout(r, 100));
    })()]);
    assert.ok(killed, "A was not killed: it sent no call from the 50th on");
    await a.exited;
    const records = async () => {
      const out = [];
      for (let offset = 0; ; offset += 500) {
        const res = await fetch(`${b.base}/tool-executions?floor_id=${floor}&limit=500&offset=${offset}&sort_by=created_at&sort_order=asc`, { headers: auth });
        assert.equal(res.status, 200);
        const { data, meta } = await res.json();
        out.push(...data);
        if (!meta.has_more) return out;
      }
    };
    const killedAt = Date.now();
    const leftByA = new Set((await records()).filter((r) => r.lifecycle_state !== "finished").map((r) => r.args.n));

    // Poll until every record has ended (river's rescue of A's jobs takes
    // jobs.rescue_after plus up to 30 s).
    let recs;
    const deadline = Date.now() + 120000;
    for (;;) {
      recs = await records();
      if (recs.length === JOBS && recs.every((r) => r.lifecycle_state === "finished")) break;
      assert.ok(Date.now() < deadline, `records not all finished: ${JSON.stringify(recs.filter((r) => r.lifecycle_state !== "finished").map((r) => [r.args.n, r.status, r.attempt_no]))}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const finishedAt = Date.now();

    // Executions per job, in the order the counter received them.
    const ran = new Map();
    for (const c of counter.calls) {
      if (!ran.has(c.n)) ran.set(c.n, []);
      ran.get(c.n).push(c.by);
    }
    const byN = new Map(recs.map((r) => [r.args.n, r]));
    assert.equal(byN.size, JOBS, "one record per job");
    let reran = 0, rescued = 0;
    for (let n = 0; n < JOBS; n++) {
      const r = byN.get(n);
      const by = ran.get(n) ?? [];
      const what = `job ${n}: record ${JSON.stringify([r?.id, r?.status, r?.state, r?.attempt_no])}, executions by ${JSON.stringify(by)}`;
      assert.equal(r.id, receipts.get(n), what);
      assert.equal(r.status, "success", what);
      assert.equal(r.delivery_mode, "async_job", what);
      assert.equal(r.side_effect_level, "none", what);
      assert.ok(by.length === 1 || by.length === 2, `${what}: none lost, at most one rerun`);
      if (leftByA.has(n)) assert.equal(by.at(-1), "B", `${what}: left unfinished by A, so finished by B`);
      if (r.attempt_no > 1) rescued++;
      if (by.length === 2) {
        // Only a job A was running at the kill runs twice: first on A,
        // then on B after the rescue, its record on a later attempt.
        reran++;
        assert.notEqual(by[0], "B", what);
        assert.equal(by[1], "B", what);
        assert.ok(r.attempt_no >= 2, what);
      }
      const evs = await fetch(`${b.base}/tool-executions/${r.id}/events`, { headers: auth }).then((res) => res.json());
      const ends = evs.data.filter((e) => !e.kind && ["observed", "failed_before_commit", "outcome_unknown", "cancelled_before_commit"].includes(e.state));
      assert.equal(ends.length, 1, `${what}: events ${JSON.stringify(evs.data.map((e) => [e.state, e.kind]))}`);
      if (by.length === 2) {
        assert.ok(evs.data.some((e) => e.kind === "attempt" && e.detail?.rerun === true), `${what}: no rerun attempt event`);
      }
    }
    // The call A had in flight when it died was run again by B.
    for (const n of killed.inFlight) assert.deepEqual(ran.get(n), ["A", "B"], `job ${n} was in flight on A at the kill`);
    assert.ok(killed.inFlight.length > 0);
    const count = (who) => counter.calls.filter((c) => c.by === who).length;
    t.diagnostic(`${JOBS} receipts in ${enqueueMs} ms; A killed at call ${killed.index + 1} with ${killed.inFlight.length} in flight; ` +
      `${leftByA.size} jobs unfinished when A died; executions: A ${count("A")}, B ${count("B")}, unknown ${count("?")}; ` +
      `${rescued} records on a later attempt, ${reran} jobs run twice; all ended ${finishedAt - killedAt} ms after A died`);
  });
});
