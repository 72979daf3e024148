package mcp

import "testing"

func TestLeadingMethod(t *testing.T) {
	for head, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"xxxx`: "initialize",
		`{"method":"initialize"`:                                     "initialize",
		`{"method":"tools/call","params":{"name":"get_time","argu`:   "tools/call",
		`{"jsonrpc":"2.0","id":{"a":[1,2,{"b":3}]},"method":"ping"}`: "ping",
		`{"\u006dethod":"initialize","params":{`:                     "initialize", // the key as encoding/json reads it
		`{"params":{"clientInfo":{"name":"xxxx`:                      "",           // cut before the method: unknown
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"`:             "",           // a batch
		`{"method":1}`:   "",
		`{"method":"ini`: "",
		`  `:             "",
		`"initialize"`:   "",
		`{"a":"b",,`:     "",
	} {
		if got := leadingMethod([]byte(head)); got != want {
			t.Errorf("%s: %q, want %q", head, got, want)
		}
	}
}
