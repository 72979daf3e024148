// Approvals of hosted calls on the three /v1 formats, through the official
// clients: the openai client on /v1/responses (mcp_approval_request and
// mcp_approval_response items, in the SDK's documented shapes) and on
// /v1/chat/completions, the anthropic client on /v1/messages (both with
// the extension field's approval_requests and approvals). A call that
// needs approval does not run and the response ends; the journal
// (GET /tool-executions) and what the scripted model was sent
// (server/v1/fakeupstream, GET /v1/requests) agree. Approving runs exactly
// that call once, linked to its approval; declining tells the model, which
// answers; a changed argument is refused; streaming too.
//
// random_choice asks because the requests say require_approval "always";
// roll_dice (Messages, which has no require_approval) because the config
// says tools.require_approval.roll_dice = "always".

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const label = "toolhost";
const ANSWER = "Tea it is.";
const MCP_BETA = "mcp-client-2025-11-20";

// Each scenario is its own conversation ("[key]" in the user message): the
// model asks for one call, then answers. A Messages continuation that
// sends the paused turn back reaches the third round.
const keys = [
  "r-approve", "r-decline", "r-tamper", "r-stream", "r-names", "r-typed",
  "c-approve", "c-decline", "c-stream",
  "m-approve", "m-decline", "m-stream",
];
const callOf = (key) => key.startsWith("m-")
  ? { id: `toolu_${key.replace("-", "_")}`, name: "roll_dice", arguments: `{"sides":6}` }
  : { id: `call_${key.replace("-", "_")}`, name: "random_choice", arguments: `{"options":["tea"]}` };
const script = {
  conversations: [{ match: "[r-later]", rounds: [{ content: ANSWER }] }, ...keys.map((key) => ({
    match: `[${key}]`,
    rounds: [
      key === "r-names"
        ? { tool_calls: [callOf(key), { id: "call_r_names_time", name: "get_time", arguments: `{"timezone":"UTC"}` }] }
        : { tool_calls: [callOf(key)] },
      { content: ANSWER },
      { content: ANSWER },
    ],
  }))],
};

let work;
let fake;
let fakeURL;
let server;
let openai;
let anthropic;

