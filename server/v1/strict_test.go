package v1_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// /v1 bodies are strict JSON: a duplicate key at any depth or data after
// the object is a 400 invalid_json, never "the last one wins".
func TestV1RefusesDuplicateKeysAndTrailingData(t *testing.T) {
	e := newProtocolEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"a","model":"fake-1","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","role":"system","content":"hi"}]}`},
		{"/v1/messages", `{"model":"fake-1","max_tokens":5,"messages":[{"role":"user","content":"hi"}]} x`},
		{"/v1/messages/count_tokens", `{"model":"fake-1","model":"fake-1","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"fake-1","input":"hi","input":"ho"}`},
	} {
		r := e.postTo(tc.path, tc.body, nil)
		if r.status != 400 || !strings.Contains(string(r.body), "invalid_json") {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, r.status, r.body)
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
}

// An error quotes at most a couple of hundred characters of what was sent:
// an 8 MB role name does not come back as a 24 MB answer.
func TestV1ErrorsDoNotEchoHugeValues(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 8 MB values through every route, seconds; runs in make test")
	}
	e := newProtocolEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{})
	huge := strings.Repeat("r", 8<<20)
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"` + huge + `","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"hi"}],"toolhost":{"` + huge + `":1},"tools":[{"type":"mcp","server_label":"toolhost"}]}`},
		{"/v1/messages", `{"model":"fake-1","max_tokens":5,"messages":[{"role":"` + huge + `","content":"hi"}]}`},
		{"/v1/responses", `{"model":"fake-1","input":[{"type":"` + huge + `"}]}`},
		{"/v1/chat/completions", `{"model":"` + huge + `","messages":[{"role":"user","content":"hi"}]}`},
	} {
		r := e.postTo(tc.path, tc.body, nil)
		if r.status < 400 || len(r.body) > 4096 || !json.Valid(r.body) {
			t.Errorf("%s: %d, %d bytes: %.300s", tc.path, r.status, len(r.body), r.body)
		}
	}
}

// An unreachable upstream is a 502 that says so without the route's URL
// or address (the log has them).
func TestUnreachableUpstreamDoesNotLeakItsURL(t *testing.T) {
	e := newProtocolEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{})
	u := e.fake.URL()
	_ = e.fake.Close()
	r := e.postTo("/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"hi"}]}`, nil)
	host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	host = strings.Split(host, "/")[0]
	if r.status != 502 || strings.Contains(string(r.body), host) || strings.Contains(string(r.body), "/chat/completions") {
		t.Fatalf("%d %s (route at %s)", r.status, r.body, u)
	}
}
