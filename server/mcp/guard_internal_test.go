package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

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

// A JSON-RPC error written before the SDK sees the request has the bytes
// of the map it was.
func TestRPCErrorWritesTheMapsBytes(t *testing.T) {
	for _, id := range []json.RawMessage{nil, json.RawMessage(`7`), json.RawMessage(`{"a": "<b>"}`)} {
		rec := httptest.NewRecorder()
		rpcError(rec, http.StatusBadRequest, id, -32600, "bad <request> & more")
		if id == nil {
			id = json.RawMessage("null")
		}
		want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32600, "message": "bad <request> & more"}})
		if got := rec.Body.String(); got != string(want)+"\n" {
			t.Errorf("id %s\n got %s\nwant %s", id, got, want)
		}
	}
}