before(async () => {
  work = await tempDir("toolhost-approvals-");
  fake = await startFakeUpstream(script, { dir: work });
  fakeURL = fake.url;
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({
    tools: { require_approval: { roll_dice: "always" } },
    hosted: {
      label,
      routes: [{ name: "fake", protocol: "openai", base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY", models: ["fake-*"], supports_tools: true }],
    },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
  const headers = { "Accept-Language": "en" };
  openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0, defaultHeaders: headers });
  anthropic = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0, defaultHeaders: headers });
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

/** What the model was sent in the conversation of key. */
async function upstream(key) {
  const all = await fake.requests();
  return all.filter((body) => JSON.stringify(body.messages).includes(`[${key}]`));
}

/** The last tool result the model read in the conversation of key. */
async function lastToolResult(key) {
  const reqs = await upstream(key);
  const tools = reqs.at(-1).messages.filter((m) => m.role === "tool");
  return tools.at(-1)?.content ?? "";
}

/** The journal records of one request. */
async function journal(requestID) {
  const { data } = await getJSON(`${server.base}/tool-executions?floor_id=${encodeURIComponent(requestID)}&limit=100`);
  return data;
}

/** The approval as the REST API shows it. */
const approvalOf = async (id) => (await getJSON(`${server.base}/approvals/${id}`)).data;

/**
 * The paused request: nothing ran (the journal holds the refused call, with
 * the approval id in its error), the model was asked once.
 */
async function checkPaused(key, ext, approvalID, tool) {
  assert.equal((await upstream(key)).length, 1, "the model was called again before the approval");
  const recs = await journal(ext.request_id);
  assert.deepEqual(recs.map((r) => [r.tool_name, r.status, r.error_code]), [[tool, "denied", "approval_required"]]);
  assert.equal(recs[0].result?.error?.approval_id, approvalID, JSON.stringify(recs[0]));
  const a = await approvalOf(approvalID);
  assert.deepEqual([a.status, a.tool_name], ["pending", tool]);
}

/**
 * The approved request: exactly one successful call, run under the
 * approval (its prepared event names it), the model read its result and
 * answered; the approval is consumed, decided through the face.
 */
async function checkApproved(key, ext, approvalID, tool, via) {
  const recs = await journal(ext.request_id);
  assert.deepEqual(recs.map((r) => [r.tool_name, r.status]), [[tool, "success"]]);
  const { data: events } = await getJSON(`${server.base}/tool-executions/${recs[0].id}/events`);
  const prepared = events.find((e) => e.state === "prepared");
  assert.equal(prepared?.detail?.confirmation?.approval_id, approvalID, JSON.stringify(events));
  const a = await approvalOf(approvalID);
  assert.deepEqual([a.status, a.decided_via], ["consumed", via]);
  const reqs = await upstream(key);
  assert.equal(reqs.length, 2);
  assert.ok(!(await lastToolResult(key)).startsWith("[tool error]"));
}

const responsesTools = (policy = "always") => [{ type: "mcp", server_label: label, allowed_tools: ["random_choice", "get_time"], require_approval: policy }];

describe("openai client's own types, /v1/responses", () => {
  test("the approval round trip compiles without casts under tsc --strict and runs", async () => {
    const typed = join(here, "typed");
    const out = join(typed, "build");
    await rm(out, { recursive: true, force: true });
    const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
    await promisify(execFile)(process.execPath, [tsc, "-p", join(typed, "tsconfig.json"), "--outDir", out])
      .catch((err) => assert.fail(`tsc: ${err.stdout}${err.stderr}`));
    const { askThenApprove } = await import(join(out, "responses-approval.js"));
    const got = await askThenApprove(openai, "fake-1", "[r-typed] pick a drink", label, "random_choice");
    assert.match(got.requestID, /^apr_[0-9a-f]{24}$/);
    assert.deepEqual([got.call.approval_request_id, got.call.name, got.call.status], [got.requestID, "random_choice", "completed"]);
    assert.equal(got.text, ANSWER);
    const a = await approvalOf(got.requestID);
    assert.deepEqual([a.status, a.decided_via, a.reason], ["consumed", "v1_responses", "typed and approved"]);
  });
});

describe("openai client, /v1/responses", () => {
  const first = (key, extra = {}) => openai.responses.create({ model: "fake-1", input: `[${key}] pick a drink`, tools: responsesTools(), ...extra });

  /** The continuation: the paused output sent back, with the answer. */
  const answer = (key, paused, approve, extra = {}) => openai.responses.create({
    model: "fake-1",
    tools: responsesTools(),
    input: [
      { role: "user", content: `[${key}] pick a drink` },
      ...paused.output,
      { type: "mcp_approval_response", approval_request_id: paused.output.at(-1).id, approve, reason: approve ? null : "not now" },
    ],
    ...extra,
  });

  test(`"always": an mcp_approval_request ends the response; approving runs the call once`, async () => {
    const paused = await first("r-approve");
    assert.deepEqual(paused.output.map((i) => i.type), ["mcp_list_tools", "mcp_approval_request"]);
    const req = paused.output[1];
    assert.deepEqual([req.server_label, req.name, JSON.parse(req.arguments)], [label, "random_choice", { options: ["tea"] }]);
    assert.match(req.id, /^apr_[0-9a-f]{24}$/);
    assert.equal(paused.status, "completed");
    await checkPaused("r-approve", paused[label], req.id, "random_choice");

    const done = await answer("r-approve", paused, true);
    assert.deepEqual(done.output.map((i) => i.type), ["mcp_list_tools", "mcp_call", "message"]);
    const call = done.output[1];
    assert.equal(call.approval_request_id, req.id);
    assert.deepEqual([call.name, call.status, call.arguments], ["random_choice", "completed", req.arguments]);
    assert.match(call.output, /tea/);
    assert.equal(done.output_text, ANSWER);
    await checkApproved("r-approve", done[label], req.id, "random_choice", "v1_responses");

    // The whole conversation sent back later runs nothing again.
    const later = await openai.responses.create({
      model: "fake-1", tools: responsesTools(),
      input: [{ role: "user", content: "[r-approve] pick a drink" }, ...paused.output,
        { type: "mcp_approval_response", approval_request_id: req.id, approve: true }, ...done.output,
        { role: "user", content: "[r-later] thanks" }],
    });
    assert.equal(later.output_text, ANSWER);
    assert.deepEqual(await journal(later[label].request_id), []);
    const [sent] = await upstream("r-later");
    const results = sent.messages.filter((m) => m.role === "tool");
    assert.equal(results.length, 1, "the approved call once in the history");
    assert.match(results[0].content, /tea/);
    // The same answer once more is refused: the approval ran its call.
    await assert.rejects(answer("r-approve", paused, true), (err) => err instanceof OpenAI.ConflictError && err.code === "approval_not_pending");
  });

  test("declining tells the model, which answers; nothing runs", async () => {
    const paused = await first("r-decline");
    const id = paused.output.at(-1).id;
    const done = await answer("r-decline", paused, false);
    assert.deepEqual(done.output.map((i) => i.type), ["mcp_list_tools", "message"]);
    assert.equal(done.output_text, ANSWER);
    assert.match(await lastToolResult("r-decline"), /approval_declined: the user declined random_choice \(approval apr_[0-9a-f]{24}\); it did not run: not now/);
    assert.deepEqual(await journal(done[label].request_id), []);
    assert.equal((await approvalOf(id)).status, "declined");
  });

  test("an approval sent back with changed arguments is refused, nothing runs", async () => {
    const paused = await first("r-tamper");
    const req = paused.output.at(-1);
    const tampered = { ...paused, output: [paused.output[0], { ...req, arguments: `{"options":["whisky"]}` }] };
    await assert.rejects(answer("r-tamper", tampered, true),
      (err) => err instanceof OpenAI.BadRequestError && err.code === "approval_request_mismatch");
    assert.equal((await upstream("r-tamper")).length, 1);
    assert.equal((await approvalOf(req.id)).status, "pending");
  });

  test("streaming: the approval request's item events, then the approved call's mcp_call events", async () => {
    const events = [];
    for await (const ev of await first("r-stream", { stream: true })) events.push(ev);
    const added = events.filter((e) => e.type === "response.output_item.added").map((e) => e.item.type);
    assert.deepEqual(added, ["mcp_list_tools", "mcp_approval_request"]);
    const doneItem = events.find((e) => e.type === "response.output_item.done" && e.item.type === "mcp_approval_request").item;
    const paused = events.at(-1).response;
    assert.equal(events.at(-1).type, "response.completed");
    assert.deepEqual(paused.output.at(-1), doneItem);
    await checkPaused("r-stream", events.at(-1)[label], doneItem.id, "random_choice");

    const types = [];
    let final;
    for await (const ev of await answer("r-stream", paused, true, { stream: true })) {
      types.push(ev.type);
      if (ev.type === "response.completed") final = ev;
    }
    const mcp = types.filter((t) => t.startsWith("response.mcp_call"));
    assert.deepEqual(mcp, ["response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.completed"]);
    const call = final.response.output.find((i) => i.type === "mcp_call");
    assert.equal(call.approval_request_id, doneItem.id);
    await checkApproved("r-stream", final[label], doneItem.id, "random_choice", "v1_responses");
  });

  test(`{"never": {"tool_names": [...]}}: the named tool runs, the other asks`, async () => {
    const paused = await openai.responses.create({
      model: "fake-1", input: "[r-names] pick a drink and tell the time",
      tools: responsesTools({ never: { tool_names: ["get_time"] } }),
    });
    const types = paused.output.map((i) => `${i.type}:${i.name ?? ""}`);
    assert.deepEqual(types, ["mcp_list_tools:", "mcp_approval_request:random_choice", "mcp_call:get_time"]);
    const recs = await journal(paused[label].request_id);
    assert.deepEqual(recs.map((r) => [r.tool_name, r.status]).toSorted(), [["get_time", "success"], ["random_choice", "denied"]]);

    // {"always": {"tool_names": ["get_time"]}} with random_choice under never.
    const other = await openai.responses.create({
      model: "fake-1", input: "[r-names] pick a drink and tell the time",
      tools: responsesTools({ always: { tool_names: ["get_time"] }, never: { tool_names: ["random_choice"] } }),
    });
    assert.deepEqual(other.output.map((i) => `${i.type}:${i.name ?? ""}`), ["mcp_list_tools:", "mcp_call:random_choice", "mcp_approval_request:get_time"]);
  });
});

describe("openai client, /v1/chat/completions", () => {
  const decl = [{ type: "mcp", server_label: label, allowed_tools: ["random_choice"], require_approval: "always" }];
  const first = (key, extra = {}) => openai.chat.completions.create({ model: "fake-1", messages: [{ role: "user", content: `[${key}] pick a drink` }], tools: decl, ...extra });
  const answer = (key, paused, id, approve, extra = {}) => openai.chat.completions.create({
    model: "fake-1",
    tools: decl,
    messages: [{ role: "user", content: `[${key}] pick a drink` }, paused],
    [label]: { approvals: [{ approval_request_id: id, approve, reason: approve ? "fine" : "not now" }] },
    ...extra,
  });

  test("the round ends with approval_requests; approving runs the call once", async () => {
    const paused = await first("c-approve");
    assert.equal(paused.choices[0].finish_reason, "stop");
    const [req] = paused[label].approval_requests;
    assert.deepEqual([req.server_label, req.name, JSON.parse(req.arguments)], [label, "random_choice", { options: ["tea"] }]);
    await checkPaused("c-approve", paused[label], req.id, "random_choice");
    const done = await answer("c-approve", paused.choices[0].message, req.id, true);
    assert.equal(done.choices[0].message.content, ANSWER);
    assert.equal(done[label].approval_requests, undefined);
    await checkApproved("c-approve", done[label], req.id, "random_choice", "v1_chat_completions");
    // Chat Completions sends no arguments back: the call is the approval's.
    // The same answer once more is refused: the approval ran its call.
    await assert.rejects(answer("c-approve", paused.choices[0].message, req.id, true),
      (err) => err instanceof OpenAI.ConflictError && err.code === "approval_not_pending");
  });

  test("declining tells the model, which answers", async () => {
    const paused = await first("c-decline");
    const [req] = paused[label].approval_requests;
    const done = await answer("c-decline", paused.choices[0].message, req.id, false);
    assert.equal(done.choices[0].message.content, ANSWER);
    assert.match(await lastToolResult("c-decline"), /approval_declined: .*not now/);
    assert.deepEqual(await journal(done[label].request_id), []);
  });

  test("streaming: approval_requests in the closing extension chunk", async () => {
    let ext;
    let message = { role: "assistant", content: "" };
    for await (const chunk of await first("c-stream", { stream: true })) {
      for (const ch of chunk.choices) message.content += ch.delta.content ?? "";
      if (chunk[label] && !chunk[label].tool) ext = chunk[label];
    }
    const [req] = ext.approval_requests;
    await checkPaused("c-stream", ext, req.id, "random_choice");
    let text = "";
    let done;
    for await (const chunk of await answer("c-stream", message, req.id, true, { stream: true })) {
      for (const ch of chunk.choices) text += ch.delta.content ?? "";
      if (chunk[label] && !chunk[label].tool) done = chunk[label];
    }
    assert.equal(text, ANSWER);
    await checkApproved("c-stream", done, req.id, "random_choice", "v1_chat_completions");
  });
});

describe("anthropic client, /v1/messages", () => {
  const base = (key) => ({
    model: "fake-1",
    max_tokens: 512,
    betas: [MCP_BETA],
    mcp_servers: [{ type: "url", url: "https://example.invalid/mcp", name: label }],
    tools: [{ type: "mcp_toolset", mcp_server_name: label, default_config: { enabled: false }, configs: { roll_dice: { enabled: true } } }],
    messages: [{ role: "user", content: `[${key}] roll a die` }],
  });
  const answer = (key, paused, id, approve, extra = {}) => {
    const b = base(key);
    return anthropic.beta.messages.create({
      ...b,
      messages: [...b.messages, { role: "assistant", content: paused.content }],
      [label]: { approvals: [{ approval_request_id: id, approve }] },
      ...extra,
    });
  };

  test("pause_turn with approval_requests; approving runs the call once", async () => {
    const paused = await anthropic.beta.messages.create(base("m-approve"));
    assert.equal(paused.stop_reason, "pause_turn");
    const [req] = paused[label].approval_requests;
    assert.deepEqual([req.name, JSON.parse(req.arguments)], ["roll_dice", { count: 1, sides: 6 }]);
    assert.deepEqual(paused.content.map((b) => [b.type, b.is_error ?? null]), [["mcp_tool_use", null], ["mcp_tool_result", true]]);
    await checkPaused("m-approve", paused[label], req.id, "roll_dice");
    const done = await answer("m-approve", paused, req.id, true);
    assert.equal(done.stop_reason, "end_turn");
    assert.deepEqual(done.content.map((b) => b.type), ["mcp_tool_use", "mcp_tool_result", "text"]);
    assert.equal(done.content[2].text, ANSWER);
    const recs = await journal(done[label].request_id);
    assert.deepEqual(recs.map((r) => [r.tool_name, r.status]), [["roll_dice", "success"]]);
    const a = await approvalOf(req.id);
    assert.deepEqual([a.status, a.decided_via], ["consumed", "v1_messages"]);
    await assert.rejects(answer("m-approve", paused, req.id, true),
      (err) => err instanceof Anthropic.ConflictError && err.error?.error?.code === "approval_not_pending");
    assert.equal((await journal(done[label].request_id)).length, 1);
  });

  test("declining tells the model, which answers", async () => {
    const paused = await anthropic.beta.messages.create(base("m-decline"));
    const [req] = paused[label].approval_requests;
    const done = await answer("m-decline", paused, req.id, false);
    assert.equal(done.content.at(-1).text, ANSWER);
    assert.match(await lastToolResult("m-decline"), /approval_declined: the user declined roll_dice/);
    assert.deepEqual(await journal(done[label].request_id), []);
  });

  test("streaming: message_delta says pause_turn, message_stop carries approval_requests", async () => {
    const s = anthropic.beta.messages.stream(base("m-stream"));
    let stop;
    s.on("streamEvent", (ev) => {
      if (ev.type === "message_stop") stop = ev;
    });
    const paused = await s.finalMessage();
    assert.equal(paused.stop_reason, "pause_turn");
    const [req] = stop[label].approval_requests;
    await checkPaused("m-stream", stop[label], req.id, "roll_dice");
    const s2 = anthropic.beta.messages.stream({ ...base("m-stream"),
      messages: [...base("m-stream").messages, { role: "assistant", content: paused.content }],
      [label]: { approvals: [{ approval_request_id: req.id, approve: true }] } });
    const done = await s2.finalMessage();
    assert.equal(done.content.at(-1).text, ANSWER);
    assert.equal((await approvalOf(req.id)).status, "consumed");
  });
});
