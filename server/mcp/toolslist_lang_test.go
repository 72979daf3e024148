package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// tools/list in English and in Chinese, golden: the builtins' and the
// session builtins' titles, descriptions and the descriptions inside
// their input and output schemas switch with Accept-Language; a remote
// MCP server's tools keep the server's text in both, and its schemas that
// no client should take whole come as their shallow projection.
func TestToolsListGoldenInEachLanguage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := testserver.New(false)
	ts.AddHostileSchemas()
	mux := http.NewServeMux()
	mux.Handle("/mcp", ts.Handler())
	up := &http.Server{Handler: mux}
	go func() { _ = up.Serve(ln) }()
	t.Cleanup(func() { up.Close() })

	st := mcpremote.NewMemStore()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sandbox := "sandbox"
	srv := mcpremote.Server{ID: "mcpsrv_demo", AccountID: "acct_a", Name: "demo", URL: "http://" + ln.Addr().String() + "/mcp", Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Defaults: mcpremote.Defaults{SideEffectLevel: &sandbox}, CreatedAt: now, UpdatedAt: now}
	if srv.Sealed, err = seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(context.Background(), srv, 0); err != nil {
		t.Fatal(err)
	}
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: 5 * time.Second})
	t.Cleanup(gw.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Variables: session.NewMemStore(), Remote: gw}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	face := mcpface.New(exec, mcpface.Options{
		AccountOf: func(r *http.Request) string { return r.Header.Get("X-Account") },
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	if _, err := gw.Refresh(context.Background(), srv); err != nil {
		t.Fatal(err)
	}

	for _, lang := range []struct{ name, header string }{{"en", "en-US"}, {"zh", "zh-CN,zh;q=0.9"}} {
		t.Run(lang.name, func(t *testing.T) {
			cs := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"acct_a"}, "Accept-Language": {lang.header}}, nil)
			byName := listed(t, cs)
			huge := byName["demo__hugeschema"]
			if huge == nil {
				t.Fatalf("demo__hugeschema is not listed: %v", byName)
			}
			if b, _ := json.Marshal(huge.InputSchema); len(b) > 64<<10 || !strings.Contains(string(b), `"p00000"`) {
				t.Fatalf("the huge schema is not its projection (%d bytes)", len(b))
			}
			delete(byName, "demo__hugeschema") // 32 KiB of numbered parameters: checked above
			names := make([]string, 0, len(byName))
			for n := range byName {
				names = append(names, n)
			}
			sort.Strings(names)
			var buf bytes.Buffer
			for _, n := range names {
				tl := byName[n]
				b, err := json.MarshalIndent(struct {
					Name         string `json:"name"`
					Title        string `json:"title"`
					Description  string `json:"description"`
					InputSchema  any    `json:"inputSchema"`
					OutputSchema any    `json:"outputSchema,omitempty"`
				}{tl.Name, tl.Title, tl.Description, tl.InputSchema, tl.OutputSchema}, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(b)
				buf.WriteByte('\n')
			}
			path := filepath.Join("testdata", "tools-list."+lang.name+".golden")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update once)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Fatalf("tools/list (%s) changed; if on purpose run go test ./server/mcp -run TestToolsListGolden -update\n%s", lang.name, buf.Bytes())
			}
		})
	}
}
