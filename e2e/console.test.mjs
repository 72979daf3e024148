// The operator console (/console) in a real browser: Debian's
// /usr/bin/chromium, headless, driven by playwright-core, against
// `toolhost serve` (no --dev) on loopback. Every page is signed in to with
// an API key and renders; every action is done through the page and
// checked through REST or /mcp: a key created in the console works on
// /mcp and, revoked there, no longer does; an approval granted there lets
// the waiting call run. An account user sees and acts on its own account
// only, through the pages and through forged posts; posts without the CSRF
// token or from another site are refused. Tool arguments, results, error
// messages and key names holding markup are shown as text: no dialog
// opens, no console error (a CSP violation is one) is logged. axe-core
// finds nothing serious or critical on any page, and each page's
// screenshot over this data goes to docs/console/ under `make
// screenshots` (e2e/.results/console/ otherwise).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { launchBrowser, newContext as contextOf, restAPI, screenshotDir, seriousViolations, signInWithKey, watchPage } from "./lib/browser.mjs";
import { freePort, startServer, tempDir, toolhostBin } from "./lib/server.mjs";
import { connectHTTP, textOf } from "./lib/mcp.mjs";

const shots = screenshotDir;
const XSS = `<script>alert("x")</script><img src=x onerror=alert("y")>`;

let server, work, browser, admin, remote, remotePort;
const accounts = {}; // name → { secret, id }
const problems = []; // dialogs, console errors, page errors: none allowed
const clients = [];

before(async () => {
  work = await tempDir("toolhost-console-");
  const config = join(work, "config.json");
  remotePort = await freePort();
  remote = spawn(join(dirname(toolhostBin()), "mcp-testserver"), ["-addr", `127.0.0.1:${remotePort}`], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const onData = (c) => (out += c);
  remote.stdout.on("data", onData);
  remote.stderr.on("data", onData);
  while (!/listening on/.test(out)) {
    assert.equal(remote.exitCode, null, `mcp-testserver exited: ${out}`);
    await Promise.race([once(remote.stdout, "data"), once(remote.stderr, "data")]);
  }
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"] },
    tools: { require_approval: { roll_dice: "always" } },
    console: { trace_url: "https://traces.example/trace/{trace_id}" },
  }));
  server = await startServer({ dev: false, args: ["--config", config] });
  admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  for (const name of ["acme", "globex"]) {
    const r = await api("POST", "/admin/keys", admin, { account: name, name: `${name} ${XSS}`, scopes: ["mcp", "tools"] });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    accounts[name] = { secret: r.body.secret, id: r.body.key.id };
  }
  await mkdir(shots, { recursive: true });
  browser = await launchBrowser();
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (remote && remote.exitCode === null) {
    remote.kill("SIGTERM");
    await once(remote, "exit");
  }
  if (work) await rm(work, { recursive: true, force: true });
});

function api(method, path, key, body) {
  return restAPI(server.base)(method, path, key, body);
}

async function mcp(key) {
  const client = await connectHTTP(server.mcpURL, { headers: { Authorization: `Bearer ${key}` }, name: "console-e2e" });
  clients.push(client);
  return client;
}

/**
 * The signed-in context of key at the desktop size, made once for the file
 * and shared by the tests (signing in through the page costs half a
 * second on a busy machine; the sign-in tests still do it). Its close()
 * does nothing: the browser closes it after the last test.
 */
const signedIn = new Map();
async function as(key) {
  if (!signedIn.has(key)) {
    const { context, page } = await signIn(key);
    const shared = new Proxy(context, {
      get: (t, p) => (p === "close" ? async () => {} : typeof t[p] === "function" ? t[p].bind(t) : t[p]),
    });
    signedIn.set(key, { context: shared, page });
  }
  return signedIn.get(key);
}

/** A signed-in browser context for key; every page it opens is watched. */
function signIn(key, viewport) {
  return signInWithKey(browser, server.base, key, problems, viewport);
}

function watch(page) {
  watchPage(page, problems);
}

/**
 * axe-core on the page: no serious or critical violation. It runs once
 * per distinct page — viewport, signed-in account, path (ids folded) and
 * query keys — unless the caller names a state of its own (a page after
 * an action).
 */
