package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// A Go MCP client (the go-sdk's, which refuses a message nested more
// than 1000 levels deep) of toolhost reads every answer of a remote tool
// whose result nests as deep as toolhost relays, and gets a tool error
// upstream_result_too_deep, on a session that goes on working, for one
// a level deeper: never a broken session.
func TestDeepRemoteResultsReachAGoClientWholeOrAsAnError(t *testing.T) {
	up := httptest.NewServer(testserver.New(true).Handler())
	t.Cleanup(up.Close)
	st := mcpremote.NewMemStore()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	srv := mcpremote.Server{ID: "mcpsrv_evil", AccountID: "acct_a", Name: "evil", URL: up.URL, Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Timeout: 10 * time.Second, CreatedAt: now, UpdatedAt: now}
	if srv.Sealed, err = seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(context.Background(), srv, 0); err != nil {
		t.Fatal(err)
	}
	gw, url := remoteFace(t, st, seal, time.Second)
	if _, err := gw.Refresh(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, url, http.Header{"X-Account": {"acct_a"}}, nil)

	tests := []struct {
		name  string
		args  testserver.DeepArgs
		code  string // of the tool error, "" for a result
		path  []string
		depth int // of the value at path in structuredContent, or in _meta's error object
	}{
		{"object at the limit", testserver.DeepArgs{Levels: 998}, "", nil, 998},
		{"wrapped array at the limit", testserver.DeepArgs{Levels: 997, Array: true}, "", []string{"value"}, 997},
		{"wrapped array past it", testserver.DeepArgs{Levels: 998, Array: true}, mcpremote.CodeUpstreamTooDeep, nil, 0},
		{"error at the limit", testserver.DeepArgs{Levels: 996, Error: true}, mcpremote.CodeUpstreamError, []string{"structured_content"}, 996},
		{"error past it", testserver.DeepArgs{Levels: 997, Error: true}, mcpremote.CodeUpstreamTooDeep, nil, 0},
		{"message past the client's limit", testserver.DeepArgs{Levels: 1001}, mcpremote.CodeUpstreamTooDeep, nil, 0},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args map[string]any
			b, _ := json.Marshal(tc.args)
			_ = json.Unmarshal(b, &args)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "evil__deep", Arguments: args})
			if err != nil {
				t.Fatalf("the go-sdk client could not read the answer: %v", err)
			}
			v := res.StructuredContent
			if res.IsError {
				body, _ := res.Meta["toolhost/error"].(map[string]any)
				if tc.code == "" || body["code"] != tc.code {
					t.Fatalf("error %v, want code %q", body, tc.code)
				}
				v = body
			} else if tc.code != "" {
				t.Fatalf("a result, want the error %s", tc.code)
			}
			for _, k := range tc.path {
				m, _ := v.(map[string]any)
				v = m[k]
			}
			if tc.depth > 0 && testserver.Nesting(v) != tc.depth {
				t.Fatalf("the value nests %d levels, want %d", testserver.Nesting(v), tc.depth)
			}
		})
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "evil__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || res.IsError {
		t.Fatalf("after the deep answers: %v %+v", err, res)
	}
}
