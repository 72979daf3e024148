package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// A client without elicitation calls an irreversible remote tool (write:
// no readOnlyHint): approval_required with the approval id in
// _meta["toolhost/error"], nothing sent to the server; the account
// approves it over REST; the identical call then runs exactly once (the
// journal shows it under the approval); a third identical call, and one
// with another argument, each need a new approval.
func TestMCPClientWithoutElicitationGoesThroughRESTApproval(t *testing.T) {
	ctx := context.Background()
	env := startRemote(t)
	ts, js, jr, exec := env.ts, env.js, env.jr, env.exec
	rest := http.NewServeMux()
	for p, h := range (&admin.Approvals{Store: exec.Approvals(), Decide: exec.DecideApproval,
		Account: func(r *http.Request) string { return r.Header.Get("X-Account") }}).Routes() {
		rest.Handle(p, h)
	}
	restSrv := httptest.NewServer(rest)
	t.Cleanup(restSrv.Close)

	cs := connect(t, env.url, http.Header{"X-Account": {"acct_a"}}, nil)
	call := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "demo__write", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	required := func(res *sdk.CallToolResult) string {
		t.Helper()
		e, _ := res.Meta["toolhost/error"].(map[string]any)
		id, _ := e["approval_id"].(string)
		if !res.IsError || e["code"] != tools.CodeApprovalRequired || !strings.HasPrefix(id, "apr_") || e["tool"] != "demo__write" ||
			e["expires_at"] == nil || e["arguments"] == nil {
			t.Fatalf("want approval_required with its approval id in _meta, got %+v", res)
		}
		return id
	}
	note := map[string]any{"note": "wire the money"}
	id := required(call(note))
	if n := ts.Calls("write"); n != 0 {
		t.Fatalf("the server ran write %d times before approval", n)
	}

	// The other account cannot see or decide it.
	post := func(account, path string) int {
		req, _ := http.NewRequest("POST", restSrv.URL+path, nil)
		req.Header.Set("X-Account", account)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("acct_b", "/approvals/"+id+"/approve"); code != 404 {
		t.Fatalf("another account approved: %d", code)
	}
	if code := post("acct_a", "/approvals/"+id+"/approve"); code != 200 {
		t.Fatalf("approve: %d", code)
	}

	// Another argument is another invocation.
	if other := required(call(map[string]any{"note": "wire more money"})); other == id || ts.Calls("write") != 0 {
		t.Fatalf("changed arguments ran under the approval")
	}
	res := call(note)
	if res.IsError || ts.Calls("write") != 1 {
		t.Fatalf("the approved call: %+v, %d runs", res, ts.Calls("write"))
	}
	again := required(call(note))
	if again == id || ts.Calls("write") != 1 {
		t.Fatal("a third identical call ran without a new approval")
	}

	// The journal: the approved execution was prepared under the approval.
	if err := jr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _, err := js.List(ctx, journal.Query{AccountID: "acct_a", ToolName: "demo__write", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, r := range recs {
		if r.Status != journal.StatusSuccess {
			if r.ErrorCode != tools.CodeApprovalRequired || r.State != journal.StateAuthorizationRejected {
				t.Errorf("record %s: %s %s", r.ID, r.ErrorCode, r.State)
			}
			continue
		}
		ran++
		_, prepared := env.events(t, r.ID)
		if !strings.Contains(prepared, `"approval_id":"`+id+`"`) || !strings.Contains(prepared, `"decided_via":"rest"`) {
			t.Errorf("prepared event %s", prepared)
		}
	}
	if ran != 1 || len(recs) != 4 {
		t.Fatalf("%d records, %d ran; want 4 and 1", len(recs), ran)
	}
}
