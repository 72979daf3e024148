package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// storesUnderTest are the stores the approval flows run on: memory, a
// SQLite file and, when TOOLHOST_TEST_POSTGRES is set, PostgreSQL.
func storesUnderTest(t *testing.T) map[string]remoteOptions {
	t.Helper()
	out := map[string]remoteOptions{"memory": {}}
	for name, db := range storetest.Open(t, "mcprounds_test") {
		out[name] = remoteOptions{journal: db, approvals: db}
	}
	return out
}

// protocols are the two ways a go-sdk client is asked: elicitation/create
// on 2025-11-25 (a stateful session), an input-required result on
// 2026-07-28 (which the go-sdk serves over HTTP in stateless mode).
var protocols = []struct {
	version   string
	stateless bool
}{
	{"2025-11-25", false},
	{"2026-07-28", true},
}

// connectVersion connects a go-sdk client asking for protocol version and
// checks that it got it.
func connectVersion(t *testing.T, url, version string, header http.Header, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headerTransport{header}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the client speaks %s, want %s", got, version)
	}
	return cs
}

// restApprovals serves the executor's /approvals routes, the account
// named by X-Account, and returns a function that posts to them.
func restApprovals(t *testing.T, exec *tools.Executor) func(account, path string) int {
	t.Helper()
	rest := http.NewServeMux()
	for p, h := range (&admin.Approvals{Store: exec.Approvals(), Decide: exec.DecideApproval,
		Account: func(r *http.Request) string { return r.Header.Get("X-Account") }}).Routes() {
		rest.Handle(p, h)
	}
	srv := httptest.NewServer(rest)
	t.Cleanup(srv.Close)
	return func(account, path string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, nil)
		req.Header.Set("X-Account", account)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// errCode is the toolhost/error code of a result ("" when it succeeded).
func errCode(res *sdk.CallToolResult) string {
	e, _ := res.Meta["toolhost/error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// The four approval flows of issue 35 with the go-sdk client, on both
// ways of asking and on every store: accept runs exactly once (journaled
// under an approval decided via mcp_elicitation by the caller's key);
// decline ends approval_declined with nothing run; a client without
// elicitation gets approval_required, the account approves over REST and
// the retried identical call runs once; a changed argument needs its own
// approval.
func TestMCPApprovalFlowsOnEveryProtocolAndStore(t *testing.T) {
	for _, pv := range protocols {
		// Fresh stores for each protocol: the journal is counted.
		for store, so := range storesUnderTest(t) {
			t.Run(store+"/"+pv.version, func(t *testing.T) {
				o := so
				o.stateless = pv.stateless
				e := startRemoteWith(t, o)
				header := http.Header{"X-Account": {"acct_a"}, "X-Key": {"key_1"}}
				var mu sync.Mutex
				var asked []string
				answer := "accept"
				elicits := connectVersion(t, e.url, pv.version, header, &sdk.ClientOptions{
					ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, req.Params.Message)
						if answer == "accept" {
							return &sdk.ElicitResult{Action: "accept", Content: map[string]any{mcpface.ApproveField: true}}, nil
						}
						return &sdk.ElicitResult{Action: answer}, nil
					},
				})
				plain := connectVersion(t, e.url, pv.version, header, nil)
				call := func(cs *sdk.ClientSession, ans, note string) *sdk.CallToolResult {
					t.Helper()
					mu.Lock()
					answer = ans
					mu.Unlock()
					res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "demo__write", Arguments: map[string]any{"note": note}})
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				runs := func() int { return e.ts.Calls("write") }

				// accept → exactly one execution.
				res := call(elicits, "accept", "wire the money")
				if res.IsError || runs() != 1 || len(asked) != 1 || !strings.Contains(asked[0], `"note":"wire the money"`) {
					t.Fatalf("accept: %+v, %d runs, asked %q", res, runs(), asked)
				}
				accepted, _ := res.Meta["toolhost/execution_id"].(string)
				// decline and cancel → approval_declined, nothing runs.
				for _, a := range []string{"decline", "cancel"} {
					if res := call(elicits, a, "wire the money"); errCode(res) != tools.CodeApprovalDeclined || runs() != 1 {
						t.Fatalf("%s: %+v, %d runs", a, res, runs())
					}
				}
				// A changed argument is asked about anew, with its own arguments.
				if res := call(elicits, "accept", "wire more money"); res.IsError || runs() != 2 ||
					len(asked) != 4 || !strings.Contains(asked[3], `"note":"wire more money"`) {
					t.Fatalf("changed argument: %+v, %d runs, asked %d times", res, runs(), len(asked))
				}

				// Without elicitation: approval_required, REST, the retry runs once.
				post := restApprovals(t, e.exec)
				id := approvalID(t, call(plain, "", "pay the rent"))
				if code := post("acct_a", "/approvals/"+id+"/approve"); code != 200 {
					t.Fatalf("approve: %d", code)
				}
				if other := approvalID(t, call(plain, "", "pay the rent twice")); other == id || runs() != 2 {
					t.Fatalf("a changed argument ran under another call's approval (%d runs)", runs())
				}
				if res := call(plain, "", "pay the rent"); res.IsError || runs() != 3 {
					t.Fatalf("the approved retry: %+v, %d runs", res, runs())
				}
				if again := approvalID(t, call(plain, "", "pay the rent")); again == id || runs() != 3 {
					t.Fatalf("a second identical call ran under a consumed approval")
				}

				// The journal agrees: three runs, the first under the elicitation.
				if err := e.jr.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				recs, _, err := e.js.List(context.Background(), journal.Query{AccountID: "acct_a", ToolName: "demo__write", Statuses: []journal.Status{journal.StatusSuccess}, Limit: 50})
				if err != nil || len(recs) != 3 {
					t.Fatalf("%d successful records, %v", len(recs), err)
				}
				_, prepared := e.events(t, accepted)
				if !strings.Contains(prepared, `"decided_via":"`+approval.ViaElicitation+`"`) || !strings.Contains(prepared, `"decided_by":"key_1"`) {
					t.Errorf("prepared %s", prepared)
				}
			})
		}
	}
}

