package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

// The seed's fields a remote MCP server gives, on every SQL store and
// through the REST API: a registration with server-level defaults
// (/mcp-servers), the runtime catalog's bases that come from them
// (server_default, scope server) and from projected schemas
// (shallow_schema_projection, scope projection), and a read the server
// refuses once with 503: attempt_no 2 and both attempts, with their
// invocation ids and backoff, in GET /tool-executions/{id} and its
// events. Golden files in testdata/remote (-update rewrites them).
func TestRemoteSeedFields(t *testing.T) {
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			up := testserver.New(false)
			up.AddHostileSchemas()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: up.Handler()}
			go func() { _ = hs.Serve(ln) }()
			t.Cleanup(func() { hs.Close() })
			upURL := "http://" + ln.Addr().String() + "/mcp"

			seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
			if err != nil {
				t.Fatal(err)
			}
			allow := []string{"127.0.0.1"}
			dial, err := egress.DialContext(allow, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			gw := mcpremote.New(mcpremote.Options{Store: db, Sealer: seal, Dial: dial, ProbeTimeout: 2 * time.Minute, // the hostile schemas take seconds under -race
				Wait:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
				Jitter: func(upTo time.Duration) time.Duration { return min(upTo, 37*time.Millisecond) }})
			t.Cleanup(gw.Close)
			jr := journal.New(db, journal.Options{InstanceID: "seed"})
			t.Cleanup(jr.Close)
			ex, err := tools.NewExecutor(tools.Options{Sessions: db, Definitions: db, Variables: db, Journal: jr, Remote: gw}, builtin.All()...)
			if err != nil {
				t.Fatal(err)
			}
			routes := (&admin.Sessions{Store: db, Slots: session.DefaultSlots,
				Runtime: func(ctx context.Context, a, id, slot string) (any, error) { return ex.Runtime(ctx, a, id, slot) }}).Routes()
			m := &admin.MCPServers{Store: db, Sealer: seal, Gateway: gw, Rules: mcpremote.Rules{Slots: session.DefaultSlots},
				CheckHost: func(ctx context.Context, host string) error { return egress.CheckHost(ctx, allow, host) }}
			for p, h := range m.Routes() {
				routes[p] = h
			}
			for p, h := range (&admin.Journal{Store: jr.Store()}).Routes() {
				routes[p] = h
			}
			srv := tenantServer(t, routes)
			var execID string
			echo := func(t *testing.T) {
				up.FailNext("echo", http.StatusServiceUnavailable, "1")
				out, err := ex.Execute(ctx, tools.Proposal{Tool: "demo__echo", Args: json.RawMessage(`{"message":"hi"}`), CallID: "call_001",
					Caller: tools.Caller{Slot: "narrator", Face: "mcp", SessionID: "sess_001", FloorID: "floor_001", RunID: "floorrun_001"}})
				if err != nil || out.IsError {
					t.Fatalf("demo__echo: %v %+v", err, out)
				}
				execID = out.ExecutionID
			}
			register := `{"name":"demo","url":"` + upURL + `","defaults":{"side_effect_level":"sandbox","allowed_slots":["narrator","director"]},` +
				`"tools":{"add":{"side_effect_level":"irreversible","allowed_slots":["memory"]}}}`
			steps := []seedStep{
				{name: "mcp-servers-create-defaults", method: "POST", path: "/mcp-servers", body: register},
				{name: "mcp-servers-create-bad-defaults", method: "POST", path: "/mcp-servers",
					body: `{"name":"other","url":"` + upURL + `","defaults":{"side_effect_level":"maybe"}}`},
				{name: "session-create", method: "POST", path: "/sessions", body: `{"id":"sess_001"}`},
				{name: "runtime-remote", method: "GET", path: "/sessions/sess_001/tools/runtime?slot=narrator"},
				{name: "execution-retried", method: "GET", path: "/tool-executions/{exec}", before: echo},
				{name: "execution-retried-events", method: "GET", path: "/tool-executions/{exec}/events"},
			}
			for _, st := range steps {
				if st.before != nil {
					st.before(t)
				}
				status, body := seedDo(t, srv.URL, st.method, strings.ReplaceAll(st.path, "{exec}", execID), st.body)
				st.body = strings.ReplaceAll(st.body, upURL, "http://127.0.0.1:…/mcp")
				got := seedGolden(t, st, status, maskRemote(t, body, upURL, execID))
				file := filepath.Join("testdata", "remote", st.name+".json")
				if *update && name == "sqlite" {
					if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: got\n%s\nwant\n%s", file, got, want)
				}
			}
		})
	}
}

// remoteMasked are the keys of a remote call whose values differ on
// every run: the wall clock's (the deadline left, event times, listing
// times) and the server's address and id.
var remoteMasked = map[string]bool{"deadline_ms": true, "at": true, "listed_at": true, "age_ms": true, "deadline": true,
	"reference_clock": true, "version": true, "tool_version": true}

// maskRemote masks what remoteMasked names, then the server's URL and id
// and the execution id wherever they appear.
func maskRemote(t *testing.T, body []byte, upURL, execID string) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, m := range x {
				if remoteMasked[k] && m != nil {
					x[k] = "…"
				} else {
					x[k] = walk(m)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			x = strings.ReplaceAll(x, upURL, "http://127.0.0.1:…/mcp")
			if execID != "" {
				x = strings.ReplaceAll(x, execID, "{exec}")
			}
			// A fence's boundary is drawn at random for each result.
			x = fenceBoundary.ReplaceAllString(x, `boundary="…"`)
			if i := strings.Index(x, "mcpsrv_"); i >= 0 {
				x = x[:i] + "mcpsrv_…"
			}
			return x
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var fenceBoundary = regexp.MustCompile(`boundary="[0-9a-f]{24}"`)
