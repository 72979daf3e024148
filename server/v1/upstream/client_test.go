package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

func TestReadSSE(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		tooBig  bool
		wantErr bool
	}{
		{"events and done", "data: a\n\n: comment\nevent: x\ndata: b\r\n\r\ndata: [DONE]\n\ndata: after\n\n", []string{"a", "b"}, false, false},
		{"lines of one event joined", "data: a\ndata:b\n\n", []string{"a\nb"}, false, false},
		{"last event without a blank line", "data: a\n\ndata: b", []string{"a", "b"}, false, false},
		{"a line over the limit", "data: " + strings.Repeat("x", upstream.MaxEventBytes+1) + "\n\n", nil, true, true},
		{"an event over the limit in many lines", strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 9) + "\n", nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := upstream.ReadSSE(strings.NewReader(tt.in), func(d []byte) error {
				got = append(got, string(d))
				return nil
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.tooBig && !errors.Is(err, upstream.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("events %q, want %q", got, tt.want)
			}
		})
	}
}

// lineDecoder is a Decoder of a toy protocol: each event is a text delta;
// "bad" is a malformed event.
type lineDecoder struct{ text strings.Builder }

var errMalformed = errors.New("malformed event")

func (d *lineDecoder) Add(data []byte) ([]loop.Delta, error) {
	if string(data) == "bad" {
		return nil, errMalformed
	}
	d.text.Write(data)
	return []loop.Delta{{Text: string(data)}}, nil
}

func (d *lineDecoder) Finish() (*loop.UpstreamResponse, error) {
	return &loop.UpstreamResponse{Message: loop.Message{Role: loop.RoleAssistant, Text: d.text.String()}}, nil
}

func serve(t *testing.T, status int, body string) *upstream.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "headers not sent", http.StatusTeapot)
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return upstream.New(upstream.Config{Name: "r1", BaseURL: srv.URL + "/", Dialect: loop.DialectAnthropic, Header: http.Header{"X-Key": {"k"}}})
}

func TestCallErrors(t *testing.T) {
	errSink := errors.New("the caller went away")
	big := strings.Repeat("x", upstream.MaxBodyBytes+1)
	tests := []struct {
		name    string
		status  int
		body    string
		stream  bool
		onDelta func(loop.Delta) error
		check   func(t *testing.T, err error)
	}{
		{"a 4xx is an UpstreamError in the route's dialect", http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`, false, nil, func(t *testing.T, err error) {
			var ue *loop.UpstreamError
			if !errors.As(err, &ue) || ue.Status != 429 || ue.Route != "r1" || ue.Dialect != loop.DialectAnthropic || !bytes.Contains(ue.Body, []byte("slow down")) {
				t.Fatalf("err = %#v, want the 429 as *loop.UpstreamError", err)
			}
		}},
		{"a body over the limit is refused, not cut", http.StatusOK, big, false, nil, func(t *testing.T, err error) {
			if !errors.Is(err, upstream.ErrTooLarge) || !strings.HasPrefix(err.Error(), "upstream r1: ") {
				t.Fatalf("err = %v, want ErrTooLarge naming the route", err)
			}
		}},
		{"a decoder error names the route and stays matchable", http.StatusOK, "data: ok\n\ndata: bad\n\n", true, nil, func(t *testing.T, err error) {
			if !errors.Is(err, errMalformed) || !strings.HasPrefix(err.Error(), "upstream r1: stream: ") {
				t.Fatalf("err = %v, want the decoder's error wrapped with the route", err)
			}
		}},
		{"the sink's error comes back as it is", http.StatusOK, "data: ok\n\n", true, func(loop.Delta) error { return errSink }, func(t *testing.T, err error) {
			if err != errSink { // the very value, unwrapped, is the contract
				t.Fatalf("err = %v, want the sink's own error unwrapped", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, tt.status, tt.body)
			_, err := c.Call(context.Background(), upstream.Exchange{
				Path: "/messages", Body: []byte(`{}`), Stream: tt.stream,
				Decode:  func(b []byte) (*loop.UpstreamResponse, error) { return &loop.UpstreamResponse{}, nil },
				Decoder: &lineDecoder{}, OnDelta: tt.onDelta,
			})
			if err == nil {
				t.Fatal("no error")
			}
			tt.check(t, err)
		})
	}
}

func TestCallStreams(t *testing.T) {
	c := serve(t, http.StatusOK, "data: he\n\ndata: llo\n\ndata: [DONE]\n\n")
	var deltas []string
	resp, err := c.Call(context.Background(), upstream.Exchange{
		Path: "/chat/completions", Body: []byte(`{}`), Stream: true, Decoder: &lineDecoder{},
		OnDelta: func(d loop.Delta) error { deltas = append(deltas, d.Text); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text != "hello" || strings.Join(deltas, ",") != "he,llo" {
		t.Fatalf("text %q deltas %q", resp.Message.Text, deltas)
	}
}
