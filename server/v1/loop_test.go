package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// Rule 1: hosted tools are function definitions after the caller's, with
// descriptions in the Accept-Language language (en* → English, else
// Chinese, no header → Chinese).
func TestHostedDefinitionsFollowCallerFunctionsInRequestLanguage(t *testing.T) {
	cases := []struct {
		header string
		want   string
	}{
		{"", "返回指定时区"},
		{"en-US,en;q=0.9", "Returns the current time"},
		{"zh-CN", "返回指定时区"},
		{"fr-FR", "返回指定时区"},
	}
	for _, label := range labels {
		for _, tc := range cases {
			t.Run(label+"/"+tc.header, func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{{Content: "ok"}})
				hdr := map[string]string{}
				if tc.header != "" {
					hdr["Accept-Language"] = tc.header
				}
				resp := e.post(context.Background(), `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["sleep","get_time"]},`+weatherFn+`]}`, hdr)
				if resp.status != http.StatusOK {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				ts := e.upstreamRequests()[0]["tools"].([]any)
				var names []string
				for _, x := range ts {
					names = append(names, x.(map[string]any)["function"].(map[string]any)["name"].(string))
				}
				// The caller's function first, verbatim; then the hosted
				// tools in publishing order.
				if strings.Join(names, ",") != "get_weather,get_time,sleep" {
					t.Fatalf("tool order %v", names)
				}
				desc := ts[1].(map[string]any)["function"].(map[string]any)["description"].(string)
				if !strings.HasPrefix(desc, tc.want) {
					t.Errorf("description %q, want it to start with %q", desc, tc.want)
				}
				params := ts[1].(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any)
				if params["type"] != "object" {
					t.Errorf("parameters %v", params)
				}
			})
		}
	}
}

// Rule 2: at most 4 hosted calls run at once; results go back in the
// model's order whatever order they finish in.
func TestHostedCallsRunAtMostFourAtOnceResultsInModelOrder(t *testing.T) {
	for _, label := range labels {
		t.Run(label, func(t *testing.T) {
			var calls []fakeupstream.ToolCall
			// Earlier calls sleep longer, so they finish later.
			for i := range 6 {
				calls = append(calls, call(fmt.Sprintf("call_%d", i), "sleep", fmt.Sprintf(`{"ms":%d}`, 600-i*100)))
			}
			e := newEnv(t, label, []fakeupstream.Round{{ToolCalls: calls}, {Content: "slept"}})
			resp := e.post(context.Background(), `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["sleep"]}]}`, nil)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			if got := e.sleep.MaxInFlight(); got != 4 {
				t.Errorf("max sleep calls in flight %d, want 4", got)
			}
			msgs := e.upstreamRequests()[1]["messages"].([]any)
			for i := range 6 {
				m := msgs[2+i].(map[string]any)
				if m["tool_call_id"] != fmt.Sprintf("call_%d", i) {
					t.Errorf("result %d is for %v", i, m["tool_call_id"])
				}
			}
		})
	}
}

