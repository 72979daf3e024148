package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
)

// statelessReplicas starts `serve --stateless` whose every roll_dice call
// asks for approval: one on SQLite, and two sharing PostgreSQL when
// TOOLHOST_TEST_POSTGRES is set.
func statelessReplicas(t *testing.T, bin string) map[string][]*replica {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"tools":{"require_approval":{"roll_dice":"always"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--stateless", "--config", cfg}
	out := map[string][]*replica{"sqlite": {startReplica(t, bin, append(common, "--data", t.TempDir())...)}}
	pg := os.Getenv("TOOLHOST_TEST_POSTGRES")
	if pg == "" {
		t.Log("TOOLHOST_TEST_POSTGRES unset: the two-replica topology is not run here (CI sets it)")
		return out
	}
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", fmt.Sprintf("approval_rounds_%d", time.Now().UnixNano()))
	u.RawQuery = q.Encode()
	first := startReplica(t, bin, append(common, "--data", t.TempDir(), "--postgres", u.String())...)
	// After the first has bootstrapped: one admin key.
	second := startReplica(t, bin, append(common, "--data", t.TempDir(), "--postgres", u.String())...)
	out["postgres-2-replicas"] = []*replica{first, second}
	return out
}

// connect2026 connects a go-sdk client on protocol 2026-07-28 that
// declares elicitation; rounds, when true, leaves its multi-round-trip
// middleware on and accepts every approval form.
func connect2026(t *testing.T, addr, secret string, rounds bool) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{mcpface.ApproveField: true}}, nil
		},
	}
	if !rounds {
		opts.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "rounds-test", Version: "1"}, opts).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{secret}},
	}, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client speaks %s", v)
	}
	return cs
}

// On a real `serve --stateless`, a go-sdk client on 2026-07-28 is asked
// through an input-required result, and the retry may land on any
// replica: the first round on one, the answer on the other runs the call
// once; the same answer replayed on the first runs nothing
// (approval_invalid); the go-sdk client's own rounds run a call once. The
// journal has each execution, on the store the replicas share.
func TestMCPApprovalRoundsAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("real serve processes per topology, PostgreSQL replicas, seconds; runs in make test")
	}
	t.Parallel()
	bin := buildBinary(t)
	for name, reps := range statelessReplicas(t, bin) {
		t.Run(name, func(t *testing.T) {
			admin := bootstrapSecret(t, reps[0])
			created := apiJSON(t, "POST", "http://"+reps[0].addr+"/admin/keys", admin,
				map[string]any{"account": "acme", "name": "rounds", "scopes": []string{"mcp", "tools"}}, http.StatusCreated)
			secret, _ := created["secret"].(string)
			a, b := reps[0], reps[len(reps)-1]
			const floor = "floor_rounds"
			call := func(cs *sdk.ClientSession, state string, answer *sdk.ElicitResult) *sdk.CallToolResult {
				t.Helper()
				p := &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 20}, RequestState: state,
					Meta: sdk.Meta{mcpface.FloorMetaKey: floor}}
				if answer != nil {
					p.InputResponses = sdk.InputResponseMap{mcpface.ApprovalInputKey: answer}
				}
				res, err := cs.CallTool(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			byHandA, byHandB := connect2026(t, a.addr, secret, false), connect2026(t, b.addr, secret, false)
			first := call(byHandA, "", nil)
			if !first.NeedsInput() || first.RequestState == "" || first.InputRequests[mcpface.ApprovalInputKey] == nil {
				t.Fatalf("the first round: %+v", first)
			}
			accept := &sdk.ElicitResult{Action: "accept", Content: map[string]any{mcpface.ApproveField: true}}
			if res := call(byHandB, first.RequestState, accept); res.IsError || res.NeedsInput() {
				t.Fatalf("the answer on the other replica: %+v", res)
			}
			if res := call(byHandA, first.RequestState, accept); errCodeOf(res) != tools.CodeApprovalInvalid {
				t.Fatalf("the replayed answer: %+v", res)
			}
			if res := call(connect2026(t, b.addr, secret, true), "", nil); res.IsError || res.NeedsInput() {
				t.Fatalf("the SDK's own rounds: %+v", res)
			}

			j := apiJSON(t, "GET", "http://"+a.addr+"/tool-executions?floor_id="+floor+"&sort_by=created_at&sort_order=asc", secret, nil, http.StatusOK)
			var got []string
			for _, r := range j["data"].([]any) {
				rec := r.(map[string]any)
				code, _ := rec["error_code"].(string)
				got = append(got, fmt.Sprint(rec["status"], ":", code))
			}
			want := fmt.Sprint([]string{"denied:approval_required", "success:", "denied:approval_invalid", "denied:approval_required", "success:"})
			if fmt.Sprint(got) != want {
				t.Fatalf("journal %v\nwant %s", got, want)
			}
		})
	}
}

// errCodeOf is the toolhost/error code of a result.
func errCodeOf(res *sdk.CallToolResult) string {
	code, _ := errorCode(res)
	return code
}
