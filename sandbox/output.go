package sandbox

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// capture is an io.Writer handed to a guest as stdout or stderr. It keeps the
// first limit bytes and counts the rest, so a flood costs no memory: the cap
// holds while the guest writes. Before a run is attached (a pooled instance
// booting) writes go to a small boot buffer kept for diagnosis. Everything
// written after attach is the program's output: no byte sequence in it
// means anything to the host.
type capture struct {
	mu       sync.Mutex
	limit    int
	buf      bytes.Buffer
	total    int64
	attached bool
	boot     bytes.Buffer
}

func newCapture() *capture { return &capture{} }

// attach starts a run: output from now on is the run's, capped at limit.
func (c *capture) attach(limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = limit
	c.attached = true
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if !c.attached {
		if c.boot.Len() < 4096 {
			c.boot.Write(p[:min(len(p), 4096-c.boot.Len())])
		}
		return n, nil
	}
	c.keep(p)
	return n, nil
}

func (c *capture) keep(p []byte) {
	c.total += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
}

// result returns the kept bytes (cut at a UTF-8 boundary when truncated) and
// whether anything was dropped.
func (c *capture) result() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := append([]byte(nil), c.buf.Bytes()...)
	truncated := c.total > int64(len(b))
	if truncated {
		cut := len(b)
		for back := 0; back < utf8.UTFMax && cut > 0; back++ {
			if r, size := utf8.DecodeLastRune(b[:cut]); r != utf8.RuneError || size > 1 {
				break
			}
			cut--
		}
		b = b[:cut]
	}
	return b, truncated
}

func (c *capture) bootText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boot.String()
}