// Hosted calls carry the caller's identity: slot hosted, floor_id = the
// request id, one run id, the round, the model's call id, the session id
// from metadata or X-Session-Id, the trace id, and an idempotency key
// derived from the request's.
func TestHostedCallsCarryCallerIdentity(t *testing.T) {
	for _, label := range labels {
		t.Run(label, func(t *testing.T) {
			e := newEnv(t, label, []fakeupstream.Round{
				{ToolCalls: []fakeupstream.ToolCall{call("call_x", "sleep", `{"ms":0}`)}},
				{ToolCalls: []fakeupstream.ToolCall{call("call_y", "sleep", `{"ms":0}`)}},
				{Content: "ok"},
			})
			resp := e.post(context.Background(), `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"metadata":{"session_id":"conv-7"},"tools":[{"type":"mcp","server_label":"LABEL"}]}`, map[string]string{
				"X-Request-Id":    "req_ident",
				"X-Session-Id":    "ignored-when-metadata-has-one",
				"traceparent":     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
				"Idempotency-Key": "idem-1",
				"X-Toolhost-Slot": "director",
			})
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			ps := e.exec.Proposals()
			if len(ps) != 2 {
				t.Fatalf("%d proposals", len(ps))
			}
			for i, p := range ps {
				c := p.Caller
				if c.Face != "hosted" || c.Slot != "director" || c.FloorID != "req_ident" || c.SessionID != "conv-7" || c.Round != i || c.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
					t.Errorf("proposal %d caller %+v", i, c)
				}
				if c.RunID == "" || c.RunID != ps[0].Caller.RunID {
					t.Errorf("run ids %q %q", c.RunID, ps[0].Caller.RunID)
				}
				if p.IdempotencyKey != fmt.Sprintf("idem-1/%d/%s", i, p.CallID) {
					t.Errorf("idempotency key %q", p.IdempotencyKey)
				}
			}
			if strings.Contains(string(e.fake.Requests()[0]), "metadata") {
				t.Errorf("metadata sent upstream without store: %s", e.fake.Requests()[0])
			}
			if ps[0].CallID != "call_x" || ps[1].CallID != "call_y" {
				t.Errorf("call ids %s %s", ps[0].CallID, ps[1].CallID)
			}
			// Without metadata the header gives the session.
			e2 := newEnv(t, label, []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{call("c", "sleep", `{"ms":0}`)}}, {Content: "ok"}})
			e2.post(context.Background(), `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`, map[string]string{"X-Session-Id": "hdr-session"})
			if ps := e2.exec.Proposals(); len(ps) != 1 || ps[0].Caller.SessionID != "hdr-session" {
				t.Errorf("session from header: %+v", ps)
			}
		})
	}
}

// An internal error of the runtime cancels the round's other calls and
// fails the request (500 before the stream starts, an error event after).
func TestInternalErrorCancelsRoundAndFailsRequest(t *testing.T) {
	crash := func(o *v1.Options, r *recordingExec) { r.crashTool, r.waitStarted = "get_time", 2 }
	for _, label := range labels {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", label, stream), func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{
					{Content: "working", ToolCalls: []fakeupstream.ToolCall{call("s1", "sleep", `{"ms":600000}`), call("s2", "sleep", `{"ms":600000}`), call("boom", "get_time", `{}`)}},
					{Content: "never"},
				}, crash)
				body := `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`
				if stream {
					body = `{"stream":true,` + body[1:]
				}
				hdr := map[string]string{"Idempotency-Key": "crash-1"}
				resp := e.post(context.Background(), body, hdr)
				var errBody []byte
				if stream {
					if resp.status != http.StatusOK {
						t.Fatalf("status %d", resp.status)
					}
					evs := sseEvents(t, resp.body)
					last := evs[len(evs)-1]
					if last == "[DONE]" {
						t.Fatalf("a failed stream must not end with [DONE]")
					}
					errBody = []byte(last)
				} else {
					if resp.status != http.StatusInternalServerError {
						t.Fatalf("status %d: %s", resp.status, resp.body)
					}
					errBody = resp.body
				}
				var got struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(errBody, &got); err != nil || got.Error.Code != "internal_error" {
					t.Errorf("error body %s", errBody)
				}
				e.exec.mu.Lock()
				outs := e.exec.outcomes
				e.exec.mu.Unlock()
				if len(outs) != 2 {
					t.Fatalf("%d sleep outcomes, want 2", len(outs))
				}
				for _, o := range outs {
					if o.Code != "cancelled" {
						t.Errorf("sleep outcome %s %s, want cancelled", o.Code, o.Message)
					}
				}
				if n := len(e.fake.Requests()); n != 1 {
					t.Errorf("%d upstream calls after the failure, want 1", n)
				}
				// A failed request is not stored: the retry runs again.
				retry := e.post(context.Background(), body, hdr)
				if retry.header.Get("Idempotent-Replayed") != "" || len(e.fake.Requests()) != 2 {
					t.Errorf("failed response was replayed (upstream calls %d)", len(e.fake.Requests()))
				}
			})
		}
	}
}

