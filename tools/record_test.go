package tools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
)

// effectTool counts its executions; each test picks its side-effect level
// and behaviour.
type effectTool struct {
	effect catalog.SideEffect
	runs   atomic.Int64
	gate   chan struct{} // when set, a call waits for it
	// started, when set, is told of every call that began running
	// (give it room for every call: a send never blocks on the test).
	started chan struct{}
	run     func(ctx context.Context) (*tools.Result, error)
}

func (e *effectTool) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "effect", Version: "1.2.0",
		Title:       catalog.Text{ZH: "效果", EN: "Effect"},
		Description: catalog.Text{ZH: "测试工具", EN: "test tool"},
		Input: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"default":1}},
			"additionalProperties":false}`),
		SideEffect: e.effect,
	}
}

func (e *effectTool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	n := e.runs.Add(1)
	if e.started != nil {
		select {
		case e.started <- struct{}{}:
		default:
		}
	}
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e.run != nil {
		return e.run(ctx)
	}
	var in struct {
		N int `json:"n"`
	}
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	return &tools.Result{Structured: map[string]any{"n": in.N, "run": n}, Text: fmt.Sprintf("run %d of n=%d", n, in.N), Summary: "ok", Units: 1}, nil
}

type denyAll struct{}

func (denyAll) Authorize(context.Context, *tools.Invocation) (func(tools.Outcome), error) {
	return nil, tools.Errorf("key_scope", "this key may not call effect")
}

// stores are the journal stores the executor tests run against: memory,
// SQLite in t.TempDir(), and PostgreSQL in a fresh schema when
// TOOLHOST_TEST_POSTGRES is set.
func stores(t *testing.T) map[string]func(t *testing.T) journal.Store {
	m := map[string]func(t *testing.T) journal.Store{
		"memory": func(*testing.T) journal.Store { return journal.NewMemStore() },
		"sqlite": func(t *testing.T) journal.Store {
			db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		m["postgres"] = func(t *testing.T) journal.Store {
			schema := "th_exec_" + uuid.NewString()[:8]
			db, err := store.Open(context.Background(), base+sep(base)+"search_path="+schema, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := db.SQL().Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
					t.Errorf("drop schema: %v", err)
				}
				db.Close()
			})
			return db
		}
	}
	return m
}

func sep(url string) string {
	for _, c := range url {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}

func newExec(t *testing.T, s journal.Store, opts tools.Options, ts ...tools.Tool) (*tools.Executor, *journal.Journal) {
	t.Helper()
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), PollInterval: 10 * time.Millisecond})
	t.Cleanup(j.Close)
	opts.Journal = j
	if opts.Policies == nil {
		// These tests are about recording; the approvals' are in approve_test.go.
		opts.Policies = map[string]approval.Policy{"effect": approval.Never}
	}
	exec, err := tools.NewExecutor(opts, ts...)
	if err != nil {
		t.Fatal(err)
	}
	return exec, j
}

func states(t *testing.T, s journal.Store, id string) []journal.State {
	t.Helper()
	evs, err := s.Events(context.Background(), tools.LocalAccount, id)
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	out := make([]journal.State, len(evs))
	for i, e := range evs {
		out[i] = e.State
	}
	return out
}

var pre = []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized}

func seq(tail ...journal.State) []journal.State { return append(slices.Clone(pre), tail...) }

func TestExecutorRecordsEveryPath(t *testing.T) {
	if testing.Short() {
		t.Skip("every path again on PostgreSQL, seconds; runs in make test")
	}
	boom := func(context.Context) (*tools.Result, error) { return nil, tools.Errorf("upstream_failed", "no") }
	hang := func(ctx context.Context) (*tools.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
	cases := []struct {
		name    string
		effect  catalog.SideEffect
		run     func(context.Context) (*tools.Result, error)
		tool    string
		args    string
		timeout time.Duration
		auth    tools.Authorizer
		status  journal.Status
		commit  journal.Commit
		states  []journal.State
		ran     bool
	}{
		{name: "read-only success", effect: catalog.SideEffectNone, args: `{"n":2}`, status: journal.StatusSuccess, commit: journal.CommitCommitted,
			states: seq(journal.StateExecuting, journal.StateObserved), ran: true},
		{name: "sandbox success", effect: catalog.SideEffectSandbox, args: `{}`, status: journal.StatusSuccess, commit: journal.CommitCommitted,
			states: seq(journal.StatePrepared, journal.StateExecuting, journal.StateCommitted, journal.StateObserved), ran: true},
		{name: "tool failure", effect: catalog.SideEffectNone, run: boom, args: `{}`, status: journal.StatusError, commit: journal.CommitDiscarded,
			states: seq(journal.StateExecuting, journal.StateFailedBeforeCommit), ran: true},
		{name: "read-only deadline", effect: catalog.SideEffectNone, run: hang, args: `{}`, timeout: 20 * time.Millisecond,
			status: journal.StatusTimeout, commit: journal.CommitDiscarded, states: seq(journal.StateExecuting, journal.StateFailedBeforeCommit), ran: true},
		{name: "irreversible deadline is uncertain", effect: catalog.SideEffectIrreversible, run: hang, args: `{}`, timeout: 20 * time.Millisecond,
			status: journal.StatusUncertain, commit: journal.CommitUncertain, states: seq(journal.StatePrepared, journal.StateExecuting, journal.StateOutcomeUnknown), ran: true},
		{name: "unknown tool", tool: "nope", args: `{}`, status: journal.StatusError, commit: journal.CommitDiscarded,
			states: []journal.State{journal.StateProposed, journal.StateParseRejected}},
		{name: "bad JSON", args: `{"n":1,"n":2}`, status: journal.StatusError, commit: journal.CommitDiscarded,
			states: []journal.State{journal.StateProposed, journal.StateParseRejected}},
		{name: "schema mismatch", args: `{"n":"x"}`, status: journal.StatusError, commit: journal.CommitDiscarded,
			states: []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidationRejected}},
		{name: "denied", args: `{}`, auth: denyAll{}, status: journal.StatusDenied, commit: journal.CommitDiscarded,
			states: []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorizationRejected}},
	}
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s := open(t)
					tool := &effectTool{effect: c.effect, run: c.run}
					if tool.effect == "" {
						tool.effect = catalog.SideEffectNone
					}
					exec, _ := newExec(t, s, tools.Options{Authorizer: c.auth}, tool)
					name := c.tool
					if name == "" {
						name = "effect"
					}
					raw := json.RawMessage(c.args)
					out, err := exec.Execute(context.Background(), tools.Proposal{Tool: name, Args: raw, CallID: "c1", Timeout: c.timeout,
						Caller: tools.Caller{Face: "mcp", SessionID: "s1", FloorID: "f1", TraceID: "t1"}})
					if err != nil {
						t.Fatal(err)
					}
					if got := tool.runs.Load() > 0; got != c.ran {
						t.Errorf("tool ran = %v, want %v", got, c.ran)
					}
					r, err := s.Get(context.Background(), tools.LocalAccount, out.ExecutionID)
					if err != nil {
						t.Fatal(err)
					}
					if r.Status != c.status || r.Commit != c.commit || r.Lifecycle != journal.Finished || string(out.Status) != string(c.status) {
						t.Errorf("record %s/%s/%s, outcome %s; want %s/%s/finished", r.Status, r.Commit, r.Lifecycle, out.Status, c.status, c.commit)
					}
					if string(r.ArgsRaw) != c.args {
						t.Errorf("raw args %q, want the bytes as received %q", r.ArgsRaw, c.args)
					}
					if r.SessionID != "s1" || r.FloorID != "f1" || r.Face != "mcp" || r.CallerSlot != "" || r.CallID != "c1" || r.TraceID != "t1" || r.AccountID != tools.LocalAccount {
						t.Errorf("identity fields not recorded: %+v", r)
					}
					if got := states(t, s, out.ExecutionID); !slices.Equal(got, c.states) {
						t.Errorf("events %v, want %v", got, c.states)
					}
					if c.status == journal.StatusSuccess && (string(r.Args) != `{"n":`+map[bool]string{true: "2", false: "1"}[c.args == `{"n":2}`]+`}` || r.ArgsDigest == "") {
						t.Errorf("normalized args %s digest %q", r.Args, r.ArgsDigest)
					}
				})
			}
		})
	}
}

func TestIdempotentDuplicatesExecuteOnce(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			const n = 50
			tool := &effectTool{effect: catalog.SideEffectSandbox, gate: make(chan struct{}), started: make(chan struct{}, n)}
			exec, _ := newExec(t, s, tools.Options{}, tool)
			outs := make([]*tools.Outcome, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[i], errs[i] = exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":5}`),
						IdempotencyKey: "order-42", Caller: tools.Caller{Face: "mcp", SessionID: "idem"}})
				}()
			}
			// The first call holds the key and waits at the gate: the others
			// find it running and must wait for it rather than run, and
			// record nothing until it ended (its opened record is the only
			// one).
			<-tool.started
			if _, total, err := s.List(context.Background(), journal.Query{AccountID: tools.LocalAccount, SessionID: "idem"}); err != nil || tool.runs.Load() != 1 || total != 1 {
				t.Fatalf("while the first call runs: %d runs, %d records, %v; want 1 and 1", tool.runs.Load(), total, err)
			}
			close(tool.gate)
			wg.Wait()
			if got := tool.runs.Load(); got != 1 {
				t.Fatalf("the tool ran %d times, want 1", got)
			}
			var original string
			for i, out := range outs {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if out.IsError || out.Text != outs[0].Text || string(out.Structured) != string(outs[0].Structured) {
					t.Fatalf("call %d got %s %q, call 0 got %q", i, out.Status, out.Text, outs[0].Text)
				}
				if out.ReplayOf == "" {
					if original != "" {
						t.Fatalf("two originals: %s and %s", original, out.ExecutionID)
					}
					original = out.ExecutionID
				}
			}
			recs, total, err := s.List(context.Background(), journal.Query{AccountID: tools.LocalAccount, SessionID: "idem"})
			if err != nil || total != n {
				t.Fatalf("%d records, %v; want %d (one per call)", total, err, n)
			}
			for _, r := range recs {
				if r.ID == original {
					continue
				}
				if r.Commit != journal.CommitReplayBlocked || r.ReplayParentID != original || r.State != journal.StateDeduplicated || r.Units != 0 {
					t.Errorf("duplicate %s: commit %s parent %s state %s units %v", r.ID, r.Commit, r.ReplayParentID, r.State, r.Units)
				}
			}

			// Same key, other arguments: refused, not run.
			out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":6}`), IdempotencyKey: "order-42"})
			if err != nil {
				t.Fatal(err)
			}
			if !out.IsError || out.Code != tools.CodeIdempotencyKeyReused || tool.runs.Load() != 1 {
				t.Errorf("reuse: %+v (runs %d)", out, tool.runs.Load())
			}
			if got := states(t, s, out.ExecutionID); got[len(got)-1] != journal.StateIdempotencyRejected {
				t.Errorf("reuse events %v", got)
			}
			// Same key, equivalent arguments (defaults applied, other
			// spelling): the same call.
			out, err = exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(` { "n" : 5.0 } `), IdempotencyKey: "order-42"})
			if err != nil {
				t.Fatal(err)
			}
			if out.ReplayOf != original || tool.runs.Load() != 1 {
				t.Errorf("equivalent arguments: replay of %q (runs %d), want %s", out.ReplayOf, tool.runs.Load(), original)
			}
		})
	}
}

