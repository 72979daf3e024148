// Package idempotencytest is the conformance suite every idempotency.Store
// must pass: the in-memory store, SQLite and PostgreSQL run the same tests.
package idempotencytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/idempotency"
)

// Open returns a fresh, empty store keeping within lim.
type Open func(t *testing.T, lim idempotency.Limits) idempotency.Store

// Run runs the suite.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, Open)
	}{
		{"AnsweredKeyReplaysTheResponse", testReplay},
		{"OtherBodyWithTheKeyIsReused", testReused},
		{"HeldKeyIsInFlightUntilItsLeaseEnds", testLease},
		{"RenewedLeaseKeepsTheKey", testRenew},
		{"ReleasedKeyRunsAgain", testRelease},
		{"AnswerIsForgottenAfterTheTTL", testTTL},
		{"AnswersAreCappedByBytesPerAccountAndInAll", testCaps},
		{"ConcurrentClaimsHaveOneWinner", testConcurrent},
		{"HostileKeysAndBodiesRoundTrip", testHostile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

var base = time.UnixMilli(1_790_000_000_000).UTC()

const lease = 3 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func claim(account, key, body, owner string) idempotency.Claim {
	return idempotency.Claim{Key: account + "\x00/v1/chat/completions\x00" + key, Account: account,
		Digest: sha256.Sum256([]byte(body)), Owner: owner}
}

func mustClaim(t *testing.T, s idempotency.Store, c idempotency.Claim, now time.Time, want idempotency.Outcome) idempotency.Result {
	t.Helper()
	r, err := s.Claim(ctx(t), c, now, lease)
	if err != nil {
		t.Fatalf("claim %q by %s: %v", c.Key, c.Owner, err)
	}
	if r.Outcome != want {
		t.Fatalf("claim %q by %s = outcome %d, want %d", c.Key, c.Owner, r.Outcome, want)
	}
	return r
}

func complete(t *testing.T, s idempotency.Store, c idempotency.Claim, body []byte, now time.Time) bool {
	t.Helper()
	ok, err := s.Complete(ctx(t), c.Key, c.Owner, idempotency.Response{Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, now)
	if err != nil {
		t.Fatalf("complete %q: %v", c.Key, err)
	}
	return ok
}

func testReplay(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	c := claim("a", "k1", "body", "o1")
	mustClaim(t, s, c, base, idempotency.Claimed)
	if !complete(t, s, c, []byte(`{"answer":1}`), base.Add(time.Second)) {
		t.Fatal("the response was not kept")
	}
	retry := c
	retry.Owner = "o2"
	r := mustClaim(t, s, retry, base.Add(2*time.Second), idempotency.Replay)
	if r.Response.Status != 200 || string(r.Response.Body) != `{"answer":1}` || r.Response.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("replayed %+v", r.Response)
	}
	// Another account's same key is another key.
	mustClaim(t, s, claim("b", "k1", "body", "o3"), base.Add(2*time.Second), idempotency.Claimed)
}

func testReused(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	c := claim("a", "k1", "body", "o1")
	mustClaim(t, s, c, base, idempotency.Claimed)
	mustClaim(t, s, claim("a", "k1", "other body", "o2"), base, idempotency.Reused)
	complete(t, s, c, []byte("x"), base)
	mustClaim(t, s, claim("a", "k1", "other body", "o2"), base, idempotency.Reused)
}

func testLease(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	c := claim("a", "k1", "body", "dead")
	mustClaim(t, s, c, base, idempotency.Claimed)
	r := mustClaim(t, s, claim("a", "k1", "body", "o2"), base.Add(time.Second), idempotency.InFlight)
	if r.Retry <= 0 || r.Retry > 2*time.Second {
		t.Fatalf("retry after %v, want the 2 s left of the lease", r.Retry)
	}
	// The holder died: at its lease's end the key goes to the next claim.
	next := claim("a", "k1", "body", "o3")
	if r := mustClaim(t, s, next, base.Add(lease), idempotency.Claimed); !r.TookOver {
		t.Fatal("taking over a lapsed claim is not reported")
	}
	if ok, err := s.Renew(ctx(t), c.Key, "dead", base.Add(lease), lease); err != nil || ok {
		t.Fatalf("the lapsed owner renewed: %v %v", ok, err)
	}
	if complete(t, s, c, []byte("late"), base.Add(lease)) {
		t.Fatal("the lapsed owner completed")
	}
	complete(t, s, next, []byte("fresh"), base.Add(lease))
	if r := mustClaim(t, s, claim("a", "k1", "body", "o4"), base.Add(lease), idempotency.Replay); string(r.Response.Body) != "fresh" {
		t.Fatalf("replayed %q", r.Response.Body)
	}
}

func testRenew(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	c := claim("a", "k1", "body", "o1")
	mustClaim(t, s, c, base, idempotency.Claimed)
	if ok, err := s.Renew(ctx(t), c.Key, "o1", base.Add(2*time.Second), lease); err != nil || !ok {
		t.Fatalf("renew = %v %v", ok, err)
	}
	if ok, _ := s.Renew(ctx(t), c.Key, "intruder", base.Add(2*time.Second), lease); ok {
		t.Fatal("another owner renewed the claim")
	}
	mustClaim(t, s, claim("a", "k1", "body", "o2"), base.Add(4*time.Second), idempotency.InFlight)
	mustClaim(t, s, claim("a", "k1", "body", "o2"), base.Add(5*time.Second), idempotency.Claimed)
}

func testRelease(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	c := claim("a", "k1", "body", "o1")
	mustClaim(t, s, c, base, idempotency.Claimed)
	if err := s.Release(ctx(t), c.Key, "intruder"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, claim("a", "k1", "body", "o2"), base, idempotency.InFlight)
	if err := s.Release(ctx(t), c.Key, "o1"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, claim("a", "k1", "other body", "o2"), base, idempotency.Claimed)
}

func testTTL(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{TTL: time.Hour})
	c := claim("a", "k1", "body", "o1")
	mustClaim(t, s, c, base, idempotency.Claimed)
	complete(t, s, c, []byte("answer"), base)
	mustClaim(t, s, claim("a", "k1", "body", "o2"), base.Add(time.Hour), idempotency.Replay)
	mustClaim(t, s, claim("a", "k1", "other", "o2"), base.Add(time.Hour+time.Second), idempotency.Claimed)
}

// An account's big responses evict its own oldest, never another account's
// while the total fits; a response over an account's share is not kept.
func testCaps(t *testing.T, open Open) {
	const mb = 1 << 20
	s := open(t, idempotency.Limits{MaxBytes: 5*mb + 10000, AccountBytes: 3*mb + 5000})
	body := bytes.Repeat([]byte("x"), mb)
	at := base
	store := func(account string, i int) {
		at = at.Add(time.Second)
		c := claim(account, fmt.Sprint("k", i), "body", "o")
		mustClaim(t, s, c, at, idempotency.Claimed)
		if !complete(t, s, c, body, at) {
			t.Fatalf("%s k%d not kept", account, i)
		}
	}
	has := func(account string, i int) bool {
		r, err := s.Claim(ctx(t), claim(account, fmt.Sprint("k", i), "probe", "p"), at, lease)
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome == idempotency.Claimed {
			_ = s.Release(ctx(t), claim(account, fmt.Sprint("k", i), "probe", "p").Key, "p")
			return false
		}
		return r.Outcome == idempotency.Reused
	}
	store("b", 0)
	for i := range 10 {
		store("a", i)
	}
	if !has("b", 0) {
		t.Fatal("account a's responses evicted account b's")
	}
	if has("a", 6) || !has("a", 7) || !has("a", 9) {
		t.Fatalf("account a keeps k6 %v, k7 %v, k9 %v; want its 3 newest only", has("a", 6), has("a", 7), has("a", 9))
	}
	store("b", 1)
	store("b", 2)
	kept := 0
	for _, k := range []struct {
		a string
		i int
	}{{"a", 7}, {"a", 8}, {"a", 9}, {"b", 0}, {"b", 1}, {"b", 2}} {
		if has(k.a, k.i) {
			kept++
		}
	}
	if kept > 5 || !has("b", 2) {
		t.Fatalf("%d responses of 1 MiB kept under a 5 MiB cap (b k2 kept: %v)", kept, has("b", 2))
	}
	c := claim("c", "big", "body", "o")
	mustClaim(t, s, c, at, idempotency.Claimed)
	if complete(t, s, c, bytes.Repeat([]byte("y"), 4*mb), at) {
		t.Fatal("a 4 MiB response was kept under a 3 MiB account cap")
	}
	mustClaim(t, s, claim("c", "big", "body", "o2"), at, idempotency.Claimed)
}

func testConcurrent(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 16 {
		wg.Go(func() {
			r, err := s.Claim(ctx(t), claim("a", "k", "body", fmt.Sprint("o", i)), base, lease)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Outcome == idempotency.Claimed {
				mu.Lock()
				won++
				mu.Unlock()
			} else if r.Outcome != idempotency.InFlight {
				t.Errorf("outcome %d", r.Outcome)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d claims won one key", won)
	}
}

func testHostile(t *testing.T, open Open) {
	s := open(t, idempotency.Limits{})
	keys := []string{"nul\x00key", strings.Repeat("長", 255), "\xff\xfe invalid utf-8", "'; DROP TABLE v1_idempotency; --", "Ǆ\u202e\u200b"}
	body := []byte{0, 1, 2, 0xff, '\n', 0}
	for i, k := range keys {
		c := claim("acct\x00"+k, k, k, fmt.Sprint("o", i))
		mustClaim(t, s, c, base, idempotency.Claimed)
		complete(t, s, c, body, base)
		r := mustClaim(t, s, idempotency.Claim{Key: c.Key, Account: c.Account, Digest: c.Digest, Owner: "x"}, base, idempotency.Replay)
		if !bytes.Equal(r.Response.Body, body) {
			t.Fatalf("key %q replayed %q", k, r.Response.Body)
		}
	}
}
