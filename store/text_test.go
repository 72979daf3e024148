package store_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"toolhost/journal"
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
