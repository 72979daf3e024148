package journal

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// TestPendingAndOnApplyReportTheSpool: a spooled write is pending until
// a flush applies it; OnApply hears of that batch, once.
func TestPendingAndOnApplyReportTheSpool(t *testing.T) {
	var mu sync.Mutex
	var applied []int
	j := New(NewMemStore(), Options{InstanceID: "inst", SpoolDir: t.TempDir(), ApplyInterval: time.Hour, Logger: slog.New(slog.DiscardHandler),
		OnApply: func(writes int, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil || took < 0 {
				t.Errorf("OnApply(%d, %v, %v)", writes, took, err)
			}
			applied = append(applied, writes)
		}})
	if _, err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if n := j.Pending(); n != 0 {
		t.Fatalf("pending %d before any write", n)
	}
	r, evs, _, _ := call("c1")
	r.SideEffectLevel = "sandbox"
	if err := j.Open(context.Background(), r, evs); err != nil {
		t.Fatal(err)
	}
	if n := j.Pending(); n != 1 {
		t.Fatalf("pending %d after an opened record, want 1", n)
	}
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := j.Pending(); n != 0 {
		t.Fatalf("pending %d after a flush", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 1 || applied[0] != 1 {
		t.Errorf("applied batches %v, want [1]", applied)
	}
	if n := New(NewMemStore(), Options{InstanceID: "x"}).Pending(); n != 0 {
		t.Errorf("a journal without a spool has %d pending", n)
	}
}
