// Several `toolhost serve` replicas on one PostgreSQL and one Redis behind
// Debian's HAProxy (round robin, a generated configuration), for the
// replica tests. docs/operations.md ("Running several replicas") shows the
// same HAProxy configuration.

import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, startServer, toolhostBin } from "./server.mjs";

const run = promisify(execFile);

/** Why the replica tests cannot run here, or "" when they can. */
export function replicaPrerequisites() {
  const missing = [];
  if (!process.env.TOOLHOST_TEST_POSTGRES) missing.push("TOOLHOST_TEST_POSTGRES");
  if (!process.env.TOOLHOST_TEST_REDIS) missing.push("TOOLHOST_TEST_REDIS");
  if (!haproxyBin()) missing.push("haproxy (apt-get install haproxy)");
  return missing.length ? `needs ${missing.join(", ")} (.ci/run provides them)` : "";
}

/** Debian's haproxy: $HAPROXY_BIN, else /usr/sbin/haproxy. */
export function haproxyBin() {
  for (const p of [process.env.HAPROXY_BIN, "/usr/sbin/haproxy", "/usr/bin/haproxy"]) {
    if (p && existsSync(p)) return p;
  }
  return "";
}

/**
 * A PostgreSQL URL on a fresh schema (created by the first replica) and a
 * Redis prefix of their own, so runs never see each other's state; drop()
 * removes both.
 */
export function sharedStores(name) {
  const tag = `${name}_${process.pid}_${Date.now()}`;
  const pg = new URL(process.env.TOOLHOST_TEST_POSTGRES);
  pg.searchParams.set("search_path", tag);
  const redisPrefix = `toolhost-e2e:${tag}:`;
  const drop = async () => {
    const admin = new URL(process.env.TOOLHOST_TEST_POSTGRES);
    await run("psql", [admin.toString(), "-qc", `DROP SCHEMA IF EXISTS "${tag}" CASCADE`]).catch(() => {});
    const redis = new URL(process.env.TOOLHOST_TEST_REDIS);
    await run("sh", ["-c", `redis-cli -u "$1" --scan --pattern "$2*" | xargs -r redis-cli -u "$1" DEL`, "sh", redis.toString(), redisPrefix]).catch(() => {});
  };
  return { postgres: pg.toString(), redis: process.env.TOOLHOST_TEST_REDIS, redisPrefix, drop };
}

/** Runs `toolhost keys create` on the shared store and returns the secret. */
export async function createKey(stores, dataDir, args) {
  const { stderr, stdout } = await run(toolhostBin(), ["keys", "create", "--postgres", stores.postgres, "--data", dataDir, ...args]);
  const m = /(th_\S+)/.exec(stdout + stderr);
  if (!m) throw new Error(`keys create printed no secret:\n${stdout}${stderr}`);
  return m[1];
}

/** Starts one replica (not --dev: API keys and limits are on) on the stores. */
export function startReplica(stores, config, extra = [], opts = {}) {
  return startServer({
    ...opts,
    dev: false,
    args: ["--postgres", stores.postgres, "--redis", stores.redis, "--stateless", "--config", config, ...extra],
  });
}

/** The HAProxy configuration of the replica tests (and of the docs). */
export function haproxyConfig(port, backends) {
  return [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode http",
    "  timeout connect 2s",
    "  timeout client 120s",
    "  timeout server 120s",
    "  option forwardfor",
    "  option redispatch",
    "  retries 3",
    "frontend toolhost",
    `  bind 127.0.0.1:${port}`,
    "  default_backend replicas",
    "backend replicas",
    "  balance roundrobin",
    "  option httpchk GET /healthz",
    "  http-response set-header X-Toolhost-Replica %[srv_name]",
    ...backends.map((b, i) => `  server r${i + 1} 127.0.0.1:${b.port} check inter 500ms fall 2 rise 1`),
    "",
  ].join("\n");
}

/**
 * Starts haproxy in the foreground in front of the replicas; resolves once
 * it answers /healthz through both. Returns { base, stop() }.
 */
export async function startHAProxy(dir, replicas) {
  const port = await freePort();
  const cfg = join(dir, "haproxy.cfg");
  await writeFile(cfg, haproxyConfig(port, replicas));
  const proc = spawn(haproxyBin(), ["-db", "-f", cfg], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (c) => (output += c));
  proc.stderr.on("data", (c) => (output += c));
  const exited = new Promise((res) => proc.once("exit", res));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      await exited;
    }
  };
  const seen = new Set();
  const deadline = Date.now() + 20000;
  while (seen.size < replicas.length) {
    if (proc.exitCode !== null) throw new Error(`haproxy exited:\n${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`haproxy did not reach every replica within 20 s:\n${output}`);
    }
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.ok) seen.add(res.headers.get("x-toolhost-replica"));
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { base, port, stop, logs: () => output };
}
