package admin_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
)

// oldStr and oldMillis are the nullable helpers of the maps the journal
// shapes replaced.
func oldStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func oldMillis(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func oldArgs(r journal.Record) any {
	if len(r.Args) > 0 {
		return r.Args
	}
	if json.Valid(r.ArgsRaw) {
		return json.RawMessage(r.ArgsRaw)
	}
	return string(r.ArgsRaw)
}

func oldResult(r journal.Record) any {
	switch {
	case r.Lifecycle != journal.Finished:
		return nil
	case r.Status == journal.StatusSuccess:
		var data any = r.Result
		if len(r.Result) == 0 {
			data = nil
		}
		return map[string]any{"data": data}
	case len(r.Result) > 0:
		return r.Result
	}
	return nil
}

// wireRecords are a full record, an open one with unparsable raw
// arguments and hostile text, and a failed one.
func wireRecords() []journal.Record {
	at := time.UnixMilli(1_735_689_600_000)
	return []journal.Record{
		{ID: "ex_1", AccountID: "acct", KeyID: "key_1", SessionID: "s1", FloorID: "f1", PageID: "p1", RunID: "run_1", Round: 2,
			CallID: "call_1", CallerSlot: "narrator", Face: "mcp", ProviderID: "toolhost", ProviderType: "builtin",
			ToolName: "get_time", ToolVersion: "1.0.0", Args: json.RawMessage(`{"tz":"UTC"}`), ArgsRaw: []byte(`{"tz": "UTC"}`),
			ArgsDigest: "sha256:ab", IdempotencyKey: "idem", TraceID: "0af7651916cd43dd8448eb211c80319c",
			Status: journal.StatusSuccess, Lifecycle: journal.Finished, Commit: journal.CommitCommitted, State: journal.StateCommitted,
			SideEffectLevel: "none", Result: json.RawMessage(`{"now": "2025-01-01T00:00:00Z"}`), Summary: "ok", Units: 1.5,
			Truncated: true, Duration: 1500 * time.Millisecond, StartedAt: at, FinishedAt: at.Add(time.Second), CreatedAt: at,
			DeliveryMode: "inline", AttemptNo: 1, RuntimeJobID: "job", ReplayParentID: "ex_0", Seq: 7},
		{ID: "ex_2", AccountID: "local", ToolName: "x", ArgsRaw: []byte("{\"a\":1,\"a\":<script>\u2028"),
			Status: journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting,
			StartedAt: at, CreatedAt: at, DeliveryMode: "inline", AttemptNo: 1},
		{ID: "ex_3", AccountID: "local", ToolName: "x", ArgsRaw: []byte(`{}`), Status: journal.StatusError,
			Lifecycle: journal.Finished, Commit: journal.CommitDiscarded, ErrorCode: "invalid_arguments", ErrorMessage: "bad <&>",
			Result: json.RawMessage(`{"error":{"code":"invalid_arguments"}}`), StartedAt: at, FinishedAt: at, CreatedAt: at},
	}
}

// The typed journal shapes write the bytes of the maps they replaced.
func TestJournalWireBytesUnchanged(t *testing.T) {
	for _, r := range wireRecords() {
		old, _ := json.Marshal(map[string]any{
			"id": r.ID, "run_id": oldStr(r.RunID), "floor_id": oldStr(r.FloorID), "page_id": oldStr(r.PageID),
			"session_id": oldStr(r.SessionID), "caller_slot": oldStr(r.CallerSlot), "provider_id": r.ProviderID,
			"provider_type": r.ProviderType, "tool_name": r.ToolName, "tool_version": r.ToolVersion,
			"args": oldArgs(r), "result": oldResult(r), "status": r.Status, "lifecycle_state": r.Lifecycle,
			"commit_outcome": r.Commit, "side_effect_level": oldStr(r.SideEffectLevel),
			"error_message": oldStr(r.ErrorMessage), "duration_ms": r.Duration.Milliseconds(),
			"started_at": oldMillis(r.StartedAt), "finished_at": oldMillis(r.FinishedAt),
			"delivery_mode": r.DeliveryMode, "attempt_no": r.AttemptNo, "runtime_job_id": oldStr(r.RuntimeJobID),
			"replay_parent_execution_id": oldStr(r.ReplayParentID), "created_at": oldMillis(r.CreatedAt),

			"face": oldStr(r.Face), "account_id": r.AccountID, "key_id": oldStr(r.KeyID), "round": r.Round, "call_id": oldStr(r.CallID),
			"args_raw": string(r.ArgsRaw), "args_digest": oldStr(r.ArgsDigest), "idempotency_key": oldStr(r.IdempotencyKey),
			"trace_id": oldStr(r.TraceID), "state": r.State, "error_code": oldStr(r.ErrorCode), "summary": r.Summary,
			"units": r.Units, "truncated": r.Truncated, "result_visibility": "immediate",
		})
		got, err := json.Marshal(admin.Execution(r))
		if err != nil || string(got) != string(old) {
			t.Errorf("execution %s: %v\n got %s\nwant %s", r.ID, err, got, old)
		}

		old, _ = json.Marshal(map[string]any{
			"id": r.ID, "page_id": oldStr(r.PageID), "seq": r.Seq, "caller_slot": oldStr(r.CallerSlot),
			"tool_name": r.ToolName, "args": oldArgs(r), "result": oldResult(r), "status": r.Status.Legacy(),
			"duration_ms": r.Duration.Milliseconds(), "created_at": oldMillis(r.CreatedAt),
		})
		got, err = json.Marshal(admin.CallRecord(r))
		if err != nil || string(got) != string(old) {
			t.Errorf("call record %s: %v\n got %s\nwant %s", r.ID, err, got, old)
		}
	}
	at := time.UnixMilli(1_735_689_600_123)
	for _, e := range []journal.Event{
		{Seq: 1, State: journal.StateProposed, At: at, Detail: json.RawMessage(`{"tool": "get_time"}`)},
		{Seq: 2, State: journal.StateParsed, At: at},
	} {
		var detail any
		if len(e.Detail) > 0 {
			detail = e.Detail
		}
		old, _ := json.Marshal(map[string]any{"seq": e.Seq, "state": e.State, "at": e.At.UnixMilli(), "detail": detail})
		got, err := json.Marshal(admin.Event(e))
		if err != nil || string(got) != string(old) {
			t.Errorf("event %d: %v\n got %s\nwant %s", e.Seq, err, got, old)
		}
	}
}
