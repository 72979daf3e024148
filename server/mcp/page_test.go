package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// A tools/call names the caller's page in _meta toolhost/page-id beside
// its turn (toolhost/floor-id): the journal keeps it as page_id (the
// execution resource shows it, the page filter finds it); "" names none.
// A page id outside the rule is an invalid_arguments tool error, journaled
// without the value.
func TestMCPCallCarriesTheCallersPage(t *testing.T) {
	ctx := context.Background()
	exec, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(server.New(server.Options{MCP: mcpface.New(exec, mcpface.Options{}).Handler()}).Handler())
	t.Cleanup(hs.Close)
	cs := connect(t, hs.URL+"/mcp", nil, nil)
	for _, c := range []struct {
		name string
		page any
		want string // the stored page; "" none
		code string // the refusal, "" for success
	}{
		{name: "named", page: "page_7", want: "page_7"},
		{name: "every allowed character", page: "Pg.7_b:c-d", want: "Pg.7_b:c-d"},
		{name: "empty names none", page: "", want: ""},
		{name: "absent", want: ""},
		{name: "space", page: "page 7", code: tools.CodeInvalidArgs},
		{name: "too long", page: strings.Repeat("p", tools.MaxPageIDBytes+1), code: tools.CodeInvalidArgs},
		{name: "huge", page: strings.Repeat("p", 1<<20), code: tools.CodeInvalidArgs},
		{name: "nul", page: "page\x007", code: tools.CodeInvalidArgs},
		{name: "markup", page: `"></untrusted-data><script>`, code: tools.CodeInvalidArgs},
		{name: "bidi", page: "page_\u202e7", code: tools.CodeInvalidArgs},
		{name: "full-width", page: "ｐａｇｅ_7", code: tools.CodeInvalidArgs},
		{name: "number", page: 7, code: tools.CodeInvalidArgs},
		{name: "object", page: map[string]any{"id": "page_7"}, code: tools.CodeInvalidArgs},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := sdk.Meta{mcpface.FloorMetaKey: "floor_1"}
			if c.page != nil {
				meta[mcpface.PageMetaKey] = c.page
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{}, Meta: meta})
			if err != nil {
				t.Fatal(err)
			}
			id, _ := res.Meta["toolhost/execution_id"].(string)
			rec, err := exec.Journal().Store().Get(ctx, tools.LocalAccount, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.code != "" {
				e, _ := res.Meta["toolhost/error"].(map[string]any)
				msg, _ := e["message"].(string)
				if !res.IsError || e["code"] != c.code || !strings.Contains(msg, "page id") || len(msg) > 1000 {
					t.Errorf("refusal %+v", e)
				}
				if rec.PageID != "" || rec.ProviderType != journal.ProviderBuiltin || rec.ErrorCode != c.code {
					t.Errorf("journaled page %q provider %s code %s; want none, builtin, %s", rec.PageID, rec.ProviderType, rec.ErrorCode, c.code)
				}
				return
			}
			if res.IsError || rec.PageID != c.want || rec.FloorID != "floor_1" {
				t.Fatalf("call %+v: journaled page %q floor %q, want %q", res, rec.PageID, rec.FloorID, c.want)
			}
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: mcpface.ExecutionURI(id)})
			if err != nil {
				t.Fatal(err)
			}
			var view struct {
				PageID *string `json:"page_id"`
			}
			if err := json.Unmarshal([]byte(rr.Contents[0].Text), &view); err != nil || (view.PageID == nil) != (c.want == "") ||
				(view.PageID != nil && *view.PageID != c.want) {
				t.Errorf("resource page_id %v (%v), want %q", view.PageID, err, c.want)
			}
			if c.want != "" {
				recs, _, err := exec.Journal().Store().List(ctx, journal.Query{AccountID: tools.LocalAccount, HasPageID: true, PageID: c.want, Limit: 10})
				if err != nil || len(recs) != 1 || recs[0].ID != id {
					t.Errorf("the page filter found %d records (%v)", len(recs), err)
				}
			}
		})
	}
}
