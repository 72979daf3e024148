package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag that overrides a config key replaces the file's value when it is
// given, on the command line or in the environment, and leaves it alone
// otherwise.
func TestFlagsOverrideTheirConfigKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(`{"mcp": {"stateless": true}, "keys": {"redis": "redis://127.0.0.1:6379/1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		args          []string
		env           map[string]string
		wantStateless bool
		wantRedis     string
		wantErr       string
	}{
		{"the file alone", nil, nil, true, "redis://127.0.0.1:6379/1", ""},
		{"flags win", []string{"--stateless=false", "--redis", "redis://127.0.0.1:6379/2"}, nil, false, "redis://127.0.0.1:6379/2", ""},
		{"the environment wins over the file", nil, map[string]string{"TOOLHOST_STATELESS": "false", "TOOLHOST_REDIS": "redis://127.0.0.1:6379/3"},
			false, "redis://127.0.0.1:6379/3", ""},
		{"the command line wins over the environment", []string{"--redis", "redis://127.0.0.1:6379/4"}, map[string]string{"TOOLHOST_REDIS": "redis://127.0.0.1:6379/3"},
			true, "redis://127.0.0.1:6379/4", ""},
		{"a bad boolean in the environment", nil, map[string]string{"TOOLHOST_STATELESS": "sometimes"}, false, "", "not a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var c common
			fs := newFlagSet("serve")
			c.register(fs)
			fs.Bool("stateless", false, "")
			var errb strings.Builder
			ctx := withCLI(context.Background(), &cliContext{stdout: &errb, stderr: &errb})
			err := parseFlags(ctx, fs, append([]string{"--config", file}, tt.args...), &c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(errb.String()+err.Error(), tt.wantErr) {
					t.Fatalf("err = %v (%s), want %q", err, errb.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.cfg.MCP.Stateless != tt.wantStateless || c.cfg.Keys.Redis != tt.wantRedis {
				t.Fatalf("stateless %v redis %q, want %v %q", c.cfg.MCP.Stateless, c.cfg.Keys.Redis, tt.wantStateless, tt.wantRedis)
			}
		})
	}
}
