package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"toolhost/catalog"
	"toolhost/identity"
	"toolhost/journal"
	"toolhost/keys"
	"toolhost/store"
)

// keyed builds an executor behind a real key service (SQLite) and returns
// it with a key of the given limits.
func keyed(t *testing.T, limits keys.Limits, ts ...Tool) (*Executor, *keys.Service, *keys.Key) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := keys.New(keys.Options{Store: db})
	k, _, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, limits)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExecutor(Options{Authorizer: KeysAuthorizer(svc)}, ts...)
	if err != nil {
		t.Fatal(err)
	}
	return e, svc, k
}

func callerOf(k *keys.Key) Caller {
	return Caller{Face: "mcp", Identity: identity.Identity{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Scopes}}
}

// hugeArgs is a 3.5 MB argument object of 300 000 unknown properties.
func hugeArgs() json.RawMessage {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 300000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":1`, i)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

func record(t *testing.T, e *Executor, account, id string) journal.Record {
	t.Helper()
	r, err := e.Journal().Store().Get(context.Background(), account, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A key at its rate limit gets no parsing or validation done: the call is
// refused at once, before its arguments are looked at, and its journal
// record keeps at most 64 KiB of them.
func TestRateLimitedKeyIsRefusedBeforeParsing(t *testing.T) {
	p := &probe{name: "probe", run: echo}
	e, _, k := keyed(t, keys.Limits{CallsPerMinute: 1}, p)
	ctx := context.Background()
	if out, err := e.Execute(ctx, Proposal{Tool: "probe", Args: json.RawMessage(`{}`), Caller: callerOf(k)}); err != nil || out.IsError {
		t.Fatalf("first call: %v %+v", err, out)
	}
	out, err := e.Execute(ctx, Proposal{Tool: "probe", Args: hugeArgs(), Caller: callerOf(k)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Code != keys.CodeRateLimited {
		t.Fatalf("code %q (%.200s), want rate_limited before any parsing", out.Code, out.Message)
	}
	r := record(t, e, k.AccountID, out.ExecutionID)
	if r.State != journal.StateAuthorizationRejected || r.Status != journal.StatusBlocked {
		t.Errorf("record state %s status %s", r.State, r.Status)
	}
	if len(r.ArgsRaw) > 64<<10+100 || !strings.Contains(string(r.ArgsRaw), "truncated by the journal") {
		t.Errorf("journal kept %d bytes of arguments", len(r.ArgsRaw))
	}
	// An unknown tool and garbage are refused the same way.
	out, _ = e.Execute(ctx, Proposal{Tool: "nope", Args: json.RawMessage(`{`), Caller: callerOf(k)})
	if out.Code != keys.CodeRateLimited {
		t.Errorf("unknown tool over the limit: %q", out.Code)
	}
}

// An error quotes a bounded part of its input: 300 000 unknown properties
// give a short message, a short journal row and a short result.
func TestErrorsAndJournalRowsAreBounded(t *testing.T) {
	p := &probe{name: "probe", run: echo}
	e, err := NewExecutor(Options{}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: hugeArgs()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Code != CodeInvalidArgs || len(out.Message) > 3000 || len(out.Text) > 3000 || len(out.Structured) > 4000 {
		t.Fatalf("code %s, message %d bytes, text %d, structured %d", out.Code, len(out.Message), len(out.Text), len(out.Structured))
	}
	r := record(t, e, LocalAccount, out.ExecutionID)
	size := len(r.ArgsRaw) + len(r.Args) + len(r.Result) + len(r.ResultText) + len(r.ErrorMessage)
	if size > 80<<10 {
		t.Fatalf("journal row holds %d bytes", size)
	}
	out, _ = e.Execute(context.Background(), Proposal{Tool: strings.Repeat("t", 1<<20), Args: json.RawMessage(`{}`)})
	if out.Code != CodeUnknownTool || len(out.Message) > 3000 {
		t.Fatalf("unknown 1 MB tool name: %s, %d bytes", out.Code, len(out.Message))
	}
}

func TestIdempotencyKeyIsBounded(t *testing.T) {
	p := &probe{name: "probe", run: echo}
	e, err := NewExecutor(Options{}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), IdempotencyKey: strings.Repeat("k", 256)})
	if out.Code != CodeInvalidIdempotencyKey || p.calls.Load() != 0 {
		t.Fatalf("256-byte key: code %q, %d calls", out.Code, p.calls.Load())
	}
}

// A key is printable text: one with a control character (a NUL, which
// PostgreSQL cannot store) or invalid UTF-8 is refused before anything
// runs, not stored mended (two keys would become one); any other
// character, U+FFFD written as such included, is a key.
func TestIdempotencyKeyIsText(t *testing.T) {
	tests := []struct {
		key string
		bad int
	}{
		{"order-17", -1},
		{"clé 🔑 \uFFFD\uFFFF", -1},
		{"k\x00", 1},
		{"\tk", 0},
		{"k\x7f", 1},
		{"ké\xff", 3},
		{"k\xed\xa0\x80", 1}, // a surrogate, as CESU-8
		{"k\xc3", 1},         // cut short
	}
	for _, tc := range tests {
		if got := badKeyByte(tc.key); got != tc.bad {
			t.Errorf("badKeyByte(%q) = %d, want %d", tc.key, got, tc.bad)
		}
		p := &probe{name: "probe", run: echo}
		e, err := NewExecutor(Options{}, p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), IdempotencyKey: tc.key})
		if err != nil {
			t.Fatal(err)
		}
		refused := out.Code == CodeInvalidIdempotencyKey && p.calls.Load() == 0
		if refused != (tc.bad >= 0) {
			t.Errorf("key %q: code %q, %d calls", tc.key, out.Code, p.calls.Load())
		}
	}
}

// meter is a paid tool that bills n units (its MaxUnits), or its budget.
type meter struct{}

func (meter) Spec() catalog.Spec {
	return catalog.Spec{Name: "meter", Version: "1", Description: catalog.Text{ZH: "计", EN: "meter"},
		Input:    json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		PaidUnit: "second", SideEffect: catalog.SideEffectNone}
}

func (meter) MaxUnits(inv *Invocation) float64 {
	var in struct{ N float64 }
	_ = json.Unmarshal(inv.Args, &in)
	return in.N
}

func (m meter) Call(ctx context.Context, inv *Invocation) (*Result, error) {
	time.Sleep(100 * time.Millisecond)
	units := m.MaxUnits(inv)
	return &Result{Structured: map[string]any{"budget": inv.UnitBudget}, Units: units, Summary: "ok"}, nil
}

// The monthly cap holds each call's maximum while it runs: with a cap of 4
// units, ten concurrent calls that may use 3 each bill at most 4 in all
// (holding one unit each let four of them run and bill 12).
func TestMonthlyCapHoldsEachCallsMaximum(t *testing.T) {
	e, svc, k := keyed(t, keys.Limits{MonthlyUnitsCap: 4}, meter{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.Execute(context.Background(), Proposal{Tool: "meter", Args: json.RawMessage(`{"n":3}`), Caller: callerOf(k)})
			if err != nil {
				t.Error(err)
				return
			}
			if !out.IsError {
				mu.Lock()
				ran++
				mu.Unlock()
			} else if out.Code != keys.CodeMonthlyCapReached {
				t.Errorf("refusal %s: %s", out.Code, out.Message)
			}
		}()
	}
	wg.Wait()
	used, err := svc.Store().MonthCost(context.Background(), k.ID, keys.Month(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if used > 4 || ran == 0 {
		t.Fatalf("%d calls ran and billed %g units against a cap of 4", ran, used)
	}
	t.Logf("%d calls ran, %g units billed", ran, used)
}
