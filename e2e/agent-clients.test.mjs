// The agents people point at /v1, pinned from npm, against `toolhost serve`
// and the scripted fake upstream (server/v1/fakeupstream): Codex CLI
// (`codex exec`, a model provider with wire_api "responses"), Claude Code
// (`claude -p`, ANTHROPIC_BASE_URL) on an Anthropic and on an OpenAI
// route, and the OpenAI Agents SDK with hostedMcpTool.
//
// The clients talk to loopback only: their proxies point at a closed
// loopback port (NO_PROXY lets loopback through), their update checks,
// telemetry and error reports are switched off, and their homes are
// temporary directories. Web search is served by toolhost's web_search
// over a SearXNG-format fixture on 127.0.0.1. A recording proxy in front of
// toolhost keeps what Codex was sent, so the url_citation it got is
// checked on the wire.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { Agent, run, hostedMcpTool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startFakeUpstream } from "./lib/fakeupstream.mjs";
import { node22Bin, startServer, tempDir } from "./lib/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..");
const bin = (name) => join(here, "node_modules", ".bin", name);
const CITED = "https://pubs.acs.org/doi/10.1021/acsenergylett.3c00001";

// One conversation per scenario, chosen by its "[key]" in the user's
// message; the last one answers whatever else a client asks on the side
// (titles, quota checks). Claude Code is asked to read the note at notePath;
// web_fetch reads the page at pageURL.
const script = (notePath, pageURL) => ({
  conversations: [
    { match: "[codex-text]", rounds: [{ content: "Hello from the fake model." }] },
    {
      match: "[codex-fn]",
      rounds: [
        { tool_calls: [{ id: "call_exec", name: "exec_command", arguments: JSON.stringify({ cmd: "echo codex-e2e-ok" }) }] },
        { content: "The command printed codex-e2e-ok." },
      ],
    },
    {
      match: "[codex-ws]",
      rounds: [
        { tool_calls: [{ id: "call_ws", name: "web_search", arguments: JSON.stringify({ query: "perovskite encapsulation" }) }] },
        { content: `Edge sealing works, see ${CITED} for the damp-heat results.` },
      ],
    },
    ...["anthropic", "openai"].flatMap((p) => [
      { match: `[claude-text-${p}]`, rounds: [{ content: `Hello from the ${p} route.` }] },
      {
        match: `[claude-tool-${p}]`,
        rounds: [
          { tool_calls: [{ id: `toolu_read_${p}`, name: "Read", arguments: JSON.stringify({ file_path: notePath }) }] },
          { content: `The note says: claude-e2e-${p}.` },
        ],
      },
    ]),
    {
      match: "[typed-tools]",
      rounds: [
        {
          tool_calls: [
            { id: "call_l", name: "crm__lookup", arguments: JSON.stringify({ id: "c-7" }) },
            { id: "call_p", name: "apply_patch", arguments: JSON.stringify({ input: "*** Begin Patch\n*** End Patch" }) },
          ],
        },
        { content: "Patched; customer Ada noted." },
      ],
    },
    {
      match: "[typed-ws]",
      rounds: [
        { tool_calls: [{ id: "call_tws", name: "web_search", arguments: JSON.stringify({ query: "perovskite sealing" }) }] },
        { content: `Glass–glass lamination, per ${CITED}.` },
      ],
    },
    {
      match: "[typed-srv]",
      rounds: [
        {
          content: "Looking.",
          tool_calls: [
            { id: "call_tsrv", name: "web_search", arguments: JSON.stringify({ query: "perovskite sealing" }) },
            { id: "call_tcode", name: "run_code", arguments: JSON.stringify({ language: "javascript", code: "console.log(6 * 7)" }) },
          ],
        },
        { content: `Glass–glass lamination, per ${CITED}; 42.` },
      ],
    },
    {
      // An Anthropic route: the upstream runs its own server tools, toolhost
      // passes their blocks through.
      match: "[anth-srv]",
      rounds: [
        {
          blocks: [
            { type: "server_tool_use", id: "srvtoolu_01", name: "web_search", input: { query: "perovskite sealing" } },
            { type: "web_search_tool_result", tool_use_id: "srvtoolu_01", content: [{ type: "web_search_result", url: CITED, title: "Sealing", encrypted_content: "EqgfCioIARgBIiQ", page_age: null }] },
            { type: "server_tool_use", id: "srvtoolu_02", name: "bash_code_execution", input: { command: "echo 42" } },
            { type: "bash_code_execution_tool_result", tool_use_id: "srvtoolu_02", content: { type: "bash_code_execution_result", stdout: "42\n", stderr: "", return_code: 0, content: [] } },
          ],
          content: "Glass–glass lamination; 42.",
          citations: [{ type: "web_search_result_location", url: CITED, title: "Sealing", encrypted_index: "Eo8BCioIAhgBIiQ", cited_text: "glass" }],
        },
      ],
    },
    {
      match: "[typed-fetch]",
      rounds: [
        {
          tool_calls: [
            { id: "call_tfetch", name: "fetch_page", arguments: JSON.stringify({ url: pageURL }) },
            { id: "call_tpy", name: "run_code", arguments: JSON.stringify({ language: "python", code: "print(6 * 7)" }) },
          ],
        },
        { content: "The page says glass; 42." },
      ],
    },
    {
      match: "[typed-client]",
      rounds: [
        {
          tool_calls: [
            { id: "call_ap", name: "apply_patch", arguments: JSON.stringify({ type: "update_file", path: "a.go", diff: "@@\n-a\n+b" }) },
            { id: "call_sh", name: "shell", arguments: JSON.stringify({ commands: ["go test ./..."], timeout_ms: 60000 }) },
            { id: "call_ls", name: "local_shell", arguments: JSON.stringify({ command: ["ls", "-la"], working_directory: "/tmp" }) },
          ],
        },
        { content: "Patch failed; tests pass; two files." },
      ],
    },
    {
      match: "[typed-ci]",
      rounds: [
        { tool_calls: [{ id: "call_tci", name: "run_code", arguments: JSON.stringify({ language: "javascript", code: "console.log(6 * 7)" }) }] },
        { content: "6 * 7 is 42." },
      ],
    },
    {
      match: "[agents]",
      rounds: [
        { tool_calls: [{ id: "call_pick", name: "random_choice", arguments: JSON.stringify({ options: ["tea"] }) }] },
        { content: "Tea it is." },
      ],
    },
    { match: "", rounds: Array.from({ length: 8 }, () => ({ content: "ok" })) },
  ],
});

