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

// syncBuffer is a bytes.Buffer safe for a writing subprocess and a reading
// test, which can wait for it to grow.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // signalled after a write; one pending signal is enough
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	ch := s.grewLocked()
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
	return n, err
}

// Grew is signalled after a write: a reader that found nothing in String
// waits on it, then looks again.
func (s *syncBuffer) Grew() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grewLocked()
}

func (s *syncBuffer) grewLocked() chan struct{} {
	if s.grew == nil {
		s.grew = make(chan struct{}, 1)
	}
	return s.grew
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
	// The server logs its address once it listens: each write of the log
	// is looked at, no polling.
	deadline := time.After(60 * time.Second)
	for {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "toolhost serving" {
				return rec.Addr
			}
		}
		select {
		case <-stderr.Grew():
		case <-deadline:
			t.Fatalf("server did not start; stderr:\n%s", stderr.String())
			return ""
		}
	}
}
