// The client the MCP conformance suite runs for its client scenarios:
// `toolhost mcp-servers probe`, toolhost's MCP client (the gateway), told
// by the scenario's name what to call. The suite appends the server URL
// and sets MCP_CONFORMANCE_SCENARIO; TOOLHOST_PROBE_CONFIG names a config
// that allows the suite's loopback servers (fetch.allow_private).

import { spawnSync } from "node:child_process";
import { toolhostBin } from "./server.mjs";

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const calls = {
  initialize: [],
  tools_call: ["--call", "add_numbers", "--args", JSON.stringify({ a: 5, b: 3 })],
  "sse-retry": ["--call", "test_reconnection"],
};
if (!(scenario in calls)) {
  console.error(`probe-client: no plan for scenario ${scenario}`);
  process.exit(2);
}
const args = ["mcp-servers", "probe", "--config", process.env.TOOLHOST_PROBE_CONFIG, ...calls[scenario], url];
const res = spawnSync(toolhostBin(), args, { encoding: "utf8", timeout: 60000 });
process.stdout.write(res.stdout ?? "");
process.stderr.write(res.stderr ?? "");
process.exit(res.status ?? 1);
