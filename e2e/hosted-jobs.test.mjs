// A background job inside a hosted /v1 loop, with the openai SDK against
// `toolhost serve` and the fake upstream: the account's remote MCP server
// (the go-sdk test server) has its `add` tool deferred by override
// (default_delivery_mode async_job). The scripted model calls it and reads
// the receipt; from the next round on the loop offers wait_job and
// cancel_job; the model calls wait_job with the execution id the receipt
// gave (copied from the tool message, as a model would), reads the result
// and answers. The journal shows the call as an async_job with its
// runtime_job_id, ended success, and wait_job beside it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFile, rm } from "node:fs/promises";
import { join, dirname } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startServer, freePort, tempDir, toolhostBin } from "./lib/server.mjs";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";

let server;
let work;
let fake;
let goServer;
let openai;

const script = {
  conversations: [
    {
      match: "add in the background",
      rounds: [
        { tool_calls: [{ id: "call_add", name: "gotest__add", arguments: '{"a":2,"b":3}' }] },
        { tool_calls: [{ id: "call_wait", name: "wait_job", arguments_from: '(\\{"execution_id":"[0-9a-f-]{36}"\\})' }] },
        { content: "2 + 3 = 5, worked out in the background." },
      ],
    },
  ],
};

async function startGo(port) {
  const proc = spawn(join(dirname(toolhostBin()), "mcp-testserver"), ["-addr", `127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  await new Promise((resolve, reject) => {
    const onData = (c) => {
      out += c.toString();
      if (/listening on/.test(out)) resolve();
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", onData);
    proc.once("exit", (code) => reject(new Error(`mcp-testserver exited (${code}): ${out}`)));
  });
  proc.removeAllListeners("exit");
  return proc;
}

before(async () => {
  work = await tempDir("toolhost-hosted-jobs-");
  const goPort = await freePort();
  goServer = await startGo(goPort);
  fake = await startFakeUpstream(script, { dir: work });
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"] },
    hosted: { routes: [{ name: "fake", protocol: "openai", base_url: fake.url, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }] },
  }));
  server = await startServer({ args: ["--config", config], env: { TOOLHOST_SECRET_KEY: Buffer.alloc(32, 9).toString("base64"), FAKE_UPSTREAM_KEY: "sk-fake" } });
  const reg = await fetch(`${server.base}/mcp-servers`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      name: "gotest", url: `http://127.0.0.1:${goPort}/mcp`,
      tools: { add: { side_effect_level: "none", async_capability: "deferred_ok", default_delivery_mode: "async_job" } },
    }),
  });
  assert.equal(reg.status, 201, await reg.text());
  openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "unused-in-dev", maxRetries: 0 });
});

after(async () => {
  await server?.stop();
  await fake?.stop();
  if (goServer && goServer.exitCode === null) {
    goServer.kill("SIGTERM");
    await once(goServer, "exit");
  }
  if (work) await rm(work, { recursive: true, force: true });
});

test("the model starts a background job, waits for it with wait_job and answers with its result", async () => {
  const res = await openai.chat.completions.create({
    model: "fake-1",
    messages: [{ role: "user", content: "Please add in the background: 2 and 3." }],
    tools: [{ type: "mcp", server_label: "toolhost", allowed_tools: ["gotest__add"], require_approval: "never" }],
  });
  assert.equal(res.choices[0].message.content, "2 + 3 = 5, worked out in the background.");
  const calls = res.toolhost.tool_calls;
  assert.deepEqual(calls.map((c) => c.name), ["gotest__add", "wait_job"], JSON.stringify(calls));

  const sent = await fake.requests();
  assert.equal(sent.length, 3);
  // Round 1 declares only what the request enabled; wait_job and
  // cancel_job are offered once a call came back as a receipt.
  const names = (r) => r.tools.map((t) => t.function.name).sort();
  assert.deepEqual(names(sent[0]), ["gotest__add"]);
  assert.deepEqual(names(sent[1]), ["cancel_job", "gotest__add", "wait_job"]);
  const receipt = sent[1].messages.at(-1).content;
  const id = receipt.match(/"execution_id":"([0-9a-f-]{36})"/)[1];
  assert.match(receipt, /runs in the background as job/);
  const waited = sent[2].messages.at(-1).content;
  assert.match(waited, /success/);
  assert.match(waited, /5/);

  const j = await fetch(`${server.base}/tool-executions/${id}`).then((r) => r.json());
  assert.equal(j.data.delivery_mode, "async_job", JSON.stringify(j.data));
  assert.equal(j.data.result_visibility, "deferred_receipt");
  assert.match(String(j.data.runtime_job_id), /\S/);
  assert.equal(j.data.status, "success");
  assert.equal(j.data.tool_name, "gotest__add");
});
