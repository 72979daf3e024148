package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// mapJSON is what WriteJSON wrote for a map before structs replaced the
// maps: sorted keys, HTML not escaped, a newline.
func mapJSON(t *testing.T, m map[string]any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// /healthz writes the binary's fields beside status and version, every key
// in sorted order: the bytes of the map it was.
func TestHealthWritesTheMapsBytes(t *testing.T) {
	type pool struct {
		Warm int    `json:"warm"`
		Lang string `json:"lang"`
	}
	type fields struct {
		RunCode []pool `json:"run_code"`
		Hosted  any    `json:"hosted"`
		Status  string `json:"status"`
	}
	f := fields{RunCode: []pool{{2, "python"}}, Hosted: map[string]string{"url": "http://a/?b=1&c=<2>"}, Status: "mine"}
	code, got := get(t, New(Options{Version: "v1.2", Health: func() any { return f }}).Handler(), "/healthz")
	want := mapJSON(t, map[string]any{"run_code": f.RunCode, "hosted": f.Hosted, "status": "ok", "version": "v1.2"})
	if code != http.StatusOK || got != want {
		t.Fatalf("%d\n got %s\nwant %s", code, got, want)
	}
	code, got = get(t, New(Options{}).Handler(), "/healthz")
	if want := mapJSON(t, map[string]any{"status": "ok", "version": ""}); code != http.StatusOK || got != want {
		t.Fatalf("without health fields: %d\n got %s\nwant %s", code, got, want)
	}
}

// The error body of every REST route is the map's bytes.
func TestWriteErrorWritesTheMapsBytes(t *testing.T) {
	code, got := get(t, New(Options{}).Handler(), "/nowhere?a=<b>&c")
	want := mapJSON(t, map[string]any{"error": map[string]any{"code": "not_found", "message": "no route for GET /nowhere"}})
	if code != http.StatusNotFound || got != want {
		t.Fatalf("%d\n got %s\nwant %s", code, got, want)
	}
}
