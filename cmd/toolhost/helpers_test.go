package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writing subprocess and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs the built binary with args (a serve command line), kills it
// when the test ends, and returns it, its log and the address it serves on.
func startServe(t *testing.T, bin string, args ...string) (*exec.Cmd, *syncBuffer, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, stderr, waitForAddr(t, stderr)
}

// waitForAddr reads the "toolhost serving" log line and returns its address.
func waitForAddr(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "toolhost serving" {
				return rec.Addr
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server did not start; stderr:\n%s", stderr.String())
	return ""
}
