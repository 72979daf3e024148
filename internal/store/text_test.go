package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/journal"
)

// textRecord is a finished record of a failed remote call whose texts
// are text, and whose raw arguments hold a NUL and invalid UTF-8.
func textRecord(id, text string, at time.Time) journal.Record {
	return journal.Record{
		ID: id, AccountID: "acct", SessionID: "sess", CallID: "call-" + id, Face: "mcp", ProviderType: "mcp",
		ToolName: "demo__echo", ArgsRaw: []byte("{\"m\":\"\x00\xff\"}"), Args: json.RawMessage(`{"m":"\u0000"}`),
		Status: journal.StatusError, Lifecycle: journal.Finished, Commit: journal.CommitDiscarded, State: journal.StateObserved,
		Result: json.RawMessage(`{"error":{"code":"upstream_error","message":"a\u0000b"}}`), ResultText: text,
		ErrorCode: "upstream_error", ErrorMessage: text, Summary: text, DeliveryMode: "inline", AttemptNo: 1,
		InstanceID: "inst-a", StartedAt: at, CreatedAt: at, FinishedAt: at,
	}
}

// A text PostgreSQL refuses (a NUL, invalid UTF-8: a remote tool's answer,
// a refused call's raw arguments) costs neither its record nor the records
// written with it in one batch: each such character is stored as U+FFFD,
// on SQLite the same, and the raw arguments (bytes) exactly.
func TestJournalKeepsTextsPostgreSQLRefuses(t *testing.T) {
	stores := map[string]func(testing.TB) journal.Store{"sqlite": func(t testing.TB) journal.Store { return OpenSQLite(t) }}
	if os.Getenv("TOOLHOST_TEST_POSTGRES") != "" {
		stores["postgres"] = func(t testing.TB) journal.Store { return OpenPostgres(t) }
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			at := time.UnixMilli(time.Now().UnixMilli()).UTC()
			hostile := textRecord("exec_hostile", "Echo: a\x00b \xff", at)
			plain := textRecord("exec_plain", "Echo: ab", at)
			if err := s.Write(ctx, []journal.Write{{Insert: true, Record: hostile}, {Insert: true, Record: plain}}); err != nil {
				t.Fatalf("a batch with a NUL was refused: %v", err)
			}
			// An update carries the texts too.
			hostile.ResultText = "again \x00"
			if err := s.Write(ctx, []journal.Write{{Record: hostile}}); err != nil {
				t.Fatalf("an update with a NUL was refused: %v", err)
			}
			for id, want := range map[string]string{"exec_hostile": "again \uFFFD", "exec_plain": "Echo: ab"} {
				got, err := s.Get(ctx, "acct", id)
				if err != nil {
					t.Fatalf("%s lost: %v", id, err)
				}
				if got.ResultText != want {
					t.Errorf("%s result_text %q, want %q", id, got.ResultText, want)
				}
			}
			got, _ := s.Get(ctx, "acct", "exec_hostile")
			if got.ErrorMessage != "Echo: a\uFFFDb \uFFFD" || got.Summary != got.ErrorMessage || string(got.ArgsRaw) != "{\"m\":\"\x00\xff\"}" {
				t.Errorf("error %q, summary %q, args_raw %q", got.ErrorMessage, got.Summary, got.ArgsRaw)
			}
		})
	}
}

// An event detail that is no JSON, or JSON with a NUL or invalid UTF-8,
// costs neither its record nor the batch: the events column is made
// storable like the others, and a detail that is no JSON is kept as a
// JSON string of its text. Every event reads back.
func TestJournalKeepsEventDetailsPostgreSQLRefuses(t *testing.T) {
	details := []string{
		"{\"m\":\"\xff\xfe\"}",           // valid JSON to encoding/json, invalid UTF-8
		"{\"m\":\"a\x00b\"}",             // a raw NUL: no JSON
		"{\n\"m\": [1,\n2]}",             // newlines: compacted
		"not json \x00\xff",              // no JSON at all
		`{"m":"\u0000\ud800\uffff"}`,     // escapes PostgreSQL TEXT holds
		strings.Repeat("[", 20000) + "1", // deeper than encoding/json reads
	}
	stores := map[string]func(testing.TB) journal.Store{"sqlite": func(t testing.TB) journal.Store { return OpenSQLite(t) }}
	if os.Getenv("TOOLHOST_TEST_POSTGRES") != "" {
		stores["postgres"] = func(t testing.TB) journal.Store { return OpenPostgres(t) }
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			at := time.UnixMilli(time.Now().UnixMilli()).UTC()
			var evs []journal.Event
			for i, d := range details {
				evs = append(evs, journal.Event{Seq: i, State: journal.StateProposed, At: at, Detail: json.RawMessage(d)})
			}
			hostile, plain := textRecord("exec_events", "x", at), textRecord("exec_plain", "y", at)
			if err := s.Write(ctx, []journal.Write{{Insert: true, Record: hostile, Events: evs[:3]}, {Insert: true, Record: plain}}); err != nil {
				t.Fatalf("a batch with hostile event details was refused: %v", err)
			}
			if err := s.Write(ctx, []journal.Write{{Record: hostile, Events: evs[3:]}}); err != nil {
				t.Fatalf("an update with hostile event details was refused: %v", err)
			}
			got, err := s.Events(ctx, "acct", "exec_events")
			if err != nil || len(got) != len(details) {
				t.Fatalf("%d events, %v", len(got), err)
			}
			for i, e := range got {
				if !json.Valid(e.Detail) || !utf8.Valid(e.Detail) || bytes.IndexByte(e.Detail, 0) >= 0 {
					t.Errorf("event %d detail %.80q", i, e.Detail)
				}
			}
			if _, err := s.Get(ctx, "acct", "exec_plain"); err != nil {
				t.Errorf("the batch's other record: %v", err)
			}
		})
	}
}
