package v1_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// pageFormats are the three formats' requests enabling get_time, with a
// %s where a metadata member goes.
var pageFormats = []struct{ name, path, body string }{
	{"chat", "/v1/chat/completions", `{"model":"m",%s"messages":[{"role":"user","content":"time?"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}]}`},
	{"chat-stream", "/v1/chat/completions", `{"model":"m","stream":true,%s"messages":[{"role":"user","content":"time?"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}]}`},
	{"responses", "/v1/responses", `{"model":"m",%s"input":"time?","tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"],"require_approval":"never"}]}`},
	{"messages", "/v1/messages", `{"model":"m","max_tokens":100,%s"messages":[{"role":"user","content":"time?"}],` +
		`"mcp_servers":[{"type":"url","url":"https://example.invalid/mcp","name":"toolhost"}],` +
		`"tools":[{"type":"mcp_toolset","mcp_server_name":"toolhost","default_config":{"enabled":false},"configs":{"get_time":{"enabled":true}}}]}`},
}

func newPageEnv(t *testing.T) *env {
	t.Helper()
	ex, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	return serveAccountLoop(t, ex, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_time", "get_time", `{}`)}},
		{Content: "It is noon."},
	}}}})
}

// postPage sends body to path with the headers as given (a header may
// repeat) and the request id req_page.
func postPage(t *testing.T, e *env, path, body string, hdr http.Header) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "req_page")
	req.Header.Set("anthropic-beta", "mcp-client-2025-11-20")
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// A /v1 request names the caller's page with X-Toolhost-Page-Id or
// metadata.page_id (both, when they agree): every format, streaming too,
// journals its hosted calls under that page, and call-records finds them
// by page alone. Without either, page_id stays null.
func TestHostedCallsCarryTheCallersPage(t *testing.T) {
	for _, f := range pageFormats {
		for _, c := range []struct {
			name, meta string
			hdr        http.Header
			want       any
		}{
			{name: "header", hdr: http.Header{"X-Toolhost-Page-Id": {"page_7"}}, want: "page_7"},
			{name: "metadata", meta: `"metadata":{"page_id":"page:7.b-c"},`, want: "page:7.b-c"},
			{name: "both", meta: `"metadata":{"page_id":"page_7"},`, hdr: http.Header{"X-Toolhost-Page-Id": {"page_7"}}, want: "page_7"},
			{name: "none", want: nil},
		} {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				e := newPageEnv(t)
				resp := postPage(t, e, f.path, fmt.Sprintf(f.body, c.meta), c.hdr)
				// The answer, whole or streamed in pieces, after the hosted call.
				if b := string(resp.body); resp.status != http.StatusOK || !strings.Contains(b, "get_time") || !strings.Contains(b, "on.") {
					t.Fatalf("%d %s", resp.status, resp.body)
				}
				recs := (&customEnv{env: e}).getJSON("/tool-executions?floor_id=req_page")["data"].([]any)
				if len(recs) != 1 {
					t.Fatalf("executions %v", recs)
				}
				if r := recs[0].(map[string]any); r["page_id"] != c.want || r["tool_name"] != "get_time" || r["status"] != "success" {
					t.Errorf("record %v, want page_id %v", r, c.want)
				}
				if c.want == nil {
					return
				}
				legacy := (&customEnv{env: e}).getJSON("/tools/call-records?page_id=" + c.want.(string))["data"].([]any)
				if len(legacy) != 1 || legacy[0].(map[string]any)["page_id"] != c.want {
					t.Errorf("call-records by page: %v", legacy)
				}
			})
		}
	}
}

