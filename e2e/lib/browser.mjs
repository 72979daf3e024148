// The console's e2e files share this: Debian's chromium driven headless by
// playwright-core, every page watched for what must never happen (a
// dialog, a console error — a CSP violation is one —, a page error), and
// axe-core's serious and critical findings on a page, and where the pages'
// screenshots go.

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const axeSource = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Where the console files put their screenshots: docs/console/ (the
 * committed images docs/console.md shows) under `make screenshots`, which
 * sets TOOLHOST_SCREENSHOTS=docs; else e2e/.results/console/, so that a
 * test run leaves the checkout as it was.
 */
export const screenshotDir = new URL(process.env.TOOLHOST_SCREENSHOTS === "docs" ? "../../docs/console/" : "../.results/console/", import.meta.url).pathname;

/** Debian's /usr/bin/chromium, headless, with nothing of its own on the network. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/**
 * A browser context whose waits give up after 10 s: a selector that never
 * matches fails the test at once instead of idling for Playwright's 30 s.
 */
export async function newContext(browser, opts = {}) {
  const context = await browser.newContext(opts);
  context.setDefaultTimeout(10_000);
  return context;
}

/**
 * Signs in to the console at base with an API key, through its sign-in
 * page (where /console/ must lead), in a new context of browser whose
 * pages are watched for problems: the context and its page, on the
 * overview.
 */
export async function signInWithKey(browser, base, key, problems, viewport = { width: 1280, height: 900 }) {
  const context = await newContext(browser, { viewport });
  const page = await context.newPage();
  watchPage(page, problems);
  await page.goto(base + "/console/");
  if (!/\/console\/sign-in$/.test(page.url())) throw new Error(`/console/ led to ${page.url()}, not the sign-in page`);
  await page.fill("#api_key", key);
  await Promise.all([page.waitForURL(/\/console\/overview$/), page.click("button[type=submit]")]);
  return { context, page };
}

/** Pushes onto problems every dialog, console error or warning and page error of page. */
export function watchPage(page, problems) {
  page.on("dialog", async (d) => {
    problems.push(`dialog on ${page.url()}: ${d.message()}`);
    await d.dismiss();
  });
  page.on("console", (m) => {
    // The browser logs every 4xx the tests ask for on purpose; a CSP
    // violation ("Refused to …") or a script error is a problem.
    if (/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) return;
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()} on ${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page) {
  const result = await page.evaluate(async (src) => {
    (0, eval)(src);
    const r = await globalThis.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
  }, axeSource);
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** A REST caller of base: api(method, path, key, body) → { status, body }. */
export function restAPI(base) {
  return async (method, path, key, body) => {
    const res = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  };
}
