package journal

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// spoolWrites is the number of write calls the journal's spool has made.
func spoolWrites(j *Journal) int {
	f := j.spool.Load().files
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// spoolFrames is what the journal's open spool segment holds, in order:
// "+id" for an opened record (an insert), "=id" for an outcome, "+=id"
// for both merged (an insert of a finished record).
func spoolFrames(t *testing.T, j *Journal) []string {
	t.Helper()
	f := j.spool.Load().files
	// Held while reading: a write of the spool (a timer's spill) must not
	// land halfway through.
	f.mu.Lock()
	ws, skipped, err := readSegment(f.f.Name())
	f.mu.Unlock()
	if err != nil || skipped != 0 {
		t.Fatalf("spool segment: %v, %d bytes skipped", err, skipped)
	}
	var out []string
	for _, e := range ws {
		mark := "="
		switch {
		case e.w.Insert && e.w.Record.Lifecycle == Finished:
			mark = "+="
		case e.w.Insert:
			mark = "+"
		}
		out = append(out, mark+e.w.Record.ID)
	}
	return out
}

func journalWithDelay(t *testing.T, s Store, dir string, delay time.Duration) *Journal {
	t.Helper()
	j := New(s, Options{InstanceID: "inst", SpoolDir: dir, ApplyInterval: time.Hour, ReadOnlyOpenDelay: delay, Logger: slog.New(slog.DiscardHandler)})
	if _, err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestOpenedRecordReachesTheSpoolByItsRule: a call with side effects has
// its opened record in the spool file before its tool runs; a short
// read-only call writes its opened record and outcome as one insert of
// the finished record, one write call;
// a read-only call that runs past ReadOnlyOpenDelay has its opened record
// appended while it runs.
func TestOpenedRecordReachesTheSpoolByItsRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		effect string
		delay  time.Duration
		// running is what the spool holds while the tool runs: at once
		// after Open, or, with later, once the delay has passed.
		running []string
		later   bool
		after   []string // what the spool holds once the call returned
		writes  int      // write calls for the whole call
	}{
		{name: "read-only short call", effect: "none", delay: time.Hour, running: nil, after: []string{"+=c1"}, writes: 1},
		{name: "read-only call past the delay", effect: "none", delay: time.Millisecond, running: []string{"+c1"}, later: true, after: []string{"+c1", "=c1"}, writes: 2},
		{name: "read-only, no delay", effect: "none", delay: -1, running: []string{"+c1"}, after: []string{"+c1", "=c1"}, writes: 2},
		{name: "sandbox", effect: "sandbox", delay: time.Hour, running: []string{"+c1"}, after: []string{"+c1", "=c1"}, writes: 2},
		{name: "unknown level", effect: "", delay: time.Hour, running: []string{"+c1"}, after: []string{"+c1", "=c1"}, writes: 2},
	} {
		// In a bubble: the delay's timer runs on the fake clock, so the
		// test moves the clock past it and waits for the journal to idle.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewMemStore()
				j := journalWithDelay(t, s, t.TempDir(), tc.delay)
				defer j.Close()
				ctx := context.Background()
				r, evs, f, fevs := call("c1")
				r.SideEffectLevel, f.SideEffectLevel = tc.effect, tc.effect
				if err := j.Open(ctx, r, evs); err != nil {
					t.Fatal(err)
				}
				// The tool runs now.
				if tc.later {
					// Fake time: the bubble's clock jumps past the delay at once;
					// no real waiting, and the timer has fired when it returns.
					time.Sleep(tc.delay)
				}
				synctest.Wait()
				if got := spoolFrames(t, j); !slices.Equal(got, tc.running) {
					t.Fatalf("spool while the tool runs: %v, want %v", got, tc.running)
				}
				if err := j.Finish(ctx, f, fevs); err != nil {
					t.Fatal(err)
				}
				if got := spoolFrames(t, j); !slices.Equal(got, tc.after) {
					t.Errorf("spool after the call: %v, want %v", got, tc.after)
				}
				if n := spoolWrites(j); n != tc.writes {
					t.Errorf("%d spool write calls, want %d", n, tc.writes)
				}
				got, err := j.Store().Get(ctx, "acct", "c1")
				if err != nil || got.Lifecycle != Finished {
					t.Fatalf("read through the journal: %+v %v", got, err)
				}
				if e, _ := s.Events(ctx, "acct", "c1"); len(e) != 3 {
					t.Errorf("%d events, want 3", len(e))
				}
			})
		})
	}
}

