package v1_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// A remote answer nested too deep for a Go MCP client to read, called by
// the model of a hosted /v1 loop, reaches the model as the tool error
// upstream_result_too_deep, the loop goes on, and the call is journaled as
// failed; one at the limit reaches the model and is journaled whole. On
// every store the journal runs on, PostgreSQL included (it keeps JSON as
// text: no jsonb depth limit to lose a row to).
func TestHostedLoopDeepRemoteResultIsJournaled(t *testing.T) {
	stores := map[string]journal.Store{"memory": journal.NewMemStore()}
	for name, db := range storetest.Open(t, "v1deep_test") {
		stores[name] = db
	}
	tests := []struct {
		match, args, code string
	}{
		{"deepobject", `{"levels":998}`, ""},
		{"deeparray", `{"levels":998,"array":true}`, mcpremote.CodeUpstreamTooDeep},
		{"deepmessage", `{"levels":1001}`, mcpremote.CodeUpstreamTooDeep},
	}
	var script fakeupstream.Script
	for _, tc := range tests {
		script.Conversations = append(script.Conversations, remoteConversation(tc.match, "demo__deep", tc.args, "done "+tc.match))
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			jr := journal.New(st, journal.Options{InstanceID: "v1deep-" + name})
			t.Cleanup(jr.Close)
			e := startRemoteEnv(t, script, remoteEnvOptions{hostile: true, journal: jr})
			for _, tc := range tests {
				t.Run(tc.match, func(t *testing.T) {
					resp := e.post(context.Background(), declaring(tc.match, "demo__deep"), map[string]string{"X-Request-Id": "req_" + tc.match, "X-Test-Account": "acct_a"})
					if resp.status != http.StatusOK || !strings.Contains(string(resp.body), "done "+tc.match) {
						t.Fatalf("status %d: %.500s", resp.status, resp.body)
					}
					result := e.toolResult(tc.match)
					r := e.execution("req_" + tc.match)
					if tc.code != "" {
						if !strings.HasPrefix(result, "[tool error] "+tc.code+": ") {
							t.Errorf("the model got %.300s, want the error %s", result, tc.code)
						}
						if r["error_code"] != tc.code || r["status"] != "error" {
							t.Errorf("record %.500v", r)
						}
						return
					}
					data, _ := json.Marshal(r["result"].(map[string]any)["data"])
					if r["status"] != "success" || testserver.NestingOf(data) != 998 {
						t.Errorf("record %.300v, its data nests %d levels, want 998", r, testserver.NestingOf(data))
					}
				})
			}
		})
	}
}
