package admin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestToolExecutionsPagesByCursor: an offset page hands over a
// next_cursor; cursor pages read on from it, every record once, and the
// last has no next_cursor.
func TestToolExecutionsPagesByCursor(t *testing.T) {
	srv := seeded(t)
	st, b := get(t, srv.URL+"/tool-executions?session_id=s&limit=2")
	next, _ := b.Meta["next_cursor"].(string)
	if st != http.StatusOK || next == "" || b.Meta["has_more"] != true || b.Meta["total"] != float64(6) {
		t.Fatalf("first page: %d %v", st, b.Meta)
	}
	seen := pageIDs(t, b)
	for range 10 {
		st, b = get(t, srv.URL+"/tool-executions?session_id=s&limit=2&cursor="+url.QueryEscape(next))
		if st != http.StatusOK {
			t.Fatalf("cursor page: %d %+v", st, b.Error)
		}
		seen = append(seen, pageIDs(t, b)...)
		if b.Meta["offset"] != float64(0) || b.Meta["total"] != float64(6) {
			t.Errorf("cursor page meta: %v", b.Meta)
		}
		next, _ = b.Meta["next_cursor"].(string)
		if next == "" {
			break
		}
	}
	if want := []string{"f", "e", "d", "c", "b", "a"}; !slices.Equal(seen, want) {
		t.Errorf("records by cursor: %v, want %v", seen, want)
	}
	if b.Meta["has_more"] != false {
		t.Errorf("last page has_more: %v", b.Meta)
	}
}

func pageIDs(t *testing.T, b body) []string {
	t.Helper()
	var rows []struct {
		ID        string `json:"id"`
		AccountID string `json:"account_id"`
	}
	if err := json.Unmarshal(b.Data, &rows); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if r.AccountID != "local" {
			t.Errorf("record %s of %s listed", r.ID, r.AccountID)
		}
		out = append(out, r.ID)
	}
	return out
}

// TestToolExecutionsRefusesBadCursors: a malformed, huge or foreign
// cursor is a 400 invalid_cursor naming the field, in REST's error shape.
func TestToolExecutionsRefusesBadCursors(t *testing.T) {
	srv := seeded(t)
	_, b := get(t, srv.URL+"/tool-executions?session_id=s&limit=2")
	next := b.Meta["next_cursor"].(string)
	cases := map[string]string{
		"garbage":          "/tool-executions?session_id=s&cursor=" + url.QueryEscape("<script>alert(1)</script>"),
		"huge":             "/tool-executions?session_id=s&cursor=" + strings.Repeat("A", 100_000),
		"other filters":    "/tool-executions?session_id=s&tool_name=get_time&cursor=" + next,
		"other order":      "/tool-executions?session_id=s&sort_order=asc&cursor=" + next,
		"another session":  "/tool-executions?session_id=t&cursor=" + next,
		"unicode trickery": "/tool-executions?session_id=s&cursor=" + url.QueryEscape("\u202eeyJ2IjoxfQ"),
	}
	for name, u := range cases {
		t.Run(name, func(t *testing.T) {
			st, b := get(t, srv.URL+u)
			if st != http.StatusBadRequest || b.Error.Code != "invalid_cursor" || len(b.Data) != 0 {
				t.Errorf("%d %+v data %s, want 400 invalid_cursor", st, b.Error, b.Data)
			}
			if strings.Contains(b.Error.Message, "<script>") {
				t.Errorf("message echoes the cursor: %q", b.Error.Message)
			}
		})
	}
	st, b := get(t, srv.URL+"/tool-executions?session_id=s&offset=2&cursor="+next)
	if st != http.StatusBadRequest || b.Error.Code != "validation_error" {
		t.Errorf("cursor with offset: %d %+v", st, b.Error)
	}
}
