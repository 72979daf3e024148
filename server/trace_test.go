package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server"
)

func TestTraceID(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, header, want string
	}{
		{"valid", valid, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"a later version with more fields", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-says", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"absent", "", ""},
		{"garbage", "garbage", ""},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"zero parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		{"upper-case hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"extra field after version 00", valid + "-x", ""},
		{"short trace id", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", ""},
		{"non-hex trace id", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", ""},
		{"fullwidth digits", "00-４bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", ""},
		{"three fields", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", ""},
		{"huge", "00-" + strings.Repeat("a", 1<<20) + "-00f067aa0ba902b7-01", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Traceparent", tt.header)
			}
			if got := server.TraceID(h); got != tt.want {
				t.Errorf("TraceID(%q) = %q, want %q", tt.header, got, tt.want)
			}
		})
	}
	if got := server.TraceID(nil); got != "" {
		t.Errorf("TraceID(nil) = %q", got)
	}
}

func FuzzTraceID(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("ff-00-00-00")
	f.Fuzz(func(t *testing.T, header string) {
		id := server.TraceID(http.Header{"Traceparent": {header}})
		if id == "" {
			return
		}
		// What it returns is always the header's own, well-formed trace id.
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" || strings.Count(id, "0") == 32 || !strings.Contains(header, id) {
			t.Fatalf("TraceID(%q) = %q", header, id)
		}
	})
}
