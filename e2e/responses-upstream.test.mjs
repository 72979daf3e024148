// /v1/responses over a route with "protocol": "responses": `toolhost serve`
// speaks the Responses API to the scripted fake upstream
// (server/v1/fakeupstream). The official openai client runs a hosted tool
// round and gets a call of its own function, with the provider's reasoning
// items (encrypted_content, summaries) returned and carried back, whole and
// streamed; its own Responses members and built-in tools reach the
// provider as it sent them. Codex CLI (`codex exec`, pinned from npm) runs
// a function round trip over the same route, and gets the provider's own
// web search as its web_search item.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { node22Bin, startServer, tempDir } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const citation = { type: "url_citation", start_index: 6, end_index: 10, url: "https://example.org/time", title: "Time" };
const providerSearch = { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "noon" } };

// A hosted round (get_time) after the provider's own web search, then a
// call of the caller's get_weather, then the answer.
const rounds = [
  { reasoning_content: "plan", items: [providerSearch], tool_calls: [{ id: "call_t", name: "get_time", arguments: '{"timezone":"UTC"}' }] },
  { reasoning_content: "answer", content: "It is noon.", annotations: [citation], tool_calls: [{ id: "call_w", name: "get_weather", arguments: '{"city":"Paris"}' }] },
  { content: "Noon and sunny." },
];

const script = {
  conversations: [
    { match: "[sdk-json]", rounds },
    { match: "[sdk-stream]", rounds },
    {
      match: "[codex-native]",
      rounds: [
        { reasoning_content: "run it", tool_calls: [{ id: "call_exec", name: "exec_command", arguments: JSON.stringify({ cmd: "echo codex-native-ok" }) }] },
        { content: "The command printed codex-native-ok." },
      ],
    },
    { match: "[codex-ws]", rounds: [{ reasoning_content: "look", items: [{ ...providerSearch, action: { type: "search", query: "perovskite sealing" } }], content: "Sealed with glass." }] },
    { match: "", rounds: Array.from({ length: 8 }, () => ({ content: "ok" })) },
  ],
};

const weatherFn = {
  type: "function", name: "get_weather", description: "Weather for a city", strict: true,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
};

let work;
let fake;
let server;
let client;

before(async () => {
  work = await tempDir("toolhost-responses-upstream-");
  fake = await startFakeUpstream(script, { dir: work });
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    hosted: {
      routes: [{ name: "provider", protocol: "responses", base_url: fake.url, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }],
    },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
});

