package v1

import (
	"errors"
	"net/http"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// A request body is outside input: every body is either accepted or refused
// with a 400 and a reason, never a panic.
func FuzzParseChat(f *testing.F) {
	ex, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		f.Fatal(err)
	}
	h := New(Options{Label: "toolhost", Enabled: true, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}],"toolhost":{"max_tool_rounds":2},"tool_choice":{"type":"mcp","server_label":"toolhost","name":"get_time"}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"type":"function","function":{"name":"get_time"}},{"type":"mcp","server_label":"toolhost"}]}`))
	f.Add([]byte(`{"model":"m","messages":[],"toolhost":{"x":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cr, err := h.parseChat(body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.status != http.StatusBadRequest || re.reason == "" {
				t.Fatalf("refusal %v is not a 400 with a reason", err)
			}
			return
		}
		if cr.loop.Model == "" || len(cr.loop.Messages) == 0 {
			t.Fatalf("accepted a request without model or messages: %s", body)
		}
		for _, f := range cr.loop.Tools {
			for _, n := range cr.hosted.Tools {
				if f.Name == n {
					t.Fatalf("accepted a caller function named like hosted tool %s", n)
				}
			}
		}
	})
}
