// The first hour of a new user, scripted end to end: a fresh clone of this
// repository, `make run` in the background, the MCP Inspector's command line
// against it, `toolhost stdio` started from another directory with nothing
// but what `mcp-config` printed (as Claude Desktop starts it), and the
// README's TypeScript snippet, which must exit on its own.
//
// The clone is of the commit checked out here (uncommitted changes are not
// in it). Its runtimes/ is seeded with the files `make runtimes` already
// fetched and verified here, so the run does not fetch them again; `make run`
// verifies them against runtimes.sha256 as on any start.

import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { once } from "node:events";
import { copyFile, mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { node22Bin, tempDir } from "./lib/server.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const inspector = join(repo, "e2e", "node_modules", ".bin", "mcp-inspector");

let work; // temporary folder holding the clone and the elsewhere folder
let clone;
let makeRun; // the `make run` process group
let makeLog = "";
let mcpURL;

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
}

/** Runs the pinned Inspector CLI with args; resolves {code, stdout, stderr}. */
async function inspectorCLI(args) {
  const child = spawn(node22Bin(), [inspector, "--cli", ...args], { cwd: work, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c) => (stdout += c));
  child.stderr.on("data", (c) => (stderr += c));
  const [code] = await once(child, "exit");
  return { code, stdout, stderr };
}

before(async () => {
  work = await tempDir("toolhost-newcomer-");
  clone = join(work, "toolhost");
  const head = run("git", ["-C", repo, "rev-parse", "HEAD"]).trim();
  run("git", ["clone", "--quiet", "--no-checkout", repo, clone]);
  run("git", ["-C", clone, "checkout", "--quiet", head]);
  await mkdir(join(clone, "runtimes"));
  for (const f of ["python.wasm", "quickjs.wasm"]) {
    await copyFile(join(repo, "runtimes", f), join(clone, "runtimes", f));
  }

  // make run, as the README says, on a free port (the README's 8080 may be
  // taken by another run on this machine).
  makeRun = spawn("make", ["run"], {
    cwd: clone,
    detached: true,
    env: { ...process.env, TOOLHOST_ADDR: "127.0.0.1:0", MAKEFLAGS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const collect = (c) => (makeLog = (makeLog + c).slice(-64 * 1024));
  makeRun.stdout.on("data", collect);
  makeRun.stderr.on("data", collect);
  const deadline = Date.now() + 240_000;
  while (!mcpURL) {
    for (const line of makeLog.split("\n")) {
      try {
        const rec = JSON.parse(line);
        if (rec.msg === "toolhost serving") mcpURL = rec.mcp_url;
      } catch {
        // make's own lines
      }
    }
    if (makeRun.exitCode !== null) throw new Error(`make run exited ${makeRun.exitCode}:\n${makeLog}`);
    if (Date.now() > deadline) throw new Error(`make run did not start serving:\n${makeLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  if (makeRun && makeRun.exitCode === null) {
    process.kill(-makeRun.pid, "SIGINT");
    const timer = setTimeout(() => process.kill(-makeRun.pid, "SIGKILL"), 15_000);
    await once(makeRun, "exit").catch(() => {});
    clearTimeout(timer);
  }
  if (work) await rm(work, { recursive: true, force: true });
});

test("make run says how to connect", () => {
  const serving = makeLog.split("\n").map((l) => { try { return JSON.parse(l); } catch { return null; } }).find((r) => r?.msg === "toolhost serving");
  assert.match(serving.mcp_url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  assert.match(serving.health_url, /^http:\/\/127\.0\.0\.1:\d+\/healthz$/);
  assert.match(serving.auth, /^off/);
});

test("the MCP Inspector CLI lists the tools, finds no schema problem, and calls get_time", async () => {
  const list = await inspectorCLI([mcpURL, "--method", "tools/list", "--strict"]);
  assert.equal(list.code, 0, `tools/list exited ${list.code}\n${list.stderr}`);
  assert.doesNotMatch(list.stderr, /warning|error/i, "the Inspector's --strict check reported a tool schema problem");
  const names = JSON.parse(list.stdout).tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["cancel_job", "fetch_page", "get_character_info", "get_time", "get_variable", "query_memory", "random_choice", "read_result", "roll_dice", "run_code", "set_variable", "wait_job", "web_search"]);

  const call = await inspectorCLI([mcpURL, "--method", "tools/call", "--tool-name", "get_time", "--tool-arg", "timezone=Asia/Tokyo"]);
  assert.equal(call.code, 0, `tools/call exited ${call.code}\n${call.stderr}`);
  const result = JSON.parse(call.stdout);
  assert.equal(result.isError ?? false, false);
  assert.equal(result.structuredContent.timezone, "Asia/Tokyo");
  assert.equal(result.structuredContent.utc_offset, "+09:00");
});

test("toolhost stdio, started elsewhere from mcp-config's output alone, runs Python and JavaScript", async () => {
  // make run's server compiles CPython into the data folder both share;
  // once it is done the stdio server loads the compiled code instead of
  // compiling it a second time beside it.
  const health = mcpURL.replace(/\/mcp$/, "/healthz");
  for (const deadline = Date.now() + 180_000; Date.now() < deadline; ) {
    const body = await (await fetch(health)).json();
    if (body.run_code.python.state !== "loading") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const printed = run(join(clone, "bin", "toolhost"), ["mcp-config"], { cwd: clone, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  const server = JSON.parse(printed).mcpServers.toolhost;
  const elsewhere = join(work, "elsewhere");
  await mkdir(elsewhere);
  // As Claude Desktop: its own working directory, only the configured
  // command and arguments, the SDK's default (minimal) environment.
  const transport = new StdioClientTransport({ command: server.command, args: server.args, cwd: elsewhere, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (c) => (stderr += c));
  const client = new Client({ name: "newcomer", version: "1.0.0" });
  await client.connect(transport);
  try {
    const py = await client.callTool(
      { name: "run_code", arguments: { code: "import sys\nprint(6 * 7, sys.version_info[:2])" } },
      undefined,
      { timeout: 120_000 },
    );
    assert.equal(py.isError ?? false, false, `python: ${JSON.stringify(py)}\n${stderr}`);
    assert.equal(py.structuredContent.stdout, "42 (3, 12)\n");
    const js = await client.callTool({ name: "run_code", arguments: { language: "javascript", code: "[6, 7].reduce((a, b) => a * b)" } });
    assert.equal(js.isError ?? false, false, `javascript: ${JSON.stringify(js)}\n${stderr}`);
    assert.equal(js.structuredContent.result, 42);
  } finally {
    await client.close();
  }
});

test("the README's TypeScript snippet exits 0 on its own", async () => {
  const readme = await readFile(join(clone, "README.md"), "utf8");
  const m = readme.match(/```ts\n([\s\S]*?)```/);
  assert.ok(m, "no ```ts block in the README");
  const base = new URL(mcpURL).host;
  const dir = join(work, "snippet");
  await mkdir(dir);
  await symlink(join(repo, "e2e", "node_modules"), join(dir, "node_modules"));
  const file = join(dir, "snippet.mts");
  await writeFile(file, m[1].replaceAll("127.0.0.1:8080", base));
  const child = spawn(node22Bin(), ["--experimental-strip-types", "--no-warnings", file], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (out += c));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const [code, signal] = await once(child, "exit");
  clearTimeout(timer);
  assert.equal(signal, null, `the snippet did not exit within 30 s (killed):\n${out}`);
  assert.equal(code, 0, out);
  assert.match(out, /timezone: 'Asia\/Shanghai'/);
});
