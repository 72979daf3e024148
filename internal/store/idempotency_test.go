package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/idempotency/idempotencytest"
)

func TestIdempotencySQLite(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T, lim idempotency.Limits) idempotency.Store { return OpenSQLite(t).Idempotency(lim) })
}

func TestIdempotencyPostgres(t *testing.T) {
	idempotencytest.Run(t, func(t *testing.T, lim idempotency.Limits) idempotency.Store { return OpenPostgres(t).Idempotency(lim) })
}

// A claim whose holder died and that nobody retried goes a TTL later, with
// the answers past theirs, when another answer is stored.
func TestAbandonedIdempotencyClaimsAreDeleted(t *testing.T) {
	db := OpenSQLite(t)
	s := db.Idempotency(idempotency.Limits{TTL: time.Hour})
	ctx := context.Background()
	base := time.UnixMilli(1_790_000_000_000)
	dead := idempotency.Claim{Key: "a\x00/v1/responses\x00dead", Account: "a", Owner: "gone"}
	if r, err := s.Claim(ctx, dead, base, 3*time.Second); err != nil || r.Outcome != idempotency.Claimed {
		t.Fatal(r, err)
	}
	later := base.Add(2 * time.Hour)
	live := idempotency.Claim{Key: "a\x00/v1/responses\x00live", Account: "a", Owner: "o"}
	if _, err := s.Claim(ctx, live, later, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Complete(ctx, live.Key, "o", idempotency.Response{Status: 200}, later); err != nil || !ok {
		t.Fatal(ok, err)
	}
	var n int
	if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM v1_idempotency`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want the live answer only", n, err)
	}
}
