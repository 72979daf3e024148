// Two `toolhost serve` replicas on one PostgreSQL and one Redis behind
// Debian's HAProxy (round robin, a generated configuration), driven by real
// clients: the openai SDK retrying a hosted request with one
// Idempotency-Key, /v1/tool-rounds read from either replica, a key's calls
// per minute counted across both, MCP clients on protocol 2026-07-28
// (@modelcontextprotocol/client) and 2025-11-25 (@modelcontextprotocol/sdk)
// alternating between replicas, and the web tools' caches shared through
// Redis.
//
// The replicas run in the replica mode (--stateless); the load balancer has
// no affinity of any kind.

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { tempDir } from "./lib/server.mjs";
import { createKey, replicaPrerequisites, sharedStores, startHAProxy, startReplica } from "./lib/replicas.mjs";

const skip = replicaPrerequisites();

const script = {
  conversations: [{
    match: "pick a drink",
    rounds: [
      { content: "Let me pick.", tool_calls: [{ id: "call_pick", name: "random_choice", arguments: '{"options":["tea"]}' }] },
      { content: "Tea it is." },
    ],
  }],
};

describe("two replicas behind HAProxy", { skip: skip || false }, () => {
  let work, stores, fake, engine, engineHits = 0, pageHits = 0, replicas = [], lb, key, limitedKey;

  before(async () => {
    work = await tempDir("toolhost-replicas-");
    stores = sharedStores("replicas");
    fake = await startFakeUpstream(script, { dir: work });
    // A SearXNG-format engine on loopback, counting the searches it answers.
    engine = createServer((req, res) => {
      if (req.url.startsWith("/page")) {
        pageHits++;
        res.writeHead(200, { "Content-Type": "text/plain" }).end("A page about gopher burrows.");
        return;
      }
      if (!req.url.startsWith("/search")) {
        res.writeHead(404).end(); // robots.txt: none
        return;
      }
      engineHits++;
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ results: [1, 2, 3].map((i) => ({ url: `https://example.org/${i}`, title: `Burrow ${i}`, content: `Gophers dig burrow ${i}.` })) }));
    });
    engine.listen(0, "127.0.0.1");
    await once(engine, "listening");
    const config = join(work, "config.json");
    await writeFile(config, JSON.stringify({
      keys: { redis_prefix: stores.redisPrefix },
      fetch: { allow_private: ["127.0.0.1"] },
      search: { providers: [{ kind: "searxng", name: "local", base_url: `http://127.0.0.1:${engine.address().port}` }] },
      hosted: {
        routes: [{ name: "fake", protocol: "openai", base_url: fake.url, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }],
      },
    }));
    process.env.FAKE_UPSTREAM_KEY = "sk-fake";
    // Keys first, so no replica prints a first admin key.
    key = await createKey(stores, work, ["--account", "acme", "--name", "e2e", "--scopes", "mcp,hosted,tools"]);
    limitedKey = await createKey(stores, work, ["--account", "acme", "--name", "sixty", "--scopes", "mcp", "--calls-per-minute", "60"]);
    replicas.push(await startReplica(stores, config));
    replicas.push(await startReplica(stores, config));
    lb = await startHAProxy(work, replicas);
  });

  after(async () => {
    await lb?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    await fake?.stop();
    engine?.close();
    await stores?.drop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const auth = (k = key) => ({ Authorization: `Bearer ${k}` });

  let requestID;

  test("the openai SDK's retry of a lost answer lands on the other replica and gets it replayed", async () => {
    const seen = [];
    let dropped = false;
    // The network loses the first answer after the replica sent it whole:
    // the SDK sees a connection error and retries with the same key.
    const lossyFetch = async (url, init) => {
      const res = await fetch(url, init);
      seen.push([res.status, res.headers.get("x-toolhost-replica"), res.headers.get("idempotent-replayed")]);
      if (!dropped) {
        dropped = true;
        await res.text();
        throw new TypeError("fetch failed: connection reset after the answer was sent");
      }
      return res;
    };
    const client = new OpenAI({ baseURL: `${lb.base}/v1`, apiKey: key, maxRetries: 2, fetch: lossyFetch });
    const before = (await fake.requests()).length;
    const { data, response } = await client.chat.completions.create({
      model: "fake-1",
      messages: [{ role: "user", content: "pick a drink" }],
      tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["random_choice"], require_approval: "never" }],
    }, { headers: { "Idempotency-Key": `order-${process.pid}` } }).withResponse();
    assert.equal(data.choices[0].message.content, "Tea it is.");
    assert.equal(seen.length, 2, `attempts: ${JSON.stringify(seen)}`);
    assert.notEqual(seen[0][1], seen[1][1], "the retry reached the same replica");
    assert.deepEqual(seen[1], [200, seen[1][1], "true"]);
    assert.equal(response.headers.get("idempotent-replayed"), "true");
    // The model was asked once per round of one run, not of two.
    const after = (await fake.requests()).length;
    assert.equal(after - before, 2);
    requestID = data.toolhost.request_id;
    assert.match(requestID, /^req_/);
  });

  test("/v1/tool-rounds answers the same from either replica", async () => {
    assert.ok(requestID, "needs the previous test's request");
    const answers = [];
    for (const r of replicas) {
      const res = await fetch(`${r.base}/v1/tool-rounds?request_id=${encodeURIComponent(requestID)}`, { headers: auth() });
      assert.equal(res.status, 200);
      answers.push((await res.json()).data);
    }
    assert.equal(answers[0].length, 2);
    assert.deepEqual(answers[0].map((r) => [r.round, r.request_id, r.tool_calls.map((c) => c.name)]), [[0, requestID, ["random_choice"]], [1, requestID, []]]);
    assert.deepEqual(answers[1], answers[0]);
  });

  test("a key's calls per minute are exact across both replicas: 200 at once, limit 60, 60 run", async () => {
    const replicasSeen = new Set();
    const client = new ModernClient({ name: "rpm", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await client.connect(new ModernTransport(new URL(`${lb.base}/mcp`), {
      requestInit: { headers: auth(limitedKey) },
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        replicasSeen.add(res.headers.get("x-toolhost-replica"));
        return res;
      },
    }));
    try {
      const results = await Promise.all(Array.from({ length: 200 }, () => client.callTool({ name: "roll_dice", arguments: { sides: 6 } })));
      const codes = {};
      for (const r of results) {
        const code = r.isError ? r._meta?.["toolhost/error"]?.code : "ok";
        codes[code] = (codes[code] ?? 0) + 1;
      }
      assert.deepEqual(codes, { ok: 60, rate_limited: 140 });
      assert.equal(replicasSeen.size, 2, "the calls did not reach both replicas");
    } finally {
      await client.close();
    }
  });

  test("MCP clients on 2026-07-28 and 2025-11-25 alternate between replicas for 200 calls with no session error", async () => {
    const served = { modern: {}, legacy: {} };
    const counting = (which) => async (url, init) => {
      const res = await fetch(url, init);
      const body = typeof init?.body === "string" ? init.body : "";
      if (body.includes('"tools/call"')) {
        const r = res.headers.get("x-toolhost-replica");
        served[which][r] = (served[which][r] ?? 0) + 1;
      }
      return res;
    };
    const modern = new ModernClient({ name: "modern", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
    await modern.connect(new ModernTransport(new URL(`${lb.base}/mcp`), { requestInit: { headers: auth() }, fetch: counting("modern") }));
    const legacyTransport = new LegacyTransport(new URL(`${lb.base}/mcp`), { requestInit: { headers: auth() }, fetch: counting("legacy") });
    const legacy = new LegacyClient({ name: "legacy", version: "1.0.0" });
    await legacy.connect(legacyTransport);
    try {
      assert.equal(modern.getNegotiatedProtocolVersion(), "2026-07-28");
      assert.equal(legacyTransport.protocolVersion, "2025-11-25");
      // One client after the other, the first swapping each time, so that
      // round robin gives each client both replicas in turn.
      for (let i = 0; i < 100; i++) {
        const pair = [["modern", modern], ["legacy", legacy]];
        for (const [name, c] of i % 2 ? pair.reverse() : pair) {
          const res = await c.callTool({ name: "random_choice", arguments: { options: [`${name}-${i}`] } });
          assert.ok(!res.isError, `${name} call ${i}: ${JSON.stringify(res)}`);
          assert.equal(res.structuredContent.choice ?? res.structuredContent.choices?.[0], `${name}-${i}`);
        }
      }
      for (const which of ["modern", "legacy"]) {
        const counts = Object.values(served[which]);
        assert.equal(counts.length, 2, `${which} calls reached ${JSON.stringify(served[which])}`);
        assert.equal(counts[0] + counts[1], 100);
      }
    } finally {
      await modern.close();
      await legacy.close();
    }
  });

  test("a web_search answered and a page fetched on one replica are cache hits on the other", async () => {
    const searches = [];
    const pages = [];
    const pageURL = `http://127.0.0.1:${engine.address().port}/page-${process.pid}`;
    for (const r of replicas) {
      const c = new LegacyClient({ name: "search", version: "1.0.0" });
      await c.connect(new LegacyTransport(r.mcpURL, { requestInit: { headers: auth() } }));
      try {
        const res = await c.callTool({ name: "web_search", arguments: { query: `gopher burrows ${process.pid}` } });
        assert.ok(!res.isError, JSON.stringify(res));
        searches.push(res.structuredContent);
        const page = await c.callTool({ name: "fetch_page", arguments: { url: pageURL } });
        assert.ok(!page.isError, JSON.stringify(page));
        pages.push(page.structuredContent);
      } finally {
        await c.close();
      }
    }
    assert.deepEqual(searches.map((o) => o.cached), [false, true]);
    assert.deepEqual(searches[1].results, searches[0].results);
    assert.equal(engineHits, 1);
    assert.deepEqual(pages.map((o) => o.cached ?? false), [false, true]);
    assert.equal(pages[1].content, pages[0].content);
    assert.equal(pageHits, 1);
  });
});
