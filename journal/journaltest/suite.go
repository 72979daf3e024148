// Package journaltest is the conformance suite every journal.Store must
// pass: the in-memory store, SQLite and PostgreSQL run the same tests.
package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"toolhost/journal"
)

// Run runs the suite. open returns a fresh, empty store for one subtest.
func Run(t *testing.T, open func(t *testing.T) journal.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, journal.Store)
	}{
		{"RoundTripKeepsEveryField", testRoundTrip},
		{"WriteIsAllOrNothing", testAtomicBatch},
		{"QueriesAreScopedByAccount", testAccountScope},
		{"ListFiltersSortsAndPages", testList},
		{"ClaimDecidesByKeyAndDigest", testClaim},
		{"ConcurrentClaimsHaveOneWinner", testConcurrentClaims},
		{"LivenessMarks", testLiveness},
		{"ReconcileClosesDeadInstancesCalls", testReconcile},
		{"GroupCommitKeepsEveryWrite", testGroupCommit},
		{"ApplyIsIdempotent", testApply},
		{"SpoolKeepsEveryWrite", func(t *testing.T, s journal.Store) { testSpool(t, s, false) }},
		{"SpoolWaitingForTheStoreKeepsEveryWrite", func(t *testing.T, s journal.Store) { testSpool(t, s, true) }},
		{"SpoolOfADeadProcessIsReplayedOnce", testSpoolReplay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var base = time.UnixMilli(1_790_000_000_000).UTC()

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// rec returns an opened record with every field set.
func rec(id string, at time.Time) journal.Record {
	return journal.Record{
		ID: id, AccountID: "acct", KeyID: "key1", SessionID: "sess", FloorID: "floor", RunID: "run",
		Round: 2, CallID: "call-" + id, CallerSlot: "narrator", Face: "mcp", ProviderID: "toolhost", ProviderType: "builtin",
		ToolName: "get_time", ToolVersion: "1.0.0", SideEffectLevel: "none",
		ArgsRaw: []byte(`{"tz" : "UTC"}`), Args: json.RawMessage(`{"tz":"UTC"}`), ArgsDigest: "d1",
		IdempotencyKey: "", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Status: journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending,
		State: journal.StateExecuting, DeliveryMode: "inline", AttemptNo: 1, InstanceID: "inst-a",
		StartedAt: at, CreatedAt: at,
	}
}

func finished(r journal.Record, status journal.Status, d time.Duration) journal.Record {
	r.Status, r.Lifecycle, r.Commit, r.State = status, journal.Finished, journal.CommitCommitted, journal.StateObserved
	r.Result = json.RawMessage(`{"now":"x"}`)
	r.ResultText, r.Summary, r.Units, r.Truncated = "now x", "x", 1.5, true
	if status != journal.StatusSuccess {
		r.Commit, r.State = journal.CommitDiscarded, journal.StateFailedBeforeCommit
		r.ErrorCode, r.ErrorMessage = "boom", "it broke"
	}
	r.Duration = d
	r.FinishedAt = r.StartedAt.Add(d)
	return r
}

func evs(states ...journal.State) []journal.Event {
	out := make([]journal.Event, len(states))
	for i, s := range states {
		out[i] = journal.Event{Seq: i, State: s, At: base.Add(time.Duration(i) * time.Millisecond), Detail: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	return out
}

func mustWrite(t *testing.T, s journal.Store, ws ...journal.Write) {
	t.Helper()
	if err := s.Write(ctx(t), ws); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func testRoundTrip(t *testing.T, s journal.Store) {
	r := rec("r1", base)
	r.ArgsRaw = []byte{'{', 0xff, '"'} // not even UTF-8: kept as received
	r.Args = nil
	open := evs(journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized, journal.StateExecuting)
	mustWrite(t, s, journal.Write{Insert: true, Record: r, Events: open})
	got, err := s.Get(ctx(t), "acct", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("opened record changed on the way:\n got %+v\nwant %+v", got, r)
	}
	f := finished(r, journal.StatusSuccess, 1234*time.Millisecond)
	f.KeyID = "must-not-change" // updates carry outcomes only
	more := []journal.Event{{Seq: 5, State: journal.StateObserved, At: base.Add(time.Second)}}
	mustWrite(t, s, journal.Write{Record: f, Events: more})
	got, err = s.Get(ctx(t), "acct", "r1")
	if err != nil {
		t.Fatal(err)
	}
	f.KeyID = r.KeyID
	if !reflect.DeepEqual(got, f) {
		t.Errorf("finished record:\n got %+v\nwant %+v", got, f)
	}
	gotEvs, err := s.Events(ctx(t), "acct", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := append(open, more...); !reflect.DeepEqual(gotEvs, want) {
		t.Errorf("events:\n got %+v\nwant %+v", gotEvs, want)
	}
	last, err := s.LastEvent(ctx(t), "r1")
	if err != nil || last.State != journal.StateObserved || last.Seq != 5 {
		t.Errorf("LastEvent = %+v, %v", last, err)
	}
	if err := s.Write(ctx(t), []journal.Write{{Record: finished(rec("nope", base), journal.StatusError, 0)}}); err == nil {
		t.Error("updating a record that does not exist succeeded")
	}
}

func testAtomicBatch(t *testing.T, s journal.Store) {
	mustWrite(t, s, journal.Write{Insert: true, Record: rec("a", base), Events: evs(journal.StateProposed)})
	err := s.Write(ctx(t), []journal.Write{
		{Insert: true, Record: rec("b", base), Events: evs(journal.StateProposed)},
		{Insert: true, Record: rec("a", base)}, // duplicate id
	})
	if err == nil {
		t.Fatal("a batch with a duplicate insert succeeded")
	}
	if _, err := s.Get(ctx(t), "acct", "b"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("b of the failed batch: %v, want ErrNotFound (the batch is one transaction)", err)
	}
	// An update of a missing record fails its whole batch too, including
	// the writes queued before it.
	err = s.Write(ctx(t), []journal.Write{
		{Insert: true, Record: rec("c", base), Events: evs(journal.StateProposed)},
		{Record: finished(rec("a", base), journal.StatusSuccess, time.Millisecond), Events: evs(journal.StateExecuting)},
		{Record: finished(rec("missing", base), journal.StatusSuccess, time.Millisecond)},
	})
	if !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("a batch updating a missing record: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx(t), "acct", "c"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("c of the failed batch: %v, want ErrNotFound (the batch is one transaction)", err)
	}
	if a, err := s.Get(ctx(t), "acct", "a"); err != nil || a.Lifecycle != journal.Opened {
		t.Errorf("a after the failed batch: %+v, %v; want it still opened", a, err)
	}
}

func testAccountScope(t *testing.T, s journal.Store) {
	mustWrite(t, s, journal.Write{Insert: true, Record: rec("x", base), Events: evs(journal.StateProposed)})
	if _, err := s.Get(ctx(t), "other", "x"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get from another account: %v", err)
	}
	if _, err := s.Events(ctx(t), "other", "x"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Events from another account: %v", err)
	}
	recs, total, err := s.List(ctx(t), journal.Query{AccountID: "other", SessionID: "sess"})
	if err != nil || total != 0 || len(recs) != 0 {
		t.Errorf("List from another account: %d %d %v", len(recs), total, err)
	}
}

func ids(rs []journal.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func testList(t *testing.T, s journal.Store) {
	// Six calls over two floors; created in order r0..r5, started in
	// reverse, finished at different times; r5 still open.
	var ws []journal.Write
	for i := range 6 {
		r := rec(fmt.Sprintf("r%d", i), base.Add(time.Duration(i)*time.Second))
		r.StartedAt = base.Add(time.Duration(10-i) * time.Second)
		r.FloorID = []string{"f1", "f2"}[i%2]
		r.RunID = fmt.Sprintf("run%d", i/3)
		r.ToolName = []string{"get_time", "roll_dice", "sleep"}[i%3]
		r.CallerSlot = []string{"narrator", "director"}[i/3]
		r.Face = []string{"mcp", "hosted"}[i%2]
		if i == 4 {
			r.SessionID = "sess2"
			r.ProviderType = "mcp"
		}
		if i < 5 {
			st := []journal.Status{journal.StatusSuccess, journal.StatusError, journal.StatusTimeout, journal.StatusUncertain, journal.StatusBlocked}[i]
			r = finished(r, st, time.Duration(100*(5-i))*time.Millisecond)
		}
		ws = append(ws, journal.Write{Insert: true, Record: r})
	}
	// Another account's call on the same floor, created first: invisible,
	// and not counted in seq.
	stranger := rec("zz", base.Add(-time.Second))
	stranger.AccountID, stranger.FloorID = "other", "f1"
	ws = append(ws, journal.Write{Insert: true, Record: stranger})
	mustWrite(t, s, ws...)
	cases := []struct {
		name  string
		q     journal.Query
		want  []string
		total int
	}{
		{"default sort is started_at desc", journal.Query{}, []string{"r0", "r1", "r2", "r3", "r4", "r5"}, 6},
		{"started_at asc", journal.Query{SortBy: journal.SortStartedAt, Asc: true}, []string{"r5", "r4", "r3", "r2", "r1", "r0"}, 6},
		{"created_at asc", journal.Query{SortBy: journal.SortCreatedAt, Asc: true}, []string{"r0", "r1", "r2", "r3", "r4", "r5"}, 6},
		{"created_at desc", journal.Query{SortBy: journal.SortCreatedAt}, []string{"r5", "r4", "r3", "r2", "r1", "r0"}, 6},
		// finished = started + duration: r0 10.5s, r1 9.4s, r2 8.3s, r3 7.2s, r4 6.1s; open r5 last.
		{"finished_at asc, open last", journal.Query{SortBy: journal.SortFinishedAt, Asc: true}, []string{"r4", "r3", "r2", "r1", "r0", "r5"}, 6},
		{"finished_at desc, open last", journal.Query{SortBy: journal.SortFinishedAt}, []string{"r0", "r1", "r2", "r3", "r4", "r5"}, 6},
		{"paging", journal.Query{SortBy: journal.SortCreatedAt, Asc: true, Limit: 2, Offset: 3}, []string{"r3", "r4"}, 6},
		{"offset past the end", journal.Query{Limit: 2, Offset: 9}, []string{}, 6},
		{"session", journal.Query{SessionID: "sess2"}, []string{"r4"}, 1},
		{"floor", journal.Query{FloorID: "f2", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r1", "r3", "r5"}, 3},
		{"run", journal.Query{RunID: "run1", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r3", "r4", "r5"}, 3},
		{"face", journal.Query{Face: "hosted", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r1", "r3", "r5"}, 3},
		{"slot", journal.Query{CallerSlot: "director", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r3", "r4", "r5"}, 3},
		{"tool", journal.Query{ToolName: "sleep", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r2", "r5"}, 2},
		{"one status", journal.Query{Statuses: []journal.Status{journal.StatusTimeout}}, []string{"r2"}, 1},
		{"status set", journal.Query{Statuses: []journal.Status{journal.StatusError, journal.StatusTimeout, journal.StatusUncertain}, SortBy: journal.SortCreatedAt, Asc: true}, []string{"r1", "r2", "r3"}, 3},
		{"lifecycle", journal.Query{Lifecycle: journal.Opened}, []string{"r5"}, 1},
		{"commit", journal.Query{Commit: journal.CommitCommitted}, []string{"r0"}, 1},
		{"provider type", journal.Query{ProviderType: "mcp"}, []string{"r4"}, 1},
		{"page id never matches", journal.Query{HasPageID: true, PageID: "p1"}, []string{}, 0},
		{"combined", journal.Query{FloorID: "f1", CallerSlot: "narrator", SortBy: journal.SortCreatedAt, Asc: true}, []string{"r0", "r2"}, 2},
		{"seq order desc", journal.Query{FloorID: "f1", SortBy: journal.SortSeq}, []string{"r4", "r2", "r0"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.AccountID = "acct"
			got, total, err := s.List(ctx(t), c.q)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, c.want) || total != c.total {
				t.Errorf("got %v (total %d), want %v (total %d)", g, total, c.want, c.total)
			}
		})
	}
	// seq is the position inside the floor by creation, whatever the filter.
	got, _, err := s.List(ctx(t), journal.Query{AccountID: "acct", FloorID: "f2", ToolName: "sleep"})
	if err != nil || len(got) != 1 || got[0].ID != "r5" || got[0].Seq != 2 {
		t.Errorf("seq of r5 in f2 = %+v, %v; want 2", got, err)
	}
	got, _, err = s.List(ctx(t), journal.Query{AccountID: "acct", FloorID: "f1", SortBy: journal.SortSeq, Asc: true, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != "r0" || got[0].Seq != 0 {
		t.Errorf("first of f1 = %+v, %v; want r0 with seq 0 (seq counts one account only)", got, err)
	}
}

func claim(key, digest, id string, now time.Time) journal.Claim {
	r := rec(id, now)
	r.IdempotencyKey = key
	r.ArgsDigest = digest
	return journal.Claim{AccountID: "acct", Key: key, Digest: digest, Tool: "get_time", Version: "1.0.0",
		Now: now, ExpiresAt: now.Add(time.Hour), Open: journal.Write{Insert: true, Record: r, Events: evs(journal.StateProposed, journal.StateExecuting)}}
}

func testClaim(t *testing.T, s journal.Store) {
	c := ctx(t)
	res, err := s.Claim(c, claim("k", "d1", "c1", base))
	if err != nil || !res.Claimed {
		t.Fatalf("first claim: %+v %v", res, err)
	}
	if got, err := s.Get(c, "acct", "c1"); err != nil || got.Lifecycle != journal.Opened {
		t.Fatalf("the claim did not write its record: %+v %v", got, err)
	}
	res, err = s.Claim(c, claim("k", "d1", "c2", base))
	if err != nil || res.Claimed || res.Reused || res.Existing.ID != "c1" || res.Existing.Lifecycle != journal.Opened {
		t.Fatalf("same digest while running: %+v %v", res, err)
	}
	if _, err := s.Get(c, "acct", "c2"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a lost claim wrote its record: %v", err)
	}
	res, err = s.Claim(c, claim("k", "d2", "c3", base))
	if err != nil || !res.Reused || res.Existing.ID != "c1" {
		t.Fatalf("other digest: %+v %v", res, err)
	}
	// The holder commits: the same call gets it back.
	mustWrite(t, s, journal.Write{Record: finished(rec("c1", base), journal.StatusSuccess, time.Millisecond)})
	res, err = s.Claim(c, claim("k", "d1", "c4", base))
	if err != nil || res.Claimed || res.Existing.Status != journal.StatusSuccess || string(res.Existing.Result) != `{"now":"x"}` {
		t.Fatalf("same digest after success: %+v %v", res, err)
	}
	// A holder that failed before commit frees the key.
	if res, err := s.Claim(c, claim("k2", "d1", "c5", base)); err != nil || !res.Claimed {
		t.Fatalf("claim k2: %+v %v", res, err)
	}
	mustWrite(t, s, journal.Write{Record: finished(rec("c5", base), journal.StatusError, time.Millisecond)})
	if res, err := s.Claim(c, claim("k2", "d1", "c6", base)); err != nil || !res.Claimed {
		t.Fatalf("claim after a discarded call: %+v %v", res, err)
	}
	// After expiry the key is a new key, whatever the digest.
	later := base.Add(2 * time.Hour)
	if res, err := s.Claim(c, claim("k", "d9", "c7", later)); err != nil || !res.Claimed {
		t.Fatalf("claim after expiry: %+v %v", res, err)
	}
	// Purge removes expired claims only: k2 (expired at base+1h) goes, k
	// (renewed until later+1h) stays.
	n, err := s.PurgeIdempotency(c, later)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if res, err := s.Claim(c, claim("k", "d1", "c8", later)); err != nil || !res.Reused || res.Existing.ID != "c7" {
		t.Fatalf("k after purge: %+v %v", res, err)
	}
	// Keys are per account.
	other := claim("k", "d1", "c9", later)
	other.AccountID, other.Open.Record.AccountID = "acct2", "acct2"
	if res, err := s.Claim(c, other); err != nil || !res.Claimed {
		t.Fatalf("same key in another account: %+v %v", res, err)
	}
}

func testConcurrentClaims(t *testing.T, s journal.Store) {
	const n = 20
	var wg sync.WaitGroup
	results := make([]journal.ClaimResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Claim(ctx(t), claim("same", "d", fmt.Sprintf("cc%d", i), base))
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if results[i].Claimed {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d claims won, want exactly 1", won)
	}
}

func testLiveness(t *testing.T, s journal.Store) {
	c := ctx(t)
	me := uuid.NewString()
	if alive, err := s.Alive(c, uuid.NewString()); err != nil || alive {
		t.Errorf("unknown instance alive=%v err=%v", alive, err)
	}
	if err := s.Hold(c, me); err != nil {
		t.Fatal(err)
	}
	if alive, err := s.Alive(c, me); err != nil || !alive {
		t.Errorf("held instance alive=%v err=%v", alive, err)
	}
	// Probing must not steal or drop the mark.
	if alive, err := s.Alive(c, me); err != nil || !alive {
		t.Errorf("held instance, second probe: alive=%v err=%v", alive, err)
	}
}

func testReconcile(t *testing.T, s journal.Store) {
	c := ctx(t)
	live := uuid.NewString()
	if err := s.Hold(c, live); err != nil {
		t.Fatal(err)
	}
	dead := uuid.NewString()
	mk := func(id, inst, effect string, states ...journal.State) journal.Write {
		r := rec(id, base)
		r.InstanceID, r.SideEffectLevel, r.State = inst, effect, states[len(states)-1]
		return journal.Write{Insert: true, Record: r, Events: evs(states...)}
	}
	pre := []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized}
	mustWrite(t, s,
		mk("ro", dead, "none", append(pre, journal.StateExecuting)...),
		mk("sb", dead, "sandbox", append(pre, journal.StatePrepared, journal.StateExecuting)...),
		mk("ir", dead, "irreversible", append(pre, journal.StatePrepared, journal.StateExecuting)...),
		mk("alive", live, "none", append(pre, journal.StateExecuting)...),
	)
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), Clock: func() time.Time { return base.Add(time.Minute) }})
	defer j.Close()
	n, err := j.Start(c)
	if err != nil || n != 3 {
		t.Fatalf("Start reconciled %d, %v; want 3", n, err)
	}
	want := map[string]struct {
		status journal.Status
		commit journal.Commit
		state  journal.State
	}{
		"ro":    {journal.StatusTimeout, journal.CommitDiscarded, journal.StateFailedBeforeCommit},
		"sb":    {journal.StatusUncertain, journal.CommitUncertain, journal.StateOutcomeUnknown},
		"ir":    {journal.StatusUncertain, journal.CommitUncertain, journal.StateOutcomeUnknown},
		"alive": {journal.StatusRunning, journal.CommitPending, journal.StateExecuting},
	}
	for id, w := range want {
		r, err := s.Get(c, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != w.status || r.Commit != w.commit || r.State != w.state {
			t.Errorf("%s: %s/%s/%s, want %s/%s/%s", id, r.Status, r.Commit, r.State, w.status, w.commit, w.state)
		}
		events, err := s.Events(c, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		last := events[len(events)-1]
		if id == "alive" {
			if r.Lifecycle != journal.Opened {
				t.Errorf("a live instance's call was closed")
			}
			continue
		}
		var detail struct {
			Reason     string `json:"reason"`
			Reconciled bool   `json:"reconciled"`
		}
		if err := json.Unmarshal(last.Detail, &detail); err != nil || !detail.Reconciled || detail.Reason != journal.ReconcileReason {
			t.Errorf("%s: last event %+v does not say it was reconciled", id, last)
		}
		if r.Lifecycle != journal.Finished || !r.FinishedAt.Equal(base.Add(time.Minute)) || r.Duration != time.Minute {
			t.Errorf("%s: lifecycle %s finished %v duration %v", id, r.Lifecycle, r.FinishedAt, r.Duration)
		}
	}
	if n, err := j.Reconcile(c); err != nil || n != 0 {
		t.Errorf("second reconcile closed %d, %v", n, err)
	}
}

func testGroupCommit(t *testing.T, s journal.Store) {
	// A commit delay makes the writer wait for the other calls in flight:
	// every write must still land, none twice.
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), MaxBatch: 8, CommitDelay: 200 * time.Microsecond})
	defer j.Close()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rec(fmt.Sprintf("g%02d", i), base)
			if err := j.Open(ctx(t), r, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
				errs <- err
				return
			}
			errs <- j.Finish(ctx(t), finished(r, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: journal.StateObserved, At: base}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, total, err := s.List(ctx(t), journal.Query{AccountID: "acct", Statuses: []journal.Status{journal.StatusSuccess}})
	if err != nil || total != n || len(recs) != n {
		t.Fatalf("%d/%d finished records, %v; want %d", len(recs), total, err, n)
	}
	for _, r := range recs {
		e, err := s.Events(ctx(t), "acct", r.ID)
		if err != nil || len(e) != 3 {
			t.Errorf("%s: %d events, %v", r.ID, len(e), err)
		}
	}
}

func mustApply(t *testing.T, s journal.Store, want []string, ws ...journal.Write) {
	t.Helper()
	got, err := s.Apply(ctx(t), ws)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Apply left unchanged %v, want %v", got, want)
	}
}

func wantRecord(t *testing.T, s journal.Store, id string, lifecycle journal.Lifecycle, states ...journal.State) journal.Record {
	t.Helper()
	r, err := s.Get(ctx(t), "acct", id)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if r.Lifecycle != lifecycle {
		t.Errorf("%s: lifecycle %s, want %s", id, r.Lifecycle, lifecycle)
	}
	e, err := s.Events(ctx(t), "acct", id)
	if err != nil {
		t.Fatal(err)
	}
	var got []journal.State
	for _, ev := range e {
		got = append(got, ev.State)
	}
	if !reflect.DeepEqual(got, states) {
		t.Errorf("%s: events %v, want %v", id, got, states)
	}
	return r
}

// testApply: the spool's writes may reach the store twice; the second time
// changes nothing, and an insert that finds its opened record completes it.
func testApply(t *testing.T, s journal.Store) {
	P, X, O := journal.StateProposed, journal.StateExecuting, journal.StateObserved
	open := journal.Write{Insert: true, Record: rec("a1", base), Events: evs(P, X)}
	done := journal.Write{Record: finished(rec("a1", base), journal.StatusSuccess, time.Second),
		Events: []journal.Event{{Seq: 2, State: O, At: base.Add(time.Second)}}}
	mustApply(t, s, nil, open)
	mustApply(t, s, nil, open) // again: same record, same events
	wantRecord(t, s, "a1", journal.Opened, P, X)
	mustApply(t, s, nil, done)
	mustApply(t, s, []string{"a1"}, done) // already finished: kept as it is
	got := wantRecord(t, s, "a1", journal.Finished, P, X, O)
	if got.Status != journal.StatusSuccess || got.Duration != time.Second || got.KeyID != "key1" {
		t.Errorf("a1 after its outcome: %+v", got)
	}
	mustApply(t, s, []string{"a1"}, open) // an old opened write cannot reopen it
	wantRecord(t, s, "a1", journal.Finished, P, X, O)

	// An opened record and its outcome merged into one insert: new, or
	// completing the opened record that reached the store first.
	merged := func(id string) journal.Write {
		f := finished(rec(id, base), journal.StatusError, 2*time.Second)
		return journal.Write{Insert: true, Record: f, Events: append(evs(P, X), journal.Event{Seq: 2, State: journal.StateFailedBeforeCommit, At: base})}
	}
	mustApply(t, s, nil, merged("m1"))
	mustApply(t, s, nil, journal.Write{Insert: true, Record: rec("m2", base), Events: evs(P, X)})
	mustApply(t, s, nil, merged("m2"))
	mustApply(t, s, []string{"m1", "m2"}, merged("m1"), merged("m2"))
	for _, id := range []string{"m1", "m2"} {
		r := wantRecord(t, s, id, journal.Finished, P, X, journal.StateFailedBeforeCommit)
		if r.Status != journal.StatusError || r.ErrorCode != "boom" || r.Duration != 2*time.Second {
			t.Errorf("%s: %+v", id, r)
		}
	}
	// The outcome of a record the store does not have changes nothing.
	mustApply(t, s, []string{"ghost"}, journal.Write{Record: finished(rec("ghost", base), journal.StatusSuccess, 0)})
	if _, err := s.Get(ctx(t), "acct", "ghost"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ghost: %v", err)
	}
}

// testSpool: with a spool, concurrent short calls (merged into one insert
// each) and long calls (opened record applied while they run) all land,
// each once with its full trail, and the spool files are gone after Close.
// With WaitForStore, a finished call is in the store when Finish returns;
// else reads through the journal see it.
func testSpool(t *testing.T, s journal.Store, shared bool) {
	dir := t.TempDir()
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir, ApplyInterval: 20 * time.Millisecond, WaitForStore: shared})
	if _, err := j.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rec(fmt.Sprintf("s%02d", i), base)
			if err := j.Open(ctx(t), r, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
				errs <- err
				return
			}
			if i%4 == 0 {
				time.Sleep(60 * time.Millisecond) // longer than ApplyInterval
			}
			errs <- j.Finish(ctx(t), finished(r, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: journal.StateObserved, At: base}})
		}()
	}
	// A reader sees calls in flight as opened.
	long := rec("long", base)
	if err := j.Open(ctx(t), long, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
		t.Fatal(err)
	}
	if r, err := j.Store().Get(ctx(t), "acct", "long"); err != nil || r.Lifecycle != journal.Opened {
		t.Fatalf("a call in flight read through the journal: %+v, %v", r, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every finished call is in the store itself once Finish returned
	// (WaitForStore), or once this process has read through the journal.
	read := s
	if !shared {
		read = j.Store()
	}
	recs, total, err := read.List(ctx(t), journal.Query{AccountID: "acct", Statuses: []journal.Status{journal.StatusSuccess}})
	if err != nil || total != n || len(recs) != n {
		t.Fatalf("%d/%d finished records, %v; want %d", len(recs), total, err, n)
	}
	for _, r := range recs {
		wantRecord(t, s, r.ID, journal.Finished, journal.StateProposed, journal.StateExecuting, journal.StateObserved)
	}
	if err := j.Finish(ctx(t), finished(long, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: journal.StateObserved, At: base}}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool files left after Close: %v", left)
	}
}

// testSpoolReplay: what a process had only spooled when it died reaches the
// store when the next process starts on the spool directory; doing it
// twice (the second process died before deleting the spool) changes
// nothing.
func testSpoolReplay(t *testing.T, s journal.Store) {
	dir := t.TempDir()
	first := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir, ApplyInterval: time.Hour})
	if _, err := first.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	P, X, O := journal.StateProposed, journal.StateExecuting, journal.StateObserved
	short, long := rec("short", base), rec("running", base)
	if err := first.Open(ctx(t), short, evs(P, X)); err != nil {
		t.Fatal(err)
	}
	if err := first.Finish(ctx(t), finished(short, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: O, At: base}}); err != nil {
		t.Fatal(err)
	}
	if err := first.Open(ctx(t), long, evs(P, X)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx(t), "acct", "running"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("the opened record reached the store before ApplyInterval: %v", err)
	}
	first.Abandon()
	saved := copyDir(t, dir)

	for round := range 2 {
		second := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir})
		if _, err := second.Start(ctx(t)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		wantRecord(t, s, "short", journal.Finished, P, X, O)
		r := wantRecord(t, s, "running", journal.Opened, P, X)
		if r.CallID != long.CallID || r.TraceID != long.TraceID || string(r.ArgsRaw) != string(long.ArgsRaw) {
			t.Errorf("replayed record: %+v", r)
		}
		second.Close()
		restoreDir(t, saved, dir)
	}
}

func copyDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func restoreDir(t *testing.T, files map[string][]byte, dir string) {
	t.Helper()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
