package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
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

// keyed builds an executor behind a real key service (SQLite) and returns
// it with a key of the given limits.
func keyed(t *testing.T, limits keys.Limits, ts ...tools.Tool) (*tools.Executor, *keys.Service, *keys.Key) {
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
	e, err := tools.NewExecutor(tools.Options{Authorizer: tools.KeysAuthorizer(svc)}, ts...)
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
	e, _, k := keyed(t, keys.Limits{CallsPerMinute: 1}, p)
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
func TestMonthlyCapHoldsEachCallsMaximum(t *testing.T) {
	const calls = 10
	m := meter{entered: make(chan struct{}, calls), release: make(chan struct{})}
	e, svc, k := keyed(t, keys.Limits{MonthlyUnitsCap: 4}, m)
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
	used, err := svc.Store().MonthCost(context.Background(), k.ID, keys.Month(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if used > 4 || ran == 0 {
		t.Fatalf("%d calls ran and billed %g units against a cap of 4", ran, used)
	}
	t.Logf("%d calls ran, %g units billed", ran, used)
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
