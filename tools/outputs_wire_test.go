package tools

import (
	"encoding/json"
	"testing"
)

// The session builtins' typed outputs write the bytes of the maps they
// replaced.
func TestSessionToolOutputsWireBytesUnchanged(t *testing.T) {
	at := int64(1_735_689_600_000)
	matches := []memoryMatch{{Name: "hp", Score: 2, UpdatedAt: at, Snippet: "<3>", ValueBytes: 1, Value: json.RawMessage(`3`)}}
	for _, c := range []struct {
		name     string
		old, got any
	}{
		{"query_memory", map[string]any{"query": "hp & mp", "total": 1, "scanned": 4, "matches": matches},
			memoryResult{Matches: matches, Query: "hp & mp", Scanned: 4, Total: 1}},
		{"get_variable unset", map[string]any{"name": "hp", "found": false, "value": nil}, variableResult{Name: "hp"}},
		{"get_variable", map[string]any{"name": "hp", "found": true, "value": json.RawMessage(`{"b": 1, "a": 2}`), "updated_at": at},
			variableResult{Found: true, Name: "hp", UpdatedAt: &at, Value: json.RawMessage(`{"b": 1, "a": 2}`)}},
		{"set_variable", map[string]any{"name": "hp", "bytes": 2, "updated_at": at}, variableSet{Bytes: 2, Name: "hp", UpdatedAt: at}},
	} {
		old, _ := json.Marshal(c.old)
		got, err := json.Marshal(c.got)
		if err != nil || string(got) != string(old) {
			t.Errorf("%s: %v\n got %s\nwant %s", c.name, err, got, old)
		}
	}
}
