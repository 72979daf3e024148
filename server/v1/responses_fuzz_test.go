package v1

import (
	"errors"
	"net/http"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// A Responses body is outside input: every body is either accepted or
// refused with a 400 and a reason, never a panic; an accepted one has a
// model, a conversation, and no caller function named like a hosted tool.
func FuzzParseResponses(f *testing.F) {
	ex, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		f.Fatal(err)
	}
	h := New(Options{Label: "toolhost", Enabled: true, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
	f.Add([]byte(`{"model":"m","input":"x","tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}],"toolhost":{"max_tool_rounds":2},"tool_choice":{"type":"mcp","server_label":"toolhost","name":"get_time"}}`))
	f.Add([]byte(`{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},{"type":"mcp_list_tools","server_label":"toolhost","tools":[]},{"type":"mcp_call","id":"c1","server_label":"toolhost","name":"get_time","arguments":"{}","output":"t","error":null},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c2","output":"o"}],"tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_schema","name":"n","schema":{}}},"reasoning":{"effort":"low"}}`))
	f.Add([]byte(`{"model":"m","input":[],"toolhost":{"x":1}}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"x"},{"type":"code_interpreter_call","id":"ci_1","code":"print(1)","container_id":"c","status":"completed","outputs":[{"type":"logs","logs":"1"}]},{"type":"local_shell_call","id":"lsh_2","call_id":"c2","status":"completed","action":{"type":"exec","command":["ls"],"env":{}}},{"type":"local_shell_call_output","id":"c2","output":"a"}],"tools":[{"type":"local_shell"},{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"local_shell"},{"type":"function","name":"f"}]}}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"reasoning","summary":[]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"x"},{"type":"mcp_approval_request","id":"apr_000000000000000000000000","server_label":"toolhost","name":"get_time","arguments":"{}"},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000","approve":true,"reason":"r"},{"type":"mcp_call","id":"c1","server_label":"toolhost","name":"get_time","arguments":"{}","output":"t","approval_request_id":"apr_1"}],"tools":[{"type":"mcp","server_label":"toolhost","require_approval":{"never":{"tool_names":["get_time"],"read_only":true},"always":{"tool_names":[]}}}]}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c1","name":"f","namespace":"ns","arguments":"{}"},{"type":"custom_tool_call","call_id":"c2","name":"p","input":"*** Begin"},{"type":"function_call_output","call_id":"c1","output":"o"},{"type":"custom_tool_call_output","call_id":"c2","output":"ok"},{"type":"web_search_call","id":"ws","status":"completed"}],"tools":[{"type":"namespace","name":"ns","description":"","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g","format":{"type":"grammar","syntax":"regex","definition":"a+"}}]},{"type":"custom","name":"p"},{"type":"tool_search"},{"type":"web_search_preview"}],"tool_choice":{"type":"custom","name":"p"},"client_metadata":{"a":"b"},"prompt_cache_key":"k","include":["x"],"store":false}`))
	f.Add([]byte(`{"model":"m","input":"x","tools":[{"type":"web_search","filters":{"allowed_domains":["a.example"],"blocked_domains":["b.example"]}},{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rq, err := h.parseResponses(body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.status != http.StatusBadRequest || re.reason == "" {
				t.Fatalf("refusal %v is not a 400 with a reason", err)
			}
			return
		}
		if rq.loop.Model == "" || len(rq.loop.Messages) == 0 {
			t.Fatalf("accepted a request without model or conversation: %s", body)
		}
		// Every answer has its placeholder call and result, once.
		for _, a := range rq.loop.Approvals {
			calls, results := 0, 0
			for _, m := range rq.loop.Messages {
				if m.ApprovalID == a.ID {
					results++
				}
				for _, c := range m.ToolCalls {
					if c.ApprovalID == a.ID {
						calls++
					}
				}
			}
			if calls != 1 || results != 1 {
				t.Fatalf("answer %q placed %d calls and %d results: %s", a.ID, calls, results, body)
			}
		}
		// Every translated name is a function of the request, once.
		seen := map[string]bool{}
		for _, f := range rq.loop.Tools {
			if seen[f.Name] {
				t.Fatalf("two tools named %q upstream: %s", f.Name, body)
			}
			seen[f.Name] = true
		}
		for n, ct := range rq.names {
			if !seen[n] || (ct.Namespace != "" && !functionNameOK.MatchString(n)) {
				t.Fatalf("mapped name %q (%+v) is not a valid function of the request: %s", n, ct, body)
			}
		}
		for _, f := range rq.loop.Tools {
			for _, n := range rq.hosted.Tools {
				if f.Name == n {
					t.Fatalf("accepted a caller function named like hosted tool %s", n)
				}
			}
		}
	})
}
