// Anthropic's server tools on /v1/messages over an OpenAI route, written
// against the anthropic client's own types with no casts:
// agent-clients.test.mjs compiles this file with tsc (strict) and runs
// what it compiled against toolhost. web_search is served by toolhost's
// web_search and code_execution by run_code; they come back as
// server_tool_use, web_search_tool_result and
// bash_code_execution_tool_result blocks, the answer citing the search
// result as a web_search_result_location — whole and streamed. web_fetch
// (served by fetch_page) and the 20250522 code_execution (served by
// run_code) come back as web_fetch_tool_result and code_execution_tool_result
// blocks.

import type Anthropic from "@anthropic-ai/sdk";
import type {
  BashCodeExecutionResultBlock,
  BashCodeExecutionToolResultBlock,
  CitationsWebSearchResultLocation,
  CodeExecutionResultBlock,
  CodeExecutionToolResultBlock,
  ContentBlock,
  Message,
  ServerToolUseBlock,
  TextBlock,
  WebFetchBlock,
  WebFetchToolResultBlock,
  ToolUnion,
  WebSearchResultBlock,
  WebSearchToolResultBlock,
} from "@anthropic-ai/sdk/resources/messages";

export interface ServerToolAnswers {
  /** The block types of the answer, in order. */
  types: string[];
  uses: ServerToolUseBlock[];
  results: WebSearchResultBlock[];
  code: BashCodeExecutionResultBlock;
  citations: CitationsWebSearchResultLocation[];
}

const serverTools: ToolUnion[] = [
  { type: "web_search_20250305", name: "web_search", max_uses: 2, allowed_domains: ["acs.org"] },
  { type: "code_execution_20250825", name: "code_execution" },
];

function answers(content: ContentBlock[]): ServerToolAnswers {
  const uses = content.filter((b): b is ServerToolUseBlock => b.type === "server_tool_use");
  const search = content.find((b): b is WebSearchToolResultBlock => b.type === "web_search_tool_result");
  const code = content.find((b): b is BashCodeExecutionToolResultBlock => b.type === "bash_code_execution_tool_result");
  if (!search || !Array.isArray(search.content)) throw new Error(`no web search results: ${JSON.stringify(content)}`);
  if (!code || code.content.type !== "bash_code_execution_result") throw new Error(`no code result: ${JSON.stringify(content)}`);
  const citations = content
    .filter((b): b is TextBlock => b.type === "text")
    .flatMap((b) => b.citations ?? [])
    .filter((c): c is CitationsWebSearchResultLocation => c.type === "web_search_result_location");
  return { types: content.map((b) => b.type), uses, results: search.content, code: code.content, citations };
}

export async function serverToolTypes(client: Anthropic, model: string, key: string): Promise<{ whole: ServerToolAnswers; streamed: ServerToolAnswers }> {
  const params = { model, max_tokens: 256, tools: serverTools, messages: [{ role: "user" as const, content: `[${key}] how are perovskites sealed?` }] };
  const whole: Message = await client.messages.create(params);
  const streamed: Message = await client.messages.stream(params).finalMessage();
  return { whole: answers(whole.content), streamed: answers(streamed.content) };
}

export interface FetchAndCodeAnswers {
  /** The block types of the answer, in order. */
  types: string[];
  uses: ServerToolUseBlock[];
  page: WebFetchBlock;
  code: CodeExecutionResultBlock;
}

const fetchAndCodeTools: ToolUnion[] = [
  { type: "web_fetch_20250910", name: "web_fetch", max_uses: 1 },
  { type: "code_execution_20250522", name: "code_execution" },
];

function fetchAndCodeAnswers(content: ContentBlock[]): FetchAndCodeAnswers {
  const uses = content.filter((b): b is ServerToolUseBlock => b.type === "server_tool_use");
  const fetched = content.find((b): b is WebFetchToolResultBlock => b.type === "web_fetch_tool_result");
  const code = content.find((b): b is CodeExecutionToolResultBlock => b.type === "code_execution_tool_result");
  if (!fetched || fetched.content.type !== "web_fetch_result") throw new Error(`no fetched page: ${JSON.stringify(content)}`);
  if (!code || code.content.type !== "code_execution_result") throw new Error(`no code result: ${JSON.stringify(content)}`);
  return { types: content.map((b) => b.type), uses, page: fetched.content, code: code.content };
}

export async function fetchAndCodeTypes(client: Anthropic, model: string, key: string, url: string): Promise<{ whole: FetchAndCodeAnswers; streamed: FetchAndCodeAnswers }> {
  const params = { model, max_tokens: 256, tools: fetchAndCodeTools, messages: [{ role: "user" as const, content: `[${key}] read ${url} and compute 6 * 7` }] };
  const whole: Message = await client.messages.create(params);
  const streamed: Message = await client.messages.stream(params).finalMessage();
  return { whole: fetchAndCodeAnswers(whole.content), streamed: fetchAndCodeAnswers(streamed.content) };
}
