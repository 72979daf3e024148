package v1_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
)

// The Responses code_interpreter tool, served by the hosted run_code on
// either upstream protocol: a code_interpreter_call item whose outputs are
// the program's logs (not listed in mcp_list_tools, which is absent), the
// call run by the executor like any hosted call; streamed, the item goes
// added → in_progress → code delta → code done → interpreting → completed
// → done. Sent back as input, the item is the run_code round trip the
// model made.
func TestResponsesCodeInterpreterServed(t *testing.T) {
	rounds := []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_ci", "run_code", `{"language":"javascript","code":"console.log(6*7); console.error('warn')"}`)}, Usage: usage(30, 5, 0, 0)},
		{Content: "It is 42.", Usage: usage(60, 4, 0, 0)},
	}
	body := `{"model":"fake-1","input":"what is 6*7?","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`
	for _, p := range protocols {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s", p, modeName(stream)), func(t *testing.T) {
				e := newToolsEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}}, tools.Options{}, []tools.Tool{runCodeTool(t)})
				b := body
				if stream {
					b = withStream(b)
				}
				resp := e.postTo("/v1/responses", b, nil)
				if resp.status != http.StatusOK {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				name := fmt.Sprintf("responses_code_interpreter.%s.%s.golden", p, modeName(stream))
				var out map[string]any
				if stream {
					golden(t, name, runMS.ReplaceAll(clockFree(t, p, normalizedEvents(t, resp.body, "toolhost")), []byte("${1}0 ms")))
					out = checkResponsesStream(t, resp.body, "toolhost")
					var seq []string
					for _, ev := range namedEvents(t, resp.body) {
						if strings.Contains(ev.name, "code_interpreter") {
							seq = append(seq, strings.TrimPrefix(ev.name, "response."))
						}
					}
					want := "code_interpreter_call.in_progress code_interpreter_call_code.delta code_interpreter_call_code.done code_interpreter_call.interpreting code_interpreter_call.completed"
					if got := strings.Join(seq, " "); got != want {
						t.Errorf("events %s", got)
					}
				} else {
					golden(t, name, runMS.ReplaceAll(clockFree(t, p, normalizedBody(t, resp.body, "toolhost")), []byte("${1}0 ms")))
					out = decodeJSON(t, resp.body).(map[string]any)
				}
				if got := itemTypes(out); got != "code_interpreter_call message" {
					t.Fatalf("output items %s", got)
				}
				ci := out["output"].([]any)[0].(map[string]any)
				logs := ci["outputs"].([]any)[0].(map[string]any)
				if ci["status"] != "completed" || ci["code"] != "console.log(6*7); console.error('warn')" || logs["type"] != "logs" || logs["logs"] != "42\nwarn\n" {
					t.Errorf("code_interpreter_call %v", ci)
				}
				if props := e.exec.Proposals(); len(props) != 1 || props[0].Tool != "run_code" {
					t.Fatalf("proposals %v", props)
				}
			})
		}
	}
}

// A code_interpreter_call item sent back reaches the upstream as the
// run_code call the model made and its logs; the tool's own tool_choice
// makes the model call run_code.
func TestResponsesCodeInterpreterContinued(t *testing.T) {
	e := newToolsEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{{Content: "ok"}}}}}, tools.Options{}, []tools.Tool{runCodeTool(t)})
	body := `{"model":"fake-1","tools":[{"type":"code_interpreter","container":"auto"}],"input":[{"role":"user","content":"6*7?"},` +
		`{"type":"code_interpreter_call","id":"ci_call_1","code":"print(6*7)","container_id":"cntr_x","status":"completed","outputs":[{"type":"logs","logs":"42\n"}]},` +
		`{"role":"user","content":"thanks"}]}`
	resp := e.postTo("/v1/responses", strings.Replace(body, `"tools"`, `"tool_choice":{"type":"code_interpreter"},"tools"`, 1), nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	up := e.upstreamRequests()[0]
	if got := strings.TrimSpace(string(encodeJSON(up["tool_choice"], false))); got != `{"function":{"name":"run_code"},"type":"function"}` {
		t.Errorf("tool_choice sent upstream %s", got)
	}
	msgs := up["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("upstream messages %v", msgs)
	}
	calls := msgs[1].(map[string]any)["tool_calls"].([]any)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "run_code" || fn["arguments"] != `{"code":"print(6*7)","language":"python"}` || msgs[2].(map[string]any)["content"] != "42\n" {
		t.Errorf("round trip %v %v", calls, msgs[2])
	}
}

// code_interpreter declared twice is refused, as is its tool_choice without
// it, and the tool on a server that does not publish run_code (no sandbox
// runtimes).
func TestResponsesCodeInterpreterRefused(t *testing.T) {
	e := newToolsEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{}, tools.Options{}, []tools.Tool{runCodeTool(t)})
	resp := e.postTo("/v1/responses", `{"model":"fake-1","input":"x","tools":[{"type":"code_interpreter","container":"auto"},{"type":"code_interpreter","container":"auto"}]}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "declare one code_interpreter tool") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	resp = e.postTo("/v1/responses", `{"model":"fake-1","input":"x","tool_choice":{"type":"code_interpreter"}}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "needs a code_interpreter tool") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	e = newEnv(t, "toolhost", nil)
	resp = e.postTo("/v1/responses", `{"model":"fake-1","input":"x","tools":[{"type":"code_interpreter","container":"auto"}]}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "tool_type_unsupported") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
}
