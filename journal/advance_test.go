package journal

import (
	"context"
	"testing"
	"time"
)

// TestAdvanceFollowsTheOpenedRecord: a change of a running call's status
// (queued while it waits for a run slot, running again) is read as
// written whether the opened record is still held by the call (read-only,
// not spooled yet), in the spool, or in the store; it is never undone by
// the opened record reaching the store after it.
func TestAdvanceFollowsTheOpenedRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		effect string
		spool  bool
	}{
		{"no spool", "sandbox", false},
		{"spooled", "sandbox", true},
		{"read-only, held by the call", "none", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var j *Journal
			if tc.spool {
				j = journalWithDelay(t, NewMemStore(), t.TempDir(), time.Hour)
			} else {
				j = New(NewMemStore(), Options{InstanceID: "inst"})
			}
			defer j.Close()
			r, evs, f, fevs := call("c1")
			r.SideEffectLevel, f.SideEffectLevel = tc.effect, tc.effect
			if err := j.Open(ctx, r, evs); err != nil {
				t.Fatal(err)
			}
			for _, st := range []Status{StatusQueued, StatusRunning, StatusQueued} {
				r.Status = st
				if err := j.Advance(ctx, r, nil); err != nil {
					t.Fatal(err)
				}
				if got, err := j.Store().Get(ctx, "acct", "c1"); err != nil || got.Status != st || got.Lifecycle != Opened {
					t.Fatalf("after Advance to %s: %+v %v", st, got, err)
				}
			}
			if err := j.Finish(ctx, f, fevs); err != nil {
				t.Fatal(err)
			}
			if got, err := j.Store().Get(ctx, "acct", "c1"); err != nil || got.Status != StatusSuccess {
				t.Fatalf("after Finish: %+v %v", got, err)
			}
			if e, _ := j.Store().Events(ctx, "acct", "c1"); len(e) != 3 {
				t.Errorf("%d events, want 3", len(e))
			}
		})
	}
}
