// A tool name the model invents, through the official clients: the scripted
// model (server/v1/fakeupstream) asks for get_tiem and get_time in one
// round. toolhost runs both: get_tiem fails at lookup with unknown_tool and
// the names the model may use (§6.14 of the tool-call seed: no near-name
// matching), get_time gives the time, both go back to the model, which then
// answers. The openai client on /v1/chat/completions and /v1/responses, the
// anthropic client on /v1/messages (over both upstream protocols),
// streaming and not; the fake upstream lists what the model was sent
// (GET /v1/requests) and the journal holds the refusal.
//
// The fake upstream is started by e2e/lib/fakeupstream.mjs, from
// $FAKEUPSTREAM_BIN (bin/fakeupstream under scripts/e2e.sh) or built there.

import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const label = "toolhost";
const MCP_BETA = "mcp-client-2025-11-20";

// What the model is told for get_tiem: the enabled hosted tool and the
// caller's function, sorted.
const REFUSAL = 'unknown_tool: unknown tool "get_tiem"; available tools: get_time, get_weather';
const ANSWER = "It is noon.";

// One conversation per scenario, told apart by the user's question.
const scenarios = [
  "chat-json", "chat-stream", "responses-json", "responses-stream",
  "messages-openai-json", "messages-openai-stream", "messages-anthropic-json", "messages-anthropic-stream",
];
const question = (key) => `[${key}] what time is it?`;
const script = {
  conversations: scenarios.map((key) => ({
    match: `[${key}]`,
    rounds: [
      {
        content: "Checking.",
        tool_calls: [
          { id: `call_tiem_${key}`, name: "get_tiem", arguments: '{"timezone":"Europe/Paris"}' },
          { id: `call_time_${key}`, name: "get_time", arguments: '{"timezone":"UTC"}' },
        ],
        args_chunk: 5,
      },
      { content: ANSWER },
    ],
  })),
};

const weatherSchema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

let work;
let fake;
let fakeURL;
let server;
let openai;
let anthropic;

before(async () => {
  work = await tempDir("toolhost-invented-tool-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  assert.match(fakeURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  // Two routes to the same fake: fake-* over the OpenAI-compatible
  // protocol, claude-fake-* over the Anthropic one.
  const route = (name, protocol, models) => ({
    name, protocol, base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY", models, supports_tools: true,
  });
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    hosted: { label, routes: [route("fake-openai", "openai", ["fake-*"]), route("fake-anthropic", "anthropic", ["claude-fake-*"])] },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
  openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0 });
});

