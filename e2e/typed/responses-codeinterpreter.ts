// OpenAI's code_interpreter tool on /v1/responses, written against the
// openai client's own types with no casts: agent-clients.test.mjs compiles
// this file with tsc (strict) and runs what it compiled against toolhost.
// toolhost's run_code serves the tool; the call comes back as a
// code_interpreter_call item whose outputs are the program's logs — whole
// and streamed.

import type OpenAI from "openai";
import type { ResponseCodeInterpreterToolCall, ResponseOutputItem, Tool } from "openai/resources/responses/responses";

export interface CodeInterpreterAnswers {
  call: ResponseCodeInterpreterToolCall;
  logs: string[];
  /** The events about the call, in order, when streamed. */
  events: string[];
}

const tools: Tool[] = [{ type: "code_interpreter", container: { type: "auto" } }];

function answers(output: ResponseOutputItem[], events: string[]): CodeInterpreterAnswers {
  const call = output.find((item): item is ResponseCodeInterpreterToolCall => item.type === "code_interpreter_call");
  if (!call) throw new Error(`no code_interpreter_call: ${JSON.stringify(output)}`);
  const logs = (call.outputs ?? []).flatMap((o) => (o.type === "logs" ? [o.logs] : []));
  return { call, logs, events };
}

export async function codeInterpreter(client: OpenAI, model: string, key: string): Promise<{ whole: CodeInterpreterAnswers; streamed: CodeInterpreterAnswers }> {
  const input = `[${key}] what is 6 * 7?`;
  const whole = await client.responses.create({ model, input, tools });
  const stream = client.responses.stream({ model, input, tools });
  const events: string[] = [];
  for await (const ev of stream) {
    if (ev.type.startsWith("response.code_interpreter_call")) events.push(ev.type);
  }
  const final = await stream.finalResponse();
  return { whole: answers(whole.output, []), streamed: answers(final.output, events) };
}