const checked = new Set();
async function accessible(page, state = "") {
  const u = new URL(page.url());
  const account = page.locator("#signed-account");
  const who = (await account.count()) ? await account.textContent() : "";
  const path = u.pathname.replace(/\/(executions|tool-definitions)\/[^/]+$/, "/$1/:id");
  const key = [page.viewportSize()?.width, who, path, [...u.searchParams.keys()].sort().join(","), state].join("|");
  if (checked.has(key)) return;
  checked.add(key);
  const bad = await seriousViolations(page);
  assert.deepEqual(bad, [], `${page.url()}: ${JSON.stringify(bad)}`);
}

async function shot(page, name) {
  // A new key's secret is masked: the screenshot is committed.
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true, mask: [page.locator("#new-secret")] });
}

/** Renders the page at path, checks it and takes its screenshot. */
async function visit(page, path, name) {
  const res = await page.goto(server.base + path);
  assert.equal(res.status(), 200, `${path}: ${res.status()}`);
  // The message is read only when there is an alert: reading it eagerly
  // waited the locator's whole timeout on every page that has none.
  if (await page.locator("[role=alert]").count()) assert.fail(`${path}: ${await page.locator("[role=alert]").first().textContent()}`);
  await accessible(page);
  if (name) await shot(page, name);
  return res;
}

function newContext(opts = {}) {
  return contextOf(browser, opts);
}

test("sign-in page: a wrong key is refused on the page, the page is accessible", async () => {
  const context = await newContext();
  const page = await context.newPage();
  watch(page);
  await page.goto(server.base + "/console/sign-in");
  await accessible(page);
  await shot(page, "sign-in");
  await page.fill("#api_key", "th_" + "x".repeat(32));
  await page.click("button[type=submit]");
  assert.match(await page.textContent("[role=alert]"), /not valid/);
  await context.close();
});

test("executions, overview and the XSS battery: hostile text is shown as text", async () => {
  const client = await mcp(accounts.acme.secret);
  const pick = await client.callTool({ name: "random_choice", arguments: { options: [XSS, XSS + "2"] } });
  assert.ok(!pick.isError, textOf(pick));
  const bad = await client.callTool({ name: "random_choice", arguments: { options: XSS } });
  assert.equal(bad.isError, true);
  // A tool name holding markup is refused by the protocol before the journal.
  await assert.rejects(client.callTool({ name: XSS, arguments: {} }), /unknown tool/);
  for (let i = 0; i < 3; i++) await client.callTool({ name: "get_time", arguments: {} });

  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/overview", "overview");
  assert.ok(Number(await page.textContent("#calls-day")) >= 5);
  assert.match(await page.textContent("#per-tool"), /random_choice/);

  await visit(page, "/console/executions", "executions");
  const rows = page.locator("#executions tbody tr");
  assert.ok((await rows.count()) >= 5);
  assert.equal(await page.locator("#executions img").count(), 0, "markup in the journal became an element");

  // The filter of GET /tool-executions, through the form.
  await page.fill("input[name=tool_name]", "random_choice");
  await Promise.all([page.waitForURL(/tool_name=random_choice/), page.click("form.filters button[type=submit]")]);
  assert.equal(await page.locator("#executions tbody tr").count(), 2);
  // A bad filter is the REST API's validation error, shown on the page.
  const badFilter = await page.goto(server.base + "/console/executions?status=villain");
  assert.equal(badFilter.status(), 400);
  assert.match(await page.textContent("[role=alert]"), /status/);

  // One execution: timeline, raw and normalized arguments, result as the model saw it.
  const id = pick._meta["toolhost/execution_id"];
  await visit(page, `/console/executions/${id}`, "execution");
  assert.match(await page.textContent("#x-tool"), /^random_choice /);
  const raw = await page.textContent("#x-args-raw");
  assert.ok(raw.includes("<script>alert(") && raw.includes("<img src=x onerror=alert("), `raw arguments shown as text: ${raw}`);
  assert.ok((await page.locator("#timeline li").count()) >= 3);
  assert.equal(await page.locator("main script, main img").count(), 0);
  const rest = await api("GET", `/tool-executions/${id}`, accounts.acme.secret);
  if (rest.body.data.trace_id) {
    assert.equal(await page.getAttribute("#x-trace a", "href"), `https://traces.example/trace/${rest.body.data.trace_id}`);
  }

  const failed = bad._meta?.["toolhost/execution_id"];
  if (failed) {
    await visit(page, `/console/executions/${failed}`);
    assert.match(await page.textContent("#x-error"), /invalid_arguments/);
  }
  await context.close();
  assert.deepEqual(problems, []);
});

