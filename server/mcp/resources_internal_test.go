package mcp

import (
	"strings"
	"testing"
)

// FuzzExecutionID: a URI names an execution only in the one canonical
// spelling ExecutionURI writes.
func FuzzExecutionID(f *testing.F) {
	f.Add("toolhost://executions/0192e4a1-7b3c-7def-8abc-0123456789ab")
	f.Add("toolhost://executions/../x")
	f.Add("toolhost://executions/0192E4A1-7B3C-7DEF-8ABC-0123456789AB")
	f.Add("toolhost://executions/{0192e4a1-7b3c-7def-8abc-0123456789ab}")
	f.Fuzz(func(t *testing.T, uri string) {
		id, ok := executionID(uri)
		if !ok {
			return
		}
		if ExecutionURI(id) != uri || len(id) != 36 || strings.Trim(id, "0123456789abcdef-") != "" {
			t.Fatalf("executionID(%q) = %q", uri, id)
		}
	})
}
