// The scripted fake upstream model for the e2e files that route /v1 to it:
// the program of server/v1/fakeupstream/cmd/fakeupstream, started on a free
// loopback port from a script, with what it was sent read back over HTTP.
//
// The program comes from $FAKEUPSTREAM_BIN (scripts/e2e.sh sets it to
// bin/fakeupstream, which `make build` produces); without it, it is built
// with `go build` once per process, into the work directory of the first
// start, so a test file run alone needs nothing but Go.

import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { access, writeFile } from "node:fs/promises";
import { constants } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** This process's go build: { out, done }, or undefined before the first. */
let build;

/**
 * The fake upstream program: $FAKEUPSTREAM_BIN, or the one this process
 * built (again when the directory it was built into has been removed).
 */
async function fakeupstreamBin(dir) {
  if (process.env.FAKEUPSTREAM_BIN) return process.env.FAKEUPSTREAM_BIN;
  if (build) {
    try {
      await build.done;
      await access(build.out, constants.X_OK);
      return build.out;
    } catch {
      build = undefined;
    }
  }
  const out = join(dir, "fakeupstream");
  const done = promisify(execFile)("go", ["build", "-o", out, "./server/v1/fakeupstream/cmd/fakeupstream"], { cwd: repo });
  build = { out, done };
  await done;
  return out;
}

/**
 * Writes script (a fakeupstream Script: { conversations: [...] }) to
 * <dir>/script.json and starts `fakeupstream -script <file> -addr
 * 127.0.0.1:0 ...args`, resolving once it printed its base URL (which ends
 * in /v1) on its first line of stdout. Its stderr goes to the test's.
 *
 * Returns { url, proc, requests(), traceparents(), stop() }: requests() is
 * GET <url>/requests, the bodies it was sent in arrival order;
 * traceparents() is GET <url>/traceparents, the traceparent header of each
 * (null before the first). stop() sends SIGTERM and waits for the exit
 * (SIGKILL after killAfterMs); it is safe to call twice. Pass it to after()
 * so a failing test does not leak the process. The caller removes dir.
 *
 * @param {object} script
 * @param {object} opts
 * @param {string} opts.dir an existing work directory of the test's
 * @param {string[]} [opts.args] extra arguments after the defaults (a later
 *   -addr wins)
 * @param {number} [opts.startTimeoutMs=20000] for the URL line, after the build
 * @param {number} [opts.killAfterMs=10000]
 */
export async function startFakeUpstream(script, opts) {
  const { dir, args = [], startTimeoutMs = 20000, killAfterMs = 10000 } = opts ?? {};
  if (!dir) throw new Error("startFakeUpstream: opts.dir (a work directory) is required");
  const scriptPath = join(dir, "script.json");
  await writeFile(scriptPath, JSON.stringify(script));
  const bin = await fakeupstreamBin(dir);
  const proc = spawn(bin, ["-script", scriptPath, "-addr", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((res) => proc.once("exit", (code, signal) => res({ code, signal })));

  let stopping;
  const stop = () => (stopping ??= (async () => {
    if (proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), killAfterMs);
    await exited;
    clearTimeout(timer);
  })());

  // The first of: the URL line, an exit, a spawn error, the deadline. Each
  // resolves (none rejects) so the losers cannot become unhandled rejections.
  let timer;
  const outcome = await Promise.race([
    once(createInterface({ input: proc.stdout }), "line").then(([line]) => ({ url: line })),
    exited.then(({ code, signal }) => ({ error: `exited before printing its URL (code ${code}, signal ${signal})` })),
    once(proc, "error").then(([err]) => ({ error: `${err.message} (set FAKEUPSTREAM_BIN, or put go on PATH)` })),
    new Promise((res) => (timer = setTimeout(() => res({ error: `printed no URL within ${startTimeoutMs} ms` }), startTimeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome.error) {
    await stop();
    throw new Error(`fakeupstream ${bin}: ${outcome.error}`);
  }

  const { url } = outcome;
  const getJSON = async (path) => {
    const res = await fetch(`${url}${path}`);
    if (res.status !== 200) throw new Error(`GET ${url}${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    url,
    proc,
    requests: () => getJSON("/requests"),
    traceparents: () => getJSON("/traceparents"),
    stop,
  };
}
