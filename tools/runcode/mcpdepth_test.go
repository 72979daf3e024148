package runcode

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
)

// depthOf is how deeply v, as decoded by encoding/json, nests arrays and
// objects along its first elements and members.
func depthOf(v any) int {
	n := 0
	for {
		switch x := v.(type) {
		case []any:
			n++
			if len(x) == 0 {
				return n
			}
			v = x[0]
		case map[string]any:
			n++
			if len(x) == 0 {
				return n
			}
			for _, m := range x {
				v = m
			}
		default:
			return n
		}
	}
}

// Every value the sandbox accepts reaches a go-sdk client whole: the
// deepest one (997 levels) sits 3 levels down in the MCP message, just
// within the 10 000 encoding/json reads, for run_code as for a script
// tool, whether the script returns an array (wrapped in {"value": …}) or
// an object (the structuredContent itself). One level more is refused in
// the sandbox with the limit's number, never sent for the client to choke
// on. Through the real MCP face, over HTTP, with the go-sdk client.
func TestDeepestAcceptedValueDecodesInAGoSDKClient(t *testing.T) {
	nest := func(levels int, wrap string) string {
		return "let v = []; for (let i = 1; i < " + strconv.Itoa(levels) + "; i++) v = " + wrap + "; "
	}
	_, sb, _ := shared(t)
	ex := scriptExecutor(t, true, map[string]string{
		"deep_array":     nest(997, "[v]") + "return v;",
		"deep_object":    nest(997, "{v}") + "return v;",
		"too_deep_array": nest(998, "[v]") + "return v;",
		"too_deep_json":  "return {toJSON() { " + nest(998, "[v]") + "return v; }};",
	}, New(sb))
	face := mcpface.New(ex, mcpface.Options{
		AccountOf: func(*http.Request) string { return tools.LocalAccount },
		Identify: func(context.Context, *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: tools.LocalAccount}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, tc := range []struct {
		name  string
		tool  string
		args  map[string]any
		depth int    // of the value, 0: refused
		field string // where the value is in structuredContent, "": it is
		why   string // the refusal's reason
	}{
		{"run_code, as deep as allowed", "run_code", map[string]any{"language": "javascript", "code": nest(997, "[v]") + "v"}, 997, "result", ""},
		{"run_code, a level more", "run_code", map[string]any{"language": "javascript", "code": nest(998, "{v}") + "v"}, 0, "result", "nests more than 997 levels deep"},
		{"script array, as deep as allowed", "deep_array", nil, 997, "value", ""},
		{"script object, as deep as allowed", "deep_object", nil, 997, "", ""},
		{"script, a level more", "too_deep_array", nil, 0, "", "nests more than 997 levels deep"},
		{"script, a level more made by toJSON", "too_deep_json", nil, 0, "", "nests more than 997 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("the go-sdk client could not take the result: %v", err)
			}
			sc, _ := res.StructuredContent.(map[string]any)
			text := ""
			if len(res.Content) > 0 {
				if tx, ok := res.Content[0].(*sdk.TextContent); ok {
					text = tx.Text
				}
			}
			switch {
			case tc.depth > 0:
				v := any(sc)
				if tc.field != "" {
					v = sc[tc.field]
				}
				if res.IsError || depthOf(v) != tc.depth {
					t.Errorf("isError %v, value %d levels deep, want %d (%.200s)", res.IsError, depthOf(v), tc.depth, text)
				}
			case tc.tool == "run_code":
				// Not a tool error: result is null with a note in stderr.
				stderr, _ := sc["stderr"].(string)
				if res.IsError || sc["result"] != nil || !strings.Contains(stderr, tc.why) {
					t.Errorf("isError %v, result %.40v, stderr %q, want null and %q", res.IsError, sc["result"], stderr, tc.why)
				}
			default:
				body, _ := res.Meta["toolhost/error"].(map[string]any)
				if !res.IsError || !strings.Contains(text, tc.why) || body["code"] != tools.CodeScriptError {
					t.Errorf("isError %v, error %v, text %.300s, want a script_error with %q", res.IsError, body, text, tc.why)
				}
			}
		})
	}
}
