package admin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

// The typed key responses write the bytes of the maps they replaced, with
// and without data (a nil list is null, as it was).
func TestKeyWireBytesUnchanged(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	key := &keys.Key{ID: "key_1", AccountID: "acct", Name: "ci <&>", Prefix: "th_ab", Scopes: []string{keys.ScopeMCP},
		Limits: keys.Limits{CallsPerMinute: 60}, CreatedAt: at, LastUsedAt: &at}
	rows := []keys.UsageRow{{AccountID: "acct", KeyID: "key_1", Month: "2026-01", Tool: "web_search", Calls: 3, Units: 2.5}}
	for _, c := range []struct {
		name     string
		old, got any
	}{
		{"created", map[string]any{"key": key, "secret": "th_ab\u2028cd", "notice": "store the secret now: it is shown only once"},
			createdKey{Key: key, Secret: "th_ab\u2028cd", Notice: "store the secret now: it is shown only once"}},
		{"list", map[string]any{"data": []keys.Key{*key}}, keyList{Data: []keys.Key{*key}}},
		{"empty list", map[string]any{"data": []keys.Key(nil)}, keyList{}},
		{"usage", map[string]any{"month": "2026-01", "account": "acct", "data": rows,
			"totals": map[string]any{"calls": int64(3), "units": 2.5, "cost": 0.125}},
			usageReport{Month: "2026-01", Account: "acct", Data: rows, Totals: usageTotals{Calls: 3, Units: 2.5, Cost: 0.125}}},
		{"no usage", map[string]any{"month": "2026-02", "account": "", "data": []keys.UsageRow(nil),
			"totals": map[string]any{"calls": int64(0), "units": 0.0, "cost": 0.0}},
			usageReport{Month: "2026-02"}},
	} {
		old, _ := json.Marshal(c.old)
		got, err := json.Marshal(c.got)
		if err != nil || string(got) != string(old) {
			t.Errorf("%s: %v\n got %s\nwant %s", c.name, err, got, old)
		}
	}
}