func TestFailedCallFreesItsIdempotencyKey(t *testing.T) {
	fail := true
	tool := &effectTool{effect: catalog.SideEffectNone}
	tool.run = func(context.Context) (*tools.Result, error) {
		if fail {
			return nil, tools.Errorf("upstream_failed", "try again")
		}
		return &tools.Result{Text: "fine"}, nil
	}
	exec, _ := newExec(t, journal.NewMemStore(), tools.Options{}, tool)
	first, err := exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err != nil || !first.IsError {
		t.Fatalf("first: %+v %v", first, err)
	}
	fail = false
	second, err := exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{}`), IdempotencyKey: "k"})
	if err != nil || second.IsError || second.ReplayOf != "" || tool.runs.Load() != 2 {
		t.Fatalf("retry after a failure before commit must run again: %+v %v runs=%d", second, err, tool.runs.Load())
	}
}

func TestDigestSeparatesItsParts(t *testing.T) {
	a := tools.Digest("ab", "c", "1", []byte("{}"))
	b := tools.Digest("a", "bc", "1", []byte("{}"))
	if a == b || len(a) != 64 {
		t.Errorf("digests %s %s", a, b)
	}
	if a != tools.Digest("ab", "c", "1", []byte("{}")) {
		t.Error("digest is not deterministic")
	}
}

// TestDigestBytes: Digest hashes "len:part" for each part, the stored
// digests' form (a golden value, and the formula written with fmt).
func TestDigestBytes(t *testing.T) {
	// Computed by the fmt-based Digest before it was rewritten.
	if got := tools.Digest("local", "get_time", "1.0.0", []byte(`{"timezone":"UTC"}`)); got != "7381fddd0dbb250cf319618dc5fb64f49133c1b2be5dea1ef261a94f4ed7cf05" {
		t.Errorf("golden digest: %s", got)
	}
	long := strings.Repeat("é", 100)
	for _, p := range [][4]string{{"", "", "", ""}, {"local", "get_time", "1.0.0", `{"a":1}`}, {long, long, long, long}} {
		h := sha256.New()
		for _, part := range p {
			fmt.Fprintf(h, "%d:%s", len(part), part)
		}
		if want, got := hex.EncodeToString(h.Sum(nil)), tools.Digest(p[0], p[1], p[2], []byte(p[3])); got != want {
			t.Errorf("Digest(%.20q) = %s, want %s", p, got, want)
		}
	}
}

// spoolBytes is everything in the journal spool segments under dir.
func spoolBytes(t *testing.T, dir string) []byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.spool"))
	if err != nil {
		t.Error(err)
	}
	var all []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
		}
		all = append(all, b...)
	}
	return all
}

// TestOpenedRecordIsDurableBeforeAToolWithEffectsRuns: the tool looks at
// the journal from inside its call. A tool with side effects finds its
// opened record there (in the spool; for irreversible effects in the store
// itself); a read-only tool's opened record waits for its outcome (the
// spool holds neither until the call ends, then both).
func TestOpenedRecordIsDurableBeforeAToolWithEffectsRuns(t *testing.T) {
	for _, tc := range []struct {
		effect  catalog.SideEffect
		spooled bool // the opened record is in the spool while the tool runs
		stored  bool // … in the store itself
	}{
		{catalog.SideEffectNone, false, false},
		{catalog.SideEffectSandbox, true, false},
		{catalog.SideEffectIrreversible, false, true},
	} {
		t.Run(string(tc.effect), func(t *testing.T) {
			ctx := context.Background()
			s := journal.NewMemStore()
			dir := t.TempDir()
			j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir, ApplyInterval: time.Hour, ReadOnlyOpenDelay: time.Hour})
			if _, err := j.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var during []byte
			var stored []journal.Record
			tool := &effectTool{effect: tc.effect, run: func(ctx context.Context) (*tools.Result, error) {
				during = spoolBytes(t, dir)
				var err error
				stored, err = s.Opened(ctx)
				return &tools.Result{Structured: map[string]any{"ok": true}}, err
			}}
			exec, err := tools.NewExecutor(tools.Options{Journal: j, Policies: map[string]approval.Policy{"effect": approval.Never}}, tool)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Execute(ctx, tools.Proposal{Tool: "effect", Args: json.RawMessage(`{}`)})
			if err != nil || out.IsError {
				t.Fatalf("%v %+v", err, out)
			}
			id := []byte(out.ExecutionID)
			if got := bytes.Contains(during, id); got != tc.spooled {
				t.Errorf("opened record in the spool while the tool ran: %v, want %v", got, tc.spooled)
			}
			if got := len(stored) == 1 && stored[0].ID == out.ExecutionID; got != tc.stored {
				t.Errorf("opened record in the store while the tool ran: %v, want %v", got, tc.stored)
			}
			if !tc.stored && !bytes.Contains(spoolBytes(t, dir), id) {
				t.Error("the call is not in the spool after it returned")
			}
			if r, err := j.Store().Get(ctx, tools.LocalAccount, out.ExecutionID); err != nil || r.Lifecycle != journal.Finished {
				t.Errorf("the call read through the journal: %+v %v", r, err)
			}
		})
	}
}

// The executor journals on its clock: a record's start, end and
// duration, the time of every event and the session it touches read
// Options.Clock, the clock a test sets (here in 2001, whatever today is).
func TestExecutorJournalsOnItsClock(t *testing.T) {
	start := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	var ticks atomic.Int64 // each reading is a second after the last
	clock := func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) }
	sessions := session.NewMemStore()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ticks.Store(0)
			s := open(t)
			exec, _ := newExec(t, s, tools.Options{Clock: clock, Sessions: sessions}, &effectTool{effect: catalog.SideEffectNone})
			out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{}`), CallID: "c1",
				Caller: tools.Caller{Face: "mcp", SessionID: "s-" + name}})
			if err != nil || out.IsError {
				t.Fatalf("execute: %v %+v", err, out)
			}
			end := clock()
			onClock := func(what string, at time.Time) {
				t.Helper()
				if at.Before(start) || !at.Before(end) {
					t.Errorf("%s at %v, want on the executor's clock, in [%v, %v)", what, at, start, end)
				}
			}
			r, err := s.Get(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			onClock("created", r.CreatedAt)
			onClock("started", r.StartedAt)
			onClock("finished", r.FinishedAt)
			if r.Duration != r.FinishedAt.Sub(r.StartedAt) || r.Duration <= 0 {
				t.Errorf("duration %v, want finished - started = %v", r.Duration, r.FinishedAt.Sub(r.StartedAt))
			}
			evs, err := s.Events(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				onClock("event "+string(ev.State), ev.At)
			}
			se, err := sessions.GetSession(context.Background(), tools.LocalAccount, "s-"+name)
			if err != nil {
				t.Fatal(err)
			}
			onClock("the session's creation", se.CreatedAt)
		})
	}
}
