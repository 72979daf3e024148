package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// answer is the status and error of one request.
type answer struct {
	status  int
	code    string
	message string
	id      string
}

// send is do for goroutines: it reports instead of failing the test.
func send(srv *httptest.Server, method, path, account, body string) (answer, error) {
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("X-Account", account)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return answer{}, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return answer{status: resp.StatusCode, code: b.Error.Code, message: b.Error.Message, id: b.Data.ID}, nil
}

// burst sends n requests at once, body(i) each, and returns the answers.
func burst(t *testing.T, srv *httptest.Server, path, account string, n int, body func(i int) string) []answer {
	t.Helper()
	out := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = send(srv, "POST", path, account, body(i))
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// tally counts the answers by status and code, and keeps the ids created.
func tally(t *testing.T, as []answer, limitCode, wantName string) (created []string, refused int) {
	t.Helper()
	for _, a := range as {
		switch {
		case a.status == http.StatusCreated:
			created = append(created, a.id)
		case a.status == http.StatusConflict && a.code == limitCode:
			if !strings.Contains(a.message, wantName) {
				t.Fatalf("the refusal does not name the limit %s: %q", wantName, a.message)
			}
			refused++
		default:
			t.Fatalf("unexpected answer %+v", a)
		}
	}
	return created, refused
}

func capServer(t *testing.T, st tooldef.Store, limit int) *httptest.Server {
	t.Helper()
	d := &admin.Definitions{Store: st, Max: limit, Account: accountHeader,
		Rules: tooldef.Rules{Slots: session.DefaultSlots, CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }}}
	return tenantServer(t, d.Routes())
}

// A hostile key creating definitions as fast as it can: 40 creates at
// once against a cap of 5 store exactly 5, the others are 409
// tool_definition_limit naming the config key; another account is not
// touched; a lower cap later keeps all that is stored (readable,
// writable, deletable) and refuses creates until deletes bring the
// account under it; a delete makes room for exactly one.
func TestDefinitionCapHoldsUnderConcurrentCreates(t *testing.T) {
	for name, st := range defStores(t) {
		t.Run(name, func(t *testing.T) {
			srv := capServer(t, st, 5)
			body := func(i int) string { return fmt.Sprintf(`{"name":"tool_%d"}`, i) }
			created, refused := tally(t, burst(t, srv, "/tools/definitions", "acct_h", 40, body), "tool_definition_limit", "tools.max_definitions_per_account")
			if len(created) != 5 || refused != 35 {
				t.Fatalf("40 creates at once under a cap of 5: %d created, %d refused", len(created), refused)
			}
			if _, total, err := st.ListDefinitions(context.Background(), tooldef.Query{AccountID: "acct_h"}); err != nil || total != 5 {
				t.Fatalf("stored: %d %v, want 5", total, err)
			}
			// Another account has a cap of its own.
			if other, _ := tally(t, burst(t, srv, "/tools/definitions", "acct_o", 3, body), "tool_definition_limit", ""); len(other) != 3 {
				t.Fatalf("another account: %d created", len(other))
			}
			do(t, srv, call{method: "DELETE", path: "/tools/definitions/" + created[0], account: "acct_h", status: 200})
			again, _ := tally(t, burst(t, srv, "/tools/definitions", "acct_h", 10, func(i int) string { return body(100 + i) }),
				"tool_definition_limit", "tools.max_definitions_per_account")
			if len(again) != 1 {
				t.Fatalf("a delete made room for %d creates, want 1", len(again))
			}

			lower := capServer(t, st, 3)
			items := listOf(t, lower, "acct_h")
			if len(items) != 5 {
				t.Fatalf("after the cap was lowered to 3 the account lists %d definitions, want its 5", len(items))
			}
			do(t, lower, call{method: "PATCH", path: "/tools/definitions/" + items[0] + "/toggle", account: "acct_h", body: `{"enabled":false}`, status: 200})
			do(t, lower, call{method: "POST", path: "/tools/definitions", account: "acct_h", body: body(200), status: 409, code: "tool_definition_limit"})
			for _, id := range items[:2] {
				do(t, lower, call{method: "DELETE", path: "/tools/definitions/" + id, account: "acct_h", status: 200})
			}
			do(t, lower, call{method: "POST", path: "/tools/definitions", account: "acct_h", body: body(201), status: 409, code: "tool_definition_limit"})
			do(t, lower, call{method: "DELETE", path: "/tools/definitions/" + items[2], account: "acct_h", status: 200})
			do(t, lower, call{method: "POST", path: "/tools/definitions", account: "acct_h", body: body(202), status: 201})
		})
	}
}

// listOf is the ids of the account's definitions.
func listOf(t *testing.T, srv *httptest.Server, account string) []string {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+"/tools/definitions?limit=500", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Account", account)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %d %v", resp.StatusCode, err)
	}
	var ids []string
	for _, d := range b.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// The same for remote MCP servers: 30 registrations at once against a
// cap of 4 store exactly 4 (409 mcp_server_limit naming the config key),
// and a delete makes room for exactly one.
func TestMCPServerCapHoldsUnderConcurrentCreates(t *testing.T) {
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range mcpStores(t) {
		t.Run(name, func(t *testing.T) {
			// No gateway: the registrations are not listed (nothing is
			// dialed); the cap is the store's.
			m := &admin.MCPServers{Store: st, Sealer: seal, Max: 4, Account: accountHeader}
			srv := tenantServer(t, m.Routes())
			body := func(i int) string { return fmt.Sprintf(`{"name":"srv_%d","url":"http://127.0.0.1:9/mcp"}`, i) }
			created, refused := tally(t, burst(t, srv, "/mcp-servers", "acct_h", 30, body), "mcp_server_limit", "mcp_servers.max_per_account")
			if len(created) != 4 || refused != 26 {
				t.Fatalf("30 registrations at once under a cap of 4: %d created, %d refused", len(created), refused)
			}
			if ss, err := st.ListMCPServers(context.Background(), "acct_h"); err != nil || len(ss) != 4 {
				t.Fatalf("stored: %d %v, want 4", len(ss), err)
			}
			do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_o", body: body(0), status: 201})
			do(t, srv, call{method: "DELETE", path: "/mcp-servers/" + created[0], account: "acct_h", status: 200})
			again, _ := tally(t, burst(t, srv, "/mcp-servers", "acct_h", 8, func(i int) string { return body(100 + i) }),
				"mcp_server_limit", "mcp_servers.max_per_account")
			if len(again) != 1 {
				t.Fatalf("a delete made room for %d registrations, want 1", len(again))
			}
		})
	}
}
