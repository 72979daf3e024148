package mcpremote

import (
	"testing"
	"time"
)

// Touch: whole milliseconds, no monotonic reading, always later than the
// version before, even when the clock did not move or went back.
func TestTouch(t *testing.T) {
	base := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	at := func(ms, ns int) time.Time { return base.Add(time.Duration(ms)*time.Millisecond + time.Duration(ns)) }
	for _, tc := range []struct {
		name        string
		before, now time.Time
		want        time.Time
		created     bool // CreatedAt stamped too
	}{
		{name: "first write stamps both, truncated", now: at(5, 999_999), want: at(5, 0), created: true},
		{name: "a later write", before: at(5, 0), now: at(9, 123), want: at(9, 0)},
		{name: "same millisecond: one later", before: at(5, 0), now: at(5, 700_000), want: at(6, 0)},
		{name: "the clock went back: one later", before: at(5, 0), now: at(-3000, 0), want: at(6, 0)},
		{name: "a version read at nanoseconds (an old row): later still", before: at(5, 500_000), now: at(5, 600_000), want: at(6, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Server{UpdatedAt: tc.before, CreatedAt: at(1, 0)}
			if tc.before.IsZero() {
				s.CreatedAt = time.Time{}
			}
			s.Touch(tc.now)
			if !s.UpdatedAt.Equal(tc.want) || s.UpdatedAt != s.UpdatedAt.Round(0) || s.UpdatedAt.Nanosecond()%int(time.Millisecond) != 0 {
				t.Fatalf("UpdatedAt %v, want %v", s.UpdatedAt, tc.want)
			}
			if tc.created != s.CreatedAt.Equal(s.UpdatedAt) {
				t.Fatalf("CreatedAt %v (first write %v)", s.CreatedAt, tc.created)
			}
		})
	}
	// A monotonic reading is dropped: Equal then agrees with a store's copy.
	var s Server
	s.Touch(time.Now())
	if s.UpdatedAt != s.UpdatedAt.Round(0) {
		t.Fatal("Touch kept a monotonic reading")
	}
}
