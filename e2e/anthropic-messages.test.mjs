// The official Anthropic Node client against /v1/messages with hosted tools
// declared through the MCP connector (mcp_servers + mcp_toolset, beta
// mcp-client-2025-11-20): `toolhost serve --dev` routes the model to the
// scripted fake upstream (server/v1/fakeupstream) speaking either upstream
// protocol (OpenAI-compatible, Anthropic Messages), with the default label
// and another one; streaming (the message stream helper and raw events) and
// not; the final message is sent back in a follow-up request.
//
// The fake upstream is started by e2e/lib/fakeupstream.mjs, from
// $FAKEUPSTREAM_BIN (bin/fakeupstream under scripts/e2e.sh) or built there.

import assert from "node:assert/strict";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const round0Usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 40 } };
const round1Usage = { prompt_tokens: 150, completion_tokens: 10, total_tokens: 160, prompt_tokens_details: { cached_tokens: 100 } };

const script = {
  conversations: [
    // Follow-ups first: their last user message is "and now?".
    { match: "and now", rounds: [{ content: "Still tea.", usage: round1Usage }] },
    {
      match: "pick a drink",
      rounds: [
        {
          content: "Let me pick.",
          tool_calls: [
            { id: "toolu_pick", name: "random_choice", arguments: '{"options":["tea"]}' },
            { id: "toolu_wait", name: "sleep", arguments: '{"ms":10}' },
          ],
          usage: round0Usage,
        },
        { content: "Tea it is.", usage: round1Usage },
      ],
    },
  ],
};

const MCP_BETA = "mcp-client-2025-11-20";

let work;
let fake;
let fakeURL;