// TestAReaderSeesAReadOnlyCallInFlight: a read through the journal
// spools the opened records still waiting for their outcome.
func TestAReaderSeesAReadOnlyCallInFlight(t *testing.T) {
	j := journalWithDelay(t, NewMemStore(), t.TempDir(), time.Hour)
	defer j.Close()
	ctx := context.Background()
	r, evs, f, fevs := call("c1")
	r.SideEffectLevel, f.SideEffectLevel = "none", "none"
	if err := j.Open(ctx, r, evs); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Store().Get(ctx, "acct", "c1"); err != nil || got.Lifecycle != Opened {
		t.Fatalf("a read-only call in flight read through the journal: %+v %v", got, err)
	}
	if err := j.Finish(ctx, f, fevs); err != nil {
		t.Fatal(err)
	}
	if got := spoolFrames(t, j); len(got) != 2 || got[0] != "+c1" || got[1] != "=c1" {
		t.Errorf("spool: %v, want [+c1 =c1]", got)
	}
	if got, err := j.Store().Get(ctx, "acct", "c1"); err != nil || got.Lifecycle != Finished {
		t.Fatalf("after Finish: %+v %v", got, err)
	}
}

// TestADeadProcessLosesNoFinishedReadOnlyCall: after a crash, the next
// process replays every finished call and reconciles the opened records
// that were spooled as before; only the opened record of a read-only call
// younger than ReadOnlyOpenDelay is gone (its tool changed nothing).
func TestADeadProcessLosesNoFinishedReadOnlyCall(t *testing.T) {
	s := NewMemStore()
	dir := t.TempDir()
	first := journalWithDelay(t, s, dir, time.Hour)
	ctx := context.Background()
	type want struct {
		status Status
		state  State
	}
	calls := []struct {
		id, effect string
		finish     bool
		want       *want // nil: not in the store
	}{
		{id: "ro-done", effect: "none", finish: true, want: &want{StatusSuccess, StateObserved}},
		{id: "sb-done", effect: "sandbox", finish: true, want: &want{StatusSuccess, StateObserved}},
		{id: "sb-running", effect: "sandbox", want: &want{StatusUncertain, StateOutcomeUnknown}},
		{id: "ro-read", effect: "none", want: &want{StatusTimeout, StateFailedBeforeCommit}}, // spooled by a reader
		{id: "ro-young", effect: "none", want: nil},
	}
	for _, c := range calls {
		r, evs, f, fevs := call(c.id)
		r.SideEffectLevel, f.SideEffectLevel = c.effect, c.effect
		if err := first.Open(ctx, r, evs); err != nil {
			t.Fatal(err)
		}
		if c.id == "ro-read" {
			first.spoolOpened() // as a reader's flush does, but the store stays empty
		}
		if c.finish {
			if err := first.Finish(ctx, f, fevs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Get(ctx, "acct", "ro-read"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ro-read reached the store before the crash: %v", err)
	}
	first.Abandon()
	s.Release("inst")

	second := New(s, Options{InstanceID: "next", SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if _, err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for _, c := range calls {
		got, err := s.Get(ctx, "acct", c.id)
		if c.want == nil {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %+v %v, want it lost", c.id, got, err)
			}
			continue
		}
		if err != nil || got.Lifecycle != Finished || got.Status != c.want.status || got.State != c.want.state {
			t.Errorf("%s: %+v %v, want %s/%s finished", c.id, got, err, c.want.status, c.want.state)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "inst.*")); len(left) != 0 {
		t.Errorf("the dead spool is still there: %v", left)
	}
}

// BenchmarkOpenFinish is one call's journal writes with a spool: a
// read-only call (one spool write) against one with side effects (two).
//
//	go test -run '^$' -bench OpenFinish -benchmem ./journal/
func BenchmarkOpenFinish(b *testing.B) {
	for _, effect := range []string{"none", "sandbox"} {
		b.Run(effect, func(b *testing.B) {
			ctx := context.Background()
			j := New(NewMemStore(), Options{InstanceID: "inst", SpoolDir: b.TempDir(), ApplyInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
			if _, err := j.Start(ctx); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(j.Close)
			r, evs, f, fevs := call("c")
			r.SideEffectLevel, f.SideEffectLevel = effect, effect
			b.ReportAllocs()
			for i := range b.N {
				id := "c" + strconv.Itoa(i)
				r.ID, f.ID = id, id
				if err := j.Open(ctx, r, evs); err != nil {
					b.Fatal(err)
				}
				if err := j.Finish(ctx, f, fevs); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 1023 {
					b.StopTimer()
					if err := j.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// TestAnOutcomeWaitingForRoomHoldsNothingBack: with the store down and the
// spool full, a read-only call's outcome waits for room; meanwhile a
// reader's flush still spools the call's opened record (it does not wait
// behind the outcome), and once the store is back the call lands once,
// its opened record and outcome merged by the apply side.
func TestAnOutcomeWaitingForRoomHoldsNothingBack(t *testing.T) {
	// In a bubble, synctest.Wait tells when the outcome has come to wait for
	// room: every goroutine of the journal is then blocked.
	synctest.Test(t, testAnOutcomeWaitingForRoomHoldsNothingBack)
}

func testAnOutcomeWaitingForRoomHoldsNothingBack(t *testing.T) {
	fs := &flakyStore{MemStore: NewMemStore()}
	j := New(fs, Options{InstanceID: "inst", SpoolDir: t.TempDir(), ApplyInterval: time.Hour, MaxPending: 1,
		ReadOnlyOpenDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if _, err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Closed at the end, not deferred: a journal that fails this test may
	// hang in Close.
	ctx := context.Background()
	fs.set(true)
	r, evs, f, fevs := call("ro")
	r.SideEffectLevel, f.SideEffectLevel = "none", "none"
	if err := j.Open(ctx, r, evs); err != nil {
		t.Fatal(err)
	}
	sb, sevs, _, _ := call("sb")
	sb.SideEffectLevel = "sandbox"
	if err := j.Open(ctx, sb, sevs); err != nil { // the spool is full now
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() { finished <- j.Finish(ctx, f, fevs) }()
	synctest.Wait()
	if n := waitingForRoom("(*Journal).finished("); n != 1 {
		t.Fatalf("%d outcomes waiting for room, want 1", n)
	}

	flushed := make(chan error, 1)
	go func() { flushed <- j.Flush(ctx) }()
	err := <-flushed
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Flush with the store down: %v, want ErrUnavailable", err)
	}
	if got := spoolFrames(t, j); !slices.Equal(got, []string{"+sb", "+ro"}) {
		t.Fatalf("spool while the outcome waits: %v, want [+sb +ro]", got)
	}
	fs.set(false)
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	got, err := j.Store().Get(ctx, "acct", "ro")
	if err != nil || got.Lifecycle != Finished {
		t.Fatalf("the read-only call once the store is back: %+v %v", got, err)
	}
	if e, _ := fs.Events(ctx, "acct", "ro"); len(e) != 3 {
		t.Errorf("%d events, want 3", len(e))
	}
	j.Close()
}

// waitingForRoom is the number of goroutines in fn (a function of this
// package, as a stack trace names it) that wait for room in the spool.
func waitingForRoom(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	k := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "journal."+fn) && strings.Contains(g, "journal.(*spool).room(") {
			k++
		}
	}
	return k
}
