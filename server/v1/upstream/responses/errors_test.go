package responses

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// serve answers every request with status and body (an event stream when
// the body starts with "event:" or "data:").
func serve(t *testing.T, status int, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		ct := "application/json"
		if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return New(Config{Name: "r", BaseURL: srv.URL + "/v1"})
}

const created = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n"

// What the other clients answer for the same failure, this one answers:
// an HTTP error is a *loop.UpstreamError with the status and body
// (server/v1 relays a 4xx, answers a 5xx 502 upstream_error); an error in
// the stream, or a failed response, is a 502 UpstreamError carrying the
// provider's error as {"error":...}; bytes that are no answer, and an
// event line over the limit, are errors of the call (ErrTooLarge).
func TestCallErrors(t *testing.T) {
	huge := created + "data: {\"type\":\"response.output_text.delta\",\"delta\":\"" + strings.Repeat("x", upstream.MaxEventBytes) + "\"}\n\n"
	tests := []struct {
		name    string
		status  int
		body    string
		stream  bool
		wantUE  int    // the UpstreamError status, 0 for another error
		wantMsg string // in the error's text
		tooBig  bool
	}{
		{"4xx", 400, `{"error":{"message":"Unknown parameter: 'foo'.","type":"invalid_request_error","param":"foo","code":"unknown_parameter"}}`, false, 400, "Unknown parameter", false},
		{"429 streamed", 429, `{"error":{"message":"Rate limit reached","type":"requests"}}`, true, 429, "Rate limit", false},
		{"5xx", 503, `{"error":{"message":"overloaded"}}`, false, 503, "overloaded", false},
		{"failed response", 200, `{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}`, false, 502, "The model failed.", false},
		{"not JSON", 200, `<html>`, false, 0, "not JSON", false},
		{"output not a list", 200, `{"id":"resp_1","status":"completed","output":{"a":1}}`, false, 0, "response", false},
		{"item without type", 200, `{"id":"resp_1","status":"completed","output":[{"id":"x"}]}`, false, 0, "without a type", false},
		{"call without name", 200, `{"id":"resp_1","status":"completed","output":[{"type":"function_call","call_id":"c"}]}`, false, 0, "without call_id or name", false},
		{"error event", 200, created + "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n", true, 502, "boom", false},
		{"failed event", 200, created + "data: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"message\":\"no capacity\"}}}\n\n", true, 502, "no capacity", false},
		{"malformed event", 200, created + "data: {\"type\":\n\n", true, 0, "event is not JSON", false},
		{"negative index", 200, created + "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":-1,\"delta\":\"x\"}\n\n", true, 0, "output_index -1", false},
		{"no terminal event", 200, created + "data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n", true, 0, "without response.completed", false},
		{"empty stream", 200, "data: [DONE]\n\n", true, 0, "without an event", false},
		{"oversize line", 200, huge, true, 0, "size limit", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, tt.status, tt.body)
			_, err := c.Call(context.Background(), &loop.UpstreamRequest{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Text: "x"}}, Stream: tt.stream}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			var ue *loop.UpstreamError
			switch {
			case tt.wantUE != 0 && !errors.As(err, &ue):
				t.Fatalf("error %v is no UpstreamError", err)
			case tt.wantUE != 0 && ue.Status != tt.wantUE:
				t.Fatalf("status %d, want %d", ue.Status, tt.wantUE)
			case tt.wantUE == 0 && errors.As(err, &ue):
				t.Fatalf("error %v is an UpstreamError", err)
			}
			if tt.tooBig != errors.Is(err, upstream.ErrTooLarge) {
				t.Fatalf("errors.Is(%v, ErrTooLarge) = %v", err, !tt.tooBig)
			}
			if text := fmt.Sprint(err) + string(bodyOf(ue)); !strings.Contains(text, tt.wantMsg) {
				t.Fatalf("error %q (body %s) does not say %q", err, bodyOf(ue), tt.wantMsg)
			}
		})
	}
}

func bodyOf(ue *loop.UpstreamError) []byte {
	if ue == nil {
		return nil
	}
	return ue.Body
}

// An incomplete response is the canonical "length" (or content_filter)
// finish, its text kept.
func TestIncompleteResponse(t *testing.T) {
	for reason, want := range map[string]string{"max_output_tokens": loop.FinishLength, "content_filter": "content_filter"} {
		r, err := DecodeResponse([]byte(`{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"` + reason + `"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"cut"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.FinishReason != want || r.Message.Text != "cut" {
			t.Fatalf("%s: finish %q text %q", reason, r.FinishReason, r.Message.Text)
		}
	}
}
