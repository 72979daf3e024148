package mcpremote

import (
	"strings"
	"testing"
)

// scanSplit scans body in two reads, split after byte cut.
func scanSplit(contentType, body string, cut int) bool {
	s := newDepthScan(contentType)
	return s.scan([]byte(body[:cut])) || s.scan([]byte(body[cut:]))
}

// scanPieces scans body in reads of piece bytes.
func scanPieces(contentType, body string, piece int) bool {
	s := newDepthScan(contentType)
	for b := []byte(body); len(b) > 0; b = b[min(piece, len(b)):] {
		if s.scan(b[:min(piece, len(b))]) {
			return true
		}
	}
	return false
}

// The scan counts the nesting of JSON text however the body is split
// into reads, and not the brackets inside strings (escaped quotes
// included). An event stream is read as the go-sdk's client frames it:
// only data values are JSON, whatever the other lines hold, and each
// event is a message of its own.
func TestDepthScanCountsOnlyJSONNesting(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	over, at := deep(maxMessageDepth+1), deep(maxMessageDepth)
	const jsonType, sseType = "application/json", "text/event-stream; charset=utf-8"
	tests := []struct {
		name, contentType, body string
		over                    bool
	}{
		{"at the limit", jsonType, at, false},
		{"a level past it", jsonType, over, true},
		{"brackets in a string", jsonType, `{"text":"` + strings.Repeat("[{", 5000) + `"}`, false},
		{"an escaped quote does not end the string", jsonType, `{"text":"\"` + strings.Repeat("[", 5000) + `"}`, false},
		{"an escaped backslash does", jsonType, `["\\"` + at + `]`, true},
		{"no content type is JSON", "", `"` + over, false},

		{"events at the limit one after another", sseType, strings.Repeat("event: message\ndata: "+at+"\n\n", 3), false},
		{"an event past it", sseType, "data: " + over + "\n\n", true},
		{"no space after the colon", sseType, "data:" + over + "\n\n", true},
		{"a quote in an id line", sseType, "id: \"\ndata: " + over + "\n\n", true},
		{"a quote in an event line", sseType, "event: \"message\ndata: " + over + "\n\n", true},
		{"a quote in a comment", sseType, ": \"\n\ndata: " + over + "\n\n", true},
		{"a quote in a retry line and another field", sseType, "retry: \"\nx\"y: \"\ndata: " + over + "\n\n", true},
		{"an unterminated string in the event before", sseType, "data: [\"\n\ndata: " + over + "\n\n", true},
		{"a backslash ending the line before", sseType, "data: [\"\\\ndata: " + over + "\n\n", true},
		{"brackets in other lines do not count", sseType, "id: " + over + "\n: " + over + "\nevent: " + over + "\ndata: {}\n\n", false},
		{"a message over data lines", sseType, "data: " + strings.Repeat("[", 600) + "\ndata: " + strings.Repeat("[", 401) + strings.Repeat("]", 1001) + "\n\n", true},
		{"a message over data lines at the limit", sseType, "data: " + strings.Repeat("[", 600) + "\ndata: " + strings.Repeat("[", 400) + strings.Repeat("]", 1000) + "\n\n", false},
		{"CRLF line ends", sseType, strings.Repeat("id: \"\r\ndata: "+at+"\r\n\r\n", 2) + "data: " + over + "\r\n\r\n", true},
		{"CRLF line ends at the limit", sseType, strings.Repeat("id: \"\r\ndata: "+at+"\r\n\r\n", 3), false},
		{"a lone CR is inside the line", sseType, "data: " + strings.Repeat("[\r", maxMessageDepth+1) + "\n\n", true},
		{"an unbalanced event does not count for the next", sseType, "data: " + strings.Repeat("[", 999) + "\n\ndata: [[]]\n\n", false},
		{"a line of CRs ends an event", sseType, "data: " + strings.Repeat("[", 999) + "\n\r\r\ndata: [[]]\n\n", false},
		{"a data line inside an event does not end it", sseType, "data: " + strings.Repeat("[", 999) + "\nid: 1\ndata: [[]]\n\n", true},
		{"a leading space is another field", sseType, " data: " + over + "\n\n", false},
		{"a capital is another field", sseType, "Data: " + over + "\n\n", false},
		{"a space before the colon is another field", sseType, "data : " + over + "\n\n", false},
		{"a longer name is another field", sseType, "datas: " + over + "\n\n", false},
		{"a shorter name is another field", sseType, "dat: " + over + "\n\n", false},
		{"a CR in the name is another field", sseType, "\rdata: " + over + "\n\n" + "data\r: " + over + "\n\n", false},
		{"a byte order mark is part of the name", sseType, "\ufeffdata: " + over + "\n\n", false},
		{"a line without a colon", sseType, "data\n" + "data " + over + "\n\ndata: {}\n\n", false},
	}
	for _, tc := range tests {
		for cut := 0; cut <= len(tc.body); cut++ {
			if split := scanSplit(tc.contentType, tc.body, cut); split != tc.over {
				t.Fatalf("%s, split after byte %d: over %v, want %v", tc.name, cut, split, tc.over)
			}
		}
		for _, piece := range []int{1, 2, 3, 7, len(tc.body)} {
			if got := scanPieces(tc.contentType, tc.body, piece); got != tc.over {
				t.Errorf("%s, read %d bytes at a time: over %v, want %v", tc.name, piece, got, tc.over)
			}
		}
	}
}

