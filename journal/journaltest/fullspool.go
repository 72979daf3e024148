package journaltest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/journal"
)

// downStore is a store that can be taken down: while down, it refuses
// the spool's writes and cannot tell who is alive, as a database that
// does not answer.
type downStore struct {
	journal.Store
	down atomic.Bool
}

var errStoreDown = errors.New("store down")

func (d *downStore) Apply(ctx context.Context, ws []journal.Write) ([]string, error) {
	if d.down.Load() {
		return nil, errStoreDown
	}
	return d.Store.Apply(ctx, ws)
}

func (d *downStore) Alive(ctx context.Context, id string) (bool, error) {
	if d.down.Load() {
		return false, errStoreDown
	}
	return d.Store.Alive(ctx, id)
}

// fillSpool opens calls with side effects (ids prefix00, prefix01, …)
// until the spool holds Options.MaxPending writes: the next Open would
// wait for room, and with a context already cancelled it fails instead.
// It returns the records it opened.
func fillSpool(t *testing.T, j *journal.Journal, prefix string) []journal.Record {
	t.Helper()
	refused, cancel := context.WithCancel(ctx(t))
	cancel()
	var out []journal.Record
	for i := 0; ; i++ {
		r := rec(fmt.Sprintf("%s%02d", prefix, i), base)
		r.SideEffectLevel = "sandbox"
		if err := j.Open(refused, r, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("open %s: %v, want it refused for want of room", r.ID, err)
			}
			return out
		}
		out = append(out, r)
		if i > 1000 {
			t.Fatal("the spool takes writes without end while the store is down")
		}
	}
}

// spillsWaitingForRoom is the number of goroutines spilling the opened
// record of a read-only call (readonly.go) that wait for room in the
// spool.
func spillsWaitingForRoom() int {
	n := 0
	for _, g := range goroutines() {
		if strings.Contains(g, "journal.(*Journal).spill(") && strings.Contains(g, "journal.(*spool).room(") {
			n++
		}
	}
	return n
}

// spills is the number of goroutines in a spill at all.
func spills() int {
	n := 0
	for _, g := range goroutines() {
		if strings.Contains(g, "journal.(*Journal).spill(") {
			n++
		}
	}
	return n
}

// openPastTheDelay opens n read-only calls (ro00, ro01, …) in j, whose
// spool is full, and waits until their opened records are in the spool
// under dir, one frame each (all of the same size), failing at once if a
// goroutine waits for room to put one there.
func openPastTheDelay(t *testing.T, j *journal.Journal, dir string, n int) []journal.Record {
	t.Helper()
	spilled := func(what string, cond func() bool) {
		t.Helper()
		journalWait(t, what, func() bool {
			if w := spillsWaitingForRoom(); w > 0 {
				t.Fatalf("%d goroutines wait for room in the full spool to spill an opened record", w)
			}
			return cond()
		})
	}
	var ro []journal.Record
	open := func(i int) {
		r := rec(fmt.Sprintf("ro%02d", i), base)
		if err := j.Open(ctx(t), r, evs(journal.StateProposed, journal.StateExecuting)); err != nil {
			t.Fatal(err)
		}
		ro = append(ro, r)
	}
	before := spoolSize(t, dir)
	open(0)
	spilled("the opened record of a read-only call in the full spool", func() bool { return spoolSize(t, dir) > before })
	frame := spoolSize(t, dir) - before
	for i := 1; i < n; i++ {
		open(i)
	}
	spilled(fmt.Sprintf("%d opened records in the full spool", n), func() bool { return spoolSize(t, dir) == before+int64(n)*frame })
	return ro
}

// finishEach finishes the calls rs in j, each in a goroutine of its own,
// and returns the channel their errors arrive on.
func finishEach(t *testing.T, j *journal.Journal, rs []journal.Record) <-chan error {
	errs := make(chan error, len(rs))
	for _, r := range rs {
		go func() {
			errs <- j.Finish(ctx(t), finished(r, journal.StatusSuccess, time.Millisecond), []journal.Event{{Seq: 2, State: journal.StateObserved, At: base}})
		}()
	}
	return errs
}