test("approvals: a call waiting for approval runs once it is approved in the console", async () => {
  const client = await mcp(accounts.acme.secret);
  const roll = () => client.callTool({ name: "roll_dice", arguments: { sides: 20 } });
  const first = await roll();
  const wait = first._meta?.["toolhost/error"] ?? {};
  assert.equal(wait.code, "approval_required", textOf(first));

  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/approvals", "approvals");
  const card = page.locator(`#approval-${wait.approval_id}`);
  assert.match(await card.locator(".tool").textContent(), /roll_dice/);
  assert.match(await card.locator(".args").textContent(), /"sides": 20/);
  assert.match(await card.textContent(), new RegExp(wait.invocation_digest ?? "[0-9a-f]{16}"));
  await card.locator("input[name=reason]").fill(`fine ${XSS}`);
  await card.locator("button[value=approve]").click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /approved/);
  const r = await api("GET", `/approvals/${wait.approval_id}`, accounts.acme.secret);
  assert.equal(r.body.data.status, "approved");
  assert.equal(r.body.data.decided_via, "rest");

  const ran = await roll();
  assert.equal(ran.isError ?? false, false, textOf(ran));
  const consumed = await api("GET", `/approvals/${wait.approval_id}`, accounts.acme.secret);
  assert.equal(consumed.body.data.status, "consumed");

  // Declined from the console: the call stays refused.
  const other = (await client.callTool({ name: "roll_dice", arguments: { sides: 6 } }))._meta["toolhost/error"];
  await page.goto(server.base + "/console/approvals");
  await page.locator(`#approval-${other.approval_id} button[value=decline]`).click();
  await page.waitForSelector("#notice");
  assert.equal((await api("GET", `/approvals/${other.approval_id}`, accounts.acme.secret)).body.data.status, "declined");
  await visit(page, "/console/approvals", "approvals-history");
  assert.match(await page.textContent("#history"), /declined/);
  await context.close();
  assert.deepEqual(problems, []);
});

