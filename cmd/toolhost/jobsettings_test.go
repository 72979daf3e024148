package main

import (
	"strings"
	"testing"
)

// toolhost jobs limits and delivery change an account's settings in the
// store, refuse bad input with a usage exit, and leave other accounts
// alone.
func TestJobsLimitsAndDeliveryCommands(t *testing.T) {
	steps := []struct {
		name string
		args []string
		code int
		want string // in stdout, or in stderr when code is not exitOK
	}{
		{"limits at first", []string{"jobs", "limits"}, exitOK, `"max_running": 0`},
		{"set running and retention", []string{"jobs", "limits", "--max-running", "2", "--result-retention", "90m"}, exitOK, `"result_retention_s": 5400`},
		{"set jobs keeps the rest", []string{"jobs", "limits", "--max-jobs", "7"}, exitOK, `"max_running": 2`},
		{"another account", []string{"jobs", "limits", "--account", "acme"}, exitOK, `"max_jobs": 0`},
		{"negative", []string{"jobs", "limits", "--max-jobs", "-1"}, exitUsage, "max_jobs"},
		{"retention under a second", []string{"jobs", "limits", "--result-retention", "1ms"}, exitUsage, "at least 1s"},
		{"bad account", []string{"jobs", "limits", "--account", "Acme\u202e"}, exitUsage, "account"},
		{"delivery at first", []string{"jobs", "delivery", "fetch_page"}, exitOK, `"default_delivery_mode_basis": "tool_declared"`},
		{"defer fetch_page", []string{"jobs", "delivery", "fetch_page", "async_job"}, exitOK, `"override": "async_job"`},
		{"inline_only refused", []string{"jobs", "delivery", "get_time", "async_job"}, exitUsage, "delivery_unsupported"},
		{"look-alike name", []string{"jobs", "delivery", "fetch_p\u0430ge", "inline"}, exitUsage, "no builtin tool"},
		{"huge name", []string{"jobs", "delivery", strings.Repeat("x", 1<<14)}, exitUsage, "no builtin tool"},
		{"invalid mode", []string{"jobs", "delivery", "fetch_page", "later"}, exitUsage, "inline or async_job"},
		{"back to the tool's own", []string{"jobs", "delivery", "fetch_page", "default"}, exitOK, `"override": null`},
	}
	for name, extra := range journalBackends(t) {
		t.Run(name, func(t *testing.T) {
			store := append([]string{"--data", t.TempDir()}, extra...)
			for _, s := range steps {
				code, out, errOut := runCLI(t, append(s.args, store...)...)
				got := out
				if s.code != exitOK {
					got = errOut
				}
				if code != s.code || !strings.Contains(got, s.want) {
					t.Fatalf("%s: exit %d, want %d with %q\n%s\n%s", s.name, code, s.code, s.want, out, errOut)
				}
			}
		})
	}
}
