package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// jobsConfig is a config file whose jobs are rescued seconds after their
// process died, not minutes.
func jobsConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"jobs": {"timeout": "5s", "rescue_after": "6s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// enqueue asks for a deferred call through toolhost call --async on the
// store of args and returns its receipt.
func enqueue(t *testing.T, bin string, args []string, tool, argJSON string) (execID, jobID string) {
	t.Helper()
	out, err := exec.Command(bin, append(append([]string{"call", "--test-tools", "--async"}, args...), tool, argJSON)...).Output()
	if err != nil {
		t.Fatalf("toolhost call --async: %v\n%s", err, out)
	}
	var res struct {
		IsError    bool `json:"isError"`
		Structured struct {
			ExecutionID  string `json:"execution_id"`
			RuntimeJobID string `json:"runtime_job_id"`
			Status       string `json:"status"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || res.Structured.Status != "queued" {
		t.Fatalf("receipt: %v %s", err, out)
	}
	return res.Structured.ExecutionID, res.Structured.RuntimeJobID
}

// waitRecord polls the execution's record over REST until cond holds; a
// rescue waits for river's leader, which looks every 30 s.
func waitRecord(t *testing.T, addr, id string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var one struct {
			Data map[string]any `json:"data"`
		}
		getJSON(t, "http://"+addr+"/tool-executions/"+id, http.StatusOK, &one)
		if cond(one.Data) {
			return one.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s: condition not reached; last %v", id, one.Data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteJob sends DELETE u and checks the status.
func deleteJob(t *testing.T, u string, want int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("DELETE %s: %d, want %d", u, resp.StatusCode, want)
	}
}

// TestDeferredSandboxJobRunsAgainAfterKill9: a deferred call with sandbox
// side effects whose server is killed while it runs is run again by the
// next server on the same store and ends once, successfully, on its
// second attempt. Then DELETE /tool-executions/{id}/job: 409 for it, 404
// for no job, 202 for a running one, which ends cancelled.
func TestDeferredSandboxJobRunsAgainAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 and restart of real serve processes, waiting for river's rescue (up to a minute); runs in make test")
	}
	t.Parallel() // it mostly waits for river's rescue: the others run meanwhile
	bin := buildBinary(t)
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			args := append([]string{"--dev", "--data", data, "--config", jobsConfig(t, data)}, extra...)
			first := startReplica(t, bin, args...)
			id, jobID := enqueue(t, bin, append([]string{"--data", data, "--config", jobsConfig(t, data)}, extra...), "sleep_effect", `{"ms":4000}`)
			rec := waitRecord(t, first.addr, id, func(r map[string]any) bool { return r["status"] == "running" })
			if rec["delivery_mode"] != "async_job" || rec["runtime_job_id"] != jobID || rec["result_visibility"] != "deferred_receipt" {
				t.Fatalf("running record: %v", rec)
			}
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			first.cmd.Wait()

			second := startReplica(t, bin, args...)
			done := waitRecord(t, second.addr, id, func(r map[string]any) bool { return r["lifecycle_state"] == "finished" })
			if done["status"] != "success" || done["attempt_no"] != float64(2) || done["commit_outcome"] != "committed" {
				t.Fatalf("finished record: status %v attempt %v commit %v", done["status"], done["attempt_no"], done["commit_outcome"])
			}
			// Each attempt names the process that ran it: the killed one, then the second.
			if r1, r2 := rec["runner_instance_id"], done["runner_instance_id"]; r1 == nil || r2 == nil || r1 == r2 {
				t.Fatalf("runner_instance_id %v then %v: want the two processes", r1, r2)
			}
			states, _ := eventStates(t, second.addr, id)
			ends := 0
			for _, s := range states {
				switch s {
				case "observed", "failed_before_commit", "outcome_unknown", "cancelled_before_commit":
					ends++
				}
			}
			if ends != 1 {
				t.Fatalf("events %v: want exactly one end", states)
			}
			base := "http://" + second.addr + "/tool-executions/"
			deleteJob(t, base+id+"/job", http.StatusConflict)
			deleteJob(t, base+"no-such-execution/job", http.StatusNotFound)
			// A running job cancelled over REST ends cancelled.
			running, _ := enqueue(t, bin, append([]string{"--data", data, "--config", jobsConfig(t, data)}, extra...), "sleep", `{"ms":4000}`)
			waitRecord(t, second.addr, running, func(r map[string]any) bool { return r["status"] == "running" })
			deleteJob(t, base+running+"/job", http.StatusAccepted)
			ended := waitRecord(t, second.addr, running, func(r map[string]any) bool { return r["lifecycle_state"] == "finished" })
			if ended["error_code"] != "cancelled" || ended["state"] != "cancelled_before_commit" {
				t.Fatalf("cancelled job: %v %v", ended["error_code"], ended["state"])
			}
		})
	}
}

// TestJobsCommandsListShowAndCancelAQueuedJob: with no server working the
// queue, a deferred call stays queued; toolhost jobs lists and shows it,
// cancel ends it without running, and a second cancel says it has ended.
func TestJobsCommandsListShowAndCancelAQueuedJob(t *testing.T) {
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			store := append([]string{"--data", t.TempDir()}, extra...)
			code, out, errOut := runCLI(t, append(append([]string{"call", "--test-tools", "--async"}, store...), "sleep", `{"ms":1}`)...)
			var receipt struct {
				Structured struct {
					ExecutionID string `json:"execution_id"`
				} `json:"structuredContent"`
			}
			if code != exitOK || json.Unmarshal([]byte(out), &receipt) != nil {
				t.Fatalf("call --async: exit %d\n%s\n%s", code, out, errOut)
			}
			id := receipt.Structured.ExecutionID
			code, out, errOut = runCLI(t, append([]string{"jobs", "list", "--json", "--status", "queued"}, store...)...)
			var l execList
			if code != exitOK || json.Unmarshal([]byte(out), &l) != nil || len(l.Data) != 1 || l.Data[0]["id"] != id {
				t.Fatalf("jobs list: exit %d\n%s\n%s", code, out, errOut)
			}
			if code, out, _ = runCLI(t, append([]string{"jobs", "show", id}, store...)...); code != exitOK || !strings.Contains(out, `"status": "queued"`) {
				t.Fatalf("jobs show: exit %d\n%s", code, out)
			}
			code, out, errOut = runCLI(t, append([]string{"jobs", "cancel", id}, store...)...)
			if code != exitOK || !strings.Contains(out, `"state": "cancelled_before_commit"`) || !strings.Contains(out, `"lifecycle_state": "finished"`) {
				t.Fatalf("jobs cancel: exit %d\n%s\n%s", code, out, errOut)
			}
			if code, _, errOut = runCLI(t, append([]string{"jobs", "cancel", id}, store...)...); code != 1 || !strings.Contains(errOut, "already finished") {
				t.Fatalf("second cancel: exit %d, %s", code, errOut)
			}
		})
	}
}

// TestDeferredIrreversibleRemoteJobIsNeverSentTwice: a remote MCP tool the
// account defers by default (its override), irreversible, in flight at its
// server when toolhost is killed: the next server ends it uncertain and
// never calls the tool again (the test server counts its calls).
func TestDeferredIrreversibleRemoteJobIsNeverSentTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 and restart of real serve processes, waiting for river's rescue (up to a minute); runs in make test")
	}
	t.Parallel() // it mostly waits for river's rescue: the others run meanwhile
	bin := buildBinary(t)
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := testserver.New(true) // hang-write is among the misbehaving tools
			remote := httptest.NewServer(ts.Handler())
			t.Cleanup(remote.Close)
			data := t.TempDir()
			cfg := filepath.Join(data, "config.json")
			if err := os.WriteFile(cfg, []byte(`{"fetch": {"allow_private": ["127.0.0.1"]}, "jobs": {"timeout": "5s", "rescue_after": "6s"}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--dev", "--data", data, "--config", cfg}, extra...)
			first := startReplica(t, bin, args...)
			resp, err := http.Post("http://"+first.addr+"/mcp-servers", "application/json", strings.NewReader(`{"name":"demo","url":"`+remote.URL+`",
				"tools": {"hang-write": {"async_capability": "deferred_ok", "default_delivery_mode": "async_job", "require_approval": "never"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("register the remote MCP server: %d", resp.StatusCode)
			}
			sent := ts.Reached("hang-write", 1)
			res, err := devSession(t, first.addr).CallTool(context.Background(), &sdk.CallToolParams{Name: "demo__hang_write", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			receipt, _ := res.StructuredContent.(map[string]any)
			id, _ := receipt["execution_id"].(string)
			if receipt["status"] != "queued" || id == "" {
				t.Fatalf("receipt %v", res.StructuredContent)
			}
			<-sent
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			first.cmd.Wait()

			second := startReplica(t, bin, args...)
			done := waitRecord(t, second.addr, id, func(r map[string]any) bool { return r["lifecycle_state"] == "finished" })
			if done["status"] != "uncertain" || done["state"] != "outcome_unknown" || done["side_effect_level"] != "irreversible" {
				t.Fatalf("finished record: status %v state %v side effect %v", done["status"], done["state"], done["side_effect_level"])
			}
			if n := ts.Calls("hang-write"); n != 1 {
				t.Fatalf("the remote tool was called %d times, want once", n)
			}
		})
	}
}