// results receives k errors from errs, within journalWait's bound.
func results(t *testing.T, what string, errs <-chan error, k int) []error {
	t.Helper()
	var out []error
	journalWait(t, what, func() bool {
		for {
			select {
			case err := <-errs:
				out = append(out, err)
			default:
				return len(out) == k
			}
		}
	})
	return out
}

func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// testReadOnlyCallsOverAFullSpool: with the store down and the spool
// full (MaxPending writes waiting), a read-only call that runs past
// ReadOnlyOpenDelay still gets its opened record into the spool, over
// the bound, and no goroutine is left waiting for room; an outcome waits
// for room until the store is back, or until Close, which returns
// although outcomes wait, ends their wait with ErrClosed, and leaves no
// spill running. Once the store is back, the next start finds every call
// exactly once: finished if its outcome was spooled, else opened.
func testReadOnlyCallsOverAFullSpool(t *testing.T, s journal.Store) {
	// The outcomes of a quarter of the calls fit in the spool's bound,
	// so that one Flush makes room for them all.
	const n, maxPending = 40, 16
	P, X, O := journal.StateProposed, journal.StateExecuting, journal.StateObserved
	dir := t.TempDir()
	down := &downStore{Store: s}
	j := journal.New(down, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir, ApplyInterval: time.Hour,
		MaxPending: maxPending, ReadOnlyOpenDelay: time.Microsecond})
	if _, err := j.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	down.down.Store(true)
	sandboxed := fillSpool(t, j, "sb")

	ro := openPastTheDelay(t, j, dir, n)

	// The first quarter ends while the store is down: the outcomes wait
	// for room, and get it once the store is back.
	errs := finishEach(t, j, ro[:n/4])
	down.down.Store(false)
	if err := j.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, err := range results(t, "outcomes once the store is back", errs, n/4) {
		if err != nil {
			t.Fatalf("a read-only call ending while the store came back: %v", err)
		}
	}

	// The store goes down again, the spool fills up, the second quarter
	// ends and waits for room; the rest still runs when the journal closes.
	down.down.Store(true)
	sandboxed = append(sandboxed, fillSpool(t, j, "sc")...)
	errs = finishEach(t, j, ro[n/4:n/2])
	closed := make(chan struct{})
	go func() {
		j.Close()
		close(closed)
	}()
	journalWait(t, "Close with outcomes waiting for room in the full spool", func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	for _, err := range results(t, "outcomes waiting for room when the journal closed", errs, n/4) {
		if !errors.Is(err, journal.ErrClosed) {
			t.Fatalf("an outcome waiting for room when the journal closed: %v, want ErrClosed", err)
		}
	}
	if k := spills(); k != 0 {
		t.Errorf("%d spills still run after Close", k)
	}
	if err := j.Open(ctx(t), rec("late", base), evs(P, X)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("a read-only call opened after Close: %v, want ErrClosed", err)
	}

	// The store is back: the next start applies the spool Close left.
	down.down.Store(false)
	next := journal.New(s, journal.Options{InstanceID: uuid.NewString(), SpoolDir: dir})
	if _, err := next.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	for i, r := range ro {
		if i < n/4 {
			wantRecord(t, s, r.ID, journal.Finished, P, X, O)
		} else {
			wantRecord(t, s, r.ID, journal.Opened, P, X)
		}
	}
	for _, r := range sandboxed {
		wantRecord(t, s, r.ID, journal.Opened, P, X)
	}
	recs, total, err := s.List(ctx(t), journal.Query{AccountID: "acct", Limit: 1000})
	if want := n + len(sandboxed); err != nil || total != want || len(recs) != want {
		t.Errorf("%d/%d records in the store, %v; want %d", len(recs), total, err, want)
	}
}
