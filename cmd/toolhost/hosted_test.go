package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
)

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
