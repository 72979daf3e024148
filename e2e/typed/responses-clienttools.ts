// The Responses tools the caller runs itself (apply_patch, shell and the
// legacy local_shell), written against the openai client's own types with
// no casts: agent-clients.test.mjs compiles this file with tsc (strict) and
// runs what it compiled against toolhost. The model's calls come back as
// apply_patch_call, shell_call and local_shell_call items; those items and
// their outputs (apply_patch_call_output, shell_call_output,
// local_shell_call_output) go back as input, and the model answers. The
// first response is asked again streamed.

import type OpenAI from "openai";
import type {
  ResponseApplyPatchToolCall,
  ResponseFunctionShellToolCall,
  ResponseInputItem,
  ResponseOutputItem,
  Tool,
} from "openai/resources/responses/responses";

export interface ClientToolAnswers {
  patch: ResponseApplyPatchToolCall;
  shell: ResponseFunctionShellToolCall;
  local: ResponseOutputItem.LocalShellCall;
  /** The model's text once the three outputs went back. */
  continued: string;
  /** The item types of the first response asked again streamed, and its events about them. */
  streamed: { types: string[]; events: string[] };
}

const tools: Tool[] = [{ type: "apply_patch" }, { type: "shell", environment: { type: "local" } }, { type: "local_shell" }];

export async function clientTools(client: OpenAI, model: string, key: string): Promise<ClientToolAnswers> {
  const user: ResponseInputItem = { role: "user", content: `[${key}] fix it and look around` };
  const first = await client.responses.create({ model, input: [user], tools });
  const patch = first.output.find((item): item is ResponseApplyPatchToolCall => item.type === "apply_patch_call");
  const shell = first.output.find((item): item is ResponseFunctionShellToolCall => item.type === "shell_call");
  const local = first.output.find((item): item is ResponseOutputItem.LocalShellCall => item.type === "local_shell_call");
  if (!patch || !shell || !local) throw new Error(`calls missing: ${JSON.stringify(first.output)}`);

  const patched: ResponseInputItem.ApplyPatchCallOutput = { type: "apply_patch_call_output", call_id: patch.call_id, status: "failed", output: "a.go: no such file" };
  const ran: ResponseInputItem.ShellCallOutput = {
    type: "shell_call_output",
    call_id: shell.call_id,
    output: [{ stdout: "ok\n", stderr: "", outcome: { type: "exit", exit_code: 0 } }],
  };
  // A local_shell_call_output names its call by id.
  const listed: ResponseInputItem.LocalShellCallOutput = { type: "local_shell_call_output", id: local.call_id, output: "a.txt\nb.txt" };
  const input: ResponseInputItem[] = [user, patch, shell, local, patched, ran, listed];
  const second = await client.responses.create({ model, input, tools });

  const stream = client.responses.stream({ model, input: [user], tools });
  const events: string[] = [];
  for await (const ev of stream) {
    if (ev.type === "response.output_item.added" || ev.type === "response.output_item.done") events.push(`${ev.type} ${ev.item.type}`);
  }
  const final = await stream.finalResponse();
  return { patch, shell, local, continued: second.output_text, streamed: { types: final.output.map((item) => item.type), events } };
}
