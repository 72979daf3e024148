package v1

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// A Messages body is outside input: every body is either accepted or
// refused with a 400 and a reason, never a panic.
func FuzzParseMessages(f *testing.F) {
	ex, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		f.Fatal(err)
	}
	h := New(Options{Label: "toolhost", Enabled: true, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
	f.Add([]byte(`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"x"}],"mcp_servers":[{"type":"url","url":"u","name":"toolhost"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"toolhost","configs":{"get_time":{"enabled":false}}}],"toolhost":{"max_tool_rounds":2},"tool_choice":{"type":"any"}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"mcp_tool_use","id":"a","name":"get_time","server_name":"toolhost","input":{}},{"type":"mcp_tool_result","tool_use_id":"a","content":[{"type":"text","text":"r"}]},{"type":"text","text":"t"}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}],"tools":[{"name":"get_time"}]}`))
	// Server tools (refused here: no search provider, no runtimes) and
	// their blocks sent back.
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":1,"allowed_domains":["a.example"]},{"type":"code_execution_20250825","name":"code_execution"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"s","content":[{"type":"web_search_result","url":"u","title":"t","encrypted_content":"e30=","page_age":null}]},{"type":"server_tool_use","id":"c","name":"bash_code_execution","input":{}},{"type":"bash_code_execution_tool_result","tool_use_id":"c","content":{"type":"bash_code_execution_result","stdout":"o","stderr":"","return_code":0,"content":[]}},{"type":"web_fetch_tool_result","tool_use_id":"f","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_allowed"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(""))
		r.Header.Set("anthropic-beta", MCPBeta)
		mr, err := h.parseMessages(r, body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.status != http.StatusBadRequest || re.reason == "" {
				t.Fatalf("refusal %v is not a 400 with a reason", err)
			}
			return
		}
		if mr.loop.Model == "" || len(mr.loop.Messages) == 0 {
			t.Fatalf("accepted a request without model or messages: %s", body)
		}
		for _, f := range mr.loop.Tools {
			for _, n := range mr.hosted.Tools {
				if f.Name == n {
					t.Fatalf("accepted a caller tool named like hosted tool %s", n)
				}
			}
		}
	})
}
