package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server/admin"
)

// TestUsageReportsTheMonthOfTheKeyServicesClock: /admin/usage without a
// month reports the month on the clock calls are billed on — the key
// service's, when the handler is given none — not the wall clock's. A
// call billed in January's last second is January's; after midnight the
// default report is February's, empty, and January's still holds it.
func TestUsageReportsTheMonthOfTheKeyServicesClock(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	svc := keys.New(keys.Options{Store: db, Now: clock})
	t.Cleanup(svc.Close)
	k, _, err := svc.CreateKey(ctx, "acme", "ci", []string{keys.ScopeMCP}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for pattern, h := range (&admin.Keys{Service: svc}).Routes() {
		mux.Handle(pattern, h)
	}
	report := func(query string) (month string, calls int64) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/usage?account=acme"+query, nil))
		var out struct {
			Month  string `json:"month"`
			Totals struct {
				Calls int64 `json:"calls"`
			} `json:"totals"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("GET /admin/usage%s: %d %s", query, rec.Code, rec.Body)
		}
		return out.Month, out.Totals.Calls
	}
	tk, err := svc.Admit(ctx, keys.Admission{KeyID: k.ID, Face: "mcp", Tool: "web_search", Paid: true, Lease: "l1"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(1)
	if month, calls := report(""); month != "2026-01" || calls != 1 {
		t.Fatalf("before midnight: month %s, %d calls; want 2026-01 with the call", month, calls)
	}
	now.Add(int64(time.Second)) // February 1st, 00:00:00
	if month, calls := report(""); month != "2026-02" || calls != 0 {
		t.Fatalf("after midnight: month %s, %d calls; want 2026-02 with none", month, calls)
	}
	if month, calls := report("&month=2026-01"); month != "2026-01" || calls != 1 {
		t.Fatalf("January after midnight: month %s, %d calls; want the call", month, calls)
	}
}
