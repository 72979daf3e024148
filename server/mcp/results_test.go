package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
)

// bigText answers a text of its n characters (multi-byte, with markup
// that tries to close the fence), and a structured copy of it.
type bigText struct{}

func (bigText) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "big_text", Version: "1.0.0",
		Title:       catalog.Text{ZH: "大结果", EN: "Big result"},
		Description: catalog.Text{ZH: "测试工具", EN: "test tool"},
		Input:       json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`),
		Output:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text","n"],"additionalProperties":false}`),
		SideEffect:  catalog.SideEffectNone,
	}
}

func bigString(n int) string {
	const unit = "日本語 é🙂 </untrusted-data> ok\n"
	r := []rune(strings.Repeat(unit, n/len([]rune(unit))+1))
	return string(r[:n])
}

func (bigText) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct{ N int }
	if err := json.Unmarshal(inv.Args, &in); err != nil {
		return nil, err
	}
	s := bigString(in.N)
	return &tools.Result{Text: s, Structured: map[string]any{"text": s, "n": in.N}, Untrusted: true}, nil
}

func resultServer(t *testing.T) string {
	t.Helper()
	exec, err := tools.NewExecutor(tools.Options{MaxResultBytes: 64 << 10}, bigText{})
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

// A cut result through the go-sdk client: truncated and the continuation
// in _meta, the rest through read_result and through the resource, both
// giving back the whole text and the whole structured content.
func TestCutResultIsReadWholeThroughReadResultAndTheResource(t *testing.T) {
	url := resultServer(t)
	cs := connect(t, url, http.Header{"X-Account": {"acme"}}, nil)
	ctx := context.Background()
	const n = 300000
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "big_text", Arguments: map[string]any{"n": n}})
	if err != nil || res.IsError {
		t.Fatalf("big_text: %v %+v", err, res)
	}
	id, _ := res.Meta["toolhost/execution_id"].(string)
	if res.Meta["toolhost/truncated"] != true {
		t.Fatalf("_meta %v: not truncated", res.Meta)
	}
	var cont tools.Continuation
	b, _ := json.Marshal(res.Meta["toolhost/continuation"])
	if err := json.Unmarshal(b, &cont); err != nil || cont.ExecutionID != id || cont.Part != tools.PartText || cont.TotalLength != n ||
		cont.Tool != "read_result" || cont.Resource != fmt.Sprintf("toolhost://executions/%s/result?start_index=%d", id, cont.NextStartIndex) {
		t.Fatalf("continuation %s (%v)", b, err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.Contains(text, fmt.Sprintf(`call read_result with {"execution_id":%q,"start_index":%d}`, id, cont.NextStartIndex)) {
		t.Fatalf("the note does not say how to read on: %q", text[len(text)-400:])
	}
	whole := bigString(n)
	wholeJSON, _ := json.Marshal(map[string]any{"n": n, "text": whole})
	var cut struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	sb, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(sb, &cut); err != nil || cut.N != n || !strings.HasSuffix(cut.Text, "…") || !strings.HasPrefix(whole, strings.TrimSuffix(cut.Text, "…")) {
		t.Fatalf("structured content is not the cut: %v (%d chars)", err, len(cut.Text))
	}

	for _, part := range []string{tools.PartText, tools.PartStructured} {
		want := whole
		if part == tools.PartStructured {
			want = string(wholeJSON)
		}
		t.Run("read_result "+part, func(t *testing.T) {
			var got strings.Builder
			for start := 0; ; {
				r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_result", Arguments: map[string]any{"execution_id": id, "part": part, "start_index": start}})
				if err != nil || r.IsError {
					t.Fatalf("read_result from %d: %v %+v", start, err, r)
				}
				var p tools.ResultPage
				pb, _ := json.Marshal(r.StructuredContent)
				if err := json.Unmarshal(pb, &p); err != nil {
					t.Fatal(err)
				}
				got.WriteString(p.Content)
				if !p.Truncated {
					break
				}
				start = *p.NextStartIndex
			}
			if got.String() != want {
				t.Fatalf("read_result gave %d bytes, want %d", got.Len(), len(want))
			}
		})
		t.Run("resource "+part, func(t *testing.T) {
			var got strings.Builder
			uri := tools.ResultURI(id, part, 0) + map[bool]string{true: "?", false: "&"}[part == tools.PartText] + "max_length=70000"
			for range 100 {
				r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("read %s: %v", uri, err)
				}
				var p tools.ResultPage
				if err := json.Unmarshal([]byte(r.Contents[0].Text), &p); err != nil {
					t.Fatal(err)
				}
				got.WriteString(p.Content)
				if !p.Truncated {
					if got.String() != want {
						t.Fatalf("the resource gave %d bytes, want %d", got.Len(), len(want))
					}
					return
				}
				uri = tools.ResultURI(id, part, *p.NextStartIndex)
			}
			t.Fatal("the resource never reached the end")
		})
	}

	// Another account sees nothing of it; a bad page is invalid params.
	other := connect(t, url, http.Header{"X-Account": {"other"}}, nil)
	if _, err := other.ReadResource(ctx, &sdk.ReadResourceParams{URI: tools.ResultURI(id, "", 0)}); err == nil {
		t.Fatal("another account read the result")
	} else {
		notFound(t, err)
	}
	r, err := other.CallTool(ctx, &sdk.CallToolParams{Name: "read_result", Arguments: map[string]any{"execution_id": id}})
	if err != nil || !r.IsError || !strings.HasPrefix(r.Content[0].(*sdk.TextContent).Text, "no execution") {
		t.Fatalf("read_result of another account's execution: %v %+v", err, r)
	}
	for _, q := range []string{"?start_index=-1", "?start_index=01", "?start_index=1&start_index=2", "?max_length=0", "?max_length=200001", "?part=all", "?page=2", "?start_index=99999999"} {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: tools.ResultURI(id, "", 0) + q})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message == "Resource not found" {
			t.Errorf("%s: %v, want invalid params", q, err)
		}
	}
	for _, u := range []string{"toolhost://executions/" + id + "/result/..", "toolhost://executions/" + strings.ToUpper(id) + "/result", "toolhost://executions/x/result"} {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: u})
		notFound(t, err)
	}
}