// Upstream answers: a 4xx is relayed with its status and message; a 5xx is
// a 502.
func TestUpstreamErrorsAreRelayed(t *testing.T) {
	cases := []struct {
		name   string
		round  fakeupstream.Round
		status int
		code   string
	}{
		{"client_error", fakeupstream.Round{Status: 400, Error: json.RawMessage(`{"message":"temperature too high","type":"invalid_request_error"}`)}, 400, "upstream_rejected"},
		{"rate_limited", fakeupstream.Round{Status: 429, Error: json.RawMessage(`{"message":"slow down","type":"rate_limit_error"}`)}, 429, "upstream_rejected"},
		{"server_error", fakeupstream.Round{Status: 500}, 502, "upstream_error"},
	}
	for _, label := range labels {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", label, tc.name, stream), func(t *testing.T) {
					e := newEnv(t, label, []fakeupstream.Round{tc.round})
					body := `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`
					if stream {
						body = `{"stream":true,` + body[1:]
					}
					resp := e.post(context.Background(), body, nil)
					if resp.status != tc.status || !strings.Contains(string(resp.body), tc.code) {
						t.Fatalf("status %d body %s, want %d %s", resp.status, resp.body, tc.status, tc.code)
					}
				})
			}
		}
	}
}

// The caller going away cancels the upstream call.
func TestCallerDisconnectCancelsUpstream(t *testing.T) {
	for _, label := range labels {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", label, stream), func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{{Hang: true}})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					body := fmt.Sprintf(`{"stream":%v,"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"%s"}]}`, stream, label)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
					resp, err := http.DefaultClient.Do(req)
					if err == nil {
						resp.Body.Close()
					}
				}()
				<-e.fake.Hanging()
				cancel()
				<-e.fake.CancelSeen()
				<-done
				if e.fake.Cancelled() != 1 {
					t.Errorf("upstream saw %d cancellations", e.fake.Cancelled())
				}
			})
		}
	}
}

// The caller going away while hosted tools run cancels them.
func TestCallerDisconnectCancelsRunningTools(t *testing.T) {
	for _, label := range labels {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", label, stream), func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{call("s1", "sleep", `{"ms":600000}`)}}, {Content: "never"}})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					body := fmt.Sprintf(`{"stream":%v,"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"%s"}]}`, stream, label)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
					if resp, err := http.DefaultClient.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
				<-e.exec.started
				cancel()
				<-done
				// The handler finishes after the client is gone; the tool's
				// outcome says it was cancelled.
				if out := <-e.exec.finished; out.Code != "cancelled" {
					t.Errorf("sleep outcome %q, want cancelled", out.Code)
				}
				if n := len(e.fake.Requests()); n != 1 {
					t.Errorf("%d upstream calls, want 1", n)
				}
			})
		}
	}
}

