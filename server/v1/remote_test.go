package v1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/journal"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// remoteEnv is a /v1 server whose executor has the account acct_a's
// remote MCP server "demo" (the go-sdk test server on a loopback port,
// listed once as its registration does), with the journal's routes
// beside it. The account is the X-Test-Account header.
type remoteEnv struct {
	*env
	ts   *testserver.Server
	up   *http.Server
	srv  mcpremote.Server
	exec *tools.Executor
}

func newRemoteEnv(t *testing.T, script fakeupstream.Script) *remoteEnv {
	t.Helper()
	return startRemoteEnv(t, script, remoteEnvOptions{})
}

// remoteEnvOptions vary the remote env: the test server's hostile tools,
// a journal on a store of the test's (nil: in memory).
type remoteEnvOptions struct {
	hostile bool
	journal *journal.Journal
}

func startRemoteEnv(t *testing.T, script fakeupstream.Script, o remoteEnvOptions) *remoteEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := testserver.New(o.hostile)
	mux := http.NewServeMux()
	mux.Handle("/mcp", ts.Handler())
	up := &http.Server{Handler: mux}
	go func() { _ = up.Serve(ln) }()
	t.Cleanup(func() { _ = up.Close() })

	st := mcpremote.NewMemStore()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: 2 * time.Second})
	t.Cleanup(gw.Close)
	now := time.Now()
	narrator := []string{"narrator"}
	srv := mcpremote.Server{ID: "mcpsrv_demo", AccountID: "acct_a", Name: "demo", URL: "http://" + ln.Addr().String() + "/mcp", Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Tools: map[string]mcpremote.Override{"write": {AllowedSlots: &narrator}},
		CreatedAt: now, UpdatedAt: now}
	if srv.Sealed, err = seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(context.Background(), srv, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Refresh(context.Background(), srv); err != nil {
		t.Fatal(err)
	}

	ex, err := tools.NewExecutor(tools.Options{Remote: gw, Journal: o.journal}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	return &remoteEnv{env: serveAccountLoop(t, ex, script), ts: ts, up: up, srv: srv, exec: ex}
}

// execution is the one journal record of the /v1 request floor.
func (e *remoteEnv) execution(floor string) map[string]any {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+"/tool-executions?floor_id="+floor, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Test-Account", "acct_a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		e.t.Fatal(err)
	}
	if len(list.Data) != 1 {
		e.t.Fatalf("%d records of %s: %v", len(list.Data), floor, list.Data)
	}
	return list.Data[0]
}

func remoteConversation(match string, tool, args, answer string) fakeupstream.Conversation {
	return fakeupstream.Conversation{Match: match, Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_"+match, tool, args)}},
		{Content: answer},
	}}
}

func declaring(user string, names ...string) string {
	b, _ := json.Marshal(names)
	return `{"model":"m","messages":[{"role":"user","content":"` + user + `"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":` + string(b) + `}]}`
}

// toolResult is what the model got back for the call of the request
// whose conversation matched (the tool message of its second round).
func (e *remoteEnv) toolResult(user string) string {
	e.t.Helper()
	for _, r := range e.upstreamRequests() {
		msgs := r["messages"].([]any)
		if len(msgs) == 3 && strings.Contains(fmt.Sprint(msgs[0]), user) {
			return msgs[2].(map[string]any)["content"].(string)
		}
	}
	e.t.Fatalf("no second round for %q", user)
	return ""
}