// A page id outside the rule, a repeated header, or a header and a
// metadata member that disagree are a 400 naming where the page came
// from, before any model round, on every format.
func TestHostedRequestRefusesBadPageIDs(t *testing.T) {
	for _, f := range pageFormats {
		for _, c := range []struct {
			name, meta string
			hdr        http.Header
			param      string
		}{
			{name: "space", hdr: http.Header{"X-Toolhost-Page-Id": {"page 7"}}, param: "X-Toolhost-Page-Id"},
			{name: "huge", hdr: http.Header{"X-Toolhost-Page-Id": {strings.Repeat("p", tools.MaxPageIDBytes+1)}}, param: "X-Toolhost-Page-Id"},
			{name: "markup", hdr: http.Header{"X-Toolhost-Page-Id": {`"><script>`}}, param: "X-Toolhost-Page-Id"},
			{name: "twice", hdr: http.Header{"X-Toolhost-Page-Id": {"page_7", "page_8"}}, param: "X-Toolhost-Page-Id"},
			{name: "disagree", meta: `"metadata":{"page_id":"page_8"},`, hdr: http.Header{"X-Toolhost-Page-Id": {"page_7"}}, param: "X-Toolhost-Page-Id"},
			{name: "metadata-bidi", meta: `"metadata":{"page_id":"page_\u202e7"},`, param: "metadata.page_id"},
			{name: "metadata-nul", meta: `"metadata":{"page_id":"page\u00007"},`, param: "metadata.page_id"},
			{name: "metadata-fullwidth", meta: `"metadata":{"page_id":"ｐａｇｅ_7"},`, param: "metadata.page_id"},
			{name: "metadata-empty", meta: `"metadata":{"page_id":""},`, param: "metadata.page_id"},
		} {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				e := newPageEnv(t)
				resp := postPage(t, e, f.path, fmt.Sprintf(f.body, c.meta), c.hdr)
				if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), c.param) ||
					!strings.Contains(strings.ToLower(string(resp.body)), "page") || len(resp.body) > 2000 {
					t.Errorf("%d %.600s; want a 400 naming %s", resp.status, resp.body, c.param)
				}
				if n := len(e.upstreamRequests()); n != 0 {
					t.Errorf("%d model rounds spent on a refused request", n)
				}
			})
		}
	}
}

// A session id outside the rule of session ids, from metadata or the
// X-Session-Id header, is refused before any model round, naming where it
// came from.
func TestHostedRequestRefusesBadSessionIDs(t *testing.T) {
	for _, f := range pageFormats {
		for _, c := range []struct {
			name, meta string
			hdr        http.Header
			param      string
		}{
			{name: "huge", hdr: http.Header{"X-Session-Id": {strings.Repeat("s", 129)}}, param: "X-Session-Id"},
			{name: "megabyte", hdr: http.Header{"X-Session-Id": {strings.Repeat("s", 512<<10)}}, param: "X-Session-Id"},
			{name: "space", hdr: http.Header{"X-Session-Id": {"sess 7"}}, param: "X-Session-Id"},
			{name: "markup", hdr: http.Header{"X-Session-Id": {`"><script>`}}, param: "X-Session-Id"},
			{name: "metadata-bidi", meta: `"metadata":{"session_id":"sess_\u202e7"},`, param: "metadata.session_id"},
			{name: "metadata-nul", meta: `"metadata":{"session_id":"sess\u00007"},`, param: "metadata.session_id"},
			{name: "metadata-fullwidth", meta: `"metadata":{"session_id":"ｓｅｓｓ_7"},`, param: "metadata.session_id"},
			{name: "metadata-wins", meta: `"metadata":{"session_id":"sess<7>"},`, hdr: http.Header{"X-Session-Id": {"sess_7"}}, param: "metadata.session_id"},
		} {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				e := newPageEnv(t)
				resp := postPage(t, e, f.path, fmt.Sprintf(f.body, c.meta), c.hdr)
				if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), c.param) ||
					!strings.Contains(string(resp.body), "session id") || len(resp.body) > 2000 {
					t.Errorf("%d %.600s; want a 400 naming %s", resp.status, resp.body, c.param)
				}
				if n := len(e.upstreamRequests()); n != 0 {
					t.Errorf("%d model rounds spent on a refused request", n)
				}
			})
		}
	}
}
