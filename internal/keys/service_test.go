package keys_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
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
	svc.Close() // the background touches finish before the store closes
}

// touchBlockingStore serves one key and holds every TouchKey until release
// is closed.
type touchBlockingStore struct {
	keys.Store
	key     keys.Key
	release chan struct{}
}

func (s *touchBlockingStore) KeyByHash(context.Context, string) (*keys.Key, error) {
	k := s.key
	return &k, nil
}

func (s *touchBlockingStore) TouchKey(context.Context, string, time.Time) error {
	<-s.release
	return nil
}

// TestCloseWaitsForBackgroundTouches: the store may be closed right after
// Close returns, so no last-use write may still be running then.
func TestCloseWaitsForBackgroundTouches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret, err := keys.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		st := &touchBlockingStore{key: keys.Key{ID: "key_1", AccountID: "acme"}, release: make(chan struct{})}
		svc := keys.New(keys.Options{Store: st})
		if _, err := svc.Authenticate(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() {
			svc.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a last-use write was still running")
		default:
		}
		close(st.release)
		synctest.Wait()
		select {
		case <-closed:
		default:
			t.Fatal("Close did not return after the last-use write finished")
		}
	})
}

// TestCallIsBilledInTheMonthItBegan: a call that began in a month's last
// second on the caller's clock (Admission.At, the executor's journal
// time) is billed in that month even when the service reads its clock
// after midnight; a call that names no time is billed on the service's
// clock, which Now reads.
func TestCallIsBilledInTheMonthItBegan(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	began := time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)
	midnight := began.Add(time.Second)
	svc := keys.New(keys.Options{Store: db, Now: func() time.Time { return midnight }})
	t.Cleanup(svc.Close)
	if got := svc.Now(); !got.Equal(midnight) {
		t.Fatalf("Now() = %s, want the service's clock %s", got, midnight)
	}
	k, _, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, keys.Limits{MonthlyUnitsCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lease string
		at    time.Time
		units float64
	}{{"began-in-january", began, 2}, {"no-time-given", time.Time{}, 3}} {
		tk, err := svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "meter", Paid: true, Lease: c.lease, At: c.at, MaxUnits: 5})
		if err != nil {
			t.Fatalf("%s: %v", c.lease, err)
		}
		tk.Done(c.units)
	}
	for month, want := range map[string]float64{"2026-01": 2, "2026-02": 3} {
		if cost, err := db.MonthCost(ctx, k.ID, month); err != nil || cost != want {
			t.Errorf("%s cost = %g, %v; want %g", month, cost, err, want)
		}
		rows, err := db.Usage(ctx, "acme", month)
		if err != nil || len(rows) != 1 || rows[0].Units != want || rows[0].Calls != 1 {
			t.Errorf("%s usage = %+v, %v; want one call of %g units", month, rows, err, want)
		}
	}
}

// A running call keeps its concurrency slot however long it runs (its
// ticket renews the slot's short lease); a slot whose holder died (no
// renewals) comes back SlotLease later, not at the end of a call deadline.
func TestConcurrencySlotIsRenewedWhileHeldAndFreedSoonAfterItsHolderDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		lim := keys.NewMemoryLimiter(nil)
		svc := keys.New(keys.Options{Store: db, Limiter: lim, CacheTTL: time.Hour})
		defer svc.Close()
		k, _, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, keys.Limits{ConcurrentCalls: 1})
		if err != nil {
			t.Fatal(err)
		}
		admit := func(lease string) (*keys.Ticket, error) {
			return svc.Limit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "sleep", Lease: lease, Timeout: 5 * time.Minute})
		}
		long, err := admit("long")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // ten leases: only renewals keep the slot
		if _, err := admit("other"); err == nil {
			t.Fatal("a second call got the slot of a call still running")
		}
		long.Done(0)
		synctest.Wait()
		next, err := admit("next")
		if err != nil {
			t.Fatalf("after Done: %v", err)
		}
		next.Done(0)
		// A replica that died holding a slot renews nothing.
		if ok, _ := lim.Acquire(ctx, k.ID, "dead", 1, keys.SlotLease); !ok {
			t.Fatal("the dead holder's acquire")
		}
		time.Sleep(keys.SlotLease - time.Second)
		if _, err := admit("early"); err == nil {
			t.Fatal("the dead holder's slot came back before its lease ran out")
		}
		time.Sleep(time.Second)
		late, err := admit("late")
		if err != nil {
			t.Fatalf("the dead holder's slot after its lease: %v", err)
		}
		late.Done(0)
	})
}
