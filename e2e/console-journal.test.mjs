// The console's journal, jobs and cross-account approvals in a real
// browser (Debian's /usr/bin/chromium, headless, playwright-core) against
// `toolhost serve` (no --dev) on loopback: the executions page pages by
// cursor (Older, Newer) keeping its filters, each call once; a changed
// cursor is refused on the page. The jobs page lists the account's
// background jobs and cancels a queued and a running one through the UI,
// checked over REST; an admin picks another account with the Account
// field and cancels its queued job there, which that account's neighbour
// cannot do through the page or a forged post. An admin sees and approves another account's pending
// approval; that account's neighbour, naming it, is refused. Hostile text
// is shown as text: no dialog, no console error (a CSP violation is one);
// axe-core finds nothing serious or critical. The jobs page's screenshot
// goes to docs/console/ under `make screenshots`.

import assert from "node:assert/strict";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { launchBrowser, restAPI, screenshotDir, seriousViolations, signInWithKey } from "./lib/browser.mjs";
import { startServer, tempDir } from "./lib/server.mjs";
import { connectHTTP, textOf } from "./lib/mcp.mjs";

const shots = screenshotDir;
const XSS = `<script>alert("x")</script><img src=x onerror=alert("y")>`;

let server, work, browser, admin;
const accounts = {}; // name → secret
const problems = []; // dialogs, console errors, page errors: none allowed
const clients = [];

