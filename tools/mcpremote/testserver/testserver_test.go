package testserver

import "testing"

// TestReachedClosesAtTheCount: the channel stays open below the count,
// closes at it, is closed at once when asked for a count already reached,
// and one tool's calls do not close another's.
func TestReachedClosesAtTheCount(t *testing.T) {
	s := New(true)
	two, other := s.Reached("hang", 2), s.Reached("echo", 1)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	s.count("hang")
	if closed(two) || closed(other) {
		t.Fatal("closed after one call of hang")
	}
	s.count("hang")
	if !closed(two) {
		t.Fatal("not closed after two calls of hang")
	}
	if closed(other) {
		t.Fatal("echo's channel closed by calls of hang")
	}
	if !closed(s.Reached("hang", 1)) {
		t.Fatal("a count already reached gives an open channel")
	}
	if len(s.waits) != 1 {
		t.Fatalf("%d waits kept, want echo's only", len(s.waits))
	}
}