// approvalID is the approval id of an approval_required result.
func approvalID(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	e, _ := res.Meta["toolhost/error"].(map[string]any)
	id, _ := e["approval_id"].(string)
	if !res.IsError || e["code"] != tools.CodeApprovalRequired || !strings.HasPrefix(id, "apr_") {
		t.Fatalf("want approval_required with an approval id, got %+v", res)
	}
	return id
}

// roundsClient is a go-sdk client on 2026-07-28 that drives the rounds
// by hand (its multi-round-trip middleware off), as a client that
// tampers with them would.
type roundsClient struct {
	t  *testing.T
	cs *sdk.ClientSession
}

func newRoundsClient(t *testing.T, url, account string) roundsClient {
	t.Helper()
	cs := connectVersion(t, url, "2026-07-28", http.Header{"X-Account": {account}, "X-Key": {"key_" + account}}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		// Declares elicitation; the rounds are answered by hand.
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Error("the server sent elicitation/create on 2026-07-28")
			return nil, nil
		},
	})
	return roundsClient{t: t, cs: cs}
}

// call calls demo__write with note, carrying state and answer when state
// is not empty (answer nil: no inputResponses at all).
func (c roundsClient) call(note, state string, answer *sdk.ElicitResult) *sdk.CallToolResult {
	c.t.Helper()
	p := &sdk.CallToolParams{Name: "demo__write", Arguments: map[string]any{"note": note}, RequestState: state}
	if answer != nil {
		p.InputResponses = sdk.InputResponseMap{mcpface.ApprovalInputKey: answer}
	}
	res, err := c.cs.CallTool(context.Background(), p)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// ask makes a first call and returns the approval id its input-required
// result carries, after checking the form.
func (c roundsClient) ask(note string) string {
	c.t.Helper()
	res := c.call(note, "", nil)
	form, _ := res.InputRequests[mcpface.ApprovalInputKey].(*sdk.ElicitParams)
	if !res.NeedsInput() || form == nil || len(res.Content) != 0 || res.IsError {
		c.t.Fatalf("want an input-required result with the approval form, got %+v", res)
	}
	if form.Mode != "form" || !strings.Contains(form.Message, res.RequestState) || !strings.Contains(form.Message, `"note":`) {
		c.t.Fatalf("form %+v for state %q", form, res.RequestState)
	}
	schema, _ := form.RequestedSchema.(map[string]any)
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != mcpface.ApproveField {
		c.t.Fatalf("requested schema %v", form.RequestedSchema)
	}
	return res.RequestState
}

var (
	approve = &sdk.ElicitResult{Action: "accept", Content: map[string]any{mcpface.ApproveField: true}}
	decline = &sdk.ElicitResult{Action: "decline"}
)

// On protocol 2026-07-28 the request state that comes back from the
// client is checked against the store, whichever replica gets the retry:
// it must name a pending approval of the same account, session and
// invocation. Changed arguments, another account's client, a made-up or
// hostile state run nothing and leave the approval pending; the retry on
// the other replica runs exactly once; replaying an answer that was used
// (approved or declined) runs nothing; a retry without an answer, or one
// that accepts without approve, declines.
func TestMCPInputRequiredApprovalRefusesTamperingAndReplay(t *testing.T) {
	for store, dbs := range storetest.Replicas(t, "mcprounds_replay") {
		t.Run(store, func(t *testing.T) {
			a := startRemoteWith(t, remoteOptions{journal: dbs[0], approvals: dbs[0], stateless: true})
			b := startRemoteWith(t, remoteOptions{journal: dbs[1], approvals: dbs[1], stateless: true, upstream: a.ts})
			ca, cb := newRoundsClient(t, a.url, "acct_a"), newRoundsClient(t, b.url, "acct_a")
			other := newRoundsClient(t, a.url, "acct_b")
			runs := func() int { return a.ts.Calls("write") }
			invalid := func(res *sdk.CallToolResult, what string) {
				t.Helper()
				if errCode(res) != tools.CodeApprovalInvalid || runs() != 0 {
					t.Fatalf("%s: %+v, %d runs", what, res, runs())
				}
				if msg := res.Content[0].(*sdk.TextContent).Text; len(msg) > 2048 {
					t.Errorf("%s: a message of %d bytes", what, len(msg))
				}
			}
			id := ca.ask("wire the money")
			if runs() != 0 {
				t.Fatal("the first round ran the tool")
			}
			invalid(ca.call("wire all the money", id, approve), "changed arguments")
			invalid(other.call("wire the money", id, approve), "another account")
			invalid(ca.call("wire the money", "apr_000000000000000000000000", approve), "a made-up approval")
			for _, hostile := range []string{strings.Repeat("apr_", 1<<18), "apr_\u202e" + id[5:], id + "\x00", `{"approval_id":"` + id + `"}`} {
				invalid(ca.call("wire the money", hostile, approve), "hostile state")
			}
			// The approval is still pending after all that.
			if ap, err := a.exec.Approvals().GetApproval(context.Background(), "acct_a", id); err != nil || ap.Status != approval.Pending {
				t.Fatalf("after the refusals: %+v, %v", ap, err)
			}
			// The other replica takes the retry: exactly one run.
			res := cb.call("wire the money", id, approve)
			if res.IsError || runs() != 1 {
				t.Fatalf("the retry on the other replica: %+v, %d runs", res, runs())
			}
			if err := b.jr.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, prepared := b.events(t, res.Meta["toolhost/execution_id"].(string)); !strings.Contains(prepared, `"approval_id":"`+id+`"`) ||
				!strings.Contains(prepared, `"decided_via":"mcp_elicitation"`) || !strings.Contains(prepared, `"decided_by":"key_acct_a"`) {
				t.Errorf("prepared %s", prepared)
			}
			for _, c := range []roundsClient{ca, cb} {
				if res := c.call("wire the money", id, approve); errCode(res) != tools.CodeApprovalInvalid || runs() != 1 {
					t.Fatalf("a replayed answer: %+v, %d runs", res, runs())
				}
			}
			// Declines: the user's no, a retry without an answer, an accept without approve.
			for _, ans := range []*sdk.ElicitResult{decline, nil, {Action: "accept", Content: map[string]any{mcpface.ApproveField: "yes"}}} {
				id := ca.ask("wire the money")
				if res := ca.call("wire the money", id, ans); errCode(res) != tools.CodeApprovalDeclined || runs() != 1 {
					t.Fatalf("declined with %+v: %+v, %d runs", ans, res, runs())
				}
				if res := cb.call("wire the money", id, approve); errCode(res) != tools.CodeApprovalInvalid || runs() != 1 {
					t.Fatalf("accepting a declined approval: %+v, %d runs", res, runs())
				}
			}
		})
	}
}

// On 2026-07-28 the wait is the client's, between two requests: the
// first round tells the call's progress token that it asks its user and
// ends (journaled awaiting_approval, then authorization_rejected with
// approval_required), so no request of the server is open while the user
// thinks. A client that cancels meanwhile sends no retry: nothing runs,
// and the approval stays pending until it expires (or the account
// decides it over REST).
func TestMCPInputRequiredCancelledWhileWaiting(t *testing.T) {
	e := startRemoteWith(t, remoteOptions{stateless: true})
	asked := make(chan struct{})
	progress := make(chan string, 4)
	cs := connectVersion(t, e.url, "2026-07-28", http.Header{"X-Account": {"acct_a"}}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			close(asked)
			<-ctx.Done() // the user has not answered when the call is cancelled
			return nil, ctx.Err()
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := callInBackground(ctx, cs, "demo__write", map[string]any{"note": "later"})
	<-asked
	if msg := <-progress; !strings.Contains(msg, "asking the user to approve demo__write") {
		t.Errorf("progress %q", msg)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	if err := e.jr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, _, err := e.js.List(context.Background(), journal.Query{AccountID: "acct_a", ToolName: "demo__write", Limit: 5})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	r := recs[0]
	if states, _ := e.events(t, r.ID); !containsInOrder(states, journal.StateAwaitingApproval, journal.StateAuthorizationRejected) ||
		r.ErrorCode != tools.CodeApprovalRequired || e.ts.Calls("write") != 0 {
		t.Fatalf("the asking round: %s %s %v, %d runs", r.State, r.ErrorCode, states, e.ts.Calls("write"))
	}
	aps, _, err := e.exec.Approvals().ListApprovals(context.Background(), approval.Query{AccountID: "acct_a", Now: time.Now()})
	if err != nil || len(aps) != 1 || aps[0].Status != approval.Pending || aps[0].ExecutionID != r.ID {
		t.Fatalf("approvals %+v, %v", aps, err)
	}
}

// teeTransport keeps a copy of every response body it reads.
type teeTransport struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
}

func (tt *teeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Account", "acct_a")
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	buf := &bytes.Buffer{}
	tt.mu.Lock()
	tt.bodies = append(tt.bodies, buf)
	tt.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, buf), resp.Body}
	return resp, nil
}

