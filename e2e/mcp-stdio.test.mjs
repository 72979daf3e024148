// The official TypeScript MCP SDK client against `toolhost stdio` over
// StdioClientTransport (the way Claude Desktop runs it).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { stdioCommand } from "./lib/server.mjs";
import { builtinChecks, connectStdio } from "./lib/mcp.mjs";

let cmd;
let conn;

before(async () => {
  cmd = await stdioCommand();
  conn = await connectStdio(cmd);
});

after(async () => {
  await conn?.client.close();
  await cmd?.cleanup();
});

builtinChecks(() => conn.client);

test("stdio publishes English by default and Chinese with --lang zh", async (t) => {
  const zhCmd = await stdioCommand(["--lang", "zh"]);
  t.after(() => zhCmd.cleanup());
  const zh = await connectStdio(zhCmd);
  t.after(() => zh.client.close());
  const han = /\p{Script=Han}/u;
  const en = new Map((await conn.client.listTools()).tools.map((tool) => [tool.name, tool]));
  for (const tool of (await zh.client.listTools()).tools) {
    if (tool.name === "sleep" || en.get(tool.name) === undefined) continue;
    assert.match(tool.description, han, `${tool.name} zh description`);
    assert.doesNotMatch(en.get(tool.name).description, han, `${tool.name} en description`);
  }
});

test("stdout carries only the protocol: logs stay on stderr", async () => {
  // A stray log line on stdout would have broken every call above; this
  // checks the server is still answering after them.
  const res = await conn.client.ping();
  assert.deepEqual(res, {});
});
