// The official openai Node client against /v1/responses with hosted tools:
// `toolhost serve --dev` routes the model to the scripted fake upstream
// (server/v1/fakeupstream, spoken to in Chat Completions), with an `mcp` tool,
// streaming and not, with the default label and another one; the previous
// output sent back as input continues the conversation.
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

const round0Usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 5 } };
const round1Usage = { prompt_tokens: 150, completion_tokens: 10, total_tokens: 160, prompt_tokens_details: { cached_tokens: 100 }, completion_tokens_details: { reasoning_tokens: 2 } };
const summedUsage = { input_tokens: 250, input_tokens_details: { cached_tokens: 140 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 7 }, total_tokens: 280 };

const script = {
  conversations: [
    { match: "and then", rounds: [{ content: "Enjoy the tea.", usage: round0Usage }] },
    {
      match: "pick a drink",
      rounds: [
        {
          content: "Let me pick.",
          tool_calls: [
            { id: "call_pick", name: "random_choice", arguments: '{"options":["tea"]}' },
            { id: "call_time", name: "get_time", arguments: '{"timezone":"Mars/Base"}' },
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
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
};

let work;
let fake;
let fakeURL;

before(async () => {
  work = await tempDir("toolhost-openai-responses-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  assert.match(fakeURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
});

after(async () => {
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

for (const label of ["toolhost", "acme_tools"]) {
  describe(`Responses with label ${label}`, () => {
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

    const mcpTool = { type: "mcp", server_label: label, server_url: "https://example.invalid/mcp", allowed_tools: ["random_choice", "get_time"], require_approval: "never" };
    const toolChoice = { type: "mcp", server_label: label, name: "random_choice" };
    const request = (extra = {}) => ({
      model: "fake-1",
      input: "pick a drink",
      tools: [mcpTool],
      tool_choice: toolChoice,
      [label]: { max_tool_rounds: 3 },
      ...extra,
    });

    // The seed's output: mcp_list_tools, the round's text, one mcp_call per
    // execution (the failed one with error), then the answer.
    const checkOutput = (resp) => {
      assert.equal(resp.object, "response");
      assert.match(resp.id, /^resp_/);
      assert.equal(resp.status, "completed");
      assert.deepEqual(resp.output.map((i) => i.type), ["mcp_list_tools", "message", "mcp_call", "mcp_call", "message"]);
      const [list, first, pick, time, answer] = resp.output;
      assert.equal(list.server_label, label);
      assert.deepEqual(list.tools.map((t) => t.name).toSorted(), ["get_time", "random_choice"]);
      for (const t of list.tools) {
        assert.equal(t.input_schema.type, "object");
        assert.equal(typeof t.annotations.readOnlyHint, "boolean");
      }
      assert.equal(first.content[0].text, "Let me pick.");
      assert.deepEqual([pick.id, pick.name, pick.server_label, pick.arguments, pick.status, pick.error], ["call_pick", "random_choice", label, '{"options":["tea"]}', "completed", null]);
      assert.match(pick.output, /tea/);
      assert.deepEqual([time.id, time.status, time.output], ["call_time", "failed", null]);
      assert.match(time.error, /Mars\/Base/);
      assert.equal(answer.role, "assistant");
      assert.equal(answer.content[0].type, "output_text");
      assert.equal(answer.content[0].text, "Tea it is.");
      assert.deepEqual(resp.tool_choice, toolChoice);
      assert.deepEqual(resp.usage, summedUsage);
      const ext = resp[label];
      assert.match(ext.request_id, /^req_/);
      assert.equal(ext.tool_rounds, 2);
      assert.deepEqual(ext.tool_calls.map((c) => [c.round, c.id, c.name, c.status]), [
        [0, "call_pick", "random_choice", "done"],
        [0, "call_time", "get_time", "failed"],
      ]);
    };

    test("non-streaming: output items, summed usage, tool_choice echoed, extension field", async () => {
      const resp = await client.responses.create(request());
      checkOutput(resp);
      assert.equal(resp.output_text, "Let me pick.Tea it is.");
    });

    test("streaming: every event parses, in the seed's order, and the terminal response holds every item", async () => {
      const stream = await client.responses.create(request({ stream: true }));
      const events = [];
      for await (const ev of stream) events.push(ev);
      const types = events.map((e) => e.type);
      assert.deepEqual(types.slice(0, 2), ["response.created", "response.in_progress"]);
      assert.equal(types.filter((t) => t === "response.created" || t === "response.in_progress").length, 2);
      assert.equal(types.at(-1), "response.completed");
      assert.equal(types.filter((t) => t === "response.completed").length, 1);
      events.forEach((e, i) => assert.equal(e.sequence_number, i));

      const perItem = new Map();
      for (const e of events) {
        if (e.output_index === undefined) continue;
        if (!perItem.has(e.output_index)) perItem.set(e.output_index, []);
        perItem.get(e.output_index).push(e.type.replace(/^response\./, ""));
      }
      assert.deepEqual([...perItem.keys()], [0, 1, 2, 3, 4]);
      assert.deepEqual(perItem.get(0), ["output_item.added", "mcp_list_tools.in_progress", "mcp_list_tools.completed", "output_item.done"]);
      assert.deepEqual(perItem.get(2), ["output_item.added", "mcp_call_arguments.delta", "mcp_call_arguments.done", "mcp_call.in_progress", "mcp_call.completed", "output_item.done"]);
      assert.deepEqual(perItem.get(3), ["output_item.added", "mcp_call_arguments.delta", "mcp_call_arguments.done", "mcp_call.in_progress", "mcp_call.failed", "output_item.done"]);

      const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
      const final = events.at(-1);
      assert.deepEqual(final.response.output, done);
      assert.equal(final.response.id, events[0].response.id);
      assert.ok(final[label], "extension field at the terminal event's top level");
      checkOutput(final.response);
      const text = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
      assert.equal(text, "Let me pick.Tea it is.");
    });

    test("the stream helper accumulates the same final response", async () => {
      const final = await client.responses.stream(request()).finalResponse();
      checkOutput(final);
      assert.equal(final.output_text, "Let me pick.Tea it is.");
    });

    test("a follow-up request with the previous output as input continues the conversation", async () => {
      for (const stream of [false, true]) {
        const first = await client.responses.create(request());
        const input = [{ role: "user", content: "pick a drink" }, ...first.output, { role: "user", content: [{ type: "input_text", text: "and then?" }] }];
        let resp;
        if (stream) {
          const s = await client.responses.create(request({ input, stream: true }));
          for await (const ev of s) if (ev.type === "response.completed") resp = ev.response;
        } else {
          resp = await client.responses.create(request({ input }));
        }
        assert.deepEqual(resp.output.map((i) => i.type), ["mcp_list_tools", "message"]);
        assert.equal(resp.output[1].content[0].text, "Enjoy the tea.");
      }
    });

    test("a caller function ends the loop: a function_call item, the hosted call skipped and left out", async () => {
      const body = request({ input: "weather in Paris", tools: [weatherFn, mcpTool], tool_choice: "auto" });
      const resp = await client.responses.create(body);
      assert.deepEqual(resp.output.map((i) => i.type), ["mcp_list_tools", "function_call"]);
      assert.deepEqual([resp.output[1].call_id, resp.output[1].name, resp.output[1].arguments], ["call_weather", "get_weather", '{"city":"Paris"}']);
      assert.deepEqual(resp[label].tool_calls.map((c) => [c.id, c.status]), [["call_hosted", "skipped"]]);

      const final = await client.responses.stream(body).finalResponse();
      assert.deepEqual(final.output.map((i) => i.type), ["mcp_list_tools", "function_call"]);
      assert.equal(final.output[1].arguments, '{"city":"Paris"}');
    });

    test("a 400 with a machine-readable reason surfaces as the SDK's BadRequestError", async () => {
      await assert.rejects(client.responses.create(request({ tools: [{ ...mcpTool, server_label: "other" }], tool_choice: "auto" })), (err) => {
        assert.equal(err.status, 400);
        assert.equal(err.error?.details?.reason ?? err.error?.error?.details?.reason, "server_tool_unsupported");
        return true;
      });
    });
  });
}
