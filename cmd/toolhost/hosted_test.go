package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/tools"
)

// hosted.routes errors are reported at start-up, naming the route.
func TestHostedRoutesConfigErrors(t *testing.T) {
	cases := []struct {
		name   string
		routes []config.Route
		want   string
	}{
		{"bad_protocol", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1", Protocol: "smoke"}}, `protocol "smoke"`},
		{"no_base_url", []config.Route{{Name: "a"}}, "base_url is required"},
		{"no_name", []config.Route{{BaseURL: "http://127.0.0.1:1/v1"}}, "name is required"},
		{"duplicate", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1"}, {Name: "a", BaseURL: "http://127.0.0.1:2/v1"}}, "defined twice"},
		{"bad_pattern", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1", Models: []string{"gpt-["}}}, "bad model pattern"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &common{cfg: config.Default()}
			c.cfg.Hosted.Routes = tc.routes
			_, _, err := hostedRoutes(c, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// A route whose API key variable is not set does not stop the server (as a
// search provider's missing key does not): it is marked unavailable in
// /healthz, and a request for its model is told why, naming the variable.
func TestHostedRouteWithoutKeyIsUnavailable(t *testing.T) {
	c := &common{cfg: config.Default()}
	c.cfg.Hosted.Routes = []config.Route{
		{Name: "nokey", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "TOOLHOST_TEST_NO_SUCH_KEY", Models: []string{"gpt-*"}, SupportsTools: true},
	}
	exec, err := tools.NewExecutor(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	routes, health, err := hostedRoutes(c, exec, nil)
	if err != nil {
		t.Fatalf("a missing key must not be fatal: %v", err)
	}
	st, _ := json.Marshal(health())
	if !strings.Contains(string(st), `"state":"unavailable"`) || !strings.Contains(string(st), "TOOLHOST_TEST_NO_SUCH_KEY") {
		t.Fatalf("health = %s, want the route unavailable naming the variable", st)
	}
	for _, tc := range []struct{ model, want string }{
		{"gpt-4o", "route nokey is unavailable: environment variable TOOLHOST_TEST_NO_SUCH_KEY"},
		{"claude-x", "hosted.routes"},
	} {
		rec := httptest.NewRecorder()
		body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}]}`
		routes["POST /v1/chat/completions"].ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		if rec.Code != 503 || !strings.Contains(rec.Body.String(), tc.want) {
			t.Fatalf("%s: %d %s, want 503 saying %q", tc.model, rec.Code, rec.Body.String(), tc.want)
		}
	}
}

// toolhost serve with a config file mounts /v1/chat/completions with the
// configured label and routes; the API key comes from the named variable.
func TestServeHostedChatCompletions(t *testing.T) {
	fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{{ID: "call_1", Name: "random_choice", Arguments: `{"options":["a"]}`}}, Usage: json.RawMessage(`{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}`)},
		{Content: "a", Usage: json.RawMessage(`{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}`)},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	t.Setenv("TOOLHOST_TEST_FAKE_KEY", "sk-fake")
	const label = "acme_tools"
	cfg := map[string]any{"hosted": map[string]any{"label": label, "routes": []any{map[string]any{
		"name": "fake", "protocol": "openai", "base_url": fake.URL(), "api_key_env": "TOOLHOST_TEST_FAKE_KEY",
		"models": []string{"fake-*"}, "supports_tools": true, "prices": map[string]any{"*": map[string]any{"input": 1e6, "output": 1e6}},
	}}}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--config", path}, nil, &stderr, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	addr := waitForAddr(t, &stderr)
	body := `{"model":"fake-1","messages":[{"role":"user","content":"pick"}],"tools":[{"type":"mcp","server_label":"acme_tools","allowed_tools":["random_choice"]}],"acme_tools":{"max_tool_rounds":2}}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	ext, _ := got[label].(map[string]any)
	if resp.StatusCode != http.StatusOK || ext == nil || ext["tool_rounds"] != 2.0 || ext["cost_quota"] != 33.0 {
		t.Fatalf("status %d body %v", resp.StatusCode, got)
	}
	if _, ok := got["toolhost"]; ok {
		t.Error("default label used instead of the configured one")
	}
	for _, a := range fake.Authorizations() {
		if a != "Bearer sk-fake" {
			t.Errorf("upstream Authorization %q, want the key from TOOLHOST_TEST_FAKE_KEY", a)
		}
	}
	for _, r := range fake.Requests() {
		if !strings.Contains(string(r), `"random_choice"`) {
			t.Errorf("upstream request without the hosted tool: %s", r)
		}
	}
}
