// One hosted request's trace, end to end through real components on
// loopback: an OpenTelemetry Collector built from its Go modules
// (e2e/otelcol: the OTLP receiver and the file exporter; bin/otelcol from
// `make otelcol`) receives toolhost's spans over OTLP/HTTP. The openai
// client sends a traceparent; the scripted model (server/v1/fakeupstream)
// asks for get_time, for echo on the repository's test MCP server
// (bin/mcp-testserver), for fetch_page and web_search on a site of the
// test's own (a page and a SearXNG-format engine on loopback), then
// answers. The collector's file holds the span tree — server span →
// rounds → chat spans and execute_tool spans → the client spans of the
// remote MCP call, the page's GET and the search request — all in the
// caller's trace, which is
// also the journal records' trace_id, the trace in the request's log
// lines, the one the fake upstream saw in traceparent and the one the
// test MCP server was sent (HTTP header and _meta).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createServer } from "node:http";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { freePort, startServer, tempDir, toolhostBin } from "./lib/server.mjs";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

// The model's script; fetch_page reads pageURL, a page of the test's site.
const script = (pageURL) => ({
  conversations: [{
    match: "[trace]",
    rounds: [
      {
        content: "Checking.",
        tool_calls: [
          { id: "call_time", name: "get_time", arguments: '{"timezone":"UTC"}' },
          { id: "call_echo", name: "demo__echo", arguments: '{"message":"hi"}' },
          { id: "call_fetch", name: "fetch_page", arguments: JSON.stringify({ url: pageURL }) },
          { id: "call_search", name: "web_search", arguments: '{"query":"toolhost telemetry"}' },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
      },
      { content: "Done.", usage: { prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 } },
    ],
  }],
});

let work, fake, fakeURL, collector, testserver, testserverURL, server, tracesFile, site, siteURL;
const siteTraceparents = [];
const PAGE = "<html><head><title>Telemetry</title></head><body><article><p>One trace id travels through the model service, the runtime and external APIs.</p></article></body></html>";

// A page and a SearXNG-format search engine on loopback; each request's
// traceparent is kept (web pages get none unless configured).
async function startSite() {
  site = createServer((req, res) => {
    siteTraceparents.push(req.headers.traceparent ?? "");
    if (req.url.startsWith("/search")) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ query: "q", results: [{ url: `${siteURL}/page.html`, title: "Telemetry", content: "One trace id." }] }));
    } else if (req.url === "/page.html") {
      res.writeHead(200, { "Content-Type": "text/html" }).end(PAGE);
    } else {
      res.writeHead(404).end();
    }
  });
  site.listen(0, "127.0.0.1");
  await once(site, "listening");
  siteURL = `http://127.0.0.1:${site.address().port}`;
}

function spawnLine(bin, args, pattern) {
  const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (c) => (err = (err + c).slice(-8192)));
  p.stderrText = () => err;
  return new Promise((resolveLine, reject) => {
    const lines = createInterface({ input: p.stdout });
    lines.on("line", (l) => { if (pattern.test(l)) resolveLine({ p, line: l }); });
    p.on("exit", (code) => reject(new Error(`${bin} exited ${code}: ${err}`)));
  });
}

// waitFor polls another process's state (bounded): the collector writes
// its file on its own schedule.
async function waitFor(what, fn, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last.ok) return last.value;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last?.value ?? last)}`);
}

async function startCollector() {
  const port = await freePort();
  tracesFile = join(work, "traces.jsonl");
  const config = join(work, "otelcol.yaml");
  await writeFile(config, [
    "receivers:",
    "  otlp:",
    "    protocols:",
    "      http:",
    `        endpoint: 127.0.0.1:${port}`,
    "exporters:",
    "  file:",
    `    path: ${tracesFile}`,
    "    flush_interval: 100ms",
    "service:",
    "  telemetry:",
    "    metrics:",
    "      level: none",
    "  pipelines:",
    "    traces:",
    "      receivers: [otlp]",
    "      exporters: [file]",
    "",
  ].join("\n"));
  const bin = process.env.OTELCOL_BIN || join(dirname(toolhostBin()), "otelcol");
  collector = spawn(bin, ["--config", `file:${config}`], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  collector.stderr.on("data", (c) => (log = (log + c).slice(-16384)));
  await waitFor("the collector is ready", async () => {
    if (collector.exitCode !== null) assert.fail(`otelcol exited ${collector.exitCode}: ${log}`);
    return { ok: /Everything is ready/.test(log) };
  });
  return `http://127.0.0.1:${port}`;
}

before(async () => {
  work = await tempDir("toolhost-traces-");
  const endpoint = await startCollector();
  await startSite();
  fake = await startFakeUpstream(script(`${siteURL}/page.html`), { dir: work });
  fakeURL = fake.url;
  const ts = await spawnLine(join(dirname(toolhostBin()), "mcp-testserver"), ["-addr", "127.0.0.1:0"], /listening on/);
  testserver = ts.p;
  testserverURL = ts.line.replace("listening on ", "");
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"], ignore_robots: true },
    search: { providers: [{ kind: "searxng", name: "local", base_url: siteURL }], cache: { max_entries: -1 } },
    hosted: { label: "toolhost", routes: [{ name: "fake", protocol: "openai", base_url: fakeURL, models: ["fake-*"], supports_tools: true }] },
  }));
  server = await startServer({
    args: ["--config", config, "--log-format", "json"],
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_METRICS_EXPORTER: "none", OTEL_BSP_SCHEDULE_DELAY: "100" },
  });
});