after(async () => {
  await server?.stop();
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

async function getJSON(url) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  return res.json();
}

// The text of a tool result in either upstream protocol.
function resultText(content) {
  if (typeof content === "string") return content;
  return content.map((b) => b.text ?? "").join("");
}

// The tool results the model was sent in the scenario's second upstream
// request, as { id, text, isError }, in order.
async function resultsSentToModel(key) {
  const all = await fake.requests();
  const mine = all.filter((body) => JSON.stringify(body.messages).includes(`[${key}]`));
  assert.equal(mine.length, 2, `upstream requests of ${key}: ${mine.length}`);
  const out = [];
  for (const m of mine[1].messages) {
    if (m.role === "tool") {
      out.push({ id: m.tool_call_id, text: m.content, isError: m.content.startsWith("[tool error] ") });
    } else if (m.role === "user" && Array.isArray(m.content)) {
      for (const b of m.content) {
        if (b.type === "tool_result") out.push({ id: b.tool_use_id, text: resultText(b.content), isError: b.is_error === true });
      }
    }
  }
  return out;
}

// Everything a scenario must show besides its format's own rendering: the
// model got unknown_tool with the names for get_tiem and the time for
// get_time, in the model's order; the extension field reports the failure;
// the journal holds the lookup refusal under the run and round.
async function checkRun(key, ext) {
  const results = await resultsSentToModel(key);
  assert.deepEqual(results.map((r) => r.id), [`call_tiem_${key}`, `call_time_${key}`]);
  const [tiem, time] = results;
  assert.ok(tiem.isError, "get_tiem's result is not an error");
  assert.ok(tiem.text.includes(REFUSAL), `get_tiem's result: ${tiem.text}`);
  assert.ok(!time.isError, `get_time failed: ${time.text}`);
  assert.match(time.text, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(UTC, UTC\+00:00, unix \d+\)$/);

  assert.ok(ext, "extension field missing");
  assert.equal(ext.tool_rounds, 2);
  assert.deepEqual(ext.tool_calls.map((c) => [c.round, c.id, c.name, c.status]), [
    [0, `call_tiem_${key}`, "get_tiem", "failed"],
    [0, `call_time_${key}`, "get_time", "done"],
  ]);
  assert.match(ext.tool_calls[0].summary, /unknown tool "get_tiem"/);

  const { data: records } = await getJSON(`${server.base}/tool-executions?floor_id=${encodeURIComponent(ext.request_id)}`);
  const byTool = Object.fromEntries(records.map((r) => [r.tool_name, r]));
  assert.deepEqual(Object.keys(byTool).toSorted(), ["get_tiem", "get_time"]);
  const rej = byTool.get_tiem;
  assert.deepEqual(
    [rej.state, rej.status, rej.error_code, rej.face, rej.caller_slot, rej.call_id, rej.round, rej.commit_outcome],
    ["parse_rejected", "error", "unknown_tool", "hosted", null, `call_tiem_${key}`, 0, "discarded"],
  );
  assert.ok(rej.error_message.includes('available tools: get_time, get_weather'), rej.error_message);
  assert.match(rej.run_id, /^run_/);
  assert.equal(byTool.get_time.run_id, rej.run_id);
  assert.equal(byTool.get_time.status, "success");
}

describe("openai client, /v1/chat/completions", () => {
  const request = (key, extra = {}) => ({
    model: "fake-1",
    messages: [{ role: "user", content: question(key) }],
    tools: [
      { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: weatherSchema } },
      { type: "mcp", server_label: label, allowed_tools: ["get_time"], require_approval: "never" },
    ],
    ...extra,
  });

  test("non-streaming: get_tiem fails with unknown_tool, get_time runs, the answer arrives", async () => {
    const data = await openai.chat.completions.create(request("chat-json"));
    assert.equal(data.choices[0].message.content, ANSWER);
    assert.equal(data.choices[0].message.tool_calls, undefined);
    assert.equal(data.choices[0].finish_reason, "stop");
    await checkRun("chat-json", data[label]);
  });

  test("streaming: no tool_calls delta of get_tiem or get_time, the answer streams", async () => {
    const stream = await openai.chat.completions.create(request("chat-stream", { stream: true }));
    let text = "";
    let ext;
    const notices = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        assert.equal(choice.delta.tool_calls, undefined, "a tool call leaked into the stream");
        text += choice.delta.content ?? "";
      }
      const x = chunk[label];
      if (x?.tool) notices.push([x.tool.name, x.tool.status]);
      else if (x?.tool_calls) ext = x;
    }
    assert.equal(text, "Checking." + ANSWER);
    assert.deepEqual(notices.filter(([, s]) => s !== "").toSorted(), [["get_tiem", "failed"], ["get_time", "done"]]);
    await checkRun("chat-stream", ext);
  });
});

