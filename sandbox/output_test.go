package sandbox

import (
	"strings"
	"testing"
)

func TestCaptureKeepsTheFirstBytesAndFindsTheMarker(t *testing.T) {
	cases := []struct {
		name       string
		limit      int
		marker     string
		writes     []string
		want       string
		truncated  bool
		status     string
		statusDone bool
	}{
		{name: "under the cap", limit: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "cut at the cap", limit: 4, writes: []string{"abc", "def"}, want: "abcd", truncated: true},
		{name: "flood after the cap", limit: 2, writes: []string{strings.Repeat("x", 1<<20), "y"}, want: "xx", truncated: true},
		{name: "cut inside a rune", limit: 4, writes: []string{"ab\u00e9\u00e9"}, want: "ab\u00e9", truncated: true},
		{name: "marker in one write", limit: 100, marker: "\x00tok ", writes: []string{"err\n\x00tok ok 3\n"}, want: "err\n", status: "ok 3", statusDone: true},
		{name: "marker split across writes", limit: 100, marker: "\x00tok ", writes: []string{"err\x00t", "o", "k exc 1", "\n"}, want: "err", status: "exc 1", statusDone: true},
		{name: "marker prefix that is not the marker", limit: 100, marker: "\x00tok ", writes: []string{"a\x00to", "x"}, want: "a\x00tox"},
		{name: "marker past the cap still ends the run", limit: 2, marker: "\x00tok ", writes: []string{"abcdef", "\x00tok mem 1\n"}, want: "ab", truncated: true, status: "mem 1", statusDone: true},
		{name: "output after the status line is dropped", limit: 100, marker: "\x00tok ", writes: []string{"\x00tok ok 0\n", "late"}, want: "", status: "ok 0", statusDone: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := newCapture()
			_, _ = cp.Write([]byte("boot noise"))
			var marker []byte
			if c.marker != "" {
				marker = []byte(c.marker)
			}
			cp.attach(c.limit, marker)
			for _, w := range c.writes {
				if n, err := cp.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got, truncated := cp.result()
			if string(got) != c.want || truncated != c.truncated {
				t.Errorf("result %q truncated %v, want %q %v", got, truncated, c.want, c.truncated)
			}
			status, done := cp.statusLine()
			if status != c.status || done != c.statusDone {
				t.Errorf("status %q %v, want %q %v", status, done, c.status, c.statusDone)
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