test("keys: a key created in the console works on /mcp, and revoked there no longer does", async () => {
  const { context, page } = await as(admin);
  await visit(page, "/console/keys?account=acme", "keys");
  assert.equal(await page.locator("#keys img, #keys script").count(), 0, "a key name's markup became an element");
  assert.ok((await page.textContent("#keys")).includes(`acme ${XSS}`));
  const form = page.locator("form[action='/console/keys']");
  await form.locator("input[name=account]").fill("initech");
  await form.locator("input[name=name]").fill("made in the console");
  await form.locator("input[name=monthly_units_cap]").fill("1000");
  await form.locator("input[value=mcp]").check();
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("#new-secret");
  const secret = (await page.textContent("#new-secret")).trim();
  assert.match(secret, /^th_/);
  await shot(page, "keys-created");

  const client = await mcp(secret);
  const res = await client.callTool({ name: "get_time", arguments: {} });
  assert.equal(res.isError ?? false, false, textOf(res));
  const listed = await api("GET", "/admin/keys?account=initech", admin);
  const key = listed.body.data.find((k) => k.name === "made in the console");
  assert.deepEqual(key.scopes, ["mcp"]);
  assert.equal(key.limits.monthly_units_cap, 1000);

  await page.goto(server.base + "/console/keys?account=initech");
  await page.locator(`#key-${key.id} button`).click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /revoked/);
  assert.ok((await api("GET", `/admin/keys/${key.id}`, admin)).body.revoked_at ?? (await api("GET", `/admin/keys/${key.id}`, admin)).body.key?.revoked_at);
  const refused = await fetch(server.mcpURL, { method: "POST", headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
  assert.equal(refused.status, 401);
  await visit(page, "/console/grants?account=acme", "grants");
  await context.close();
  assert.deepEqual(problems, []);
});

test("tenancy: an account sees and acts on its own data only, forged and cross-site posts change nothing", async () => {
  const acmeClient = await mcp(accounts.acme.secret);
  const acmeCall = await acmeClient.callTool({ name: "get_time", arguments: {} });
  const acmeExec = acmeCall._meta["toolhost/execution_id"];
  const pending = (await acmeClient.callTool({ name: "roll_dice", arguments: { sides: 12 } }))._meta["toolhost/error"];
  assert.equal(pending.code, "approval_required");

  const { context, page } = await as(accounts.globex.secret);
  await visit(page, "/console/executions");
  assert.ok(!(await page.content()).includes(acmeExec));
  let res = await page.goto(`${server.base}/console/executions/${acmeExec}`);
  assert.equal(res.status(), 404);
  for (const path of ["/console/executions?account=acme", "/console/overview?account=acme", "/console/keys?account=acme"]) {
    res = await page.goto(server.base + path);
    assert.equal(res.status(), 403, path);
  }
  await visit(page, "/console/approvals");
  assert.equal(await page.locator(`#approval-${pending.approval_id}`).count(), 0);
  res = await page.goto(`${server.base}/console/grants`);
  assert.equal(res.status(), 403, "grants are the admin scope's");

  // Forged posts with globex's own valid CSRF token, for acme's objects.
  const csrf = await page.getAttribute("input[name=csrf]", "value");
  const post = (path, form) => context.request.post(server.base + path, { form: { csrf, ...form }, headers: { Origin: server.base }, maxRedirects: 0 });
  res = await post(`/console/approvals/${pending.approval_id}`, { action: "approve" });
  assert.equal(res.status(), 404);
  res = await post(`/console/keys/${accounts.acme.id}/revoke`, {});
  assert.equal(res.status(), 403);
  res = await post("/console/keys", { account: "acme", name: "forged", scopes: "mcp" });
  assert.equal(res.status(), 403);
  // Without the token, and from another site.
  res = await context.request.post(`${server.base}/console/approvals/${pending.approval_id}`, { form: { action: "approve" }, maxRedirects: 0 });
  assert.equal(res.status(), 403);
  res = await context.request.post(`${server.base}/console/approvals/${pending.approval_id}`, { form: { action: "approve", csrf }, headers: { Origin: "http://evil.example", "Sec-Fetch-Site": "cross-site" }, maxRedirects: 0 });
  assert.equal(res.status(), 403);
  await context.close();

  // A real cross-site page auto-submitting a form to the console of a
  // signed-in acme browser: SameSite=Strict keeps the cookie home, the
  // cross-origin check refuses the post.
  const evil = createServer((req, res) => {
    res.setHeader("Content-Type", "text/html");
    res.end(`<!doctype html><form id=f method=post action="${server.base}/console/approvals/${pending.approval_id}">
<input name=action value=approve></form><script>document.getElementById("f").submit()</script>`);
  });
  evil.listen(0, "127.0.0.2");
  await once(evil, "listening");
  const acme = await as(accounts.acme.secret);
  const landed = acme.page.waitForResponse((r) => r.url().includes(`/console/approvals/${pending.approval_id}`));
  await acme.page.goto(`http://127.0.0.2:${evil.address().port}/`);
  assert.ok([401, 403].includes((await landed).status()));
  evil.close();
  await acme.context.close();
  assert.equal((await api("GET", `/approvals/${pending.approval_id}`, accounts.acme.secret)).body.data.status, "pending");
  assert.equal((await api("GET", `/admin/keys/${accounts.acme.id}`, admin)).status, 200);
  assert.deepEqual(problems, []);
});

test("remote MCP servers: one registered in the console is in the runtime catalog; hostile URLs and errors are text", async () => {
  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/mcp-servers");
  const form = page.locator("form[action='/console/mcp-servers']");
  await form.locator("input[name=name]").fill("demo");
  await form.locator("input[name=url]").fill(`http://127.0.0.1:${remotePort}/mcp`);
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /Registered demo: live, \d+ tools/);
  assert.match(await page.textContent("#server-demo .server-status"), /listed \d+s ago/);
  assert.match(await page.textContent("#server-demo .server-tools"), /echo/);

  assert.equal((await api("POST", "/sessions", accounts.acme.secret, { id: "sess_console" })).status, 201);
  const runtime = await api("GET", "/sessions/sess_console/tools/runtime", accounts.acme.secret);
  assert.equal(runtime.status, 200, JSON.stringify(runtime.body));
  assert.ok(JSON.stringify(runtime.body).includes("demo__echo"), "the registered server's tools are in the runtime catalog");

  await page.locator("#server-demo button[value=refresh]").click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /Refreshed demo: live/);

  // Per-tool overrides, edited on the page and read back over REST and in
  // the runtime catalog; a combination REST refuses is its error, shown.
  await page.locator("#server-demo details.overrides summary").click();
  const echo = page.locator("#server-demo form.override[data-tool=echo]");
  await echo.locator("select[name=side_effect_level]").selectOption("none");
  await echo.locator("select[name=require_approval]").selectOption("never");
  await echo.locator("select[name=async_capability]").selectOption("deferred_ok");
  await echo.locator("select[name=default_delivery_mode]").selectOption("inline");
  await echo.locator("input[name=slots_set]").check();
  await echo.locator("input[name=allowed_slots][value=narrator]").check();
  await echo.locator("button[value=override]").click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /override of echo/);
  const over = (await api("GET", "/mcp-servers", accounts.acme.secret)).body.data.find((s) => s.name === "demo").tools.echo;
  assert.deepEqual(over, { side_effect_level: "none", require_approval: "never", async_capability: "deferred_ok", default_delivery_mode: "inline", allowed_slots: ["narrator"] });
  const governed = (await api("GET", "/sessions/sess_console/tools/runtime", accounts.acme.secret)).body.data.tools.find((t) => t.name === "demo__echo");
  assert.equal(governed.side_effect_level, "none");
  assert.equal(governed.side_effect_level_basis, "account_override");
  assert.deepEqual(governed.allowed_slots, ["narrator"]);
  await page.locator("#server-demo details.overrides summary").click();
  await echo.locator("select[name=async_capability]").selectOption("inline_only");
  await echo.locator("select[name=default_delivery_mode]").selectOption("async_job");
  await echo.locator("button[value=override]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /validation_error.*async_job needs async_capability deferred_ok/);
  assert.equal((await api("GET", "/mcp-servers", accounts.acme.secret)).body.data.find((s) => s.name === "demo").tools.echo.default_delivery_mode, "inline");

  // Hostile text: a URL with markup (nothing answers there), a name the API refuses.
  await form.locator("input[name=name]").fill("hostile");
  await form.locator("input[name=url]").fill(`http://127.0.0.1:9/mcp?q=${XSS}`);
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("#server-hostile");
  assert.ok((await page.textContent("#server-hostile .server-url")).includes("<script>"), "the URL is shown as text");
  await page.locator("#register-h").scrollIntoViewIfNeeded();
  await form.locator("input[name=name]").evaluate((el) => el.removeAttribute("pattern"));
  await form.locator("input[name=name]").fill(`x<img src=x onerror=alert("name")>`);
  await form.locator("input[name=url]").fill(`http://127.0.0.1:${remotePort}/mcp`);
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /validation_error/);
  assert.equal(await page.locator("main img, main script").count(), 0);
  await page.goto(server.base + "/console/mcp-servers");
  await accessible(page, "with servers and overrides");
  await shot(page, "mcp-servers");
  const servers = await api("GET", "/mcp-servers", accounts.acme.secret);
  const demo = servers.body.data.find((s) => s.name === "demo");
  await context.close();

  // Another account cannot refresh or delete it, by page or forged post.
  const globex = await as(accounts.globex.secret);
  await visit(globex.page, "/console/mcp-servers");
  assert.equal(await globex.page.locator("#server-demo").count(), 0);
  const csrf = await globex.page.getAttribute("input[name=csrf]", "value");
  for (const action of ["refresh", "delete", "override"]) {
    const res = await globex.context.request.post(`${server.base}/console/mcp-servers/${demo.id}`, { form: { csrf, action, tool: "echo", side_effect_level: "irreversible" }, headers: { Origin: server.base } });
    assert.equal(res.status(), 404, action);
  }
  await globex.context.close();
  const kept = await api("GET", `/mcp-servers/${demo.id}`, accounts.acme.secret);
  assert.equal(kept.status, 200);
  assert.equal(kept.body.data.tools.echo.side_effect_level, "none", "another account's forged override changed nothing");
  assert.deepEqual(problems, []);
});

