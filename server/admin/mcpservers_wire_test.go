package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// The typed /mcp-servers responses and error bodies write the bytes of
// the maps they replaced.
func TestMCPServerWireBytesUnchanged(t *testing.T) {
	view := mcpServerView{ID: "mcpsrv_1", Name: "demo", URL: "http://a/?b=<c>&d", Headers: map[string]string{}, Tools: map[string]mcpremote.Override{}}
	for _, c := range []struct {
		name     string
		old, got any
	}{
		{"authorization", map[string]any{"data": map[string]any{"authorization_url": "http://as/authorize?a=1&b=<2>", "expires_at": int64(1700)}},
			envelope[authorizationView]{Data: authorizationView{AuthorizationURL: "http://as/authorize?a=1&b=<2>", ExpiresAt: 1700}}},
		{"deleted", map[string]any{"data": map[string]any{"id": "mcpsrv_1", "deleted": true}}, envelope[Deleted]{Data: Deleted{Deleted: true, ID: "mcpsrv_1"}}},
		{"one", map[string]any{"data": view}, envelope[mcpServerView]{Data: view}},
		{"list", map[string]any{"data": []mcpServerView{view}}, envelope[[]mcpServerView]{Data: []mcpServerView{view}}},
	} {
		old, _ := json.Marshal(c.old)
		got, err := json.Marshal(c.got)
		if err != nil || string(got) != string(old) {
			t.Errorf("%s: %v\n got %s\nwant %s", c.name, err, got, old)
		}
	}
	blocked := "the URL reaches a private, loopback or link-local address, which MCP servers may not use unless the operator lists it in fetch.allow_private"
	coded := &mcpremote.FieldError{Field: "auth", Msg: "needs <more> & more"}
	coded.Code = "auth_invalid"
	for _, c := range []struct {
		err error
		old map[string]any
	}{
		{&mcpremote.FieldError{Field: "url", Msg: "is not a URL"}, map[string]any{"code": "validation_error", "message": "url: is not a URL", "field": "url"}},
		{coded, map[string]any{"code": "auth_invalid", "message": "auth: needs <more> & more", "field": "auth"}},
		{errURLBlocked{errors.New("x")}, map[string]any{"code": "url_not_allowed", "field": "url", "message": blocked}},
	} {
		rec := httptest.NewRecorder()
		writeMCPErr(rec, c.err)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(map[string]any{"error": c.old})
		if rec.Code != 400 || rec.Body.String() != want.String() {
			t.Errorf("%v: %d\n got %s\nwant %s", c.err, rec.Code, rec.Body, want.String())
		}
	}
}
