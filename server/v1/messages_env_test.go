package v1_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/server/v1/upstream/responses"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/sleep"
)

// protocols: every Messages test runs against the fake upstream speaking
// each upstream protocol.
var protocols = []loop.Dialect{loop.DialectOpenAI, loop.DialectAnthropic}

// newProtocolEnv is newEnvScript with the tool-capable route speaking
// protocol (the fake serves both wire formats on one port).
func newProtocolEnv(t *testing.T, label string, protocol loop.Dialect, script fakeupstream.Script, opts ...envOption) *env {
	t.Helper()
	return newExecEnv(t, label, protocol, script, tools.Options{}, opts...)
}

// newExecEnv is newProtocolEnv with the executor's options (its approval
// store, its policies).
func newExecEnv(t *testing.T, label string, protocol loop.Dialect, script fakeupstream.Script, eo tools.Options, opts ...envOption) *env {
	t.Helper()
	return newToolsEnv(t, label, protocol, script, eo, nil, opts...)
}

// newToolsEnv is newExecEnv publishing extra tools besides envTools.
func newToolsEnv(t *testing.T, label string, protocol loop.Dialect, script fakeupstream.Script, eo tools.Options, extra []tools.Tool, opts ...envOption) *env {
	t.Helper()
	fake, err := fakeupstream.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	sl := sleep.New()
	ex, err := tools.NewExecutor(eo, append(envTools(sl), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingExec{Executor: ex, started: make(chan struct{}, 16), finished: make(chan *tools.Outcome, 64)}
	store := v1.NewRoundStore(0)
	var up loop.Upstream = openai.New(openai.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-test"})
	switch protocol {
	case loop.DialectAnthropic:
		up = anthropic.New(anthropic.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-ant-test"})
	case loop.DialectResponses:
		up = responses.New(responses.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-test"})
	}
	router, err := loop.NewRouter(
		&loop.Route{Name: "fake", Protocol: protocol, Models: []string{"fake-*"}, SupportsTools: true,
			Prices: map[string]loop.Price{"*": {Input: 1_000_000, CachedInput: 500_000, Output: 2_000_000}}, Upstream: up},
		&loop.Route{Name: "text-only", Protocol: protocol, Models: []string{"text-*"}, SupportsTools: false, Upstream: up},
	)
	if err != nil {
		t.Fatal(err)
	}
	o := v1.Options{Label: label, Enabled: true, Router: router, Rounds: store}
	for _, f := range opts {
		f(&o, rec)
	}
	o.Runner = loop.NewRunner(rec, loop.RunnerOptions{Rounds: store})
	h := v1.New(o)
	srv := server.New(server.Options{Routes: h.Routes()})
	hs := httptest.NewServer(testKey(pinnedRequestIDs(srv.Handler())))
	t.Cleanup(hs.Close)
	return &env{t: t, label: label, url: hs.URL, fake: fake, exec: rec, sleep: sl, rounds: store}
}

// postTo sends body (LABEL replaced) to path with the MCP beta header
// unless hdr sets anthropic-beta ("" leaves it out).
func (e *env) postTo(path, body string, hdr map[string]string) response {
	e.t.Helper()
	body = strings.ReplaceAll(body, "LABEL", e.label)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "req_golden")
	req.Header.Set("anthropic-beta", "mcp-client-2025-11-20")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// sseEvent is one named server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// namedEvents parses an event stream of "event:" and "data:" lines.
func namedEvents(t *testing.T, b []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			dec := json.NewDecoder(strings.NewReader(strings.TrimPrefix(line, "data: ")))
			dec.UseNumber()
			if err := dec.Decode(&d); err != nil {
				t.Fatalf("event data is not JSON: %v: %s", err, line)
			}
			if d["type"] != name {
				t.Errorf("event %q carries type %v", name, d["type"])
			}
			out = append(out, sseEvent{name: name, data: d})
			name = ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// normalizedEvents renders an event stream for a golden file: one
// normalized event per line.
func normalizedEvents(t *testing.T, b []byte, label string) []byte {
	var buf bytes.Buffer
	for _, ev := range namedEvents(t, b) {
		buf.WriteString(ev.name)
		buf.WriteByte(' ')
		buf.Write(encodeJSON(normalize(ev.data, label), false))
	}
	return buf.Bytes()
}

// assembleStream rebuilds the message a Messages stream describes, the way
// a client accumulates it, checking the seed's sequence rules on the way:
// one message_start first; block indexes contiguous from 0 in sending
// order; every block started once, deltas only to open blocks, stopped
// once; message_delta then message_stop last.
func assembleStream(t *testing.T, b []byte, label string) map[string]any {
	t.Helper()
	evs := namedEvents(t, b)
	if len(evs) < 3 || evs[0].name != "message_start" {
		t.Fatalf("stream does not start with message_start: %v", evs)
	}
	n := len(evs)
	if evs[n-2].name != "message_delta" || evs[n-1].name != "message_stop" {
		t.Fatalf("stream does not end with message_delta, message_stop")
	}
	if _, ok := evs[n-1].data[label]; !ok {
		t.Errorf("message_stop without the %s field", label)
	}
	msg := evs[0].data["message"].(map[string]any)
	var blocks []map[string]any
	partial := map[int]*strings.Builder{}
	open := map[int]bool{}
	for _, ev := range evs[1 : n-2] {
		switch ev.name {
		case "message_start", "message_delta", "message_stop":
			t.Fatalf("%s in the middle of the stream", ev.name)
		case "content_block_start":
			i := jsonInt(ev.data["index"])
			if i != len(blocks) {
				t.Fatalf("block index %d, want %d (contiguous)", i, len(blocks))
			}
			blk := ev.data["content_block"].(map[string]any)
			blocks = append(blocks, blk)
			open[i] = true
			partial[i] = &strings.Builder{}
		case "content_block_delta":
			i := jsonInt(ev.data["index"])
			if !open[i] {
				t.Fatalf("delta for block %d, which is not open", i)
			}
			d := ev.data["delta"].(map[string]any)
			blk := blocks[i]
			switch d["type"] {
			case "text_delta":
				blk["text"] = blk["text"].(string) + d["text"].(string)
			case "thinking_delta":
				blk["thinking"] = blk["thinking"].(string) + d["thinking"].(string)
			case "signature_delta":
				blk["signature"] = blk["signature"].(string) + d["signature"].(string)
			case "input_json_delta":
				partial[i].WriteString(d["partial_json"].(string))
			case "citations_delta":
				cs, _ := blk["citations"].([]any)
				blk["citations"] = append(cs, d["citation"])
			default:
				t.Fatalf("unknown delta %v", d["type"])
			}
		case "content_block_stop":
			i := jsonInt(ev.data["index"])
			if !open[i] {
				t.Fatalf("stop for block %d, which is not open", i)
			}
			open[i] = false
			if s := partial[i].String(); s != "" {
				var in any
				dec := json.NewDecoder(strings.NewReader(s))
				dec.UseNumber()
				if err := dec.Decode(&in); err != nil {
					t.Fatalf("block %d input %q: %v", i, s, err)
				}
				blocks[i]["input"] = in
			}
		case "ping":
		default:
			t.Fatalf("unknown event %s", ev.name)
		}
	}
	for i, o := range open {
		if o {
			t.Errorf("block %d never stopped", i)
		}
	}
	// Within each run of hosted blocks, the mcp_tool_use blocks come before
	// the mcp_tool_result blocks, in the same order.
	var uses, results []string
	check := func() {
		if len(uses) != len(results) {
			t.Errorf("round with %d mcp_tool_use and %d mcp_tool_result", len(uses), len(results))
		}
		for i := range min(len(uses), len(results)) {
			if uses[i] != results[i] {
				t.Errorf("mcp_tool_result %d is for %s, want %s (same order)", i, results[i], uses[i])
			}
		}
		uses, results = nil, nil
	}
	for _, blk := range blocks {
		switch blk["type"] {
		case "mcp_tool_use":
			if len(results) > 0 {
				check()
			}
			uses = append(uses, blk["id"].(string))
		case "mcp_tool_result":
			results = append(results, blk["tool_use_id"].(string))
		default:
			if len(uses)+len(results) > 0 {
				check()
			}
		}
	}
	if len(uses)+len(results) > 0 {
		check()
	}
	content := make([]any, len(blocks))
	for i, b := range blocks {
		content[i] = b
	}
	msg["content"] = content
	delta := evs[n-2].data
	for k, v := range delta["delta"].(map[string]any) {
		msg[k] = v
	}
	msg["usage"] = delta["usage"]
	msg[label] = evs[n-1].data[label]
	return msg
}

func jsonInt(v any) int {
	n, _ := v.(json.Number).Int64()
	return int(n)
}