test("sign-out ends the session; on a phone the pages still read", async () => {
  const { context, page } = await signIn(accounts.acme.secret, { width: 390, height: 844 });
  await visit(page, "/console/executions", "phone-executions");
  await visit(page, "/console/overview", "phone-overview");
  await visit(page, "/console/playground");
  await visit(page, "/console/tool-definitions");
  await page.click(".who button[type=submit]");
  await page.waitForURL(/\/console\/sign-in$/);
  await page.goto(server.base + "/console/overview");
  assert.match(page.url(), /\/console\/sign-in$/);
  await context.close();
  assert.deepEqual(problems, []);
});

test("tool definitions: created, edited, toggled and deleted in the console, as REST sees them; script handlers refused as REST refuses them", async () => {
  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/tool-definitions");
  const form = page.locator("form.defform");
  await form.locator("input[name=name]").fill("console_def");
  await form.locator("textarea[name=description]").fill(`made in the console ${XSS}`);
  await form.locator("textarea[name=parameters]").fill(JSON.stringify({ type: "object", properties: { q: { type: "string", description: XSS } }, required: ["q"] }));
  await form.locator("select[name=side_effect_level]").selectOption("sandbox");
  await form.locator("input[name=allowed_slots][value=narrator]").check();
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /Created console_def/);
  let defs = (await api("GET", "/tools/definitions", accounts.acme.secret)).body.data;
  const def = defs.find((d) => d.name === "console_def");
  assert.equal(def.description, `made in the console ${XSS}`);
  assert.equal(def.side_effect_level, "sandbox");
  assert.deepEqual(def.allowed_slots, ["narrator"]);
  assert.equal(def.enabled, true);
  assert.equal(await page.locator("main img, main script").count(), 0, "a description's markup became an element");
  assert.ok((await page.textContent(`#def-${def.id} .def-desc`)).includes(XSS));

  // A script handler: this server leaves ENABLE_UNSAFE_SCRIPT_HANDLER
  // unset, so REST refuses it, and the page shows REST's answer and keeps
  // what was typed.
  await form.locator("input[name=name]").fill("console_script");
  await form.locator("input[name=handler_type][value=script]").check();
  await form.locator("textarea[name=script]").fill("return args.q");
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /tool_script_handler_disabled: .*ENABLE_UNSAFE_SCRIPT_HANDLER/);
  assert.equal(await form.locator("input[name=name]").inputValue(), "console_script");
  // A schema REST refuses: its validation error names the field.
  await form.locator("input[name=handler_type][value=none]").check();
  await form.locator("textarea[name=parameters]").fill(`{"type": "string"}`);
  await form.locator("button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /validation_error: parameters/);
  assert.equal((await api("GET", "/tools/definitions", accounts.acme.secret)).body.data.filter((d) => d.name === "console_script").length, 0);

  // Edit, toggle and delete, each checked over REST.
  await visit(page, `/console/tool-definitions/${def.id}`, "tool-definition-edit");
  const edit = page.locator("form.defform");
  await edit.locator("textarea[name=description]").fill("edited in the console");
  await edit.locator("button[value=update]").click();
  await page.waitForSelector("#notice");
  assert.equal((await api("GET", `/tools/definitions/${def.id}`, accounts.acme.secret)).body.data.description, "edited in the console");
  await page.locator(`#def-${def.id} button[value=toggle]`).click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /console_def disabled/);
  assert.equal((await api("GET", `/tools/definitions/${def.id}`, accounts.acme.secret)).body.data.enabled, false);
  await visit(page, "/console/tool-definitions", "tool-definitions");

  // Another account: not listed, not editable, not deletable, by page or forged post.
  const globex = await as(accounts.globex.secret);
  await visit(globex.page, "/console/tool-definitions");
  assert.equal(await globex.page.locator(`#def-${def.id}`).count(), 0);
  assert.equal((await globex.page.goto(`${server.base}/console/tool-definitions/${def.id}`)).status(), 404);
  const csrf = await globex.page.getAttribute("input[name=csrf]", "value");
  for (const form of [{ action: "delete" }, { action: "toggle", enabled: "true" }, { action: "update", name: "stolen", side_effect_level: "none" }]) {
    const res = await globex.context.request.post(`${server.base}/console/tool-definitions/${def.id}`, { form: { csrf, ...form }, headers: { Origin: server.base } });
    assert.equal(res.status(), 404, form.action);
  }
  await globex.context.close();
  const still = (await api("GET", `/tools/definitions/${def.id}`, accounts.acme.secret)).body.data;
  assert.equal(still.name, "console_def");
  assert.equal(still.enabled, false);

  await page.locator(`#def-${def.id} button[value=delete]`).click();
  await page.waitForSelector("#notice");
  assert.equal((await api("GET", `/tools/definitions/${def.id}`, accounts.acme.secret)).status, 404);
  await context.close();
  assert.deepEqual(problems, []);
});

