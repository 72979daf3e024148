package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// runtimesFolder is the repository's runtimes folder (make runtimes).
func runtimesFolder(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "runtimes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"python.wasm", "quickjs.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("run `make runtimes` first: %v", err)
		}
	}
	return dir
}

type progressLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	msgs  []string
	added chan struct{} // signalled after add; one pending signal is enough
}

func (p *progressLog) add(msg string) {
	p.mu.Lock()
	p.at = append(p.at, time.Since(p.start))
	p.msgs = append(p.msgs, msg)
	p.mu.Unlock()
	select {
	case p.added <- struct{}{}:
	default:
	}
}

// execution is the part of a journal record these tests read.
type execution struct {
	ErrorCode string  `json:"error_code"`
	Lifecycle string  `json:"lifecycle_state"`
	Duration  int64   `json:"duration_ms"`
	Units     float64 `json:"units"`
	Args      struct {
		Code string `json:"code"`
	} `json:"args"`
}

// finishedRunCode waits until the session's run_code call with code has a
// finished journal record, and returns it.
func finishedRunCode(t *testing.T, base, session, code string) execution {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/tool-executions?tool_name=run_code&session_id=" + session)
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Data []execution }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Data {
			if e.Args.Code == code && e.Lifecycle == "finished" {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no finished record of %q", code)
	return execution{}
}

// TestRunCodeLoadsWithProgressAndCancelsInEveryState: through toolhost
// serve and the go-sdk client. A first Python call on a fresh data folder
// waits for CPython to compile and hears progress about it at least every
// couple of seconds (the sandbox reports every second). Then, with one run
// slot: a call queued behind another, and the running call itself, are
// each cancelled by the client and end "cancelled" in the journal at once,
// long before their programs would have, and unbilled.
func TestRunCodeLoadsWithProgressAndCancelsInEveryState(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles CPython from an empty cache through a real serve, minutes; runs in make test")
	}
	data := t.TempDir() // no compilation cache: the runtimes compile now
	cfgPath := filepath.Join(t.TempDir(), "toolhost.json")
	// The first call waits for the compile within its own deadline, and on
	// a loaded machine the compile takes more than the default minute (the
	// call then ends runtime_loading): give it the test's own budget.
	if err := os.WriteFile(cfgPath, []byte(`{"tools":{"default_timeout":"4m"},"sandbox":{"concurrency":1,"queue_length":4,"python_pool":-1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, addr := startServe(t, buildBinary(t), "serve", "--dev", "--addr", "127.0.0.1:0", "--data", data,
		"--config", cfgPath, "--runtimes", runtimesFolder(t))
	base := "http://" + addr
	prog := &progressLog{start: time.Now(), added: make(chan struct{}, 1)}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			prog.add(req.Params.Message)
		},
	})
	ctx, cancelAll := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelAll()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(ctx context.Context, token, code string, timeoutMs int) (*sdk.CallToolResult, error) {
		p := &sdk.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "code": code, "timeout_ms": timeoutMs}}
		p.SetProgressToken(token)
		return cs.CallTool(ctx, p)
	}

	// Loading: progress while CPython compiles.
	prog.start = time.Now()
	res, err := call(ctx, "load", "print(1)", 60000)
	took := time.Since(prog.start)
	if err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	prog.mu.Lock()
	loading := 0
	last := time.Duration(0)
	gap := time.Duration(0)
	for i, m := range prog.msgs {
		if strings.Contains(m, "loading the python runtime") {
			loading++
		}
		gap = max(gap, prog.at[i]-last)
		last = prog.at[i]
	}
	gap = max(gap, took-last)
	t.Logf("first call took %s with %d progress notifications (%d about loading), longest silence %s", took, len(prog.msgs), loading, gap)
	if took > 3*time.Second && (loading == 0 || gap > 3*time.Second) {
		t.Errorf("a %s first call had %d loading notifications and a %s silence: %q", took, loading, gap, prog.msgs)
	}
	prog.mu.Unlock()

	// Running and queued: one slot, taken by a long program.
	const hog, queued = "import time\ntime.sleep(30)", "import time\ntime.sleep(8)"
	hogCtx, cancelHog := context.WithCancel(ctx)
	hogDone := make(chan error, 1)
	go func() {
		_, err := call(hogCtx, "hog", hog, 60000)
		hogDone <- err
	}()
	// waitFor looks at cond again at each progress notification.
	waitFor := func(what string, cond func() bool) {
		deadline := time.After(time.Minute)
		for !cond() {
			select {
			case <-prog.added:
			case <-deadline:
				t.Fatalf("gave up waiting for %s", what)
			}
		}
	}
	waitFor("the long program to run", func() bool {
		prog.mu.Lock()
		defer prog.mu.Unlock()
		return len(prog.msgs) > 0 && strings.HasPrefix(prog.msgs[len(prog.msgs)-1], "running")
	})
	qctx, cancelQueued := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = call(qctx, "queued", queued, 60000)
	cancelQueued()
	if err == nil {
		t.Fatal("the queued call returned a result instead of being cancelled")
	}
	rec := finishedRunCode(t, base, cs.ID(), queued)
	if rec.ErrorCode != "cancelled" || rec.Duration > 5000 || rec.Units != 0 {
		t.Errorf("queued call: %+v, want cancelled within seconds, unbilled", rec)
	}
	cancelHog()
	<-hogDone
	rec = finishedRunCode(t, base, cs.ID(), hog)
	if rec.ErrorCode != "cancelled" || rec.Duration > 20000 || rec.Units != 0 {
		t.Errorf("running call: %+v, want cancelled long before its 30 s, unbilled", rec)
	}
	// The slot is free again.
	res, err = call(ctx, "after", "print('after')", 60000)
	if err != nil || res.IsError {
		t.Fatalf("after the cancellations: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"stdout":"after\n"`) {
		t.Errorf("after the cancellations: %s", fmt.Sprint(string(b)))
	}

	// /metrics counts the runs (the cancelled queued call never started one)
	// and says how Python instances start.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`toolhost_runcode_runs_total{language="python"} 3`, "toolhost_runcode_python_restored 1",
		`toolhost_runcode_runtime_ready{language="javascript"} 1`, `toolhost_runcode_instance_bytes{language="javascript"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
