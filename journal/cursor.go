package journal

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidCursor is returned by ListPage for a cursor that does not
// decode, or that another query (other filters, sort or account) made.
var ErrInvalidCursor = errors.New("journal: invalid cursor")

// MaxCursorLen bounds a cursor's text: a longer one is refused unread.
const MaxCursorLen = 512

// maxCursorID bounds the record id a cursor carries.
const maxCursorID = 200

// Position is a place in a query's order: the sort key of one record.
// Open marks a record without a finish time (SortFinishedAt puts those
// last in either direction); At is the sort column in Unix milliseconds.
type Position struct {
	Open bool
	At   int64
	ID   string
}

// positionOf is r's place in q's order.
func positionOf(q Query, r Record) Position {
	t := r.StartedAt
	switch q.SortBy {
	case SortCreatedAt:
		t = r.CreatedAt
	case SortFinishedAt:
		if r.FinishedAt.IsZero() {
			return Position{Open: true, ID: r.ID}
		}
		t = r.FinishedAt
	}
	return Position{At: t.UnixMilli(), ID: r.ID}
}

// follows reports whether r comes strictly after q.After in q's order
// (true when q.After is nil): the in-memory form of the stores' keyset
// condition.
func (q Query) follows(r Record) bool {
	if q.After == nil {
		return true
	}
	a, p := *q.After, positionOf(q, r)
	if a.Open != p.Open {
		return p.Open // open records come last either way
	}
	cmp := 0
	switch {
	case p.At < a.At:
		cmp = -1
	case p.At > a.At:
		cmp = 1
	case p.ID < a.ID:
		cmp = -1
	case p.ID > a.ID:
		cmp = 1
	}
	if q.Asc {
		return cmp > 0
	}
	return cmp < 0
}

// cursor is the wire form of a cursor, base64url of its JSON. It is a
// position, not a credential: a client may write any position of its own
// query, which reads nothing a filter could not. Query binds it to the
// query that made it, so a cursor handed to another query (another
// account's, other filters, another order) is refused, not misread.
type cursor struct {
	V     int    `json:"v"`
	Query string `json:"q"`
	Back  bool   `json:"b,omitempty"` // the page before the position
	Open  bool   `json:"o,omitempty"`
	At    int64  `json:"t"`
	ID    string `json:"i"`
}

// binding is a digest of what the query selects and how it orders:
// everything but its paging.
func binding(q Query) string {
	q.Limit, q.Offset, q.After, q.NoTotal, q.NoSeq = 0, 0, nil, false, false
	b, _ := json.Marshal(q) // a struct of strings, bools and ints always encodes
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

func encodeCursor(q Query, p Position, back bool) string {
	b, _ := json.Marshal(cursor{V: 1, Query: binding(q), Back: back, Open: p.Open, At: p.At, ID: p.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads s as a cursor of q.
func decodeCursor(q Query, s string) (Position, bool, error) {
	bad := func(why string) (Position, bool, error) {
		return Position{}, false, fmt.Errorf("%w: %s", ErrInvalidCursor, why)
	}
	if len(s) > MaxCursorLen {
		return bad(fmt.Sprintf("longer than %d characters", MaxCursorLen))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not a cursor this server wrote")
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.V != 1 {
		return bad("not a cursor this server wrote")
	}
	if c.Query != binding(q) {
		return bad("made by another query (other filters, sort, order or account); start again without a cursor")
	}
	if c.ID == "" || len(c.ID) > maxCursorID || !utf8.ValidString(c.ID) ||
		slices.ContainsFunc([]rune(c.ID), func(r rune) bool { return !unicode.IsPrint(r) }) || c.At < 0 || (c.Open && c.At != 0) {
		return bad("its position is not one a record can have")
	}
	return Position{Open: c.Open, At: c.At, ID: c.ID}, c.Back, nil
}

// Page is one page of a keyset listing.
type Page struct {
	Records []Record
	// Total counts every match; -1 when the query says NoTotal.
	Total int
	// Next and Prev are the cursors of the pages after and before this
	// one in the query's order; empty at either end.
	Next, Prev string
}

// ListPage reads the page of q that cursor names (empty: the first) by
// keyset, q.Limit records long (at least 1), whatever was written since
// the cursor was made: every record is on exactly one page, and records
// written after the first page was read appear at the start of the order,
// not as repeats. A cursor that does not decode, or was made by another
// query, is ErrInvalidCursor. SortSeq is not offered.
func ListPage(ctx context.Context, s Store, q Query, cursorText string) (Page, error) {
	if q.SortBy == SortSeq {
		return Page{}, errors.New("journal: keyset pages do not sort by seq")
	}
	limit := max(q.Limit, 1)
	base := q
	qq := q
	qq.Limit, qq.Offset = limit+1, 0
	back := false
	if cursorText != "" {
		p, b, err := decodeCursor(q, cursorText)
		if err != nil {
			return Page{}, err
		}
		qq.After, back = &p, b
		if back {
			qq.Asc = !qq.Asc
		}
	}
	recs, total, err := s.List(ctx, qq)
	if err != nil {
		return Page{}, err
	}
	more := len(recs) > limit
	if more {
		recs = recs[:limit]
	}
	pg := Page{Records: recs, Total: total}
	if back {
		slices.Reverse(recs)
	}
	if len(recs) == 0 {
		return pg, nil
	}
	first, last := positionOf(base, recs[0]), positionOf(base, recs[len(recs)-1])
	if more || back {
		pg.Next = encodeCursor(base, last, false)
	}
	if (back && more) || (!back && cursorText != "") {
		pg.Prev = encodeCursor(base, first, true)
	}
	return pg, nil
}

// CursorAfter is the cursor of the page of q that follows r (a record q
// listed): how an offset page hands a client over to keyset paging.
func CursorAfter(q Query, r Record) string {
	return encodeCursor(q, positionOf(q, r), false)
}
