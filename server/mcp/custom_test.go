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

func names(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// An account's custom tools appear in its sessions' tools/list (with
// list_changed when they change), are called through the pipeline, and
// are never seen by another account.
func TestCustomToolsPerAccount(t *testing.T) {
	ctx := context.Background()
	defs := tooldef.NewMemStore()
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Definitions: defs}, builtin.All()...)
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

	changed := make(chan struct{}, 8)
	a := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"acme"}}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	b := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"beta"}}, nil)
	if slices.Contains(names(t, a), "lookup_npc") {
		t.Fatal("listed before it exists")
	}
	d := tooldef.New()
	now := time.Now()
	d.ID, d.AccountID, d.Name, d.CreatedAt, d.UpdatedAt = "tooldef_1", "acme", "lookup_npc", now, now
	d.Parameters = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	if err := defs.CreateDefinition(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	face.DefinitionsChanged("acme")
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if !slices.Contains(names(t, a), "lookup_npc") {
		t.Fatal("the custom tool is not listed after the change")
	}
	if slices.Contains(names(t, b), "lookup_npc") {
		t.Fatal("another account sees the custom tool")
	}
	// Through the pipeline: schema validation, then the missing handler.
	res, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "lookup_npc", Arguments: map[string]any{}})
	if err != nil || !res.IsError || res.Meta["toolhost/error"].(map[string]any)["code"] != tools.CodeInvalidArgs {
		t.Fatalf("invalid arguments: %v %+v", err, res)
	}
	res, err = a.CallTool(ctx, &sdk.CallToolParams{Name: "lookup_npc", Arguments: map[string]any{"name": "Ayla"},
		Meta: sdk.Meta{"toolhost/slot": "narrator"}})
	if err != nil || !res.IsError || res.Meta["toolhost/error"].(map[string]any)["code"] != tools.CodeNoHandler {
		t.Fatalf("call: %v %+v", err, res)
	}
	rec, err := exec.Journal().Store().Get(ctx, "acme", res.Meta["toolhost/execution_id"].(string))
	if err != nil || rec.ProviderType != "preset" || rec.CallerSlot != "narrator" || rec.Face != "mcp" {
		t.Fatalf("journal: %v %+v", err, rec)
	}
	if res, err := b.CallTool(ctx, &sdk.CallToolParams{Name: "lookup_npc", Arguments: map[string]any{"name": "x"}}); err == nil && !res.IsError {
		t.Fatal("another account called the custom tool")
	}
	if err := defs.DeleteDefinition(ctx, "acme", "tooldef_1"); err != nil {
		t.Fatal(err)
	}
	face.DefinitionsChanged("acme")
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after the delete")
	}
	if slices.Contains(names(t, a), "lookup_npc") {
		t.Fatal("still listed after the delete")
	}
}
