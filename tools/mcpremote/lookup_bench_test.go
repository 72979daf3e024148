package mcpremote_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// BenchmarkRemoteLookup is the gateway's part of resolving a remote tool
// name on each call (RemoteTool), as serve builds it: the store behind
// mcpremote.Cache, a live session.
func BenchmarkRemoteLookup(b *testing.B) {
	r := newServedRig(b, nil)
	srv := mcpremote.Server{ID: "mcpsrv_s", AccountID: "acct_s", Name: "demo", URL: r.url, Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	var err error
	if srv.Sealed, err = r.seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		b.Fatal(err)
	}
	if err := r.cache.CreateMCPServer(context.Background(), srv, 0); err != nil {
		b.Fatal(err)
	}
	if out := r.echo("demo__echo"); out.IsError {
		b.Fatalf("warm-up call: %+v", out)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if rt, err := r.gw.RemoteTool(ctx, "acct_s", "demo__echo"); err != nil || rt == nil {
			b.Fatal(err)
		}
	}
}
