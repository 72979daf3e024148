package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	// stderr is shared with background goroutines (the sandbox logs from
	// its loader), as os.Stderr is in production: it must be safe for
	// concurrent writes.
	var out bytes.Buffer
	var errb syncBuffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCallExitCodesAndOutput(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "success", args: []string{"call", "--data", data, "roll_dice", `{"sides":20,"count":3}`}, wantCode: exitOK, wantOut: `"total"`},
		{name: "duplicate key", args: []string{"call", "--data", data, "roll_dice", `{"sides":20,"sides":6}`}, wantCode: exitToolError, wantOut: `duplicate key \"sides\"`},
		{name: "unknown zone", args: []string{"call", "--data", data, "get_time", `{"timezone":"Mars/Base"}`}, wantCode: exitToolError, wantOut: `Mars/Base`},
		{name: "no arguments uses defaults", args: []string{"call", "--data", data, "get_time"}, wantCode: exitOK, wantOut: `"timezone": "UTC"`},
		{name: "unknown tool", args: []string{"call", "--data", data, "nope", `{}`}, wantCode: exitUsage, wantErr: `unknown tool "nope"`},
		{name: "missing tool", args: []string{"call", "--data", data}, wantCode: exitUsage, wantErr: "want TOOL"},
		{name: "bad flag", args: []string{"call", "--bogus"}, wantCode: exitUsage, wantErr: "bogus"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: exitUsage, wantErr: `unknown command "frobnicate"`},
		{name: "version", args: []string{"version"}, wantCode: exitOK, wantOut: "toolhost "},
		{name: "dev refused off loopback", args: []string{"serve", "--dev", "--addr", "0.0.0.0:0", "--data", data}, wantCode: exitUsage, wantErr: "only allowed on a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit = %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("stdout %q want %q; stderr %q want %q", out, tt.wantOut, errOut, tt.wantErr)
			}
		})
	}
}