before(async () => {
  work = await tempDir("toolhost-anthropic-messages-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  assert.match(fakeURL, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
});

after(async () => {
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

for (const protocol of ["openai", "anthropic"]) {
  for (const label of ["toolhost", "acme_tools"]) {
    describe(`/v1/messages over the ${protocol} upstream protocol, label ${label}`, () => {
      let server;
      let client;

      before(async () => {
        const config = join(work, `config-${protocol}-${label}.json`);
        await writeFile(config, JSON.stringify({
          hosted: {
            label,
            routes: [{
              name: "fake", protocol, base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY",
              models: ["fake-*"], supports_tools: true, prices: { "*": { input: 1000000, output: 2000000 } },
            }],
          },
        }));
        server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
        client = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0 });
      });

      after(async () => {
        await server?.stop();
      });

      const request = (extra = {}) => ({
        model: "fake-1",
        max_tokens: 512,
        betas: [MCP_BETA],
        messages: [{ role: "user", content: "pick a drink" }],
        mcp_servers: [{ type: "url", url: "https://example.invalid/mcp", name: label }],
        tools: [{
          type: "mcp_toolset",
          mcp_server_name: label,
          default_config: { enabled: false },
          configs: { random_choice: { enabled: true }, sleep: { enabled: true } },
        }],
        [label]: { max_tool_rounds: 3 },
        ...extra,
      });

      // The whole loop as one message: the hosted round's blocks, then the
      // answer.
      const checkMessage = (msg, ext = msg[label]) => {
        assert.equal(msg.type, "message");
        assert.equal(msg.role, "assistant");
        assert.deepEqual(msg.content.map((b) => b.type), ["text", "mcp_tool_use", "mcp_tool_use", "mcp_tool_result", "mcp_tool_result", "text"]);
        const [, pick, wait, r1, r2, answer] = msg.content;
        assert.deepEqual([pick.id, pick.name, pick.server_name, pick.input], ["toolu_pick", "random_choice", label, { options: ["tea"] }]);
        assert.deepEqual([wait.id, wait.name, wait.server_name, wait.input], ["toolu_wait", "sleep", label, { ms: 10 }]);
        assert.deepEqual([r1.tool_use_id, r1.is_error, r1.content[0].type], ["toolu_pick", false, "text"]);
        assert.match(r1.content[0].text, /tea/);
        assert.equal(r2.tool_use_id, "toolu_wait");
        assert.equal(answer.text, "Tea it is.");
        assert.equal(msg.stop_reason, "end_turn");
        // Usage summed over both rounds: 250 input of which 140 cached.
        assert.equal(msg.usage.input_tokens, 110);
        assert.equal(msg.usage.cache_read_input_tokens, 140);
        assert.equal(msg.usage.output_tokens, 30);
        assert.equal(msg.usage.iterations.length, 2);
        assert.deepEqual(msg.usage.iterations.map((i) => i.type), ["message", "message"]);
        assert.ok(ext, "extension field missing");
        assert.match(ext.request_id, /^req_/);
        assert.equal(ext.tool_rounds, 2);
        assert.deepEqual(ext.tool_calls.map((c) => [c.round, c.id, c.name, c.status]), [
          [0, "toolu_pick", "random_choice", "done"],
          [0, "toolu_wait", "sleep", "done"],
        ]);
      };

      const followUp = async (content, stream) => {
        const body = request({
          messages: [
            { role: "user", content: "pick a drink" },
            { role: "assistant", content },
            { role: "user", content: "and now?" },
          ],
        });
        let msg;
        let ext;
        if (stream) {
          const s = client.beta.messages.stream(body);
          s.on("streamEvent", (ev) => {
            if (ev.type === "message_stop") ext = ev[label];
          });
          msg = await s.finalMessage();
        } else {
          msg = await client.beta.messages.create(body);
          ext = msg[label];
        }
        assert.deepEqual(msg.content.map((b) => [b.type, b.text]), [["text", "Still tea."]]);
        assert.equal(msg.stop_reason, "end_turn");
        assert.equal(ext.tool_rounds, 1);
      };

      test("non-streaming: one message with mcp_tool_use/mcp_tool_result blocks and the answer; the follow-up works", async () => {
        const { data, response } = await client.beta.messages.create(request()).withResponse();
        assert.equal(response.status, 200);
        checkMessage(data);
        await followUp(data.content, false);
      });

      test("message stream helper: the final message is the same; sending it back works", async () => {
        const stream = client.beta.messages.stream(request());
        const blocks = [];
        let stopExt;
        stream.on("contentBlock", (b) => blocks.push(b.type));
        // The helper's message does not keep unknown event fields: the
        // extension field comes with the message_stop event.
        stream.on("streamEvent", (ev) => {
          if (ev.type === "message_stop") stopExt = ev[label];
        });
        const msg = await stream.finalMessage();
        checkMessage(msg, stopExt);
        assert.deepEqual(blocks, msg.content.map((b) => b.type));
        await followUp(msg.content, true);
      });

      test("raw streaming events: one message_start, contiguous indexes, tool uses before results, totals at the end", async () => {
        const stream = await client.beta.messages.create(request({ stream: true }));
        const events = [];
        for await (const ev of stream) events.push(ev);
        const types = events.map((e) => e.type);
        assert.equal(types.filter((t) => t === "message_start").length, 1);
        assert.equal(types[0], "message_start");
        assert.deepEqual(types.slice(-2), ["message_delta", "message_stop"]);
        const starts = events.filter((e) => e.type === "content_block_start");
        assert.deepEqual(starts.map((e) => e.index), starts.map((_, i) => i));
        assert.deepEqual(starts.map((e) => e.content_block.type), ["text", "mcp_tool_use", "mcp_tool_use", "mcp_tool_result", "mcp_tool_result", "text"]);
        for (const s of starts.filter((e) => e.content_block.type === "mcp_tool_use")) assert.deepEqual(s.content_block.input, {});
        assert.match(starts[3].content_block.content[0].text, /tea/);
        const delta = events.at(-2);
        assert.equal(delta.delta.stop_reason, "end_turn");
        assert.equal(delta.usage.output_tokens, 30);
        assert.equal(delta.usage.iterations.length, 2);
        assert.equal(events.at(-1)[label].tool_rounds, 2);
      });

      test("count_tokens counts the hosted tool definitions", async () => {
        const base = { model: "fake-1", messages: [{ role: "user", content: "pick a drink" }], betas: [MCP_BETA] };
        const bare = await client.beta.messages.countTokens(base);
        const { mcp_servers, tools } = request();
        const hosted = await client.beta.messages.countTokens({ ...base, mcp_servers, tools });
        assert.ok(hosted.input_tokens > bare.input_tokens, `${hosted.input_tokens} <= ${bare.input_tokens}`);
      });

      test("a 400 with a machine-readable reason surfaces as the SDK's BadRequestError", async () => {
        const body = request();
        body.mcp_servers = [{ type: "url", url: "https://example.invalid/mcp", name: "other" }];
        await assert.rejects(client.beta.messages.create(body), (err) => {
          assert.ok(err instanceof Anthropic.BadRequestError);
          assert.equal(err.error?.error?.details?.reason, "server_tool_unsupported");
          return true;
        });
      });
    });
  }
}
