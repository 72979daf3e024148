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
  // The suite's tools declare no readOnlyHint, so they ask for approval
  // (irreversible by default): the operator's probe approves its call.
  tools_call: ["--call", "add_numbers", "--args", JSON.stringify({ a: 5, b: 3 }), "--approve"],
  "sse-retry": ["--call", "test_reconnection", "--approve"],
};
// auth/* scenarios: the oauth_authorization_code flow; the suite's
// authorization servers approve without a user, so the probe follows the
// redirect itself. pre-registration hands its client in the context.
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
const env = { ...process.env };
if (scenario.startsWith("auth/")) {
  calls[scenario] = ["--oauth"];
  if (context.client_id) {
    calls[scenario].push("--client-id", context.client_id);
    if (context.client_secret) {
      env.PROBE_CLIENT_SECRET = context.client_secret;
      calls[scenario].push("--client-secret-env", "PROBE_CLIENT_SECRET");
    }
  }
}
if (!(scenario in calls)) {
  console.error(`probe-client: no plan for scenario ${scenario}`);
  process.exit(2);
}
const args = ["mcp-servers", "probe", "--config", process.env.TOOLHOST_PROBE_CONFIG, ...calls[scenario], url];
const res = spawnSync(toolhostBin(), args, { encoding: "utf8", timeout: 60000, env });
process.stdout.write(res.stdout ?? "");
process.stderr.write(res.stderr ?? "");
process.exit(res.status ?? 1);
