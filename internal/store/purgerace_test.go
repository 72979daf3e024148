package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// The background purge (expired clients, dead tokens, old requests) and
// an admin's RevokeGrant run at the same time on the same grants: neither
// fails (on PostgreSQL a lock-order cycle between them is a deadlock, and
// one of the two is aborted with 40P01), and no token of a revoked grant
// is left unrevoked. A grant of an expired client may be purged before
// its revocation reaches it: that revocation finds no grant, and the
// grant is gone with its tokens. Each round races the purge against every
// grant's revocation at once; the rounds repeat it, as a deadlock needs
// the two to interleave.
func TestGrantsStorePurgeRacingRevokeGrantNeitherFails(t *testing.T) {
	rounds := 25
	if testing.Short() {
		rounds = 3 // a deadlock is rarer in 3 rounds; make test runs all 25
	}
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			f := purgeFixture{t: t, db: db, now: now}
			for round := range rounds {
				live, idle := raceFixture(f, round)
				start := make(chan struct{})
				var wg sync.WaitGroup
				var purgeErr error
				wg.Go(func() {
					<-start
					steps := []func() (int, error){
						func() (int, error) {
							return db.PurgeClients(ctx, identity.ClientExpiry{Now: now, UnauthorizedBefore: now.Add(-24 * time.Hour), IdleBefore: now.Add(-time.Hour)})
						},
						func() (int, error) {
							return db.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: 10})
						},
						func() (int, error) { return db.PurgeRequests(ctx, now.Add(-time.Hour)) },
					}
					for _, step := range steps {
						if _, err := step(); err != nil {
							purgeErr = errors.Join(purgeErr, err)
						}
					}
				})
				revokeErrs := make(map[string]error)
				var mu sync.Mutex
				for _, id := range append(append([]string{}, live...), idle...) {
					wg.Go(func() {
						<-start
						err := db.RevokeGrant(ctx, id, now)
						mu.Lock()
						revokeErrs[id] = err
						mu.Unlock()
					})
				}
				close(start)
				wg.Wait()
				if purgeErr != nil {
					t.Fatalf("round %d: the purge failed racing revocations: %v", round, purgeErr)
				}
				for _, id := range live {
					if err := revokeErrs[id]; err != nil {
						t.Fatalf("round %d: revoking %s racing the purge: %v", round, id, err)
					}
				}
				for _, id := range idle {
					err := revokeErrs[id]
					if err == nil {
						continue
					}
					if _, gerr := db.Grant(ctx, id); !errors.Is(err, identity.ErrNotFound) || !errors.Is(gerr, identity.ErrNotFound) {
						t.Fatalf("round %d: revoking %s (its client expired) racing the purge: %v; the grant: %v", round, id, err, gerr)
					}
				}
				for _, id := range append(append([]string{}, live...), idle...) {
					if n := countUnrevoked(t, db, id); n != 0 {
						t.Fatalf("round %d: %d tokens of the revoked grant %s are not revoked", round, n, id)
					}
				}
			}
		})
	}
}

// raceFixture puts a round's grants in the store: live ones (their
// clients in use) holding valid, expired, surplus and rotated tokens the
// purge deletes among valid ones it keeps, and grants of idle clients
// whose tokens all expired (the purge deletes those clients whole).
func raceFixture(f purgeFixture, round int) (live, idle []string) {
	f.t.Helper()
	for i := range 4 {
		id := fmt.Sprintf("r%d_live%d", round, i)
		f.client(id, time.Minute)
		f.grant(id, time.Minute, 0, 0, false)
		for j := range 14 { // 4 beyond the 10 a grant keeps
			f.tok(id, fmt.Sprint("a", j), identity.KindAccess, time.Duration(14-j)*time.Second, time.Hour, false)
		}
		for j := range 6 {
			f.tok(id, fmt.Sprint("x", j), identity.KindAccess, 2*time.Hour, time.Hour, false)
		}
		for j := range 3 {
			h := f.tok(id, fmt.Sprint("r", j), identity.KindRefresh, time.Minute, 24*time.Hour, true)
			if _, err := f.db.UseRefresh(context.Background(), h, f.now); err != nil {
				f.t.Fatal(err)
			}
		}
		f.tok(id, "r-live", identity.KindRefresh, time.Minute, 24*time.Hour, true)
		live = append(live, "gr_"+id)
	}
	for i := range 3 {
		id := fmt.Sprintf("r%d_idle%d", round, i)
		f.client(id, 3*time.Hour)
		f.grant(id, 3*time.Hour, 0, 0, false)
		for j := range 8 {
			f.tok(id, fmt.Sprint("x", j), identity.KindAccess, 3*time.Hour, time.Hour, false)
		}
		f.tok(id, "r-exp", identity.KindRefresh, 3*time.Hour, time.Hour, true)
		idle = append(idle, "gr_"+id)
	}
	return live, idle
}

func countUnrevoked(t *testing.T, db *DB, grantID string) int {
	t.Helper()
	var n int
	if err := db.db.QueryRow(db.q(`SELECT COUNT(*) FROM oauth_tokens WHERE grant_id = ? AND revoked_at IS NULL`), grantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
