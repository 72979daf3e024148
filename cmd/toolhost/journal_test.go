package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// journalBackends are the stores the journal's end-to-end tests run on:
// SQLite under --data always, PostgreSQL (a fresh schema, dropped at the
// end) when TOOLHOST_TEST_POSTGRES is set. The value is extra serve flags.
func journalBackends(t *testing.T) map[string][]string {
	m := map[string][]string{"sqlite": nil}
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		m["postgres"] = []string{"--postgres", pgSchemaURL(t, base)}
	}
	return m
}

func pgSchemaURL(t *testing.T, base string) string {
	schema := "th_cmd_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer db.Close()
		if _, err := db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

func devSession(t *testing.T, addr string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "journal-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type execList struct {
	Data []map[string]any `json:"data"`
	Meta map[string]any   `json:"meta"`
}

func getJSON(t *testing.T, u string, want int, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d", u, resp.StatusCode, want)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func eventStates(t *testing.T, addr, id string) ([]string, map[string]any) {
	t.Helper()
	var evs execList
	getJSON(t, "http://"+addr+"/tool-executions/"+id+"/events", http.StatusOK, &evs)
	var states []string
	for _, e := range evs.Data {
		states = append(states, e["state"].(string))
	}
	last, _ := evs.Data[len(evs.Data)-1]["detail"].(map[string]any)
	return states, last
}

// TestJournalSurvivesKill9: calls in flight when the server is killed are
// all in the journal after a restart on the same data, reconciled by their
// side effects; finished calls are untouched.
func TestJournalSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 and restart of real serve processes on every backend, seconds; runs in make test")
	}
	bin := buildBinary(t)
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			args := append([]string{"--dev", "--data", data}, extra...)
			first := startReplica(t, bin, args...)
			cs := devSession(t, first.addr)
			sid := cs.ID()
			ctx := context.Background()
			for range 2 {
				if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{}}); err != nil || res.IsError {
					t.Fatalf("get_time: %v %+v", err, res)
				}
			}
			var wg sync.WaitGroup
			for _, tool := range []string{"sleep", "sleep", "sleep", "sleep_effect", "sleep_effect"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// The server dies under this call: its error is expected.
					_, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"ms": 600000}})
				}()
			}
			base := "http://" + first.addr + "/tool-executions?session_id=" + sid
			journalWaitFor(t, func() bool {
				var l execList
				getJSON(t, base+"&lifecycle_state=opened", http.StatusOK, &l)
				return l.Meta["total"] == float64(5)
			})
			if err := first.cmd.Process.Kill(); err != nil { // SIGKILL: no clean-up at all
				t.Fatal(err)
			}
			first.cmd.Wait()
			wg.Wait()

			second := startReplica(t, bin, args...)
			var l execList
			getJSON(t, "http://"+second.addr+"/tool-executions?session_id="+sid+"&limit=100", http.StatusOK, &l)
			if len(l.Data) != 7 || l.Meta["total"] != float64(7) {
				t.Fatalf("%d records (meta %v) after restart, want 7", len(l.Data), l.Meta)
			}
			want := map[string][3]string{
				"get_time":     {"success", "committed", "observed"},
				"sleep":        {"timeout", "discarded", "failed_before_commit"},
				"sleep_effect": {"uncertain", "uncertain", "outcome_unknown"},
			}
			for _, rec := range l.Data {
				w := want[rec["tool_name"].(string)]
				if rec["status"] != w[0] || rec["commit_outcome"] != w[1] || rec["state"] != w[2] || rec["lifecycle_state"] != "finished" {
					t.Errorf("%s %s: %v/%v/%v/%v, want %v finished", rec["tool_name"], rec["id"], rec["status"], rec["commit_outcome"], rec["state"], rec["lifecycle_state"], w)
				}
				states, detail := eventStates(t, second.addr, rec["id"].(string))
				if states[len(states)-1] != w[2] || !hasState(states, "executing") {
					t.Errorf("%s events %v", rec["tool_name"], states)
				}
				if rec["tool_name"] != "get_time" && detail["reconciled"] != true {
					t.Errorf("%s: last event detail %v does not say it was reconciled", rec["tool_name"], detail)
				}
			}
			// The operator's view shows the same.
			out, err := exec.Command(bin, append([]string{"journal", "--data", data, "--session-id", sid, "--json"}, extra...)...).Output()
			if err != nil {
				t.Fatalf("toolhost journal: %v", err)
			}
			var cli execList
			if err := json.Unmarshal(out, &cli); err != nil || len(cli.Data) != 7 {
				t.Fatalf("toolhost journal --json: %d records, %v\n%s", len(cli.Data), err, out)
			}
		})
	}
}

