package loop

import (
	"encoding/json"
	"testing"
)

func TestFixArgsReplaceTheModelsValues(t *testing.T) {
	h := Hosted{Fixed: map[string]map[string]json.RawMessage{"web_search": {"allowed_domains": json.RawMessage(`["a.example"]`)}}}
	cases := []struct{ name, tool, args, want string }{
		{"other tool untouched", "get_time", `{"allowed_domains":["x"]}`, `{"allowed_domains":["x"]}`},
		{"added", "web_search", `{"query":"q"}`, `{"allowed_domains":["a.example"],"query":"q"}`},
		{"replaced", "web_search", `{"query":"q","allowed_domains":["evil.example"]}`, `{"allowed_domains":["a.example"],"query":"q"}`},
		{"duplicate keys collapse to ours", "web_search", `{"allowed_domains":["e"],"allowed_domains":["f"],"query":"q"}`, `{"allowed_domains":["a.example"],"query":"q"}`},
		{"not an object left for the executor", "web_search", `["q"]`, `["q"]`},
		{"null left", "web_search", `null`, `null`},
		{"trailing data left", "web_search", `{"query":"q"} {}`, `{"query":"q"} {}`},
		{"broken left", "web_search", `{"query":`, `{"query":`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(h.fixArgs(tc.tool, json.RawMessage(tc.args))); got != tc.want {
				t.Errorf("fixArgs = %s, want %s", got, tc.want)
			}
		})
	}
}