after(async () => {
  await server?.stop();
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

async function upstreamRequests(key) {
  const all = await fake.requests();
  return all.filter((b) => JSON.stringify(b).includes(`[${key}]`));
}

const request = (key, extra = {}) => ({
  model: "fake-1",
  input: [{ role: "user", content: `[${key}] time and weather?` }],
  tools: [weatherFn, { type: "web_search" }, { type: "mcp", server_label: "toolhost", allowed_tools: ["get_time"], require_approval: "never" }],
  include: ["reasoning.encrypted_content"],
  store: false,
  reasoning: { effort: "low", summary: "auto" },
  prompt_cache_key: "e2e",
  ...extra,
});

// The output: the hosted tools listed, the provider's reasoning and web
// search, the hosted call, the next reasoning, the text, the caller's call.
function checkOutput(resp) {
  assert.deepEqual(resp.output.map((i) => i.type),
    ["mcp_list_tools", "reasoning", "web_search_call", "mcp_call", "reasoning", "message", "function_call"]);
  const [, plan, ws, time, answer, text, fn] = resp.output;
  assert.equal(plan.encrypted_content, "enc_fake:plan");
  assert.deepEqual(plan.summary, [{ type: "summary_text", text: "plan" }]);
  assert.deepEqual(ws, providerSearch);
  assert.equal(time.name, "get_time");
  assert.equal(time.status, "completed");
  assert.match(time.output, /UTC/);
  assert.equal(answer.encrypted_content, "enc_fake:answer");
  assert.equal(text.content[0].text, "It is noon.");
  assert.deepEqual(text.content[0].annotations, [citation]);
  assert.deepEqual([fn.call_id, fn.name, fn.arguments], ["call_w", "get_weather", '{"city":"Paris"}']);
}

// What the provider was sent: the caller's members and built-in tool as
// they came; in the second round the first round's reasoning and search.
async function checkUpstream(key) {
  const reqs = await upstreamRequests(key);
  assert.equal(reqs.length, 2);
  const [first, second] = reqs;
  assert.deepEqual(first.include, ["reasoning.encrypted_content"]);
  assert.equal(first.store, false);
  assert.deepEqual(first.reasoning, { effort: "low", summary: "auto" });
  assert.equal(first.prompt_cache_key, "e2e");
  assert.deepEqual(first.tools.map((t) => t.name ?? t.type), ["get_weather", "get_time", "web_search"]);
  assert.deepEqual(second.input.map((i) => i.type), ["message", "reasoning", "web_search_call", "function_call", "function_call_output"]);
  assert.equal(second.input[1].encrypted_content, "enc_fake:plan");
}

test("openai client: a hosted round, its own function call and the provider's reasoning, whole", async () => {
  const resp = await client.responses.create(request("sdk-json"));
  assert.equal(resp.status, "completed");
  checkOutput(resp);
  await checkUpstream("sdk-json");

  // The output sent back continues the run; the reasoning goes back too.
  const next = await client.responses.create(request("sdk-json", {
    input: [...request("sdk-json").input, ...resp.output, { type: "function_call_output", call_id: "call_w", output: "sunny" }],
  }));
  assert.equal(next.output_text, "Noon and sunny.");
  const reqs = await upstreamRequests("sdk-json");
  const last = reqs.at(-1);
  assert.deepEqual(last.input.filter((i) => i.type === "reasoning").map((i) => i.encrypted_content), ["enc_fake:plan", "enc_fake:answer"]);
  assert.ok(!last.input.some((i) => i.type === "mcp_list_tools"), "mcp_list_tools reached the provider");
});

test("openai client: the same run streamed, reasoning items as output items", async () => {
  const stream = await client.responses.create({ ...request("sdk-stream"), stream: true });
  const added = [];
  let final;
  for await (const ev of stream) {
    if (ev.type === "response.output_item.added") added.push(ev.item.type);
    if (ev.type === "response.completed") final = ev.response;
  }
  assert.deepEqual(added, ["mcp_list_tools", "reasoning", "web_search_call", "mcp_call", "reasoning", "message", "function_call"]);
  checkOutput(final);
  await checkUpstream("sdk-stream");
});

describe("Codex CLI over a Responses route", () => {
  let home;
  let cwd;
  const codexBin = join(here, "node_modules", ".bin", "codex");

  before(async () => {
    home = join(work, "codex-home");
    cwd = join(work, "codex-work");
    await mkdir(home, { recursive: true });
    await mkdir(cwd, { recursive: true });
    await writeFile(join(home, "config.toml"), [
      `model = "fake-1"`,
      `model_provider = "toolhost"`,
      `check_for_update_on_startup = false`,
      ``,
      `[model_providers.toolhost]`,
      `name = "toolhost"`,
      `base_url = "${server.base}/v1"`,
      `wire_api = "responses"`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[otel]`,
      `exporter = "none"`,
      ``,
    ].join("\n"));
  });

  // codex exec on a loopback-only environment, nothing sent home.
  const codex = (prompt) => {
    const closed = "http://127.0.0.1:9";
    const env = {
      PATH: `${dirname(node22Bin())}:${process.env.PATH}`, HOME: home, CODEX_HOME: home,
      HTTP_PROXY: closed, HTTPS_PROXY: closed, ALL_PROXY: closed, http_proxy: closed, https_proxy: closed, all_proxy: closed,
      NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost",
    };
    return new Promise((res) => {
      const child = execFile(codexBin, ["exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", prompt],
        { cwd, env, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => res({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
      child.stdin.end();
    });
  };

  test("the model reasons, calls one of Codex's functions, Codex answers it", async () => {
    const r = await codex("[codex-native] run the check");
    assert.equal(r.code, 0, r.stderr);
    const evs = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    const cmd = evs.find((e) => e.type === "item.completed" && e.item.type === "command_execution");
    assert.ok(cmd, `no command_execution in ${r.stdout}`);
    assert.match(cmd.item.aggregated_output, /codex-native-ok/);
    const text = evs.filter((e) => e.type === "item.completed" && e.item.type === "agent_message").map((e) => e.item.text).join("\n");
    assert.equal(text, "The command printed codex-native-ok.");
    const reqs = await upstreamRequests("codex-native");
    assert.equal(reqs.length, 2);
    // Codex's own members and web_search reached the provider natively,
    // its namespaced tools as functions.
    assert.ok(reqs[0].tools.some((t) => t.type === "web_search"), JSON.stringify(reqs[0].tools.map((t) => t.type)));
    assert.ok(reqs[0].tools.some((t) => t.type === "function" && t.name === "exec_command"));
    assert.ok(reqs[0].include?.includes("reasoning.encrypted_content"), `include ${JSON.stringify(reqs[0].include)}`);
    // The reasoning came back to Codex and went back to the provider.
    const second = reqs[1].input;
    assert.ok(second.some((i) => i.type === "reasoning" && i.encrypted_content === "enc_fake:run it"), JSON.stringify(second.map((i) => i.type)));
    const out = second.find((i) => i.type === "function_call_output" && i.call_id === "call_exec");
    assert.match(JSON.stringify(out), /codex-native-ok/);
  });

  test("the provider's own web search reaches Codex as its web_search item", async () => {
    const r = await codex("[codex-ws] how are perovskite modules sealed?");
    assert.equal(r.code, 0, r.stderr);
    const evs = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    const ws = evs.find((e) => e.type === "item.completed" && e.item.type === "web_search");
    assert.ok(ws, `no web_search item in ${r.stdout}`);
    assert.match(JSON.stringify(ws.item), /perovskite sealing/);
    const text = evs.filter((e) => e.type === "item.completed" && e.item.type === "agent_message").map((e) => e.item.text).join("\n");
    assert.equal(text, "Sealed with glass.");
  });
});
