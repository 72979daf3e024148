// fetch_page and web_search through `toolhost serve` and the official
// TypeScript MCP SDK client, against a site served from 127.0.0.1 the way
// ordinary web servers serve it: a long generated PDF read range by range
// with `pages`, a UTF-8 page sent as bare text/html whose <meta charset>
// comes after the first 1024 bytes, and a search engine that is down.

import assert from "node:assert/strict";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startServer, tempDir } from "./lib/server.mjs";
import { connectHTTP, textOf } from "./lib/mcp.mjs";

const PAGES = 700;

/** A PDF of n pages, page i saying "Page i of the long manual ...". */
function longPDF(n) {
  const objs = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    null, // the page tree, once the kids are known
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
  ];
  const kids = [];
  for (let i = 1; i <= n; i++) {
    const page = objs.length + 1;
    kids.push(`${page} 0 R`);
    const text = `BT /F1 12 Tf 72 720 Td (Page ${i} of the long manual, section ${Math.ceil(i / 50)}.) Tj ET`;
    objs.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${page + 1} 0 R >>`);
    objs.push(`<< /Length ${text.length} >>\nstream\n${text}\nendstream`);
  }
  objs[1] = `<< /Type /Pages /Kids [${kids.join(" ")}] /Count ${n} >>`;
  let out = "%PDF-1.4\n";
  const offsets = [];
  objs.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) out += `${String(off).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

const padding = `<script>var config = {${'"k": "some configuration value", '.repeat(60)}};</script>\n`;
const latePage = Buffer.from(
  `<!doctype html><html><head>${padding}<meta charset="utf-8"><title>Launch</title></head><body><article>` +
    `<h1>Launch day</h1><p>The rocket’s red glare — “quoted” and naïve café. Präteritum: Größere Häuser stehen dort drüben.</p>` +
    `<p>${"The launch went ahead after the weather cleared in the afternoon. ".repeat(6)}</p></article></body></html>`,
  "utf8",
);

let site, siteURL, server, client;
let pdfDownloads = 0;

before(async () => {
  const pdf = longPDF(PAGES);
  site = createServer((req, res) => {
    if (req.url === "/manual.pdf") {
      pdfDownloads++;
      res.writeHead(200, { "Content-Type": "application/pdf", "Content-Length": pdf.length });
      res.end(pdf);
    } else if (req.url.startsWith("/search")) {
      // A search engine that is down.
      res.writeHead(502, { "Content-Type": "text/plain" }).end("502 Bad Gateway");
    } else if (req.url === "/late-meta.html") {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(latePage);
    } else {
      res.writeHead(404).end();
    }
  });
  site.listen(0, "127.0.0.1");
  await once(site, "listening");
  siteURL = `http://127.0.0.1:${site.address().port}`;
  const dir = await tempDir();
  const config = join(dir, "config.json");
  // The site is on loopback, which the SSRF guard refuses unless the
  // operator allows it: this one address only.
  await writeFile(config, JSON.stringify({
    fetch: { allow_private: ["127.0.0.1"] },
    search: { providers: [{ kind: "searxng", name: "local", base_url: siteURL }], cache: { max_entries: -1 } },
  }));
  server = await startServer({ args: ["--config", config] });
  client = await connectHTTP(server.mcpURL);
});

after(async () => {
  await client?.close();
  await server?.stop();
  site?.close();
});

async function fetchPage(args) {
  return client.callTool({ name: "fetch_page", arguments: args });
}

test("a PDF longer than the page budget is read range by range with pages", async () => {
  const url = `${siteURL}/manual.pdf`;
  const first = await fetchPage({ url, max_length: 200000 });
  assert.equal(first.isError, undefined);
  const s1 = first.structuredContent;
  assert.equal(s1.pages, PAGES);
  assert.equal(s1.page_range, "1-300");
  assert.equal(s1.next_pages, "301-600");
  assert.equal(s1.pages_extracted, 300);
  assert.match(s1.content, /--- page 300 of 700 ---\n\nPage 300 of the long manual/);
  assert.match(textOf(first), /pages="301-600"/, "the cut note says how to ask for the next range");

  const second = (await fetchPage({ url, pages: s1.next_pages, max_length: 200000 })).structuredContent;
  assert.equal(second.page_range, "301-600");
  assert.equal(second.next_pages, "601-700");
  assert.match(second.content, /Page 301 of the long manual/);
  assert.doesNotMatch(second.content, /Page 300 of/);

  const third = (await fetchPage({ url, pages: second.next_pages, max_length: 200000 })).structuredContent;
  assert.equal(third.page_range, "601-700");
  assert.equal(third.next_pages, undefined);
  assert.match(third.content, /--- page 700 of 700 ---\n\nPage 700 of the long manual/);

  // Pages read before come from the kept text: nothing extracted, nothing billed.
  const again = (await fetchPage({ url, pages: "5,650-651" })).structuredContent;
  assert.equal(again.page_range, "5,650-651");
  assert.equal(again.pages_extracted, undefined);
  assert.equal(again.cached, true);
  assert.match(again.content, /Page 651 of the long manual/);
  assert.equal(pdfDownloads, 1, "the PDF is downloaded once");

  const past = await fetchPage({ url, pages: "701-710" });
  assert.equal(past.isError, true);
  assert.match(textOf(past), /700 pages/);
  // The error code is in structuredContent too, and it passed the SDK's
  // validation against the tool's output schema.
  assert.equal(past.structuredContent.error.code, "invalid_input");
  assert.equal(past._meta["toolhost/error"].code, "invalid_input");
});

test("a failed search carries its error code in structuredContent, valid against the output schema", async () => {
  const res = await client.callTool({ name: "web_search", arguments: { query: "gopher burrows" } });
  assert.equal(res.isError, true);
  assert.equal(res.structuredContent.error.code, "provider_unavailable");
  assert.equal(res.structuredContent.error.providers[0].provider, "local");
  const bad = await client.callTool({ name: "web_search", arguments: { query: "gophers", site: "*.example.org" } });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.error.code, "invalid_input");
});

test("a UTF-8 page sent as bare text/html with a late <meta charset> is not mojibake", async () => {
  for (const format of ["markdown", "text"]) {
    const res = await fetchPage({ url: `${siteURL}/late-meta.html`, format });
    const content = res.structuredContent.content;
    assert.match(content, /rocket’s/, format);
    assert.match(content, /Präteritum/, format);
    assert.doesNotMatch(content, /â€|Ã/, format);
  }
});
