package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// A character's definition is in tools/list, and callable, only in the
// MCP sessions that play that character; a session that takes the
// character on sees it at its next tools/list; other sessions and other
// accounts never do.
func TestCharacterToolsPerSession(t *testing.T) {
	ctx := context.Background()
	defs, sessions := tooldef.NewMemStore(), session.NewMemStore()
	exec, err := tools.NewExecutor(tools.Options{Sessions: sessions, Definitions: defs}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	acct := func(h http.Header) string { return h.Get("X-Account") }
	face := mcpface.New(exec, mcpface.Options{
		AccountOf: func(r *http.Request) string { return acct(r.Header) },
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: acct(extra.Header)}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	now := time.Now()
	for _, d := range []tooldef.Definition{
		{ID: "tooldef_c", AccountID: "acme", Name: "secret_of", Source: tooldef.SourceCharacter, SourceID: "char_ana", Description: "Ana's secret"},
		{ID: "tooldef_x", AccountID: "acme", Name: "Ana-Only", Source: tooldef.SourceCharacter, SourceID: "char_ana", Description: "only Ana"},
	} {
		d.Parameters, d.SideEffectLevel, d.AllowedSlots, d.Enabled, d.CreatedAt, d.UpdatedAt = tooldef.DefaultParameters, "none", []string{}, true, now, now
		if err := defs.CreateDefinition(ctx, d, 0); err != nil {
			t.Fatal(err)
		}
	}
	ana := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"acme"}}, nil)
	plain := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"acme"}}, nil)
	other := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"beta"}}, nil)
	if slices.Contains(names(t, ana), "secret_of") {
		t.Fatal("listed before the session plays the character")
	}
	// The MCP session becomes Ana (PATCH /sessions/{id} in the binary);
	// so does beta's session, which must still not see acme's tools.
	for _, c := range []struct {
		account string
		cs      *sdk.ClientSession
	}{{"acme", ana}, {"beta", other}} {
		if _, err := sessions.TouchSession(ctx, c.account, c.cs.ID(), now); err != nil {
			t.Fatal(err)
		}
		if err := sessions.SetSessionCharacter(ctx, c.account, c.cs.ID(), &session.Character{ID: "char_ana", Name: "Ana", Attributes: json.RawMessage(`{}`)}, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(t, ana); !slices.Contains(got, "secret_of") || !slices.Contains(got, "Ana-Only") {
		t.Fatalf("Ana's session lists %v", got)
	}
	for _, cs := range []*sdk.ClientSession{plain, other} {
		if got := names(t, cs); slices.Contains(got, "secret_of") || slices.Contains(got, "Ana-Only") {
			t.Fatalf("another session lists %v", got)
		}
	}
	// Called in Ana's session it reaches the pipeline (no handler here);
	// elsewhere it is an unknown tool.
	res, err := ana.CallTool(ctx, &sdk.CallToolParams{Name: "Ana-Only", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta["toolhost/error"].(map[string]any)["code"] != tools.CodeNoHandler {
		t.Fatalf("Ana's call: %v %+v", err, res)
	}
	for _, cs := range []*sdk.ClientSession{plain, other} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "Ana-Only", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("another session ran Ana's tool: %+v", res)
		}
	}
}
