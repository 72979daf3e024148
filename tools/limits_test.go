package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/journal"
)

// hugeArgs is a 3.5 MB argument object of 300 000 unknown properties.
func hugeArgs() json.RawMessage {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 300000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":1`, i)
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

func record(t *testing.T, e *Executor, account, id string) journal.Record {
	t.Helper()
	r, err := e.Journal().Store().Get(context.Background(), account, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An error quotes a bounded part of its input: 300 000 unknown properties
// give a short message, a short journal row and a short result.
func TestErrorsAndJournalRowsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a hostile input of 300,000 unknown properties, seconds; runs in make test")
	}
	p := &probe{name: "probe", run: echo}
	e, err := NewExecutor(Options{}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: hugeArgs()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Code != CodeInvalidArgs || len(out.Message) > 3000 || len(out.Text) > 3000 || len(out.Structured) > 4000 {
		t.Fatalf("code %s, message %d bytes, text %d, structured %d", out.Code, len(out.Message), len(out.Text), len(out.Structured))
	}
	r := record(t, e, LocalAccount, out.ExecutionID)
	size := len(r.ArgsRaw) + len(r.Args) + len(r.Result) + len(r.ResultText) + len(r.ErrorMessage)
	if size > 80<<10 {
		t.Fatalf("journal row holds %d bytes", size)
	}
	out, _ = e.Execute(context.Background(), Proposal{Tool: strings.Repeat("t", 1<<20), Args: json.RawMessage(`{}`)})
	if out.Code != CodeUnknownTool || len(out.Message) > 3000 {
		t.Fatalf("unknown 1 MB tool name: %s, %d bytes", out.Code, len(out.Message))
	}
}

func TestIdempotencyKeyIsBounded(t *testing.T) {
	p := &probe{name: "probe", run: echo}
	e, err := NewExecutor(Options{}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), IdempotencyKey: strings.Repeat("k", 256)})
	if out.Code != CodeInvalidIdempotencyKey || p.calls.Load() != 0 {
		t.Fatalf("256-byte key: code %q, %d calls", out.Code, p.calls.Load())
	}
}

// A key is printable text: one with a control character (a NUL, which
// PostgreSQL cannot store) or invalid UTF-8 is refused before anything
// runs, not stored mended (two keys would become one); any other
// character, U+FFFD written as such included, is a key.
func TestIdempotencyKeyIsText(t *testing.T) {
	tests := []struct {
		key string
		bad int
	}{
		{"order-17", -1},
		{"clé 🔑 \uFFFD\uFFFF", -1},
		{"k\x00", 1},
		{"\tk", 0},
		{"k\x7f", 1},
		{"ké\xff", 3},
		{"k\xed\xa0\x80", 1}, // a surrogate, as CESU-8
		{"k\xc3", 1},         // cut short
	}
	for _, tc := range tests {
		if got := badKeyByte(tc.key); got != tc.bad {
			t.Errorf("badKeyByte(%q) = %d, want %d", tc.key, got, tc.bad)
		}
		p := &probe{name: "probe", run: echo}
		e, err := NewExecutor(Options{}, p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), IdempotencyKey: tc.key})
		if err != nil {
			t.Fatal(err)
		}
		refused := out.Code == CodeInvalidIdempotencyKey && p.calls.Load() == 0
		if refused != (tc.bad >= 0) {
			t.Errorf("key %q: code %q, %d calls", tc.key, out.Code, p.calls.Load())
		}
	}
}
