package v1

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The Idempotency-Key store is capped by bytes, per account and in all: an
// account's big responses evict its own oldest, never another account's
// while the total fits (a count cap let 60 stored 8 MB streams take 1.4 GB,
// and any account evict any other).
func TestIdempotencyStoreIsCappedByBytesPerAccount(t *testing.T) {
	const mb = 1 << 20
	s := NewIdempotencyStoreBytes(0, 0, 5*mb+10000, 3*mb+5000)
	body := make([]byte, mb)
	store := func(account string, i int) {
		key := fmt.Sprintf("%s\x00/v1/chat/completions\x00k%d", account, i)
		d := sha256.Sum256([]byte(key))
		if e, rerr := s.begin(account, key, d); e != nil || rerr != nil {
			t.Fatalf("begin %s: %v %v", key, e, rerr)
		}
		s.end(key, true, http.StatusOK, http.Header{}, body)
	}
	has := func(account string, i int) bool {
		_, ok := s.entries[fmt.Sprintf("%s\x00/v1/chat/completions\x00k%d", account, i)]
		return ok
	}
	store("b", 0)
	for i := 0; i < 10; i++ {
		store("a", i)
	}
	if !has("b", 0) {
		t.Fatal("account a's responses evicted account b's")
	}
	if s.byAcct["a"] > 3*mb+5000 || has("a", 6) || !has("a", 9) {
		t.Fatalf("account a holds %d bytes; oldest kept: %v", s.byAcct["a"], has("a", 6))
	}
	store("b", 1)
	store("b", 2)
	if s.bytes > 5*mb+10000 {
		t.Fatalf("store holds %d bytes", s.bytes)
	}
	// A response larger than an account's share is not kept.
	key := "c\x00/v1/responses\x00big"
	s.begin("c", key, sha256.Sum256(nil))
	s.end(key, true, 200, http.Header{}, make([]byte, 4*mb))
	if _, ok := s.entries[key]; ok {
		t.Fatal("a 4 MB response was kept under a 3 MB account cap")
	}
}

// A stored response is replayed for its TTL on the store's clock and
// forgotten after it: the key runs again.
func TestIdempotencyResponseIsReplayedForItsTTL(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := NewIdempotencyStore(time.Hour, 0)
	s.now = func() time.Time { return now }
	key := "a\x00/v1/chat/completions\x00k"
	d := sha256.Sum256([]byte(key))
	if e, rerr := s.begin("a", key, d); e != nil || rerr != nil {
		t.Fatalf("first begin: %v %v", e, rerr)
	}
	s.end(key, true, http.StatusOK, http.Header{}, []byte("answer"))
	now = now.Add(time.Hour)
	if e, rerr := s.begin("a", key, d); rerr != nil || e == nil || string(e.body) != "answer" {
		t.Fatalf("begin at the TTL = %v %v, want the stored answer replayed", e, rerr)
	}
	now = now.Add(time.Second)
	if e, rerr := s.begin("a", key, d); e != nil || rerr != nil {
		t.Fatalf("begin after the TTL = %v %v, want the key to run again", e, rerr)
	}
}
