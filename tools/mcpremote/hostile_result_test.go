package mcpremote_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

// journalStores are the stores the journal runs on: memory, SQLite and,
// when configured, PostgreSQL.
func journalStores(t *testing.T) map[string]journal.Store {
	stores := map[string]journal.Store{"memory": journal.NewMemStore()}
	for name, db := range storetest.Open(t, "mcpgateway_test") {
		stores[name] = db
	}
	return stores
}

// journaledRig is a rig whose executor journals into st.
func journaledRig(t *testing.T, st journal.Store) (*rig, *journal.Journal) {
	t.Helper()
	r := newRig(t, mcpremote.Options{})
	jr := journal.New(st, journal.Options{InstanceID: "inst-" + t.Name()})
	t.Cleanup(jr.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: r.gw, Journal: jr}, builtin.NewGetTime(time.Now))
	if err != nil {
		t.Fatal(err)
	}
	r.exec = exec
	return r, jr
}

// deepCases are the remote answers at and just past each nesting limit
// (mcpgateway's depth.go): code "" is relayed, with structured, the depth
// of the structured result toolhost keeps (the {"error": …} object of a
// remote isError).
var deepCases = []struct {
	name       string
	args       testserver.DeepArgs
	code       string
	structured int
}{
	{"object as deep as a message allows", testserver.DeepArgs{Levels: 998}, "", 998},
	{"array as deep as its wrapper allows", testserver.DeepArgs{Levels: 997, Array: true}, "", 998},
	{"array a level deeper", testserver.DeepArgs{Levels: 998, Array: true}, mcpremote.CodeUpstreamTooDeep, 0},
	{"error as deep as its error object allows", testserver.DeepArgs{Levels: 996, Error: true}, mcpremote.CodeUpstreamError, 998},
	{"error a level deeper", testserver.DeepArgs{Levels: 997, Error: true}, mcpremote.CodeUpstreamTooDeep, 0},
	{"object past the message limit", testserver.DeepArgs{Levels: 999}, mcpremote.CodeUpstreamTooDeep, 0},
	{"content past the message limit", testserver.DeepArgs{Levels: 1200, InContent: true}, mcpremote.CodeUpstreamTooDeep, 0},
	{"far past the message limit", testserver.DeepArgs{Levels: 9000, Array: true}, mcpremote.CodeUpstreamTooDeep, 0},
}

// A remote result nested too deep for a Go MCP client to read, as
// toolhost would relay it, is refused with upstream_result_too_deep: not
// sent again (the server did answer), and journaled as a failed call on
// every store, PostgreSQL included; one at the limits is relayed and
// journaled whole. The gateway's session stays usable.
func TestDeepRemoteResultsAreRefusedAndJournaled(t *testing.T) {
	up := startUpstream(t, true)
	for name, st := range journalStores(t) {
		t.Run(name, func(t *testing.T) {
			r, jr := journaledRig(t, st)
			r.register("acct_a", "evil", up.url(), func(s *mcpremote.Server, _ *mcpremote.Secrets) { s.Timeout = 5 * time.Second })
			for i, tc := range deepCases {
				t.Run(tc.name, func(t *testing.T) {
					args, _ := json.Marshal(tc.args)
					before := up.ts.Calls("deep")
					out := r.call("acct_a", "evil__deep", string(args))
					if out.Code != tc.code {
						t.Fatalf("code %q, want %q (%.300s)", out.Code, tc.code, out.Text)
					}
					if n := up.ts.Calls("deep") - before; n != 1 {
						t.Fatalf("the call reached the server %d times, want 1", n)
					}
					rec, err := jr.Store().Get(context.Background(), "acct_a", out.ExecutionID)
					if err != nil {
						t.Fatalf("the journal lost call %d: %v", i, err)
					}
					if rec.ErrorCode != tc.code {
						t.Fatalf("journaled code %q, want %q", rec.ErrorCode, tc.code)
					}
					if tc.code == mcpremote.CodeUpstreamTooDeep && rec.Status != journal.StatusError {
						t.Fatalf("journaled %s, want error", rec.Status)
					}
					if tc.structured > 0 && testserver.NestingOf(rec.Result) != tc.structured {
						t.Fatalf("journaled result nests %d levels, want %d", testserver.NestingOf(rec.Result), tc.structured)
					}
				})
			}
			if out := r.call("acct_a", "evil__deep", `{"levels":3}`); out.IsError {
				t.Fatalf("after the deep answers: %+v", out)
			}
		})
	}
}

