// Signing in to the console through the embedded OAuth server in a real
// browser (Debian's /usr/bin/chromium, headless, playwright-core) against
// `toolhost serve` (no --dev) on loopback: the sign-in page's "Sign in
// with toolhost OAuth" button leads to the consent page, the user approves
// with an API key and lands on the overview; a tool definition created in
// the UI is there over REST; revoking the grant over REST ends the
// session at its next request. A denied consent and a hostile error
// answer are pages naming a code, markup shown as text. No dialog, no
// console error (a CSP violation is one); axe-core finds nothing serious
// or critical on the pages of the flow.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { after, before, test } from "node:test";
import { launchBrowser, newContext, restAPI, seriousViolations, watchPage } from "./lib/browser.mjs";
import { startServer, tempDir } from "./lib/server.mjs";

const XSS = `<script>alert("x")</script><img src=x onerror=alert("y")>`;

let server, work, browser, admin, acme;
const problems = []; // dialogs, console errors, page errors: none allowed

before(async () => {
  work = await tempDir("toolhost-console-oauth-");
  server = await startServer({ dev: false });
  admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  const r = await api("POST", "/admin/keys", admin, { account: "acme", name: "acme", scopes: ["mcp", "tools"] });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  acme = r.body.secret;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  assert.deepEqual(problems, []);
});

function api(method, path, key, body) {
  return restAPI(server.base)(method, path, key, body);
}

async function accessible(page) {
  const bad = await seriousViolations(page);
  assert.deepEqual(bad, [], `${page.url()}: ${JSON.stringify(bad)}`);
}

// toConsent opens the sign-in page in a fresh context and follows the
// OAuth button to the authorization server's consent page.
async function toConsent() {
  const context = await newContext(browser, { viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  watchPage(page, problems);
  await page.goto(server.base + "/console/sign-in");
  await accessible(page);
  await Promise.all([page.waitForURL(/\/oauth\/consent\?id=/), page.click("#oauth-sign-in")]);
  assert.equal(await page.textContent("#client-name"), "toolhost console");
  return { context, page };
}

async function acmeGrants() {
  const r = await api("GET", "/admin/grants?account=acme", admin);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data.filter((g) => !g.revoked_at);
}

test("OAuth sign-in: consent, overview, an action checked over REST, revocation ends the session", async () => {
  const { context, page } = await toConsent();
  await accessible(page);
  await page.fill("#api_key", acme);
  await Promise.all([page.waitForURL(/\/console\/overview$/), page.click("button[value=approve]")]);
  assert.equal(await page.textContent("h1"), "Overview");
  await accessible(page);
  const grants = await acmeGrants();
  assert.equal(grants.length, 1);
  assert.deepEqual(grants[0].scopes, ["mcp", "tools"], "the grant holds the key's scopes, admin not among them");

  await page.goto(server.base + "/console/tool-definitions");
  await page.fill("form.defform input[name=name]", "oauth_lookup");
  await page.fill("form.defform textarea[name=description]", XSS);
  await page.fill("form.defform textarea[name=parameters]", `{"type":"object","properties":{"q":{"type":"string"}}}`);
  await page.click("form.defform button[type=submit]");
  await page.waitForLoadState();
  const defs = await api("GET", "/tools/definitions", acme);
  assert.equal(defs.status, 200);
  const def = defs.body.data.find((d) => d.name === "oauth_lookup");
  assert.ok(def, JSON.stringify(defs.body));
  assert.equal(def.description, XSS, "created as acme, text kept as typed");

  const del = await api("DELETE", `/admin/grants/${grants[0].id}`, admin);
  assert.ok(del.status === 200 || del.status === 204, `revoke: ${del.status}`);
  await page.goto(server.base + "/console/overview");
  assert.match(page.url(), /\/console\/sign-in$/, "the session outlived its grant");
  await context.close();
});

test("a denied consent and a hostile error answer are pages with a code, signing nobody in", async () => {
  const { context, page } = await toConsent();
  await Promise.all([page.waitForURL(/\/console\/oauth\/callback\?/), page.click("button[value=deny]")]);
  assert.equal(await page.textContent("#error-code"), "access_denied");
  await accessible(page);
  const res = await page.goto(server.base + "/console/oauth/callback?error=server_error&state=x&error_description=" + encodeURIComponent(XSS));
  assert.equal(res.status(), 400);
  assert.equal(await page.textContent("#error-code"), "server_error");
  assert.ok((await page.textContent("[role=alert]")).includes(XSS), "the description is shown as text");
  await accessible(page);
  await page.goto(server.base + "/console/overview");
  assert.match(page.url(), /\/console\/sign-in$/);
  assert.equal((await acmeGrants()).length, 0);
  await context.close();
});