func TestCallRollDiceResultsInRange(t *testing.T) {
	code, out, errOut := runCLI(t, "call", "--data", t.TempDir(), "roll_dice", `{"sides":20,"count":3}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Structured struct {
			Results []int `json:"results"`
			Total   int   `json:"total"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range got.Structured.Results {
		if r < 1 || r > 20 {
			t.Fatalf("result %d out of range", r)
		}
		sum += r
	}
	if len(got.Structured.Results) != 3 || sum != got.Structured.Total {
		t.Fatalf("got %+v", got.Structured)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	t.Setenv("TOOLHOST_ADDR", "0.0.0.0:0")
	t.Setenv("TOOLHOST_DEV", "true")
	code, _, errOut := runCLI(t, "serve", "--data", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "0.0.0.0:0") {
		t.Fatalf("exit %d, stderr %q: the env should have set --addr and --dev", code, errOut)
	}
}

func TestConfigFileRejectsUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"hosted":{"lable":"x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "call", "--config", path, "get_time")
	if code != exitUsage || !strings.Contains(errOut, `unknown field "lable"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// buildBinary compiles toolhost once per test binary run (each link of the
// 50 MB binary costs seconds of CPU) and returns its path; tests must not
// modify it (runtimes_test.go copies it to move it).
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "toolhost-cmd-test-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "toolhost")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func TestStdioServesToolsAndKeepsStdoutClean(t *testing.T) {
	bin := buildBinary(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "stdio", "--data", t.TempDir(), "--test-tools", "--lang", "zh")
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, stderr.String())
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, tl := range list.Tools {
		names[tl.Name] = tl.Description
	}
	if !strings.HasPrefix(names["roll_dice"], "掷") || names["sleep"] == "" {
		t.Fatalf("tools = %v, want Chinese descriptions and the test tool", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6, "count": 2}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	cmd, stderr, addr := startServe(t, buildBinary(t), "serve", "--dev", "--test-tools", "--addr", "127.0.0.1:0", "--data", t.TempDir())

	// The sleep tool's first progress step says the call is in flight.
	running := make(chan struct{}, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			select {
			case running <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A call in flight when SIGTERM arrives still completes.
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 500, "steps": 50}}
		p.SetProgressToken("in-flight")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		done <- res
	}()
	select {
	case <-running:
	case res := <-done:
		t.Fatalf("the call ended before its first step: %+v", res)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.IsError {
		t.Fatalf("in-flight call did not finish cleanly: %+v", res)
	}
	cs.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Fatalf("no shutdown log: %s", stderr.String())
	}
	// How to connect, one line per call, and a last line once everything
	// is closed.
	var serving, call, last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "toolhost serving":
			serving = rec
		case "call":
			if rec["tool"] == "sleep" {
				call = rec
			}
		}
		last = rec
	}
	if serving["mcp_url"] != "http://"+addr+"/mcp" || serving["health_url"] != "http://"+addr+"/healthz" || !strings.Contains(fmt.Sprint(serving["auth"]), "off") {
		t.Errorf("serving line: %v", serving)
	}
	if call == nil || call["status"] != "success" || call["execution_id"] == "" || call["session_id"] == "" || call["duration_ms"] == nil || call["level"] != "INFO" {
		t.Errorf("call line: %v", call)
	}
	if last["msg"] != "toolhost stopped" {
		t.Errorf("last line: %v", last)
	}
}

// A second server on a taken address fails at once, before it opens the
// journal or compiles a runtime, and says how to pick another address.
func TestServeRefusesATakenAddressAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "data")
	code, _, errOut := runCLI(t, "serve", "--dev", "--addr", ln.Addr().String(), "--data", data)
	if code != exitStartup || !strings.Contains(errOut, "already in use") || !strings.Contains(errOut, "--addr") || !strings.Contains(errOut, "TOOLHOST_ADDR") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data folder was created (journal opened) before the address was checked: %v", err)
	}
}

// Ctrl-C during the first start-up, while CPython is still compiling (no
// compilation cache yet), stops the server without waiting for the compile.
func TestServeInterruptedDuringStartupDoesNotWaitForTheCompile(t *testing.T) {
	cmd, stderr, _ := startServe(t, buildBinary(t), "serve", "--dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--runtimes", repoRuntimes(t))
	if strings.Contains(stderr.String(), `"language":"python","compile_ms"`) {
		t.Skip("CPython compiled before the test could interrupt it")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	out := stderr.String()
	if strings.Contains(out, `"language":"python","compile_ms"`) || !strings.Contains(out, "not waiting for them") || !strings.Contains(out, "toolhost stopped") {
		t.Fatalf("the process waited for the compile, or did not say so:\n%s", out)
	}
}

func TestHealthzReportsRunCodeRuntimes(t *testing.T) {
	// An empty runtimes folder: both runtimes are unavailable, and
	// /healthz says so with the fix, while the server itself is healthy.
	_, _, addr := startServe(t, buildBinary(t), "serve", "--dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--runtimes", t.TempDir())
	type runtimeStatus struct {
		State, Error string
		Warm, Pool   int
	}
	var body struct {
		Status  string                   `json:"status"`
		Version string                   `json:"version"`
		RunCode map[string]runtimeStatus `json:"run_code"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/healthz: HTTP %d, %v", resp.StatusCode, err)
		}
		if body.RunCode["python"].State != "loading" && body.RunCode["javascript"].State != "loading" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtimes still loading: %+v", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if body.Status != "ok" || body.Version == "" {
		t.Errorf("/healthz: %+v", body)
	}
	for _, lang := range []string{"python", "javascript"} {
		st, ok := body.RunCode[lang]
		if !ok || st.State != "unavailable" || !strings.Contains(st.Error, "make runtimes") || st.Warm != 0 {
			t.Errorf("run_code %s: %+v, want unavailable naming `make runtimes`, nothing warm", lang, st)
		}
	}
}
