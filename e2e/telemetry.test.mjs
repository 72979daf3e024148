// Metrics and trace context through real components: Debian's prometheus
// scrapes toolhost's /metrics, and a PromQL query over its HTTP API
// returns exactly the calls this test made, by tool, face and outcome —
// over MCP (the TypeScript SDK client) and hosted on /v1 (the openai
// client, the scripted fake upstream of server/v1/fakeupstream). The
// caller's traceparent, from the HTTP header on /v1 and from the MCP
// request's _meta, is the journal's trace_id, and the fake upstream was
// sent the same trace id on every model call.
//
// Needs /usr/bin/prometheus (.ci/run installs Debian's prometheus); the
// fake upstream is started by e2e/lib/fakeupstream.mjs.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { connectHTTP } from "./lib/mcp.mjs";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { freePort, startServer, tempDir } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const PROMETHEUS = process.env.PROMETHEUS_BIN || "/usr/bin/prometheus";
const HOSTED_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const MCP_TRACE = "0af7651916cd43dd8448eb211c80319c";

const script = {
  conversations: [{
    match: "[metrics]",
    rounds: [
      {
        content: "Checking.",
        tool_calls: [
          { id: "call_a", name: "get_time", arguments: '{"timezone":"UTC"}' },
          { id: "call_b", name: "get_time", arguments: '{"timezone":"Mars/Olympus"}' },
          { id: "call_c", name: "roll_dice", arguments: '{"sides":6}' },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
      },
      { content: "Done.", usage: { prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 } },
    ],
  }],
};

let work, fake, fakeURL, server, prom, promURL, mcp;

// waitFor polls another process's state (bounded): Prometheus scrapes on
// its own schedule.
async function waitFor(what, fn, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last.ok) return last.value;
    } catch (err) {
      last = { error: err };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last, null, 1)}`);
}

before(async () => {
  work = await tempDir("toolhost-telemetry-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    hosted: { label: "toolhost", routes: [{ name: "fake", protocol: "openai", base_url: fakeURL, models: ["fake-*"], supports_tools: true }] },
  }));
  server = await startServer({ args: ["--config", config] });

  const promPort = await freePort();
  promURL = `http://127.0.0.1:${promPort}`;
  const promConfig = join(work, "prometheus.yml");
  await writeFile(promConfig, [
    "global:",
    "  scrape_interval: 1s",
    "scrape_configs:",
    "  - job_name: toolhost",
    "    static_configs:",
    `      - targets: ["127.0.0.1:${server.port}"]`,
    "",
  ].join("\n"));
  prom = spawn(PROMETHEUS, [
    `--config.file=${promConfig}`, `--storage.tsdb.path=${join(work, "tsdb")}`,
    `--web.listen-address=127.0.0.1:${promPort}`,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let promLog = "";
  prom.stderr.on("data", (c) => (promLog = (promLog + c).slice(-8192)));
  await waitFor("prometheus ready", async () => {
    if (prom.exitCode !== null) assert.fail(`prometheus exited ${prom.exitCode}: ${promLog}`);
    const res = await fetch(`${promURL}/-/ready`);
    return { ok: res.status === 200 };
  });
  mcp = await connectHTTP(server.mcpURL);
});

