package journaltest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/journal"
)

func testGroupCommit(t *testing.T, s journal.Store) {
	// A commit delay makes the writer wait for the other calls in flight:
	// every write must still land, none twice.
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), MaxBatch: 8, CommitDelay: 200 * time.Microsecond})
	defer j.Close()
	const n = 40
	callsInParallel(t, j, "g", n, nil)()
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

// callsInParallel opens and finishes n calls (ids prefix00, prefix01, …)
// through j at once, running between(i) between a call's Open and its
// Finish when it is not nil. The function it returns waits for them all
// and fails the test with the first error.
func callsInParallel(t *testing.T, j *journal.Journal, prefix string, n int, between func(i int)) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rec(fmt.Sprintf("%s%02d", prefix, i), base)
			if err := j.Open(ctx(t), r, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
				errs <- err
				return
			}
			if between != nil {
				between(i)
			}
			errs <- j.Finish(ctx(t), finished(r, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: journal.StateObserved, At: base}})
		}()
	}
	return func() {
		t.Helper()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
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
	wait := callsInParallel(t, j, "s", n, func(i int) {
		if i%4 == 0 {
			time.Sleep(60 * time.Millisecond) // longer than ApplyInterval
		}
	})
	// A reader sees calls in flight as opened.
	long := rec("long", base)
	if err := j.Open(ctx(t), long, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
		t.Fatal(err)
	}
	if r, err := j.Store().Get(ctx(t), "acct", "long"); err != nil || r.Lifecycle != journal.Opened {
		t.Fatalf("a call in flight read through the journal: %+v, %v", r, err)
	}
	wait()
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
// nothing. Spooled are a finished call, the opened record of a call with
// side effects (durable before its tool runs) and that of a read-only call
// that ran past ReadOnlyOpenDelay.
func testSpoolReplay(t *testing.T, s journal.Store) {
	dir := t.TempDir()
	first := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir, ApplyInterval: time.Hour, ReadOnlyOpenDelay: time.Millisecond})
	if _, err := first.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	P, X, O := journal.StateProposed, journal.StateExecuting, journal.StateObserved
	short, long, reader := rec("short", base), rec("running", base), rec("reading", base)
	long.SideEffectLevel = "sandbox"
	if err := first.Open(ctx(t), short, evs(P, X)); err != nil {
		t.Fatal(err)
	}
	if err := first.Finish(ctx(t), finished(short, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: O, At: base}}); err != nil {
		t.Fatal(err)
	}
	if err := first.Open(ctx(t), long, evs(P, X)); err != nil {
		t.Fatal(err)
	}
	size := spoolSize(t, dir)
	if err := first.Open(ctx(t), reader, evs(P, X)); err != nil {
		t.Fatal(err)
	}
	journalWait(t, "the opened record of a running read-only call to reach the spool", func() bool { return spoolSize(t, dir) > size })
	for _, id := range []string{"running", "reading"} {
		if _, err := s.Get(ctx(t), "acct", id); !errors.Is(err, journal.ErrNotFound) {
			t.Fatalf("the opened record %s reached the store before ApplyInterval: %v", id, err)
		}
	}
	first.Abandon()
	saved := copyDir(t, dir)

	for round := range 2 {
		second := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir})
		if _, err := second.Start(ctx(t)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		wantRecord(t, s, "short", journal.Finished, P, X, O)
		for _, want := range []journal.Record{long, reader} {
			r := wantRecord(t, s, want.ID, journal.Opened, P, X)
			if r.CallID != want.CallID || r.TraceID != want.TraceID || string(r.ArgsRaw) != string(want.ArgsRaw) || r.SideEffectLevel != want.SideEffectLevel {
				t.Errorf("replayed record: %+v", r)
			}
		}
		second.Close()
		restoreDir(t, saved, dir)
	}
}

// spoolSize is the number of bytes in the spool segments under dir.
func spoolSize(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".spool" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

// journalWait polls cond until it holds; a minute without it fails the
// test (a liveness bound, not a timing assertion).
func journalWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
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