let work;
let fake;
let fakeURL;
let searx;
let pageURL;
let server;
let proxy;
let proxyURL;
/** Response bodies toolhost sent through the recording proxy, by path. */
const recorded = [];

/**
 * A SearXNG-format engine on 127.0.0.1 replaying the recorded answer, which
 * also serves the page web_fetch reads at /page.
 */
async function startSearx() {
  const body = await readFile(join(repo, "tools", "websearch", "testdata", "searxng", "search"));
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, "http://x");
    if (u.pathname === "/page") {
      return res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" })
        .end("<html><head><title>Sealing</title></head><body><article><h1>Sealing</h1><p>Glass-glass lamination kept 95% after 1000 hours.</p></article></body></html>");
    }
    if (u.pathname !== "/search" || !u.searchParams.get("q")) return res.writeHead(400).end();
    res.writeHead(200, { "Content-Type": "application/json" }).end(body);
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  return srv;
}

/** A proxy to toolhost that keeps each /v1 response body it passes on. */
async function startRecorder(target) {
  const srv = http.createServer((req, res) => {
    const up = http.request(new URL(req.url, target), { method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      const chunks = [];
      ur.on("data", (c) => { chunks.push(c); res.write(c); });
      ur.on("end", () => { recorded.push({ path: req.url, body: Buffer.concat(chunks).toString() }); res.end(); });
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  return srv;
}

/** The environment of a client process: loopback only, nothing sent home. */
function clientEnv(home, extra) {
  const closed = "http://127.0.0.1:9";
  return {
    PATH: `${dirname(node22Bin())}:${process.env.PATH}`,
    HOME: home,
    HTTP_PROXY: closed, HTTPS_PROXY: closed, ALL_PROXY: closed,
    http_proxy: closed, https_proxy: closed, all_proxy: closed,
    NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost",
    ...extra,
  };
}

function runClient(cmd, args, { cwd, env, timeout = 120_000 }) {
  return new Promise((resolveRun) => {
    const child = execFile(cmd, args, { cwd, env, timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolveRun({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
    // Nothing on standard input: the prompt is an argument.
    child.stdin.end();
  });
}

async function upstreamRequests(key) {
  const all = await fake.requests();
  return all.filter((b) => JSON.stringify(b).includes(`[${key}]`));
}

before(async () => {
  work = await tempDir("toolhost-agent-clients-");
  const notePath = join(work, "note.txt");
  await writeFile(notePath, "claude-e2e-note\n");
  searx = await startSearx();
  pageURL = `http://127.0.0.1:${searx.address().port}/page`;
  fake = await startFakeUpstream(script(notePath, pageURL), { dir: work });
  fakeURL = fake.url;
  const config = join(work, "config.json");
  const route = (name, protocol, models) => ({ name, protocol, base_url: fakeURL, api_key_env: "FAKE_UPSTREAM_KEY", models, supports_tools: true });
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"], ignore_robots: true },
    search: { providers: [{ kind: "searxng", name: "local", base_url: `http://127.0.0.1:${searx.address().port}` }], cache: { max_entries: -1 } },
    hosted: { label: "toolhost", routes: [route("fake-openai", "openai", ["fake-*"]), route("fake-anthropic", "anthropic", ["claude-fake-*"])] },
  }));
  server = await startServer({ args: ["--config", config], env: { FAKE_UPSTREAM_KEY: "sk-fake" } });
  proxy = await startRecorder(server.base);
  proxyURL = `http://127.0.0.1:${proxy.address().port}`;
});

after(async () => {
  proxy?.close();
  await server?.stop();
  searx?.close();
  await fake?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("Codex CLI on /v1/responses", () => {
  let home;
  let cwd;

  before(async () => {
    home = join(work, "codex-home");
    cwd = join(work, "codex-work");
    await mkdir(home, { recursive: true });
    await mkdir(cwd, { recursive: true });
    // The provider of docs/hosted-v1.md#clients, through the recorder.
    await writeFile(join(home, "config.toml"), [
      `model = "fake-1"`,
      `model_provider = "toolhost"`,
      `check_for_update_on_startup = false`,
      ``,
      `[model_providers.toolhost]`,
      `name = "toolhost"`,
      `base_url = "${proxyURL}/v1"`,
      `wire_api = "responses"`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[otel]`,
      `exporter = "none"`,
      ``,
    ].join("\n"));
  });

  const codex = (prompt) => runClient(bin("codex"), ["exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", prompt], {
    cwd, env: clientEnv(home, { CODEX_HOME: home }),
  });
  const events = (stdout) => stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const finalText = (evs) => evs.filter((e) => e.type === "item.completed" && e.item.type === "agent_message").map((e) => e.item.text).join("\n");

  test("a text turn", async () => {
    const r = await codex("[codex-text] say hi");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(finalText(events(r.stdout)), "Hello from the fake model.");
    const [req] = await upstreamRequests("codex-text");
    // Codex's namespaced tools reached the model as functions.
    const names = req.tools.map((t) => t.function.name);
    assert.ok(names.includes("exec_command"), names.join(" "));
    assert.ok(names.some((n) => n.includes("__")), `no namespaced function in ${names.join(" ")}`);
    for (const k of ["client_metadata", "include", "store"]) assert.equal(req[k], undefined, `${k} sent upstream`);
  });

  test("the model calls one of Codex's own functions and Codex answers it", async () => {
    const r = await codex("[codex-fn] run the check");
    assert.equal(r.code, 0, r.stderr);
    const evs = events(r.stdout);
    const cmd = evs.find((e) => e.type === "item.completed" && e.item.type === "command_execution");
    assert.ok(cmd, `no command_execution in ${r.stdout}`);
    assert.match(cmd.item.aggregated_output, /codex-e2e-ok/);
    assert.equal(finalText(evs), "The command printed codex-e2e-ok.");
    const reqs = await upstreamRequests("codex-fn");
    assert.equal(reqs.length, 2);
    const result = reqs[1].messages.find((m) => m.role === "tool" && m.tool_call_id === "call_exec");
    assert.match(JSON.stringify(result.content), /codex-e2e-ok/);
  });

  test("the model searches the web through toolhost and the answer cites a result", async () => {
    const before = recorded.length;
    const r = await codex("[codex-ws] how are perovskite modules sealed?");
    assert.equal(r.code, 0, r.stderr);
    const evs = events(r.stdout);
    assert.match(finalText(evs), new RegExp(CITED.replaceAll(".", "\\.")));
    const ws = evs.find((e) => e.type === "item.completed" && e.item.type === "web_search");
    assert.ok(ws, `no web_search item in ${r.stdout}`);
    // What Codex was sent: a web_search_call item and a url_citation.
    const sent = recorded.slice(before).filter((x) => x.path.startsWith("/v1/responses")).map((x) => x.body).join("\n");
    assert.match(sent, /"type":"web_search_call"/);
    const cite = sent.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
      .find((e) => e.type === "response.output_text.annotation.added");
    assert.ok(cite, "no annotation event");
    assert.equal(cite.annotation.type, "url_citation");
    assert.equal(cite.annotation.url, CITED);
    // The search ran once through the hosted web_search.
    const reqs = await upstreamRequests("codex-ws");
    const result = reqs[1].messages.find((m) => m.role === "tool" && m.tool_call_id === "call_ws");
    assert.match(JSON.stringify(result.content), /acsenergylett/);
  });
});

for (const protocol of ["anthropic", "openai"]) {
  describe(`Claude Code on /v1/messages, ${protocol} route`, () => {
    let home;
    const model = protocol === "anthropic" ? "claude-fake-1" : "fake-1";

    before(async () => {
      home = join(work, `claude-home-${protocol}`);
      await mkdir(home, { recursive: true });
    });

    // The package's launcher finds its native binary whether or not npm ran
    // the postinstall that copies it over bin/claude.exe.
    const launcher = join(here, "node_modules", "@anthropic-ai", "claude-code", "cli-wrapper.cjs");
    const claude = (prompt) => runClient(node22Bin(), [launcher, "-p", "--model", model, "--output-format", "json", "--allowedTools", "Read", "--", prompt], {
      cwd: work,
      env: clientEnv(home, {
        ANTHROPIC_BASE_URL: server.base,
        ANTHROPIC_API_KEY: "dev",
        ANTHROPIC_SMALL_FAST_MODEL: model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
        CLAUDE_CONFIG_DIR: join(home, ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
      }),
    });

    test("a text turn", async () => {
      const r = await claude(`[claude-text-${protocol}] say hi`);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(JSON.parse(r.stdout).result, `Hello from the ${protocol} route.`);
    });

    test("a tool_use round trip with its own Read tool", async () => {
      const r = await claude(`[claude-tool-${protocol}] what does the note say?`);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(JSON.parse(r.stdout).result, `The note says: claude-e2e-${protocol}.`);
      const reqs = await upstreamRequests(`claude-tool-${protocol}`);
      assert.equal(reqs.length, 2);
      assert.match(JSON.stringify(reqs[1]), /claude-e2e-note/);
    });
  });
}

const compiled = new Map(); // tsconfig name → its output directory, once compiled

/**
 * file of e2e/typed, compiled with typed/tsconfig.NAME.json under tsc
 * --strict once for this file (the tests of one tsconfig share it), into
 * a directory of its own (hosted-approvals.test.mjs rebuilds typed/build),
 * and imported.
 */
async function typedModule(name, file) {
  if (!compiled.has(name)) {
    const out = join(work, `typed-${name}`);
    const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
    compiled.set(name, promisify(execFile)(process.execPath, [tsc, "-p", join(here, "typed", `tsconfig.${name}.json`), "--outDir", out])
      .then(() => out, (err) => assert.fail(`tsc: ${err.stdout}${err.stderr}`)));
  }
  return import(join(await compiled.get(name), file));
}

describe("openai client's own types, Codex's kinds of tools", () => {
  test("namespace, custom and web search items compile without casts under tsc --strict and run", async () => {
    const { toolTypes } = await typedModule("tooltypes", "responses-tooltypes.js");
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
    const got = await toolTypes(client, "fake-1", "typed-tools", "typed-ws");
    assert.deepEqual([got.namespaced.name, got.namespaced.namespace, got.namespaced.arguments], ["lookup", "crm", `{"id":"c-7"}`]);
    assert.deepEqual([got.custom.name, got.custom.input, got.custom.call_id], ["apply_patch", "*** Begin Patch\n*** End Patch", "call_p"]);
    assert.equal(got.continued, "Patched; customer Ada noted.");
    assert.equal(got.search.query, "perovskite sealing");
    assert.ok(got.search.sources.some((s) => s.url === CITED), JSON.stringify(got.search.sources));
    assert.deepEqual(got.citations.map((c) => c.url), [CITED]);
    assert.deepEqual(got.cited, [CITED]);
    // The continuation gave the model both calls and both outputs.
    const [, second] = await upstreamRequests("typed-tools");
    const calls = second.messages.find((m) => m.role === "assistant").tool_calls.map((c) => `${c.function.name} ${c.function.arguments}`);
    assert.deepEqual(calls, [`crm__lookup {"id":"c-7"}`, `apply_patch {"input":"*** Begin Patch\\n*** End Patch"}`]);
    assert.deepEqual(second.messages.filter((m) => m.role === "tool").map((m) => m.content), [`{"name":"Ada"}`, "Done!"]);
  });
});

describe("openai client's own types, the tools the caller runs", () => {
  test("apply_patch_call, shell_call and local_shell_call items and their outputs compile without casts under tsc --strict and run", async () => {
    const { clientTools } = await typedModule("clienttools", "responses-clienttools.js");
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
    const got = await clientTools(client, "fake-1", "typed-client");
    assert.deepEqual([got.patch.call_id, got.patch.operation], ["call_ap", { type: "update_file", path: "a.go", diff: "@@\n-a\n+b" }]);
    assert.deepEqual([got.shell.call_id, got.shell.action.commands, got.shell.action.timeout_ms], ["call_sh", ["go test ./..."], 60000]);
    assert.deepEqual([got.local.call_id, got.local.action.type, got.local.action.command, got.local.action.working_directory], ["call_ls", "exec", ["ls", "-la"], "/tmp"]);
    assert.equal(got.continued, "Patch failed; tests pass; two files.");
    assert.deepEqual(got.streamed.types, ["apply_patch_call", "shell_call", "local_shell_call"]);
    // The three calls open as the model streams them and close when its turn ends.
    const kinds = ["apply_patch_call", "shell_call", "local_shell_call"];
    assert.deepEqual(got.streamed.events, [...kinds.map((t) => `response.output_item.added ${t}`), ...kinds.map((t) => `response.output_item.done ${t}`)]);
    // The continuation gave the model the three calls and their outputs.
    const [, second] = await upstreamRequests("typed-client");
    const calls = second.messages.find((m) => m.role === "assistant").tool_calls.map((c) => [c.id, c.function.name]);
    assert.deepEqual(calls, [["call_ap", "apply_patch"], ["call_sh", "shell"], ["call_ls", "local_shell"]]);
    const results = second.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, JSON.stringify(m.content)]);
    assert.deepEqual(results.map(([id]) => id), ["call_ap", "call_sh", "call_ls"]);
    assert.match(results[0][1], /a\.go: no such file/);
    assert.match(results[1][1], /ok/);
    assert.match(results[2][1], /a\.txt\\nb\.txt/);
  });
});

describe("the SDKs' own types, vendors' built-in tools on an OpenAI route", () => {
  test("web_fetch_tool_result and code_execution_tool_result (20250522) blocks compile without casts under tsc --strict and run", async () => {
    const { fetchAndCodeTypes } = await typedModule("servertools", "messages-servertools.js");
    const client = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0 });
    const { whole, streamed } = await fetchAndCodeTypes(client, "fake-1", "typed-fetch", pageURL);
    for (const got of [whole, streamed]) {
      assert.deepEqual(got.types, ["server_tool_use", "server_tool_use", "web_fetch_tool_result", "code_execution_tool_result", "text"]);
      assert.deepEqual(got.uses.map((u) => u.name), ["web_fetch", "code_execution"]);
      assert.equal(got.page.url, pageURL);
      assert.equal(got.page.content.type, "document");
      assert.match(got.page.content.source.data, /Glass-glass lamination/);
      assert.deepEqual([got.code.stdout, got.code.return_code], ["42\n", 0]);
    }
    assert.deepEqual(streamed.types, whole.types);
    // The model saw toolhost's functions, not the server tool declarations.
    const [first] = await upstreamRequests("typed-fetch");
    assert.deepEqual(first.tools.map((t) => t.function.name).sort(), ["fetch_page", "run_code"]);
  });

  test("server_tool_use and the tools' result blocks compile without casts under tsc --strict and run", async () => {
    const { serverToolTypes } = await typedModule("servertools", "messages-servertools.js");
    const client = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0 });
    const { whole, streamed } = await serverToolTypes(client, "fake-1", "typed-srv");
    for (const got of [whole, streamed]) {
      assert.deepEqual(got.types, ["text", "server_tool_use", "server_tool_use", "web_search_tool_result", "bash_code_execution_tool_result", "text"]);
      assert.deepEqual(got.uses.map((u) => u.name), ["web_search", "bash_code_execution"]);
      assert.ok(got.results.some((r) => r.url === CITED), JSON.stringify(got.results));
      assert.deepEqual([got.code.stdout, got.code.return_code], ["42\n", 0]);
      assert.deepEqual(got.citations.map((c) => c.url), [CITED]);
    }
    assert.deepEqual(streamed, whole);
    // The model saw toolhost's functions, not the server tool declarations.
    const [first] = await upstreamRequests("typed-srv");
    assert.deepEqual(first.tools.map((t) => t.function.name).sort(), ["run_code", "web_search"]);
  });

  test("on an Anthropic route the upstream's own server tool blocks pass through, whole and streamed", async () => {
    const { serverToolTypes } = await typedModule("servertools", "messages-servertools.js");
    const client = new Anthropic({ baseURL: server.base, apiKey: "dev", maxRetries: 0 });
    const { whole, streamed } = await serverToolTypes(client, "claude-fake-1", "anth-srv");
    for (const got of [whole, streamed]) {
      assert.deepEqual(got.types, ["server_tool_use", "web_search_tool_result", "server_tool_use", "bash_code_execution_tool_result", "text"]);
      assert.deepEqual(got.uses.map((u) => [u.id, u.name, u.input]), [
        ["srvtoolu_01", "web_search", { query: "perovskite sealing" }],
        ["srvtoolu_02", "bash_code_execution", { command: "echo 42" }],
      ]);
      assert.deepEqual(got.results.map((r) => r.url), [CITED]);
      assert.deepEqual([got.code.stdout, got.code.return_code], ["42\n", 0]);
      assert.deepEqual(got.citations.map((c) => [c.url, c.cited_text]), [[CITED, "glass"]]);
    }
    assert.deepEqual(streamed, whole);
    // The declarations went upstream as written; toolhost ran nothing.
    const [first] = await upstreamRequests("anth-srv");
    assert.deepEqual(first.tools.map((t) => t.type), ["web_search_20250305", "code_execution_20250825"]);
  });

  test("code_interpreter_call items compile without casts under tsc --strict and run", async () => {
    const { codeInterpreter } = await typedModule("servertools", "responses-codeinterpreter.js");
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 });
    const { whole, streamed } = await codeInterpreter(client, "fake-1", "typed-ci");
    for (const got of [whole, streamed]) {
      assert.deepEqual([got.call.status, got.call.code, got.logs], ["completed", "console.log(6 * 7)", ["42\n"]]);
    }
    assert.deepEqual(streamed.events, [
      "response.code_interpreter_call.in_progress", "response.code_interpreter_call_code.delta", "response.code_interpreter_call_code.done",
      "response.code_interpreter_call.interpreting", "response.code_interpreter_call.completed",
    ]);
  });
});

describe("the OpenAI Agents SDK", () => {
  test("hostedMcpTool runs toolhost's hosted tool in the loop", async () => {
    setTracingDisabled(true);
    setOpenAIAPI("responses");
    setDefaultOpenAIClient(new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "dev", maxRetries: 0 }));
    const agent = new Agent({
      name: "picker",
      model: "fake-1",
      instructions: "Pick with the tool.",
      tools: [hostedMcpTool({ serverLabel: "toolhost", allowedTools: ["random_choice"], requireApproval: "never" })],
    });
    const result = await run(agent, "[agents] tea or coffee?");
    assert.equal(result.finalOutput, "Tea it is.");
    // The SDK names a hosted call by its item type; the tool is in providerData.
    const call = result.newItems.find((i) => i.rawItem?.type === "hosted_tool_call" && i.rawItem.name === "mcp_call");
    assert.ok(call, result.newItems.map((i) => `${i.rawItem?.type}:${i.rawItem?.name}`).join(" "));
    assert.equal(call.rawItem.providerData.name, "random_choice");
    assert.equal(call.rawItem.providerData.server_label, "toolhost");
    assert.match(String(call.rawItem.output), /tea/);
  });
});
