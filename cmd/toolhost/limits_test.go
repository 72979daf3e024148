package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
)

// The README has always said MCP sessions expire after 30 idle minutes;
// the default now does.
func TestDefaultConfigExpiresIdleMCPSessions(t *testing.T) {
	if got := config.Default().MCP.SessionTimeout.D(); got != 30*time.Minute {
		t.Fatalf("default mcp.session_timeout %s, want 30m", got)
	}
}

// serve runs under a soft memory limit, so a burst of garbage (a large
// page's extraction, thousands of refused initialize bodies) cannot take
// RSS to gigabytes. server.memory_limit_mib sets it (default 384 MiB, -1
// none); GOMEMLIMIT in the environment wins.
func TestTuneGCAppliesTheMemoryLimit(t *testing.T) {
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit) })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		config  int64
		env     string
		want    int64
		wantErr bool
	}{
		{name: "default", config: 0, want: 384 << 20},
		{name: "configured", config: 300, want: 300 << 20},
		{name: "none", config: -1, want: math.MaxInt64},
		{name: "too small to run", config: 64, wantErr: true},
		{name: "GOMEMLIMIT wins", config: 300, env: "1GiB", want: 12345 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.env)
			if tc.env == "" {
				os.Unsetenv("GOMEMLIMIT")
			}
			debug.SetMemoryLimit(12345 << 20) // what the runtime took from the environment
			err := tuneGC(logger, tc.config)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "server.memory_limit_mib") {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Fatalf("memory limit %d MiB, want %d MiB", got>>20, tc.want>>20)
			}
		})
	}
}

// The limit reaches serve from the config file.
func TestServeTakesTheMemoryLimitFromConfig(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // restored after the test
	os.Unsetenv("GOMEMLIMIT")  // it would win over the config
	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"server":{"memory_limit_mib":300},"sandbox":{"python_pool":-1,"javascript_pool":-1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ := startServe(t, buildBinary(t), "serve", "--dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--config", cfg)
	for _, line := range strings.Split(stderr.String(), "\n") {
		var rec struct {
			Msg string `json:"msg"`
			MiB int64  `json:"mib"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "memory limit" {
			if rec.MiB != 300 {
				t.Fatalf("serve logged a limit of %d MiB", rec.MiB)
			}
			return
		}
	}
	t.Fatalf("serve logged no memory limit:\n%s", stderr.String())
}

// serve takes the per-account caps of the tools API from its config file:
// tools.max_definitions_per_account and mcp_servers.max_per_account.
func TestServeTakesThePerAccountCapsFromConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(cfg, []byte(`{"tools":{"max_definitions_per_account":2},"mcp_servers":{"max_per_account":1},
		"fetch":{"allow_private":["127.0.0.1"]},"sandbox":{"python_pool":-1,"javascript_pool":-1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, addr := startServe(t, buildBinary(t), "serve", "--dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--config", cfg)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&b)
		return resp.StatusCode, b.Error.Code
	}
	for i, want := range []int{201, 201, 409} {
		if status, code := post("/tools/definitions", `{"name":"t`+string(rune('a'+i))+`"}`); status != want || (want == 409 && code != "tool_definition_limit") {
			t.Fatalf("definition %d: %d %s, want %d", i+1, status, code, want)
		}
	}
	// Disabled: registered without being listed (nothing listens there).
	for i, want := range []int{201, 409} {
		body := `{"name":"s` + string(rune('a'+i)) + `","url":"http://127.0.0.1:9/mcp","enabled":false}`
		if status, code := post("/mcp-servers", body); status != want || (want == 409 && code != "mcp_server_limit") {
			t.Fatalf("MCP server %d: %d %s, want %d", i+1, status, code, want)
		}
	}
}