// An account's remote tool is declared on the /v1 wire by its exposed
// name, given to the model with the server's schema, run on the server
// through the pipeline, and journaled provider_type mcp, face hosted,
// with the fenced text it answered as the result's data.
func TestHostedLoopRunsRemoteTool(t *testing.T) {
	e := newRemoteEnv(t, fakeupstream.Script{Conversations: []fakeupstream.Conversation{
		remoteConversation("echo", "demo__echo", `{"message":"hi"}`, "It said hi."),
	}})
	resp := e.post(context.Background(), declaring("echo", "demo__echo"), map[string]string{"X-Request-Id": "req_echo", "X-Test-Account": "acct_a"})
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	fn := e.upstreamRequests()[0]["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
	params, _ := json.Marshal(fn["parameters"])
	if fn["name"] != "demo__echo" || fn["description"] != "Echoes the message back." || !strings.Contains(string(params), `"message":{"type":"string"}`) {
		t.Errorf("definition given to the model: %v", fn)
	}
	result := e.toolResult("echo")
	if got, ok := tools.Unfence(result); !ok || got != "Echo: hi" {
		t.Errorf("remote result given to the model: %s", result)
	}
	if e.ts.Calls("echo") != 1 {
		t.Errorf("the server saw %d calls of echo", e.ts.Calls("echo"))
	}
	var body struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Toolhost struct {
			ToolCalls []map[string]any `json:"tool_calls"`
		} `json:"toolhost"`
	}
	_ = json.Unmarshal(resp.body, &body)
	if len(body.Choices) != 1 || body.Choices[0].Message.Content != "It said hi." || len(body.Toolhost.ToolCalls) != 1 ||
		body.Toolhost.ToolCalls[0]["status"] != "done" {
		t.Errorf("response %s", resp.body)
	}
	r := e.execution("req_echo")
	data, _ := r["result"].(map[string]any)["data"].(string)
	if r["tool_name"] != "demo__echo" || r["provider_type"] != "mcp" || r["provider_id"] != "mcp:"+e.srv.ID || r["face"] != "hosted" ||
		r["status"] != "success" || r["account_id"] != "acct_a" || data != result {
		t.Errorf("record %v", r)
	}
}

// With the server stopped, the declaration still holds (the catalog is
// what toolhost knows), the call is a failed result that starts with
// upstream_unavailable, the loop goes on and the model answers; the
// journal says so.
func TestHostedLoopRemoteServerDown(t *testing.T) {
	e := newRemoteEnv(t, fakeupstream.Script{Conversations: []fakeupstream.Conversation{
		remoteConversation("down", "demo__echo", `{"message":"hi"}`, "The echo server is down."),
	}})
	_ = e.up.Close()
	resp := e.post(context.Background(), declaring("down", "demo__echo"), map[string]string{"X-Request-Id": "req_down", "X-Test-Account": "acct_a"})
	if resp.status != http.StatusOK || !strings.Contains(string(resp.body), "The echo server is down.") || !strings.Contains(string(resp.body), `"status":"failed"`) {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if result := e.toolResult("down"); !strings.HasPrefix(result, "[tool error] upstream_unavailable: ") || !strings.Contains(result, "demo") {
		t.Errorf("the model was not told the server is down: %s", result)
	}
	if r := e.execution("req_down"); r["error_code"] != tools.CodeUpstreamUnavailable || r["provider_type"] != "mcp" || r["face"] != "hosted" || r["status"] != "error" {
		t.Errorf("record %v", r)
	}
}

// Another account cannot declare acct_a's remote tools (an unknown hosted
// tool, as any name it does not have), nor names that only look like
// them; a tool restricted to a slot is declared, and the pipeline denies
// a call from another slot in the loop.
func TestHostedRemoteToolsAreTheAccountsOwn(t *testing.T) {
	e := newRemoteEnv(t, fakeupstream.Script{Conversations: []fakeupstream.Conversation{
		remoteConversation("write", "demo__write", `{"note":"n"}`, "Not allowed."),
	}})
	for _, c := range []struct{ account, name string }{
		{"acct_b", "demo__echo"}, {"local", "demo__echo"}, {"acct_a", "DEMO__echo"}, {"acct_a", "demo__echo\u200b"}, {"acct_a", "demo__missing"},
	} {
		resp := e.post(context.Background(), declaring("x", c.name), map[string]string{"X-Test-Account": c.account})
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "unknown_hosted_tool") {
			t.Errorf("%s declaring %q: %d %s", c.account, c.name, resp.status, resp.body)
		}
	}
	if e.ts.Calls("echo") != 0 {
		t.Errorf("the server saw %d calls", e.ts.Calls("echo"))
	}
	resp := e.post(context.Background(), declaring("write", "demo__write"), map[string]string{"X-Request-Id": "req_slot", "X-Test-Account": "acct_a", v1.SlotHeader: "verifier"})
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if result := e.toolResult("write"); !strings.Contains(result, "narrator") {
		t.Errorf("the model was not told the slot rule: %s", result)
	}
	if r := e.execution("req_slot"); r["status"] != "denied" || r["provider_type"] != "mcp" || e.ts.Calls("write") != 0 {
		t.Errorf("record %v, server calls %d", r, e.ts.Calls("write"))
	}
}
