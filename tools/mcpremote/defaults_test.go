package mcpremote_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// A remote schema's defaults are filled in on every call, not only the
// first: the parsed properties are kept with the compiled schema, and a
// caller's value is never replaced by a default another call got.
func TestRemoteSchemaDefaultsOnEveryCall(t *testing.T) {
	up := startUpstream(t, false)
	r := newRig(t, mcpremote.Options{})
	r.register("acct_a", "evil", up.url(), nil)
	call := func(args string) string {
		t.Helper()
		out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "evil__greet", Args: json.RawMessage(args),
			Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct_a"}}})
		if err != nil || out.IsError {
			t.Fatal(err, out)
		}
		return out.Text
	}
	for i, c := range []struct{ args, want string }{
		{`{}`, "Hello, world"},
		{`{"name":"Ada"}`, "Hello, Ada"},
		{`{}`, "Hello, world"},
		{`{"name":""}`, "Hello, "},
		{`{}`, "Hello, world"},
	} {
		if got := call(c.args); !strings.Contains(got, c.want) || strings.Contains(got, c.want+"Ada") {
			t.Fatalf("call %d with %s: %q, want %q", i, c.args, got, c.want)
		}
	}
}
