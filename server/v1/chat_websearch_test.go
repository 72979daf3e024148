package v1_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
)

// Chat Completions' web_search_options served by the hosted web_search for
// a model without it: the option does not reach the upstream, the search
// runs in the loop (in the extension field's tool_calls), and the answer's
// link to a result is a url_citation annotation on the message — in the
// JSON answer, and in a delta of its own before the finish when streaming.
func TestChatWebSearchOptionsServed(t *testing.T) {
	rounds := []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_s", "web_search", `{"query":"perovskite sealing"}`)}, Usage: usage(30, 5, 0, 0)},
		{Content: "Glass–glass lamination: " + citedURL, Usage: usage(60, 9, 0, 0)},
	}
	body := `{"model":"fake-1","messages":[{"role":"user","content":"how are perovskites sealed?"}],"web_search_options":{"search_context_size":"low","user_location":{"type":"approximate","approximate":{"country":"FR"}}}}`
	for _, p := range protocols {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s", p, modeName(stream)), func(t *testing.T) {
				e := newToolsEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}}, tools.Options{}, searxngTools(t))
				b := body
				if stream {
					b = strings.Replace(b, "{", `{"stream":true,`, 1)
				}
				resp := e.postTo("/v1/chat/completions", b, nil)
				if resp.status != http.StatusOK {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				name := fmt.Sprintf("chat_web_search_options.%s.%s.golden", p, modeName(stream))
				var anns []any
				if stream {
					golden(t, name, chatClockFree(p, normalizedStream(t, resp.body, "toolhost")))
					for _, ev := range sseEvents(t, resp.body) {
						if ev == "[DONE]" {
							continue
						}
						c := decodeJSON(t, []byte(ev)).(map[string]any)
						if ch, _ := c["choices"].([]any); len(ch) == 1 {
							if a, ok := ch[0].(map[string]any)["delta"].(map[string]any)["annotations"].([]any); ok {
								anns = append(anns, a...)
							}
						}
					}
				} else {
					golden(t, name, chatClockFree(p, normalizedBody(t, resp.body, "toolhost")))
					out := decodeJSON(t, resp.body).(map[string]any)
					msg := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
					anns, _ = msg["annotations"].([]any)
				}
				if len(anns) != 1 {
					t.Fatalf("annotations %v", anns)
				}
				uc := anns[0].(map[string]any)["url_citation"].(map[string]any)
				text := []rune("Glass–glass lamination: " + citedURL)
				if uc["url"] != citedURL || string(text[jsonInt(uc["start_index"]):jsonInt(uc["end_index"])]) != citedURL {
					t.Errorf("annotation %v", anns[0])
				}
				props := e.exec.Proposals()
				if len(props) != 1 || props[0].Tool != "web_search" {
					t.Fatalf("proposals %v", props)
				}
				if p == loop.DialectOpenAI {
					for _, r := range e.upstreamRequests() {
						if _, ok := r["web_search_options"]; ok {
							t.Errorf("web_search_options sent upstream")
						}
					}
				}
			})
		}
	}
}

// Without a search provider, web_search_options is refused, naming why.
func TestChatWebSearchOptionsWithoutProvider(t *testing.T) {
	e := newEnv(t, "toolhost", nil)
	resp := e.postTo("/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"web_search_options":{}}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "no search provider") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	resp = e.postTo("/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"web_search_options":[1]}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "must be an object") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
}

var chatCreated = regexp.MustCompile(`("created": ?)[0-9]+`)

// chatClockFree pins "created" over an Anthropic upstream, which sends no
// creation time (the face stamps the clock's).
func chatClockFree(p loop.Dialect, b []byte) []byte {
	if p != loop.DialectAnthropic {
		return b
	}
	return chatCreated.ReplaceAll(b, []byte("${1}0"))
}
