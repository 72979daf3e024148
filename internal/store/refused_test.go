package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
)

// refuseTool makes the store refuse, on its own, every insert of a record
// of the tool "refused", as a constraint violation: what a write holding
// a value the database cannot keep gets (PostgreSQL: a data exception).
func refuseTool(t *testing.T, name string, db *store.DB) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER refuse_tool BEFORE INSERT ON tool_executions
		WHEN NEW.tool_name = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`}
	if name == "postgres" {
		stmts = []string{`CREATE FUNCTION refuse_tool() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.tool_name = 'refused' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER refuse_tool BEFORE INSERT ON tool_executions FOR EACH ROW EXECUTE FUNCTION refuse_tool()`}
	}
	for _, s := range stmts {
		if _, err := db.SQL().ExecContext(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// spoolCalls spools a finished read-only call of each tool through j and
// returns the record ids.
func spoolCalls(t *testing.T, j *journal.Journal, prefix string, toolNames ...string) []string {
	t.Helper()
	var ids []string
	for i, tool := range toolNames {
		at := time.UnixMilli(time.Now().UnixMilli()).UTC()
		id := prefix + "_" + string(rune('a'+i)) + "_" + tool
		r := journal.Record{ID: id, AccountID: "acct", ToolName: tool, SideEffectLevel: "none", Status: journal.StatusRunning,
			Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting, StartedAt: at, CreatedAt: at}
		if err := j.Open(context.Background(), r, []journal.Event{{Seq: 0, State: journal.StateProposed, At: at}, {Seq: 1, State: journal.StateExecuting, At: at}}); err != nil {
			t.Fatal(err)
		}
		r.Status, r.Lifecycle, r.Commit, r.State, r.FinishedAt = journal.StatusSuccess, journal.Finished, journal.CommitCommitted, journal.StateObserved, at
		if err := j.Finish(context.Background(), r, []journal.Event{{Seq: 2, State: journal.StateObserved, At: at}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// A write the store refuses on its own costs neither the writes of its
// batch nor those after it: they reach the store, and it is set aside
// into INSTANCE.rejected, both by a running spool and by the next start
// replaying a dead process's spool. On real stores, refusing by trigger.
func TestARefusedWriteIsSetAsideAndItsBatchKept(t *testing.T) {
	for name, db := range storetest.Open(t, "refused_test") {
		t.Run(name, func(t *testing.T) {
			refuseTool(t, name, db)
			ctx := context.Background()
			dir := t.TempDir()
			j := journal.New(db, journal.Options{InstanceID: "live", SpoolDir: dir, ApplyInterval: time.Hour})
			if _, err := j.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ids := spoolCalls(t, j, "live", "get_time", "refused", "get_time", "refused", "get_time")
			// The first flush applies one batch: the good writes go in,
			// the refused are retried alone until they are set aside.
			deadline := time.Now().Add(30 * time.Second)
			for err := j.Flush(ctx); err != nil; err = j.Flush(ctx) {
				if !errors.Is(err, journal.ErrUnavailable) || time.Now().After(deadline) {
					t.Fatalf("the refused writes still hold the spool: %v", err)
				}
			}
			wantStored(t, db, ids, map[string]bool{ids[1]: true, ids[3]: true})
			wantRejected(t, filepath.Join(dir, "live.rejected"), ids[1], ids[3])

			// A process that dies with a refused write in its spool: the
			// next start applies the rest and sets it aside.
			dead := journal.New(db, journal.Options{InstanceID: "dead", SpoolDir: dir, ApplyInterval: time.Hour})
			if _, err := dead.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ids = spoolCalls(t, dead, "dead", "refused", "get_time", "refused", "get_time")
			dead.Abandon()
			next := journal.New(db, journal.Options{InstanceID: "next", SpoolDir: dir, ApplyInterval: time.Hour})
			if _, err := next.Start(ctx); err != nil {
				t.Fatalf("a refused write kept the server from starting: %v", err)
			}
			next.Close()
			j.Close()
			wantStored(t, db, ids, map[string]bool{ids[0]: true, ids[2]: true})
			wantRejected(t, filepath.Join(dir, "dead.rejected"), ids[0], ids[2])
		})
	}
}

func wantStored(t *testing.T, s journal.Store, ids []string, refused map[string]bool) {
	t.Helper()
	for _, id := range ids {
		r, err := s.Get(context.Background(), "acct", id)
		switch {
		case refused[id] && !errors.Is(err, journal.ErrNotFound):
			t.Errorf("%s was refused, yet it is stored: %v", id, err)
		case !refused[id] && (err != nil || r.Lifecycle != journal.Finished):
			t.Errorf("%s lost with the refused writes of its batch: %+v %v", id, r, err)
		}
	}
}

// wantRejected checks that the set-aside file holds the writes of ids
// (each record's opened and finished writes, as spooled).
func wantRejected(t *testing.T, path string, ids ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("set-aside file: %v", err)
	}
	for _, id := range ids {
		if n := bytes.Count(b, []byte(id)); n == 0 {
			t.Errorf("%s is not in %s", id, path)
		}
	}
}
