package store_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/approval/approvaltest"
)

func TestSQLiteApprovalConformance(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approval.Store { return OpenSQLite(t) })
}

func TestPostgresApprovalConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	approvaltest.Run(t, func(t *testing.T) approval.Store { return OpenPostgres(t) })
}

// TestPostgresConsumeWaitsForALockedApproval: an approved approval whose
// row another statement holds locked (a DecideApproval racing on it locks
// the row while it rechecks, then finds it decided) is still consumed:
// the consumer waits for the lock instead of skipping the row and
// answering that none is approved.
func TestPostgresConsumeWaitsForALockedApproval(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := OpenPostgres(t)
	at := time.UnixMilli(1_790_000_000_000).UTC()
	a := approval.Approval{ID: "apr_300000000000000000000001", AccountID: "acct", SessionID: "sess", Face: "v1",
		Tool: "random_choice", ToolVersion: "1.0.0", SideEffectLevel: "none", Digest: "dl",
		Args: json.RawMessage(`{}`), ExecutionID: "exec-1", Status: approval.Pending, RequestedAt: at, ExpiresAt: at.Add(15 * time.Minute)}
	if err := db.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DecideApproval(ctx, "acct", a.ID, approval.Decision{Approve: true, By: "k"}, at); err != nil {
		t.Fatal(err)
	}
	tx, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // committed below; a rollback after it is a no-op
	if _, err := tx.ExecContext(ctx, `SELECT id FROM approvals WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		a   approval.Approval
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := db.ConsumeApproval(ctx, "acct", "dl", "exec-2", at.Add(time.Minute))
		done <- result{got, err}
	}()
	// The consumer either answers while the row is locked (the bug) or
	// shows up in pg_stat_activity waiting for the lock.
	waitFor := time.NewTicker(10 * time.Millisecond)
	defer waitFor.Stop()
	for waiting := false; !waiting; {
		select {
		case r := <-done:
			t.Fatalf("consume answered while the row was locked: %+v, %v", r.a, r.err)
		case <-waitFor.C:
			if err := db.SQL().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE approvals SET status = ''consumed''%')`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.a.ID != a.ID || r.a.ConsumedBy != "exec-2" {
		t.Fatalf("consume = %+v, %v; want %s consumed by exec-2", r.a, r.err, a.ID)
	}
}
