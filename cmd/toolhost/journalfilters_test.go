package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolhost journal's filters follow the REST rule: a value outside an
// enum (caller_slot included, against the config's slots) or a hostile
// text value exits 2 naming what is allowed, before the store is opened;
// a page id is a filter like the others.
func TestJournalFlagsRefuseValuesOutsideTheirEnum(t *testing.T) {
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "slots.json")
	if err := os.WriteFile(cfg, []byte(`{"tools": {"slots": ["hero", "narrator"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"slot outside the default slots", []string{"--caller-slot", "villain"}, exitUsage, `caller_slot must be one of narrator, director, verifier, memory, not "villain"`},
		{"slot of the config", []string{"--config", cfg, "--caller-slot", "hero"}, exitOK, ""},
		{"default slot the config replaced", []string{"--config", cfg, "--caller-slot", "director"}, exitUsage, `caller_slot must be one of hero, narrator`},
		{"custom provider", []string{"--provider-type", "custom"}, exitUsage, `provider_type must be one of builtin, preset, mcp, unknown`},
		{"every provider type", []string{"--provider-type", "unknown"}, exitOK, ""},
		{"look-alike status", []string{"--status", "succ\u0435ss"}, exitUsage, `not "succ\u0435ss"`},
		{"nul in a text filter", []string{"--session-id", "s\x00"}, exitUsage, `session_id has the control character U+0000`},
		{"page id", []string{"--page-id", "page_1"}, exitOK, ""},
		{"bad page id", []string{"--page-id", "page 1"}, exitUsage, `page_id "page 1" is refused`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"journal", "--data", data}, c.args...)...)
			if code != c.wantCode || !strings.Contains(errOut, c.wantErr) {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", code, errOut, out, c.wantCode, c.wantErr)
			}
		})
	}
}
