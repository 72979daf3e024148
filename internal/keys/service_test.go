package keys_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
)

// TestAuthenticateOneKeyFromManyGoroutines is run under -race (make test):
// every request shares the cached *Key, so recording its last use must not
// write to it.
func TestAuthenticateOneKeyFromManyGoroutines(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// A clock that moves a minute per read makes every authentication a
	// "last use" worth recording: the path that used to write the shared key.
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
	svc := keys.New(keys.Options{Store: db, Now: clock, CacheTTL: time.Hour})
	_, secret, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				k, err := svc.Authenticate(ctx, secret)
				if err != nil {
					t.Error(err)
					return
				}
				_ = k.LastUsedAt // a reader of the shared key, as handlers are
				_ = k.Has(keys.ScopeMCP)
			}
		}()
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // let the background touches finish before the store closes
}