// FuzzDepthScan: however a body is split into reads, the scan finds what
// it finds in one read, for JSON and for an event stream.
func FuzzDepthScan(f *testing.F) {
	f.Add([]byte("id: \"\r\ndata: [[{\"a\":\"]\"}]]\r\n\r\n: x\n\n"), uint(9), true)
	f.Add([]byte(`{"a":["\"",[[]]]}`), uint(3), false)
	f.Fuzz(func(t *testing.T, body []byte, cut uint, sse bool) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		s := newDepthScan(ct)
		whole := s.scan(body)
		k := int(cut % uint(len(body)+1))
		if split := scanSplit(ct, string(body), k); split != whole {
			t.Fatalf("split after byte %d: over %v, in one read %v", k, split, whole)
		}
	})
}

func TestDepthOver(t *testing.T) {
	nest := func(n int) any {
		var v any = "leaf"
		for range n {
			v = map[string]any{"k": v}
		}
		return v
	}
	tests := []struct {
		v     any
		limit int
		over  bool
	}{
		{nil, 0, false},
		{"x", 0, false},
		{map[string]any{}, 0, true},
		{map[string]any{}, 1, false},
		{nest(996), 996, false},
		{nest(997), 996, true},
		{[]any{1, []any{2, []any{}}}, 3, false},
		{[]any{1, []any{2, []any{}}}, 2, true},
	}
	for i, tc := range tests {
		if got := depthOver(tc.v, tc.limit); got != tc.over {
			t.Errorf("%d: depthOver(…, %d) = %v, want %v", i, tc.limit, got, tc.over)
		}
	}
}

// BenchmarkDepthScan is the scan's cost per byte of an answer: text,
// as most answers are, and JSON as nested as a message may be; as a JSON
// body and as an event of an event stream (how servers mostly answer).
func BenchmarkDepthScan(b *testing.B) {
	for name, body := range map[string]string{
		"text":   `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`Lorem ipsum \"dolor\" sit amet, `, 2000) + `"}]}}`,
		"nested": strings.Repeat(`{"a":[1,2,`, 495) + "0" + strings.Repeat("]}", 495),
	} {
		for _, ct := range []string{"application/json", "text/event-stream"} {
			p := []byte(body)
			if ct == "text/event-stream" {
				p = []byte("event: message\nid: 1_0\ndata: " + body + "\n\n")
			}
			b.Run(name+"/"+ct[strings.IndexByte(ct, '/')+1:], func(b *testing.B) {
				b.SetBytes(int64(len(p)))
				b.ReportAllocs()
				for b.Loop() {
					s := depthScan{sse: ct == "text/event-stream"}
					if s.scan(p) {
						b.Fatal("over")
					}
				}
			})
		}
	}
}
