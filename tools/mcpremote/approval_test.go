package mcpremote_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// A remote tool's approval policy: the account's per-tool override, else
// the server's default, else the platform's (irreversible asks); write has
// no readOnlyHint, so it is irreversible, and add is read-only.
func TestRemoteToolsApprovalPolicy(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name      string
		defaults  *string
		overrides map[string]mcpremote.Override
		tool      string
		args      string
		asks      bool
	}{
		{"IrreversibleAsksByDefault", nil, nil, "demo__write", `{"note":"x"}`, true},
		{"ReadOnlyRunsByDefault", nil, nil, "demo__add", `{"a":1,"b":2}`, false},
		{"ServerDefaultNever", s("never"), nil, "demo__write", `{"note":"x"}`, false},
		{"ServerDefaultAlways", s("always"), nil, "demo__add", `{"a":1,"b":2}`, true},
		{"OverrideWinsOverTheDefault", s("always"), map[string]mcpremote.Override{"add": {RequireApproval: s("never")}}, "demo__add", `{"a":1,"b":2}`, false},
		{"OverrideAlwaysOnAReadOnlyTool", nil, map[string]mcpremote.Override{"add": {RequireApproval: s("always")}}, "demo__add", `{"a":1,"b":2}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, false)
			r := newRig(t, mcpremote.Options{})
			r.register("acct_a", "demo", up.url(), func(srv *mcpremote.Server, _ *mcpremote.Secrets) {
				srv.Defaults.RequireApproval = tc.defaults
				srv.Tools = tc.overrides
			})
			out := r.call("acct_a", tc.tool, tc.args)
			if asked := out.Code == tools.CodeApprovalRequired; asked != tc.asks || !tc.asks && out.IsError {
				t.Fatalf("%s: %s", out.Code, out.Message)
			}
			remote := tc.tool[len("demo__"):]
			if n := up.ts.Calls(remote); n != map[bool]int{true: 0, false: 1}[tc.asks] {
				t.Fatalf("%s reached the server %d times", remote, n)
			}
			if !tc.asks {
				return
			}
			var body struct {
				Error struct {
					ApprovalID string `json:"approval_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out.Structured, &body); err != nil {
				t.Fatal(err)
			}
			if _, err := r.exec.DecideApproval(context.Background(), "acct_a", body.Error.ApprovalID,
				approval.Decision{Approve: true, By: "key_1", Via: approval.ViaREST}); err != nil {
				t.Fatal(err)
			}
			if again := r.call("acct_a", tc.tool, tc.args); again.IsError || up.ts.Calls(remote) != 1 {
				t.Fatalf("after approval: %s %s, %d calls", again.Code, again.Message, up.ts.Calls(remote))
			}
		})
	}
}

func TestRemoteRequireApprovalIsValidated(t *testing.T) {
	for _, body := range []string{
		`{"name":"x","url":"https://example.com/mcp","defaults":{"require_approval":"sometimes"}}`,
		`{"name":"x","url":"https://example.com/mcp","tools":{"write":{"require_approval":"NEVER"}}}`,
		`{"name":"x","url":"https://example.com/mcp","tools":{"write":{"require_approval":"never\u0000"}}}`,
	} {
		var in mcpremote.Input
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			t.Fatal(err)
		}
		var srv mcpremote.Server
		var sec mcpremote.Secrets
		if err := (mcpremote.Rules{}).Apply(&srv, &sec, in, true); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

func TestRemoteRequireApprovalIsKept(t *testing.T) {
	var in mcpremote.Input
	if err := json.Unmarshal([]byte(`{"name":"x","url":"https://example.com/mcp","defaults":{"require_approval":"always"},"tools":{"write":{"require_approval":"never"}}}`), &in); err != nil {
		t.Fatal(err)
	}
	var srv mcpremote.Server
	var sec mcpremote.Secrets
	if err := (mcpremote.Rules{}).Apply(&srv, &sec, in, true); err != nil {
		t.Fatal(err)
	}
	if *srv.Defaults.RequireApproval != "always" || *srv.Tools["write"].RequireApproval != "never" {
		t.Fatalf("%+v", srv)
	}
}
