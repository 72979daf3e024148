package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// These tests run the Executor behind a real key service on the SQLite
// store, so they live outside package tools: the store imports the remote
// MCP tools, which import tools.

// monthEnd is the last second of January 2026: what is billed then is
// January's, and a report read a second later is in February.
var monthEnd = time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)

// testClock is the one clock of a test's executor and key service; it
// moves only when the test moves it. Concurrent calls read it.
type testClock struct{ ns atomic.Int64 }

func newTestClock(at time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// keyed builds an executor behind a real key service (SQLite), both on
// clock, and returns it with a key of the given limits.
func keyed(t *testing.T, clock *testClock, limits keys.Limits, ts ...tools.Tool) (*tools.Executor, *keys.Service, *keys.Key) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := keys.New(keys.Options{Store: db, Now: clock.Now})
	t.Cleanup(svc.Close)
	k, _, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, limits)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tools.NewExecutor(tools.Options{Authorizer: tools.KeysAuthorizer(svc), Clock: clock.Now}, ts...)
	if err != nil {
		t.Fatal(err)
	}
	return e, svc, k
}

func callerOf(k *keys.Key) tools.Caller {
	return tools.Caller{Face: "mcp", Identity: identity.Identity{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Scopes}}
}

// A key at its rate limit gets no parsing or validation done: the call is
// refused at once, before its arguments are looked at, and its journal
// record keeps at most 64 KiB of them.
func TestRateLimitedKeyIsRefusedBeforeParsing(t *testing.T) {
	p := echoTool{}
	e, _, k := keyed(t, newTestClock(monthEnd), keys.Limits{CallsPerMinute: 1}, p)
	ctx := context.Background()
	if out, err := e.Execute(ctx, tools.Proposal{Tool: "probe", Args: json.RawMessage(`{}`), Caller: callerOf(k)}); err != nil || out.IsError {
		t.Fatalf("first call: %v %+v", err, out)
	}
	out, err := e.Execute(ctx, tools.Proposal{Tool: "probe", Args: hugeArgs(), Caller: callerOf(k)})
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
	out, _ = e.Execute(ctx, tools.Proposal{Tool: "nope", Args: json.RawMessage(`{`), Caller: callerOf(k)})
	if out.Code != keys.CodeRateLimited {
		t.Errorf("unknown tool over the limit: %q", out.Code)
	}
}

// meter is a paid tool that bills n units (its MaxUnits), or its budget.
// A call tells entered that it runs, then waits for release.
type meter struct {
	entered chan struct{}
	release chan struct{}
}

func (meter) Spec() catalog.Spec {
	return catalog.Spec{Name: "meter", Version: "1", Description: catalog.Text{ZH: "计", EN: "meter"},
		Input:    json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		PaidUnit: "second", SideEffect: catalog.SideEffectNone}
}

func (meter) MaxUnits(inv *tools.Invocation) float64 {
	var in struct{ N float64 }
	_ = json.Unmarshal(inv.Args, &in)
	return in.N
}

func (m meter) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	m.entered <- struct{}{}
	select {
	case <-m.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	units := m.MaxUnits(inv)
	return &tools.Result{Structured: map[string]any{"budget": inv.UnitBudget}, Units: units, Summary: "ok"}, nil
}

// The monthly cap holds each call's maximum while it runs: with a cap of 4
// units, ten concurrent calls that may use 3 each bill at most 4 in all
// (holding one unit each let four of them run and bill 12). The calls
// that run are held inside the tool until every call runs or was
// answered, so each was admitted while the others held their units.
// The calls are made in a month's last second and the usage is read after
// midnight: they are billed in the month they began, and the next month
// starts with the whole cap.
func TestMonthlyCapHoldsEachCallsMaximum(t *testing.T) {
	const calls = 10
	m := meter{entered: make(chan struct{}, calls), release: make(chan struct{})}
	clock := newTestClock(monthEnd)
	e, svc, k := keyed(t, clock, keys.Limits{MonthlyUnitsCap: 4}, m)
	var wg sync.WaitGroup
	outs := make(chan *tools.Outcome, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.Execute(context.Background(), tools.Proposal{Tool: "meter", Args: json.RawMessage(`{"n":3}`), Caller: callerOf(k)})
			if err != nil {
				t.Error(err)
				return
			}
			outs <- out
		}()
	}
	ran, answered := 0, 0
	count := func(out *tools.Outcome) {
		answered++
		if !out.IsError {
			ran++
		} else if out.Code != keys.CodeMonthlyCapReached {
			t.Errorf("refusal %s: %s", out.Code, out.Message)
		}
	}
	// Release the calls that run only once every call runs or was
	// answered: each was admitted or refused while all the admitted ones
	// held what they may bill.
	for entered := 0; entered+answered < calls; {
		select {
		case out := <-outs:
			count(out)
		case <-m.entered:
			entered++
		}
	}
	close(m.release)
	wg.Wait()
	close(outs)
	for out := range outs {
		count(out)
	}
	clock.Advance(time.Second) // past midnight: February 1st, 00:00:00
	ctx := context.Background()
	used, err := svc.Store().MonthCost(ctx, k.ID, "2026-01")
	if err != nil {
		t.Fatal(err)
	}
	if used > 4 || ran == 0 {
		t.Fatalf("%d calls ran and billed %g units against a cap of 4", ran, used)
	}
	t.Logf("%d calls ran, %g units billed", ran, used)
	if feb, err := svc.Store().MonthCost(ctx, k.ID, "2026-02"); err != nil || feb != 0 {
		t.Fatalf("February's cost before any call in it: %g, %v; want 0", feb, err)
	}
	// February has the whole cap: a call that may bill 3 runs and bills
	// there, and January's total stays what it was.
	out, err := e.Execute(ctx, tools.Proposal{Tool: "meter", Args: json.RawMessage(`{"n":3}`), Caller: callerOf(k)})
	if err != nil || out.IsError {
		t.Fatalf("a call on February 1st: %v %+v", err, out)
	}
	if feb, err := svc.Store().MonthCost(ctx, k.ID, "2026-02"); err != nil || feb != 3 {
		t.Fatalf("February's cost: %g, %v; want 3", feb, err)
	}
	if jan, err := svc.Store().MonthCost(ctx, k.ID, "2026-01"); err != nil || jan != used {
		t.Fatalf("January's cost after a call in February: %g, %v; want %g", jan, err, used)
	}
}

// echoTool answers with its arguments.
type echoTool struct{}

func (echoTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "probe", Version: "1", Description: catalog.Text{ZH: "回显", EN: "echo"},
		Input: json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectNone}
}

func (echoTool) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	return &tools.Result{Text: string(inv.Args), Summary: "echo"}, nil
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

func record(t *testing.T, e *tools.Executor, account, id string) journal.Record {
	t.Helper()
	r, err := e.Journal().Store().Get(context.Background(), account, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