after(async () => {
  await server?.stop();
  site?.close();
  await fake?.stop();
  for (const p of [collector, testserver]) {
    if (p && p.exitCode === null) {
      p.kill("SIGTERM");
      await once(p, "exit");
    }
  }
  if (work) await rm(work, { recursive: true, force: true });
});

// spansOf reads every span of trace from the collector's file, by id.
async function spansOf(trace) {
  let text = "";
  try {
    text = await readFile(tracesFile, "utf8");
  } catch {
    return new Map();
  }
  const out = new Map();
  for (const line of text.split("\n").filter(Boolean)) {
    for (const rs of JSON.parse(line).resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) if (s.traceId === trace) out.set(s.spanId, s);
      }
    }
  }
  return out;
}

const attr = (span, key) => {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.boolValue);
};

test("one hosted request is one trace: server span, rounds, model calls, tools, the remote MCP call", async () => {
  const reg = await fetch(`${server.base}/mcp-servers`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: "demo", url: testserverURL, defaults: { require_approval: "never" } }),
  });
  assert.equal(reg.status, 201, await reg.text());

  const openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
  const data = await openai.chat.completions.create({
    model: "fake-1",
    messages: [{ role: "user", content: "[trace] what time is it?" }],
    tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["get_time", "demo__echo", "fetch_page", "web_search"], require_approval: "never" }],
  }, { headers: { traceparent: `00-${TRACE}-${CALLER_SPAN}-01` } });
  assert.equal(data.choices[0].message.content, "Done.");
  assert.deepEqual(data.toolhost.tool_calls.map((c) => [c.name, c.status]),
    [["get_time", "done"], ["demo__echo", "done"], ["fetch_page", "done"], ["web_search", "done"]], JSON.stringify(data.toolhost.tool_calls));

  // The tree, each span as "name < parent's name".
  const want = [
    "POST /v1/chat/completions < (caller)",
    "hosted_round < POST /v1/chat/completions",
    "hosted_round < POST /v1/chat/completions",
    "chat fake-* < hosted_round",
    "chat fake-* < hosted_round",
    "execute_tool get_time < hosted_round",
    "execute_tool demo__echo < hosted_round",
    "tools/call echo < execute_tool demo__echo",
    "execute_tool fetch_page < hosted_round",
    "GET < execute_tool fetch_page",
    "execute_tool web_search < hosted_round",
    "search local < execute_tool web_search",
    // Each call's journal writes: its opened record and its outcome.
    ...["get_time", "demo__echo", "fetch_page", "web_search"].flatMap((t) => [
      `journal open < execute_tool ${t}`, `journal finish < execute_tool ${t}`,
    ]),
  ].toSorted();
  const spans = await waitFor("the collector wrote the request's spans", async () => {
    const m = await spansOf(TRACE);
    const tree = [...m.values()].map((s) => {
      const parent = s.parentSpanId === CALLER_SPAN ? "(caller)" : (m.get(s.parentSpanId)?.name ?? `? ${s.parentSpanId}`);
      return `${s.name} < ${parent}`;
    }).toSorted();
    return { ok: tree.length >= want.length, value: { m, tree } };
  });
  assert.deepEqual(spans.tree, want);
  const byName = (n) => [...spans.m.values()].filter((s) => s.name === n);
  for (const chat of byName("chat fake-*")) {
    assert.equal(attr(chat, "gen_ai.operation.name"), "chat");
    assert.equal(attr(chat, "gen_ai.provider.name"), "openai");
    assert.ok(["11", "40"].includes(String(attr(chat, "gen_ai.usage.input_tokens"))), JSON.stringify(chat.attributes));
  }
  const [remote] = byName("tools/call echo");
  assert.equal(attr(remote, "mcp.method.name"), "tools/call");
  assert.equal(String(attr(remote, "toolhost.attempt")), "1");

  // The journal's trace_id.
  const res = await fetch(`${server.base}/tool-executions?floor_id=${encodeURIComponent(data.toolhost.request_id)}`);
  const { data: records } = await res.json();
  assert.equal(records.length, 4);
  for (const r of records) assert.equal(r.trace_id, TRACE);
  // The model saw the trace in traceparent, each time as the child of its
  // chat span.
  const chatIDs = byName("chat fake-*").map((s) => s.spanId).toSorted();
  const parents = await fake.traceparents();
  assert.deepEqual(parents.map((tp) => tp.split("-")[2]).toSorted(), chatIDs);
  for (const tp of parents) assert.equal(tp.split("-")[1], TRACE);
  // The test MCP server was sent the trace: in _meta and the HTTP header.
  const seen = await (await fetch(testserverURL.replace(/\/mcp$/, "/trace-contexts"))).json();
  assert.deepEqual(seen.echo_meta, [`00-${TRACE}-${remote.spanId}-01`]);
  assert.ok(seen.headers.some((h) => h.startsWith(`00-${TRACE}-`)), JSON.stringify(seen.headers));
  // The site was not told the trace (no TOOLHOST_OTEL_PROPAGATE_FETCH).
  assert.deepEqual(siteTraceparents, ["", ""]);
  // The request's log lines name the trace.
  const lines = server.logs().split("\n").filter((l) => l.includes('"msg":"call"'));
  assert.equal(lines.filter((l) => l.includes(`"trace_id":"${TRACE}"`)).length, 4, lines.join("\n"));
});
