package runcode

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// TestWaitingForARunSlotIsQueuedInTheJournal: an inline call that waits
// for a free run slot reads queued in the journal while it waits and
// running once it has the slot, on every store, with and without the
// spool (where its opened record may not have reached the store yet).
func TestWaitingForARunSlotIsQueuedInTheJournal(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{Concurrency: 1, QueueLength: 2, PythonPool: -1, JavaScriptPool: 2})
	defer sb.Close()
	stores := map[string]journal.Store{"memory": journal.NewMemStore()}
	for name, db := range storetest.Open(t, "runcode_queued_test") {
		stores[name] = db
	}
	for name, st := range stores {
		for _, spool := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "+spool"}[spool], func(t *testing.T) {
				opts := journal.Options{InstanceID: uuid.NewString()}
				if spool {
					opts.SpoolDir = t.TempDir()
				}
				j := journal.New(st, opts)
				if _, err := j.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				ex, err := tools.NewExecutor(tools.Options{Journal: j}, New(sb))
				if err != nil {
					t.Fatal(err)
				}
				slotWaitPath(t, ex, j)
			})
		}
	}
}

// slotWaitPath holds the one run slot with a call, starts a second that
// waits for it, and reads the second's record while it waits, once it
// runs and once it ended.
func slotWaitPath(t *testing.T, ex *tools.Executor, j *journal.Journal) {
	ctx := t.Context()
	loop := json.RawMessage(`{"language":"javascript","code":"for(;;){}","timeout_ms":60000}`)
	hold, release := context.WithCancel(ctx)
	defer release()
	holding := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, err := ex.Execute(hold, tools.Proposal{Tool: "run_code", Args: loop, CallID: "holder", Progress: func(_, _ float64, msg string) {
			if strings.HasPrefix(msg, "running") {
				once.Do(func() { close(holding) })
			}
		}})
		if err != nil || out.Code != tools.CodeCancelled {
			t.Errorf("holder: %v %+v", err, out)
		}
	}()
	<-holding

	msgs := make(chan string, 64)
	second, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan *tools.Outcome, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, err := ex.Execute(second, tools.Proposal{Tool: "run_code", Args: loop, CallID: t.Name(), Progress: func(_, _ float64, msg string) {
			select {
			case msgs <- msg:
			default:
			}
		}})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	// The sandbox reports the wait after the journal has it.
	waitFor(msgs, "queued")
	if got := waiterStatus(t, j, t.Name()); got != journal.StatusQueued {
		t.Fatalf("waiting for a slot: status %s, want queued", got)
	}
	release()
	waitFor(msgs, "running")
	if got := waiterStatus(t, j, t.Name()); got != journal.StatusRunning {
		t.Fatalf("with the slot: status %s, want running", got)
	}
	stop()
	wg.Wait()
	out := <-done
	if out.Code != tools.CodeCancelled {
		t.Fatalf("waiter ended %s %s", out.Code, out.Message)
	}
	if got := waiterStatus(t, j, t.Name()); got != journal.StatusError {
		t.Fatalf("ended: status %s, want error (cancelled)", got)
	}
}

// waiterStatus reads the second call's record as GET /tool-executions
// does, through the journal's store.
func waiterStatus(t *testing.T, j *journal.Journal, callID string) journal.Status {
	t.Helper()
	recs, _, err := j.Store().List(t.Context(), journal.Query{AccountID: tools.LocalAccount, ToolName: "run_code", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.CallID == callID {
			return r.Status
		}
	}
	t.Fatalf("no record of the waiting call among %d", len(recs))
	return ""
}

// waitFor reads progress messages until one starts with prefix.
func waitFor(msgs <-chan string, prefix string) {
	for !strings.HasPrefix(<-msgs, prefix) {
		continue
	}
}