test("sessions: permissions set in the console are in the session's runtime tools, and PATCH merges per slot", async () => {
  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/sessions");
  await page.locator("input[name=new_id]").fill("sess_perms");
  await page.locator("form[method=post][action='/console/sessions'] button").click();
  await page.waitForSelector("#permissions");
  assert.match(await page.textContent("#notice"), /Created session sess_perms/);

  // Replace: narrator may run get_time only.
  const put = page.locator("#put-form");
  await put.locator("input[name='allow_set.narrator']").check();
  await put.locator("input[name='allow.narrator']").fill("get_time");
  await put.locator("input[name=max_calls_per_turn]").fill("5");
  await put.locator("button[type=submit]").click();
  await page.waitForSelector("#notice");
  let perms = (await api("GET", "/sessions/sess_perms/tool-permissions", accounts.acme.secret)).body.data;
  assert.deepEqual(perms.slot_allow_list, { narrator: ["get_time"] });
  assert.equal(perms.max_calls_per_turn, 5);
  const runtime = (await api("GET", "/sessions/sess_perms/tools/runtime?slot=narrator", accounts.acme.secret)).body.data.tools;
  assert.equal(runtime.find((t) => t.name === "get_time").availability, "available");
  assert.equal(runtime.find((t) => t.name === "roll_dice").availability, "unavailable");

  // Merge: director gets its own list; narrator's stays (the seed's rule).
  const patch = page.locator("#patch-form");
  await patch.locator("select[name=slot]").selectOption("director");
  await patch.locator("input[name=allow_change]").check();
  await patch.locator("input[name=allow]").fill("roll_dice, get_time");
  await patch.locator("button[type=submit]").click();
  await page.waitForSelector("#notice");
  perms = (await api("GET", "/sessions/sess_perms/tool-permissions", accounts.acme.secret)).body.data;
  assert.deepEqual(perms.slot_allow_list, { narrator: ["get_time"], director: ["roll_dice", "get_time"] });
  assert.equal(perms.max_calls_per_turn, 5, "a field the merge did not send is kept");

  // The page shows the runtime catalog for a slot, with the rule that refused.
  await visit(page, "/console/sessions?id=sess_perms&slot=narrator", "sessions");
  assert.match(await page.textContent("#runtime tr[data-tool=roll_dice] .rt-availability"), /unavailable: roll_dice is not on the allow list of slot narrator/);
  assert.match(await page.textContent("#runtime tr[data-tool=get_time] .rt-availability"), /^available/);
  // A value REST refuses: its validation error, shown.
  await patch.locator("input[name=max_calls_per_turn]").fill("99999");
  await patch.locator("button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /validation_error: .*max_calls_per_turn/);
  // A tool name holding markup: refused by REST, shown as text.
  await patch.locator("input[name=deny_change]").check();
  await patch.locator("input[name=deny]").fill(`<img src=x onerror=alert(1)>`);
  await patch.locator("button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /validation_error/);
  assert.equal(await page.locator("main img, main script").count(), 0);

  // Another account: the session is not found through the page or a forged post.
  const globex = await as(accounts.globex.secret);
  assert.equal((await globex.page.goto(`${server.base}/console/sessions?id=sess_perms`)).status(), 404);
  const csrf = await globex.page.getAttribute("input[name=csrf]", "value");
  const res = await globex.context.request.post(`${server.base}/console/sessions/sess_perms/permissions`, { form: { csrf, mode: "put", enabled: "false" }, headers: { Origin: server.base } });
  assert.equal(res.status(), 404);
  await globex.context.close();
  assert.equal((await api("GET", "/sessions/sess_perms/tool-permissions", accounts.acme.secret)).body.data.enabled, true);
  await context.close();
  assert.deepEqual(problems, []);
});

test("playground: a run from a form made from the schema is journaled with its arguments; hostile arguments and results are text", async () => {
  assert.equal((await api("POST", "/sessions", accounts.acme.secret, { id: "sess_play" })).status, 201);
  const { context, page } = await as(accounts.acme.secret);
  await visit(page, "/console/playground");
  await page.locator("input[name=session]").fill("sess_play");
  await page.locator("form[action='/console/playground'] button").first().click();
  await page.waitForSelector("select[name=tool]");
  await page.locator("select[name=tool]").selectOption("random_choice");
  await page.locator("form[method=get] button").click();
  await page.waitForSelector("#run-form");
  // The array field is a JSON textarea, required and labelled.
  const options = page.getByLabel(/^options/);
  assert.equal(await options.evaluate((el) => el.tagName), "TEXTAREA");
  assert.equal(await options.getAttribute("required"), "");
  await options.fill(JSON.stringify([XSS]));
  await page.locator("#run-form button[type=submit]").click();
  await page.waitForSelector("#result");
  const execID = (await page.textContent("#result-execution")).trim();
  assert.equal(await page.getAttribute("#result-execution", "href"), `/console/executions/${execID}`);
  assert.ok((await page.textContent("#result-text")).includes(XSS), "the result's markup is shown as text");
  assert.equal(await page.locator("main img, main script").count(), 0);
  await shot(page, "playground");
  await accessible(page, "after a run");
  const journal = (await api("GET", "/tool-executions?session_id=sess_play", accounts.acme.secret)).body.data;
  const rec = journal.find((r) => r.id === execID);
  assert.ok(rec, JSON.stringify(journal));
  assert.equal(rec.tool_name, "random_choice");
  assert.equal(rec.face, "console");
  assert.deepEqual(rec.args, { options: [XSS] });
  assert.equal(rec.account_id, "acme");
  await page.locator("#result-execution").click();
  await page.waitForURL(new RegExp(`/console/executions/${execID}$`));

  // A tool's error and the pipeline's validation error, shown as text.
  await page.goto(`${server.base}/console/playground?session=sess_play&tool=get_time`);
  await page.getByLabel(/^timezone/).fill(`Mars/<b>Olympus</b>`);
  await page.locator("#run-form button[type=submit]").click();
  await page.waitForSelector("#result");
  assert.equal(await page.locator("main b").count(), 0);
  await page.goto(`${server.base}/console/playground?session=sess_play&tool=random_choice`);
  await page.getByLabel(/^options/).fill("[]");
  await page.locator("#run-form button[type=submit]").click();
  await page.waitForSelector("[role=alert]");
  assert.match(await page.textContent("[role=alert]"), /invalid_arguments/);
  assert.equal(await page.textContent("#result-status"), "error — invalid_arguments");

  // Another account cannot run in acme's session, nor see its tools.
  const globex = await as(accounts.globex.secret);
  assert.equal((await globex.page.goto(`${server.base}/console/playground?session=sess_play`)).status(), 404);
  const csrf = await globex.page.getAttribute("input[name=csrf]", "value");
  const res = await globex.context.request.post(`${server.base}/console/playground`, { form: { csrf, session: "sess_play", tool: "get_time" }, headers: { Origin: server.base } });
  assert.equal(res.status(), 404);
  await globex.context.close();
  const after = (await api("GET", "/tool-executions?session_id=sess_play", accounts.acme.secret)).body.data;
  assert.ok(after.every((r) => r.account_id === "acme"));
  assert.equal(after.filter((r) => r.tool_name === "get_time").length, 1, "globex's forged run did not run in acme's session");
  await context.close();
  assert.deepEqual(problems, []);
});