// TestSpooledCallsSurviveKill9: with the opened records of running calls
// still only in the journal's spool (journal.apply_interval at its longest, the
// store has none of them: a second process reading the store sees
// nothing), kill -9 the server; the next start on the same data applies
// the spool and reconciles the calls.
func TestSpooledCallsSurviveKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 and restart of real serve processes on every backend, seconds; runs in make test")
	}
	bin := buildBinary(t)
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			cfg := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(cfg, []byte(`{"journal": {"apply_interval": "1m"}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			first := startReplica(t, bin, append([]string{"--dev", "--data", data, "--config", cfg}, extra...)...)
			started := make(chan string, 8)
			client := sdk.NewClient(&sdk.Implementation{Name: "journal-test", Version: "1"}, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					if tok, ok := req.Params.ProgressToken.(string); ok && req.Params.Progress == 1 {
						started <- tok
					}
				},
			})
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := client.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: "http://" + first.addr + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools := []string{"sleep", "sleep", "sleep_effect", "sleep_effect"}
			var wg sync.WaitGroup
			for i, tool := range tools {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"ms": 50000, "steps": 100}}
					p.SetProgressToken(fmt.Sprintf("t%d", i))
					_, _ = cs.CallTool(context.Background(), p) // the server dies under it
				}()
			}
			for range tools { // every tool is running: its first progress step arrived
				select {
				case <-started:
				case <-time.After(30 * time.Second):
					t.Fatal("the sleep calls did not start")
				}
			}
			before, err := exec.Command(bin, append([]string{"journal", "--data", data, "--session-id", cs.ID(), "--json"}, extra...)...).Output()
			if err != nil {
				t.Fatalf("toolhost journal: %v", err)
			}
			var inStore execList
			if err := json.Unmarshal(before, &inStore); err != nil || len(inStore.Data) != 0 {
				t.Fatalf("the store already holds %d of the running calls (%v); this test wants them in the spool only", len(inStore.Data), err)
			}
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			first.cmd.Wait()
			wg.Wait()

			second := startReplica(t, bin, append([]string{"--dev", "--data", data}, extra...)...)
			var l execList
			getJSON(t, "http://"+second.addr+"/tool-executions?session_id="+cs.ID()+"&limit=100", http.StatusOK, &l)
			if len(l.Data) != len(tools) {
				t.Fatalf("%d records after restart, want %d", len(l.Data), len(tools))
			}
			for _, rec := range l.Data {
				want := map[string]string{"sleep": "timeout", "sleep_effect": "uncertain"}[rec["tool_name"].(string)]
				if rec["status"] != want || rec["lifecycle_state"] != "finished" {
					t.Errorf("%s: status %v lifecycle %v, want %s finished", rec["tool_name"], rec["status"], rec["lifecycle_state"], want)
				}
				if states, detail := eventStates(t, second.addr, rec["id"].(string)); !hasState(states, "executing") || detail["reconciled"] != true {
					t.Errorf("%s: events %v, last detail %v", rec["tool_name"], states, detail)
				}
			}
		})
	}
}

func hasState(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func journalWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConcurrentCallsEachHaveAFullRecord: N concurrent tools/call over MCP
// give exactly N records with their statuses, durations and full event
// sequences, and the REST filters and the legacy projection agree.
func TestConcurrentCallsEachHaveAFullRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("concurrent MCP calls through real serve processes on every backend, seconds; runs in make test")
	}
	bin := buildBinary(t)
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			r := startReplica(t, bin, append([]string{"--dev", "--data", t.TempDir()}, extra...)...)
			cs := devSession(t, r.addr)
			const n = 24
			var wg sync.WaitGroup
			ids := make([]string, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{}}
					switch i % 3 {
					case 1:
						p = &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 30}}
					case 2:
						p = &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 1}} // below the minimum: rejected
					}
					res, err := cs.CallTool(context.Background(), p)
					if err != nil {
						t.Errorf("call %d: %v", i, err)
						return
					}
					ids[i], _ = res.Meta["toolhost/execution_id"].(string)
				}()
			}
			wg.Wait()
			base := "http://" + r.addr
			var l execList
			getJSON(t, base+"/tool-executions?session_id="+cs.ID()+"&limit=100&sort_order=asc", http.StatusOK, &l)
			if len(l.Data) != n || l.Meta["total"] != float64(n) || l.Meta["has_more"] != false || l.Meta["sort_by"] != "started_at" || l.Meta["sort_order"] != "asc" {
				t.Fatalf("%d records, meta %v; want %d", len(l.Data), l.Meta, n)
			}
			byID := map[string]map[string]any{}
			for _, rec := range l.Data {
				byID[rec["id"].(string)] = rec
			}
			for i, id := range ids {
				rec := byID[id]
				if rec == nil {
					t.Fatalf("call %d (execution %q) has no record", i, id)
				}
				states, _ := eventStates(t, r.addr, id)
				got := strings.Join(states, ">")
				switch i % 3 {
				case 0, 1:
					if rec["status"] != "success" || got != "proposed>parsed>validated>authorized>executing>observed" {
						t.Errorf("call %d: %v, events %s", i, rec["status"], got)
					}
				case 2:
					if rec["status"] != "error" || got != "proposed>parsed>validation_rejected" {
						t.Errorf("call %d: %v, events %s", i, rec["status"], got)
					}
				}
				if i%3 == 1 && rec["duration_ms"].(float64) < 30 {
					t.Errorf("sleep of 30 ms recorded as %v ms", rec["duration_ms"])
				}
				if rec["face"] != "mcp" || rec["caller_slot"] != nil || rec["floor_id"] == nil || rec["session_id"] != cs.ID() || rec["lifecycle_state"] != "finished" {
					t.Errorf("call %d identity: %v", i, rec)
				}
			}

			// One floor = one tools/call, by path and by the legacy view.
			floor := byID[ids[1]]["floor_id"].(string)
			var fl execList
			getJSON(t, base+"/floors/"+floor+"/tool-executions", http.StatusOK, &fl)
			if len(fl.Data) != 1 || fl.Data[0]["id"] != ids[1] {
				t.Errorf("floor view: %v", fl.Data)
			}
			var legacy execList
			getJSON(t, base+"/tools/call-records?floor_id="+byID[ids[2]]["floor_id"].(string), http.StatusOK, &legacy)
			if len(legacy.Data) != 1 || legacy.Data[0]["status"] != "error" || legacy.Data[0]["seq"] != float64(0) || legacy.Meta["sort_by"] != "seq" {
				t.Errorf("legacy view: %v %v", legacy.Data, legacy.Meta)
			}
			for _, field := range []string{"lifecycle_state", "commit_outcome", "delivery_mode", "runtime_job_id", "side_effect_level", "provider_type", "attempt_no"} {
				if _, ok := legacy.Data[0][field]; ok {
					t.Errorf("legacy record carries journal-only field %s", field)
				}
			}
			var errBody struct {
				Error struct{ Code string } `json:"error"`
			}
			getJSON(t, base+"/tool-executions?tool_name=get_time", http.StatusBadRequest, &errBody)
			if errBody.Error.Code != "validation_error" {
				t.Errorf("no session/floor/run: %+v", errBody)
			}
			var filtered execList
			getJSON(t, base+fmt.Sprintf("/tool-executions?session_id=%s&tool_name=sleep&status=success&limit=3&offset=2", cs.ID()), http.StatusOK, &filtered)
			if len(filtered.Data) != 3 || filtered.Meta["total"] != float64(n/3) || filtered.Meta["has_more"] != true {
				t.Errorf("filtered page: %d records, meta %v", len(filtered.Data), filtered.Meta)
			}
		})
	}
}
