package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
)

// A key's hosted budgets are set through PATCH /admin/keys/{id}, kept by
// the store (SQLite, and PostgreSQL when TOOLHOST_TEST_POSTGRES is set) and
// bound that key's /v1 requests: 5 calls against the key's tool-call budget
// of 2 run 2, and the answer says stopped_by tool_calls. Bad budgets are a
// 400 naming the field.
func TestKeyHostedBudgetsThroughTheAdminAPI(t *testing.T) {
	stores := map[string][]string{"sqlite": nil}
	if pg := os.Getenv("TOOLHOST_TEST_POSTGRES"); pg != "" {
		u, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", fmt.Sprintf("budgets_%d", time.Now().UnixNano()))
		u.RawQuery = q.Encode()
		stores["postgres"] = []string{"--postgres", u.String()}
	} else {
		t.Log("TOOLHOST_TEST_POSTGRES unset: PostgreSQL is not run here (CI sets it)")
	}
	for name, args := range stores {
		t.Run(name, func(t *testing.T) {
			calls := make([]fakeupstream.ToolCall, 5)
			for i := range calls {
				calls[i] = fakeupstream.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "random_choice", Arguments: `{"options":["a"]}`}
			}
			fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
				{ToolCalls: calls}, {Content: "two ran"},
			}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			cfg, _ := json.Marshal(map[string]any{"hosted": map[string]any{"routes": []any{map[string]any{
				"name": "fake", "protocol": "openai", "base_url": fake.URL(), "models": []string{"fake-*"}, "supports_tools": true,
			}}}})
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var stderr syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--config", path}, args...), nil, &stderr, &stderr)
			}()
			defer func() {
				cancel()
				<-done
			}()
			r := &replica{addr: waitForAddr(t, &stderr), stderr: &stderr}
			admin := bootstrapSecret(t, r)
			base := "http://" + r.addr
			created := apiJSON(t, "POST", base+"/admin/keys", admin,
				map[string]any{"account": "acme", "name": "bounded", "scopes": []string{"hosted"}}, http.StatusCreated)
			id := created["key"].(map[string]any)["id"].(string)
			secret := created["secret"].(string)

			bad := apiJSON(t, "PATCH", base+"/admin/keys/"+id, admin, map[string]any{"hosted": map[string]any{"tool_calls": -1}}, http.StatusBadRequest)
			if msg := fmt.Sprint(bad); !strings.Contains(msg, "hosted.tool_calls -1") {
				t.Errorf("negative budget: %s", msg)
			}
			apiJSON(t, "PATCH", base+"/admin/keys/"+id, admin, map[string]any{"hosted": map[string]any{"tool_calls": "2"}}, http.StatusBadRequest)
			apiJSON(t, "PATCH", base+"/admin/keys/"+id, admin, map[string]any{"hosted": map[string]any{"tool_calls": 2, "wall_clock_ms": 60000}}, http.StatusOK)
			got := apiJSON(t, "GET", base+"/admin/keys/"+id, admin, nil, http.StatusOK)
			hosted := got["limits"].(map[string]any)["hosted"].(map[string]any)
			if hosted["tool_calls"] != 2.0 || hosted["wall_clock_ms"] != 60000.0 || hosted["result_bytes"] != 0.0 {
				t.Fatalf("stored budgets %v", hosted)
			}

			body := `{"model":"fake-1","messages":[{"role":"user","content":"pick"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["random_choice"]}]}`
			out := apiJSON(t, "POST", base+"/v1/chat/completions", secret, json.RawMessage(body), http.StatusOK)
			ext, _ := out["toolhost"].(map[string]any)
			list, _ := ext["tool_calls"].([]any)
			status := map[string]int{}
			for _, c := range list {
				status[c.(map[string]any)["status"].(string)]++
			}
			if ext["stopped_by"] != "tool_calls" || status["done"] != 2 || status["skipped"] != 3 {
				t.Fatalf("extension %v", ext)
			}
			reqs := fake.Requests()
			var last map[string]any
			if err := json.Unmarshal(reqs[len(reqs)-1], &last); err != nil || last["tool_choice"] != "none" {
				t.Errorf("final upstream call tool_choice %v (%v)", last["tool_choice"], err)
			}
		})
	}
}

// toolhost keys set-limits sets a key's hosted budgets; the flags not given
// keep theirs, and a negative budget other than the "keep" -1 is refused.
func TestKeysSetLimitsHostedBudgets(t *testing.T) {
	data := t.TempDir()
	if code, _, errOut := runCLI(t, "keys", "create", "--data", data, "--account", "acme", "--name", "ci"); code != exitOK {
		t.Fatalf("create: exit %d %s", code, errOut)
	}
	_, out, _ := runCLI(t, "keys", "list", "--data", data, "--json")
	var ks []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &ks); err != nil || len(ks) != 1 {
		t.Fatalf("list: %v %s", err, out)
	}
	code, out, errOut := runCLI(t, "keys", "set-limits", ks[0].ID, "--data", data, "--hosted-tool-calls", "10", "--hosted-wall-clock", "2m")
	if code != exitOK || !strings.Contains(out, `"tool_calls": 10`) || !strings.Contains(out, `"wall_clock_ms": 120000`) {
		t.Fatalf("set: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "keys", "set-limits", ks[0].ID, "--data", data, "--hosted-result-bytes", "262144")
	if code != exitOK || !strings.Contains(out, `"tool_calls": 10`) || !strings.Contains(out, `"result_bytes": 262144`) {
		t.Fatalf("second set lost the first: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "keys", "set-limits", ks[0].ID, "--data", data, "--hosted-cost", "9007199254740993")
	if code != exitUsage || !strings.Contains(errOut, "hosted.cost 9007199254740993") {
		t.Fatalf("huge cost: exit %d %s", code, errOut)
	}
}
