package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/journal"
)

func TestLoadWithoutAFileIsTheDefault(t *testing.T) {
	c, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Hosted.Label != "toolhost" || c.MCP.SessionTimeout.D() != 30*time.Minute || c.Tools.DefaultTimeout.D() != time.Minute ||
		c.Tools.MaxResultBytes != 256<<10 || c.ShutdownTimeout.D() != 10*time.Second || c.Log.Sample() != 1 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string
		check   func(c config.Config) bool
	}{
		{"a file over the defaults", `{"tools": {"default_timeout": "90s"}, "log": {"call_sample": 0.1}}`, "",
			func(c config.Config) bool {
				return c.Tools.DefaultTimeout.D() == 90*time.Second && c.Log.Sample() == 0.1 && c.Hosted.Label == "toolhost"
			}},
		{"custom slots", `{"tools": {"slots": ["narrator", "gm-2"]}}`, "", func(c config.Config) bool { return len(c.Tools.Slots) == 2 }},
		{"a misspelt key", `{"tools": {"default_timout": "90s"}}`, `unknown field "default_timout"`, nil},
		{"a number for a duration", `{"shutdown_timeout": 10}`, `duration must be a string such as "30s") into Go struct field Config.shutdown_timeout`, nil},
		{"a bad slot name", `{"tools": {"slots": ["Narrator"]}}`, `tools.slots: "Narrator" is not a slot name`, nil},
		{"a slot twice", `{"tools": {"slots": ["a", "a"]}}`, `tools.slots: "a" is not a slot name`, nil},
		{"a slot with a Unicode look-alike", `{"tools": {"slots": ["nаrrator"]}}`, "is not a slot name", nil},
		{"a sample above one", `{"log": {"call_sample": 1.5}}`, "log.call_sample 1.5: want a fraction from 0 to 1", nil},
		{"a negative sample", `{"log": {"call_sample": -0.1}}`, "log.call_sample -0.1", nil},
		{"two documents", `{} {}`, "", func(config.Config) bool { return true }}, // as before: the first is read
		{"not an object", `[1, 2]`, "cannot unmarshal array", nil},
		{"a read-only open delay", `{"journal": {"read_only_open_delay": "20ms"}}`, "",
			func(c config.Config) bool { return c.Journal.OpenDelay() == 20*time.Millisecond }},
		{"the longest read-only open delay", `{"journal": {"read_only_open_delay": "1s"}}`, "",
			func(c config.Config) bool { return c.Journal.OpenDelay() == time.Second }},
		{"no read-only open delay: spooled at once", `{"journal": {"read_only_open_delay": "0s"}}`, "",
			func(c config.Config) bool { return c.Journal.OpenDelay() < 0 }},
		{"the read-only open delay by default", `{"journal": {}}`, "",
			func(c config.Config) bool { return c.Journal.OpenDelay() == journal.DefaultReadOnlyOpenDelay }},
		{"a negative read-only open delay", `{"journal": {"read_only_open_delay": "-1ms"}}`,
			`journal.read_only_open_delay "-1ms": want from "0s" (spool a read-only call's opened record before its tool runs) to "1s"`, nil},
		{"a read-only open delay past the bound", `{"journal": {"read_only_open_delay": "1.000000001s"}}`,
			`journal.read_only_open_delay "1.000000001s": want from "0s"`, nil},
		{"a huge read-only open delay", `{"journal": {"read_only_open_delay": "2562047h"}}`, `journal.read_only_open_delay "2562047h0m0s"`, nil},
		{"an overflowing read-only open delay", `{"journal": {"read_only_open_delay": "9999999999h"}}`,
			`invalid duration "9999999999h") into Go struct field Journal.journal.read_only_open_delay`, nil},
		{"a read-only open delay that is no duration", `{"journal": {"read_only_open_delay": "soon"}}`,
			`cannot unmarshal "soon" (time: invalid duration "soon") into Go struct field Journal.journal.read_only_open_delay`, nil},
		{"a read-only open delay without a unit", `{"journal": {"read_only_open_delay": "5"}}`, "missing unit", nil},
		{"a read-only open delay as a number", `{"journal": {"read_only_open_delay": 5}}`,
			`cannot unmarshal 5 (a duration must be a string such as "30s") into Go struct field Journal.journal.read_only_open_delay`, nil},
		{"a read-only open delay with a NUL", "{\"journal\": {\"read_only_open_delay\": \"5ms\\u0000\"}}", "read_only_open_delay", nil},
		{"fetch.max_redirects by default", `{"fetch": {}}`, "",
			func(c config.Config) bool { return c.Fetch.MaxRedirects != nil && *c.Fetch.MaxRedirects == 5 }},
		{"fetch.max_redirects 0 follows none", `{"fetch": {"max_redirects": 0}}`, "",
			func(c config.Config) bool { return c.Fetch.MaxRedirects != nil && *c.Fetch.MaxRedirects == 0 }},
		{"fetch.max_redirects 2", `{"fetch": {"max_redirects": 2}}`, "",
			func(c config.Config) bool { return c.Fetch.MaxRedirects != nil && *c.Fetch.MaxRedirects == 2 }},
		{"fetch.max_redirects null is the default", `{"fetch": {"max_redirects": null}}`, "",
			func(c config.Config) bool { return c.Fetch.MaxRedirects == nil }}, // fetchpage's default, 5
		{"fetch.max_redirects not an integer", `{"fetch": {"max_redirects": 1.5}}`, "cannot unmarshal number 1.5", nil},
		{"deeply nested", strings.Repeat(`{"hosted":`, 20000) + "{}" + strings.Repeat("}", 20000), "exceeded max depth", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("Load = %+v, %v", c, err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := config.Load(filepath.Join(t.TempDir(), "nope.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}
