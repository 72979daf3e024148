// Package journaltest is the conformance suite every journal.Store must
// pass: the in-memory store, SQLite and PostgreSQL run the same tests.
package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
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
		{"WaitReconcilesADeadHolder", testWaitReconcilesADeadHolder},
		{"GroupCommitKeepsEveryWrite", testGroupCommit},
		{"ApplyIsIdempotent", testApply},
		{"SpoolKeepsEveryWrite", func(t *testing.T, s journal.Store) { testSpool(t, s, false) }},
		{"SpoolWaitingForTheStoreKeepsEveryWrite", func(t *testing.T, s journal.Store) { testSpool(t, s, true) }},
		{"SpoolOfADeadProcessIsReplayedOnce", testSpoolReplay},
		{"ReadOnlyCallsOverAFullSpool", testReadOnlyCallsOverAFullSpool},
		{"FullResultsAreKeptExactlyInTheirAccount", testFullResults},
		{"KeysetPagesSeeEveryRecordOnceWhileCallsArrive", testKeysetPages},
		{"KeysetPagesReadBackwards", testKeysetBackAndForth},
		{"KeysetRefusesMalformedHugeAndForeignCursors", testKeysetRefusesBadCursors},
		{"KeysetPositionReadsOnlyItsAccount", testKeysetPositionIsNoKey},
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
	f.AttemptNo = 2             // the attempt that produced the outcome
	more := []journal.Event{
		{Seq: 5, State: journal.StateExecuting, Kind: journal.KindAttempt, At: base.Add(time.Second),
			Detail: json.RawMessage(`{"attempt_no":1,"invocation_id":"r1.1","outcome":"retry"}`)},
		{Seq: 6, State: journal.StateExecuting, Kind: journal.KindAttempt, At: base.Add(time.Second),
			Detail: json.RawMessage(`{"attempt_no":2,"backoff_ms":1000,"invocation_id":"r1.2","outcome":"ok"}`)},
		{Seq: 7, State: journal.StateObserved, At: base.Add(time.Second)},
	}
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
	if err != nil || last.State != journal.StateObserved || last.Seq != 7 || last.Kind != "" {
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
		// Two pages of floor f2 (a regenerated turn), none on the others.
		if i == 1 || i == 3 {
			r.PageID = []string{"", "p1", "", "p2"}[i]
		}
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
		{"page", journal.Query{HasPageID: true, PageID: "p1"}, []string{"r1"}, 1},
		{"page in its floor", journal.Query{HasPageID: true, PageID: "p2", FloorID: "f2"}, []string{"r3"}, 1},
		{"page of another floor", journal.Query{HasPageID: true, PageID: "p2", FloorID: "f1"}, []string{}, 0},
		{"page nobody named", journal.Query{HasPageID: true, PageID: "p9"}, []string{}, 0},
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
