package journaltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/journal"
)

// testFullResults: a kept result reads back byte for byte (a NUL, invalid
// UTF-8, a megabyte), only in its own account, and a second copy for the
// same execution changes nothing.
func testFullResults(t *testing.T, s journal.Store) {
	big := []byte(strings.Repeat("ab\x00\xff日本語\n", 1<<17)) // ~1.6 MB, hostile bytes
	cases := []journal.FullResult{
		{AccountID: "acct", ExecutionID: "exec-text", Text: big, TextBytes: int64(len(big)) + 10, Untrusted: true, CreatedAt: base},
		{AccountID: "acct", ExecutionID: "exec-json", Structured: json.RawMessage(`{"s":"\u0000 </untrusted-data>"}`), StructuredBytes: 33, CreatedAt: base},
		{AccountID: "acct", ExecutionID: "exec-both", Text: []byte("t"), TextBytes: 1, Structured: json.RawMessage(`[1]`), StructuredBytes: 3, CreatedAt: base},
	}
	for _, r := range cases {
		if err := s.PutResult(ctx(t), r); err != nil {
			t.Fatalf("PutResult %s: %v", r.ExecutionID, err)
		}
	}
	for _, want := range cases {
		got, err := s.GetResult(ctx(t), "acct", want.ExecutionID)
		if err != nil {
			t.Fatalf("GetResult %s: %v", want.ExecutionID, err)
		}
		if !bytes.Equal(got.Text, want.Text) || !bytes.Equal(got.Structured, want.Structured) {
			t.Errorf("%s: the bytes changed (text %d → %d, structured %q → %q)", want.ExecutionID, len(want.Text), len(got.Text), want.Structured, got.Structured)
		}
		if (got.Structured == nil) != (want.Structured == nil) {
			t.Errorf("%s: structured nil %v, want nil %v", want.ExecutionID, got.Structured == nil, want.Structured == nil)
		}
		if got.TextBytes != want.TextBytes || got.StructuredBytes != want.StructuredBytes || got.Untrusted != want.Untrusted ||
			!got.CreatedAt.Equal(want.CreatedAt) || got.AccountID != "acct" || got.ExecutionID != want.ExecutionID {
			t.Errorf("%s: got %+v", want.ExecutionID, struct {
				TB, SB int64
				U      bool
			}{got.TextBytes, got.StructuredBytes, got.Untrusted})
		}
	}
	if got, _ := s.GetResult(ctx(t), "acct", "exec-text"); got.TextComplete() {
		t.Error("a copy shorter than what the tool produced says it is complete")
	}
	// Another account's id, and an id nobody kept, are not found alike.
	for _, q := range [][2]string{{"other", "exec-text"}, {"acct", "exec-none"}, {"", "exec-text"}} {
		if _, err := s.GetResult(ctx(t), q[0], q[1]); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("GetResult(%q, %q): %v, want ErrNotFound", q[0], q[1], err)
		}
	}
	// The first copy stays: a second put, even for another account, does
	// not replace it nor move it.
	if err := s.PutResult(ctx(t), journal.FullResult{AccountID: "other", ExecutionID: "exec-json", Text: []byte("x"), TextBytes: 1, CreatedAt: base}); err != nil {
		t.Fatalf("second PutResult: %v", err)
	}
	if got, err := s.GetResult(ctx(t), "acct", "exec-json"); err != nil || string(got.Structured) != string(cases[1].Structured) {
		t.Errorf("after a second put: %q, %v", got.Structured, err)
	}
	if _, err := s.GetResult(ctx(t), "other", "exec-json"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a second put moved the copy to another account: %v", err)
	}
}