describe("openai client, /v1/responses", () => {
  const request = (key, extra = {}) => ({
    model: "fake-1",
    input: question(key),
    tools: [
      { type: "function", name: "get_weather", description: "Weather for a city", parameters: weatherSchema },
      { type: "mcp", server_label: label, allowed_tools: ["get_time"], require_approval: "never" },
    ],
    ...extra,
  });

  const checkOutput = (key, resp) => {
    assert.deepEqual(resp.output.map((it) => it.type), ["mcp_list_tools", "message", "mcp_call", "mcp_call", "message"]);
    const [, , tiem, time, answer] = resp.output;
    assert.deepEqual([tiem.id, tiem.name, tiem.status, tiem.output], [`call_tiem_${key}`, "get_tiem", "failed", null]);
    assert.equal(tiem.error, REFUSAL);
    assert.deepEqual([time.id, time.name, time.status, time.error], [`call_time_${key}`, "get_time", "completed", null]);
    assert.equal(answer.content[0].text, ANSWER);
  };

  test("non-streaming: a failed mcp_call for get_tiem, a completed one for get_time, the answer", async () => {
    const resp = await openai.responses.create(request("responses-json"));
    checkOutput("responses-json", resp);
    assert.equal(resp.output_text, "Checking." + ANSWER);
    await checkRun("responses-json", resp[label]);
  });

  test("streaming: mcp_call.failed for get_tiem, no function_call item, the answer", async () => {
    const stream = await openai.responses.create(request("responses-stream", { stream: true }));
    const events = [];
    for await (const ev of stream) events.push(ev);
    const failed = events.filter((e) => e.type === "response.mcp_call.failed").map((e) => e.item_id);
    assert.deepEqual(failed, ["call_tiem_responses-stream"]);
    assert.ok(!events.some((e) => e.item?.type === "function_call"), "a function_call item reached the client");
    const done = events.at(-1);
    assert.equal(done.type, "response.completed");
    checkOutput("responses-stream", done.response);
    await checkRun("responses-stream", done[label]);
  });
});

for (const protocol of ["openai", "anthropic"]) {
  describe(`anthropic client, /v1/messages over the ${protocol} upstream protocol`, () => {
    const model = protocol === "openai" ? "fake-1" : "claude-fake-1";
    const request = (key) => ({
      model,
      max_tokens: 512,
      betas: [MCP_BETA],
      messages: [{ role: "user", content: question(key) }],
      mcp_servers: [{ type: "url", url: "https://example.invalid/mcp", name: label }],
      tools: [
        { name: "get_weather", description: "Weather for a city", input_schema: weatherSchema },
        { type: "mcp_toolset", mcp_server_name: label, default_config: { enabled: false }, configs: { get_time: { enabled: true } } },
      ],
    });

    const checkMessage = (key, msg) => {
      assert.deepEqual(msg.content.map((b) => [b.type, b.name ?? null]), [
        ["text", null], ["mcp_tool_use", "get_tiem"], ["mcp_tool_use", "get_time"],
        ["mcp_tool_result", null], ["mcp_tool_result", null], ["text", null],
      ]);
      const [, , , tiem, time, answer] = msg.content;
      assert.deepEqual([tiem.tool_use_id, tiem.is_error], [`call_tiem_${key}`, true]);
      assert.equal(tiem.content[0].text, REFUSAL);
      assert.deepEqual([time.tool_use_id, time.is_error], [`call_time_${key}`, false]);
      assert.equal(answer.text, ANSWER);
      assert.equal(msg.stop_reason, "end_turn");
    };

    test("non-streaming: mcp_tool_result is_error for get_tiem, the time for get_time, the answer", async () => {
      const key = `messages-${protocol}-json`;
      const msg = await anthropic.beta.messages.create(request(key));
      checkMessage(key, msg);
      await checkRun(key, msg[label]);
    });

    test("message stream helper: no tool_use block reaches the client, the same message", async () => {
      const key = `messages-${protocol}-stream`;
      const stream = anthropic.beta.messages.stream(request(key));
      let ext;
      const started = [];
      stream.on("streamEvent", (ev) => {
        if (ev.type === "content_block_start") started.push(ev.content_block.type);
        if (ev.type === "message_stop") ext = ev[label];
      });
      const msg = await stream.finalMessage();
      assert.ok(!started.includes("tool_use"), `blocks streamed: ${started}`);
      checkMessage(key, msg);
      await checkRun(key, ext);
    });
  });
}
