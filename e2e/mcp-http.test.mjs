// The official TypeScript MCP SDK client against `toolhost serve --dev` over
// streamable HTTP (StreamableHTTPClientTransport).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startServer } from "./lib/server.mjs";
import { builtinChecks, connectHTTP, textOf } from "./lib/mcp.mjs";

let server;
let client;

before(async () => {
  server = await startServer();
  client = await connectHTTP(server.mcpURL);
});

after(async () => {
  await client?.close();
  await server?.stop();
});

builtinChecks(() => client);

// withoutDescriptions is a JSON Schema with every "description" left out.
const withoutDescriptions = (schema) =>
  JSON.parse(JSON.stringify(schema ?? null, (key, value) => (key === "description" ? undefined : value)));

test("tools/list follows Accept-Language: zh gives Chinese, en English, none English", async (t) => {
  const list = async (headers) => {
    const c = await connectHTTP(server.mcpURL, { headers });
    t.after(() => c.close());
    const { tools } = await c.listTools();
    return new Map(tools.map((tool) => [tool.name, tool]));
  };
  const zh = await list({ "Accept-Language": "zh-CN,zh;q=0.9" });
  const en = await list({ "Accept-Language": "en-US,en;q=0.9" });
  const none = await list(undefined); // Node's fetch sends "*": no preference
  const han = /\p{Script=Han}/u;
  for (const name of ["get_time", "roll_dice", "random_choice"]) {
    assert.match(zh.get(name).description, han, `${name} zh description`);
    assert.match(zh.get(name).title, han, `${name} zh title`);
    assert.doesNotMatch(en.get(name).description, han, `${name} en description`);
    assert.doesNotMatch(en.get(name).title, han, `${name} en title`);
    assert.equal(none.get(name).description, en.get(name).description, `${name} without preference`);
    // Only the text changes with the language, never the contract: the
    // schemas are the same once their descriptions are set aside, and the
    // parameters' descriptions are in the caller's language too.
    assert.deepEqual(withoutDescriptions(zh.get(name).inputSchema), withoutDescriptions(en.get(name).inputSchema));
    assert.deepEqual(withoutDescriptions(zh.get(name).outputSchema), withoutDescriptions(en.get(name).outputSchema));
    for (const [param, schema] of Object.entries(zh.get(name).inputSchema.properties)) {
      assert.match(schema.description, han, `${name}.${param} zh description`);
      assert.doesNotMatch(en.get(name).inputSchema.properties[param].description, han, `${name}.${param} en description`);
    }
  }
});

test("a duplicate key on the wire is an isError result naming the key", async (t) => {
  // A JavaScript object cannot hold a key twice, so the client's request body
  // is rewritten on its way out: the server sees {"sides":20,"sides":6}.
  const marker = '"arguments":{"sides":20,"count":2}';
  let rewritten = 0;
  const c = await connectHTTP(server.mcpURL, {
    fetch: (url, init) => {
      if (typeof init?.body === "string" && init.body.includes(marker)) {
        rewritten++;
        init = { ...init, body: init.body.replace(marker, '"arguments":{"sides":20,"sides":6}') };
      }
      return fetch(url, init);
    },
  });
  t.after(() => c.close());
  const res = await c.callTool({ name: "roll_dice", arguments: { sides: 20, count: 2 } });
  assert.equal(rewritten, 1);
  assert.equal(res.isError, true, JSON.stringify(res));
  assert.match(textOf(res), /duplicate key "sides"/);
  assert.equal(res._meta?.["toolhost/error"]?.code, "invalid_arguments_json");
});

test("eight clients with their own sessions call concurrently", async (t) => {
  const clients = await Promise.all(Array.from({ length: 8 }, (_, i) => connectHTTP(server.mcpURL, { name: `c${i}` })));
  t.after(() => Promise.all(clients.map((c) => c.close())));
  const results = await Promise.all(
    clients.flatMap((c) => [
      c.callTool({ name: "roll_dice", arguments: { sides: 100, count: 5 } }),
      c.callTool({ name: "sleep", arguments: { ms: 50, steps: 1 } }),
    ]),
  );
  for (const res of results) assert.equal(res.isError ?? false, false, textOf(res));
});

test("the server is still healthy after the suite", async () => {
  const res = await fetch(`${server.base}/healthz`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.status, "ok");
  assert.ok(body.version);
  // run_code's runtimes and warm pools, for operators and the load command.
  for (const lang of ["python", "javascript"]) {
    const st = body.run_code?.[lang];
    assert.ok(st, `no run_code.${lang} in ${JSON.stringify(body)}`);
    assert.ok(["idle", "loading", "ready", "unavailable"].includes(st.state), JSON.stringify(st));
    // pool is the current aim (it follows demand), pool_most the bound by
    // memory: what waits never passes the bound.
    assert.ok(Number.isInteger(st.warm) && Number.isInteger(st.pool) && Number.isInteger(st.pool_most) &&
      st.warm <= st.pool_most && st.pool <= st.pool_most, JSON.stringify(st));
  }
});
