package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
)

func TestConsoleSection(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
		check               func(c config.Console) bool
	}{
		{"by default", `{}`, "", func(c config.Console) bool { return c.TraceURL == "" && c.SessionLifetime.D() == 0 }},
		{"a trace viewer and a lifetime", `{"console": {"trace_url": "https://jaeger.example/trace/{trace_id}", "session_lifetime": "30m"}}`, "",
			func(c config.Console) bool { return c.SessionLifetime.D() == 30*time.Minute }},
		{"a trace URL without the id", `{"console": {"trace_url": "https://jaeger.example/trace/"}}`, "console.trace_url", nil},
		{"a script URL", `{"console": {"trace_url": "javascript:alert(1)//{trace_id}"}}`, "want an http(s) URL", nil},
		{"a lifetime too short", `{"console": {"session_lifetime": "10s"}}`, `console.session_lifetime "10s"`, nil},
		{"a lifetime too long", `{"console": {"session_lifetime": "25h"}}`, `console.session_lifetime "25h0m0s"`, nil},
		{"a negative lifetime", `{"console": {"session_lifetime": "-1m"}}`, "console.session_lifetime", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c.Console) {
				t.Fatalf("Load = %+v, %v", c.Console, err)
			}
		})
	}
}
