package journaltest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
)

func claim(key, digest, id string, now time.Time) journal.Claim {
	r := rec(id, now)
	r.IdempotencyKey = key
	r.ArgsDigest = digest
	return journal.Claim{AccountID: "acct", Key: key, Digest: digest, Tool: "get_time", Version: "1.0.0",
		Now: now, ExpiresAt: now.Add(time.Hour), Open: journal.Write{Insert: true, Record: r, Events: evs(journal.StateProposed, journal.StateExecuting)}}
}

func testClaim(t *testing.T, s journal.Store) {
	c := ctx(t)
	res, err := s.Claim(c, claim("k", "d1", "c1", base))
	if err != nil || !res.Claimed {
		t.Fatalf("first claim: %+v %v", res, err)
	}
	if got, err := s.Get(c, "acct", "c1"); err != nil || got.Lifecycle != journal.Opened {
		t.Fatalf("the claim did not write its record: %+v %v", got, err)
	}
	res, err = s.Claim(c, claim("k", "d1", "c2", base))
	if err != nil || res.Claimed || res.Reused || res.Existing.ID != "c1" || res.Existing.Lifecycle != journal.Opened {
		t.Fatalf("same digest while running: %+v %v", res, err)
	}
	if _, err := s.Get(c, "acct", "c2"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a lost claim wrote its record: %v", err)
	}
	res, err = s.Claim(c, claim("k", "d2", "c3", base))
	if err != nil || !res.Reused || res.Existing.ID != "c1" {
		t.Fatalf("other digest: %+v %v", res, err)
	}
	// The holder commits: the same call gets it back.
	mustWrite(t, s, journal.Write{Record: finished(rec("c1", base), journal.StatusSuccess, time.Millisecond)})
	res, err = s.Claim(c, claim("k", "d1", "c4", base))
	if err != nil || res.Claimed || res.Existing.Status != journal.StatusSuccess || string(res.Existing.Result) != `{"now":"x"}` {
		t.Fatalf("same digest after success: %+v %v", res, err)
	}
	// A holder that failed before commit frees the key.
	if res, err := s.Claim(c, claim("k2", "d1", "c5", base)); err != nil || !res.Claimed {
		t.Fatalf("claim k2: %+v %v", res, err)
	}
	mustWrite(t, s, journal.Write{Record: finished(rec("c5", base), journal.StatusError, time.Millisecond)})
	if res, err := s.Claim(c, claim("k2", "d1", "c6", base)); err != nil || !res.Claimed {
		t.Fatalf("claim after a discarded call: %+v %v", res, err)
	}
	// After expiry the key is a new key, whatever the digest.
	later := base.Add(2 * time.Hour)
	if res, err := s.Claim(c, claim("k", "d9", "c7", later)); err != nil || !res.Claimed {
		t.Fatalf("claim after expiry: %+v %v", res, err)
	}
	// Purge removes expired claims only: k2 (expired at base+1h) goes, k
	// (renewed until later+1h) stays.
	n, err := s.PurgeIdempotency(c, later)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if res, err := s.Claim(c, claim("k", "d1", "c8", later)); err != nil || !res.Reused || res.Existing.ID != "c7" {
		t.Fatalf("k after purge: %+v %v", res, err)
	}
	// Keys are per account.
	other := claim("k", "d1", "c9", later)
	other.AccountID, other.Open.Record.AccountID = "acct2", "acct2"
	if res, err := s.Claim(c, other); err != nil || !res.Claimed {
		t.Fatalf("same key in another account: %+v %v", res, err)
	}
}

func testConcurrentClaims(t *testing.T, s journal.Store) {
	const n = 20
	var wg sync.WaitGroup
	results := make([]journal.ClaimResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Claim(ctx(t), claim("same", "d", fmt.Sprintf("cc%d", i), base))
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if results[i].Claimed {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d claims won, want exactly 1", won)
	}
}