after(async () => {
  await mcp?.close();
  if (prom && prom.exitCode === null) {
    prom.kill("SIGTERM");
    await once(prom, "exit");
  }
  await fake?.stop();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

// query runs an instant PromQL query; the result as "labels" → value.
async function query(q) {
  const res = await fetch(`${promURL}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await res.json();
  assert.equal(body.status, "success", JSON.stringify(body));
  return Object.fromEntries(body.data.result.map((r) => [
    Object.entries(r.metric).map(([k, v]) => `${k}=${v}`).toSorted().join(","), Number(r.value[1]),
  ]));
}

async function journal(params) {
  const res = await fetch(`${server.base}/tool-executions?${new URLSearchParams(params)}`);
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

test("prometheus counts every call by tool, face and outcome; the trace context reaches the journal and the model", async () => {
  // MCP: three get_time, one with a time zone that does not exist; two
  // roll_dice out of range; one get_time under the caller's _meta trace.
  for (const tz of ["UTC", "Asia/Shanghai", "Nowhere/Else"]) {
    await mcp.callTool({ name: "get_time", arguments: { timezone: tz } });
  }
  for (let i = 0; i < 2; i++) {
    const r = await mcp.callTool({ name: "roll_dice", arguments: { sides: 1e9 } });
    assert.equal(r.isError, true);
  }
  const traced = await mcp.callTool({
    name: "get_time", arguments: {},
    _meta: { traceparent: `00-${MCP_TRACE}-b7ad6b7169203331-01` },
  });
  const tracedID = traced._meta["toolhost/execution_id"];

  // Hosted: one request, the model calls get_time twice (once with a bad
  // zone) and roll_dice once, then answers.
  const openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
  const { data } = await openai.chat.completions.create({
    model: "fake-1",
    messages: [{ role: "user", content: "[metrics] what time is it?" }],
    tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["get_time", "roll_dice"], require_approval: "never" }],
  }, { headers: { traceparent: `00-${HOSTED_TRACE}-00f067aa0ba902b7-01` } }).withResponse();
  assert.equal(data.choices[0].message.content, "Done.");
  const requestID = data.toolhost.request_id;

  const want = {
    "gen_ai_tool_name=get_time,toolhost_face=mcp,toolhost_status=success": 3,
    "gen_ai_tool_name=get_time,toolhost_face=mcp,toolhost_status=error": 1,
    "gen_ai_tool_name=roll_dice,toolhost_face=mcp,toolhost_status=error": 2,
    "gen_ai_tool_name=get_time,toolhost_face=hosted,toolhost_status=success": 1,
    "gen_ai_tool_name=get_time,toolhost_face=hosted,toolhost_status=error": 1,
    "gen_ai_tool_name=roll_dice,toolhost_face=hosted,toolhost_status=success": 1,
  };
  const total = Object.values(want).reduce((a, b) => a + b, 0);
  const q = "sum by (gen_ai_tool_name, toolhost_face, toolhost_status) (toolhost_tool_call_duration_seconds_count)";
  const got = await waitFor("prometheus has scraped every call", async () => {
    const r = await query(q);
    return { ok: Object.values(r).reduce((a, b) => a + b, 0) >= total, value: r, got: r };
  });
  assert.deepEqual(got, want);

  // The refusals by stage and reason: the two out-of-range dice.
  const refusals = await query("sum by (toolhost_stage, toolhost_reason) (toolhost_tool_refusals_total)");
  assert.deepEqual(refusals, { "toolhost_reason=invalid_arguments,toolhost_stage=validation_rejected": 2 });
  // MCP operations and model calls are measured too.
  const ops = await query('sum by (mcp_method_name) (mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})');
  assert.deepEqual(ops, { "mcp_method_name=tools/call": 6 });
  const chats = await query("sum by (gen_ai_operation_name, gen_ai_request_model) (gen_ai_client_operation_duration_seconds_count)");
  assert.deepEqual(chats, { "gen_ai_operation_name=chat,gen_ai_request_model=fake-*": 2 });
  const tokens = await query("sum by (gen_ai_token_type) (gen_ai_client_token_usage_sum)");
  assert.deepEqual(tokens, { "gen_ai_token_type=input": 51, "gen_ai_token_type=output": 5 });

  // Trace context: the journal's trace_id is the caller's on both faces,
  // and the model was sent that trace on both of its calls.
  const hostedRecords = await journal({ floor_id: requestID });
  assert.equal(hostedRecords.length, 3);
  for (const r of hostedRecords) assert.equal(r.trace_id, HOSTED_TRACE, JSON.stringify(r));
  const one = await fetch(`${server.base}/tool-executions/${tracedID}`);
  assert.equal(one.status, 200);
  const { data: mcpRecord } = await one.json();
  assert.equal(mcpRecord.trace_id, MCP_TRACE, JSON.stringify(mcpRecord));
  const parents = await fake.traceparents();
  assert.equal(parents.length, 2);
  for (const tp of parents) assert.match(tp, new RegExp(`^00-${HOSTED_TRACE}-[0-9a-f]{16}-01$`));
});

// The Grafana dashboard's queries run on the same Prometheus over the calls
// above: each is valid PromQL, and each panel shows data but the model
// errors', the search's, the fetch's and run_code's (none were made).
test("every query of docs/grafana/toolhost.json runs and the panels show the calls", async () => {
  const dash = JSON.parse(await readFile(join(repo, "docs", "grafana", "toolhost.json"), "utf8"));
  const panels = dash.panels.filter((p) => p.type !== "row");
  assert.ok(panels.length >= 10);
  // rate() needs two scrapes of a series in its window: wait for them.
  const seriesOf = async (p) => {
    let series = 0;
    for (const t of p.targets) {
      const q = t.expr.replaceAll("$__rate_interval", "1m");
      const res = await fetch(`${promURL}/api/v1/query?query=${encodeURIComponent(q)}`);
      const body = await res.json();
      assert.equal(body.status, "success", `${p.title}: ${q}: ${JSON.stringify(body)}`);
      series += body.data.result.length;
    }
    return series;
  };
  for (const p of panels) {
    if (/^(Model call errors|Search:|Fetch:|run_code: queue)/.test(p.title)) {
      assert.equal(await seriesOf(p), 0, p.title);
      continue;
    }
    await waitFor(`panel "${p.title}" shows the calls`, async () => ({ ok: (await seriesOf(p)) > 0 }), 30000);
  }
});
