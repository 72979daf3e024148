package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// deleteTool is an irreversible tool: its calls need approval by default.
type deleteTool struct{ runs atomic.Int64 }

func (d *deleteTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "delete_note", Version: "1.0.0",
		Title:       catalog.Text{ZH: "删除笔记", EN: "Delete note"},
		Description: catalog.Text{ZH: "删除一条笔记", EN: "Deletes a note for good"},
		Input:       json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		SideEffect:  catalog.SideEffectIrreversible}
}

func (d *deleteTool) Call(context.Context, *tools.Invocation) (*tools.Result, error) {
	d.runs.Add(1)
	return &tools.Result{Structured: map[string]any{"deleted": true}}, nil
}

func approvalStores(t *testing.T) map[string]approval.Store {
	out := map[string]approval.Store{"memory": approval.NewMemory()}
	for name, db := range sqlStores(t) {
		out[name] = db
	}
	return out
}

var volatile = regexp.MustCompile(`apr_[0-9a-f]{24}|[0-9a-f]{64}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// golden compares a body with testdata/approvals/name, ids masked.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	got := volatile.ReplaceAllStringFunc(string(body), func(s string) string {
		switch {
		case strings.HasPrefix(s, "apr_"):
			return "apr_ID"
		case len(s) == 64:
			return "DIGEST"
		}
		return "EXECUTION_ID"
	})
	path := filepath.Join("testdata", "approvals", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

func TestApprovalsREST(t *testing.T) {
	for name, st := range approvalStores(t) {
		t.Run(name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(time.UnixMilli(1_790_000_000_000).UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
			tool := &deleteTool{}
			exec, err := tools.NewExecutor(tools.Options{Approvals: st, Clock: clock, Journal: journal.New(journal.NewMemStore(), journal.Options{})}, tool)
			if err != nil {
				t.Fatal(err)
			}
			run := func(account, args string) *tools.Outcome {
				out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "delete_note", Args: json.RawMessage(args),
					Caller: tools.Caller{Identity: identity.Identity{AccountID: account}, Face: "mcp", SessionID: "sess_1"}})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			idOf := func(out *tools.Outcome) string {
				var b struct {
					Error struct {
						ApprovalID string `json:"approval_id"`
					} `json:"error"`
				}
				if err := json.Unmarshal(out.Structured, &b); err != nil || out.Code != tools.CodeApprovalRequired {
					t.Fatalf("%s %s", out.Code, out.Structured)
				}
				return b.Error.ApprovalID
			}
			srv := tenantServer(t, (&admin.Approvals{Store: st, Decide: exec.DecideApproval, Clock: clock, Account: accountHeader}).Routes())
			raw := func(method, path, account, body string, status int) []byte {
				t.Helper()
				req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
				if account != "" {
					req.Header.Set("X-Account", account)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != status {
					t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, status)
				}
				return b
			}

			first := idOf(run("acme", `{"path":"/notes/a <script>\u202e.txt"}`))
			now.Add(int64(time.Second))
			second := idOf(run("acme", `{"path":"/notes/b"}`))
			other := idOf(run("globex", `{"path":"/notes/a"}`))

			golden(t, "get.json", raw("GET", "/approvals/"+first, "acme", "", 200))
			golden(t, "list.json", raw("GET", "/approvals?status=pending&tool_name=delete_note&session_id=sess_1", "acme", "", 200))

			// Hostile and out-of-enum filters: 400 with the field.
			for _, q := range []string{"status=waiting", "status=", "status=pending&status=expired", "tool_name=", "tool_name=a%00b",
				"session_id=" + strings.Repeat("x", 1025), "limit=0", "limit=501", "offset=-1", "sort_by=id", "status=PENDING"} {
				do(t, srv, call{method: "GET", path: "/approvals?" + q, account: "acme", status: 400, code: "validation_error"})
			}
			// Another account's approval, an unknown id and a malformed one are 404.
			for _, p := range []string{"/approvals/" + other, "/approvals/apr_ffffffffffffffffffffffff", "/approvals/..%2f..%2fetc", "/approvals/APR_x"} {
				do(t, srv, call{method: "GET", path: p, account: "acme", status: 404, code: "not_found"})
			}
			do(t, srv, call{method: "POST", path: "/approvals/" + other + "/approve", account: "acme", status: 404, code: "not_found"})
			// Bad bodies.
			for _, b := range []string{`{"reason":1}`, `{"reason":"a","reason":"b"}`, `{"approve":true}`, `[]`,
				`{"reason":"` + strings.Repeat("é", 600) + `"}`} {
				do(t, srv, call{method: "POST", path: "/approvals/" + first + "/approve", account: "acme", body: b, status: 400, code: "validation_error"})
			}

			golden(t, "approve.json", raw("POST", "/approvals/"+first+"/approve", "acme", "", 200))
			golden(t, "decide_again.json", raw("POST", "/approvals/"+first+"/decline", "acme", `{"reason":"changed my mind"}`, 409))
			golden(t, "decline.json", raw("POST", "/approvals/"+second+"/decline", "acme", `{"reason":"not that one </script>"}`, 200))

			// The approved call runs once; the approval shows who consumed it.
			if out := run("acme", `{"path":"/notes/a <script>\u202e.txt"}`); out.IsError || tool.runs.Load() != 1 {
				t.Fatalf("approved call: %s %s", out.Code, out.Message)
			}
			do(t, srv, call{method: "GET", path: "/approvals?status=consumed", account: "acme", status: 200})
			golden(t, "consumed.json", raw("GET", "/approvals/"+first, "acme", "", 200))
			golden(t, "consumed_decide.json", raw("POST", "/approvals/"+first+"/approve", "acme", "", 409))

			// An approval left pending expires.
			now.Add(int64(15 * time.Minute))
			golden(t, "expired_decide.json", raw("POST", "/approvals/"+other+"/approve", "globex", "", 409))
			golden(t, "expired_list.json", raw("GET", "/approvals?status=expired", "globex", "", 200))
		})
	}
}
