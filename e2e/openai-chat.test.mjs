// The official openai Node client against /v1/chat/completions with hosted
// tools: `toolhost serve --dev` routes the model to the scripted fake
// upstream (server/v1/fakeupstream), streaming and not, with the default label
// and another one.
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

const round0Usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 40, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 5 } };
const round1Usage = { prompt_tokens: 150, completion_tokens: 10, total_tokens: 160, prompt_tokens_details: { cached_tokens: 100, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 2 } };
const summedUsage = { prompt_tokens: 250, completion_tokens: 30, total_tokens: 280, prompt_tokens_details: { cached_tokens: 140, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 7 } };

const script = {
  conversations: [
    {
      match: "pick a drink",
      rounds: [
        {
          content: "Let me pick.",
          tool_calls: [
            { id: "call_pick", name: "random_choice", arguments: '{"options":["tea"]}' },
            { id: "call_wait", name: "sleep", arguments: '{"ms":10}' },
          ],
          usage: round0Usage,
        },
        { content: "Tea it is.", usage: round1Usage },
      ],
    },
    {
      match: "weather",
      rounds: [
        {
          tool_calls: [
            { id: "call_hosted", name: "random_choice", arguments: '{"options":["x"]}' },
            { id: "call_weather", name: "get_weather", arguments: '{"city":"Paris"}' },
          ],
          usage: round0Usage,
        },
      ],
    },
  ],
};

const weatherFn = {
  type: "function",
  function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};

let work;
let fake;
let fakeURL;

before(async () => {
  work = await tempDir("toolhost-openai-chat-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  assert.match(fakeURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
});

after(async () => {
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

for (const label of ["toolhost", "acme_tools"]) {
  describe(`hosted tools with label ${label}`, () => {
    let server;
    let client;

    before(async () => {
      const config = join(work, `config-${label}.json`);
      await writeFile(config, JSON.stringify({
        hosted: {
          label,
          routes: [{
            name: "fake", protocol: "openai", base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY",
            models: ["fake-*"], supports_tools: true, prices: { "*": { input: 1000000, output: 2000000 } },
          }],
        },
      }));
      server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
      client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
    });

    after(async () => {
      await server?.stop();
    });

    const request = (extra = {}) => ({
      model: "fake-1",
      messages: [{ role: "user", content: "pick a drink" }],
      tools: [{ type: "mcp", server_label: label, allowed_tools: ["random_choice", "sleep"], require_approval: "never" }],
      [label]: { max_tool_rounds: 3 },
      ...extra,
    });

    const checkExtension = (ext) => {
      assert.ok(ext, "extension field missing");
      assert.match(ext.request_id, /^req_/);
      assert.equal(ext.tool_rounds, 2);
      // cost: round 0 = 100 + 2*20, round 1 = 150 + 2*10.
      assert.equal(ext.cost_quota, 310);
      assert.deepEqual(ext.tool_calls.map((c) => [c.round, c.id, c.name, c.status]), [
        [0, "call_pick", "random_choice", "done"],
        [0, "call_wait", "sleep", "done"],
      ]);
      assert.equal(ext.tool_calls[0].summary, "tea");
    };

    test("non-streaming: one answer, no hosted calls in tool_calls, summed usage, extension field", async () => {
      const { data, response } = await client.chat.completions.create(request()).withResponse();
      assert.equal(response.status, 200);
      assert.equal(data.object, "chat.completion");
      assert.equal(data.choices[0].message.content, "Tea it is.");
      assert.equal(data.choices[0].message.tool_calls, undefined);
      assert.equal(data.choices[0].finish_reason, "stop");
      assert.deepEqual(data.usage, summedUsage);
      checkExtension(data[label]);

      // Both hosted calls are in the journal under the request id.
      const res = await fetch(`${server.base}/tool-executions?floor_id=${encodeURIComponent(data[label].request_id)}`);
      assert.equal(res.status, 200);
      const { data: records } = await res.json();
      assert.deepEqual(records.map((r) => [r.tool_name, r.face, r.caller_slot, r.call_id]).toSorted(), [
        ["random_choice", "hosted", null, "call_pick"],
        ["sleep", "hosted", null, "call_wait"],
      ]);
    });

    test("non-streaming raw response carries the extension field", async () => {
      const raw = await client.chat.completions.create(request()).asResponse();
      const body = JSON.parse(await raw.text());
      checkExtension(body[label]);
      assert.equal(raw.headers.get("x-request-id") !== null, true);
    });

    test("streaming: chunks parse, text of every round flows, tool notices and totals arrive, usage is the sum", async () => {
      const stream = await client.chat.completions.create(request({ stream: true, stream_options: { include_usage: true } }));
      let text = "";
      const notices = [];
      let closing;
      let usage;
      let finish;
      for await (const chunk of stream) {
        assert.equal(chunk.object, "chat.completion.chunk");
        for (const choice of chunk.choices) {
          assert.equal(choice.delta.tool_calls, undefined, "a hosted call leaked into tool_calls");
          text += choice.delta.content ?? "";
          if (choice.finish_reason) finish = choice.finish_reason;
        }
        if (chunk.usage) usage = chunk.usage;
        const ext = chunk[label];
        if (ext?.tool) notices.push([ext.tool.id, ext.tool.status]);
        else if (ext) closing = ext;
      }
      assert.equal(text, "Let me pick.Tea it is.");
      assert.equal(finish, "stop");
      assert.deepEqual(usage, summedUsage);
      checkExtension(closing);
      for (const id of ["call_pick", "call_wait"]) {
        const mine = notices.filter(([i]) => i === id).map(([, s]) => s);
        assert.deepEqual(mine, ["", "done"], `notices of ${id}`);
      }
    });

    test("streaming helper assembles the final completion without hosted calls", async () => {
      const runner = client.chat.completions.stream(request({ stream_options: { include_usage: true } }));
      const final = await runner.finalChatCompletion();
      assert.equal(final.choices[0].message.content, "Let me pick.Tea it is.");
      assert.ok(!final.choices[0].message.tool_calls?.length, "hosted calls in tool_calls");
      assert.deepEqual(final.usage, summedUsage);
    });

    test("a caller function ends the loop: only it is in tool_calls, the hosted call is skipped", async () => {
      const body = request({ messages: [{ role: "user", content: "weather in Paris" }] });
      body.tools = [weatherFn, { type: "mcp", server_label: label, allowed_tools: ["random_choice"], require_approval: "never" }];
      const data = await client.chat.completions.create(body);
      assert.deepEqual(data.choices[0].message.tool_calls.map((c) => c.function.name), ["get_weather"]);
      assert.equal(data.choices[0].finish_reason, "tool_calls");
      assert.deepEqual(data[label].tool_calls.map((c) => [c.id, c.status]), [["call_hosted", "skipped"]]);

      const stream = await client.chat.completions.create({ ...body, stream: true });
      const calls = [];
      for await (const chunk of stream) {
        for (const choice of chunk.choices) for (const tc of choice.delta.tool_calls ?? []) if (tc.function?.name) calls.push([tc.index, tc.function.name]);
      }
      assert.deepEqual(calls, [[0, "get_weather"]]);
    });

    test("a 400 with a machine-readable reason surfaces as the SDK's BadRequestError", async () => {
      const body = request();
      body[label] = { max_tool_rounds: 2, color: "blue" };
      await assert.rejects(client.chat.completions.create(body), (err) => {
        assert.equal(err.status, 400);
        assert.equal(err.error?.details?.reason ?? err.error?.error?.details?.reason, "unknown_extension_key");
        return true;
      });
    });
  });
}
