// MCP client helpers and the builtin-tool checks that every transport must
// pass, written against the official TypeScript SDK client.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export const BUILTINS = ["get_time", "roll_dice", "random_choice"];

/**
 * Connects an SDK client over streamable HTTP. headers are sent with every
 * request (Accept-Language, Authorization); fetch replaces the transport's
 * fetch (to rewrite or observe the wire).
 */
export async function connectHTTP(url, { headers, fetch, name = "toolhost-e2e" } = {}) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: headers ? { headers } : undefined,
    fetch,
  });
  await client.connect(transport);
  return client;
}

/** Spawns `toolhost stdio` through StdioClientTransport and connects. */
export async function connectStdio({ command, args, name = "toolhost-e2e" }) {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StdioClientTransport({ command, args, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (c) => (stderr = (stderr + c.toString()).slice(-16 * 1024)));
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** The text of the first text content block of a tool result. */
export function textOf(result) {
  const block = (result.content ?? []).find((c) => c.type === "text");
  return block ? block.text : "";
}

/**
 * Registers the checks of the builtin tools as subtests of the running test
 * file. getClient returns a connected Client (it is called lazily, after the
 * file's before() hook ran).
 */
export function builtinChecks(getClient) {
  test("tools/list publishes the builtins with annotations and schemas", async () => {
    const { tools } = await getClient().listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of BUILTINS) {
      const tool = byName.get(name);
      assert.ok(tool, `${name} missing from tools/list: ${[...byName.keys()]}`);
      assert.ok(tool.title, `${name} has no title`);
      assert.ok(tool.description.length > 20, `${name} description too short: ${tool.description}`);
      assert.equal(tool.annotations?.readOnlyHint, true, `${name} readOnlyHint`);
      assert.equal(tool.annotations?.openWorldHint, false, `${name} openWorldHint`);
      assert.equal(tool.annotations?.destructiveHint, false, `${name} destructiveHint`);
      assert.equal(tool.inputSchema.type, "object");
      assert.equal(tool.outputSchema?.type, "object", `${name} has no object outputSchema`);
    }
    assert.deepEqual(byName.get("get_time").outputSchema.required.toSorted(), ["time", "timezone", "unix", "utc_offset", "utc_offset_seconds"]);
    assert.deepEqual(byName.get("roll_dice").outputSchema.required.toSorted(), ["results", "sides", "total"]);
    assert.deepEqual(byName.get("random_choice").outputSchema.required.toSorted(), ["choice", "index"]);
    assert.deepEqual(byName.get("random_choice").inputSchema.required, ["options"]);
    assert.equal(byName.get("roll_dice").inputSchema.properties.sides.maximum, 1000);
    // --test-tools publishes sleep as well.
    assert.ok(byName.has("sleep"), "sleep (test tool) missing");
  });

  // callTool validates structuredContent against the listed outputSchema
  // itself, so every successful call below is also a schema check by the SDK.
  test("get_time answers in the asked time zone", async () => {
    const res = await getClient().callTool({ name: "get_time", arguments: { timezone: "Asia/Shanghai" } });
    assert.equal(res.isError ?? false, false, textOf(res));
    const s = res.structuredContent;
    assert.equal(s.timezone, "Asia/Shanghai");
    assert.equal(s.utc_offset, "+08:00");
    assert.equal(s.utc_offset_seconds, 8 * 3600);
    assert.match(s.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+08:00$/);
    assert.equal(Math.floor(Date.parse(s.time) / 1000), s.unix);
    // The server's clock is this machine's clock.
    assert.ok(Math.abs(s.unix - Date.now() / 1000) < 300, `unix ${s.unix} far from now`);
    assert.ok(textOf(res).includes("Asia/Shanghai"), textOf(res));
  });

  test("get_time defaults to UTC", async () => {
    const res = await getClient().callTool({ name: "get_time", arguments: {} });
    assert.equal(res.isError ?? false, false, textOf(res));
    assert.equal(res.structuredContent.timezone, "UTC");
    assert.equal(res.structuredContent.utc_offset_seconds, 0);
  });

  test("roll_dice returns count results within sides and their total", async () => {
    const res = await getClient().callTool({ name: "roll_dice", arguments: { sides: 20, count: 3 } });
    assert.equal(res.isError ?? false, false, textOf(res));
    const { sides, results, total } = res.structuredContent;
    assert.equal(sides, 20);
    assert.equal(results.length, 3);
    for (const r of results) assert.ok(Number.isInteger(r) && r >= 1 && r <= 20, `result ${r} outside 1..20`);
    assert.equal(total, results.reduce((a, b) => a + b, 0));
  });

  test("roll_dice defaults to one six-sided die", async () => {
    const res = await getClient().callTool({ name: "roll_dice", arguments: {} });
    assert.equal(res.isError ?? false, false, textOf(res));
    assert.equal(res.structuredContent.sides, 6);
    assert.equal(res.structuredContent.results.length, 1);
  });

  test("random_choice picks one of the options and says which", async () => {
    const options = ["red", "green", "blue", "紫"];
    const res = await getClient().callTool({ name: "random_choice", arguments: { options } });
    assert.equal(res.isError ?? false, false, textOf(res));
    const { choice, index } = res.structuredContent;
    assert.ok(Number.isInteger(index) && index >= 0 && index < options.length, `index ${index}`);
    assert.equal(choice, options[index]);
  });

  const badCalls = [
    { name: "roll_dice", arguments: { sides: 1 }, code: "invalid_arguments", want: [/sides/, /minimum/] },
    { name: "roll_dice", arguments: { sides: 1001 }, code: "invalid_arguments", want: [/sides/, /maximum/] },
    { name: "roll_dice", arguments: { sides: "six" }, code: "invalid_arguments", want: [/sides/] },
    { name: "roll_dice", arguments: { faces: 6 }, code: "invalid_arguments", want: [/faces/] },
    { name: "get_time", arguments: { timezone: "Mars/Base" }, code: "unknown_timezone", want: [/Mars\/Base/] },
    { name: "random_choice", arguments: {}, code: "invalid_arguments", want: [/options/] },
    { name: "random_choice", arguments: { options: [] }, code: "invalid_arguments", want: [/options/] },
  ];
  for (const bad of badCalls) {
    test(`bad arguments are an isError result: ${bad.name} ${JSON.stringify(bad.arguments)}`, async () => {
      const res = await getClient().callTool({ name: bad.name, arguments: bad.arguments });
      assert.equal(res.isError, true, `expected isError, got ${JSON.stringify(res)}`);
      for (const re of bad.want) assert.match(textOf(res), re);
      assert.equal(res._meta?.["toolhost/error"]?.code, bad.code, JSON.stringify(res._meta));
    });
  }

  test("an unknown tool is refused with its name in the error", async () => {
    await assert.rejects(getClient().callTool({ name: "no_such_tool", arguments: {} }), /no_such_tool/);
  });

  test("progress notifications arrive for a call with a progress token", async () => {
    const client = getClient();
    // What reaches the transport, in arrival order: the server must send
    // every step, for the client's token, before the result.
    const wire = [];
    const transport = client.transport;
    const onmessage = transport.onmessage;
    transport.onmessage = (msg, extra) => {
      if (msg.method === "notifications/progress") wire.push({ token: msg.params.progressToken, progress: msg.params.progress, total: msg.params.total, message: msg.params.message });
      else if (msg.id !== undefined && (msg.result || msg.error)) wire.push({ response: msg.id });
      onmessage(msg, extra);
    };
    const seen = [];
    let res;
    try {
      res = await client.callTool({ name: "sleep", arguments: { ms: 300, steps: 3 } }, undefined, {
        onprogress: (p) => seen.push({ progress: p.progress, total: p.total, message: p.message }),
      });
    } finally {
      transport.onmessage = onmessage;
    }
    assert.equal(res.isError ?? false, false, textOf(res));
    const steps = [1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i} of 3` }));
    assert.equal(wire.length, 4, JSON.stringify(wire));
    const token = wire[0].token;
    assert.deepEqual(wire, [...steps.map((s) => ({ token, ...s })), { response: token }]);
    // The SDK hands notifications to onprogress a microtask later than it
    // settles responses, so a last step that arrives in the same read as
    // the result can be dropped on the client side (typescript-sdk issue
    // 2580: "_onprogress raises a protocol error for a race servers cannot
    // avoid"). Steps 1 and 2 are 100 ms ahead of the result and must arrive.
    assert.ok(seen.length >= 2, `onprogress saw ${JSON.stringify(seen)}`);
    assert.deepEqual(seen, steps.slice(0, seen.length));
  });

  test("a cancelled call stops the tool and the server keeps serving", async () => {
    const client = getClient();
    const ac = new AbortController();
    let started;
    const running = new Promise((r) => (started = r));
    // 100 steps of 1.2 s: the first progress notification says it runs.
    const call = client.callTool({ name: "sleep", arguments: { ms: 120000, steps: 100 } }, undefined, {
      signal: ac.signal,
      onprogress: () => started(),
      timeout: 180000,
    });
    call.catch(() => {}); // observed below
    await Promise.race([
      running, // the tool is running: it reported its first step
      call.then((r) => assert.fail(`the call ended before it was cancelled: ${JSON.stringify(r)}`)),
    ]);
    ac.abort("test cancels");
    await assert.rejects(call);
    // The cancellation reaches the tool's context: a fresh sleep call soon
    // sees itself as the only sleep in flight. Bounded polling, no timing.
    let inFlight;
    for (let i = 0; i < 200; i++) {
      const res = await client.callTool({ name: "sleep", arguments: { ms: 20, steps: 1 } });
      assert.equal(res.isError ?? false, false, textOf(res));
      inFlight = res.structuredContent.in_flight;
      if (inFlight === 1) break;
    }
    assert.equal(inFlight, 1, "the cancelled sleep is still running");
    const res = await client.callTool({ name: "get_time", arguments: {} });
    assert.equal(res.isError ?? false, false);
  });
}