// A remote answer with a character PostgreSQL text cannot hold (NUL) is
// relayed as it came and journaled, on every store, with U+FFFD in its
// place: the journal write is not refused (which would fail the call and
// the records committed with it).
func TestRemoteTextWithNULIsJournaled(t *testing.T) {
	up := startUpstream(t, false)
	for name, st := range journalStores(t) {
		t.Run(name, func(t *testing.T) {
			r, jr := journaledRig(t, st)
			r.register("acct_a", "demo", up.url(), nil)
			out := r.call("acct_a", "demo__echo", `{"message":"a\u0000b"}`)
			if out.IsError || !strings.Contains(out.Text, "Echo: a\x00b") {
				t.Fatalf("outcome %+v", out)
			}
			rec, err := jr.Store().Get(context.Background(), "acct_a", out.ExecutionID)
			if err != nil {
				t.Fatalf("the journal lost the call: %v", err)
			}
			want := "Echo: a\uFFFDb"
			if name == "memory" {
				want = "Echo: a\x00b" // nothing to refuse it
			}
			if rec.Status != journal.StatusSuccess || !strings.Contains(rec.ResultText, want) {
				t.Fatalf("journaled %s %q, want %q in it", rec.Status, rec.ResultText, want)
			}
		})
	}
}

// Hostile input a call can carry — a NUL, invalid UTF-8, a lone
// surrogate, U+FFFF, a huge or deeply nested value, in the arguments, the
// remote answer, the tool name, the ids, the idempotency key — reaches the
// journal in one spooled batch with ordinary calls, on every store: no
// record of the batch is lost to one the store would refuse.
func TestHostileCallsAreJournaledWithTheirBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("a hostile-input sweep of MiB values on every store, seconds; runs in make test")
	}
	up := startUpstream(t, false)
	huge := strings.Repeat("\u00e9\x00", 1<<17) // 384 KiB, 1 MiB as JSON
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	type call struct {
		name, tool, args, key, callID, session string
		code                                   string // "" for success
	}
	calls := []call{
		{name: "plain", tool: "get_time", args: `{}`},
		{name: "NUL", tool: "demo__echo", args: `{"message":"a\u0000b"}`},
		{name: "lone surrogate", tool: "demo__echo", args: `{"message":"\ud800\udc00\ud800 x"}`},
		{name: "U+FFFF", tool: "demo__echo", args: `{"message":"\uffff\ufffe"}`},
		{name: "invalid UTF-8", tool: "demo__echo", args: "{\"message\":\"\xff\xfe\xed\xa0\x80\"}"},
		{name: "raw NUL", tool: "demo__echo", args: "{\"message\":\"\xff\x00\"}", code: "invalid_arguments_json"},
		{name: "huge", tool: "demo__echo", args: `{"message":` + jsonQuote(huge) + `}`},
		{name: "deep", tool: "demo__echo", args: `{"message":` + deep + `}`, code: "invalid_arguments"},
		{name: "tool name", tool: "no\x00such\xff\xed\xa0\x80tool", args: `{}`, code: "unknown_tool"},
		{name: "ids", tool: "demo__echo", args: `{"message":"x"}`, callID: "call\x00\xff", session: "sess\x00\xfe"},
		{name: "key with NUL", tool: "demo__echo", args: `{"message":"x"}`, key: "k\x00", code: "invalid_idempotency_key"},
		{name: "key", tool: "demo__echo", args: `{"message":"k\u0000"}`, key: "key-1"},
		{name: "plain after", tool: "get_time", args: `{}`},
	}
	for name, st := range journalStores(t) {
		t.Run(name, func(t *testing.T) {
			// Nothing here is about time: a listing or a huge answer that
			// takes over the rig's second on a loaded machine must not
			// change a call's outcome.
			r := newRig(t, mcpremote.Options{ProbeTimeout: time.Minute})
			// A spool applied only when flushed: every write below is in
			// one batch.
			jr := journal.New(st, journal.Options{InstanceID: "hostile-" + name, SpoolDir: t.TempDir(), ApplyInterval: time.Hour})
			t.Cleanup(jr.Close)
			if _, err := jr.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: r.gw, Journal: jr}, builtin.NewGetTime(time.Now))
			if err != nil {
				t.Fatal(err)
			}
			r.exec = exec
			r.register("acct_a", "demo", up.url(), nil)
			ids := map[string]string{}
			for _, c := range calls {
				sess := c.session
				if sess == "" {
					sess = "sess_1"
				}
				out, err := exec.Execute(context.Background(), tools.Proposal{Tool: c.tool, Args: json.RawMessage(c.args), CallID: c.callID,
					IdempotencyKey: c.key, Caller: tools.Caller{SessionID: sess, Face: "mcp", Identity: identity.Identity{AccountID: "acct_a"}}})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if out.Code != c.code {
					t.Fatalf("%s: outcome %s %s %q, want code %q", c.name, out.Status, out.Code, out.Message, c.code)
				}
				ids[c.name] = out.ExecutionID
			}
			if err := jr.Flush(context.Background()); err != nil {
				t.Fatalf("the batch was refused: %v", err)
			}
			for _, c := range calls {
				rec, err := jr.Store().Get(context.Background(), "acct_a", ids[c.name])
				if err != nil {
					t.Errorf("%s: the journal lost the call: %v", c.name, err)
					continue
				}
				if rec.Lifecycle != journal.Finished || rec.ErrorCode != c.code {
					t.Errorf("%s: journaled %s %s %q", c.name, rec.Lifecycle, rec.Status, rec.ErrorCode)
				}
				if _, err := jr.Store().Events(context.Background(), "acct_a", ids[c.name]); err != nil {
					t.Errorf("%s: events: %v", c.name, err)
				}
			}
		})
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
