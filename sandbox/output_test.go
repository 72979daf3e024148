package sandbox

import (
	"strings"
	"testing"
)

func TestCaptureKeepsTheFirstBytes(t *testing.T) {
	cases := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "under the cap", limit: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "cut at the cap", limit: 4, writes: []string{"abc", "def"}, want: "abcd", truncated: true},
		{name: "flood after the cap", limit: 2, writes: []string{strings.Repeat("x", 1<<20), "y"}, want: "xx", truncated: true},
		{name: "cut inside a rune", limit: 4, writes: []string{"ab\u00e9\u00e9"}, want: "ab\u00e9", truncated: true},
		{name: "NUL bytes are output", limit: 100, writes: []string{"err\n\x00tok ok 3\n", "late"}, want: "err\n\x00tok ok 3\nlate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := newCapture()
			_, _ = cp.Write([]byte("boot noise"))
			cp.attach(c.limit)
			for _, w := range c.writes {
				if n, err := cp.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got, truncated := cp.result()
			if string(got) != c.want || truncated != c.truncated {
				t.Errorf("result %q truncated %v, want %q %v", got, truncated, c.want, c.truncated)
			}
			if cp.bootText() != "boot noise" {
				t.Errorf("boot text %q", cp.bootText())
			}
		})
	}
}

func TestValidFileName(t *testing.T) {
	cases := map[string]bool{
		"data.csv": true, "in/a.txt": true, "a/b/c/d/e/f/g/h": true,
		"": false, "/etc/passwd": false, "../x": false, "a/../b": false, "./a": false,
		"a//b": false, `a\b`: false, "a/b/c/d/e/f/g/h/i": false, "x\x00": false, strings.Repeat("a", 256): false,
	}
	for name, ok := range cases {
		if err := ValidFileName(name); (err == nil) != ok {
			t.Errorf("ValidFileName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
