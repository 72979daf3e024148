package v1_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// A Responses tool_choice of the allowed_tools form gives the model only
// the listed tools — the caller's and the hosted ones — with the mode as
// the choice among them, on either upstream protocol; a listed tool the
// request does not declare, an unknown mode or an empty list is refused.
func TestResponsesAllowedToolsChoice(t *testing.T) {
	tools := `"tools":[{"type":"function","name":"a","parameters":{"type":"object"}},{"type":"function","name":"b","parameters":{"type":"object"}},` +
		`{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time","random_choice"],"require_approval":"never"}]`
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{{Content: "ok"}}}}})
			resp := e.postTo("/v1/responses", `{"model":"fake-1","input":"hi",`+tools+`,"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"a"},{"type":"mcp","server_label":"toolhost","name":"get_time"}]}}`, nil)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			up := e.upstreamRequests()[0]
			var names []string
			for _, tl := range up["tools"].([]any) {
				m := tl.(map[string]any)
				if f, ok := m["function"].(map[string]any); ok {
					names = append(names, f["name"].(string))
				} else {
					names = append(names, m["name"].(string))
				}
			}
			sort.Strings(names)
			if strings.Join(names, " ") != "a get_time" {
				t.Errorf("upstream tools %v", names)
			}
			want := `"required"`
			if p == loop.DialectAnthropic {
				want = `{"type":"any"}`
			}
			if got := strings.TrimSpace(string(encodeJSON(up["tool_choice"], false))); got != want {
				t.Errorf("upstream tool_choice %s, want %s", got, want)
			}
			out := decodeJSON(t, resp.body).(map[string]any)
			if tc := out["tool_choice"].(map[string]any); tc["type"] != "allowed_tools" {
				t.Errorf("response tool_choice %v, want the request's", tc)
			}
		})
	}
	e := newEnv(t, "toolhost", nil)
	for _, c := range []struct{ choice, want string }{
		{`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"zzz"}]}`, "function zzz"},
		{`{"type":"allowed_tools","mode":"any","tools":[{"type":"function","name":"a"}]}`, "mode must be"},
		{`{"type":"allowed_tools","mode":"auto","tools":[]}`, "lists no tool"},
		{`{"type":"allowed_tools","mode":"auto","tools":[{"type":"mcp","server_label":"other"}]}`, `server \"other\"`},
	} {
		resp := e.postTo("/v1/responses", `{"model":"fake-1","input":"hi",`+tools+`,"tool_choice":`+c.choice+`}`, nil)
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), c.want) {
			t.Errorf("%s: status %d: %s", c.choice, resp.status, resp.body)
		}
	}
}
