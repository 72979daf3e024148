package main

import (
	"strings"
	"testing"
)

// journal prune deletes the records created before its date and keeps the
// others; a date it cannot read is a usage error naming the forms it takes.
func TestJournalPruneDeletesRecordsBeforeTheDate(t *testing.T) {
	data := t.TempDir()
	for range 2 {
		if code, _, errOut := runCLI(t, "call", "--data", data, "roll_dice", `{"sides":6}`); code != 0 {
			t.Fatalf("call: %d %s", code, errOut)
		}
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"nothing is that old", []string{"--before", "2000-01-01"}, 0, "deleted 0 records created before 2000-01-01T00:00:00Z", ""},
		{"no date", nil, 2, "", "--before DATE is required"},
		{"not a date", []string{"--before", "yesterday"}, 2, "", `--before "yesterday": want a date`},
		{"a huge argument is clipped", []string{"--before", strings.Repeat("9", 10000)}, 2, "", "…\": want a date"},
		{"unicode digits", []string{"--before", "２０２６-01-01"}, 2, "", "want a date"},
		{"an argument", []string{"--before", "2000-01-01", "extra"}, 2, "", `unexpected argument "extra"`},
		{"everything before 2999", []string{"--before", "2999-01-01T00:00:00+02:00"}, 0, "deleted 2 records created before 2998-12-31T22:00:00Z", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"journal", "prune", "--data", data}, c.args...)...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
				t.Fatalf("exit %d, out %q, err %q; want %d, %q, %q", code, out, errOut, c.code, c.out, c.err)
			}
		})
	}
	if _, out, _ := runCLI(t, "journal", "--data", data); !strings.Contains(out, "0 of 0 executions") {
		t.Fatalf("after pruning: %s", out)
	}
}