// The input-required result on the wire, golden (ids and times
// normalized): the form under toolhost/approval, the approval id as
// request state, the execution id in _meta, no content.
func TestMCPInputRequiredResultGolden(t *testing.T) {
	e := startRemoteWith(t, remoteOptions{stateless: true})
	tee := &teeTransport{}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not asked this way")
		},
	})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: tee}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tee.mu.Lock()
	tee.bodies = nil
	tee.mu.Unlock()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "demo__write", Arguments: map[string]any{"note": "wire \u202e the money"}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("%+v %v", res, err)
	}
	tee.mu.Lock()
	defer tee.mu.Unlock()
	var raw []byte
	for _, b := range tee.bodies {
		for _, line := range strings.Split(b.String(), "\n") {
			line = strings.TrimPrefix(line, "data: ")
			if strings.Contains(line, `"inputRequests"`) {
				raw = []byte(line)
			}
		}
	}
	if raw == nil {
		t.Fatal("no input-required result on the wire")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(v, "", "  ")
	for re, with := range map[*regexp.Regexp]string{
		regexp.MustCompile(`apr_[0-9a-f]{24}`):                                             "apr_ID",
		regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`): "EXECUTION_ID",
		regexp.MustCompile(`expires \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`):                      "expires TIME",
	} {
		got = re.ReplaceAll(got, []byte(with))
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "input-required.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("the input-required result changed; if on purpose run go test ./server/mcp -run TestMCPInputRequiredResultGolden -update\n%s", got)
	}
}
