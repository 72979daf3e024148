package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc…(6 bytes in all)"},
		{"钙钛矿封装", 2, "钙钛…(15 bytes in all)"},
		{strings.Repeat("x", 5), 5, "xxxxx"},
	} {
		if got := Runes(tc.in, tc.n); got != tc.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if got := Echo(strings.Repeat("é", 1<<20)); utf8.RuneCountInString(got) > EchoRunes+30 || !utf8.ValidString(got) {
		t.Errorf("Echo of 1M runes gave %d runes", utf8.RuneCountInString(got))
	}
}
