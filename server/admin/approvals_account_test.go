package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// TestApprovalsAccountParameterNeedsAdmin: ?account= lets a key with the
// admin scope list, read and decide another account's approvals; any
// other key naming another account is 403, and naming its own changes
// nothing.
func TestApprovalsAccountParameterNeedsAdmin(t *testing.T) {
	st := approval.NewMemory()
	clock := func() time.Time { return time.UnixMilli(1_790_000_000_000).UTC() }
	exec, err := tools.NewExecutor(tools.Options{Approvals: st, Clock: clock, Journal: journal.New(journal.NewMemStore(), journal.Options{})}, &deleteTool{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "delete_note", Args: json.RawMessage(`{"path":"<b>globex</b>"}`),
		Caller: tools.Caller{Identity: identity.Identity{AccountID: "globex"}, Face: "mcp", SessionID: "s"}})
	if err != nil || out.Code != tools.CodeApprovalRequired {
		t.Fatalf("call: %v %s", err, out.Code)
	}
	var b struct {
		Error struct {
			ApprovalID string `json:"approval_id"`
		} `json:"error"`
	}
	_ = json.Unmarshal(out.Structured, &b)
	id := b.Error.ApprovalID
	ids := map[string]identity.Identity{
		"admin": {AccountID: "root", KeyID: "k_admin", Scopes: keys.AllScopes},
		"acme":  {AccountID: "acme", KeyID: "k_acme", Scopes: []string{keys.ScopeMCP, keys.ScopeTools}},
	}
	mux := http.NewServeMux()
	for p, h := range (&admin.Approvals{Store: st, Decide: exec.DecideApproval, Clock: clock}).Routes() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), ids[r.Header.Get("X-Who")])))
	}))
	t.Cleanup(srv.Close)
	cases := []whoCase{
		{"acme", "GET", "/approvals?account=globex", 403, "insufficient_scope", ""},
		{"acme", "GET", "/approvals/" + id + "?account=globex", 403, "insufficient_scope", ""},
		{"acme", "POST", "/approvals/" + id + "/approve?account=globex", 403, "insufficient_scope", ""},
		{"acme", "GET", "/approvals?account=acme", 200, "", `"data":[]`},
		{"acme", "GET", "/approvals/" + id, 404, "not_found", ""},
		{"admin", "GET", "/approvals", 200, "", `"data":[]`},
		{"admin", "GET", "/approvals?account=" + strings.Repeat("x", 2000), 400, "validation_error", ""},
		{"admin", "GET", "/approvals?account=a%00b", 400, "validation_error", ""},
		{"admin", "GET", "/approvals?status=pending&account=globex", 200, "", id},
		{"admin", "GET", "/approvals/" + id + "?account=globex", 200, "", `"path":"<b>globex</b>"`},
		{"admin", "POST", "/approvals/" + id + "/approve?account=globex", 200, "", `"decided_by":"key:k_admin"`},
	}
	checkWhoCases(t, srv.URL, cases)
}

// whoCase is one request made as the key the X-Who header names, and the
// answer it must get: the status, the error code ("" for none) and a part
// of the body.
type whoCase struct {
	who, method, path string
	status            int
	code, contains    string
}

// checkWhoCases sends each case to base and checks its answer.
func checkWhoCases(t *testing.T, base string, cases []whoCase) {
	t.Helper()
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		req.Header.Set("X-Who", tc.who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		raw := new(strings.Builder)
		_ = json.NewDecoder(io.TeeReader(resp.Body, raw)).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || body.Error.Code != tc.code || !strings.Contains(raw.String(), tc.contains) {
			t.Errorf("%s %s %s: %d %s, want %d %q containing %q", tc.who, tc.method, tc.path[:min(len(tc.path), 70)], resp.StatusCode, raw, tc.status, tc.code, tc.contains)
		}
	}
}
