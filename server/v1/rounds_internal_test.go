package v1

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// Round records written by one replica are read from another through the
// shared store, whole, for their own account only; records past the
// retention go at the hourly prune.
func TestSharedRoundRecordsAnswerFromEveryReplica(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := NewSharedRoundStore(db, 24*time.Hour, clock, nil)
	b := NewSharedRoundStore(db, 24*time.Hour, clock, nil)
	rec := loop.RoundLog{Time: now, RequestID: "req_1", RunID: "run_1", Round: 1, Route: "openai", Model: "m", AccountID: "acme",
		Tag: loop.RoundTag, Metadata: map[string]string{"tag": loop.RoundTag, "k\u202e": "v\x00"}, InputTokens: 3,
		ToolCalls: []loop.RoundLogCall{{ID: "c1", Name: "get_time", Status: "success", ExecutionID: "exec_1", MS: 4}}}
	a.RecordRound(context.Background(), rec)
	second := rec
	second.Round, second.Final, second.ToolCalls = 2, true, []loop.RoundLogCall{}
	a.RecordRound(context.Background(), second)

	get := func(s *RoundStore, account string) []loop.RoundLog {
		r := httptest.NewRequest(http.MethodGet, "/v1/tool-rounds?request_id=req_1", nil)
		r = r.WithContext(identity.NewContext(r.Context(), identity.Identity{AccountID: account}))
		w := httptest.NewRecorder()
		s.serve(w, r)
		if w.Code != 200 {
			t.Fatalf("GET = %d %s", w.Code, w.Body)
		}
		var out roundList
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out.Data
	}
	got := get(b, "acme")
	want := []loop.RoundLog{rec, second}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("replica b reads\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if got := get(b, "other"); len(got) != 0 {
		t.Fatalf("another account reads %d records", len(got))
	}
	// A day and an hour later the next round prunes the old ones.
	now = now.Add(25 * time.Hour)
	later := rec
	later.RequestID, later.Time = "req_2", now
	b.RecordRound(context.Background(), later)
	if got := b.ByRequest("acme", "req_1"); len(got) != 0 {
		t.Fatalf("records past the retention kept: %d", len(got))
	}
	if got := a.ByRequest("acme", "req_2"); !reflect.DeepEqual(len(got), 1) {
		t.Fatalf("the new record: %d", len(got))
	}
}
