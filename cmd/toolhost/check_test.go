package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolhost check refuses a config file with a number out of its range (or
// a share above its whole):
// exit 2 (exitUsage), the error names the file, the full key and what it
// accepts, and nothing is printed as valid.
func TestCheckRefusesANumberOutOfRange(t *testing.T) {
	tests := []struct{ file, want string }{
		{`{"journal": {"commit_delay": "-1s"}}`, `journal.commit_delay "-1s": want from "0s" (never waits) to "1s"`},
		{`{"journal": {"apply_interval": "-1ms"}}`, `journal.apply_interval "-1ms"`},
		{`{"journal": {"retention": "1h"}}`, `journal.retention "1h0m0s": want "0s" (the default: records are kept) or from "24h0m0s"`},
		{`{"journal": {"retention": "2d", "idempotency_retention": "72h"}}`, `journal.retention "48h0m0s"`},
		{`{"journal": {"max_rows": -1}}`, `journal.max_rows -1: want 0`},
		{`{"server": {"trusted_proxies": ["10.0.0.1", "example.com"]}}`, `server.trusted_proxies "example.com": want an IP address or a CIDR range`},
		{`{"fetch": {"max_redirects": -1}}`, `fetch.max_redirects -1: want 0 (follow none) or more (the default is 5)`},
		{`{"sandbox": {"memory_limit_mib": 1048576}}`, `sandbox.memory_limit_mib 1048576: want 0 (the default, 256) to 4096`},
		{`{"server": {"memory_limit_mib": 64}}`, `server.memory_limit_mib 64`},
		{`{"journal": {"apply_interval": "1h"}}`, `journal.apply_interval "1h0m0s": want from "0s" (the default, 200ms) to "1m0s"`},
		{`{"fetch": {"robots_ttl": "48h"}}`, `fetch.robots_ttl "48h0m0s": want from "0s" (the default, 1h) to "24h0m0s"`},
		{`{"mcp": {"sessions_per_key": 300, "sessions": 200}}`, `mcp.sessions_per_key 300: want at most mcp.sessions (200)`},
		{`{"sandbox": {"concurrency": 2, "per_account_concurrency": 3}}`, `sandbox.per_account_concurrency 3: want at most sandbox.concurrency (2)`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "check", "--config", path)
			if code != exitUsage || !strings.Contains(errOut, path) || !strings.Contains(errOut, tt.want) || strings.Contains(out, "is valid") {
				t.Fatalf("check = %d\nstdout: %s\nstderr: %s\nwant exit %d and %q", code, out, errOut, exitUsage, tt.want)
			}
		})
	}
}
