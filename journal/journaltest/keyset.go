package journaltest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
)

// keysetRecords writes n records of acct: started in groups of three at
// the same millisecond (ties broken by id), every fourth still open, the
// tools alternating.
func keysetRecords(t *testing.T, s journal.Store, acct, prefix string, from, n int) []string {
	t.Helper()
	var ws []journal.Write
	var out []string
	for i := from; i < from+n; i++ {
		r := rec(fmt.Sprintf("%s%03d", prefix, i), base.Add(time.Duration(i)*time.Second))
		r.AccountID = acct
		r.StartedAt = base.Add(time.Duration(i/3) * time.Second)
		r.ToolName = []string{"get_time", "roll_dice"}[i%2]
		if i%4 != 0 {
			r = finished(r, journal.StatusSuccess, time.Duration(i%5)*time.Second)
		}
		ws = append(ws, journal.Write{Insert: true, Record: r})
		out = append(out, r.ID)
	}
	mustWrite(t, s, ws...)
	return out
}

func testKeysetPages(t *testing.T, s journal.Store) {
	keysetRecords(t, s, "acct", "k", 0, 23)
	keysetRecords(t, s, "other", "o", 0, 7)
	orders := []struct {
		sort string
		asc  bool
	}{
		{journal.SortStartedAt, false}, {journal.SortStartedAt, true}, {journal.SortCreatedAt, false},
		{journal.SortCreatedAt, true}, {journal.SortFinishedAt, false}, {journal.SortFinishedAt, true},
	}
	added := 0
	for _, o := range orders {
		t.Run(fmt.Sprintf("%s asc=%v", o.sort, o.asc), func(t *testing.T) {
			q := journal.Query{AccountID: "acct", SortBy: o.sort, Asc: o.asc, Limit: 4, NoTotal: true, NoSeq: true}
			want, _, err := s.List(ctx(t), journal.Query{AccountID: "acct", SortBy: o.sort, Asc: o.asc})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			var pages [][]string
			cursor := ""
			for range 1000 {
				pg, err := journal.ListPage(ctx(t), s, q, cursor)
				if err != nil {
					t.Fatalf("page %d: %v", len(pages), err)
				}
				if pg.Total != -1 {
					t.Errorf("NoTotal: total %d, want -1", pg.Total)
				}
				for _, r := range pg.Records {
					seen[r.ID]++
					if r.AccountID != "acct" {
						t.Fatalf("record %s of account %s on acct's page", r.ID, r.AccountID)
					}
				}
				pages = append(pages, ids(pg.Records))
				// Calls keep coming while the pages are read: two more
				// between each of the first pages, every sort key among them.
				if len(pages) <= 6 {
					keysetRecords(t, s, "acct", "n", 100+added, 2)
					added += 2
				}
				if pg.Next == "" {
					break
				}
				cursor = pg.Next
			}
			for _, id := range ids(want) {
				if seen[id] != 1 {
					t.Errorf("record %s seen %d times, want once", id, seen[id])
				}
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("record %s seen %d times", id, n)
				}
			}
			// The pages of the records there before, read without writes
			// in between, are the full listing in order.
			var flat []string
			for _, p := range pages {
				flat = append(flat, slices.DeleteFunc(slices.Clone(p), func(id string) bool { return !slices.Contains(ids(want), id) })...)
			}
			if got, w := flat, ids(want); !slices.Equal(got, w) {
				t.Errorf("pages in order:\n got %v\nwant %v", got, w)
			}
		})
	}
}

func testKeysetBackAndForth(t *testing.T, s journal.Store) {
	keysetRecords(t, s, "acct", "k", 0, 10)
	q := journal.Query{AccountID: "acct", ToolName: "roll_dice", Limit: 2, NoTotal: true, NoSeq: true}
	var fwd [][]string
	var pgs []journal.Page
	cursor := ""
	for {
		pg, err := journal.ListPage(ctx(t), s, q, cursor)
		if err != nil {
			t.Fatal(err)
		}
		fwd, pgs = append(fwd, ids(pg.Records)), append(pgs, pg)
		if pg.Next == "" {
			break
		}
		cursor = pg.Next
	}
	if len(fwd) != 3 || pgs[0].Prev != "" {
		t.Fatalf("five roll_dice records by two: pages %v, first Prev %q", fwd, pgs[0].Prev)
	}
	// Newer, from the last page back to the first.
	for i := len(pgs) - 1; i > 0; i-- {
		pg, err := journal.ListPage(ctx(t), s, q, pgs[i].Prev)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(pg.Records), fwd[i-1]) {
			t.Errorf("page before %d: %v, want %v", i, ids(pg.Records), fwd[i-1])
		}
		if (pg.Prev == "") != (i-1 == 0) || pg.Next == "" {
			t.Errorf("page %d read backwards: Prev %q Next %q", i-1, pg.Prev, pg.Next)
		}
	}
}

func testKeysetRefusesBadCursors(t *testing.T, s journal.Store) {
	keysetRecords(t, s, "acct", "k", 0, 6)
	keysetRecords(t, s, "other", "o", 0, 6)
	q := journal.Query{AccountID: "acct", Limit: 2, NoTotal: true, NoSeq: true}
	pg, err := journal.ListPage(ctx(t), s, q, "")
	if err != nil || pg.Next == "" {
		t.Fatalf("first page: %v %+v", err, pg)
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	raw, _ := base64.RawURLEncoding.DecodeString(pg.Next)
	tamper := func(from, to string) string { return b64(strings.Replace(string(raw), from, to, 1)) }
	other := q
	other.AccountID = "other"
	filtered := q
	filtered.ToolName = "get_time"
	cases := []struct {
		name   string
		q      journal.Query
		cursor string
	}{
		{"not base64", q, "%%%not-base64%%%"},
		{"base64 of nothing useful", q, b64("hello")},
		{"huge", q, strings.Repeat("A", journal.MaxCursorLen+1)},
		{"deeply nested JSON", q, b64(strings.Repeat("[", 300))},
		{"another version", q, tamper(`"v":1`, `"v":2`)},
		{"markup in the id", q, tamper(`"i":"`, `"i":"<script>\u0000`)},
		{"negative time", q, tamper(`"t":`, `"t":-`)},
		{"binding changed", q, tamper(`"q":"`, `"q":"x`)},
		{"another account's query", other, pg.Next},
		{"another filter's query", filtered, pg.Next},
		{"another order", journal.Query{AccountID: "acct", Asc: true, Limit: 2}, pg.Next},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := journal.ListPage(ctx(t), s, tc.q, tc.cursor)
			if !errors.Is(err, journal.ErrInvalidCursor) {
				t.Errorf("ListPage: %v (records %v), want ErrInvalidCursor", err, ids(got.Records))
			}
			if len(got.Records) != 0 {
				t.Errorf("refused cursor still read %v", ids(got.Records))
			}
		})
	}
}

// testKeysetPositionIsNoKey: a position is only a place in the order; a
// query naming another account's record's place reads its own account.
func testKeysetPositionIsNoKey(t *testing.T, s journal.Store) {
	mine := keysetRecords(t, s, "acct", "k", 0, 6)
	keysetRecords(t, s, "other", "o", 0, 6)
	got, _, err := s.List(ctx(t), journal.Query{AccountID: "other", Limit: 50, NoSeq: true,
		After: &journal.Position{At: base.Add(time.Hour).UnixMilli(), ID: mine[0]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.AccountID != "other" {
			t.Errorf("record %s of %s read by other", r.ID, r.AccountID)
		}
	}
	if len(got) != 6 {
		t.Errorf("other's records after a later position: %v, want all six", ids(got))
	}
}
