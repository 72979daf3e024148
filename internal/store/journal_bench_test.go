package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
)

// BenchmarkJournalWrite measures the store side of the journal alone: one
// op is one call's two writes (the opened record, then its outcome), made
// durable in transactions of `batch` calls each, as the group-commit writer
// issues them under load. The record is shaped like a get_time call's.
//
//	go test -run '^$' -bench JournalWrite -benchtime 2000x ./store/
func BenchmarkJournalWrite(b *testing.B) {
	for _, be := range benchBackends() {
		for _, batch := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/batch=%d", be.name, batch), func(b *testing.B) {
				db := be.open(b)
				ctx := context.Background()
				session := uuid.NewString()
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					n := min(batch, b.N-i)
					opens := make([]journal.Write, n)
					for k := range opens {
						opens[k] = benchOpen(session)
					}
					if err := db.Write(ctx, opens); err != nil {
						b.Fatal(err)
					}
					fins := make([]journal.Write, n)
					for k, o := range opens {
						fins[k] = benchFinish(o.Record)
					}
					if err := db.Write(ctx, fins); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchBackend is a store the benchmarks run on.
type benchBackend struct {
	name string
	open func(b *testing.B) *store.DB
}

// benchBackends is SQLite, and PostgreSQL when TOOLHOST_TEST_POSTGRES is set.
func benchBackends() []benchBackend {
	backends := []benchBackend{{"sqlite", func(b *testing.B) *store.DB { return OpenSQLite(b) }}}
	if os.Getenv("TOOLHOST_TEST_POSTGRES") != "" {
		backends = append(backends, benchBackend{"postgres", func(b *testing.B) *store.DB { return OpenPostgres(b) }})
	}
	return backends
}

func benchOpen(session string) journal.Write {
	now := time.Now()
	id := uuid.Must(uuid.NewV7()).String()
	r := journal.Record{
		ID: id, AccountID: "local", SessionID: session, FloorID: benchID(), CallID: benchID(),
		Face: "mcp", ProviderID: "toolhost", ProviderType: "builtin", ToolName: "get_time", ToolVersion: "1.0.0",
		SideEffectLevel: "none", ArgsRaw: []byte(`{}`), Args: json.RawMessage(`{"timezone":"UTC"}`),
		ArgsDigest: "4f1c2e0c9d3f6a8b0e7d5c3b1a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f",
		Status:     journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending,
		State: journal.StateExecuting, DeliveryMode: "inline", AttemptNo: 1, InstanceID: "bench",
		StartedAt: now, CreatedAt: now,
	}
	evs := []journal.Event{
		{Seq: 0, State: journal.StateProposed, At: now, Detail: json.RawMessage(`{"args_bytes":2,"call_id":"` + r.CallID + `","tool":"get_time"}`)},
		{Seq: 1, State: journal.StateParsed, At: now, Detail: json.RawMessage(`{"bytes":2,"parser":"strict-json"}`)},
		{Seq: 2, State: journal.StateValidated, At: now, Detail: json.RawMessage(`{"args_digest":"` + r.ArgsDigest + `","dialect":"https://json-schema.org/draft/2020-12/schema","format_assertion":true,"reference_clock":"2026-12-02T17:21:43.123456789Z","time_zone":"UTC","validator":"github.com/santhosh-tekuri/jsonschema/v6"}`)},
		{Seq: 3, State: journal.StateAuthorized, At: now, Detail: json.RawMessage(`{"account_id":"local","key_id":"","scopes":null}`)},
		{Seq: 4, State: journal.StateExecuting, At: now, Detail: json.RawMessage(`{"attempt":1,"deadline":"2026-12-02T17:22:43.123456789Z","timeout_ms":60000}`)},
	}
	return journal.Write{Insert: true, Record: r, Events: evs}
}

func benchFinish(r journal.Record) journal.Write {
	now := time.Now()
	r.Status, r.Lifecycle, r.Commit, r.State = journal.StatusSuccess, journal.Finished, journal.CommitCommitted, journal.StateObserved
	r.Result = json.RawMessage(`{"time":"2026-12-02T17:21:43Z","unix":1796232103,"timezone":"UTC","abbreviation":"UTC","utc_offset":"+00:00","utc_offset_seconds":0}`)
	r.ResultText = "2026-12-02T17:21:43Z (UTC, UTC+00:00, unix 1796232103)"
	r.FinishedAt = now
	r.Duration = now.Sub(r.StartedAt)
	evs := []journal.Event{{Seq: 5, State: journal.StateObserved, At: now, Detail: json.RawMessage(`{"result_bytes":56,"status":"success","truncated":false}`)}}
	return journal.Write{Record: r, Events: evs}
}

// BenchmarkJournalApply measures what the spool costs the store under
// load: one op is one finished call applied as a single upsert (its opened
// record merged with its outcome, as a spool round merges them), in rounds
// of `round` calls per transaction. Under 8 clients a 200 ms apply interval
// gathers about a thousand calls per round. The CPU per call is the whole
// process's (this benchmark is all store work); PostgreSQL's own CPU is not
// in it.
//
//	go test -run '^$' -bench JournalApply -benchtime 20000x ./store/
func BenchmarkJournalApply(b *testing.B) {
	for _, be := range benchBackends() {
		for _, round := range []int{64, 1024} {
			b.Run(fmt.Sprintf("%s/round=%d", be.name, round), func(b *testing.B) {
				db := be.open(b)
				ctx := context.Background()
				sessions := make([]string, 8)
				for i := range sessions {
					sessions[i] = uuid.NewString()
				}
				ws := make([]journal.Write, 0, round)
				cpu0 := processCPU(b)
				b.ResetTimer()
				for i := 0; i < b.N; i += round {
					ws = ws[:0]
					for k := 0; k < min(round, b.N-i); k++ {
						o := benchOpen(sessions[(i+k)%len(sessions)])
						f := benchFinish(o.Record)
						f.Insert = true
						f.Events = append(o.Events, f.Events...)
						ws = append(ws, f)
					}
					if _, err := db.Apply(ctx, ws); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/call")
			})
		}
	}
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchID is a time-ordered id, as the journal's execution and call ids are.
func benchID() string { return uuid.Must(uuid.NewV7()).String() }
