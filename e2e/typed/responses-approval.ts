// The approval round trip on /v1/responses written against the openai
// client's own types, with no casts: hosted-approvals.test.mjs compiles
// this file with tsc (strict) and runs what it compiled against toolhost,
// so a shape the client cannot type fails the compile and a shape toolhost
// does not send fails the run.

import OpenAI from "openai";
import type {
  Response,
  ResponseInputItem,
  ResponseOutputItem,
  Tool,
} from "openai/resources/responses/responses";

export interface Approved {
  /** The id of the mcp_approval_request the first response ended with. */
  requestID: string;
  /** The mcp_call of the second response, linked to that request. */
  call: ResponseOutputItem.McpCall;
  /** The model's final text. */
  text: string;
}

/** The approval requests a response ended with, narrowed by the client's types. */
export function approvalRequests(res: Response): ResponseOutputItem.McpApprovalRequest[] {
  return res.output.filter((item): item is ResponseOutputItem.McpApprovalRequest => item.type === "mcp_approval_request");
}

/** What the first response returned, sent back as the client's input items. */
function asInput(item: ResponseOutputItem): ResponseInputItem[] {
  switch (item.type) {
    case "mcp_list_tools":
    case "mcp_approval_request":
    case "mcp_call":
    case "message":
      return [item];
    default:
      return [];
  }
}

/**
 * Asks with require_approval as {"always": {"tool_names": [tool]}}, then
 * approves every request the response ended with and returns the call that
 * ran under the approval.
 */
export async function askThenApprove(client: OpenAI, model: string, prompt: string, label: string, tool: string): Promise<Approved> {
  const tools: Tool[] = [{
    type: "mcp",
    server_label: label,
    allowed_tools: [tool],
    require_approval: { always: { tool_names: [tool] } },
  }];
  const first = await client.responses.create({ model, input: prompt, tools });
  const [request] = approvalRequests(first);
  if (!request) throw new Error(`no mcp_approval_request in ${JSON.stringify(first.output)}`);
  const answer: ResponseInputItem.McpApprovalResponse = {
    type: "mcp_approval_response",
    approval_request_id: request.id,
    approve: true,
    reason: "typed and approved",
  };
  const input: ResponseInputItem[] = [
    { role: "user", content: prompt },
    ...first.output.flatMap(asInput),
    answer,
  ];
  const second = await client.responses.create({ model, input, tools });
  const call = second.output.find((item): item is ResponseOutputItem.McpCall => item.type === "mcp_call");
  if (!call) throw new Error(`no mcp_call in ${JSON.stringify(second.output)}`);
  return { requestID: request.id, call, text: second.output_text };
}
