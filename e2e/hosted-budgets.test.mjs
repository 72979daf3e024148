// Budgets of a hosted loop, through the official openai client on
// /v1/chat/completions: the scripted model (server/v1/fakeupstream) asks
// for 40 calls in one round against hosted.budgets.tool_calls = 10.
// toolhost runs the first 10 in the model's order, skips the other 30 (the
// model reads why), makes the final call with tool_choice "none", and the
// extension field says stopped_by "tool_calls"; streaming and not. The fake
// upstream lists what the model was sent (GET /v1/requests) and the journal
// holds exactly the 10 calls that ran.
//
// The fake upstream is started by e2e/lib/fakeupstream.mjs, from
// $FAKEUPSTREAM_BIN (bin/fakeupstream under scripts/e2e.sh) or built there.

import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const label = "toolhost";
const ANSWER = "Ten picks are enough.";
const CALLS = 40;
const BUDGET = 10;
const SKIPPED = "not run: the request's tool-call budget is spent";

const scenarios = ["json", "stream"];
const question = (key) => `[${key}] pick forty times`;
const callID = (key, i) => `call_${key}_${String(i).padStart(2, "0")}`;
const script = {
  conversations: scenarios.map((key) => ({
    match: `[${key}]`,
    rounds: [
      {
        tool_calls: Array.from({ length: CALLS }, (_, i) => ({
          id: callID(key, i), name: "random_choice", arguments: `{"options":["tea","coffee","pick ${i}"]}`,
        })),
        args_chunk: 7,
      },
      { content: ANSWER },
    ],
  })),
};

let work;
let fake;
let fakeURL;
let server;
let openai;

before(async () => {
  work = await tempDir("toolhost-budgets-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  assert.match(fakeURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    hosted: {
      label,
      budgets: { tool_calls: BUDGET },
      routes: [{ name: "fake", protocol: "openai", base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }],
    },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
  // English summaries and notes (/v1 speaks Chinese unless asked).
  openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0, defaultHeaders: { "Accept-Language": "en" } });
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

const request = (key, extra = {}) => ({
  model: "fake-1",
  messages: [{ role: "user", content: question(key) }],
  tools: [{ type: "mcp", server_label: label, allowed_tools: ["random_choice"], require_approval: "never" }],
  ...extra,
});

// What the model was sent and what the journal holds agree with the
// extension field: 10 done then 30 skipped, in the model's order; the
// final upstream call forbids tools and reads 40 tool results, the last 30
// saying why they did not run; 10 journal records.
async function checkRun(key, ext) {
  assert.ok(ext, "extension field missing");
  assert.equal(ext.stopped_by, "tool_calls");
  assert.equal(ext.tool_rounds, 2);
  assert.deepEqual(ext.tool_calls.map((c) => c.id), Array.from({ length: CALLS }, (_, i) => callID(key, i)));
  assert.deepEqual(ext.tool_calls.map((c) => c.status), [...Array(BUDGET).fill("done"), ...Array(CALLS - BUDGET).fill("skipped")]);
  for (const c of ext.tool_calls.slice(BUDGET)) assert.equal(c.summary, SKIPPED);

  const all = await fake.requests();
  const mine = all.filter((body) => JSON.stringify(body.messages).includes(`[${key}]`));
  assert.equal(mine.length, 2, `upstream requests of ${key}: ${mine.length}`);
  assert.equal(mine[0].tool_choice, undefined);
  assert.equal(mine[1].tool_choice, "none");
  assert.equal(mine[1].tools.length, 1, "the final call still carries the definitions");
  const results = mine[1].messages.filter((m) => m.role === "tool");
  assert.equal(results.length, CALLS);
  results.slice(0, BUDGET).forEach((m, i) => {
    assert.equal(m.tool_call_id, callID(key, i));
    assert.ok(!m.content.startsWith("[tool error]"), m.content);
  });
  results.slice(BUDGET).forEach((m, i) => {
    assert.equal(m.tool_call_id, callID(key, BUDGET + i));
    assert.equal(m.content, `[tool error] ${SKIPPED}`);
  });

  const { data: records } = await getJSON(`${server.base}/tool-executions?floor_id=${encodeURIComponent(ext.request_id)}&limit=100`);
  assert.deepEqual(records.map((r) => r.call_id).toSorted(), Array.from({ length: BUDGET }, (_, i) => callID(key, i)));
  for (const r of records) assert.equal(r.status, "success");

  const { data: rounds } = await getJSON(`${server.base}/v1/tool-rounds?request_id=${encodeURIComponent(ext.request_id)}`);
  assert.deepEqual(rounds.map((r) => [r.round, r.final, r.stopped_by ?? null]), [[0, false, null], [1, true, "tool_calls"]]);
}

describe("openai client, /v1/chat/completions, 40 calls against a tool-call budget of 10", () => {
  test("non-streaming: 10 run, 30 skipped, the final answer says stopped_by tool_calls", async () => {
    const data = await openai.chat.completions.create(request("json"));
    assert.equal(data.choices[0].message.content, ANSWER);
    assert.equal(data.choices[0].message.tool_calls, undefined);
    assert.equal(data.choices[0].finish_reason, "stop");
    await checkRun("json", data[label]);
  });

  test("streaming: start and end notices for the 10 that ran only, stopped_by in the closing chunk", async () => {
    const stream = await openai.chat.completions.create(request("stream", { stream: true, stream_options: { include_usage: true } }));
    let text = "";
    let ext;
    const started = [];
    const ended = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        assert.equal(choice.delta.tool_calls, undefined, "a hosted call leaked into the stream");
        text += choice.delta.content ?? "";
      }
      const x = chunk[label];
      if (x?.tool) (x.tool.status === "" ? started : ended).push(x.tool.id);
      else if (x) ext = x;
    }
    assert.equal(text, ANSWER);
    assert.deepEqual(started, Array.from({ length: BUDGET }, (_, i) => callID("stream", i)));
    assert.deepEqual(ended.toSorted(), started);
    await checkRun("stream", ext);
  });
});
