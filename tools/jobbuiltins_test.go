package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// slowJob is a deferrable sandbox tool that runs until released or
// cancelled, and tells the test when it starts.
type slowJob struct {
	started chan struct{}
	release chan struct{}
}

func (s *slowJob) Spec() catalog.Spec {
	return catalog.Spec{Name: "slow", Version: "1.0.0", Title: catalog.Text{EN: "Slow", ZH: "慢"},
		Description: catalog.Text{EN: "runs until released", ZH: "等待放行"},
		Input:       json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectSandbox, Async: catalog.DeferredOK}
}

func (s *slowJob) Call(ctx context.Context, _ *tools.Invocation) (*tools.Result, error) {
	s.started <- struct{}{}
	select {
	case <-s.release:
		return &tools.Result{Structured: map[string]any{"ok": true}, Text: "slow is done"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// jobStores are the stores that keep a job queue: SQLite, and PostgreSQL
// in a schema of its own when TOOLHOST_TEST_POSTGRES is set.
func jobStores(t *testing.T) map[string]func(t *testing.T) *store.DB {
	m := map[string]func(t *testing.T) *store.DB{"sqlite": func(t *testing.T) *store.DB {
		db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}}
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		m["postgres"] = func(t *testing.T) *store.DB {
			schema := "th_jobs_" + uuid.NewString()[:8]
			db, err := store.Open(context.Background(), base+sep(base)+"search_path="+schema, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := db.SQL().Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
					t.Errorf("drop schema: %v", err)
				}
				db.Close()
			})
			return db
		}
	}
	return m
}

// jobExec is an executor over db with its job queue, worked by this
// process when work is set.
func jobExec(t *testing.T, db *store.DB, work bool) (*tools.Executor, *slowJob) {
	t.Helper()
	jobs, err := db.Jobs(store.JobOptions{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	j := journal.New(db, journal.Options{InstanceID: uuid.NewString(), PollInterval: 10 * time.Millisecond})
	t.Cleanup(j.Close)
	slow := &slowJob{started: make(chan struct{}, 4), release: make(chan struct{})}
	exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs}, slow)
	if err != nil {
		t.Fatal(err)
	}
	if work {
		if err := jobs.Start(context.Background(), exec.RunJob); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = jobs.Stop(context.Background()) })
	}
	return exec, slow
}

// deferSlow starts slow as a background job and returns its receipt.
func deferSlow(t *testing.T, exec *tools.Executor) *tools.Receipt {
	t.Helper()
	out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "slow", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync, Caller: tools.Caller{Face: "hosted"}})
	if err != nil || out.IsError || out.Receipt == nil {
		t.Fatalf("deferred call: %v %+v", err, out)
	}
	return out.Receipt
}

// wait_job and cancel_job on real background jobs: a queued job cancelled
// never runs and wait_job then reads it ended; a running one is stopped;
// one left alone is waited for to its result. A finished job cannot be
// cancelled, and another account's job is not found.
func TestJobBuiltinsWaitForAndCancelJobs(t *testing.T) {
	for name, open := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			caller := tools.Caller{Face: "hosted"}
			t.Run("queued", func(t *testing.T) {
				exec, _ := jobExec(t, open(t), false)
				rc := deferSlow(t, exec)
				st := waitJob(t, exec, caller, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":0}`, rc.ExecutionID))
				if st.Finished || st.Status != journal.StatusQueued {
					t.Errorf("queued job: %+v", st)
				}
				other := tools.Caller{Face: "hosted"}
				other.AccountID = "acct_other"
				if out := run(t, exec, other, tools.CancelJobTool, fmt.Sprintf(`{"execution_id":%q}`, rc.ExecutionID)); out.Code != tools.CodeNotFound {
					t.Errorf("another account's cancel: %+v", out)
				}
				c := cancelled(t, exec, caller, rc.ExecutionID)
				if c.Stopping || c.Status != journal.StatusError {
					t.Errorf("cancelled while queued: %+v", c)
				}
				st = waitJob(t, exec, caller, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":0}`, rc.ExecutionID))
				if !st.Finished || st.Status != journal.StatusError {
					t.Errorf("after the cancellation: %+v", st)
				}
				if out := run(t, exec, caller, tools.CancelJobTool, fmt.Sprintf(`{"execution_id":%q}`, rc.ExecutionID)); out.Code != tools.CodeJobFinished {
					t.Errorf("cancel of an ended job: %+v", out)
				}
			})
			t.Run("running", func(t *testing.T) {
				exec, slow := jobExec(t, open(t), true)
				rc := deferSlow(t, exec)
				<-slow.started
				if c := cancelled(t, exec, caller, rc.ExecutionID); !c.Stopping {
					t.Errorf("cancelled while running: %+v", c)
				}
				st := waitJob(t, exec, caller, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":30}`, rc.ExecutionID))
				if !st.Finished || st.Status != journal.StatusError {
					t.Errorf("after the cancellation: %+v", st)
				}
			})
			t.Run("waited for", func(t *testing.T) {
				exec, slow := jobExec(t, open(t), true)
				rc := deferSlow(t, exec)
				<-slow.started
				close(slow.release)
				st := waitJob(t, exec, caller, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":30}`, rc.ExecutionID))
				if !st.Finished || st.Status != journal.StatusSuccess || st.Content == nil || *st.Content != "slow is done" {
					t.Errorf("the job's end: %+v", st)
				}
			})
		})
	}
}

func run(t *testing.T, exec *tools.Executor, c tools.Caller, tool, args string) *tools.Outcome {
	t.Helper()
	out, err := exec.Execute(context.Background(), tools.Proposal{Tool: tool, Args: json.RawMessage(args), Caller: c})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func cancelled(t *testing.T, exec *tools.Executor, c tools.Caller, id string) tools.CancelJobOutput {
	t.Helper()
	out := run(t, exec, c, tools.CancelJobTool, fmt.Sprintf(`{"execution_id":%q}`, id))
	if out.IsError {
		t.Fatalf("cancel_job: %+v", out)
	}
	var got tools.CancelJobOutput
	if err := json.Unmarshal(out.Structured, &got); err != nil {
		t.Fatal(err)
	}
	return got
}
