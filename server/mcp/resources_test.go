package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// accounts starts an MCP server whose callers name their account in an
// X-Account header (an empty one is the executor's default account).
func accounts(t *testing.T) string {
	t.Helper()
	exec, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	face := mcpface.New(exec, mcpface.Options{
		Lang: catalog.English,
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			if extra == nil || extra.Header == nil {
				return identity.Identity{}
			}
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func callDice(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6}})
	if err != nil || res.IsError {
		t.Fatalf("roll_dice: %v %+v", err, res)
	}
	id, _ := res.Meta["toolhost/execution_id"].(string)
	if id == "" {
		t.Fatalf("no execution id in %+v", res.Meta)
	}
	return id
}

func listedURIs(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

// notFound asserts that err is the SDK's resource-not-found error and that
// it quotes the URI at most clipped.
func notFound(t *testing.T, err error) {
	t.Helper()
	var rpc *jsonrpc.Error
	// The SDK's ResourceNotFoundError: invalid params (SEP-2164), this
	// message, the URI in data.
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message != "Resource not found" || !strings.Contains(string(rpc.Data), `"uri"`) {
		t.Fatalf("err = %v, want the SDK's resource-not-found error", err)
	}
	if n := len(rpc.Message) + len(rpc.Data); n > 1024 {
		t.Fatalf("the error is %d bytes: it echoes the input whole", n)
	}
}

func TestExecutionsAreTheCallersOwn(t *testing.T) {
	url := accounts(t)
	ctx := context.Background()
	acme := connect(t, url, http.Header{"X-Account": {"acme"}}, nil)
	beta := connect(t, url, http.Header{"X-Account": {"beta"}}, nil)
	id := callDice(t, acme)
	uri := mcpface.ExecutionURI(id)

	if !slices.Contains(listedURIs(t, acme), uri) {
		t.Fatalf("acme's resources/list lacks its execution %s", uri)
	}
	res, err := acme.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || res.Contents[0].URI != uri {
		t.Fatalf("contents = %+v", res.Contents)
	}
	var rec struct {
		ID        string          `json:"id"`
		AccountID string          `json:"account_id"`
		ToolName  string          `json:"tool_name"`
		Status    string          `json:"status"`
		Args      json.RawMessage `json:"args"`
		Result    struct {
			Data json.RawMessage `json:"data"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &rec); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.Contents[0].Text)
	}
	if rec.ID != id || rec.AccountID != "acme" || rec.ToolName != "roll_dice" || rec.Status != "success" || len(rec.Result.Data) == 0 {
		t.Fatalf("record = %+v", rec)
	}

	// Another account: not listed, and reading it is "not found" with no
	// trace of the data.
	if slices.Contains(listedURIs(t, beta), uri) {
		t.Fatal("beta lists acme's execution")
	}
	_, err = beta.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	notFound(t, err)
	if strings.Contains(err.Error(), "roll_dice") || strings.Contains(err.Error(), "acme") {
		t.Fatalf("the refusal leaks the record: %v", err)
	}
	// The default account (no X-Account) is an account like the others.
	local := connect(t, url, nil, nil)
	_, err = local.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	notFound(t, err)
	own := callDice(t, local)
	if got := listedURIs(t, local); !slices.Contains(got, mcpface.ExecutionURI(own)) || slices.Contains(got, uri) {
		t.Fatalf("the default account lists %v", got)
	}
}

func TestResourcesListIsTheMostRecentPage(t *testing.T) {
	url := accounts(t)
	cs := connect(t, url, http.Header{"X-Account": {"acme"}}, nil)
	var ids []string
	for range mcpface.RecentExecutions + 3 {
		ids = append(ids, callDice(t, cs))
	}
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != mcpface.RecentExecutions || res.NextCursor != "" {
		t.Fatalf("%d resources, cursor %q; want the %d most recent and no cursor", len(res.Resources), res.NextCursor, mcpface.RecentExecutions)
	}
	if newest := mcpface.ExecutionURI(ids[len(ids)-1]); res.Resources[0].URI != newest {
		t.Fatalf("first = %s, want the newest %s", res.Resources[0].URI, newest)
	}
	if oldest := mcpface.ExecutionURI(ids[0]); slices.ContainsFunc(res.Resources, func(r *sdk.Resource) bool { return r.URI == oldest }) {
		t.Fatal("the oldest execution is on the page")
	}
	r := res.Resources[0]
	if r.MIMEType != "application/json" || !strings.HasPrefix(r.Title, "Roll dice · success · ") || r.Annotations == nil || r.Annotations.LastModified == "" {
		t.Fatalf("resource = %+v (annotations %+v)", r, r.Annotations)
	}
	// The list hands out no cursor, so any cursor is invalid params.
	_, err = cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: "b2Zmc2V0PTUw"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("cursor: err = %v, want invalid params", err)
	}
}

func TestExecutionURIsRefuseHostileInput(t *testing.T) {
	url := accounts(t)
	cs := connect(t, url, http.Header{"X-Account": {"acme"}}, nil)
	id := callDice(t, cs)
	// The real one reads; each spelling below must not.
	if _, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: mcpface.ExecutionURI(id)}); err != nil {
		t.Fatal(err)
	}
	fullwidth := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r - '0' + '０'
		}
		return r
	}, id)
	tests := map[string]string{
		"dot-dot":               "toolhost://executions/../x",
		"dot-dot after an id":   "toolhost://executions/" + id + "/../" + id,
		"escaped dot-dot":       "toolhost://executions/%2e%2e%2f" + id,
		"escaped id":            "toolhost://executions/" + strings.ReplaceAll(id, "-", "%2D"),
		"upper case":            "toolhost://executions/" + strings.ToUpper(id),
		"fullwidth digits":      "toolhost://executions/" + fullwidth,
		"zero-width space":      "toolhost://executions/" + id[:8] + "\u200b" + id[8:],
		"right-to-left mark":    "toolhost://executions/\u200f" + id,
		"braced":                "toolhost://executions/{" + id + "}",
		"urn":                   "toolhost://executions/urn:uuid:" + id,
		"query":                 "toolhost://executions/" + id + "?account=beta",
		"fragment":              "toolhost://executions/" + id + "#x",
		"trailing slash":        "toolhost://executions/" + id + "/",
		"no id":                 "toolhost://executions/",
		"other host":            "toolhost://executions.evil/" + id,
		"other scheme":          "file:///etc/passwd",
		"huge id":               "toolhost://executions/" + strings.Repeat("a", 1<<20),
		"huge id after a valid": "toolhost://executions/" + id + strings.Repeat("ä", 100_000),
		"empty":                 "",
	}
	for name, uri := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
			if err == nil {
				t.Fatalf("read %q: %+v", uri, res)
			}
			if uri == "" {
				return // the SDK refuses it as invalid params before any lookup
			}
			notFound(t, err)
		})
	}
}

func TestResourceTemplateFollowsAcceptLanguage(t *testing.T) {
	url := accounts(t)
	for header, want := range map[string][2]string{
		"":      {"Tool execution", "Tool result, in pages"},
		"en":    {"Tool execution", "Tool result, in pages"},
		"zh-CN": {"工具执行记录", "工具结果（分段）"},
	} {
		h := http.Header{}
		if header != "" {
			h.Set("Accept-Language", header)
		}
		cs := connect(t, url, h, nil)
		res, err := cs.ListResourceTemplates(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		titles := map[string]string{}
		for _, tm := range res.ResourceTemplates {
			titles[tm.URITemplate] = tm.Title
		}
		if len(titles) != 2 || titles[mcpface.ExecutionURITemplate] != want[0] || titles[tools.ResultURITemplate] != want[1] {
			t.Fatalf("%q: templates = %v", header, titles)
		}
	}
}
