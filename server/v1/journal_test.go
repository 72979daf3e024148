package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/fetchpage"
	"github.com/toolhost/toolhost/tools/runcode"
	"github.com/toolhost/toolhost/tools/sleep"
)

// A run that fetches a local fixture page (fetch_page) in one round and runs
// code (run_code, in the real sandbox) in the next returns the final answer,
// and the journal's
// GET /tool-executions?floor_id=<request_id> lists both calls with
// face=hosted (no caller slot), their run id, rounds and call ids.
func TestHostedCallsLandInJournalUnderRequestID(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/article" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Perovskite</title></head><body><article><h1>Encapsulation</h1><p>Glass-glass encapsulation kept 95% efficiency after 1000 hours.</p></article></body></html>`)
	}))
	defer page.Close()

	// Only the JavaScript runtime: the Python one would be compiled in the
	// background for nothing.
	rtDir := t.TempDir()
	js, err := os.ReadFile(filepath.Join("..", "..", "runtimes", sandbox.JavaScriptFile))
	if err != nil {
		t.Fatalf("%v (run make runtimes)", err)
	}
	if err := os.WriteFile(filepath.Join(rtDir, sandbox.JavaScriptFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(context.Background(), sandbox.Options{RuntimesDir: rtDir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	rc := runcode.New(sb)

	for _, label := range labels {
		t.Run(label, func(t *testing.T) {
			fp, err := fetchpage.New(fetchpage.Config{AllowPrivate: []string{"127.0.0.1"}, IgnoreRobots: true})
			if err != nil {
				t.Fatal(err)
			}
			defer fp.Close()
			ex, err := tools.NewExecutor(tools.Options{}, append(builtin.All(), fp, rc, sleep.New())...)
			if err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(map[string]string{"url": page.URL + "/article"})
			fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
				{ToolCalls: []fakeupstream.ToolCall{call("call_fetch", "fetch_page", string(args))}},
				{ToolCalls: []fakeupstream.ToolCall{call("call_code", "run_code", `{"language":"javascript","code":"console.log(95 * 2)"}`)}},
				{Content: "Glass-glass encapsulation kept 95% after 1000 h."},
			}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			router, _ := loop.NewRouter(&loop.Route{Name: "fake", SupportsTools: true, Upstream: openai.New(openai.Config{Name: "fake", BaseURL: fake.URL()})})
			h := v1.New(v1.Options{Label: label, Enabled: true, Router: router, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
			routes := h.Routes()
			for p, hd := range (&admin.Journal{Store: ex.Journal().Store()}).Routes() {
				routes[p] = hd
			}
			hs := httptest.NewServer(pinnedRequestIDs(server.New(server.Options{Routes: routes}).Handler()))
			defer hs.Close()
			e := &env{t: t, label: label, url: hs.URL, fake: fake}

			resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"perovskite"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["fetch_page","run_code"],"require_approval":"never"}]}`, map[string]string{"X-Request-Id": "req_journal"})
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			var body map[string]any
			_ = json.Unmarshal(resp.body, &body)
			if got := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "Glass-glass encapsulation kept 95% after 1000 h." {
				t.Errorf("answer %v", got)
			}
			ext := body[label].(map[string]any)
			if ext["request_id"] != "req_journal" {
				t.Fatalf("request_id %v", ext["request_id"])
			}
			// The page text reached the model.
			second := e.upstreamRequests()[1]["messages"].([]any)[2].(map[string]any)["content"].(string)
			if !strings.Contains(second, "Glass-glass encapsulation") {
				t.Errorf("fetched page not given to the model: %s", second)
			}
			third := e.upstreamRequests()[2]["messages"].([]any)[4].(map[string]any)["content"].(string)
			if !strings.Contains(third, "190") {
				t.Errorf("run_code output not given to the model: %s", third)
			}

			hr, err := http.Get(hs.URL + "/tool-executions?floor_id=req_journal&sort_by=created_at&sort_order=asc")
			if err != nil {
				t.Fatal(err)
			}
			defer hr.Body.Close()
			var list struct {
				Data []map[string]any `json:"data"`
			}
			if err := json.NewDecoder(hr.Body).Decode(&list); err != nil {
				t.Fatal(err)
			}
			if len(list.Data) != 2 {
				t.Fatalf("%d executions under the floor, want 2: %+v", len(list.Data), list.Data)
			}
			byTool := map[string]map[string]any{}
			for _, r := range list.Data {
				byTool[r["tool_name"].(string)] = r
				if r["face"] != "hosted" || r["caller_slot"] != nil || r["floor_id"] != "req_journal" || r["status"] != "success" || r["run_id"] != list.Data[0]["run_id"] {
					t.Errorf("record %+v", r)
				}
			}
			if byTool["fetch_page"]["call_id"] != "call_fetch" || byTool["run_code"]["call_id"] != "call_code" ||
				fmt.Sprint(byTool["fetch_page"]["round"]) != "0" || fmt.Sprint(byTool["run_code"]["round"]) != "1" {
				t.Errorf("records %+v", byTool)
			}
		})
	}
}
