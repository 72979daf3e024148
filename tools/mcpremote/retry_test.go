package mcpremote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// waits records the backoffs the gateway waited, without waiting: the
// test's clock for retries.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// attemptsOf are the attempt events of an execution, decoded.
func attemptsOf(t *testing.T, r *rig, account, id string) []tools.Attempt {
	t.Helper()
	evs, err := r.exec.Journal().Store().Events(context.Background(), account, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []tools.Attempt
	for _, e := range evs {
		if e.Kind != journal.KindAttempt {
			continue
		}
		if e.State != journal.StateExecuting {
			t.Errorf("attempt event in state %s, want executing", e.State)
		}
		var a tools.Attempt
		if err := json.Unmarshal(e.Detail, &a); err != nil {
			t.Fatal(err)
		}
		a.DeadlineMS = 0 // the wall clock's
		out = append(out, a)
	}
	return out
}

// The seed's retry matrix (§6.9) at a real go-sdk server: a read the
// server refuses with 429 or 503 is sent again after a backoff (its
// Retry-After, else an exponential one) plus jitter, within the call's
// deadline; a write so refused is not. Every attempt is an event of the
// execution with its invocation id (also sent in _meta), and attempt_no
// is the attempt whose outcome the call has.
func TestRetriesOfARefusedReadAreEachInTheJournal(t *testing.T) {
	type fail struct {
		status     int
		retryAfter string
	}
	tests := []struct {
		name      string
		tool      string
		fails     []fail
		wantErr   string
		wantWaits []time.Duration
		want      []tools.Attempt // invocation ids filled in below
	}{
		{name: "503 once with Retry-After, then the answer", tool: "echo", fails: []fail{{503, "1"}},
			wantWaits: []time.Duration{time.Second + 37*time.Millisecond},
			want: []tools.Attempt{
				{No: 1, Outcome: tools.AttemptRetry, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503},
				{No: 2, Outcome: tools.AttemptOK, BackoffMS: 1037, JitterMS: 37, HTTPStatus: 200},
			}},
		{name: "429 twice without Retry-After: exponential backoff", tool: "echo", fails: []fail{{429, ""}, {429, ""}},
			wantWaits: []time.Duration{237 * time.Millisecond, 437 * time.Millisecond},
			want: []tools.Attempt{
				{No: 1, Outcome: tools.AttemptRetry, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 429},
				{No: 2, Outcome: tools.AttemptRetry, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 429, BackoffMS: 237, JitterMS: 37},
				{No: 3, Outcome: tools.AttemptOK, BackoffMS: 437, JitterMS: 37, HTTPStatus: 200},
			}},
		{name: "503 three times: the third attempt's failure is the call's", tool: "echo", fails: []fail{{503, ""}, {503, ""}, {503, ""}},
			wantErr: tools.CodeUpstreamUnavailable, wantWaits: []time.Duration{237 * time.Millisecond, 437 * time.Millisecond},
			want: []tools.Attempt{
				{No: 1, Outcome: tools.AttemptRetry, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503},
				{No: 2, Outcome: tools.AttemptRetry, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503, BackoffMS: 237, JitterMS: 37},
				{No: 3, Outcome: tools.AttemptFailed, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503, BackoffMS: 437, JitterMS: 37},
			}},
		{name: "Retry-After past the deadline: no retry", tool: "echo", fails: []fail{{503, "3600"}},
			wantErr: tools.CodeUpstreamUnavailable,
			want:    []tools.Attempt{{No: 1, Outcome: tools.AttemptFailed, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503}}},
		{name: "a write refused with 503 is not sent again", tool: "write", fails: []fail{{503, "0"}},
			wantErr: tools.CodeUpstreamUnavailable,
			want:    []tools.Attempt{{No: 1, Outcome: tools.AttemptFailed, Code: tools.CodeUpstreamUnavailable, HTTPStatus: 503}}},
		{name: "no failure: one attempt", tool: "echo",
			want: []tools.Attempt{{No: 1, Outcome: tools.AttemptOK, HTTPStatus: 200}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := startUpstream(t, false)
			w := &waits{}
			r := newRig(t, mcpremote.Options{Wait: w.wait, Jitter: func(upTo time.Duration) time.Duration {
				if upTo <= 0 {
					return 0
				}
				return 37 * time.Millisecond
			}})
			r.register("acct_a", "demo", up.url(), neverAsk) // retries, not approvals, are tested here
			r.runtime("acct_a")                              // listed: the session is open
			for _, f := range tt.fails {
				up.ts.FailNext(tt.tool, f.status, f.retryAfter)
			}
			args := `{"message":"hi"}`
			if tt.tool == "write" {
				args = `{"note":"n"}`
			}
			out := r.call("acct_a", "demo__"+tt.tool, args)
			if tt.wantErr != "" {
				wantCode(t, out, tt.wantErr)
			} else if out.IsError {
				t.Fatalf("call: %+v", out)
			}
			rec, err := r.exec.Journal().Store().Get(context.Background(), "acct_a", out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.AttemptNo != len(tt.want) {
				t.Errorf("attempt_no %d, want %d", rec.AttemptNo, len(tt.want))
			}
			got := attemptsOf(t, r, "acct_a", out.ExecutionID)
			for i := range tt.want {
				tt.want[i].InvocationID = fmt.Sprintf("%s.%d", out.ExecutionID, tt.want[i].No)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("attempts:\n got %+v\nwant %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("attempt %d:\n got %+v\nwant %+v", i+1, got[i], tt.want[i])
				}
			}
			if g := w.got(); len(g) != len(tt.wantWaits) || (len(g) > 0 && !equalDurations(g, tt.wantWaits)) {
				t.Errorf("waited %v, want %v", g, tt.wantWaits)
			}
			if n := up.ts.Refused(tt.tool); n != len(tt.fails) {
				t.Errorf("refused %d times, want %d", n, len(tt.fails))
			}
			// The attempt that reached the tool carried its invocation id.
			if tt.tool == "echo" && tt.wantErr == "" {
				metas := up.ts.Metas("echo")
				last := tt.want[len(tt.want)-1].InvocationID
				if len(metas) != 1 || metas[0][mcpremote.MetaInvocationID] != last {
					t.Errorf("_meta of the call that reached echo: %v, want %s = %s", metas, mcpremote.MetaInvocationID, last)
				}
			}
			if tt.tool == "write" && up.ts.Calls("write") != 0 {
				t.Errorf("the refused write reached the tool")
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
