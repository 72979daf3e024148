// OAuth 2.1 on the MCP endpoint with real clients nobody here wrote: the
// TypeScript MCP SDK's OAuth client (discovery from the 401, dynamic
// registration, PKCE, token refresh) against `toolhost serve` (not --dev),
// and the consent page in a real headless Chromium (Debian's
// /usr/bin/chromium driven by playwright-core), with a screenshot saved to
// e2e/.results/oauth/.

import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";
import { startServer, tempDir } from "./lib/server.mjs";

const results = new URL("./.results/oauth/", import.meta.url).pathname;
let server;
let configDir;
let admin;
let userKey;

before(async () => {
  configDir = await tempDir("toolhost-oauth-");
  const config = join(configDir, "config.json");
  await writeFile(config, JSON.stringify({ auth: { oauth: { access_token_ttl: "2s" } } }));
  server = await startServer({ dev: false, args: ["--config", config] });
  admin = server.logs().match(/th_[A-Za-z0-9_-]{32}/)?.[0];
  assert.ok(admin, "the first start prints an admin key");
  const res = await api("POST", "/admin/keys", admin, { account: "acme", name: "oauth-e2e", scopes: ["mcp"] });
  userKey = res.secret;
});

after(async () => {
  await server?.stop();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

async function api(method, path, key, body) {
  const res = await fetch(server.base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** An OAuthClientProvider kept in memory, as a CLI client would keep it on disk. */
class MemoryProvider {
  constructor(redirectUrl, name) {
    this._redirect = redirectUrl;
    this._name = name;
    this.authUrl = undefined;
  }
  get redirectUrl() { return this._redirect; }
  get clientMetadata() {
    return {
      client_name: this._name,
      redirect_uris: [this._redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  redirectToAuthorization(url) { this.authUrl = url; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  /** What the SDK calls when the server refuses what is stored: "all" on invalid_client, "tokens" on invalid_grant. */
  invalidateCredentials(scope) {
    this.invalidated = [...(this.invalidated ?? []), scope];
    if (scope === "all" || scope === "client") this._client = undefined;
    if (scope === "all" || scope === "tokens") this._tokens = undefined;
    if (scope === "all" || scope === "verifier") this._verifier = undefined;
  }
}

/**
 * The test helper that plays the user without a browser: follows the
 * authorization URL to the consent page, submits its form with the API key
 * (keeping the CSRF cookie) and returns the redirect back to the client.
 */
async function submitConsent(authUrl, apiKey) {
  let res = await fetch(authUrl, { redirect: "manual" });
  const consentURL = new URL(res.headers.get("location"), authUrl);
  assert.equal(consentURL.pathname, "/oauth/consent");
  res = await fetch(consentURL, { redirect: "manual" });
  const cookie = res.headers.get("set-cookie").split(";")[0];
  const page = await res.text();
  const field = (name) => page.match(new RegExp(`name="${name}" value="([^"]+)"`))[1];
  res = await fetch(new URL("/oauth/consent", consentURL), {
    method: "POST",
    redirect: "manual",
    headers: { Cookie: cookie, "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ id: field("id"), csrf: field("csrf"), api_key: apiKey, action: "approve" }),
  });
  assert.equal(res.status, 303);
  res = await fetch(new URL(res.headers.get("location"), consentURL), { redirect: "manual" });
  return new URL(res.headers.get("location"));
}

/** Connects, and when the server answers 401, authorizes through `authorize` and connects again. */
async function connectWithOAuth(provider, authorize) {
  const connect = async () => {
    const client = new Client({ name: "oauth-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(server.mcpURL, { authProvider: provider }));
    return client;
  };
  const first = new StreamableHTTPClientTransport(server.mcpURL, { authProvider: provider });
  const probe = new Client({ name: "oauth-e2e", version: "1.0.0" });
  await assert.rejects(probe.connect(first), UnauthorizedError, "the first connection needs authorization");
  assert.ok(provider.authUrl, "the SDK found the authorization server from the 401 and built an authorization URL");
  assert.equal(provider.authUrl.searchParams.get("code_challenge_method"), "S256");
  assert.equal(provider.authUrl.searchParams.get("resource"), server.mcpURL.href);
  const code = await authorize(provider.authUrl);
  await first.finishAuth(code);
  return connect();
}

test("the TypeScript SDK's OAuth client registers, consents, calls a tool, refreshes, and loses access when the grant is revoked", async () => {
  const provider = new MemoryProvider("http://127.0.0.1:9/callback", "ts-sdk e2e");
  const client = await connectWithOAuth(provider, async (url) => {
    const back = await submitConsent(url, userKey);
    assert.equal(back.searchParams.get("state"), url.searchParams.get("state"));
    return back.searchParams.get("code");
  });
  try {
    assert.ok(provider.clientInformation().client_id.startsWith("client_"), "registered dynamically");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "roll_dice"));
    const roll = await client.callTool({ name: "roll_dice", arguments: { sides: 6 } });
    assert.ok(!roll.isError, JSON.stringify(roll));
    const first = provider.tokens();
    assert.ok(first.refresh_token, "a refresh token is issued");

    // The access token expires; the SDK gets a 401 and refreshes.
    await new Promise((r) => setTimeout(r, 2500));
    const expired = await fetch(server.mcpURL, {
      method: "POST",
      headers: { Authorization: `Bearer ${first.access_token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: "{}",
    });
    assert.equal(expired.status, 401);
    assert.match(expired.headers.get("www-authenticate"), /error="invalid_token"/);
    const again = await client.callTool({ name: "roll_dice", arguments: { sides: 6 } });
    assert.ok(!again.isError, JSON.stringify(again));
    const second = provider.tokens();
    assert.notEqual(second.access_token, first.access_token);
    assert.notEqual(second.refresh_token, first.refresh_token, "the refresh token rotates");

    // Revoking the grant locks the client out at once.
    const { data } = await api("GET", "/admin/grants?account=acme", admin);
    const grant = data.find((g) => g.client_name === "ts-sdk e2e");
    assert.deepEqual(grant.scopes, ["mcp"]);
    await api("DELETE", `/admin/grants/${grant.id}`, admin);
    const revoked = await fetch(server.mcpURL, {
      method: "POST",
      headers: { Authorization: `Bearer ${second.access_token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: "{}",
    });
    assert.equal(revoked.status, 401);
  } finally {
    await client.close();
  }
});

test("a client whose registration expired gets invalid_client on refresh, and the SDK registers again and gets back in", async () => {
  // A client the server purged (registered, authorized, then unused past
  // auth.oauth.idle_client_ttl) is refused at the token endpoint like one
  // never registered (server/oauth: TestPurgedClientIsRefusedLikeAnUnknownOne);
  // expiring one here would take an hour at least, so the client holds
  // the registration and tokens of such a client: ids the server does not know.
  const provider = new MemoryProvider("http://127.0.0.1:9/callback", "ts-sdk re-registers");
  const expired = { client_id: "client_0123456789abcdef0123", redirect_uris: [provider.redirectUrl], token_endpoint_auth_method: "none" };
  provider.saveClientInformation(expired);
  provider.saveTokens({ access_token: "expired-access-token", refresh_token: "refresh-token-of-the-expired-client", token_type: "Bearer" });
  const refresh = await fetch(new URL("/oauth/token", server.base), {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "refresh-token-of-the-expired-client", client_id: expired.client_id }),
  });
  assert.equal(refresh.status, 401);
  assert.equal((await refresh.json()).error, "invalid_client");

  const client = await connectWithOAuth(provider, async (url) => {
    const back = await submitConsent(url, userKey);
    return back.searchParams.get("code");
  });
  try {
    assert.deepEqual(provider.invalidated, ["all"], "the SDK dropped the expired registration and its tokens, on invalid_client");
    const now = provider.clientInformation().client_id;
    assert.ok(now.startsWith("client_") && now !== expired.client_id, `registered again: ${now}`);
    const roll = await client.callTool({ name: "roll_dice", arguments: { sides: 6 } });
    assert.ok(!roll.isError, JSON.stringify(roll));
  } finally {
    await client.close();
  }
});

test("the consent page works in a real headless Chromium: it renders, the form signs in and approves", async () => {
  await mkdir(results, { recursive: true });
  // The client's redirect target: a loopback listener, as a CLI client runs.
  let gotCode;
  const codeReceived = new Promise((resolve) => (gotCode = resolve));
  const callback = createServer((req, res) => {
    const u = new URL(req.url, "http://127.0.0.1");
    res.end("authorized; you may close this window");
    if (u.pathname === "/callback") gotCode(u.searchParams);
  });
  callback.listen(0, "127.0.0.1");
  await once(callback, "listening");
  const profile = await tempDir("toolhost-chromium-");
  const provider = new MemoryProvider(`http://127.0.0.1:${callback.address().port}/callback`, "Browser <b>client</b>");
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const client = await connectWithOAuth(provider, async (url) => {
      const page = await context.newPage();
      const response = await page.goto(url.href);
      assert.equal(response.status(), 200);
      // What the user is shown: the client's name (escaped, not markup),
      // the host they are sent back to, the scope asked for.
      assert.equal(await page.textContent("#client-name"), "Browser <b>client</b>");
      assert.equal(await page.textContent("#redirect-host"), `127.0.0.1:${callback.address().port}`);
      assert.match(await page.textContent("#scopes"), /mcp/);
      await page.screenshot({ path: join(results, "consent.png"), fullPage: true });
      // A wrong key is refused on the page itself.
      await page.fill("#api_key", "th_" + "x".repeat(32));
      await page.click("button[value=approve]");
      assert.match(await page.textContent("[role=alert]"), /not valid/);
      await page.screenshot({ path: join(results, "consent-wrong-key.png"), fullPage: true });
      await page.fill("#api_key", userKey);
      await Promise.all([page.waitForURL(/\/callback\?/), page.click("button[value=approve]")]);
      const params = await codeReceived;
      assert.equal(params.get("state"), url.searchParams.get("state"));
      return params.get("code");
    });
    const roll = await client.callTool({ name: "roll_dice", arguments: { sides: 6 } });
    assert.ok(!roll.isError, JSON.stringify(roll));
    await client.close();
  } finally {
    await context?.close();
    callback.close();
    await rm(profile, { recursive: true, force: true });
  }
});
