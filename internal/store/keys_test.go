package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

// keysStores opens a fresh SQLite store and, when TOOLHOST_TEST_POSTGRES is
// set, a PostgreSQL store in a schema of its own (dropped afterwards).
func keysStores(t *testing.T) map[string]*DB {
	t.Helper()
	ctx := context.Background()
	out := map[string]*DB{}
	lite, err := Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out[SQLite] = lite
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		schema := fmt.Sprintf("keys_test_%d", time.Now().UnixNano())
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		pg, err := Open(ctx, u.String(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			pg.SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			pg.Close()
		})
		out[Postgres] = pg
	}
	return out
}

func TestKeysStoreRoundTrip(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			svc := keys.New(keys.Options{Store: db})
			k, secret, err := svc.CreateKey(ctx, "acme", "ci key", []string{"mcp", "hosted", "mcp"}, keys.Limits{CallsPerMinute: 60})
			if err != nil {
				t.Fatal(err)
			}
			if len(secret) < 30 || secret[:3] != "th_" || k.Prefix != secret[:9] {
				t.Fatalf("secret %q prefix %q", secret, k.Prefix)
			}
			got, err := svc.Authenticate(ctx, secret)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != k.ID || got.AccountID != "acme" || len(got.Scopes) != 2 || got.Limits.CallsPerMinute != 60 {
				t.Fatalf("authenticated key = %+v", got)
			}
			// The secret itself is stored nowhere.
			var n int
			if err := db.SQL().QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM api_keys WHERE hash = ? OR prefix = ?`), secret, secret).Scan(&n); err != nil || n != 0 {
				t.Fatalf("secret found in the table (%d, %v)", n, err)
			}
			if _, err := svc.Authenticate(ctx, "th_wrong"); !errors.Is(err, keys.ErrInvalidKey) {
				t.Fatalf("wrong secret: %v", err)
			}
			if err := svc.SetLimits(ctx, k.ID, keys.Limits{ConcurrentCalls: 4, MonthlyUnitsCap: 10}); err != nil {
				t.Fatal(err)
			}
			got, _ = db.KeyByID(ctx, k.ID)
			if got.Limits != (keys.Limits{ConcurrentCalls: 4, MonthlyUnitsCap: 10}) {
				t.Fatalf("limits = %+v", got.Limits)
			}
			if err := svc.Revoke(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Authenticate(ctx, secret); !errors.Is(err, keys.ErrRevoked) {
				t.Fatalf("revoked key: %v", err)
			}
			if err := svc.Revoke(ctx, "key_nope"); !errors.Is(err, keys.ErrNotFound) {
				t.Fatalf("revoke unknown: %v", err)
			}
			list, err := db.ListKeys(ctx, "acme")
			if err != nil || len(list) != 1 || list[0].RevokedAt == nil {
				t.Fatalf("list = %+v, %v", list, err)
			}
			if other, _ := db.ListKeys(ctx, "other"); len(other) != 0 {
				t.Fatalf("another account sees %d keys", len(other))
			}
			for _, bad := range []struct {
				account string
				scopes  []string
				limits  keys.Limits
			}{
				{"Bad Account", []string{"mcp"}, keys.Limits{}},
				{"acme", []string{"root"}, keys.Limits{}},
				{"acme", nil, keys.Limits{}},
				{"acme", []string{"mcp"}, keys.Limits{CallsPerMinute: -1}},
			} {
				if _, _, err := svc.CreateKey(ctx, bad.account, "x", bad.scopes, bad.limits); !errors.Is(err, keys.ErrInvalidInput) {
					t.Errorf("CreateKey(%+v) = %v, want ErrInvalidInput", bad, err)
				}
			}
		})
	}
}

func TestBootstrapCreatesOneAdminKeyOnce(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			svc := keys.New(keys.Options{Store: db})
			secret, created, err := svc.Bootstrap(ctx)
			if err != nil || !created || secret == "" {
				t.Fatalf("first bootstrap: %q %v %v", secret, created, err)
			}
			k, err := svc.Authenticate(ctx, secret)
			if err != nil || !k.Has(keys.ScopeAdmin) {
				t.Fatalf("admin key %+v %v", k, err)
			}
			again, created, err := svc.Bootstrap(ctx)
			if err != nil || created || again != "" {
				t.Fatalf("second bootstrap created a key: %q %v %v", again, created, err)
			}
		})
	}
}

// monthClock is a key service's clock in January's last second; Advance
// moves it past midnight. Concurrent admissions read it.
type monthClock struct{ ns atomic.Int64 }

func newMonthClock() *monthClock {
	c := &monthClock{}
	c.ns.Store(time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC).UnixNano())
	return c
}

func (c *monthClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *monthClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestMonthlyCapIsExactUnderConcurrency: 40 concurrent paid calls against a
// cap of 10 units at price 1: exactly 10 are admitted, and usage survives a
// reopen of the store. The calls are billed in January's last second and
// read after midnight: they are January's, and February has none.
func TestMonthlyCapIsExactUnderConcurrency(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := newMonthClock()
			svc := keys.New(keys.Options{Store: db, Prices: map[string]float64{"web_search": 1}, Now: clock.Now})
			t.Cleanup(svc.Close)
			k, _, err := svc.CreateKey(ctx, "acme", "capped", []string{"mcp", "hosted"}, keys.Limits{MonthlyUnitsCap: 10})
			if err != nil {
				t.Fatal(err)
			}
			var admitted, capped atomic.Int64
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					slot := []string{"mcp", "hosted"}[i%2]
					tk, err := svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: slot, Tool: "web_search", Paid: true, Lease: fmt.Sprint(i)})
					var ref *keys.Refusal
					switch {
					case errors.As(err, &ref) && ref.Code == keys.CodeMonthlyCapReached:
						capped.Add(1)
					case err != nil:
						t.Error(err)
					default:
						admitted.Add(1)
						tk.Done(1)
					}
				}()
			}
			wg.Wait()
			if admitted.Load() != 10 || capped.Load() != 30 {
				t.Fatalf("admitted %d, capped %d; want 10 and 30", admitted.Load(), capped.Load())
			}
			// Free tools still run.
			tk, err := svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "get_time"})
			if err != nil {
				t.Fatalf("free tool refused: %v", err)
			}
			tk.Done(0)
			clock.Advance(time.Second) // February 1st, 00:00:00
			rows, err := db.Usage(ctx, "acme", "2026-01")
			if err != nil || len(rows) != 1 || rows[0].Calls != 10 || rows[0].Units != 10 {
				t.Fatalf("usage = %+v, %v", rows, err)
			}
			if cost, _ := db.MonthCost(ctx, k.ID, "2026-01"); cost != 10 {
				t.Fatalf("month cost = %v", cost)
			}
			if rows, err := db.Usage(ctx, "acme", keys.Month(clock.Now())); err != nil || len(rows) != 0 {
				t.Fatalf("February's usage = %+v, %v; want none", rows, err)
			}
			if cost, err := db.MonthCost(ctx, k.ID, keys.Month(clock.Now())); err != nil || cost != 0 {
				t.Fatalf("February's cost = %v, %v; want 0", cost, err)
			}
		})
	}
}

func TestSettleAdjustsReservation(t *testing.T) {
	for name, db := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := newMonthClock()
			svc := keys.New(keys.Options{Store: db, Prices: map[string]float64{"fetch_page": 0.5}, Now: clock.Now})
			t.Cleanup(svc.Close)
			k, _, err := svc.CreateKey(ctx, "acme", "pdf", []string{"mcp"}, keys.Limits{MonthlyUnitsCap: 100})
			if err != nil {
				t.Fatal(err)
			}
			// fetch_page declares the pages it may extract (its page budget).
			tk, err := svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "fetch_page", Paid: true, Lease: "a", MaxUnits: 100})
			if err != nil {
				t.Fatal(err)
			}
			tk.Done(12) // a 12-page PDF
			tk.Done(12) // twice is harmless
			tk, err = svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "fetch_page", Paid: true, Lease: "b", MaxUnits: 100})
			if err != nil {
				t.Fatal(err)
			}
			tk.Done(0) // an HTML page: the reservation is refunded
			tk, err = svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "fetch_page", Paid: true, Lease: "c", MaxUnits: 100})
			if err != nil {
				t.Fatal(err)
			}
			tk.Withdraw() // enqueued as a job: refunded, and no call counted
			tk.Done(5)    // nor anything after it
			// Read after midnight: the calls are January's.
			clock.Advance(time.Second)
			month := "2026-01"
			if cost, _ := db.MonthCost(ctx, k.ID, month); cost != 6 {
				t.Fatalf("month cost = %v, want 6 (12 pages × 0.5)", cost)
			}
			rows, _ := db.Usage(ctx, "", month)
			if len(rows) != 1 || rows[0].Calls != 2 || rows[0].Units != 12 || rows[0].Cost != 6 {
				t.Fatalf("usage = %+v", rows)
			}
			if cost, err := db.MonthCost(ctx, k.ID, keys.Month(clock.Now())); err != nil || cost != 0 {
				t.Fatalf("February's cost = %v, %v; want 0", cost, err)
			}
		})
	}
}
