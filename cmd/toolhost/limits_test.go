package main

import (
	"testing"
	"time"
)

// The README has always said MCP sessions expire after 30 idle minutes;
// the default now does.
func TestDefaultConfigExpiresIdleMCPSessions(t *testing.T) {
	if got := defaultConfig().MCP.SessionTimeout.D(); got != 30*time.Minute {
		t.Fatalf("default mcp.session_timeout %s, want 30m", got)
	}
}
