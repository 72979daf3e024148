// A client the MCP conformance suite runs for an auth/* scenario that
// goes through toolhost's REST API instead of the probe: it registers
// the suite's server with auth oauth_authorization_code (unavailable until
// authorized), asks toolhost for the authorization URL, plays the user's
// browser (opens the URL; the suite's authorization server approves
// without a user and redirects to toolhost's callback; it follows that
// redirect) and expects the server live with its tools. TOOLHOST_BASE and
// TOOLHOST_KEY name the running toolhost and a key with scope tools.

const url = process.argv.at(-1);
const base = process.env.TOOLHOST_BASE;
const key = process.env.TOOLHOST_KEY;
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");

async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

function fail(msg, detail) {
  console.error(`rest-oauth-client: ${msg}: ${JSON.stringify(detail)}`);
  process.exit(1);
}

const auth = { type: "oauth_authorization_code" };
if (context.client_id) auth.client_id = context.client_id;
if (context.client_secret) auth.client_secret = context.client_secret;
const name = `conf_${process.pid}`;
const reg = await api("POST", "/mcp-servers", { name, url, auth });
if (reg.status !== 201) fail("register", reg);
if (reg.body.data.catalog.catalog_source !== "unavailable" || !/authorization/.test(reg.body.data.catalog.error ?? "")) {
  fail("before authorization the catalog is unavailable with the reason", reg.body.data.catalog);
}
if (reg.body.data.auth.authorized !== false) fail("not authorized yet", reg.body.data.auth);
const id = reg.body.data.id;
// Asked twice: the second authorization replaces the first, whose URL
// then leads to an unknown state.
const first = await api("POST", `/mcp-servers/${id}/authorize`);
if (first.status !== 200) fail("authorize", first);
const start = await api("POST", `/mcp-servers/${id}/authorize`);
if (start.status !== 200) fail("authorize again", start);
const stale = await fetch((await fetch(first.body.data.authorization_url, { redirect: "manual" })).headers.get("location"));
const staleBody = await stale.json();
if (stale.status !== 400 || staleBody.error?.code !== "unknown_state") fail("the replaced authorization's callback", staleBody);
// The user's browser: the authorization server redirects to toolhost.
const consent = await fetch(start.body.data.authorization_url, { redirect: "manual" });
const callback = consent.headers.get("location");
if (!callback || !callback.startsWith(`${base}/mcp-servers/oauth/callback?`)) fail("redirect to toolhost's callback", { status: consent.status, callback });
const done = await fetch(callback);
const doneBody = await done.json();
if (done.status !== 200) fail("callback", doneBody);
if (doneBody.data.catalog.catalog_source !== "live" || !doneBody.data.catalog.tools.includes("test-tool")) fail("live after the callback", doneBody.data);
if (doneBody.data.auth.authorized !== true) fail("authorized", doneBody.data.auth);
if (JSON.stringify(doneBody).includes("test-token")) fail("a token in the response", doneBody);
// The same callback twice: the state is good once.
const again = await fetch(callback);
const againBody = await again.json();
if (again.status !== 400 || againBody.error?.code !== "unknown_state") fail("a replayed callback", againBody);
const refreshed = await api("POST", `/mcp-servers/${id}/refresh`);
if (refreshed.status !== 200 || refreshed.body.data.catalog.catalog_source !== "live") fail("refresh with the sealed token", refreshed);
console.log(JSON.stringify({ id, catalog: refreshed.body.data.catalog }));
