package mcpremote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// BenchmarkRemoteCall compares one echo call of the go-sdk test server
// made directly with a go-sdk client and made through the Executor and the
// gateway (parse, validation, journal in memory, the pooled session): the
// difference is what toolhost adds in process, without the caller's hop.
func BenchmarkRemoteCall(b *testing.B) {
	up := startUpstream(b, false)
	b.Run("direct", func(b *testing.B) {
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		s, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: up.url(), HTTPClient: http.DefaultClient}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		r := newRig(b, mcpremote.Options{})
		r.register("acct", "demo", up.url(), nil)
		args := json.RawMessage(`{"message":"hi"}`)
		for b.Loop() {
			out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "demo__echo", Args: args, Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct"}}})
			if err != nil || out.IsError {
				b.Fatal(err, out)
			}
		}
	})
}
