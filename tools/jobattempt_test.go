package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// countingJob is a deferrable tool that reports its own attempts, as a
// remote MCP tool does (its first try is its attempt 1).
type countingJob struct{}

func (countingJob) Spec() catalog.Spec {
	return catalog.Spec{Name: "counting", Version: "1.0.0", Title: catalog.Text{EN: "Counting", ZH: "计数"},
		Description: catalog.Text{EN: "reports one attempt", ZH: "报告一次尝试"},
		Input:       json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectNone, Async: catalog.DeferredOK}
}

func (countingJob) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	inv.Attempted(tools.Attempt{No: 1, InvocationID: inv.ID + ".1", Outcome: tools.AttemptOK})
	return &tools.Result{Text: "counted"}, nil
}

// A job's record ends with the job's attempt number, not the tool's own
// count of tries, which starts at 1 again in every job attempt: the second
// attempt of a job (its first process died) says 2, and the tool's attempt
// is still an event.
func TestJobRecordKeepsTheJobsAttemptNumber(t *testing.T) {
	for name, open := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			jobs, err := db.Jobs(store.JobOptions{})
			if err != nil {
				t.Fatal(err)
			}
			j := journal.New(db, journal.Options{InstanceID: uuid.NewString()})
			t.Cleanup(j.Close)
			exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs}, countingJob{})
			if err != nil {
				t.Fatal(err)
			}
			caller := tools.Caller{Face: "cli"}
			out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "counting", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync, Caller: caller})
			if err != nil || out.Receipt == nil {
				t.Fatalf("deferred call: %v %+v", err, out)
			}
			account := exec.Account(caller)
			run := tools.JobRun{AccountID: account, ExecutionID: out.Receipt.ExecutionID, Attempt: 2}
			if err := exec.RunJob(context.Background(), run); err != nil {
				t.Fatal(err)
			}
			rec, err := j.Store().Get(context.Background(), account, run.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != journal.StatusSuccess || rec.AttemptNo != 2 {
				t.Errorf("record: status %s, attempt_no %d; want success on attempt 2", rec.Status, rec.AttemptNo)
			}
			evs, err := j.Store().Events(context.Background(), account, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			noted := 0
			for _, e := range evs {
				if e.Kind == journal.KindAttempt {
					noted++
				}
			}
			if noted != 1 {
				t.Errorf("%d attempt events, want the tool's one", noted)
			}
		})
	}
}