// Idempotency-Key: same key and body → the stored response (the upstream is
// not called again); same key, other body → 422; same key while the first
// is running → 409.
func TestIdempotencyKeyReplaysWholeResponse(t *testing.T) {
	for _, label := range labels {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", label, stream), func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{
					{ToolCalls: []fakeupstream.ToolCall{call("c1", "sleep", `{"ms":0}`)}, Usage: usage(10, 2, 0, 0)},
					{Content: "done", Usage: usage(20, 3, 0, 0)},
				})
				body := fmt.Sprintf(`{"stream":%v,"model":"fake-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`, stream)
				hdr := map[string]string{"Idempotency-Key": "k-1"}
				first := e.post(context.Background(), body, hdr)
				second := e.post(context.Background(), body, hdr)
				if first.status != 200 || second.status != 200 {
					t.Fatalf("statuses %d %d", first.status, second.status)
				}
				if string(first.body) != string(second.body) {
					t.Errorf("replay differs:\n%s\n%s", first.body, second.body)
				}
				if second.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
					t.Errorf("Idempotent-Replayed headers %q %q", first.header.Get("Idempotent-Replayed"), second.header.Get("Idempotent-Replayed"))
				}
				if n := len(e.fake.Requests()); n != 2 {
					t.Errorf("upstream called %d times, want 2 (one run)", n)
				}
				other := e.post(context.Background(), strings.Replace(body, `"x"`, `"y"`, 1), hdr)
				if other.status != http.StatusUnprocessableEntity || !strings.Contains(string(other.body), "idempotency_key_reused") {
					t.Errorf("other body: %d %s", other.status, other.body)
				}
				// Without a key the same body runs again (no response cache).
				e.post(context.Background(), body, nil)
				if n := len(e.fake.Requests()); n != 4 {
					t.Errorf("upstream called %d times, want 4", n)
				}
			})
		}
	}
	t.Run("in_progress", func(t *testing.T) {
		e := newEnv(t, "toolhost", []fakeupstream.Round{{Hang: true}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		body := `{"model":"fake-1","messages":[{"role":"user","content":"x"}]}`
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Idempotency-Key", "k-2")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-e.fake.Hanging()
		resp := e.post(context.Background(), body, map[string]string{"Idempotency-Key": "k-2"})
		cancel()
		<-done
		if resp.status != http.StatusConflict || !strings.Contains(string(resp.body), "idempotency_key_in_progress") {
			t.Errorf("got %d %s", resp.status, resp.body)
		}
	})
}

// One round record per upstream call, tagged v1_tool_round unless the
// request metadata already has 8 keys; GET /v1/tool-rounds finds them.
func TestRoundLogRecordsEveryRound(t *testing.T) {
	eight := `{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8"}`
	for _, label := range labels {
		for _, tc := range []struct {
			metadata string
			tag      string
		}{{`{"session_id":"s"}`, loop.RoundTag}, {eight, ""}} {
			t.Run(label+"/"+tc.tag, func(t *testing.T) {
				e := newEnv(t, label, []fakeupstream.Round{
					{ToolCalls: []fakeupstream.ToolCall{call("c1", "sleep", `{"ms":0}`)}, Usage: usage(10, 2, 0, 0)},
					{Content: "done", Usage: usage(20, 3, 0, 0)},
				})
				resp := e.post(context.Background(), `{"model":"fake-1","metadata":`+tc.metadata+`,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`, map[string]string{"X-Request-Id": "req_rounds"})
				if resp.status != 200 {
					t.Fatalf("status %d %s", resp.status, resp.body)
				}
				hr, err := http.Get(e.url + "/v1/tool-rounds?request_id=req_rounds")
				if err != nil {
					t.Fatal(err)
				}
				defer hr.Body.Close()
				var got struct {
					Data []loop.RoundLog `json:"data"`
				}
				if err := json.NewDecoder(hr.Body).Decode(&got); err != nil {
					t.Fatal(err)
				}
				if len(got.Data) != 2 {
					t.Fatalf("%d records, want 2", len(got.Data))
				}
				for i, r := range got.Data {
					if r.Round != i || r.Tag != tc.tag || r.Route != "fake" || r.UpstreamID != fmt.Sprintf("chatcmpl-fake-%d", i) {
						t.Errorf("record %d: %+v", i, r)
					}
					if (tc.tag != "") != (r.Metadata["tag"] == loop.RoundTag) {
						t.Errorf("metadata tag %q", r.Metadata["tag"])
					}
				}
				if got.Data[0].InputTokens != 10 || got.Data[1].OutputTokens != 3 || got.Data[0].CostQuota != 14 || len(got.Data[0].ToolCalls) != 1 || len(got.Data[1].ToolCalls) != 0 {
					t.Errorf("records %+v", got.Data)
				}
			})
		}
	}
}
