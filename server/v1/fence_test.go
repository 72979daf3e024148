package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/fencetest"
	"github.com/toolhost/toolhost/tools/fetchpage"
)

// fencedStrings walks a JSON value and returns every string that opens
// an untrusted-data fence.
func fencedStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		if strings.Contains(v, `<untrusted-data boundary="`) {
			out = append(out, v)
		}
	case []any:
		for _, x := range v {
			out = append(out, fencedStrings(x)...)
		}
	case map[string]any:
		for _, x := range v {
			out = append(out, fencedStrings(x)...)
		}
	}
	return out
}

// overJSON is s as it comes out of a JSON string (an invalid byte as
// U+FFFD): the fake upstream records what it was sent as JSON.
func overJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// The fence battery through the hosted loop: every case, as a page a
// hosted fetch_page reads, in each /v1 format and on each upstream
// protocol. The tool message the fake upstream records as sent to the
// model holds the fetched text whole inside one boundary (the content
// fetch_page gives when called directly), and a page read as it was sent
// comes back byte for byte.
func TestHostedToolMessageKeepsTheBatteryInsideTheFence(t *testing.T) {
	cases := fencetest.Cases()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/case/"), ".txt"))
		if err != nil || i < 0 || i >= len(cases) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, cases[i].Content)
	}))
	t.Cleanup(site.Close)
	fp, err := fetchpage.New(fetchpage.Config{AllowPrivate: []string{"127.0.0.1"}, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	ex, err := tools.NewExecutor(tools.Options{}, fp)
	if err != nil {
		t.Fatal(err)
	}
	faces := []struct{ name, path, body string }{
		{"chat completions", "/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"weather"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["fetch_page"]}]}`},
		{"responses", "/v1/responses", `{"model":"fake-1","input":"weather","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["fetch_page"],"require_approval":"never"}]}`},
		{"messages", "/v1/messages", `{` + messagesPrefix + `,"messages":[{"role":"user","content":"weather"}],` + mcpServers + `,"tools":[{"type":"mcp_toolset","mcp_server_name":"LABEL"}]}`},
	}
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			u := fmt.Sprintf("%s/case/%d.txt", site.URL, i)
			args, _ := json.Marshal(map[string]string{"url": u})
			// What fetch_page reads, called directly: the page as sent,
			// unless its bytes say otherwise (a byte order mark) or it
			// is longer than one part.
			direct, err := ex.Execute(context.Background(), tools.Proposal{Tool: "fetch_page", Args: args,
				Caller: tools.Caller{Face: "v1", Identity: identity.Identity{AccountID: "acct_fence"}}})
			if err != nil || direct.IsError {
				t.Fatalf("fetch_page: %v %s %s", err, direct.Code, direct.Message)
			}
			read, ok := tools.Unfence(direct.Text)
			if !ok {
				t.Fatalf("fetch_page's own text is not fenced: %.200q", direct.Text)
			}
			var part struct {
				Content   string `json:"content"`
				Truncated bool   `json:"truncated"`
			}
			if err := json.Unmarshal(direct.Structured, &part); err != nil {
				t.Fatal(err)
			}
			// A first part ends with the way to the rest (in the caller's
			// language), inside the fence.
			switch page := "URL: " + u + "\n\n" + c.Content; {
			case part.Truncated && !strings.HasPrefix(read, "URL: "+u+"\n\n"+part.Content+"\n\n["):
				t.Fatalf("fetch_page's first part is not its fenced text: %.200q", read)
			case !part.Truncated && utf8.ValidString(c.Content) && read != page:
				t.Fatalf("fetch_page read %.200q, not the page", read)
			}
			want := overJSON(read)
			for _, protocol := range protocols {
				for _, face := range faces {
					t.Run(face.name+" on "+string(protocol), func(t *testing.T) {
						e := fenceEnv(t, ex, protocol, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
							{ToolCalls: []fakeupstream.ToolCall{call("call_1", "fetch_page", string(args))}},
							{Content: "It is fine."},
						}}}})
						resp := e.postTo(face.path, face.body, nil)
						if resp.status != http.StatusOK {
							t.Fatalf("status %d: %.300s", resp.status, resp.body)
						}
						reqs := e.upstreamRequests()
						if len(reqs) != 2 {
							t.Fatalf("%d model calls, want 2", len(reqs))
						}
						fenced := fencedStrings(reqs[1])
						if len(fenced) != 1 {
							t.Fatalf("%d fenced strings in the second model call, want the tool message's", len(fenced))
						}
						if !strings.HasPrefix(fenced[0], `<untrusted-data boundary="`) {
							t.Fatalf("the tool message does not start with the fence: %.200q", fenced[0])
						}
						fencetest.Check(t, fenced[0], want)
					})
				}
			}
		})
	}
}

// fenceEnv is a /v1 server whose hosted tools are ex's, its tool-capable
// route speaking protocol to the fake upstream.
func fenceEnv(t *testing.T, ex *tools.Executor, protocol loop.Dialect, script fakeupstream.Script) *env {
	t.Helper()
	fake, err := fakeupstream.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	var up loop.Upstream = openai.New(openai.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-test"})
	if protocol == loop.DialectAnthropic {
		up = anthropic.New(anthropic.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-ant-test"})
	}
	router, err := loop.NewRouter(&loop.Route{Name: "fake", Protocol: protocol, Models: []string{"fake-*"}, SupportsTools: true, Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	store := v1.NewRoundStore(0)
	h := v1.New(v1.Options{Label: "toolhost", Enabled: true, Router: router, Rounds: store, Runner: loop.NewRunner(ex, loop.RunnerOptions{Rounds: store})})
	hs := httptest.NewServer(server.New(server.Options{Routes: h.Routes()}).Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, label: "toolhost", url: hs.URL, fake: fake, rounds: store}
}
