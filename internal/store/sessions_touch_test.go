package store_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/tools/session"
)

// TouchSession makes a missing session (default metadata, created now) and
// returns an existing one as it is, on both stores, also when many calls
// touch a new session at once.
func TestTouchSession(t *testing.T) {
	stores := map[string]func(testing.TB) *store.DB{"sqlite": OpenSQLite}
	if os.Getenv("TOOLHOST_TEST_POSTGRES") != "" {
		stores["postgres"] = OpenPostgres
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			created := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli()).UTC()
			if err := db.CreateSession(ctx, session.Session{ID: "kept", AccountID: "acct_1", Metadata: json.RawMessage(`{"user":"ada"}`),
				Permissions: session.Default(), CreatedAt: created, UpdatedAt: created}); err != nil {
				t.Fatal(err)
			}
			now := time.UnixMilli(time.Now().UnixMilli()).UTC()
			for _, tc := range []struct {
				name, account, id string
				meta              string
				createdAt         time.Time
			}{
				{name: "existing: returned as it is", account: "acct_1", id: "kept", meta: `{"user":"ada"}`, createdAt: created},
				{name: "missing: made now", account: "acct_1", id: "new", meta: `{}`, createdAt: now},
				{name: "same id in another account: its own", account: "acct_2", id: "kept", meta: `{}`, createdAt: now},
				{name: "hostile id: Unicode tricks, long", account: "acct_1", id: "e\u0301\u202e\u200b" + strings.Repeat("x", 300), meta: `{}`, createdAt: now},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for range 2 { // the second touch finds what the first made
						s, err := db.TouchSession(ctx, tc.account, tc.id, now)
						if err != nil {
							t.Fatal(err)
						}
						if s.ID != tc.id || s.AccountID != tc.account || string(s.Metadata) != tc.meta || !s.CreatedAt.Equal(tc.createdAt) {
							t.Fatalf("got %+v, want metadata %s created %v", s, tc.meta, tc.createdAt)
						}
					}
				})
			}
			// Many first touches of one session at once: one session, no error.
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for range 16 {
				wg.Go(func() {
					if _, err := db.TouchSession(ctx, "acct_3", "racy", now); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("concurrent first touch: %v", err)
			}
			if s, err := db.GetSession(ctx, "acct_3", "racy"); err != nil || string(s.Metadata) != "{}" {
				t.Fatalf("after the concurrent touches: %+v %v", s, err)
			}
		})
	}
}