before(async () => {
  work = await tempDir("toolhost-console-journal-");
  const config = join(work, "config.json");
  await writeFile(config, JSON.stringify({ jobs: { workers: 1 }, tools: { require_approval: { random_choice: "always" } } }));
  server = await startServer({ dev: false, args: ["--config", config] });
  admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  for (const name of ["acme", "globex"]) {
    const r = await api("POST", "/admin/keys", admin, { account: name, name, scopes: ["mcp", "tools"] });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    accounts[name] = r.body.secret;
  }
  await mkdir(shots, { recursive: true });
  browser = await launchBrowser();
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await browser?.close();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

function api(method, path, key, body) {
  return restAPI(server.base)(method, path, key, body);
}

async function mcp(key) {
  const client = await connectHTTP(server.mcpURL, { headers: { Authorization: `Bearer ${key}` }, name: "console-journal-e2e" });
  clients.push(client);
  return client;
}

function signIn(key) {
  return signInWithKey(browser, server.base, key, problems);
}

async function accessible(page) {
  const bad = await seriousViolations(page);
  assert.deepEqual(bad, [], `${page.url()}: ${JSON.stringify(bad)}`);
}

async function rowIDs(page) {
  const hrefs = await page.locator("#executions tbody a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  return hrefs.map((h) => h.split("/").pop().split("?")[0]);
}

test("executions: Older and Newer page by cursor, keeping the filters, each call once", async () => {
  const client = await mcp(accounts.acme);
  for (let i = 0; i < 12; i++) {
    const r = await client.callTool({ name: "get_time", arguments: {} });
    assert.ok(!r.isError, textOf(r));
  }
  await client.callTool({ name: "roll_dice", arguments: { sides: 6 } });
  const { context, page } = await signIn(accounts.acme);
  await page.goto(server.base + "/console/executions?tool_name=get_time&limit=5");
  const pages = [await rowIDs(page)];
  await accessible(page);
  while (await page.locator("#next-page").count()) {
    await Promise.all([page.waitForURL(/cursor=/), page.click("#next-page")]);
    assert.match(page.url(), /tool_name=get_time/);
    assert.match(page.url(), /limit=5/);
    pages.push(await rowIDs(page));
    assert.ok(pages.length < 10, "the pages do not end");
  }
  assert.deepEqual(pages.map((p) => p.length), [5, 5, 2]);
  const all = pages.flat();
  assert.equal(new Set(all).size, 12, "a call was shown twice");
  await accessible(page);
  // Newer from the last page is the second one again.
  await page.click("#prev-page");
  await page.waitForLoadState();
  assert.deepEqual(await rowIDs(page), pages[1]);
  // A changed cursor is refused on the page, showing nothing.
  const u = new URL(page.url());
  u.searchParams.set("cursor", u.searchParams.get("cursor").slice(0, -3) + "AAA");
  const res = await page.goto(u.toString());
  assert.equal(res.status(), 400);
  assert.match(await page.textContent("[role=alert]"), /first page/);
  assert.equal(await page.locator("#executions tbody a").count(), 0);
  // The same calls over REST, by next_cursor.
  const sess = (await api("GET", `/tool-executions/${all[0]}`, accounts.acme)).body.data.session_id;
  let rest = await api("GET", `/tool-executions?session_id=${sess}&tool_name=get_time&limit=5`, accounts.acme);
  const restIDs = rest.body.data.map((r) => r.id);
  while (rest.body.meta.next_cursor) {
    rest = await api("GET", `/tool-executions?session_id=${sess}&tool_name=get_time&limit=5&cursor=${encodeURIComponent(rest.body.meta.next_cursor)}`, accounts.acme);
    restIDs.push(...rest.body.data.map((r) => r.id));
  }
  assert.deepEqual(restIDs, all);
  await context.close();
  assert.deepEqual(problems, []);
});

/** The execution over REST once pred holds (polled: the state is the server's). */
async function executionWhen(id, key, pred) {
  for (let i = 0; i < 600; i++) {
    const r = await api("GET", `/tool-executions/${id}`, key);
    if (r.status === 200 && pred(r.body.data)) return r.body.data;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`execution ${id} never reached the state`);
}

async function defer(client, code) {
  const res = await client.callTool({ name: "run_code", arguments: { code, timeout_ms: 60000 }, _meta: { "toolhost/delivery": "async_job" } });
  assert.equal(res.isError ?? false, false, JSON.stringify(res));
  return res.structuredContent.execution_id;
}

test("jobs: the page lists the account's jobs; a queued and a running one cancelled in the UI are cancelled over REST", async () => {
  const client = await mcp(accounts.acme);
  const running = await defer(client, "import time\ntime.sleep(50)\nprint('not this')");
  await executionWhen(running, accounts.acme, (x) => x.status === "running");
  const queued = await defer(client, "print('never')"); // one worker: it waits
  const { context, page } = await signIn(accounts.acme);
  assert.match(await page.textContent("#job-figures"), /Queue depth/);
  await page.goto(server.base + "/console/jobs");
  await accessible(page);
  assert.match(await page.textContent(`#job-${running}`), /running/);
  assert.match(await page.textContent(`#job-${queued}`), /queued/);
  assert.equal(await page.textContent("#jobs-queued"), "1");
  await page.screenshot({ path: join(shots, "jobs.png"), fullPage: true });

  await page.locator(`#job-${queued} button`).click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /cancelled/);
  const q = await executionWhen(queued, accounts.acme, (x) => x.lifecycle_state === "finished");
  assert.equal(q.state, "cancelled_before_commit");
  assert.equal(await page.locator(`#job-${queued} button`).count(), 0, "an ended job keeps its Cancel button");

  await page.locator(`#job-${running} button`).click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /told to stop|cancelled/);
  const r = await executionWhen(running, accounts.acme, (x) => x.lifecycle_state === "finished");
  assert.notEqual(r.status, "success");
  assert.doesNotMatch(JSON.stringify(r.result ?? {}), /not this/);
  // Another account's job: the REST route's 404, through a forged post.
  const globex = await signIn(accounts.globex);
  await globex.page.goto(server.base + "/console/jobs");
  assert.equal(await globex.page.locator(`#job-${queued}`).count(), 0);
  const csrf = await globex.page.getAttribute("input[name=csrf]", "value");
  const forged = await globex.context.request.post(`${server.base}/console/jobs`, { form: { id: running, csrf }, maxRedirects: 0 });
  assert.equal(forged.status(), 404);
  await globex.context.close();
  await context.close();
  assert.deepEqual(problems, []);
});

test("jobs: an admin picks another account and cancels its job in the UI; an account key cannot, through the page or a forged post", async () => {
  const client = await mcp(accounts.globex);
  const running = await defer(client, "import time\ntime.sleep(50)\nprint('not this')");
  await executionWhen(running, accounts.globex, (x) => x.status === "running");
  const queued = await defer(client, "print('never')"); // one worker: it waits

  // acme, naming globex: the page and a forged post are refused; nothing changes.
  const acme = await signIn(accounts.acme);
  const refused = await acme.page.goto(server.base + "/console/jobs?account=globex");
  assert.equal(refused.status(), 403);
  assert.equal(await acme.page.locator(`#job-${queued}`).count(), 0);
  await acme.page.goto(server.base + "/console/jobs");
  const csrf = await acme.page.getAttribute("input[name=csrf]", "value");
  for (const form of [{ id: queued, account: "globex", csrf }, { id: queued, account: "globex\u202e<b>x</b>", csrf }]) {
    const forged = await acme.context.request.post(`${server.base}/console/jobs`, { form, maxRedirects: 0 });
    assert.equal(forged.status(), 403);
  }
  await acme.context.close();
  const still = await api("GET", `/tool-executions/${queued}`, accounts.globex);
  assert.equal(still.body.data.status, "queued");
  assert.equal((await api("DELETE", `/tool-executions/${queued}/job?account=globex`, accounts.acme)).status, 403);

  // The admin picks globex with the Account field: its job, its figures, Cancel.
  const { context, page } = await signIn(admin);
  await page.goto(server.base + "/console/jobs");
  await page.fill("#account-select", "globex");
  await Promise.all([page.waitForURL(/\/console\/jobs\?account=globex/), page.click("form.account button")]);
  assert.match(await page.textContent(`#job-${queued}`), /queued/);
  assert.equal(await page.textContent("#jobs-queued"), "1");
  await page.locator(`#job-${queued} button`).click();
  await page.waitForSelector("#notice");
  assert.match(await page.textContent("#notice"), /cancelled/);
  assert.equal(await page.textContent("#jobs-queued"), "0");
  const q = await executionWhen(queued, accounts.globex, (x) => x.lifecycle_state === "finished");
  assert.equal(q.state, "cancelled_before_commit");
  await page.goto(server.base + "/console/overview?account=globex");
  assert.equal(await page.textContent("#jobs-queued"), "0");
  assert.equal(await page.textContent("#jobs-running"), "1");
  // The running one, by the same route over REST as the admin.
  assert.equal((await api("DELETE", `/tool-executions/${running}/job?account=globex`, admin)).status, 202);
  await executionWhen(running, accounts.globex, (x) => x.lifecycle_state === "finished");
  await context.close();
  assert.deepEqual(problems, []);
});

test("approvals: an admin sees and approves another account's pending approval; an account key does not see it", async () => {
  const client = await mcp(accounts.globex);
  const wait = (await client.callTool({ name: "random_choice", arguments: { options: [XSS, "tea"] } }))._meta?.["toolhost/error"] ?? {};
  assert.equal(wait.code, "approval_required");

  const acme = await signIn(accounts.acme);
  await acme.page.goto(server.base + "/console/approvals");
  assert.equal(await acme.page.locator(`#approval-${wait.approval_id}`).count(), 0);
  const refused = await acme.page.goto(server.base + "/console/approvals?account=globex");
  assert.equal(refused.status(), 403);
  assert.equal(await acme.page.locator(`#approval-${wait.approval_id}`).count(), 0);
  await acme.context.close();

  const { context, page } = await signIn(admin);
  await page.goto(server.base + "/console/approvals");
  await page.fill("#account-select", "globex");
  await Promise.all([page.waitForURL(/account=globex/), page.click("form.account button")]);
  const card = page.locator(`#approval-${wait.approval_id}`);
  const args = await card.locator(".args").textContent();
  assert.ok(args.includes("<script>alert(") && args.includes("<img src=x onerror=alert("), `the arguments are shown as text: ${args}`);
  assert.equal(await page.locator("main img, main script").count(), 0);
  await accessible(page);
  await card.locator("button[value=approve]").click();
  await page.waitForSelector("#notice");
  const r = await api("GET", `/approvals/${wait.approval_id}`, accounts.globex);
  assert.equal(r.body.data.status, "approved");
  await context.close();
  assert.deepEqual(problems, []);
});
