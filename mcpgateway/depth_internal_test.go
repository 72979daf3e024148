package mcpgateway

import (
	"strings"
	"testing"
)

// The scan counts the nesting of JSON text however the body is split
// into reads, and not the brackets inside strings (escaped quotes
// included).
func TestDepthScanCountsOnlyJSONNesting(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name string
		body string
		over bool
	}{
		{"at the limit", deep(maxMessageDepth), false},
		{"a level past it", deep(maxMessageDepth + 1), true},
		{"brackets in a string", `{"text":"` + strings.Repeat("[{", 5000) + `"}`, false},
		{"an escaped quote does not end the string", `{"text":"\"` + strings.Repeat("[", 5000) + `"}`, false},
		{"an escaped backslash does", `["\\"` + deep(maxMessageDepth) + `]`, true},
		{"messages one after another", strings.Repeat("data: "+deep(maxMessageDepth)+"\n\n", 3), false},
	}
	for _, tc := range tests {
		for _, piece := range []int{1, 7, len(tc.body)} {
			var s depthScan
			over := false
			for b := []byte(tc.body); len(b) > 0 && !over; {
				n := min(piece, len(b))
				over = s.scan(b[:n])
				b = b[n:]
			}
			if over != tc.over {
				t.Errorf("%s, read %d bytes at a time: over %v, want %v", tc.name, piece, over, tc.over)
			}
		}
	}
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
// as most answers are, and JSON as nested as a message may be.
func BenchmarkDepthScan(b *testing.B) {
	for name, body := range map[string]string{
		"text":   `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`Lorem ipsum \"dolor\" sit amet, `, 2000) + `"}]}}`,
		"nested": strings.Repeat(`{"a":[1,2,`, 495) + "0" + strings.Repeat("]}", 495),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			p := []byte(body)
			for b.Loop() {
				var s depthScan
				if s.scan(p) {
					b.Fatal("over")
				}
			}
		})
	}
}
