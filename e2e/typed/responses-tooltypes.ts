// Codex's kinds of tools on /v1/responses written against the openai
// client's own types, with no casts: agent-clients.test.mjs compiles this
// file with tsc (strict) and runs what it compiled against toolhost. A
// namespaced function and a custom tool come back as function_call (with
// its namespace) and custom_tool_call items, whose outputs go back as
// input; the web search tool comes back as a web_search_call item and a
// url_citation annotation.

import type OpenAI from "openai";
import type {
  ResponseCustomToolCall,
  ResponseFunctionToolCall,
  ResponseFunctionWebSearch,
  ResponseInputItem,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseOutputText,
  Tool,
} from "openai/resources/responses/responses";

export interface ToolTypeAnswers {
  namespaced: ResponseFunctionToolCall;
  custom: ResponseCustomToolCall;
  /** The model's text once both outputs went back. */
  continued: string;
  search: ResponseFunctionWebSearch.Search;
  citations: ResponseOutputText.URLCitation[];
  /** The cited spans of the answer's text. */
  cited: string[];
}

const codexTools: Tool[] = [
  {
    type: "namespace",
    name: "crm",
    description: "Customer records",
    tools: [{ type: "function", name: "lookup", description: "Find a customer", parameters: { type: "object", properties: { id: { type: "string" } } } }],
  },
  { type: "custom", name: "apply_patch", description: "Edit files", format: { type: "grammar", syntax: "lark", definition: "start: /(.|\\n)+/" } },
];

function messageText(output: ResponseOutputItem[]): ResponseOutputText[] {
  return output
    .filter((item): item is ResponseOutputMessage => item.type === "message")
    .flatMap((m) => m.content)
    .filter((part): part is ResponseOutputText => part.type === "output_text");
}

export async function toolTypes(client: OpenAI, model: string, toolsKey: string, searchKey: string): Promise<ToolTypeAnswers> {
  const user: ResponseInputItem = { role: "user", content: `[${toolsKey}] fix it` };
  const first = await client.responses.create({ model, input: [user], tools: codexTools });
  const namespaced = first.output.find((item): item is ResponseFunctionToolCall => item.type === "function_call");
  const custom = first.output.find((item): item is ResponseCustomToolCall => item.type === "custom_tool_call");
  if (!namespaced || !custom) throw new Error(`calls missing: ${JSON.stringify(first.output)}`);

  const input: ResponseInputItem[] = [
    user,
    namespaced,
    custom,
    { type: "function_call_output", call_id: namespaced.call_id, output: "{\"name\":\"Ada\"}" },
    { type: "custom_tool_call_output", call_id: custom.call_id, output: "Done!" },
  ];
  const second = await client.responses.create({ model, input, tools: codexTools });

  const found = await client.responses.create({
    model,
    input: `[${searchKey}] how are perovskite modules sealed?`,
    tools: [{ type: "web_search", filters: { allowed_domains: ["acs.org", "nature.com"] } }],
  });
  const call = found.output.find((item): item is ResponseFunctionWebSearch => item.type === "web_search_call");
  if (!call || call.action.type !== "search") throw new Error(`no search: ${JSON.stringify(found.output)}`);
  const texts = messageText(found.output);
  const citations: ResponseOutputText.URLCitation[] = [];
  const cited: string[] = [];
  for (const t of texts) {
    for (const a of t.annotations) {
      if (a.type !== "url_citation") continue;
      citations.push(a);
      cited.push([...t.text].slice(a.start_index, a.end_index).join(""));
    }
  }
  return {
    namespaced,
    custom,
    continued: messageText(second.output).map((t) => t.text).join(""),
    search: call.action,
    citations,
    cited,
  };
}
